"""A whole UPMEM server on one machine: PrIM's full-system VA (167,772,160
int32 over 2,560 DPUs, 16 tasklets: benchmarks/prim/ports.py's port of
PrIM's program and host split; with --triton, a plain Triton kernel whose
launch the backend splits) on the DPU model, against NumPy, in one run.

Each DPU receives only its part of the vectors, as PrIM's host transfers it
(a Triton launch: the rows its block of programs touches), so the model's
memory is the data's, not 64 MiB per DPU. Prints the times, their ratio,
the peak resident memory against the vectors' bytes, and checks the result
against NumPy.

    python benchmarks/server.py [--dpus 2560] [--elements 167772160] [--triton]
"""
import argparse
import pathlib
import resource
import sys

import types

import numpy as np
import triton
import triton.language as tl

import edsl.backend

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from edsl.dpu.timing import clock_hz  # noqa: E402
from measure import best  # noqa: E402
from prim import ports  # noqa: E402


@triton.jit
def va_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def triton_va(x: np.ndarray, y: np.ndarray, dpus: int, block: int = 1024):
    """c = x + y by `va_kernel` on `dpus` DPUs of 16 tasklets; c and each
    DPU's estimated cycles (as `ports.va` gives them)."""
    c = np.empty_like(x)
    va_kernel[(triton.cdiv(len(x), block),)](x, y, c, len(x), BLOCK=block, num_dpus=dpus, num_tasklets=16,
                                             dpu_timing=True)
    timing = edsl.backend.last_report().timing
    return c, [types.SimpleNamespace(cycles=cycles) for cycles in timing.per_dpu_cycles]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dpus", type=int, default=2560)
    parser.add_argument("--elements", type=int, default=167_772_160)
    parser.add_argument("--triton", action="store_true", help="run VA as a Triton kernel on the dpu backend")
    a = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.integers(-2**30, 2**30, a.elements, dtype=np.int32)
    y = rng.integers(-2**30, 2**30, a.elements, dtype=np.int32)
    run = triton_va if a.triton else ports.va
    run(x[:4096], y[:4096], dpus=1)               # compile once, outside the times
    got = []
    model = best(lambda: got.append(run(x, y, dpus=a.dpus)), reps=1)
    numpy = best(lambda: x + y, reps=3)
    c, shares = got[-1]
    ok = np.array_equal(c, x + y)
    data = 3 * a.elements * 4                      # a, b and c
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    slowest = max(s.cycles for s in shares)
    how = "a Triton kernel" if a.triton else "PrIM's program ported"
    print(f"VA {a.elements} int32 over {a.dpus} DPUs, 16 tasklets ({a.elements // a.dpus} elements a DPU), "
          f"{how}")
    print(f"  DPU model {model:.2f} s, NumPy {numpy * 1e3:.1f} ms: {model / numpy:.0f}x NumPy's time")
    print(f"  peak resident memory {peak / 2**30:.2f} GiB for {data / 2**30:.2f} GiB of vectors "
          f"({peak / data:.2f}x; 64 MiB a DPU would be {a.dpus * 64 / 1024:.0f} GiB)")
    print(f"  estimated kernel time on UPMEM hardware (slowest DPU, {clock_hz() / 1e6:.0f} MHz): "
          f"{slowest / clock_hz() * 1e3:.2f} ms")
    print(f"  result {'matches' if ok else 'DIFFERS FROM'} NumPy")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
