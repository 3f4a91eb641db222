"""edsl: raw kernels written as Python functions, compiled through MLIR for the
UPMEM DPU, runnable on the host through a DPU model."""
from .codegen import language
from .codegen.annotations import InOut, Input
from .base.errors import (AnnotationError, ArgumentError, CompileError, DpuError, EdslError, LoweringError,
                     TypeMismatchError, VerifierError)
from .codegen.language import *  # noqa: F401,F403  (intrinsics: tasklet_id, barrier, mram_read, exp, f32, ...)

__all__ = ["dialect", "EdslFunction", "Input", "InOut", "language", "EdslError", "CompileError",
           "AnnotationError", "TypeMismatchError", "VerifierError", "LoweringError", "ArgumentError",
           "DpuError", *language.__all__]


# Imported on first use: the compiler loads the MLIR bindings; the others import Triton.
# (Triton's discovery of backends imports this package at every `import triton`.)
_LAZY = {
    "dialect": (".function", "dialect"),           # @edsl.dialect
    "EdslFunction": (".function", "EdslFunction"),
    "fl": (".fl", None),                           # calls from Triton kernels
    "array": (".backend.arrays", "array"),         # a NumPy array as a Triton pointer argument
    "DpuArray": (".backend.arrays", "DpuArray"),
    "last_report": (".backend.model", "last_report"),   # the last launch on the DPU model
    "export": (".export", None),                   # a kernel as an UPMEM SDK project (a callable package)
}


def __getattr__(name):
    if name == "__version__":          # (read from the installed distribution's metadata)
        from .base.version import version
        return version()
    if name in _LAZY:
        import importlib
        module, attr = _LAZY[name]
        module = importlib.import_module(module, __name__)
        return module if attr is None else getattr(module, attr)
    raise AttributeError(f"module 'edsl' has no attribute {name!r}")
