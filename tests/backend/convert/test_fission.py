"""Barrier fission (convert.fission): the model runs a DPU's tasklets as loops
between the kernel's barriers. Everything a launch gives (outputs, DMA counts
per tasklet, errors) is what tasklets switched at the barriers give
(`tasklet_loops=False`, as exported programs run); kernels the pass cannot
split keep their switched tasklets; the exporter's kernel is never split."""
import re

import numpy as np
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st
from mlir import ir

import edsl.backend
import triton_matmul
import triton_softmax
from edsl.backend.convert import new_context
from edsl.backend.convert.fission import split_tasklets
from edsl.export.arguments import ExportSpec, Param
from edsl.export.build import compile_for_export
from edsl.target.dpu import BARRIER, FAIL
from sharing_kernels import group_sums, read_then_count
from test_control import loop_kernel
from test_reduce import scan_kernel


@triton.jit
def running_max(x_ptr, out_ptr, rows, BLOCK: tl.constexpr):
    """A scalar carried through a loop that meets at a barrier every trip."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    best = tl.full((), -1e30, tl.float32)
    for r in range(rows):
        row = tl.load(x_ptr + (pid * rows + r) * BLOCK + offs)
        best = tl.maximum(best, tl.max(row))
        tl.store(out_ptr + (pid * rows + r) * BLOCK + offs, row - best)


@triton.jit
def carried_through_loops(x_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr):
    """A scalar carried through two loops in turn and through a loop nest,
    each loop meeting at a barrier every trip: the second loop starts from
    the first one's result, the inner loop from the outer one's value."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    base = pid * (2 + cols) * rows * BLOCK
    s = tl.full((), 0.0, tl.float32)
    for r in range(rows):
        s += tl.sum(tl.load(x_ptr + base + r * BLOCK + offs))
    for r in range(rows):
        row = tl.load(x_ptr + base + (rows + r) * BLOCK + offs)
        s = tl.maximum(s, tl.max(row))
        tl.store(out_ptr + base + (rows + r) * BLOCK + offs, row - s)
    for r in range(rows):
        for c in range(cols):
            at = base + (2 * rows + r * cols + c) * BLOCK
            row = tl.load(x_ptr + at + offs)
            s += tl.sum(row)
            tl.store(out_ptr + at + offs, row * s)


@triton.jit
def rows_until_large(x_ptr, out_ptr, count_ptr, rows, BLOCK: tl.constexpr):
    """A while loop that meets at a barrier every trip: rows shifted by their
    running maximum, until it passes 2.5 (its condition every tasklet's)."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    r = 0
    best = tl.full((), -1e30, tl.float32)
    while (r < rows) & (best < 2.5):
        row = tl.load(x_ptr + (pid * rows + r) * BLOCK + offs)
        best = tl.maximum(best, tl.max(row))
        tl.store(out_ptr + (pid * rows + r) * BLOCK + offs, row - best)
        r += 1
    tl.store(count_ptr + pid, r)


def _launches(rng):
    """name -> (launch(tasklets, tasklet_loops), the arrays it writes)."""
    m = rng.standard_normal((6, 256)).astype(np.float32)
    sm = np.empty_like(m)
    a, b = rng.standard_normal((32, 32)).astype(np.float32), rng.standard_normal((32, 32)).astype(np.float32)
    mm = np.empty((32, 32), np.float32)
    x = rng.integers(-50, 50, (6, 100)).astype(np.float32)
    sums, locks = np.empty((3, 100), np.float32), np.empty(6, np.int32)
    counter, seen = np.empty(1, np.int32), np.empty((3, 64), np.int32)
    rows = rng.standard_normal((3 * 4, 64)).astype(np.float32)
    shifted = np.empty_like(rows)
    lx = rng.standard_normal((5, 8)).astype(np.float32)
    lout, lcount = np.empty(8, np.float32), np.empty(1, np.int32)
    cx = rng.standard_normal((2, (2 + 3) * 2, 64)).astype(np.float32)
    cout = np.empty_like(cx)
    wx = rng.standard_normal((3 * 6, 64)).astype(np.float32)
    wout, wcount = np.empty_like(wx), np.empty(3, np.int32)
    sx = rng.standard_normal(64).astype(np.float32)
    scans = [np.empty(64, np.float32) for _ in range(3)]
    return {
        "softmax": (lambda t, f: triton_softmax.softmax_kernel[(6,)](
            sm, m, 256, 256, BLOCK=256, num_tasklets=t, tasklet_loops=f), [sm]),
        "matmul": (lambda t, f: triton_matmul.matmul_kernel[(2, 2)](
            a, b, mm, 32, 32, 32, BM=16, BN=16, BK=8, num_dpus=2, num_tasklets=t, tasklet_loops=f), [mm]),
        "group sums": (lambda t, f: group_sums[(6,)](
            x, sums, locks, 100, GROUPS=3, BLOCK=128, num_tasklets=t, tasklet_loops=f), [sums, locks]),
        "read then count": (lambda t, f: read_then_count[(3,)](
            counter, seen, BLOCK=64, num_tasklets=t, tasklet_loops=f), [seen, counter]),
        "running max": (lambda t, f: running_max[(3,)](
            rows, shifted, 4, BLOCK=64, num_tasklets=t, tasklet_loops=f), [shifted]),
        "carried tiles": (lambda t, f: loop_kernel[(1,)](
            lx, lout, lcount, 5, C=8, num_tasklets=t, tasklet_loops=f), [lout, lcount]),
        "carried through loops": (lambda t, f: carried_through_loops[(2,)](
            cx, cout, 2, 3, BLOCK=64, num_tasklets=t, tasklet_loops=f), [cout]),
        "while": (lambda t, f: rows_until_large[(3,)](
            wx, wout, wcount, 6, BLOCK=64, num_tasklets=t, tasklet_loops=f), [wout, wcount]),
        "scans": (lambda t, f: scan_kernel[(1,)](
            sx, *scans, 64, BLOCK=64, num_tasklets=t, tasklet_loops=f), scans),
    }


def _run(launch, outs, tasklets, loops):
    for o in outs:
        o.fill(0)
    launch(tasklets, loops)
    r = edsl.backend.last_report()
    return [o.copy() for o in outs], (r.dma_reads, r.dma_read_bytes, r.dma_writes, r.dma_write_bytes,
                                      r.per_tasklet_dma, r.tasklets_used)


@settings(max_examples=14, deadline=None)
@given(name=st.sampled_from(sorted(_launches(np.random.default_rng(0)))), tasklets=st.integers(2, 16),
       seed=st.integers(0, 2**16))
def test_tasklets_as_loops_give_what_switched_tasklets_give(name, tasklets, seed):
    launch, outs = _launches(np.random.default_rng(seed))[name]
    with edsl.backend.activated():
        looped, looped_counts = _run(launch, outs, tasklets, True)
        switched, switched_counts = _run(launch, outs, tasklets, False)
        one, _ = _run(launch, outs, 1, True)
    assert looped_counts == switched_counts
    for a, b, c in zip(looped, switched, one):
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
        np.testing.assert_array_equal(a.view(np.uint8), c.view(np.uint8))


def test_the_model_splits_a_kernel_at_its_barriers_and_the_exporter_does_not():
    m = np.ones((4, 256), np.float32)

    def mlir(**options):
        with edsl.backend.activated():
            return triton_softmax.softmax_kernel.warmup(m, m, 256, 256, BLOCK=256, num_tasklets=16, grid=(4,),
                                                        **options).asm["mlir"]
    assert f"llvm.call @{BARRIER}(" not in mlir()
    switched = mlir(tasklet_loops=False)
    assert switched.count(f"llvm.call @{BARRIER}(") >= 2
    # (each names the line of the op it goes before, for a deadlock there)
    assert all(site != "0" for site in re.findall(rf"llvm.call @{BARRIER}\(%c(-?\d+)_i64", switched))
    assert mlir(dpu_timing=True).count(f"llvm.call @{BARRIER}(") >= 2     # (counts are each tasklet's)
    params = [Param(n, n, t) for n, t in [("out_ptr", "*fp32"), ("in_ptr", "*fp32"), ("n_cols", "i32"),
                                          ("row_stride", "i32")]]
    spec = ExportSpec(fn=triton_softmax.softmax_kernel, params=params, constexprs={"BLOCK": 256}, values={},
                      grid=None, num_dpus=1, num_tasklets=16, outputs=[], debug=False, sampled=False)
    _, text = compile_for_export(spec)
    assert f"@{BARRIER}(" in text


def _kernel(body: str) -> str:
    """A converted kernel's shape: its last argument the launch context."""
    return f"""
llvm.func @{BARRIER}(i64)
llvm.func @{FAIL}(!llvm.ptr, i64, i64, i64, i64, i64, i64)
func.func @k(%n: index, %ctx: !llvm.ptr) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = arith.constant 7 : i64
  %tp = llvm.getelementptr %ctx[14] : (!llvm.ptr) -> !llvm.ptr, i64
  %tid = llvm.load %tp : !llvm.ptr -> i64
  %me = arith.index_cast %tid : i64 to index
{body}
  return
}}"""


def _split(text: str, tasklets: int = 4):
    ctx = new_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(text)
        fn = [op for op in module.body.operations if op.operation.name == "func.func"][0]
        new = split_tasklets(fn, 1, tasklets)
        if new is not None:
            assert module.operation.verify()
        return new is not None, str(module)


def test_a_loop_whose_bounds_a_tasklet_computes_is_checked_to_be_the_same_on_all():
    """The bound is each tasklet's own value: tasklet 0's bounds the loop,
    and a tasklet whose value differs stops the DPU (as a deadlock)."""
    split, text = _split(_kernel(f"""
  %m = arith.addi %n, %me : index
  scf.for %i = %c0 to %m step %c1 {{
    llvm.call @{BARRIER}(%s) : (i64) -> ()
  }}"""))
    assert split
    assert f"llvm.call @{BARRIER}" not in text
    fail = [line for line in text.splitlines() if f"llvm.call @{FAIL}" in line]
    assert len(fail) == 1 and "%c7_i64" in fail[0]      # (the barrier's site)
    assert "memref.alloca() : memref<4xindex>" in text


def test_a_loop_of_uniform_bounds_needs_no_check_and_its_carried_values_go_through_slots():
    split, text = _split(_kernel(f"""
  %z = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f32) {{
    %f = arith.index_cast %me : index to i64
    %g = arith.sitofp %f : i64 to f32
    %a = arith.addf %acc, %g : f32
    llvm.call @{BARRIER}(%s) : (i64) -> ()
    scf.yield %a : f32
  }}
  %q = arith.addf %r, %r : f32"""))
    assert split
    assert f"llvm.call @{FAIL}" not in text
    assert "memref.alloca() : memref<4xf32>" in text
    assert "iter_args" not in text


def test_a_while_loop_whose_condition_a_tasklet_computes_is_checked_to_be_the_same_on_all():
    split, text = _split(_kernel(f"""
  scf.while : () -> () {{
    llvm.call @{BARRIER}(%s) : (i64) -> ()
    %go = arith.cmpi slt, %me, %n : index
    scf.condition(%go)
  }} do {{
    scf.yield
  }}"""))
    assert split
    assert f"llvm.call @{BARRIER}" not in text
    fail = [line for line in text.splitlines() if f"llvm.call @{FAIL}" in line]
    assert len(fail) == 1 and "%c7_i64" in fail[0]      # (the barrier's site)


def test_the_values_a_while_loop_carries_and_forwards_go_through_slots():
    split, text = _split(_kernel(f"""
  %z = arith.constant 0.0 : f32
  %r = scf.while (%acc = %z) : (f32) -> f32 {{
    %f = arith.index_cast %me : index to i64
    %g = arith.sitofp %f : i64 to f32
    %a = arith.addf %acc, %g : f32
    llvm.call @{BARRIER}(%s) : (i64) -> ()
    %lim = arith.constant 100.0 : f32
    %go = arith.cmpf olt, %acc, %lim : f32
    scf.condition(%go) %a : f32
  }} do {{
  ^bb0(%b: f32):
    %h = arith.mulf %b, %b : f32
    llvm.call @{BARRIER}(%s) : (i64) -> ()
    scf.yield %h : f32
  }}
  %q = arith.addf %r, %r : f32"""))
    assert split
    assert f"llvm.call @{BARRIER}" not in text
    assert "scf.while : () -> ()" in text
    assert text.count("memref.alloca() : memref<4xf32>") >= 2    # (carried, forwarded, ...)
    assert f"llvm.call @{FAIL}" in text        # (%acc is each tasklet's: its condition checked)


def test_an_index_switch_that_holds_a_barrier_is_checked_and_its_results_go_through_slots():
    """As structuring a kernel's early returns makes (`lift-cf-to-scf`)."""
    split, text = _split(_kernel(f"""
  %r = scf.index_switch %me -> index
  case 0 {{
    llvm.call @{BARRIER}(%s) : (i64) -> ()
    scf.yield %me : index
  }}
  default {{
    llvm.call @{BARRIER}(%s) : (i64) -> ()
    scf.yield %c1 : index
  }}
  %q = arith.addi %r, %r : index"""))
    assert split
    assert f"llvm.call @{BARRIER}" not in text
    assert "scf.index_switch" in text and "-> index" not in text
    assert "memref.alloca() : memref<4xindex>" in text
    fail = [line for line in text.splitlines() if f"llvm.call @{FAIL}" in line]
    assert len(fail) == 1 and "%c7_i64" in fail[0]      # (%me is each tasklet's)


def test_the_results_of_an_if_that_holds_a_barrier_go_through_slots():
    split, text = _split(_kernel(f"""
  %go = arith.cmpi slt, %c0, %n : index
  %r = scf.if %go -> (index) {{
    llvm.call @{BARRIER}(%s) : (i64) -> ()
    scf.yield %me : index
  }} else {{
    scf.yield %c1 : index
  }}
  %q = arith.addi %r, %r : index"""))
    assert split
    assert f"llvm.call @{FAIL}" not in text          # (its condition is every tasklet's)
    assert "memref.alloca() : memref<4xindex>" in text
    assert "-> (index)" not in text


def test_a_value_no_slot_holds_and_no_op_recomputes_keeps_the_tasklets_switched():
    """A pointer loaded before a barrier and used after it: loading it again
    after the barrier could read what changed, and no slot holds a pointer."""
    split, text = _split(_kernel(f"""
  %pp = llvm.getelementptr %ctx[12] : (!llvm.ptr) -> !llvm.ptr, i64
  %p = llvm.load %pp : !llvm.ptr -> !llvm.ptr
  llvm.call @{BARRIER}(%s) : (i64) -> ()
  %v = llvm.load %p : !llvm.ptr -> i64"""))
    assert not split
    assert f"llvm.call @{BARRIER}" in text


def test_loops_that_hold_barriers_may_carry_values_from_one_to_the_next():
    """Rebuilding a loop without results changes the operands of the loop
    that starts from its result, or of the inner loop that starts from the
    outer one's value: both are still split."""
    def loop(iv, init, inner=""):
        return f"""
  %{iv}r = scf.for %{iv} = %c0 to %n step %c1 iter_args(%{iv}acc = {init}) -> (f32) {{
    {inner}%{iv}a = arith.addf %{iv}acc, %{iv}acc : f32
    llvm.call @{BARRIER}(%s) : (i64) -> ()
    scf.yield %{iv}a : f32
  }}"""
    in_turn = "  %z = arith.constant 0.0 : f32" + loop("i", "%z") + loop("j", "%ir")
    nested = "  %z = arith.constant 0.0 : f32" + loop("i", "%z", loop("j", "%iacc").replace("\n", "\n  ") + "\n    ")
    for body in (in_turn, nested):
        split, text = _split(_kernel(body + "\n  %q = arith.addf %z, %z : f32"))
        assert split
        assert f"llvm.call @{BARRIER}" not in text and "iter_args" not in text


def test_a_bound_computed_through_a_deep_chain_of_shared_values_splits_at_once():
    """Each op of the bound's chain uses the one before twice: the chain is
    walked once, not once per path through it (2^40 paths)."""
    chain = ["  %v0 = arith.constant 1 : index"]
    chain += [f"  %v{i} = arith.muli %v{i - 1}, %v{i - 1} : index" for i in range(1, 41)]
    split, text = _split(_kernel("\n".join(chain) + f"""
  scf.for %i = %c0 to %v40 step %c1 {{
    llvm.call @{BARRIER}(%s) : (i64) -> ()
  }}"""))
    assert split
    assert f"llvm.call @{FAIL}" not in text          # (every tasklet has the bound)
