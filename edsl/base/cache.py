"""On-disk cache of compiled edsl functions and programs.

One file per key in `$EDSL_CACHE_DIR` (default `~/.cache/edsl`): a JSON entry
(`load`/`store`), or bytes such as object code (`load_bytes`/`store_bytes`).
Entries are written to a temporary file and renamed into place, so two
processes compiling the same function never see a half-written entry; an
entry that cannot be read or fails validation is treated as absent and
rewritten.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path

FORMAT = 1


def cache_dir() -> Path:
    return Path(os.environ.get("EDSL_CACHE_DIR") or Path.home() / ".cache" / "edsl")


def load(key: str, fields: dict[str, type]) -> dict | None:
    """The entry stored under `key` if it is whole and has `fields` of those types."""
    try:
        entry = json.loads((cache_dir() / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None
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
    try:
        data = (cache_dir() / f"{key}.{suffix}").read_bytes()
    except OSError:
        return None
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
    return True


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
