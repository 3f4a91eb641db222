import os
import pathlib
import sys

# The DPU backend is the only active Triton driver on a machine without a GPU;
# elsewhere these tests select it explicitly.
os.environ.setdefault("TRITON_DEFAULT_BACKEND", "dpu")

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

