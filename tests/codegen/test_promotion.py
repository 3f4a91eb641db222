"""Promotion and conversions of edsl values, run on the host against NumPy."""


import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import edsl
from edsl import InOut, Input
from kernel_strategies import (SIZES, assert_same_floats, f32_arrays, int_arrays, int_pairs)


# --- promotion and conversions ---------------------------------------------------------
#
# `/` is true division: integers are converted to f32 first, then the float
# rules apply, so `n / 0` is +-inf or NaN, as NumPy's true division of
# integers (only `//` and `%` give 0 for a zero divisor).
# i32 with i64 gives i64; an integer with a Python float gives f32; f32(x)
# rounds to nearest, i32(x) truncates toward zero.


@edsl.dialect
def int_true_div(o: InOut["memref<?xf32>"], a: Input["memref<?xi32>"], b: Input["memref<?xi32>"]):
    for i in range(o.shape[0]):
        o[i] = a[i] / b[i]


@given(ab=int_pairs(np.int32, st.integers(-(2 ** 31), 2 ** 31 - 1).filter(bool)))
def test_int_true_division_is_f32(ab):
    a, b = ab
    o = np.zeros(a.shape, np.float32)
    int_true_div(o, a, b)
    np.testing.assert_array_equal(o, a.astype(np.float32) / b.astype(np.float32))


def test_int_true_division_by_zero_is_float_division():
    a = np.array([5, -5, 0, 2 ** 31 - 1], np.int32)
    o = np.zeros(a.shape, np.float32)
    int_true_div(o, a, np.zeros_like(a))
    with np.errstate(all="ignore"):
        want = a / np.zeros_like(a)
    assert_same_floats(o, want.astype(np.float32))


@edsl.dialect
def mixed(wide: InOut["memref<?xi64>"], half: InOut["memref<?xf32>"], a: Input["memref<?xi32>"],
          b: Input["memref<?xi64>"]):
    for i in range(a.shape[0]):
        wide[i] = a[i] * b[i]      # i32 * i64 -> i64 (no 32-bit wrap)
        half[i] = a[i] + 0.5       # int with a Python float -> f32


@given(data=st.data())
def test_promotion(data):
    n = data.draw(SIZES)
    a = data.draw(int_arrays(np.int32, n))
    b = data.draw(int_arrays(np.int64, n, st.integers(-(2 ** 31), 2 ** 31)))
    wide = np.zeros(n, np.int64)
    half = np.zeros(n, np.float32)
    mixed(wide, half, a, b)
    np.testing.assert_array_equal(wide, a.astype(np.int64) * b)
    np.testing.assert_array_equal(half, a.astype(np.float32) + np.float32(0.5))


@edsl.dialect
def casts(to_f: InOut["memref<?xf32>"], to_i: InOut["memref<?xi32>"], a: Input["memref<?xi64>"],
          x: Input["memref<?xf32>"]):
    for i in range(a.shape[0]):
        to_f[i] = edsl.f32(a[i])
        to_i[i] = edsl.i32(x[i])


@given(data=st.data())
def test_casts(data):
    n = data.draw(SIZES)
    a = data.draw(int_arrays(np.int64, n))
    x = data.draw(f32_arrays(n, st.floats(-2.0 ** 31 + 128, 2.0 ** 31 - 128, width=32)))
    to_f = np.zeros(n, np.float32)
    to_i = np.zeros(n, np.int32)
    casts(to_f, to_i, a, x)
    np.testing.assert_array_equal(to_f, a.astype(np.float32))
    np.testing.assert_array_equal(to_i, x.astype(np.int32))
