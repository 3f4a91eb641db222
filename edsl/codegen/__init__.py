"""Code generation layer: Python functions -> builder-level MLIR modules.

The package imports no MLIR until its compiler is used (`language` and
`annotations`, what users write, load at `import edsl`)."""
from __future__ import annotations

import importlib
import threading

# One MLIR context for everything edsl compiles, so that modules of different
# functions can be combined; MLIR contexts are not thread-safe, hence the lock.
LOCK = threading.RLock()
_context = None

# Imported on first use: these load the MLIR bindings.
_LAZY = {"CodeGenerator": ".generator", "ModuleState": ".generator", "FunctionInfo": ".signature",
         "ParamInfo": ".signature", "function_info": ".signature", "DPU": "..target.machines",
         "NVPTX": "..target.machines", "TARGETS": "..target.machines", "Target": "..target.machines",
         "foreign_operation": "..target.machines"}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def context():
    """The MLIR context of everything edsl compiles."""
    global _context
    if _context is None:
        from mlir import ir

        from ..base import dialects  # noqa: F401  (the bindings find edsl's dialects before any op)
        _context = ir.Context()
        _context.allow_unregistered_dialects = True  # the generator's scratch regions
        # Single-threaded: edsl's modules are a function or a kernel each, and
        # MLIR's thread pool would cost a compile in a new process ~4 ms
        # (nothing measurable came back on the dpu backend's tutorials).
        _context.enable_multithreading(False)
    return _context


def generate(info, fastmath: bool = False, bounds_check: bool = False, target=None):
    """Build the module holding `info`'s function (public, named after it)
    and the private functions it calls, for `target` (default: the DPU;
    `info` as it sees it). Call under `LOCK`, in `context()`."""
    from mlir import ir

    from . import semantic
    from .generator import CodeGenerator, ModuleState
    from ..target.machines import DPU
    target = DPU if target is None else target
    token = semantic.FASTMATH.set(fastmath)
    made = semantic.NON_NEGATIVE.set(set())
    try:
        with ir.Location.file(info.filename, info.tree.lineno, 1):
            state = ModuleState(ir.Module.create(), bounds_check=bounds_check, target=target)
            state.symbols.add(info.name)
            CodeGenerator(info, state, info.name).generate()
    finally:
        semantic.FASTMATH.reset(token)
        semantic.NON_NEGATIVE.reset(made)
    return state


__all__ = ["DPU", "LOCK", "NVPTX", "TARGETS", "CodeGenerator", "FunctionInfo", "ModuleState", "ParamInfo",
           "Target", "context", "foreign_operation", "function_info", "generate"]
