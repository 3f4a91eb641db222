"""Scalars shared among tasklets: a program's scalar loads, atomics and
stores of a few counters, in any order, with tile code after them and in
branches on what was read, give the same bits for 1, 2, 3 and 16 tasklets
and what programs run one after another give (NumPy).

A scalar is the program's one value: every tasklet must read it before
any tasklet's store or atomic changes it, or tasklets that read it later
store another value, or take another branch and leave a barrier
unreached. Every 1-tasklet test passes such a kernel."""
import numpy as np
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st

import edsl.backend

TASKLETS = [1, 2, 3, 16]
B = 64
LOAD, ADD, ADD_USED, STORE, TILE_STORE, BRANCH = range(6)
SLOTS = 4


@triton.jit
def _slot(acc, c_ptr, out_ptr, x_ptr, i, step, OP: tl.constexpr, B: tl.constexpr):
    """One scalar step of a program on counter `i`: `acc` after it."""
    offs = tl.program_id(0) * B + tl.arange(0, B)
    if OP == 0:
        acc += tl.load(c_ptr + i)
    elif OP == 1:
        tl.atomic_add(c_ptr + i, step)
    elif OP == 2:
        acc += tl.atomic_add(c_ptr + i, step)
    elif OP == 3:
        tl.store(c_ptr + i, acc)
    elif OP == 4:
        tl.store(out_ptr + offs, tl.load(out_ptr + offs) + acc)
    else:
        if tl.load(c_ptr + i) % 2 == 0:
            tl.store(out_ptr + offs, tl.load(out_ptr + offs) + tl.load(x_ptr + offs))
        else:
            tl.store(out_ptr + offs, tl.load(out_ptr + offs) - tl.sum(tl.load(x_ptr + offs), axis=0))
    return acc


@triton.jit
def scalars_kernel(c_ptr, out_ptr, x_ptr, acc_ptr, i0, i1, i2, i3, OP0: tl.constexpr, OP1: tl.constexpr,
                   OP2: tl.constexpr, OP3: tl.constexpr, B: tl.constexpr):
    acc = tl.program_id(0) * 0
    acc = _slot(acc, c_ptr, out_ptr, x_ptr, i0, 1, OP0, B)
    acc = _slot(acc, c_ptr, out_ptr, x_ptr, i1, 2, OP1, B)
    acc = _slot(acc, c_ptr, out_ptr, x_ptr, i2, 3, OP2, B)
    acc = _slot(acc, c_ptr, out_ptr, x_ptr, i3, 4, OP3, B)
    tl.store(acc_ptr + tl.program_id(0), acc)


def _reference(ops, idx, programs, c, x):
    """Programs one after another, as on one DPU."""
    c, out, accs = c.copy(), np.zeros((programs, B), np.int32), np.zeros(programs, np.int32)
    for p in range(programs):
        acc = 0
        for k, (op, i) in enumerate(zip(ops, idx)):
            if op == LOAD:
                acc += c[i]
            elif op == ADD:
                c[i] += k + 1
            elif op == ADD_USED:
                acc += c[i]
                c[i] += k + 1
            elif op == STORE:
                c[i] = acc
            elif op == TILE_STORE:
                out[p] += acc
            elif c[i] % 2 == 0:
                out[p] += x[p]
            else:
                out[p] -= x[p].sum()
        accs[p] = acc
    return c, out, accs


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(st.sampled_from([LOAD, ADD, ADD_USED, STORE, TILE_STORE, BRANCH]), min_size=SLOTS,
                    max_size=SLOTS),
       idx=st.lists(st.integers(0, 2), min_size=SLOTS, max_size=SLOTS), programs=st.integers(1, 4),
       seed=st.integers(0, 2**16))
def test_scalar_steps_give_the_same_bits_for_any_tasklet_count(ops, idx, programs, seed):
    rng = np.random.default_rng(seed)
    c0 = rng.integers(-3, 4, 3).astype(np.int32)
    x = rng.integers(-9, 10, (programs, B)).astype(np.int32)
    want = _reference(ops, idx, programs, c0, x)
    for t in TASKLETS:
        c, out, accs = c0.copy(), np.zeros((programs, B), np.int32), np.zeros(programs, np.int32)
        scalars_kernel[(programs,)](c, out, x, accs, *idx, *[op for op in ops], B=B, num_tasklets=t)
        assert edsl.backend.last_report().tasklets_used == t
        for got, ref, name in zip((c, out, accs), want, ("counters", "out", "acc")):
            np.testing.assert_array_equal(got, ref, err_msg=f"{name}, {t} tasklets, ops {ops} on {idx}")
