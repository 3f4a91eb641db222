"""PrIM workloads as Triton kernels for the `dpu` backend, at PrIM's 1-DPU dataset sizes.

One program instance per DPU (grid = number of DPUs), each walking its share
of the data in BLOCK-element tiles, as PrIM's DPU code walks its MRAM part
in blocks; the backend shares each tile among the tasklets. BLOCK gives each
of 16 tasklets PrIM's 1,024-byte transfer (VA, SCAN-SSA, HST-S), or is what
runs fastest here (RED 1,024 int64, GEMV 256 columns).

Dataset sizes: those of PrIM's 1-rank strong-scaling runs (run_strong_rank.py
in CMU-SAFARI/prim-benchmarks: VA -i 2621440, RED -i 6553600, SCAN-SSA
-i 3932160, GEMV -m 8192 -n 1024, HST-S 1536 x 1024 elements (its default)
and -b 256 bins). Element types as chosen here: VA int32, RED and SCAN-SSA
int64, GEMV uint32, HST-S uint32 pixels of 12 bits.

HST-S: each program (one a DPU) counts its tiles with `tl.histogram` into a
histogram tile it keeps and stores it as its DPU's histogram; the host adds
the DPUs' (PrIM's DPU code keeps one histogram per tasklet in WRAM and
merges them).
"""
from __future__ import annotations

import numpy as np
import triton
import triton.language as tl


@triton.jit
def va_kernel(a_ptr, b_ptr, c_ptr, n, per_dpu, BLOCK: tl.constexpr):
    start = tl.program_id(0) * per_dpu
    for off in range(start, start + per_dpu, BLOCK):
        offs = off + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=m) + tl.load(b_ptr + offs, mask=m), mask=m)


@triton.jit
def red_kernel(a_ptr, out_ptr, n, per_dpu, BLOCK: tl.constexpr):
    start = tl.program_id(0) * per_dpu
    acc = tl.zeros([BLOCK], dtype=tl.int64)
    for off in range(start, start + per_dpu, BLOCK):
        offs = off + tl.arange(0, BLOCK)
        acc += tl.load(a_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + tl.program_id(0), tl.sum(acc))


@triton.jit
def scan_kernel(a_ptr, out_ptr, n, per_dpu, BLOCK: tl.constexpr):
    start = tl.program_id(0) * per_dpu
    carry = tl.zeros([1], dtype=tl.int64)
    for off in range(start, start + per_dpu, BLOCK):
        offs = off + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.cumsum(tl.load(a_ptr + offs, mask=m, other=0), axis=0)
        tl.store(out_ptr + offs, x + carry, mask=m)
        carry += tl.sum(tl.where(tl.arange(0, BLOCK) == BLOCK - 1, x, 0))


@triton.jit
def gemv_kernel(a_ptr, x_ptr, y_ptr, rows, cols, rows_per_dpu, BLOCK: tl.constexpr):
    start = tl.program_id(0) * rows_per_dpu
    for r in range(start, start + rows_per_dpu):
        acc = tl.zeros([BLOCK], dtype=tl.uint32)
        for c in range(0, cols, BLOCK):
            offs = c + tl.arange(0, BLOCK)
            acc += tl.load(a_ptr + r * cols + offs) * tl.load(x_ptr + offs)
        tl.store(y_ptr + r, tl.sum(acc))


@triton.jit
def hst_kernel(a_ptr, hist_ptr, n, per_dpu, BINS: tl.constexpr, DEPTH: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    start = pid * per_dpu
    counts = tl.zeros((BINS,), tl.int32)
    for off in range(start, start + per_dpu, BLOCK):
        offs = off + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(a_ptr + offs, mask=m, other=0)
        counts += tl.histogram(((x * BINS) >> DEPTH).to(tl.int32), BINS, mask=m)
    tl.store(hist_ptr + pid * BINS + tl.arange(0, BINS), counts.to(tl.uint32))


def _split(n: int, dpus: int, block: int) -> int:
    return (n + dpus - 1) // dpus // block * block + (block if (n + dpus - 1) // dpus % block else 0)


VA_ELEMENTS = 2_621_440


def va(dpus: int, scale: float = 1.0):
    n = int(round(VA_ELEMENTS * scale))
    a = np.arange(n, dtype=np.int32)
    b = np.ones(n, dtype=np.int32)
    c = np.zeros(n, dtype=np.int32)
    block = 4096
    return va_kernel, (a, b, c, n, _split(n, dpus, block)), {"BLOCK": block}, lambda: np.array_equal(c, a + b)


def red(dpus: int, scale: float = 1.0):
    n = int(6_553_600 * scale)
    a = np.arange(n, dtype=np.int64) % 1000
    out = np.zeros(dpus, dtype=np.int64)
    block = 1024
    return red_kernel, (a, out, n, _split(n, dpus, block)), {"BLOCK": block}, lambda: out.sum() == a.sum()


def scan(dpus: int, scale: float = 1.0):
    n = int(3_932_160 * scale)
    a = np.arange(n, dtype=np.int64) % 7
    out = np.zeros(n, dtype=np.int64)
    block = 2048
    per = _split(n, dpus, block)

    def check():
        expect = np.concatenate([np.cumsum(a[s:s + per]) for s in range(0, n, per)])
        return np.array_equal(out, expect)
    return scan_kernel, (a, out, n, per), {"BLOCK": block}, check


def gemv(dpus: int, scale: float = 1.0):
    rows, cols = int(8192 * scale), 1024
    a = (np.arange(rows * cols, dtype=np.uint32) % 13).reshape(rows, cols)
    x = np.arange(cols, dtype=np.uint32) % 5
    y = np.zeros(rows, dtype=np.uint32)
    block = 256
    per = (rows + dpus - 1) // dpus
    return gemv_kernel, (a, x, y, rows, cols, per), {"BLOCK": block}, lambda: np.array_equal(y, a @ x)


def hst(dpus: int, scale: float = 1.0):
    n = int(1536 * 1024 * scale)
    bins, depth = 256, 12
    a = (np.arange(n, dtype=np.uint64) * 2654435761 % (1 << depth)).astype(np.uint32)
    hist = np.zeros(dpus * bins, dtype=np.uint32)
    block = 4096
    expect = np.bincount((a.astype(np.int64) * bins) >> depth, minlength=bins)
    return (hst_kernel, (a, hist, n, _split(n, dpus, block)), {"BINS": bins, "DEPTH": depth, "BLOCK": block},
            lambda: np.array_equal(hist.reshape(dpus, bins).sum(axis=0), expect))


WORKLOADS = {"VA": va, "RED": red, "SCAN-SSA": scan, "GEMV": gemv, "HST-S": hst}
