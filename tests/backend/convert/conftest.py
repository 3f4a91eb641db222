import pathlib
import sys

# The helpers of tests/backend (launch_strategies) for the tests of the conversion's families.
BACKEND = pathlib.Path(__file__).resolve().parents[1]
if str(BACKEND) not in sys.path:
    sys.path.insert(0, str(BACKEND))
