"""Python's cyclic garbage collector paused while edsl compiles inside a
Triton compile.

Compiling an EDSL function allocates many objects, and its first use in a
process imports the code generator and the `mlir` bindings' modules it needs
(the `nvvm` one alone holds some 5,800 objects). Each young collection run
meanwhile moves what is alive at that moment, the code generator's
temporaries too, towards the oldest generation, and once enough has moved
there a young collection becomes a full one: on a heap holding torch, some
0.2 s inside the compile of a kernel calling `fl.call` where the same kernel
without the call had none (docs/benchmarks.md). Paused, the step's
allocations meet the collector after it, when its temporaries are gone;
what stays alive (the imported modules) ages as any other object does.
"""
from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def paused():
    """The collector off for the block, if it was on (nested blocks, and a
    program that turned it off itself, leave it as they found it)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
