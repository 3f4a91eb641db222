"""What keeping tiles in MRAM costs a `tl.dot`: the same dot with every tile in
WRAM and with some kept in MRAM (the WRAM budget lowered with the `wram_bytes`
option), and a 128x128x128 dot that only runs spilled against eight
64x64x64 dots that fit (the same multiply-adds), as ratios measured in one
run.

    python benchmarks/bench_spill.py

For each: the DPU model's wall-clock time per launch (best of 7), and the
timing model's estimate of the slowest DPU's cycles on UPMEM hardware
(`dpu_timing=True`, edsl.dpu.timing), with the DMA transfers of the launch
(those of spilled tiles in parentheses). float32; the 64^3 dots are 8
program instances on 8 DPUs.
"""
import os
import pathlib
import sys
import tempfile

os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="dpu-bench-cache-")
sys.path[:0] = [str(pathlib.Path(__file__).resolve().parents[1] / "examples"), str(pathlib.Path(__file__).parent)]

import numpy as np  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import edsl.backend  # noqa: E402
from measure import best  # noqa: E402

PROGRAMS = 8


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    pid = tl.program_id(0)
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + pid * M * K + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + pid * K * N + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + pid * M * N + rm[:, None] * N + rn[None, :], c)


def measure(size, programs, tasklets, wram=None, dpus=PROGRAMS):
    """(seconds per launch, estimated cycles, report, result) of `programs`
    dots of size^3 on `dpus` DPUs."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((programs, size, size)).astype(np.float32)
    b = rng.standard_normal((programs, size, size)).astype(np.float32)
    c = np.zeros((programs, size, size), np.float32)
    kw = dict(M=size, N=size, K=size, num_dpus=dpus, num_tasklets=tasklets)
    if wram is not None:
        kw["wram_bytes"] = wram
    seconds = best(lambda: dot_kernel[(programs,)](a, b, c, **kw), 7, warm=True)
    report = edsl.backend.last_report()
    assert np.allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    dot_kernel[(programs,)](a, b, c, dpu_timing=True, **kw)
    cycles = edsl.backend.last_report().timing.dpu_cycles_max
    return seconds, cycles, report, c.copy()


def line(name, result, base=None):
    seconds, cycles, r, _ = result
    text = (f"  {name:<44} {seconds * 1e3:8.2f} ms {cycles:>12,.0f} cycles   WRAM {r.wram_bytes:>6} B, "
            f"DMA {r.dma_transfers:>6} ({r.spill_dma_transfers})")
    if base is not None:
        text += f"   x{seconds / base[0]:.2f} time, x{cycles / base[1]:.2f} cycles"
    print(text)


def main():
    print(f"tl.dot float32, {PROGRAMS} programs on {PROGRAMS} DPUs: model time per launch, estimated DPU "
          "cycles (slowest DPU), DMA transfers (of spilled tiles)")
    for tasklets in (1, 16):
        print(f"{tasklets} tasklet(s):")
        whole = measure(64, PROGRAMS, tasklets)
        line("64^3, every tile in WRAM", whole)
        budget = whole[2].wram_bytes
        for share in (0.75, 0.45):
            part = measure(64, PROGRAMS, tasklets, wram=int(budget * share) // 8 * 8)
            assert np.array_equal(part[3], whole[3]), "a spilled dot's bits differ"
            line(f"64^3, WRAM budget {share:.0%}: {len(part[2].spilled_tiles)} tile(s) in MRAM", part, whole)
        eight = measure(64, 8, tasklets, dpus=1)
        line("8 x 64^3 in WRAM, on one DPU", eight)
        line("128^3 in MRAM, on one DPU (as many mul-adds)", measure(128, 1, tasklets, dpus=1), eight)


if __name__ == "__main__":
    with edsl.backend.activated():     # (the DPU model, also where a GPU is)
        main()
