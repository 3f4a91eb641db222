"""`tl.gather` and `tl.histogram` against NumPy: gather along either axis
with i32 or i64 indices; histograms count the masked-in values of [0, bins)
only (values outside are dropped, as Triton defines)."""
import numpy as np
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st

from launch_strategies import strategies

DPUS, TASKLETS = strategies()


@triton.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, S0: tl.constexpr, S1: tl.constexpr, I0: tl.constexpr,
                  I1: tl.constexpr, AXIS: tl.constexpr):
    src = tl.load(src_ptr + tl.arange(0, S0)[:, None] * S1 + tl.arange(0, S1)[None, :])
    offs = tl.arange(0, I0)[:, None] * I1 + tl.arange(0, I1)[None, :]
    out = tl.gather(src, tl.load(idx_ptr + offs), AXIS)
    tl.store(out_ptr + offs, out)


@settings(max_examples=20)
@given(axis=st.sampled_from([0, 1]), rows=st.sampled_from([4, 8]), cols=st.sampled_from([4, 16]),
       many=st.sampled_from([1, 2]), itype=st.sampled_from([np.int32, np.int64]), seed=st.integers(0, 2 ** 16),
       tasklets=TASKLETS)
def test_gather_along_either_axis(axis, rows, cols, many, itype, seed, tasklets):
    rng = np.random.default_rng(seed)
    src = rng.normal(size=(rows, cols)).astype(np.float32)
    ishape = (rows * many, cols) if axis == 0 else (rows, cols * many)
    idx = rng.integers(0, src.shape[axis], ishape).astype(itype)
    out = np.zeros(ishape, np.float32)
    gather_kernel[(1,)](src, idx, out, rows, cols, *ishape, axis, num_tasklets=tasklets)
    np.testing.assert_array_equal(out, np.take_along_axis(src, idx.astype(np.int64), axis))


def test_gather_index_out_of_range_stays_inside_the_source():
    src = np.arange(16, dtype=np.float32).reshape(4, 4)
    idx = np.array([[-5, 0, 3, 9]] * 4, dtype=np.int32)
    out = np.zeros((4, 4), np.float32)
    gather_kernel[(1,)](src, idx, out, 4, 4, 4, 4, 0)
    np.testing.assert_array_equal(out, np.take_along_axis(src, np.clip(idx, 0, 3), 0))


@triton.jit
def histogram_kernel(x_ptr, z_ptr, limit, M: tl.constexpr, BINS: tl.constexpr, MASKED: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, M)
    x = tl.load(x_ptr + pid * M + offs)
    if MASKED:
        z = tl.histogram(x, BINS, mask=offs < limit)
    else:
        z = tl.histogram(x, BINS)
    tl.store(z_ptr + pid * BINS + tl.arange(0, BINS), z)


@settings(max_examples=20)
@given(m=st.sampled_from([1, 8, 256]), bins=st.sampled_from([1, 2, 16, 128]), masked=st.booleans(),
       programs=st.integers(1, 3), seed=st.integers(0, 2 ** 16),
       dpus=DPUS, tasklets=TASKLETS)
def test_histogram_counts_masked_values_in_range(m, bins, masked, programs, seed, dpus, tasklets):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, bins + 3, (programs, m)).astype(np.int32)      # (Triton: 32-bit only)
    limit = int(rng.integers(0, m + 1))
    z = np.full(programs * bins + 1, -7, np.int32)              # (a guard word past the bins)
    histogram_kernel[(programs,)](x, z, limit, M=m, BINS=bins, MASKED=masked, num_dpus=dpus, num_tasklets=tasklets)
    for p in range(programs):
        kept = x[p, :limit] if masked else x[p]
        kept = kept[(kept >= 0) & (kept < bins)]
        np.testing.assert_array_equal(z[p * bins:(p + 1) * bins], np.bincount(kept, minlength=bins))
    assert z[-1] == -7
