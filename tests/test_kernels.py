"""Property tests: edsl kernels run on the host against NumPy references.

Each kernel is compiled once (module level or a cached factory) and then run on
many Hypothesis-generated inputs. The semantics checked here are the ones the
typing rules of `edsl.codegen.semantic` promise; each group states them.
"""

import functools
import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import edsl
from edsl import InOut, Input

# --- strategies and comparison helpers ---------------------------------------------------

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


# --- saxpy, reductions, scans -----------------------------------------------------------

@edsl.dialect
def saxpy(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], a: Input["f32"]):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


@given(data=st.data(), a=SMALL_F32)
def test_saxpy(data, a):
    n = data.draw(SIZES)
    x = data.draw(f32_arrays(n, SMALL_F32))
    y = data.draw(f32_arrays(n, SMALL_F32))
    want = np.float32(a) * x + y
    saxpy(y, x, a)
    # a*x+y may be fused into one fma by the backend: allow one rounding of difference.
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=2e-5)


@edsl.dialect
def reduce_f32(out: InOut["memref<3xf32>"], x: Input["memref<?xf32>"]):
    s = 0.0
    m = -math.inf
    for i in range(x.shape[0]):
        s += x[i]
        m = max(m, x[i])
    out[0] = s
    out[1] = m
    out[2] = s / x.shape[0] if x.shape[0] > 0 else 0.0


@given(x=SIZES.flatmap(lambda n: f32_arrays(n, SMALL_F32)))
def test_sum_max_mean(x):
    out = np.zeros(3, np.float32)
    reduce_f32(out, x)
    # Accumulation is sequential in f32: np.cumsum is sequential too, so equal.
    total = np.cumsum(x, dtype=np.float32)[-1] if x.size else np.float32(0)
    assert out[0] == total
    assert out[1] == (x.max() if x.size else -np.inf)
    np.testing.assert_allclose(out[2], total / x.size if x.size else 0.0, rtol=1e-6)


@given(x=SIZES.flatmap(f32_arrays))
@example(x=np.array([1.0, np.nan, 2.0], np.float32))
def test_max_propagates_nan(x):
    out = np.zeros(3, np.float32)
    reduce_f32(out, x)
    assert_same_floats(out[1:2], np.array([x.max() if x.size else -np.inf], np.float32))


@edsl.dialect
def argmax_i32(out: InOut["memref<2xi32>"], x: Input["memref<?xi32>"]):
    best = x[0]
    where = 0
    for i in range(1, x.shape[0]):
        if x[i] > best:    # strict: the first maximum wins, as np.argmax
            best = x[i]
            where = i
    out[0] = where
    out[1] = best


@given(x=st.integers(1, 40).flatmap(lambda n: int_arrays(np.int32, n, st.integers(-5, 5))))
def test_argmax(x):
    out = np.zeros(2, np.int32)
    argmax_i32(out, x)
    assert out[0] == np.argmax(x)
    assert out[1] == x.max()


@edsl.dialect
def int_sum(out: InOut["memref<1xi32>"], x: Input["memref<?xi32>"]):
    s = edsl.i32(0)
    for i in range(x.shape[0]):
        s += x[i]
    out[0] = s


@given(x=SIZES.flatmap(lambda n: int_arrays(np.int32, n)))
def test_int_sum_wraps(x):
    out = np.zeros(1, np.int32)
    int_sum(out, x)
    assert out[0] == wrap(sum(int(v) for v in x), np.int32)


@edsl.dialect
def prefix_sum(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i]
        y[i] = acc


@given(x=SIZES.flatmap(lambda n: f32_arrays(n, SMALL_F32)))
def test_prefix_sum(x):
    y = np.full_like(x, np.nan)
    prefix_sum(y, x)
    np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.float32))


# --- 2-D kernels ------------------------------------------------------------------------

@edsl.dialect
def matmul(c: InOut["memref<?x?xf32>"], a: Input["memref<?x?xf32>"], b: Input["memref<?x?xf32>"]):
    for i in range(c.shape[0]):
        for j in range(c.shape[1]):
            acc = 0.0
            for k in range(a.shape[1]):
                acc += a[i, k] * b[k, j]
            c[i, j] = acc


@given(data=st.data())
def test_matmul(data):
    m, k, n = (data.draw(st.integers(0, 9), label=name) for name in "mkn")
    a = data.draw(hnp.arrays(np.float32, (m, k), elements=st.floats(-10, 10, width=32)))
    b = data.draw(hnp.arrays(np.float32, (k, n), elements=st.floats(-10, 10, width=32)))
    c = np.full((m, n), np.nan, np.float32)
    matmul(c, a, b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    assert np.all(np.abs(c - want) <= 1e-6 * scale + 1e-30)


@edsl.dialect
def softmax_rows(y: InOut["memref<?x?xf32>"], x: Input["memref<?x?xf32>"]):
    for i in range(x.shape[0]):
        m = -math.inf
        for j in range(x.shape[1]):
            m = max(m, x[i, j])
        total = 0.0
        for j in range(x.shape[1]):
            e = edsl.exp(x[i, j] - m)
            y[i, j] = e
            total += e
        for j in range(x.shape[1]):
            y[i, j] = y[i, j] / total


@given(x=hnp.arrays(np.float32, hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=12),
                    elements=st.floats(-50, 50, width=32)))
def test_softmax_rows(x):
    y = np.zeros_like(x)
    softmax_rows(y, x)
    z = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True, initial=-np.inf))
    want = z / z.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(y, want, rtol=2e-5, atol=1e-7)


# --- scatter ----------------------------------------------------------------------------

@edsl.dialect
def histogram(h: InOut["memref<?xi32>"], x: Input["memref<?xi32>"]):
    for i in range(x.shape[0]):
        h[x[i]] += 1


@given(data=st.data())
def test_histogram(data):
    bins = data.draw(st.integers(1, 16))
    x = data.draw(SIZES.flatmap(lambda n: int_arrays(np.int32, n, st.integers(0, bins - 1))))
    h = np.zeros(bins, np.int32)
    histogram(h, x)
    np.testing.assert_array_equal(h, np.bincount(x, minlength=bins))


@edsl.dialect
def pick(o: InOut["memref<?xf32>"], x: Input["memref<?x?xf32>"], rows: Input["memref<?xi64>"],
         cols: Input["memref<?xi8>"]):
    for i in range(rows.shape[0]):
        o[-1 - i] = x[rows[i], cols[i]]   # dynamic subscripts count from the end when negative


@given(data=st.data())
def test_negative_dynamic_subscripts_follow_python(data):
    shape = data.draw(st.tuples(st.integers(1, 6), st.integers(1, 6)))
    x = data.draw(f32_arrays(shape))
    n = data.draw(st.integers(0, 10))
    rows = data.draw(int_arrays(np.int64, n, st.integers(-shape[0], shape[0] - 1)))
    cols = data.draw(int_arrays(np.int8, n, st.integers(-shape[1], shape[1] - 1)))
    o = np.zeros(n, np.float32)
    pick(o, x, rows, cols)
    want = np.zeros(n, np.float32)
    for i in range(n):
        want[-1 - i] = x[rows[i], cols[i]]
    assert_same_floats(o, want)


# --- control flow -----------------------------------------------------------------------

@edsl.dialect
def sum_until(out: InOut["memref<2xi32>"], x: Input["memref<?xi32>"], limit: Input["i32"]):
    i = 0
    s = 0
    while i < x.shape[0]:
        if x[i] > limit:
            break
        s += x[i]
        i += 1
    out[0] = s
    out[1] = i


@given(x=SIZES.flatmap(lambda n: int_arrays(np.int32, n, st.integers(-100, 100))), limit=st.integers(-100, 100))
def test_while_break(x, limit):
    out = np.zeros(2, np.int32)
    sum_until(out, x, limit)
    s, i = 0, 0
    while i < len(x):
        if x[i] > limit:
            break
        s += int(x[i])
        i += 1
    assert list(out) == [s, i]


@edsl.dialect
def find_and_count(out: InOut["memref<2xi32>"], x: Input["memref<?xi32>"], v: Input["i32"]):
    where = -1
    for i in range(x.shape[0]):
        if x[i] == v:
            where = i
            break                      # `break` out of a `for`
    out[0] = where
    pairs = 0
    for i in range(x.shape[0]):
        for j in range(x.shape[0]):
            if j > i:
                break                  # leaves the inner loop only
            if (x[i] + x[j]) % 2 == 1:
                continue
            pairs += 1
    out[1] = pairs


@given(x=SIZES.flatmap(lambda n: int_arrays(np.int32, n, st.integers(-4, 4))), v=st.integers(-4, 4))
def test_for_break_and_nested_continue(x, v):
    out = np.zeros(2, np.int32)
    find_and_count(out, x, v)
    hits = np.flatnonzero(x == v)
    pairs = sum(1 for i in range(len(x)) for j in range(i + 1) if (int(x[i]) + int(x[j])) % 2 == 0)
    assert out.tolist() == [int(hits[0]) if hits.size else -1, pairs]


@edsl.dialect
def collatz_steps(o: InOut["memref<?xi32>"], x: Input["memref<?xi64>"], cap: Input["i32"]):
    for i in range(x.shape[0]):
        v = x[i]
        steps = 0
        while v != 1 and steps < cap:
            if v % 2 == 0:
                v = v // 2
            else:
                v = 3 * v + 1
            steps += 1
        o[i] = steps


@given(x=SIZES.flatmap(lambda n: int_arrays(np.int64, n, st.integers(1, 10 ** 6))), cap=st.integers(0, 200))
def test_while_dynamic_condition(x, cap):
    o = np.zeros(x.shape, np.int32)
    collatz_steps(o, x, cap)
    want = []
    for v in map(int, x):
        steps = 0
        while v != 1 and steps < cap:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            steps += 1
        want.append(steps)
    assert o.tolist() == want


@edsl.dialect
def classify(o: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
    for i in range(x.shape[0]):
        v = x[i]
        if v > 1.0:
            y = v * 2.0
            s = 1
        elif v < -1.0:
            y = -v
            s = -1
        else:
            y = 0       # an int here, a float in the other arms: y is f32 after the if
            s = 0
        o[i] = y + s


@given(x=SIZES.flatmap(lambda n: f32_arrays(n, SMALL_F32)))
def test_if_elif_else_merges_values(x):
    o = np.full_like(x, np.nan)
    classify(o, x)
    want = np.where(x > 1, x * np.float32(2) + 1, np.where(x < -1, -x - 1, np.float32(0)))
    np.testing.assert_array_equal(o, want.astype(np.float32))


@edsl.dialect
def assigned_on_every_path(o: InOut["memref<3xi32>"], x: Input["memref<?xi32>"]):
    for k in range(3):          # static bounds with a trip: the body runs
        first = x[k]
    i = 0
    while True:
        found = i               # assigned before the only `break`
        if x[i] > 10 or i + 1 == x.shape[0]:
            break
        i += 1
    if x[0] > 0:
        s = 1
    elif x[0] < 0:
        s = -1
    else:
        s = 0
    o[0] = first
    o[1] = found
    o[2] = s


@given(x=st.integers(3, 12).flatmap(lambda n: int_arrays(np.int32, n, st.integers(-20, 20))))
def test_variables_assigned_on_every_path(x):
    o = np.zeros(3, np.int32)
    assigned_on_every_path(o, x)
    found = next((i for i in range(len(x)) if x[i] > 10), len(x) - 1)
    assert o.tolist() == [x[2], found, int(np.sign(x[0]))]


@edsl.dialect
def count_positive(out: InOut["memref<2xf32>"], x: Input["memref<?xf32>"]):
    n = 0
    s = 0.0
    for i in range(x.shape[0]):
        if not x[i] > 0:   # NaN is not > 0: skipped too
            continue
        n += 1
        s += x[i]
    out[0] = n
    out[1] = s


@given(x=SIZES.flatmap(f32_arrays))
def test_continue(x):
    out = np.zeros(2, np.float32)
    count_positive(out, x)
    kept = x[x > 0]
    assert out[0] == kept.size
    total = np.cumsum(kept, dtype=np.float32)[-1] if kept.size else np.float32(0)
    assert_same_floats(out[1:], np.array([total]))


@edsl.dialect
def strided(o: InOut["memref<?xi32>"], start: Input["i32"], stop: Input["i32"], step: Input["i32"]):
    k = 0
    for i in range(start, stop, step):
        o[k] = i
        k += 1
    o[o.shape[0] - 1] = k   # the count, in the last slot


@given(start=st.integers(-20, 20), stop=st.integers(-20, 20),
       step=st.integers(-7, 7).filter(bool))
@example(start=9, stop=-1, step=-1)
@example(start=5, stop=5, step=-3)
def test_range_dynamic_and_negative_step(start, stop, step):
    want = list(range(start, stop, step))
    o = np.full(len(want) + 1, -999, np.int32)
    strided(o, start, stop, step)
    assert o.tolist() == want + [len(want)]


@edsl.dialect
def reverse_copy(o: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
    n = x.shape[0]
    for i in range(n - 1, -1, -1):   # static negative step
        o[n - 1 - i] = x[i]


@given(x=SIZES.flatmap(f32_arrays))
def test_range_static_negative_step(x):
    o = np.zeros_like(x)
    reverse_copy(o, x)
    assert_same_floats(o, x[::-1], sign_of_zero=True)


@edsl.dialect
def every_other_backwards(o: InOut["memref<?xi32>"], x: Input["memref<?xi32>"], step: Input["index"]):
    for i in range(x.shape[0] - 1, -1, -step):
        if x[i] < 0:
            continue
        o[i] = x[i] * 2


@given(x=SIZES.flatmap(lambda n: int_arrays(np.int32, n, st.integers(-1000, 1000))), step=st.integers(1, 5))
def test_negated_dynamic_step_with_continue(x, step):
    o = np.zeros_like(x)
    every_other_backwards(o, x, step)
    want = np.zeros_like(x)
    for i in range(len(x) - 1, -1, -step):
        if x[i] >= 0:
            want[i] = x[i] * 2
    np.testing.assert_array_equal(o, want)


# --- captured constants and calls ---------------------------------------------------------

SCALE = 3.0
OFFSET = 2


@edsl.dialect
def scale_add(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
    for i in range(y.shape[0]):
        y[i] = SCALE * x[i] + OFFSET


@edsl.dialect
def twice_saxpy(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], a: Input["f32"]):
    saxpy(y, x, a)
    saxpy(y, x, a)
    scale_add(y, y)


@given(data=st.data(), a=st.floats(-4, 4, width=32))
def test_captured_constants_and_calls(data, a):
    n = data.draw(SIZES)
    x = data.draw(f32_arrays(n, st.integers(-50, 50).map(float)))
    y = data.draw(f32_arrays(n, st.integers(-50, 50).map(float)))
    a = np.float32(round(a * 4) / 4)  # exact arithmetic: small integers and quarters
    want = np.float32(3.0) * (y + 2 * a * x) + np.float32(2)
    twice_saxpy(y, x, a)
    np.testing.assert_array_equal(y, want)


@edsl.dialect
def copy_forward(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
    for i in range(y.shape[0]):
        y[i] = x[i]


@edsl.dialect
def copy_at(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], k: Input["i64"]):
    y[k] = x[k]


def test_indices_known_non_negative_need_no_wrap():
    """A loop index counting up from 0 is never negative: no Python-style wrap
    (a compare and a select) is emitted for it; an argument may be negative."""
    assert "arith.select" not in copy_forward.mlir
    assert "arith.select" in copy_at.mlir
    y, x = np.zeros(4, np.float32), np.arange(4, dtype=np.float32)
    copy_at(y, x, -1)
    assert y[3] == 3
