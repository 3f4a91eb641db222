"""Region-op injector: EDSL functions (LLVM dialect) inlined into kernels.

Steps, each a function with IR-text tests:
  a. `build_region`  (region.py)       the EDSL body in an `edsl.region`, with
                                        extract/pack placeholders
  b. `stage_operands` (staging.py)     tile operands in WRAM buffers
  c. `lower_placeholders` (placeholders.py)  placeholders -> descriptor fields
  d. `inline_regions` (inline.py)      the region inlined with branches
"""
from .dialect import load as load_dialect
from .inline import inline_regions
from .placeholders import descriptor_type, lower_placeholders
from .region import ParamKind, build_region
from .staging import stage_operands

__all__ = ["ParamKind", "build_region", "descriptor_type", "inline_regions", "load_dialect",
           "lower_placeholders", "stage_operands"]
