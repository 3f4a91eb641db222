"""The time estimate of raw DPU functions in UPMEM C: their LLVM IR counted
as the LLVM dialect is (edsl.lowering.counting_llvm_ir), the model's own code
left out, and what C functions execute, alone and called from kernels,
against what they must execute."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from mlir import ir

import edsl
from edsl.backend import last_report
from edsl.dpu import timing
from edsl.lowering import to_llvm_ir
from edsl.lowering.counting import run_counting
from edsl.lowering.counting_llvm_ir import count_llvm_ir

from test_timing_counting import LOOP


from test_c_calls import axpy_kernel, count_kernel  # noqa: E402
from test_c_functions import c_function, copy_chunks_edsl  # noqa: E402

# Float compares, selects, intrinsics, a division by a constant and a 32-bit
# multiply of values, as the lowering prints them.
MIXED = """
module {
  llvm.func @g(%p: !llvm.ptr, %a: i32, %b: i32, %x: f32, %y: f64) -> i32 {
    %c3 = llvm.mlir.constant(3 : i32) : i32
    %lt = llvm.fcmp "olt" %x, %x : f32
    %d = llvm.fcmp "ogt" %y, %y : f64
    %m = llvm.intr.smax(%a, %b) : (i32, i32) -> i32
    %f = llvm.intr.fmuladd(%x, %x, %x) : (f32, f32, f32) -> f32
    %q = llvm.sdiv %m, %c3 : i32
    %r = llvm.mul %a, %b : i32
    %s = llvm.select %lt, %q, %r : i1, i32
    %e = llvm.intr.exp(%x) : (f32) -> f32
    %h = llvm.fdiv %e, %f : f32
    llvm.store %h, %p : f32, !llvm.ptr
    llvm.cond_br %d, ^bb1, ^bb2
  ^bb1:
    llvm.return %s : i32
  ^bb2:
    llvm.return %a : i32
  }
}
"""


@pytest.mark.parametrize("mlir", [LOOP, MIXED], ids=["loop", "mixed"])
def test_llvm_ir_text_counts_as_its_llvm_dialect(mlir):
    """The module translated to LLVM IR (as LLVM prints it) and counted as text
    gives each block the classes the dialect's counting gives it."""
    text = to_llvm_ir(ir.Module.parse(mlir, ir.Context()))
    counted, per_block = count_llvm_ir(text, 0)
    table = run_counting(ir.Module.parse(mlir, ir.Context()))
    assert len(per_block) == table.counters
    for k, tally in enumerate(per_block):
        assert tally == {c: v[k] for c, v in table.ops.items() if v[k]}, k
    assert "@edsl_dpu_counters()" in counted


def test_counted_ir_numbers_counters_from_first_and_keeps_the_multiply_steps_last():
    text = to_llvm_ir(ir.Module.parse(MIXED, ir.Context()))
    counted, per_block = count_llvm_ir(text, 40)
    assert per_block[-1] == {"mul32_step": 1} and len(per_block) == 4
    assert "i64 40\n" in counted and "i64 43\n" in counted and "i64 44\n" not in counted
    assert "call i32 @llvm.ctlz.i32(" in counted


MUL_ALL = """
#include <defs.h>
void mul_all(unsigned *out, const unsigned *a, const unsigned *b, int n) {
    for (int i = me(); i < n; i += NR_TASKLETS)
        out[i] = a[i] * b[i];
}
"""
mul_all = c_function("", "mul_all", MUL_ALL)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 200), tasklets=st.sampled_from([1, 3, 16]), bits=st.integers(1, 32),
       seed=st.integers(0, 2 ** 32 - 1))
def test_a_c_loop_executes_its_loads_stores_and_multiply_steps(n, tasklets, bits, seed):
    """Each element: two loads, a store, a 32-bit multiply and the steps of
    `__mulsi3` (the bit length of the smaller operand); the results are those
    of the run without counting."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2 ** bits, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    out, plain = np.zeros(n, np.uint32), np.zeros(n, np.uint32)
    ops = mul_all.run(out, a, b, n, tasklets=tasklets, timing=True).timing.executed_ops
    mul_all.run(plain, a, b, n, tasklets=tasklets)
    np.testing.assert_array_equal(out, a * b)
    np.testing.assert_array_equal(out, plain)
    smaller = np.minimum(a, b).astype(np.int64) | 1
    steps = int(np.sum(np.floor(np.log2(smaller)).astype(np.int64) + 1))
    assert (ops["load"], ops["store"], ops["mul32"], ops["mul32_step"]) == (2 * n, n, n, steps)


def test_the_models_own_code_is_not_counted():
    """A barrier is one synchronization a tasklet; the model's check after it
    (did another tasklet fail?) is no DPU work."""
    wait = c_function("", "wait", "#include <barrier.h>\nBARRIER_INIT(b, NR_TASKLETS);\n"
                                  "void wait(void) { barrier_wait(&b); }\n")
    for tasklets in (1, 5):
        assert wait.run(tasklets=tasklets, timing=True).timing.executed_ops == {"sync": tasklets}


HANDSHAKES_AND_SOME = """
#include <barrier.h>
#include <defs.h>
#include <handshake.h>
BARRIER_INIT(two, 2);
void chain(unsigned int *out) {
    if (me() > 0)
        handshake_wait_for(me() - 1);
    out[me()] = me();
    if (me() < NR_TASKLETS - 1)
        handshake_notify();
    if (me() < 2)
        barrier_wait(&two);
}
"""


@pytest.mark.parametrize("tasklets", [2, 5, 16])
def test_a_handshake_or_a_barrier_of_some_tasklets_is_one_synchronization_not_the_models_code(tasklets):
    """Each wait, notify and wait at a barrier of two tasklets counts as one
    synchronization (as the SDK stand-ins' calls do in a counting build);
    none of the model's code for them is counted (its own loads, stores and
    calls: all stores are the function's `out[me()]`)."""
    out = np.zeros(16, np.uint32)
    ops = c_function("", "chain", HANDSHAKES_AND_SOME).run(out, tasklets=tasklets, timing=True).timing.executed_ops
    assert ops["sync"] == 2 * (tasklets - 1) + 2
    assert ops["store"] == tasklets and "call" not in ops
    np.testing.assert_array_equal(out[:tasklets], np.arange(tasklets))


@pytest.mark.parametrize("tasklets", [1, 16])
def test_a_copy_in_c_takes_the_dma_time_of_the_same_copy_in_the_edsl(tasklets):
    """Same transfers, same DMA cycles; the C loop issues no more than the EDSL's."""
    src = np.arange(4096, dtype=np.int64)
    dst, again = np.zeros_like(src), np.zeros_like(src)
    c = c_function("copy_chunks.c", "copy_chunks").run(dst, src, src.nbytes, 256, 0, tasklets=tasklets,
                                                      timing=True).timing
    e = copy_chunks_edsl.run(again.view(np.int8), src.view(np.int8), src.nbytes, 256, 0, tasklets=tasklets,
                             timing=True).timing
    np.testing.assert_array_equal(dst, src)
    assert c.executed_ops["dma"] == e.executed_ops["dma"] == 2 * src.nbytes // 256
    assert c.dma_cycles == e.dma_cycles
    assert c.issue_cycles <= e.issue_cycles


def test_timing_and_the_race_check_are_not_combined():
    with pytest.raises(edsl.ArgumentError, match="race_check and timing cannot be combined"):
        mul_all.run(np.zeros(4, np.uint32), np.zeros(4, np.uint32), np.zeros(4, np.uint32), 4, tasklets=2,
                    timing=True, race_check=True)
    with pytest.raises(edsl.ArgumentError, match="timing must be True or False"):
        mul_all.run(np.zeros(4, np.uint32), np.zeros(4, np.uint32), np.zeros(4, np.uint32), 4, timing=1)


MUTEX_LOOP = """
#include <defs.h>
#include <mutex.h>
MUTEX_INIT(m);
unsigned int hist[8];
void add_under_mutex(unsigned int *out, unsigned int n, unsigned int odd) {
    unsigned int sum = 0;
    for (unsigned int i = 0; i < n; i++) {
        mutex_lock(m);
        if (i & odd)                 /* (a section of three blocks) */
            hist[i & 7] += 1;
        else
            hist[0] += 2;
        mutex_unlock(m);
        sum += i * 3;                /* (not held) */
    }
    out[me()] = sum;
}
"""
add_under_mutex = c_function("", "add_under_mutex", MUTEX_LOOP)


@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 60), odd=st.integers(0, 3), tasklets=st.sampled_from([1, 2, 16]))
def test_what_a_tasklet_issues_holding_a_mutex_is_issued_one_tasklet_at_a_time(n, odd, tasklets):
    """A lock is one acquire and an unlock one release (SDK mutex.h), the
    model's code of either not counted; the section between them, over its
    blocks, counts as held; held slots are issued one tasklet at a time,
    each at most every 11 cycles: 16 tasklets take 11 cycles a held slot of
    each, one tasklet no more than its own chain."""
    out = np.zeros(16, np.uint32)
    estimate = add_under_mutex.run(out, n, odd, tasklets=tasklets, timing=True).timing
    ops = estimate.executed_ops
    sections = n * tasklets
    assert ops["held:mutex_lock"] == ops["held:mutex_unlock"] == ops["held:store"] == sections
    assert "mutex_lock" not in ops and "mutex_unlock" not in ops
    assert ops["store"] == tasklets                       # (out[me()], after the loop)
    held = sum(timing.slots_of(c) * k for c, k in ops.items() if c.startswith("held:"))
    total = sum(timing.slots_of(c) * k for c, k in ops.items())
    assert held > 4 * sections and total > held
    if tasklets == 16:
        assert estimate.dpu_cycles_max == estimate.issue_cycles == timing.REVOLVER * held
    if tasklets == 1:
        assert estimate.dpu_cycles_max == timing.REVOLVER * total
    np.testing.assert_array_equal(out[:tasklets], 3 * (n * (n - 1) // 2))


LOCKED_LOOP = """
#include <defs.h>
#include <mutex.h>
MUTEX_INIT(m);
unsigned int hist[8];
void locked_loop(unsigned int *out, unsigned int n) {
    mutex_lock(m);
    for (unsigned int i = 0; i < n; i++)
        hist[i & 7] += 1;
    mutex_unlock(m);
    out[me()] = n;
}
"""


def test_a_loop_between_a_lock_and_its_unlock_is_held_on_every_trip():
    """Held on every path: the loop's blocks, entered holding the mutex and
    looping back holding it; the store after the unlock is not."""
    out = np.zeros(4, np.uint32)
    ops = c_function("", "locked_loop", LOCKED_LOOP).run(out, 30, tasklets=4, timing=True).timing.executed_ops
    assert ops["held:store"] == 30 * 4 and ops["store"] == 4
    assert ops["held:mutex_lock"] == ops["held:mutex_unlock"] == 4
    np.testing.assert_array_equal(out, 30)


@pytest.mark.parametrize("tasklets,dpus", [(1, 1), (4, 2)])
def test_a_kernel_calling_c_counts_the_c_functions_work(tasklets, dpus):
    """The kernel's float work is the C function's: a multiply and an add an element."""
    n, block = 64, 8
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, np.float32)
    axpy_kernel[(n // block,)](x, y, 2.0, n, BLOCK=block, num_tasklets=tasklets, num_dpus=dpus, dpu_timing=True)
    np.testing.assert_array_equal(y, 1 + 2 * np.arange(n, dtype=np.float32))
    ops = last_report().timing.executed_ops
    assert ops["fmul32"] == n and ops["fadd32"] == n


def test_a_kernel_calling_c_with_variables_is_counted_without_the_models_resets():
    """The function giving the C file's variables their first values runs on the host between DPUs, outside
    any tasklet (counted, it would add to no tasklet's counters): not counted; the results those of the
    run without counting, and an estimate made."""
    out, plain = np.zeros(6, np.int32), np.zeros(6, np.int32)
    count_kernel[(6,)](out, num_dpus=2, dpu_timing=True)
    timing = last_report().timing
    count_kernel[(6,)](plain, num_dpus=2)
    np.testing.assert_array_equal(out, plain)
    np.testing.assert_array_equal(out, [1, 2, 3, 1, 2, 3])
    assert timing.dpu_cycles_max > 0
