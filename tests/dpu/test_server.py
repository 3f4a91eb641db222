"""benchmarks/server.py (PrIM's full-system VA on the DPU model) at a small size:
it runs, and its result is checked against NumPy by the script itself."""
import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "server.py"


def test_server_va_matches_numpy():
    out = subprocess.run([sys.executable, str(SCRIPT), "--dpus", "40", "--elements", "100003"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "over 40 DPUs" in out.stdout and "result matches NumPy" in out.stdout
