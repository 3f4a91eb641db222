"""Whole edsl kernels run on the host against NumPy: saxpy, reductions and
scans, 2-D kernels, scatter, captured constants and calls."""

import math

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import edsl
from edsl import InOut, Input
from kernel_strategies import (SIZES, SMALL_F32, assert_same_floats, f32_arrays, int_arrays, wrap)


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


@edsl.dialect
def shift_from(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
    for j in range(1, y.shape[0]):
        y[j] = x[j - 1]                 # j >= 1: never negative
    for j in range(0, y.shape[0] - 3):
        y[j] = x[j - 1]                 # j >= 0 here: x[-1] is x's last, as in Python


def test_a_loop_index_less_at_most_its_start_needs_no_wrap():
    """`x[j - 1]` for j counting up from 1 needs no wrap (its least value is 0); from 0
    it keeps Python's meaning."""
    body = shift_from.mlir.split("scf.for")
    assert "arith.select" not in body[1] and "arith.select" in body[2]
    y, x = np.zeros(4, np.float32), np.arange(1, 5, dtype=np.float32)
    shift_from(y, x)
    np.testing.assert_array_equal(y, [4, 1, 2, 3])
