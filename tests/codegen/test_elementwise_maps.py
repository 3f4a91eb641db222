"""Elementwise maps of edsl functions on float32 and integers, run on the host
against NumPy: each group states the semantics `edsl.codegen.semantic` promises."""

import functools
import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import edsl
from edsl import InOut, Input
from kernel_strategies import (INT_DTYPES, SIZES, assert_same_floats, f32_arrays, f32_pairs,
                              int_arrays, int_pairs, wrap)


# --- elementwise maps on float32 --------------------------------------------------------
#
# Floats follow IEEE 754 binary32: +, -, *, / are correctly rounded, so they
# must equal NumPy's float32 results bit for bit (NaN compares equal to NaN
# here). min/max propagate NaN like np.minimum/np.maximum. `//` and `%`
# follow Python (= np.floor_divide / np.remainder): `a % b` has the sign of
# b, and `a // b` is the floor of the exact quotient, so 1.0 // 0.1 == 9.0
# and -1.0 // inf == -1.0. Comparisons are ordered (false on NaN) except
# `!=`, which is true on NaN.


@functools.cache
def float_binary_kernel(op: str):
    @edsl.dialect
    def kernel(o: InOut["memref<?xf32>"], a: Input["memref<?xf32>"], b: Input["memref<?xf32>"]):
        for i in range(o.shape[0]):
            x = a[i]
            y = b[i]
            if op == "+":
                o[i] = x + y
            elif op == "-":
                o[i] = x - y
            elif op == "*":
                o[i] = x * y
            elif op == "/":
                o[i] = x / y
            elif op == "//":
                o[i] = x // y
            elif op == "%":
                o[i] = x % y
            elif op == "min":
                o[i] = min(x, y)
            elif op == "max":
                o[i] = max(x, y)
            elif op == "copysign":
                o[i] = math.copysign(x, y)
    return kernel


FLOAT_BINARY = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide,
    "//": np.floor_divide, "%": np.remainder, "min": np.minimum, "max": np.maximum,
    "copysign": np.copysign,
}


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "min", "max", "copysign"])
@given(ab=f32_pairs())
@example(ab=(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0], np.float32),
             np.array([-0.0, 0.0, -np.inf, np.inf, 1.0, np.nan], np.float32)))
@example(ab=(np.array([3e38, 1.0, 0.0], np.float32), np.array([3e38, 0.0, 0.0], np.float32)))
def test_float_binary(op, ab):
    a, b = ab
    o = np.zeros_like(a)
    float_binary_kernel(op)(o, a, b)
    with np.errstate(all="ignore"):
        want = FLOAT_BINARY[op](a, b)
    assert want.dtype == np.float32
    assert_same_floats(o, want, sign_of_zero=op in ("+", "-", "*", "/", "copysign"))


@pytest.mark.parametrize("op", ["//", "%"])
@given(ab=f32_pairs())
@example(ab=(np.array([1.0, 7.0, -7.0, 7.0, -7.0], np.float32),
             np.array([0.1, 2.0, 2.0, -2.0, -2.0], np.float32)))
@example(ab=(np.array([-1.0, 1.0, -1.0, 5.0, np.inf, 0.0, 1.0], np.float32),
             np.array([np.inf, -np.inf, 0.0, 0.0, 3.0, 0.0, np.nan], np.float32)))
def test_float_floor_division_and_modulo_follow_python(op, ab):
    a, b = ab
    o = np.zeros_like(a)
    float_binary_kernel(op)(o, a, b)
    with np.errstate(all="ignore"):
        want = FLOAT_BINARY[op](a, b)
    assert_same_floats(o, want)


@functools.cache
def float_compare_kernel(op: str):
    @edsl.dialect
    def kernel(o: InOut["memref<?xi32>"], a: Input["memref<?xf32>"], b: Input["memref<?xf32>"]):
        for i in range(o.shape[0]):
            x = a[i]
            y = b[i]
            if op == "==":
                c = x == y
            elif op == "!=":
                c = x != y
            elif op == "<":
                c = x < y
            elif op == "<=":
                c = x <= y
            elif op == ">":
                c = x > y
            else:
                c = x >= y
            o[i] = edsl.i32(c)
    return kernel


COMPARE = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
           ">": np.greater, ">=": np.greater_equal}


@pytest.mark.parametrize("op", list(COMPARE))
@given(ab=f32_pairs())
@example(ab=(np.array([np.nan, np.nan, 0.0, -0.0, np.inf], np.float32),
             np.array([np.nan, 1.0, -0.0, 0.0, np.inf], np.float32)))
def test_float_compare(op, ab):
    a, b = ab
    o = np.full(a.shape, 7, np.int32)
    float_compare_kernel(op)(o, a, b)
    np.testing.assert_array_equal(o, COMPARE[op](a, b).astype(np.int32))


@functools.cache
def float_unary_kernel(op: str):
    @edsl.dialect
    def kernel(o: InOut["memref<?xf32>"], a: Input["memref<?xf32>"]):
        for i in range(o.shape[0]):
            x = a[i]
            if op == "neg":
                o[i] = -x
            elif op == "abs":
                o[i] = abs(x)
            elif op == "floor":
                o[i] = edsl.floor(x)
            elif op == "ceil":
                o[i] = math.ceil(x)
            elif op == "trunc":
                o[i] = edsl.trunc(x)
            elif op == "round":
                o[i] = edsl.round(x)   # half away from zero
            elif op == "rint":
                o[i] = round(x)        # Python's round: half to even
            elif op == "exp":
                o[i] = math.exp(x)
            elif op == "log":
                o[i] = edsl.log(x)
            elif op == "sqrt":
                o[i] = math.sqrt(x)
            elif op == "tanh":
                o[i] = edsl.tanh(x)
            elif op == "sin":
                o[i] = math.sin(x)
            elif op == "isnan":
                o[i] = edsl.f32(edsl.isnan(x))
            elif op == "isinf":
                o[i] = edsl.f32(math.isinf(x))
    return kernel


def _round_half_away(x):
    r = np.trunc(x)
    frac = np.abs(x - r)  # exact in floating point
    return np.where(frac >= 0.5, r + np.sign(x), r).astype(x.dtype)


# Exact operations: same value and, where it matters, the same sign of zero.
EXACT_UNARY = {
    "neg": np.negative, "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "round": _round_half_away, "rint": np.rint,
    "isnan": lambda x: np.isnan(x).astype(np.float32), "isinf": lambda x: np.isinf(x).astype(np.float32),
}
# Transcendental functions: a few ulps from NumPy, same specials (NaN, inf, -0.0 kept).
APPROX_UNARY = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "sin": np.sin}

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 0.5, -0.5, 1.5, -2.5, 1e-45, -3.4e38],
                    np.float32)


@pytest.mark.parametrize("op", list(EXACT_UNARY))
@given(a=SIZES.flatmap(f32_arrays))
@example(a=SPECIALS)
def test_float_unary_exact(op, a):
    o = np.zeros_like(a)
    float_unary_kernel(op)(o, a)
    with np.errstate(all="ignore"):
        want = EXACT_UNARY[op](a)
    assert_same_floats(o, want, sign_of_zero=True)


@pytest.mark.parametrize("op", list(APPROX_UNARY))
@given(a=SIZES.flatmap(f32_arrays))
@example(a=SPECIALS)
def test_float_unary_math(op, a):
    o = np.zeros_like(a)
    float_unary_kernel(op)(o, a)
    with np.errstate(all="ignore"):
        want = APPROX_UNARY[op](a)
    np.testing.assert_allclose(o, want, rtol=4e-6, atol=1e-37, equal_nan=True)
    exact = ~np.isfinite(want) | (want == 0)  # inf, NaN and zeros must match exactly
    assert_same_floats(o[exact], want[exact], sign_of_zero=op in ("sqrt", "tanh", "sin"))


# --- elementwise maps on integers -------------------------------------------------------
#
# Integers are signed two's complement and arithmetic wraps, as NumPy's
# fixed-width integers do. `//` floors and `%` takes the sign of the divisor
# (Python); `x // 0` and `x % 0` give 0; MIN // -1 wraps to MIN. Shifts by the
# bit width or more give 0 (`<<`) or the sign fill (`>>`, arithmetic) - which
# is exactly Python's unbounded `<<`/`>>` wrapped to the width. min/max/abs are
# signed; abs(MIN) wraps to MIN.

INT_BINARY = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "//": lambda a, b: a // b if b else 0, "%": lambda a, b: a % b if b else 0,
    "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
    "min": min, "max": max,
}


@functools.cache
def int_binary_kernel(op: str, t: str):
    @edsl.dialect
    def kernel(o: InOut[f"memref<?x{t}>"], a: Input[f"memref<?x{t}>"], b: Input[f"memref<?x{t}>"]):
        for i in range(o.shape[0]):
            x = a[i]
            y = b[i]
            if op == "+":
                o[i] = x + y
            elif op == "-":
                o[i] = x - y
            elif op == "*":
                o[i] = x * y
            elif op == "//":
                o[i] = x // y
            elif op == "%":
                o[i] = x % y
            elif op == "<<":
                o[i] = x << y
            elif op == ">>":
                o[i] = x >> y
            elif op == "&":
                o[i] = x & y
            elif op == "|":
                o[i] = x | y
            elif op == "^":
                o[i] = x ^ y
            elif op == "min":
                o[i] = min(x, y)
            elif op == "max":
                o[i] = max(x, y)
    return kernel


def int_reference(op, a, b, dtype):
    return np.array([wrap(INT_BINARY[op](int(x), int(y)), dtype) for x, y in zip(a, b)], dtype)


def _limits(dtype):
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


@pytest.mark.parametrize("t", list(INT_DTYPES))
@pytest.mark.parametrize("op", ["+", "-", "*", "//", "%", "&", "|", "^", "min", "max"])
@given(data=st.data())
def test_int_binary(op, t, data):
    dtype = INT_DTYPES[t]
    lo, hi = _limits(dtype)
    # Divisors often 0 or -1, the special cases of // and %.
    divisors = st.one_of(st.sampled_from([0, -1, 1]), st.integers(lo, hi)) if op in ("//", "%") else None
    a, b = data.draw(int_pairs(dtype, divisors))
    if a.size:  # always try the overflow corner too
        a[0] = lo
    o = np.zeros_like(a)
    int_binary_kernel(op, t)(o, a, b)
    np.testing.assert_array_equal(o, int_reference(op, a, b, dtype))


@pytest.mark.parametrize("t", list(INT_DTYPES))
@pytest.mark.parametrize("op", ["<<", ">>"])
@given(data=st.data())
def test_int_shifts(op, t, data):
    dtype = INT_DTYPES[t]
    width = np.dtype(dtype).itemsize * 8
    a, b = data.draw(int_pairs(dtype, st.integers(0, 2 * width)))
    if a.size:  # shifting by exactly the width
        b[0] = width
    o = np.zeros_like(a)
    int_binary_kernel(op, t)(o, a, b)
    np.testing.assert_array_equal(o, int_reference(op, a, b, dtype))


@functools.cache
def int_unary_kernel(op: str, t: str):
    @edsl.dialect
    def kernel(o: InOut[f"memref<?x{t}>"], a: Input[f"memref<?x{t}>"]):
        for i in range(o.shape[0]):
            x = a[i]
            if op == "neg":
                o[i] = -x
            elif op == "~":
                o[i] = ~x
            elif op == "abs":
                o[i] = abs(x)
            elif op == "not":
                o[i] = not x
            elif op == "poly":   # weak Python ints take the array's type and wrap
                o[i] = x * 3 + 7
    return kernel


INT_UNARY = {"neg": lambda x: -x, "~": lambda x: ~x, "abs": abs, "not": lambda x: int(not x),
             "poly": lambda x: x * 3 + 7}


@pytest.mark.parametrize("t", list(INT_DTYPES))
@pytest.mark.parametrize("op", list(INT_UNARY))
@given(data=st.data())
def test_int_unary(op, t, data):
    dtype = INT_DTYPES[t]
    a = data.draw(SIZES.flatmap(lambda n: int_arrays(dtype, n)))
    if a.size >= 2:
        a[:2] = _limits(dtype)
    o = np.zeros_like(a)
    int_unary_kernel(op, t)(o, a)
    want = np.array([wrap(INT_UNARY[op](int(x)), dtype) for x in a], dtype)
    np.testing.assert_array_equal(o, want)


@functools.cache
def int_compare_kernel(op: str, t: str):
    @edsl.dialect
    def kernel(o: InOut["memref<?xi32>"], a: Input[f"memref<?x{t}>"], b: Input[f"memref<?x{t}>"]):
        for i in range(o.shape[0]):
            if op == "==":
                c = a[i] == b[i]
            elif op == "!=":
                c = a[i] != b[i]
            elif op == "<":
                c = a[i] < b[i]
            elif op == "<=":
                c = a[i] <= b[i]
            elif op == ">":
                c = a[i] > b[i]
            else:
                c = a[i] >= b[i]
            o[i] = edsl.i32(c)
    return kernel


@pytest.mark.parametrize("t", ["i8", "i32", "i64"])
@pytest.mark.parametrize("op", list(COMPARE))
@given(data=st.data())
def test_int_compare(op, t, data):
    # Integers compare as signed values.
    dtype = INT_DTYPES[t]
    a, b = data.draw(int_pairs(dtype))
    o = np.full(a.shape, 7, np.int32)
    int_compare_kernel(op, t)(o, a, b)
    np.testing.assert_array_equal(o, COMPARE[op](a, b).astype(np.int32))
