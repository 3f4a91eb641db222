"""`tl.argmax` / `tl.argmin` skip NaN, as `tl.max` / `tl.min` do (Triton's
semantics: the interpreter's `np.nanargmax`), whatever the position of the
NaN and the reduction order; a row of NaN only gives its first index."""
import numpy as np
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st

from launch_strategies import strategies

DPUS, TASKLETS = strategies()


@triton.jit
def arg_kernel(x_ptr, max_ptr, min_ptr, fmax_ptr, fmin_ptr, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)
    x = tl.load(x_ptr + rows[:, None] * C + tl.arange(0, C)[None, :])
    tl.store(max_ptr + rows, tl.argmax(x, axis=1))
    tl.store(min_ptr + rows, tl.argmin(x, axis=1))
    tl.store(fmax_ptr + rows, tl.argmax(x, axis=1, tie_break_left=False))
    tl.store(fmin_ptr + rows, tl.argmin(x, axis=1, tie_break_left=False))


def _nanarg(x, fn):
    """fn (np.nanargmax / np.nanargmin) per row; 0 for a row of NaN."""
    return np.array([fn(r) if not np.isnan(r).all() else 0 for r in x])


@settings(max_examples=25)
@given(cols=st.sampled_from([4, 8, 64]), seed=st.integers(0, 2 ** 16), nan_rate=st.sampled_from([0.0, 0.3, 0.9]),
       dtype=st.sampled_from([np.float32, np.float16]), dpus=DPUS, tasklets=TASKLETS)
def test_argmax_and_argmin_skip_nan(cols, seed, nan_rate, dtype, dpus, tasklets):
    rows = 8
    rng = np.random.default_rng(seed)
    x = rng.integers(-4, 5, (rows, cols)).astype(dtype)          # (ties)
    x[rng.random((rows, cols)) < nan_rate] = np.nan
    x[0, 0], x[1, -1] = np.nan, np.nan                            # NaN first and last
    outs = [np.zeros(rows, np.int32) for _ in range(4)]
    arg_kernel[(1,)](x, *outs, R=rows, C=cols, num_dpus=dpus, num_tasklets=tasklets)
    np.testing.assert_array_equal(outs[0], _nanarg(x, np.nanargmax))
    np.testing.assert_array_equal(outs[1], _nanarg(x, np.nanargmin))
    # Without the left tie-break any index of the extreme value will do.
    for out, fn in ((outs[2], np.nanmax), (outs[3], np.nanmin)):
        for r in range(rows):
            if not np.isnan(x[r]).all():
                assert x[r, out[r]] == fn(x[r])
