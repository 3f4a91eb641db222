"""The export tests import the example kernels from `examples/`."""
import os
import pathlib
import sys

os.environ.setdefault("TRITON_DEFAULT_BACKEND", "dpu")

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

