"""The raw MLIR-builder style of TLE-Raw kernels, run on the DPU model.

These bodies are written the way TLE-Raw users write them: MLIR builder calls
(`arith`, `memref`, `scf`, insertion points) instead of Python operators and
loops. The thread index of a TLE-Raw kernel becomes `edsl.tasklet_id()`, the
block size `edsl.num_tasklets()`, shared memory a `edsl.wram_alloc` buffer and
`__syncthreads` `edsl.barrier()`.
"""
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from mlir import ir
from mlir.dialects import arith, memref, scf
from mlir.dialects import math as mmath

import edsl
from edsl import InOut, Input

TASKLETS = [1, 4, 16]
MAX_TASKLETS = 24  # one WRAM slot per possible tasklet


# --- vector copy ------------------------------------------------------------------------

@edsl.dialect
def vector_copy(y: InOut["memref<?xf32>"], owner: InOut["memref<?xi32>"], x: Input["memref<?xf32>"]):
    index = ir.IndexType.get()
    me = edsl.tasklet_id()
    tid = arith.index_cast(index, me)
    ntasklets = arith.index_cast(index, edsl.num_tasklets())
    n = memref.dim(x, arith.constant(index, 0))
    for i in scf.for_(tid, n, ntasklets):
        v = memref.load(x, [i])
        memref.store(v, y, [i])
        memref.store(me, owner, [i])   # which tasklet copied element i
        scf.yield_([])


@pytest.mark.parametrize("tasklets", TASKLETS)
@given(x=hnp.arrays(np.float32, st.integers(0, 100),
                    elements=st.floats(width=32, allow_nan=False)))
@example(x=np.arange(3, dtype=np.float32))  # fewer elements than tasklets
def test_vector_copy(tasklets, x):
    y = np.full_like(x, np.nan)
    owner = np.full(x.shape, -1, np.int32)
    stats = vector_copy.run(y, owner, x, tasklets=tasklets)
    np.testing.assert_array_equal(y, x)
    # Tasklet t handles the elements t, t + T, t + 2T, ...
    np.testing.assert_array_equal(owner, np.arange(x.size) % tasklets)
    assert stats.tasklets == tasklets
    assert vector_copy.last_stats is stats


def test_vector_copy_ir_is_the_builder_ir():
    text = vector_copy.mlir
    assert "scf.for" in text
    assert "arith.index_cast" in text
    assert "memref.load" in text and "memref.store" in text


# --- softmax ------------------------------------------------------------------------------

@edsl.dialect
def softmax_raw(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
    f32 = ir.F32Type.get()
    index = ir.IndexType.get()
    partial = edsl.wram_alloc(MAX_TASKLETS, edsl.f32)   # shared by the tasklets
    tid = arith.index_cast(index, edsl.tasklet_id())
    ntasklets = arith.index_cast(index, edsl.num_tasklets())
    c0 = arith.constant(index, 0)
    c1 = arith.constant(index, 1)
    n = memref.dim(x, c0)
    minus_inf = arith.constant(f32, float("-inf"))
    zero = arith.constant(f32, 0.0)

    # Phase 1: each tasklet's maximum over its strided elements (scf.ForOp iter_args).
    local_max = scf.ForOp(tid, n, ntasklets, [minus_inf])
    with ir.InsertionPoint(local_max.body):
        v = memref.load(x, [local_max.induction_variable])
        scf.yield_([arith.maximumf(local_max.inner_iter_args[0], v)])
    memref.store(local_max.results[0], partial, [tid])
    edsl.barrier()

    # Every tasklet combines the partial maxima (scf.for_ with an iter_arg).
    for j, acc, row_max in scf.for_(c0, ntasklets, c1, iter_args=[minus_inf]):
        scf.yield_([arith.maximumf(acc, memref.load(partial, [j]))])
    edsl.barrier()   # all have read `partial` before it is reused

    # Phase 2: exponentials and each tasklet's partial sum.
    for i, acc, local_sum in scf.for_(tid, n, ntasklets, iter_args=[zero]):
        e = mmath.exp(arith.subf(memref.load(x, [i]), row_max))
        memref.store(e, y, [i])
        scf.yield_([arith.addf(acc, e)])
    memref.store(local_sum, partial, [tid])
    edsl.barrier()

    # The total, with scf.while: (j, s) = (0, 0); while j < T: s += partial[j]; j += 1.
    loop = scf.WhileOp([index, f32], [c0, zero])
    before = loop.before.blocks.append(index, f32)
    after = loop.after.blocks.append(index, f32)
    with ir.InsertionPoint(before):
        more = arith.cmpi(arith.CmpIPredicate.slt, before.arguments[0], ntasklets)
        scf.condition(more, list(before.arguments))
    with ir.InsertionPoint(after):
        j = after.arguments[0]
        s = arith.addf(after.arguments[1], memref.load(partial, [j]))
        scf.yield_([arith.addi(j, c1), s])
    total = loop.results[1]

    # Phase 3: normalise the tasklet's own elements.
    for i in scf.for_(tid, n, ntasklets):
        memref.store(arith.divf(memref.load(y, [i]), total), y, [i])
        scf.yield_([])


def softmax_reference(x):
    if x.size == 0:
        return x.astype(np.float64)
    z = np.exp(x.astype(np.float64) - x.max())
    return z / z.sum()


@pytest.mark.parametrize("tasklets", TASKLETS)
@settings(max_examples=15)
@given(x=hnp.arrays(np.float32, st.integers(0, 300), elements=st.floats(-30, 30, width=32)))
@example(x=np.array([1.0, 2.0, 3.0], np.float32))
@example(x=np.zeros(0, np.float32))
def test_softmax(tasklets, x):
    y = np.zeros_like(x)
    stats = softmax_raw.run(y, x, tasklets=tasklets)
    np.testing.assert_allclose(y, softmax_reference(x), rtol=3e-5, atol=1e-9)
    assert stats.tasklets == tasklets
    assert stats.dma_reads == stats.dma_writes == 0


def test_softmax_wram_and_ir():
    assert softmax_raw.wram_bytes == 4 * MAX_TASKLETS
    text = softmax_raw.mlir
    assert "scf.while" in text
    assert "iter_args" in text
    assert "math.exp" in text


def test_softmax_is_deterministic_across_runs():
    # The barriers order the phases: racing tasklets would give varying results.
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000).astype(np.float32)
    first = np.zeros_like(x)
    softmax_raw.run(first, x, tasklets=16)
    for _ in range(5):
        y = np.zeros_like(x)
        softmax_raw.run(y, x, tasklets=16)
        np.testing.assert_array_equal(y, first)
    np.testing.assert_allclose(first, softmax_reference(x), rtol=3e-5, atol=1e-9)
