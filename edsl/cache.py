"""On-disk cache of compiled edsl functions.

One JSON file per key in `$EDSL_CACHE_DIR` (default `~/.cache/edsl`). Entries
are written to a temporary file and renamed into place, so two processes
compiling the same function never see a half-written entry; an entry that
cannot be read or fails validation is treated as absent and rewritten.
"""
from __future__ import annotations

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
    directory = cache_dir()
    data = json.dumps({"format": FORMAT, "key": key, **entry})
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{key[:16]}", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(data)
            os.replace(tmp, directory / f"{key}.json")
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return False
    return True
