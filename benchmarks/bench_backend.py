"""Compile time (cold and cached) and DPU-model run time of vector add and softmax
on 1M float32, as ratios against NumPy and, where torch is installed, against
Triton's interpreter (`TRITON_INTERPRET=1`).

    python benchmarks/bench_backend.py            # one and 16 tasklets per DPU
    python benchmarks/bench_backend.py --quick    # one tasklet, no interpreter

"Cold" compiles with an empty Triton cache (TTIR -> MLIR -> LLVM dialect -> object
code); "cached" is a new kernel object for the same source: Triton's on-disk cache
hit, the program already linked in this process; "new process" is the first launch
in a new process with the caches filled (the kernel's object code from Triton's
cache, linked into the process: no compilation).
Run time is the model's wall-clock time per launch (arguments into MRAM, every
program instance with its DMA transfers, results back), best of 10. The
interpreter runs the same kernels on torch CPU tensors in a subprocess (best of 2).
"""
import os
import pathlib
import subprocess
import sys
import tempfile
import time

os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="dpu-bench-cache-")
BENCHMARKS = pathlib.Path(__file__).resolve().parent
EXAMPLES = BENCHMARKS.parent / "examples"
sys.path[:0] = [str(EXAMPLES), str(BENCHMARKS)]

import numpy as np  # noqa: E402
import triton  # noqa: E402

import edsl.backend  # noqa: E402
import triton_softmax  # noqa: E402
import triton_vector_add  # noqa: E402
from measure import best  # noqa: E402

N = 1 << 20
BLOCK = 1024
DPUS = 64

# Run in a subprocess with TRITON_INTERPRET=1: prints "<add seconds> <softmax seconds>".
INTERPRETER = f"""
import sys
sys.path[:0] = [{str(EXAMPLES)!r}, {str(BENCHMARKS)!r}]
import torch, triton
import triton_softmax, triton_vector_add
from measure import best
torch.manual_seed(0)
x, y = torch.randn({N}), torch.randn({N})
out = torch.empty_like(x)
m = x.reshape(1024, 1024)
sm = torch.empty_like(m)
add = best(lambda: triton_vector_add.add_kernel[(triton.cdiv({N}, {BLOCK}),)](x, y, out, {N}, BLOCK={BLOCK}), 2)
assert torch.equal(out, x + y)
soft = best(lambda: triton_softmax.softmax_kernel[(1024,)](sm, m, 1024, 1024, BLOCK=1024), 2)
assert torch.allclose(sm, torch.softmax(m, dim=1), rtol=1e-5, atol=1e-6)
print(add, soft)
"""


def fresh(kernel):
    """A new JITFunction for the same source: its in-memory cache is empty."""
    return triton.JITFunction(kernel.fn)


def interpreter_times():
    """(vector add, softmax) seconds under Triton's interpreter, or the reason there are none."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return None, "torch is not installed (the interpreter runs kernels on torch tensors)"
    env = dict(os.environ, TRITON_INTERPRET="1")
    env.pop("TRITON_DEFAULT_BACKEND", None)
    proc = subprocess.run([sys.executable, "-c", INTERPRETER], env=env, capture_output=True,
                          text=True, timeout=3600)
    if proc.returncode != 0:
        return None, f"the interpreter run failed: {proc.stderr.strip().splitlines()[-1:]}"
    add, soft = (float(v) for v in proc.stdout.split()[-2:])
    return {"vector add": add, "softmax": soft}, None


# Run in a new process with the caches filled: prints the first launch's seconds.
NEW_PROCESS = f"""
import sys, time
sys.path.insert(0, {str(EXAMPLES)!r})
import numpy as np, triton
import triton_softmax, triton_vector_add
x = np.ones({N}, np.float32); out = np.empty_like(x)
m = x.reshape(1024, 1024); sm = np.empty_like(m)
t0 = time.perf_counter()
if sys.argv[1] == "vector add":
    triton_vector_add.add_kernel[({N // BLOCK},)](x, x, out, {N}, BLOCK={BLOCK}, num_dpus={DPUS},
                                                  num_tasklets=int(sys.argv[2]))
else:
    triton_softmax.softmax_kernel[(1024,)](sm, m, 1024, 1024, BLOCK=1024, num_dpus={DPUS},
                                           num_tasklets=int(sys.argv[2]))
print(time.perf_counter() - t0)
"""


def new_process(name, tasklets):
    """The first launch's seconds in a new process with the caches filled."""
    proc = subprocess.run([sys.executable, "-c", NEW_PROCESS, name, str(tasklets)], env=dict(os.environ),
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return float(proc.stdout.split()[-1])


def bench(name, kernel, launch, numpy_fn, tasklets, interp):
    t0 = time.perf_counter()
    launch(kernel, tasklets)                   # cold: empty disk cache
    cold = time.perf_counter() - t0
    k2 = fresh(kernel)
    t0 = time.perf_counter()
    launch(k2, tasklets)                       # cached on disk, new kernel object
    cached = time.perf_counter() - t0
    fresh_process = new_process(name, tasklets)
    run = best(lambda: launch(k2, tasklets), 10)
    ref = best(numpy_fn, 10)
    r = edsl.backend.last_report()
    line = (f"{name:>11} x{tasklets:<2}: compile cold {cold * 1e3:7.1f} ms, cached {cached * 1e3:6.1f} ms,"
            f" new process {fresh_process * 1e3:6.1f} ms"
            f" | run {run * 1e3:8.2f} ms = {run / ref:6.2f}x NumPy ({ref * 1e3:.2f} ms)")
    if interp is not None:
        line += f" = 1/{interp[name] / run:,.0f} of the interpreter ({interp[name]:.2f} s)"
    print(line + f" | {r.programs} programs on {r.dpus_used} DPUs, WRAM {r.wram_bytes} B, "
                 f"{r.dma_transfers} DMA")


def main():
    quick = "--quick" in sys.argv
    interp, why = (None, "--quick") if quick else interpreter_times()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)
    out = np.empty_like(x)
    m = x.reshape(1024, 1024)
    sm = np.empty_like(m)

    def add(kernel, tasklets):
        kernel[(triton.cdiv(N, BLOCK),)](x, y, out, N, BLOCK=BLOCK, num_dpus=DPUS, num_tasklets=tasklets)

    def softmax(kernel, tasklets):
        kernel[(1024,)](sm, m, 1024, 1024, BLOCK=1024, num_dpus=DPUS, num_tasklets=tasklets)

    def np_softmax():
        e = np.exp(m - m.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    print(f"1M float32, BLOCK={BLOCK}, {DPUS} DPUs; ratios: model run time / NumPy's, "
          f"and the interpreter's / the model's")
    for tasklets in ((1,) if quick else (1, 16)):
        bench("vector add", triton_vector_add.add_kernel, add, lambda: np.add(x, y, out=out),
              tasklets, interp)
        assert np.array_equal(out, x + y)
        bench("softmax", triton_softmax.softmax_kernel, softmax, np_softmax, tasklets, interp)
        assert np.allclose(sm, triton_softmax.reference(m), rtol=1e-5, atol=1e-6)
    if interp is None:
        print(f"Triton interpreter comparison skipped: {why}")


if __name__ == "__main__":
    with edsl.backend.activated():     # (the DPU model, also where a GPU is)
        main()
