"""On-disk cache of compiled edsl functions and programs.

One file per key in `cache_dir()`: a JSON entry (`load`/`store`), or bytes
such as object code (`load_bytes`/`store_bytes`). Entries are written to a
temporary file and renamed into place, so two processes compiling the same
function never see a half-written entry; an entry that cannot be read or
fails validation is treated as absent and rewritten. An entry read is
touched, and a store that takes the folder past `max_bytes()` removes the
least recently used entries first.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path

FORMAT = 1


DEFAULT_MAX_BYTES = 1 << 30


def cache_dir() -> Path:
    """`$EDSL_CACHE_DIR`; else `edsl` in Triton's cache (`$TRITON_CACHE_DIR`,
    so that clearing it clears both); else `$XDG_CACHE_HOME/edsl`, by
    default `~/.cache/edsl`."""
    if os.environ.get("EDSL_CACHE_DIR"):
        return Path(os.environ["EDSL_CACHE_DIR"])
    if os.environ.get("TRITON_CACHE_DIR"):
        return Path(os.environ["TRITON_CACHE_DIR"]) / "edsl"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "edsl"


def max_bytes() -> int:
    """The cache's size bound: `$EDSL_CACHE_MAX_BYTES`, by default 1 GiB."""
    try:
        return int(os.environ.get("EDSL_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES))
    except ValueError:
        return DEFAULT_MAX_BYTES


def _touch(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:
        pass


def load(key: str, fields: dict[str, type]) -> dict | None:
    """The entry stored under `key` if it is whole and has `fields` of those types."""
    path = cache_dir() / f"{key}.json"
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    _touch(path)
    if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key:
        return None
    if not all(isinstance(entry.get(f), t) for f, t in fields.items()):
        return None
    return entry


def store(key: str, entry: dict) -> bool:
    """Store `entry` under `key`; False (and nothing written) if the directory is unusable."""
    data = json.dumps({"format": FORMAT, "key": key, **entry}).encode()
    return _write(f"{key}.json", key, data)


def load_bytes(key: str, suffix: str) -> bytes | None:
    """The bytes stored under `key` (with `suffix`), or None."""
    path = cache_dir() / f"{key}.{suffix}"
    try:
        data = path.read_bytes()
    except OSError:
        return None
    _touch(path)
    # A header names the key, so that a file of another entry is never taken.
    head = f"edsl {FORMAT} {key}\n".encode()
    return data[len(head):] if data.startswith(head) else None


def store_bytes(key: str, suffix: str, data: bytes) -> bool:
    return _write(f"{key}.{suffix}", key, f"edsl {FORMAT} {key}\n".encode() + data)


def _write(name: str, key: str, data: bytes) -> bool:
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{key[:16]}", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, directory / name)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return False
    _evict(directory, keep=name)
    return True


def _evict(directory: Path, keep: str) -> None:
    """Remove the least recently used entries (by modification time: reads
    touch them) until the folder is within `max_bytes()`; never `keep`."""
    try:
        entries = [(e.stat().st_mtime, e.stat().st_size, e.path) for e in os.scandir(directory)
                   if e.is_file() and not e.name.startswith(".") and e.name != keep]
    except OSError:
        return
    total = sum(size for _, size, _ in entries)
    try:
        total += (directory / keep).stat().st_size
    except OSError:
        pass
    for _, size, path in sorted(entries):
        if total <= max_bytes():
            break
        try:
            os.unlink(path)
            total -= size
        except OSError:
            pass


# What edsl's sources are: Python, the runtime library's and the program's MLIR
# templates, the exported project's C, the libdevice tables.
SOURCE_SUFFIXES = (".py", ".mlir", ".c", ".h", ".in", ".json")


PACKAGE = Path(__file__).resolve().parents[1]           # (edsl)


def source_files() -> list[Path]:
    """edsl's own sources, in a fixed order."""
    return [path for path in sorted(PACKAGE.rglob("*"))
            if path.suffix in SOURCE_SUFFIXES and "__pycache__" not in path.parts]


@functools.lru_cache(None)
def source_fingerprint() -> str:
    """A hash of edsl's own sources: any change to the compiler recompiles
    what the caches hold (edsl functions here, kernels in Triton's cache)."""
    h = hashlib.sha256()
    for path in source_files():
        h.update(str(path.relative_to(PACKAGE)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]
