"""edsl: raw kernels written as Python functions, compiled through MLIR for the
UPMEM DPU, runnable on the host through a DPU model."""
from . import language
from .annotations import InOut, Input
from .errors import (AnnotationError, ArgumentError, CompileError, DpuError, EdslError, LoweringError,
                     TypeMismatchError, VerifierError)
from .function import EdslFunction, dialect
from .language import *  # noqa: F401,F403  (intrinsics: tasklet_id, barrier, mram_read, exp, f32, ...)

__all__ = ["dialect", "EdslFunction", "Input", "InOut", "language", "EdslError", "CompileError",
           "AnnotationError", "TypeMismatchError", "VerifierError", "LoweringError", "ArgumentError",
           "DpuError", *language.__all__]


def __getattr__(name):
    # `fl` (calls from Triton kernels) imports Triton: only when asked for.
    if name == "fl":
        import importlib
        return importlib.import_module(".fl", __name__)
    raise AttributeError(f"module 'edsl' has no attribute {name!r}")
