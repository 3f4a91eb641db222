"""DPUs in parallel on the DPU model: the same launch on 1 host thread and on
all the machine's cores (EDSL_DPU_WORKERS), in one run, as a ratio; the
results are checked bit-identical.

    python benchmarks/dpus.py [--dpus 64] [--repeat 5] [--block 5] [--runs 1]

The two thread counts take turns, each turn `--block` launches in a row
(their mean): the speed-up of a program that launches kernels one after
another. Also printed: single launches in turn, each launch on all cores
right after one on one core, which left the other cores idle.

The goal is a ratio to what the machine gives any burst of work that long,
measured in the same run: 64 NumPy matmuls taking the launch's one-thread
time, split over the cores as the launch's DPUs are (host_scaling.burst).
The launch's speed-up should be at least 0.9 of that ceiling. `--runs`
measures it again, and prints the spread.

Also printed: each launch's host work outside the DPUs' pass (its
arguments, contexts, logs, merge and report; the pass is
`dpu_run._one_pass`), median over launches, which no thread count shares
out and which bounds the speed-up on many cores; and the pass's own
speed-up from those medians, as a fraction of the runs' mean ceiling.
"""
import argparse
import functools
import os
import pathlib
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")      # (before NumPy loads its BLAS: a burst's piece is one thread's)

import numpy as np  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))

import edsl.backend  # noqa: E402
import triton_matmul  # noqa: E402
import triton_softmax  # noqa: E402
from host_scaling import Workers, burst  # noqa: E402
from measure import best_in_turn  # noqa: E402


# Unmeasured turns (a launch of each thread count) before the timed ones: a
# process's first launches after the compile fault in fresh memory (the
# pages saved for a restore, the access logs) and ran up to 20 % slower on
# the device machine.
WARM = 4
GOAL = 0.9          # of the burst ceiling


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


def measure(dpus: int, repeat: int, block: int, workers: Workers) -> dict:
    """Each launch's speed-up on all cores and the burst ceiling of its length: name -> (speed-up, ceiling)."""
    cores = os.cpu_count() or 1
    out = {}
    for name, (result, launch, reference) in launches(dpus).items():
        def on(threads, launch=launch):
            os.environ["EDSL_DPU_WORKERS"] = str(threads)
            launch()
        fns = {w: functools.partial(on, w) for w in (1, cores)}
        single = best_in_turn(fns, repeat, warm=WARM)
        times = best_in_turn(fns, repeat, warm=1, block=block)
        seen = []
        for threads in (1, cores):
            on(threads)
            seen.append(result.tobytes())
        assert seen[0] == seen[1], f"{name}: results differ between 1 and {cores} threads"
        assert np.allclose(result, reference(), rtol=1e-3, atol=1e-3), f"{name}: results differ from NumPy"
        b1, bn = burst(times[1], workers)
        out[name] = (times[1] / times[cores], b1 / bn)
        print(f"{name}: 1 thread {times[1] * 1e3:8.1f} ms, {cores} threads {times[cores] * 1e3:8.1f} ms "
              f"= {out[name][0]:5.2f}x faster, {out[name][0] / out[name][1]:.2f} of the {out[name][1]:.2f}x "
              f"ceiling for a burst that long (single launches in turn: {single[1] * 1e3:.1f} ms, "
              f"{single[cores] * 1e3:.1f} ms = {single[1] / single[cores]:.2f}x)", flush=True)
    return out


def host_work(dpus: int, threads: int, count: int = 30) -> dict:
    """Per launch, median over `count` of it on `threads` host threads: name ->
    (seconds in all, seconds outside the DPUs' pass)."""
    from edsl.backend import dpu_run
    passes = []
    one_pass = dpu_run._one_pass

    def timed(*args):
        start = time.perf_counter()
        try:
            return one_pass(*args)
        finally:
            passes.append(time.perf_counter() - start)
    os.environ["EDSL_DPU_WORKERS"] = str(threads)
    out = {}
    dpu_run._one_pass = timed
    try:
        for name, (_, launch, _) in launches(dpus).items():
            for _ in range(WARM):
                launch()
            passes.clear()
            whole = []
            for _ in range(count):
                start = time.perf_counter()
                launch()
                whole.append(time.perf_counter() - start)
            out[name] = (float(np.median(whole)), float(np.median(np.array(whole) - np.array(passes))))
    finally:
        dpu_run._one_pass = one_pass
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dpus", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--block", type=int, default=5)
    parser.add_argument("--runs", type=int, default=1, help="measure this many times, and print the spread")
    a = parser.parse_args()
    cores = os.cpu_count() or 1
    workers = Workers(cores)
    runs = []
    with edsl.backend.activated():
        for _ in range(a.runs):
            runs.append(measure(a.dpus, a.repeat, a.block, workers))
    for name in runs[0]:
        fractions = [r[name][0] / r[name][1] for r in runs]
        print(f"{name}: {min(fractions):.2f} to {max(fractions):.2f} of the ceiling over {a.runs} run(s) "
              f"(speed-ups {', '.join(f'{r[name][0]:.2f}x' for r in runs)}; "
              f"ceilings {', '.join(f'{r[name][1]:.2f}x' for r in runs)})")
    work = {}
    with edsl.backend.activated():
        for threads in (1, cores):
            for name, (whole, outside) in host_work(a.dpus, threads).items():
                work[name, threads] = whole - outside
                print(f"{name}, {threads} thread(s): host work outside the DPUs' pass {outside * 1e3:.2f} ms "
                      f"of {whole * 1e3:.2f} ms a launch")
    for name in runs[0]:
        # (what the launch would reach without its host work: the pass's own scaling)
        alone = work[name, 1] / work[name, cores]
        ceiling = sum(r[name][1] for r in runs) / len(runs)
        print(f"{name}: the DPUs' pass alone {alone:.2f}x faster on {cores} threads, {alone / ceiling:.2f} "
              f"of the mean ceiling {ceiling:.2f}x")
    least = min(r[n][0] / r[n][1] for r in runs for n in r)
    print(f"{cores} cores: least fraction of the burst ceiling {least:.2f} (goal: at least {GOAL})")


if __name__ == "__main__":
    main()
