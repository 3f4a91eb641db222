"""Tile code shared out among tasklets, against NumPy bit for bit for any
tasklet count: integer scans by chunks, histograms counted per tasklet,
reductions of a lane-masked tile, loop-carried tiles updated in place and
unrolled tile loops (also with tile lengths that do not unroll)."""
import numpy as np
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st

ANY_TASKLETS = st.sampled_from([1, 2, 3, 5, 7, 16])


@triton.jit
def _max_fn(a, b):
    return tl.maximum(a, b)


@triton.jit
def int_scan_kernel(x_ptr, fwd_ptr, rev_ptr, mx_ptr, last_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    s = tl.cumsum(x, axis=0)
    tl.store(fwd_ptr + offs, s, mask=m)
    tl.store(rev_ptr + offs, tl.cumsum(x, axis=0, reverse=True), mask=m)
    tl.store(mx_ptr + offs, tl.associative_scan(x, 0, _max_fn, reverse=True), mask=m)
    tl.store(last_ptr, tl.sum(tl.where(offs == n - 1, s, 0)))


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 64), block=st.sampled_from([8, 64]), dtype=st.sampled_from([np.int32, np.int64]),
       seed=st.integers(0, 2**16), tasklets=ANY_TASKLETS)
def test_integer_scans_by_chunks(n, block, dtype, seed, tasklets):
    n = min(n, block)
    x = np.random.default_rng(seed).integers(-2**20, 2**20, n).astype(dtype)
    fwd, rev, mx = (np.zeros(n, dtype) for _ in range(3))
    last = np.zeros(1, dtype)
    int_scan_kernel[(1,)](x, fwd, rev, mx, last, n, BLOCK=block, num_tasklets=tasklets)
    pad = np.zeros(block, dtype)
    pad[:n] = x
    np.testing.assert_array_equal(fwd, np.cumsum(x, dtype=dtype))
    np.testing.assert_array_equal(rev, np.cumsum(pad[::-1], dtype=dtype)[::-1][:n])
    np.testing.assert_array_equal(mx, np.maximum.accumulate(pad[::-1])[::-1][:n])
    assert last[0] == np.cumsum(x, dtype=dtype)[-1]


@triton.jit
def carried_kernel(a_ptr, hist_ptr, sum_ptr, rows_ptr, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.int64)
    counts = tl.zeros((BINS,), tl.int32)
    rows = tl.zeros([4, BLOCK], dtype=tl.int32)
    for off in range(0, n, BLOCK):
        offs = off + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(a_ptr + offs, mask=m, other=0)
        acc += x
        counts += tl.histogram((x % BINS).to(tl.int32), BINS, mask=m)
        rows += x[None, :].to(tl.int32)
    tl.store(sum_ptr, tl.sum(acc))
    tl.store(hist_ptr + tl.arange(0, BINS), counts)
    tl.store(rows_ptr + tl.arange(0, 4)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :], rows)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 300), block=st.sampled_from([8, 32, 64]), bins=st.sampled_from([2, 16, 64]),
       seed=st.integers(0, 2**16), tasklets=ANY_TASKLETS)
def test_loop_carried_tiles(n, block, bins, seed, tasklets):
    a = np.random.default_rng(seed).integers(0, 1000, n).astype(np.int64)
    hist, total = np.zeros(bins, np.int32), np.zeros(1, np.int64)
    rows = np.zeros((4, block), np.int32)
    carried_kernel[(1,)](a, hist, total, rows, n, BLOCK=block, BINS=bins, num_tasklets=tasklets)
    assert total[0] == a.sum()
    np.testing.assert_array_equal(hist, np.bincount(a % bins, minlength=bins))
    pad = np.zeros(-(-n // block) * block, np.int64)
    pad[:n] = a
    want = pad.reshape(-1, block).sum(axis=0).astype(np.int32)
    np.testing.assert_array_equal(rows, np.broadcast_to(want, (4, block)))


@triton.jit
def odd_length_kernel(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    acc = tl.zeros([N], dtype=tl.int32)
    for _ in range(3):
        acc += tl.load(x_ptr + offs) * 2
    tl.store(y_ptr + offs, acc)


@settings(max_examples=10, deadline=None)
@given(length=st.sampled_from([1, 2, 4, 8, 16]), tasklets=ANY_TASKLETS)
def test_tile_loops_of_any_length(length, tasklets):
    x = np.arange(length, dtype=np.int32) - 3
    y = np.zeros(length, np.int32)
    odd_length_kernel[(1,)](x, y, N=length, num_tasklets=tasklets)
    np.testing.assert_array_equal(y, x * 6)
