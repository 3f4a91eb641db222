"""Code generation layer: Python functions -> builder-level MLIR modules."""
from __future__ import annotations

import threading

from mlir import ir

from . import semantic
from .generator import CodeGenerator, ModuleState
from .signature import FunctionInfo, ParamInfo, function_info
from ..target.machines import DPU, NVPTX, TARGETS, Target, foreign_operation

# One MLIR context for everything edsl compiles, so that modules of different
# functions can be combined; MLIR contexts are not thread-safe, hence the lock.
LOCK = threading.RLock()
_context: ir.Context | None = None


def context() -> ir.Context:
    global _context
    if _context is None:
        _context = ir.Context()
        _context.allow_unregistered_dialects = True  # the generator's scratch regions
    return _context


def generate(info: FunctionInfo, fastmath: bool = False, bounds_check: bool = False,
             target: Target = DPU) -> ModuleState:
    """Build the module holding `info`'s function (public, named after it)
    and the private functions it calls, for `target` (`info` as it sees it).
    Call under `LOCK`, in `context()`."""
    token = semantic.FASTMATH.set(fastmath)
    try:
        with ir.Location.file(info.filename, info.tree.lineno, 1):
            state = ModuleState(ir.Module.create(), bounds_check=bounds_check, target=target)
            state.symbols.add(info.name)
            CodeGenerator(info, state, info.name).generate()
    finally:
        semantic.FASTMATH.reset(token)
    return state


__all__ = ["DPU", "LOCK", "NVPTX", "TARGETS", "CodeGenerator", "FunctionInfo", "ModuleState", "ParamInfo",
           "Target", "context", "foreign_operation", "function_info", "generate"]
