import os
import pathlib
import sys

# The DPU backend is the only active Triton driver on a machine without a GPU;
# elsewhere these tests select it explicitly.
os.environ.setdefault("TRITON_DEFAULT_BACKEND", "dpu")

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))


def strategies():
    """Hypothesis strategies every launch test draws from: DPU and tasklet counts."""
    from hypothesis import strategies as st
    return st.sampled_from([1, 3, 4]), st.sampled_from([1, 16])
