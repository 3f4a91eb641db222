"""`tl.atomic_poll`: true when the value matches; with a timeout, false when
it does not; without one, a wait that could never end on the model (it runs
one program at a time) is a `DpuError` at the poll's line."""
import inspect

import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st

from edsl.base.errors import DpuError

from launch_strategies import strategies

DPUS, TASKLETS = strategies()
needs_atomic_poll = pytest.mark.skipif(not hasattr(tl, "atomic_poll"),
                                       reason=f"tl.atomic_poll is not in triton {triton.__version__} (3.7 on)")


@triton.jit
def poll_kernel(flag_ptr, out_ptr, expected, timeout_ns, TIMEOUT: tl.constexpr):
    if TIMEOUT:
        matched = tl.atomic_poll(flag_ptr, expected, timeout_ns=timeout_ns)
    else:
        matched = tl.atomic_poll(flag_ptr, expected)
    tl.store(out_ptr, matched)


@triton.jit
def poll_tile_kernel(flag_ptr, out_ptr, expected_ptr, timeout_ns, N: tl.constexpr):
    offs = tl.arange(0, N)
    matched = tl.atomic_poll(flag_ptr + offs, tl.load(expected_ptr + offs), timeout_ns=timeout_ns)
    tl.store(out_ptr + offs, matched)


@settings(max_examples=12)
@given(dtype=st.sampled_from([np.int16, np.int32, np.int64]), value=st.integers(-3, 3), expected=st.integers(-3, 3),
       dpus=DPUS, tasklets=TASKLETS)
@needs_atomic_poll
def test_poll_with_timeout_tells_whether_the_value_matched(dtype, value, expected, dpus, tasklets):
    flag = np.array([value], dtype)
    out = np.zeros(1, np.bool_)
    poll_kernel[(2,)](flag, out, expected, 0, TIMEOUT=True, num_dpus=dpus, num_tasklets=tasklets)
    assert out[0] == (value == expected)


@needs_atomic_poll
@settings(max_examples=8)
@given(seed=st.integers(0, 2 ** 16), tasklets=TASKLETS)
def test_poll_of_a_tile_of_pointers(seed, tasklets):
    rng = np.random.default_rng(seed)
    flags = rng.integers(0, 2, 16).astype(np.int32)
    expected = rng.integers(0, 2, 16).astype(np.int32)
    out = np.zeros(16, np.bool_)
    poll_tile_kernel[(1,)](flags, out, expected, 5, N=16, num_tasklets=tasklets)
    np.testing.assert_array_equal(out, flags == expected)


@needs_atomic_poll
@pytest.mark.parametrize("tasklets", [1, 16])
def test_poll_without_timeout_matching_returns_true(tasklets):
    out = np.zeros(1, np.bool_)
    poll_kernel[(1,)](np.array([7], np.int32), out, 7, 0, TIMEOUT=False, num_tasklets=tasklets)
    assert out[0]


@needs_atomic_poll
def test_poll_that_can_never_match_is_an_error_at_its_line():
    out = np.zeros(1, np.bool_)
    with pytest.raises(DpuError, match="atomic_poll waits forever: the value is 0, not 1") as err:
        poll_kernel[(1,)](np.array([0], np.int32), out, 1, 0, TIMEOUT=False)
    lines, first = inspect.getsourcelines(poll_kernel.fn)
    assert err.value.loc.lineno == first + next(k for k, line in enumerate(lines) if "atomic_poll(flag_ptr, expected)" in line)
