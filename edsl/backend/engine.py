"""JIT of an LLVM-dialect module on the host, through the `mlir` ExecutionEngine.

The one place this backend touches the ExecutionEngine (to switch over to the
shared DPU runtime once it offers the same service). `raw_lookup(name)`
returns the address of the packed wrapper `_mlir_<name>(void **args)` that
the engine generates for every function, so any signature can be called with
ctypes: `args[i]` points to the value of parameter i.
"""
from __future__ import annotations

import ctypes
import threading

_PACKED = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p))
_lock = threading.Lock()


class JitProgram:
    """An LLVM-dialect module compiled to host code; `function(name)` calls one."""

    def __init__(self, llvm_dialect_text: str, opt_level: int = 2):
        from mlir import ir
        from mlir.execution_engine import ExecutionEngine
        self.context = ir.Context()
        with _lock:
            self.module = ir.Module.parse(llvm_dialect_text, self.context)
            self.engine = ExecutionEngine(self.module, opt_level=opt_level)
        self._functions = {}

    def function(self, name: str):
        fn = self._functions.get(name)
        if fn is None:
            fn = _PACKED(self.engine.raw_lookup(name))
            self._functions[name] = fn
        return fn


def call_packed(fn, values) -> None:
    """Call a packed wrapper with ctypes scalars `values` (kept alive here)."""
    ptrs = (ctypes.c_void_p * max(1, len(values)))()
    for i, v in enumerate(values):
        ptrs[i] = ctypes.cast(ctypes.pointer(v), ctypes.c_void_p)
    fn(ptrs)
