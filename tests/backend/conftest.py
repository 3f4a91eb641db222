import pathlib
import sys

# (Triton's driver: the DPU model's, chosen in the process by tests/conftest.py.)

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

