"""Lowering layer: builder-level MLIR -> LLVM-dialect MLIR -> LLVM IR.

The pipeline is plain data (a list of upstream pass names) so a user can
override it per function, as in TLE-Raw.
"""
from .libdevice import use_libdevice
from .race_notes import strip_race_notes
from .pipeline import (CLEANUP_PIPELINE, DEFAULT_PIPELINE, NVPTX_PIPELINE, PIPELINES, location_of,
                       require_llvm_dialect, run_pipeline, to_llvm_ir, verify)

__all__ = ["CLEANUP_PIPELINE", "DEFAULT_PIPELINE", "NVPTX_PIPELINE", "PIPELINES", "location_of",
           "require_llvm_dialect", "run_pipeline", "strip_race_notes", "to_llvm_ir", "use_libdevice", "verify"]
