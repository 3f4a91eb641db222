"""Loop nests shared among tasklets: a tile carried through 1 to 3 nested loops,
updated by `tl.dot`, a reduction, a scan or elementwise code, re-initialised and
stored inside the loops and after them, with or without a scalar carried beside
it (through the nest, then through a loop after it), gives the same bits for 1,
2, 3, 11 and 16 tasklets, run as loops or switched at barriers, and NumPy's values.

A barrier missing at the end of an inner loop's body lets one tasklet overwrite
a shared tile while another still reads it: every 1-tasklet test passes such a
kernel. The nest that once lacked it is `test_a_dot_k_loop_nested_in_a_loop`."""
import numpy as np
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st

import edsl.backend
from edsl.backend.convert.wram import WramFull

# (tasklets, run as loops between barriers): the model's default, and once
# switched at the barriers as an exported program's tasklets run
TASKLETS = [(1, True), (2, True), (3, True), (11, True), (16, True), (3, False)]
B = 16
DOT, SUM, SCAN, ELEMENTWISE = range(4)


@triton.jit
def _step(acc, x_ptr, w_ptr, t, OP: tl.constexpr, B: tl.constexpr):
    """One update of the carried tile by the tile of trip `t`."""
    r = tl.arange(0, B)
    x = tl.load(x_ptr + t * B * B + r[:, None] * B + r[None, :])
    if OP == 0:
        w = tl.load(w_ptr + t * B * B + r[:, None] * B + r[None, :])
        acc += tl.dot(x, w)
    elif OP == 1:
        acc += tl.sum(x, axis=1)[:, None] + tl.max(acc, axis=0)[None, :] * 0.25
    elif OP == 2:
        acc = tl.cumsum(x + acc * 0.5, axis=0)
    else:
        acc = acc * 0.5 + tl.trans(x)
    return acc


@triton.jit
def _carry(acc, s, SCALAR: tl.constexpr):
    """The scalar carried beside the tile: each step's largest element folded
    in (a reduction, so the loops it crosses meet at barriers), its smallest
    too where the scalar is large (an `if` that meets at a barrier), fed back."""
    if SCALAR:
        s = s * 0.5 + tl.max(acc)
        if s > 1.0:
            s = s + tl.min(acc) * 0.25
        acc = acc - s * 0.125
    return acc, s


@triton.jit
def _nest_below(acc, s, x_ptr, w_ptr, side_ptr, i, T2, T3, DEPTH: tl.constexpr, OP: tl.constexpr,
                STORE_INSIDE: tl.constexpr, SCALAR: tl.constexpr, B: tl.constexpr):
    """The loops inside the outer loop's trip `i`."""
    r = tl.arange(0, B)
    if DEPTH == 1:
        acc, s = _carry(_step(acc, x_ptr, w_ptr, i, OP, B), s, SCALAR)
    else:
        for j in range(T2):
            if DEPTH == 2:
                acc, s = _carry(_step(acc, x_ptr, w_ptr, i * T2 + j, OP, B), s, SCALAR)
            else:
                for k in range(T3):
                    acc, s = _carry(_step(acc, x_ptr, w_ptr, (i * T2 + j) * T3 + k, OP, B), s, SCALAR)
            if STORE_INSIDE:
                tl.store(side_ptr + (i * T2 + j) * B * B + r[:, None] * B + r[None, :], acc)
    return acc, s


@triton.jit
def nest_kernel(x_ptr, w_ptr, out_ptr, side_ptr, scalar_ptr, T1, T2, T3, DEPTH: tl.constexpr,
                OP: tl.constexpr, RESET: tl.constexpr, STORE_INSIDE: tl.constexpr,
                SCALAR: tl.constexpr, B: tl.constexpr):
    r = tl.arange(0, B)
    s = tl.full((), 0.0, tl.float32)
    if RESET:
        # A new tile each outer trip, as persistent kernels do: nothing is
        # written before the outer loop, whose body holds the first barriers.
        for i in range(T1):
            acc = tl.zeros((B, B), dtype=tl.float32)
            acc, s = _nest_below(acc, s, x_ptr, w_ptr, side_ptr, i, T2, T3, DEPTH, OP, STORE_INSIDE, SCALAR, B)
            tl.store(out_ptr + i * B * B + r[:, None] * B + r[None, :], acc)
    else:
        acc = tl.zeros((B, B), dtype=tl.float32)
        for i in range(T1):
            acc, s = _nest_below(acc, s, x_ptr, w_ptr, side_ptr, i, T2, T3, DEPTH, OP, STORE_INSIDE, SCALAR, B)
        tl.store(out_ptr + r[:, None] * B + r[None, :], acc)
    if SCALAR:
        # A loop that starts from the nest's result.
        for i in range(T1):
            s += tl.sum(tl.load(x_ptr + i * B * B + r[:, None] * B + r[None, :]))
        tl.store(scalar_ptr, s)


def _reference(x, w, trips, depth, op, reset, store_inside, scalar):
    """The nest in NumPy (float64 for sums; the kernel's float32 results compared
    within a tolerance)."""
    t1, t2, t3 = trips
    acc, s = np.zeros((B, B)), 0.0
    out = np.zeros((max(1, t1), B, B))
    side = np.zeros((max(1, t1 * t2), B, B))

    def update(acc, t):
        a = x[t].astype(np.float64)
        if op == DOT:
            return acc + a @ w[t]
        if op == SUM:
            return acc + a.sum(axis=1)[:, None] + acc.max(axis=0)[None, :] * 0.25
        if op == SCAN:
            return np.cumsum(a + acc * 0.5, axis=0)
        return acc * 0.5 + a.T

    def step(acc, t):
        nonlocal s
        acc = update(acc, t)
        if scalar:
            s = s * 0.5 + acc.max()
            if s > 1.0:
                s = s + acc.min() * 0.25
            acc = acc - s * 0.125
        return acc

    for i in range(t1):
        if reset:
            acc = np.zeros((B, B))
        if depth == 1:
            acc = step(acc, i)
        else:
            for j in range(t2):
                if depth == 2:
                    acc = step(acc, i * t2 + j)
                else:
                    for k in range(t3):
                        acc = step(acc, (i * t2 + j) * t3 + k)
                if store_inside:
                    side[i * t2 + j] = acc
        if reset:
            out[i] = acc
    if not reset:
        out[0] = acc
    s += sum(x[i].astype(np.float64).sum() for i in range(t1))
    return out, side, np.array([s if scalar else 0.0])


def _inputs(trips, seed):
    rng = np.random.default_rng(seed)
    t1, t2, t3 = trips
    x = rng.standard_normal((max(1, t1 * t2 * t3), B, B)).astype(np.float32)
    return x, rng.standard_normal(x.shape).astype(np.float32)


def _launch(x, w, depth, op, reset, store_inside, scalar, trips, **options):
    """The nest's outputs (as uint32 bits: out, side, the scalar) and its report."""
    t1, t2, t3 = trips
    out = np.zeros((max(1, t1), B, B), np.float32)
    side = np.zeros((max(1, t1 * t2), B, B), np.float32)
    carried = np.zeros(1, np.float32)
    nest_kernel[(1,)](x, w, out, side, carried, t1, t2, t3, DEPTH=depth, OP=op, RESET=reset,
                      STORE_INSIDE=store_inside, SCALAR=scalar, B=B, **options)
    return (out, side, carried), edsl.backend.last_report()


def _same_bits(got, want, what: str) -> None:
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32), err_msg=what)


def _run_nest(depth, op, reset, store_inside, scalar, trips, seed):
    x, w = _inputs(trips, seed)
    results = []
    for t, loops in TASKLETS:
        got, report = _launch(x, w, depth, op, reset, store_inside, scalar, trips, num_tasklets=t,
                              tasklet_loops=loops)
        assert report.tasklets_used == t
        results.append(got)
    for (t, _), got in zip(TASKLETS[1:], results[1:]):
        _same_bits(got, results[0], f"{t} tasklets against 1")
    reference = _reference(x, w.astype(np.float64), trips, depth, op, reset, store_inside, scalar)
    for got, want in zip(results[0], reference):
        # (float32 rounding over the nest's steps is relative to its largest
        # values: a scan's sums of ~140, less a carried scalar, leave ~1.66
        # off by 1.5e-3 (seed 4821))
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=max(1e-3, 1e-4 * scale))


@settings(max_examples=20, deadline=None)
@given(depth=st.integers(1, 3), op=st.sampled_from([DOT, SUM, SCAN, ELEMENTWISE]),
       store_inside=st.booleans(), scalar=st.booleans(),
       trips=st.tuples(st.sampled_from([0, 1, 2, 3, 3]), st.integers(1, 3), st.integers(1, 2)),
       seed=st.integers(0, 2**16))
def test_loop_nests_give_the_same_bits_for_any_tasklet_count(depth, op, store_inside, scalar, trips, seed):
    for reset in (False, True):
        _run_nest(depth, op, reset, store_inside, scalar, trips, seed)


@settings(max_examples=6, deadline=None)
@given(depth=st.integers(1, 3), op=st.sampled_from([DOT, SUM, SCAN, ELEMENTWISE]),
       store_inside=st.booleans(), scalar=st.booleans(),
       trips=st.tuples(st.sampled_from([1, 2, 3]), st.integers(1, 2), st.integers(1, 2)),
       share=st.floats(0.4, 0.9), seed=st.integers(0, 2**16))
def test_loop_nests_over_wram_give_the_bits_of_the_nests_in_wram(depth, op, store_inside, scalar, trips,
                                                                  share, seed):
    """The nests with a WRAM budget of `share` of what they need: tiles kept in
    MRAM (carried ones updated in place through their windows, `tl.dot` by
    panels), the same bits as in WRAM, for 1, 3 and 16 tasklets (one tasklet's
    budget may leave 16 tasklets' windows no room: a clear error then)."""
    x, w = _inputs(trips, seed)
    for reset in (False, True):
        for t in (1, 3, 16):
            args = (x, w, depth, op, reset, store_inside, scalar, trips)
            want, report = _launch(*args, num_tasklets=t, wram_bytes=1 << 20)
            budget = int(report.wram_bytes * share)
            try:
                got, report = _launch(*args, num_tasklets=t, wram_bytes=budget)
            except WramFull:
                assert t > 1, "one tasklet's nest does not fit with its tiles in MRAM"
                continue
            assert report.spilled_tiles and report.wram_bytes <= budget
            _same_bits(got, want, f"{t} tasklets, {budget} bytes of WRAM, against all in WRAM")


def test_a_dot_k_loop_nested_in_a_loop():
    """for r: acc = zeros; for k: acc += dot(a, b); store: the barrier at the end of
    the K loop's body was missing when the loop was nested (wrong rows from the
    second outer trip on, with 2 tasklets or more)."""
    _run_nest(2, DOT, True, False, False, (3, 4, 1), seed=0)
