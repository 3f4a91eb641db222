"""Triton's tutorials, unmodified, on the `dpu` backend.

Each tutorial file runs in a subprocess (TRITON_DEFAULT_BACKEND=dpu) through a
small driver script: `triton.testing.perf_report` and the driver's
benchmarker become stubs, so that the benchmark sweeps (at GPU sizes) and
autotuning (a compile of every config) run nothing (an autotuner then takes
its first config) and the tutorial's own correctness check runs at the sizes
it has at module level; `triton.testing.do_bench` is the real one
(tests/backend/test_bench.py runs it and `perf_report` on the DPU model). A tutorial whose
checks sit behind `if __name__ == "__main__"` on a GPU, or in a pytest test,
is run through its own functions at small sizes. A case passes when the
script ends without error, at least one kernel ran on the DPU model, and the
output has what the tutorial prints on success.
"""
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TUTORIALS = Path(__file__).resolve().parents[2].parent / "shared" / "triton-tutorials"
REPO = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.skipif(not TUTORIALS.is_dir(), reason=f"Triton's tutorials are not at {TUTORIALS}"),
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="Triton's tutorials need torch"),
]

DRIVER = '''
import runpy, sys
import triton, triton.testing
from triton.runtime import driver

path, code = sys.argv[1], sys.argv[2]


def first_config(fn, *args, quantiles=None, **kwargs):
    return [1.0] * len(quantiles) if quantiles else 1.0


class Report:
    def __init__(self, fn):
        self.fn = fn

    def run(self, *args, **kwargs):
        pass


triton.testing.perf_report = lambda benchmarks: Report
driver.active.get_benchmarker = lambda: first_config

import edsl.backend
from edsl.backend.driver import DpuLauncher
edsl.backend.activate()             # (beside a GPU driver, on any Triton)
launches = [0]
launch = DpuLauncher.__call__


def counted(self, *args):
    launches[0] += 1
    return launch(self, *args)


DpuLauncher.__call__ = counted
sys.argv = [path]
namespace = runpy.run_path(path, run_name="tutorial" if code else "__main__")
if code:
    exec(code, namespace)
print(f"DPU launches: {launches[0]}")
'''

# name: (code run in the tutorial's namespace, or "" to run it as __main__,
#        a pattern its output must have,
#        None, or why it cannot pass yet and a pattern of the output it fails with)
CASES = {
    "01-vector-add": ("", r"maximum difference between torch and triton is 0\.0\b", None),
    "02-fused-softmax": ("", "", None),
    "03-matrix-multiplication": ("", "✅ Triton and Torch match", None),
    "04-low-memory-dropout": ("", r"output \(seed = 512\)", None),
    "05-layer-norm": ("", "", (
        "its reference, torch's CPU float16 layer_norm backward, has db 0.061 off the float64 sum "
        "of dy at its M=1151, N=8192 (the kernel's db: 0.0086 off), past the check's atol=1e-2",
        r"assert torch\.allclose\(db_tri, db_ref")),
    # Its checks are a pytest test: the smallest case of its parameters, backward (which
    # checks the forward too), causal.
    "06-fused-attention": ("test_op(1, 2, 128, 64, True, False, 'bwd', 'triton-fp16')", "", None),
    "07-extern-functions": ("", "", ("it asserts x.is_cuda on its tensors",
                                     r"assert x\.is_cuda")),
    "08-grouped-gemm": ("", "", (
        "its matrices reach the kernel only through tables of their data_ptr() values: host "
        "addresses, which reach nothing on a DPU (DpuError at its first load through such a "
        "pointer, naming the load of the pointer)",
        r"08-grouped-gemm\.py:151:\d+: kernel 'grouped_matmul_kernel': mram_read of \d+ bytes .* "
        r"outside the launch's arrays: its pointer was loaded from memory at line 131 ")),
    # Its validate() allocates on device="cuda" and matmul_persistent reads
    # torch.cuda's properties: the tutorial's naive kernel with its own run_test check.
    "09-persistent-matmul": (
        "a = torch.randn((32, 32), dtype=torch.float16)\n"
        "b = torch.randn((32, 32), dtype=torch.float16)\n"
        "run_test(torch.matmul(a.float(), b.float()).half(), matmul, a, b, 'naive')",
        "naive: ✅", None),
    "10-block-scaled-matmul": ("", "", (
        "supports_block_scaling() needs a CUDA sm100+ or CDNA4 GPU: it runs no kernel "
        "(and initialize_block_scaled allocates on device='cuda')",
        "⛔ This example requires GPU support for block scaled matmul")),
    # Its validate() allocates on device="cuda": its add() with PDL, on CPU tensors.
    "11-programmatic-dependent-launch": (
        "x = torch.rand(1024)\ny = torch.rand(1024)\n"
        "assert torch.equal(add(x, y, launch_pdl=True), x + y)", "", None),
}


class FailedOtherwise(Exception):
    """A tutorial expected to fail failed in another way."""


def _params():
    for name, (code, expect, failure) in CASES.items():
        marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=failure[0])] if failure else []
        yield pytest.param(name, code, expect, failure and failure[1], marks=marks, id=name)


@pytest.mark.parametrize("name, code, expect, failure", list(_params()))
def test_tutorial(name, code, expect, failure, tmp_path):
    script = tmp_path / "run_tutorial.py"
    script.write_text(DRIVER)
    env = dict(os.environ, TRITON_DEFAULT_BACKEND="dpu",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(script), str(TUTORIALS / f"{name}.py"), code],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    launches = re.search(r"DPU launches: (\d+)", proc.stdout)
    passed = (proc.returncode == 0 and int(launches[1]) > 0 and "❌" not in out
              and re.search(expect, out) is not None)
    if failure and not passed and not re.search(failure, out):
        raise FailedOtherwise(out[-3000:])
    assert proc.returncode == 0, out[-3000:]
    assert int(launches[1]) > 0, f"no kernel ran on the DPU model:\n{out[-3000:]}"
    assert "❌" not in out, out[-3000:]
    assert re.search(expect, out), out[-3000:]
