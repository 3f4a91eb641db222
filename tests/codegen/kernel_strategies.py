"""Hypothesis strategies and comparisons shared by the code-generation tests."""
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

SIZES = st.integers(min_value=0, max_value=40)  # includes empty and one-element arrays

# Any float32, including NaN, +-inf, -0.0 and subnormals.
ANY_F32 = st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True)
# Finite, moderate float32 values (for reductions and linear algebra).
SMALL_F32 = st.floats(min_value=-100.0, max_value=100.0, width=32)

INT_DTYPES = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}


def f32_arrays(n, elements=ANY_F32):
    return hnp.arrays(np.float32, n, elements=elements)


def int_arrays(dtype, n, elements=None):
    return hnp.arrays(dtype, n, elements=elements)


def f32_pairs(elements=ANY_F32):
    return SIZES.flatmap(lambda n: st.tuples(f32_arrays(n, elements), f32_arrays(n, elements)))


def int_pairs(dtype, second=None):
    return SIZES.flatmap(lambda n: st.tuples(int_arrays(dtype, n), int_arrays(dtype, n, second)))


def assert_same_floats(got, want, *, sign_of_zero=False):
    """Equal values, NaN equal to NaN; optionally the sign of zeros too."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    if sign_of_zero:
        both = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[both]), np.signbit(want[both]))


def wrap(value: int, dtype) -> int:
    """`value` wrapped to the two's complement range of `dtype`."""
    bits = np.dtype(dtype).itemsize * 8
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value
