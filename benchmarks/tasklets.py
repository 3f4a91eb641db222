"""Tasklets on the DPU model: the wall-clock time of the same launch with 1 and
16 tasklets per DPU (vector add, row-normalize softmax, matmul), on 64 DPUs
and on one DPU.

    python benchmarks/tasklets.py

A DPU's tasklets run on one host thread as loops between the kernel's
barriers (barrier fission, edsl/backend/convert/fission.py), so that more
tasklets cost about what the work costs, not switches between them: the
goal is 16 tasklets within 1.5x of one. Best of 10 launches after a warm-up; the
16-tasklet results must equal the one-tasklet results bit for bit. On 64
DPUs the model also checks what the DPUs touched (their access logs,
edsl.dpu.sharing); one DPU shows the tasklets alone. On 1 MiB vectors a
launch's fixed host time is most of its time; on 16 MiB ones the DPUs'
work is. Last, what the check of races between tasklets costs the EDSL
functions of two `fl.call` kernels (`race_check=True` against the default).
"""
import os
import pathlib
import sys
import tempfile

os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="dpu-bench-cache-"))
BENCHMARKS = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(BENCHMARKS.parent / "examples"), str(BENCHMARKS)]

import numpy as np  # noqa: E402

import edsl.backend  # noqa: E402
import fl_softmax  # noqa: E402
import fl_vector_add  # noqa: E402
import triton_matmul  # noqa: E402
import triton_softmax  # noqa: E402
import triton_vector_add  # noqa: E402
from measure import best  # noqa: E402

DPUS = 64
GOAL = 1.5


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1 << 18).astype(np.float32)
    y = rng.standard_normal(1 << 18).astype(np.float32)
    add_out = np.empty_like(x)
    big_x = rng.standard_normal(1 << 22).astype(np.float32)
    big_y = rng.standard_normal(1 << 22).astype(np.float32)
    big_out = np.empty_like(big_x)
    m = rng.standard_normal((512, 1024)).astype(np.float32)
    sm = np.empty_like(m)
    a = rng.standard_normal((128, 128)).astype(np.float32)
    b = rng.standard_normal((128, 128)).astype(np.float32)
    mm = np.empty((128, 128), np.float32)
    cases = {
        "vector add": (lambda t, d: triton_vector_add.add_kernel[(x.size // 1024,)](
            x, y, add_out, x.size, BLOCK=1024, num_dpus=d, num_tasklets=t), add_out,
            f"{x.size} f32"),
        "vector add, 16 MiB": (lambda t, d: triton_vector_add.add_kernel[(big_x.size // 1024,)](
            big_x, big_y, big_out, big_x.size, BLOCK=1024, num_dpus=d, num_tasklets=t), big_out,
            f"{big_x.size} f32"),
        "softmax": (lambda t, d: triton_softmax.softmax_kernel[(512,)](
            sm, m, 1024, 1024, BLOCK=1024, num_dpus=d, num_tasklets=t), sm, "512 x 1024 f32"),
        "matmul": (lambda t, d: triton_matmul.matmul_kernel[(4, 4)](
            a, b, mm, 128, 128, 128, BM=32, BN=32, BK=16, num_dpus=d, num_tasklets=t), mm,
            "128 x 128 x 128 f32"),
    }
    for dpus in (DPUS, 1):
        worst = 0.0
        for name, (launch, out, what) in cases.items():
            times, results = {}, {}
            for t in (1, 16):
                times[t] = best(lambda: launch(t, dpus), 10, warm=True)
                results[t] = out.copy()
            same = np.array_equal(results[1].view(np.uint8), results[16].view(np.uint8))
            ratio = times[16] / times[1]
            worst = max(worst, ratio)
            print(f"{name:>18} ({what}, {dpus} DPU{'s' if dpus > 1 else ''}): 1 tasklet "
                  f"{times[1] * 1e3:7.2f} ms, 16 tasklets {times[16] * 1e3:7.2f} ms = {ratio:5.2f}x"
                  f"{'' if same else '  RESULTS DIFFER'}")
        print(f"{dpus} DPU{'s' if dpus > 1 else ''}: worst ratio {worst:.2f}x (goal: within {GOAL}x)")



def race_check_cost():
    """What the check of races between tasklets (edsl.dpu.races) costs the
    EDSL functions of a kernel: the same launch with `race_check` off and on,
    16 tasklets on one DPU. Off is the default: the logging function is empty."""
    rng = np.random.default_rng(1)
    m = rng.standard_normal((64, 1024)).astype(np.float32)
    sm = np.empty_like(m)
    x, y = (rng.standard_normal(1 << 16).astype(np.float32) for _ in range(2))
    out = np.empty_like(x)
    cases = {
        "fl.call softmax (64 x 1024 f32)": (lambda check: fl_softmax.softmax_kernel[(64,)](
            sm, m, 1024, 1024, BLOCK=1024, num_tasklets=16, race_check=check), sm),
        "fl.call vector add (65536 f32)": (lambda check: fl_vector_add.add_kernel[(16,)](
            x, y, out, x.size, BLOCK=4096, num_tasklets=16, race_check=check), out),
    }
    for name, (launch, result) in cases.items():
        times, results = {}, {}
        for check in (False, True):
            times[check] = best(lambda: launch(check), 5, warm=True)
            results[check] = result.copy()
        same = np.array_equal(results[False].view(np.uint8), results[True].view(np.uint8))
        print(f"{name:>32}: race check off {times[False] * 1e3:7.2f} ms, on {times[True] * 1e3:7.2f} ms "
              f"= {times[True] / times[False]:5.2f}x{'' if same else '  RESULTS DIFFER'}")


if __name__ == "__main__":
    with edsl.backend.activated():     # (the DPU model, also where a GPU is)
        main()
        race_check_cost()
