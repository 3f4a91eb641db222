"""Compile time (cold, in-memory cached, on-disk cached) of an edsl function,
and host run time of saxpy, sum and softmax on 1M float32 next to NumPy.

    python benchmarks/bench_edsl.py [--reps N]

* cold: a function object never seen before (its source is written to a new
  file and imported, so neither cache can hit), an empty cache directory;
  decorating it and reading `.llvm` (code generation + lowering), then the
  first call (JIT of the LLVM dialect).
* warm, in memory: decorating the same Python function again and reading `.llvm`.
* warm, on disk: a new process decorating the function and reading `.llvm`,
  with the cache directory filled by an earlier process, next to the same
  process with an empty cache directory.
* run: one call on 1M float32 elements (one tasklet), next to the NumPy
  equivalent; the ratio is edsl time / NumPy time.

Every figure is the median of several repetitions measured in this run.
Nothing is asserted: timings depend on the machine.
"""

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

# Set before edsl is used: never write to the user's cache while benchmarking.
_SCRATCH = tempfile.TemporaryDirectory(prefix="edsl-bench-")
SCRATCH = Path(_SCRATCH.name)
os.environ["EDSL_CACHE_DIR"] = str(SCRATCH / "cache")

import numpy as np  # noqa: E402

import edsl  # noqa: E402
from edsl import InOut, Input  # noqa: E402

N = 1 << 20

# A ~20-line function exercising loops, branches, a while loop and math calls.
COMPILE_SOURCE = textwrap.dedent('''
    import math
    import edsl
    from edsl import InOut, Input

    def kernel(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], h: InOut["memref<?xi32>"],
               a: Input["f32"], seed: Input["i32"]):
        n = x.shape[0]
        total = 0.0
        for i in range(n):
            v = a * x[i] + seed
            if v > 0.0:
                y[i] = math.sqrt(v)
            elif v < -1.0:
                y[i] = -math.exp(v)
            else:
                y[i] = v * v
            total += y[i]
        k = 0
        while k < n and k < h.shape[0]:
            h[k] = edsl.i32(x[k]) // 3 % 7
            k += 1
        for j in range(n - 1, 0, -2):
            y[j] = y[j] - total / n
''')

# Run in a child process: time decorating + `.llvm` with the given cache directory.
CHILD = textwrap.dedent('''
    import importlib.util, json, sys, time
    t0 = time.perf_counter()
    import edsl
    spec = importlib.util.spec_from_file_location("bench_kernel", sys.argv[1])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    t1 = time.perf_counter()
    f = edsl.dialect(mod.kernel)
    f.llvm
    t2 = time.perf_counter()
    print(json.dumps({"compile": t2 - t1, "import": t1 - t0}))
''')


def median_time(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def load_fresh(directory: Path, tag: str):
    """A never-seen Python function object: its source is a new file."""
    path = directory / f"kernel_{tag}.py"
    path.write_text(COMPILE_SOURCE)
    spec = importlib.util.spec_from_file_location(f"bench_kernel_{tag}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel, path


def bench_compile(reps: int) -> dict:
    work = SCRATCH / "compile"
    work.mkdir()
    n = 64
    args = (np.zeros(n, np.float32), np.linspace(-3, 3, n, dtype=np.float32), np.zeros(8, np.int32), 1.5, 1)

    cold_llvm, cold_jit, path = [], [], None
    for r in range(reps):
        os.environ["EDSL_CACHE_DIR"] = str(work / f"cache_{r}")  # empty: no disk hit
        fn, path = load_fresh(work, f"cold{r}")
        t0 = time.perf_counter()
        f = edsl.dialect(fn)
        f.llvm
        t1 = time.perf_counter()
        f(*args)
        t2 = time.perf_counter()
        cold_llvm.append(t1 - t0)
        cold_jit.append(t2 - t1)

    # In-memory hit: the same function object decorated again.
    warm_memory = median_time(lambda: edsl.dialect(fn).llvm, reps * 5)

    # On-disk hit: a child process with a filled cache, next to one with an empty cache.
    child = work / "child.py"
    child.write_text(CHILD)

    def run_child(cache: Path) -> float:
        env = dict(os.environ, EDSL_CACHE_DIR=str(cache))
        out = subprocess.run([sys.executable, str(child), str(path)], env=env, check=True,
                             capture_output=True, text=True).stdout
        return json.loads(out.splitlines()[-1])["compile"]

    filled = work / "disk_cache"
    run_child(filled)  # fills the cache
    disk_hit = statistics.median(run_child(filled) for _ in range(max(3, reps // 2)))
    disk_miss = statistics.median(run_child(work / f"empty_{k}") for k in range(max(3, reps // 2)))
    return {
        "cold: decorate + .llvm": statistics.median(cold_llvm),
        "cold: first call (JIT)": statistics.median(cold_jit),
        "warm, in memory: decorate + .llvm": warm_memory,
        "new process, empty cache: decorate + .llvm": disk_miss,
        "new process, disk cache hit: decorate + .llvm": disk_hit,
    }


# --- run time -------------------------------------------------------------------------------

@edsl.dialect
def saxpy(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], a: Input["f32"]):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


@edsl.dialect
def vsum(out: InOut["memref<1xf32>"], x: Input["memref<?xf32>"]):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    out[0] = s


@edsl.dialect(fastmath=True)
def vsum_fast(out: InOut["memref<1xf32>"], x: Input["memref<?xf32>"]):
    # The same loop; `fastmath` lets LLVM reassociate the additions and vectorize.
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    out[0] = s


@edsl.dialect
def softmax(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
    m = -math.inf
    for i in range(x.shape[0]):
        m = max(m, x[i])
    total = 0.0
    for i in range(x.shape[0]):
        e = math.exp(x[i] - m)
        y[i] = e
        total += e
    for i in range(x.shape[0]):
        y[i] = y[i] / total


def np_softmax(x, y):
    np.subtract(x, x.max(), out=y)
    np.exp(y, out=y)
    y /= y.sum()


def bench_run(reps: int) -> dict:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(1, np.float32)
    for f in (saxpy, vsum, vsum_fast, softmax):  # compile and JIT outside the timings
        f.llvm
    saxpy(y.copy(), x, 2.0)
    vsum(out, x)
    vsum_fast(out, x)
    softmax(np.zeros_like(x), x)

    cases = {
        "saxpy": (lambda: saxpy(y, x, 2.0), lambda: np.add(np.float32(2.0) * x, y, out=y)),
        "sum": (lambda: vsum(out, x), lambda: x.sum()),
        "sum (fastmath)": (lambda: vsum_fast(out, x), lambda: x.sum()),
        "softmax": (lambda: softmax(y, x), lambda: np_softmax(x, y)),
    }
    results = {}
    for name, (ours, theirs) in cases.items():
        results[name] = (median_time(ours, reps), median_time(theirs, reps))

    # Keep the comparison honest: the kernels compute what NumPy computes.
    for f in (vsum, vsum_fast):
        f(out, x)
        assert math.isclose(out[0], float(x.astype(np.float64).sum()), rel_tol=1e-3, abs_tol=1.0)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=7, help="repetitions per figure (median)")
    args = parser.parse_args()

    print(f"edsl compile time (median of {args.reps}):")
    for what, seconds in bench_compile(args.reps).items():
        print(f"  {what:<48} {seconds * 1e3:9.2f} ms")

    print(f"\nhost run time on {N} float32 (median of {args.reps}), one tasklet:")
    print(f"  {'kernel':<16} {'edsl':>10} {'NumPy':>10} {'edsl/NumPy':>11}")
    for name, (ours, theirs) in bench_run(args.reps).items():
        print(f"  {name:<16} {ours * 1e3:8.2f}ms {theirs * 1e3:8.2f}ms {ours / theirs:10.2f}x")


if __name__ == "__main__":
    main()
