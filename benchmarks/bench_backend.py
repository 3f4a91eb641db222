"""Compile time (cold and cached) and DPU-model run time of vector add and softmax
on 1M float32, next to NumPy, as ratios.

    python benchmarks/bench_backend.py

"Cold" compiles with an empty Triton cache (TTIR -> MLIR -> LLVM dialect -> JIT);
"cached" is a new kernel object for the same source: Triton's on-disk cache hit, and
the JIT-compiled program reused from this process (a new process JITs it once more).
Run time is the model's wall-clock time per launch (host <-> MRAM copies, every
program instance with its DMA transfers), best of 5.
"""
import os
import pathlib
import sys
import tempfile
import time

os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="dpu-bench-cache-")
os.environ.setdefault("TRITON_DEFAULT_BACKEND", "dpu")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))

import numpy as np  # noqa: E402
import triton  # noqa: E402

import edsl.backend  # noqa: E402
import triton_softmax  # noqa: E402
import triton_vector_add  # noqa: E402

N = 1 << 20


def best(fn, reps=5):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def fresh(kernel):
    """A new JITFunction for the same source: its in-memory cache is empty."""
    return triton.JITFunction(kernel.fn)


def bench(name, kernel, launch, numpy_fn):
    t0 = time.perf_counter()
    launch(kernel)                              # cold: empty disk cache
    cold = time.perf_counter() - t0
    k2 = fresh(kernel)
    t0 = time.perf_counter()
    launch(k2)                                  # cached on disk, new kernel object
    cached = time.perf_counter() - t0
    run = best(lambda: launch(k2))
    ref = best(numpy_fn)
    r = edsl.backend.last_report()
    print(f"{name:>12}: compile cold {cold * 1e3:8.1f} ms, cached {cached * 1e3:7.1f} ms | "
          f"model run {run * 1e3:8.1f} ms vs NumPy {ref * 1e3:6.2f} ms "
          f"(ratio {run / ref:7.1f}x) | {r.programs} programs on {r.dpus_used} DPUs, "
          f"WRAM {r.wram_bytes} B, {r.dma_transfers} DMA ({r.dma_bytes} B)")


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)
    out = np.empty_like(x)
    block = 1024

    def add(kernel):
        kernel[(triton.cdiv(N, block),)](x, y, out, N, BLOCK=block, num_dpus=64)
    bench("vector add", triton_vector_add.add_kernel, add, lambda: np.add(x, y, out=out))
    assert np.array_equal(out, x + y)

    m = x.reshape(1024, 1024)
    sm = np.empty_like(m)

    def softmax(kernel):
        kernel[(1024,)](sm, m, 1024, 1024, BLOCK=1024, num_dpus=64)

    def np_softmax():
        e = np.exp(m - m.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    bench("softmax", triton_softmax.softmax_kernel, softmax, np_softmax)
    assert np.allclose(sm, triton_softmax.reference(m), rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    main()
