"""Control flow in edsl bodies (loops, break and continue, if/elif/else,
ranges of any step), run on the host against Python."""


import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

import edsl
from edsl import InOut, Input
from kernel_strategies import (SIZES, SMALL_F32, assert_same_floats, f32_arrays, int_arrays)


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
