"""DPUs in parallel on the DPU model: the same launch on 1 host thread and on
all the machine's cores (EDSL_DPU_WORKERS), in one run, as a ratio; the
results are checked bit-identical.

    python benchmarks/dpus.py [--dpus 64] [--repeat 5] [--block 5]

The two thread counts take turns, each turn `--block` launches in a row
(their mean): the speed-up of a program that launches kernels one after
another. Also printed: single launches in turn, each launch on all cores
right after one on one core, which left the other cores idle.
"""
import argparse
import functools
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))

import edsl.backend  # noqa: E402
import triton_matmul  # noqa: E402
import triton_softmax  # noqa: E402
from measure import best_in_turn  # noqa: E402


# Unmeasured turns (a launch of each thread count) before the timed ones: a
# process's first launches after the compile fault in fresh memory (the
# pages saved for a restore, the access logs) and ran up to 20 % slower on
# the device machine.
WARM = 4


def launches(dpus: int = 64) -> dict:
    """The launches measured, by name: (their output array, the launch, NumPy's result)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6144, 1024)).astype(np.float32)
    p, q = rng.standard_normal((1024, 1024)).astype(np.float32), rng.standard_normal((1024, 1024)).astype(np.float32)
    sm, mm = np.empty_like(x), np.empty((1024, 1024), np.float32)
    return {
        f"softmax 6144 x 1024 f32, {dpus} DPUs, 16 tasklets":
            (sm, lambda: triton_softmax.softmax_kernel[(6144,)](
                sm, x, 1024, 1024, BLOCK=1024, num_dpus=dpus, num_tasklets=16), lambda: triton_softmax.reference(x)),
        f"matmul 1024^3 f32 (32 x 32 blocks), {dpus} DPUs, 16 tasklets":
            (mm, lambda: triton_matmul.matmul_kernel[(32, 32)](
                p, q, mm, 1024, 1024, 1024, BM=32, BN=32, BK=16, num_dpus=dpus, num_tasklets=16), lambda: p @ q),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dpus", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--block", type=int, default=5)
    a = parser.parse_args()
    cores = os.cpu_count() or 1
    worst = None
    with edsl.backend.activated():
        for name, (out, launch, reference) in launches(a.dpus).items():
            def on(workers, launch=launch):
                os.environ["EDSL_DPU_WORKERS"] = str(workers)
                launch()
            fns = {w: functools.partial(on, w) for w in (1, cores)}
            single = best_in_turn(fns, a.repeat, warm=WARM)
            times = best_in_turn(fns, a.repeat, warm=1, block=a.block)
            seen = []
            for workers in (1, cores):
                on(workers)
                seen.append(out.tobytes())
            assert seen[0] == seen[1], f"{name}: results differ between 1 and {cores} threads"
            assert np.allclose(out, reference(), rtol=1e-3, atol=1e-3), f"{name}: results differ from NumPy"
            ratio = times[1] / times[cores]
            worst = ratio if worst is None else min(worst, ratio)
            print(f"{name}: 1 thread {times[1] * 1e3:8.1f} ms, {cores} threads {times[cores] * 1e3:8.1f} ms "
                  f"= {ratio:5.2f}x faster (single launches in turn: {single[1] * 1e3:.1f} ms, "
                  f"{single[cores] * 1e3:.1f} ms = {single[1] / single[cores]:.2f}x)")
    print(f"{cores} cores: least speed-up {worst:.2f}x (goal on 16 cores: at least 10x)")


if __name__ == "__main__":
    main()
