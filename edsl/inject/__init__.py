"""Region-op injector: EDSL functions (LLVM dialect) inlined into kernels.

Steps, each a function with IR-text tests:
  a. `build_region`  (region.py)       the EDSL body in an `edsl.region`, with
                                        extract/pack placeholders
  b. `stage_operands` (staging.py)     tile operands in WRAM buffers
  c. `lower_placeholders` (placeholders.py)  placeholders -> descriptor fields
  d. `inline_regions` (inline.py)      the region inlined with branches
"""
from ..lowering.walk import collect
from .dialect import load as load_dialect
from .inline import inline_regions
from .placeholders import descriptor_type, lower_placeholders
from .region import ParamKind, build_region
from .staging import stage_operands

__all__ = ["ParamKind", "build_region", "descriptor_type", "inline_regions", "load_dialect",
           "lower_placeholders", "run_pipeline_with_regions", "stage_operands"]


def run_pipeline_with_regions(module, pipeline, what: str = "module") -> None:
    """Lower `module` with `pipeline`; where it holds `edsl.region`s, steps c and
    d run once `convert-scf-to-cf` has made their parents CFG regions."""
    from ..lowering import run_pipeline
    if not collect(module, lambda op: op.name == "edsl.region"):
        run_pipeline(module, pipeline, what)
        return
    pipeline = list(pipeline)
    cut = pipeline.index("convert-scf-to-cf") + 1 if "convert-scf-to-cf" in pipeline else 0
    if cut:
        run_pipeline(module, pipeline[:cut], what)
    lower_placeholders(module)
    inline_regions(module)
    run_pipeline(module, pipeline[cut:], what)
