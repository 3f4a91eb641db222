"""JIT of a kernel's LLVM-dialect module on the host DPU model.

A `Program` of the shared runtime (edsl.dpu.runtime), so that the DPU
intrinsics of EDSL regions (tasklet id, barrier, DMA) are bound. Functions are
called through their packed wrappers `_mlir_<name>(void **args)`: `args[i]`
points to the value of parameter i.
"""
from __future__ import annotations

import ctypes
import threading

_lock = threading.Lock()


class JitProgram:
    """An LLVM-dialect module compiled to host code; `function(name)` calls one."""

    def __init__(self, llvm_dialect_text: str, opt_level: int = 2):
        from mlir import ir

        from ..dpu.runtime import Program
        self.context = ir.Context()
        with _lock:
            self.module = ir.Module.parse(llvm_dialect_text, self.context)
            self.program = Program(self.module, opt_level=opt_level)

    def function(self, name: str):
        return self.program.entry(name)


def call_packed(fn, values) -> None:
    """Call a packed wrapper with ctypes scalars `values` (kept alive here).

    Outside a launch of the DPU runtime, the call runs as one tasklet of one,
    so that the intrinsics of EDSL regions (tasklet id, barrier, DMA) work and
    their errors are raised here, naming the EDSL function's line."""
    from ..dpu import runtime
    ptrs = (ctypes.c_void_p * max(1, len(values)))()
    for i, v in enumerate(values):
        ptrs[i] = ctypes.cast(ctypes.pointer(v), ctypes.c_void_p)
    if runtime.in_launch():
        fn(ptrs)
    else:
        runtime.run_tasklets(lambda: fn(ptrs), 1)
