"""The `nvptx64` target: EDSL functions called from Triton kernels that Triton's
stock `nvidia` backend compiles.

`nvptx` holds the GPU facts (importable by every layer); `placeholders` builds
the `fl.call` operations in a kernel's TTIR, `library` the LLVM IR that gives
them their meaning, and `stages` wraps the stock backend's stages so that
library is linked into each kernel. Only `placeholders` and `stages` import
Triton.
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path


@functools.lru_cache(maxsize=None)
def code_version() -> str:
    """A hash of the code that turns `fl.call` into GPU code (this package): part
    of the cache key of every kernel that calls an EDSL function, so that a
    kernel compiled by another version of it is not reused."""
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]
