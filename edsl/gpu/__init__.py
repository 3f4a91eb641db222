"""The `nvptx64` target: EDSL functions called from Triton kernels that Triton's
stock `nvidia` backend compiles.

`placeholders` builds the `fl.call` operations in a kernel's TTIR, the
injector `edsl.inject.gpu_library` the LLVM IR that gives them their meaning
(the GPU facts are `edsl.target.nvptx`), and `stages` wraps the stock
backend's stages so that library is linked into each kernel; `cache_key`
makes an EDSL function part of the cache key of the kernels calling it.
Only `placeholders`, `shared`, `stages` and `cache_key` import Triton.
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path


@functools.lru_cache(maxsize=None)
def code_version() -> str:
    """A hash of the code that turns `fl.call` into GPU code (this package, the
    GPU injector and the GPU facts): part of the cache key of every kernel that
    calls an EDSL function, so that a kernel compiled by another version of it
    is not reused."""
    h = hashlib.sha256()
    edsl = Path(__file__).parent.parent
    for path in [*sorted(Path(__file__).parent.glob("*.py")), edsl / "inject" / "gpu_library.py",
                 edsl / "target" / "nvptx.py"]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]
