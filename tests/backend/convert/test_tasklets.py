"""Tasklets: tile code shared out among a DPU's tasklets gives the same bits as one
tasklet; barriers only where data crosses tasklets; WRAM counts a staging buffer per
tasklet; the report counts what each tasklet did."""
import re

import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st

import edsl.backend
import triton_layernorm
import triton_matmul
import triton_softmax
from edsl.backend.convert import convert_ttir
from edsl.target.dpu import Ctx
from edsl.base.errors import DpuError
from test_converter import HEAD, SIG, TAIL, VECTOR
from test_memory import atomic_kernel, column_kernel, copy_kernel
from test_control import loop_kernel
from test_reduce import reduce_kernel, scan_kernel
from sharing_kernels import group_sums, read_then_count

COUNTS = [1, 5, 16]
MANY_COUNTS = [1, 2, 3, 11, 16, 24]


def _same_for_all_counts(launch, *outs, counts=COUNTS):
    """Run `launch(tasklets)` for each count in `counts`; all results bit-identical."""
    results = []
    for t in counts:
        for o in outs:
            o.fill(0)
        launch(t)
        results.append([o.copy() for o in outs])
        assert edsl.backend.last_report().tasklets_used == t
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
    return results[0]


@settings(max_examples=6, deadline=None)
@given(rows=st.integers(1, 5), cols=st.integers(1, 1000), dpus=st.sampled_from([1, 2, 3]),
       seed=st.integers(0, 2**16))
def test_softmax_and_layernorm_bits(rows, cols, dpus, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    w, b = rng.standard_normal(cols).astype(np.float32), rng.standard_normal(cols).astype(np.float32)
    out, y = np.empty_like(x), np.empty_like(x)
    block = triton.next_power_of_2(cols)

    def launch(t):
        triton_softmax.softmax_kernel[(rows,)](out, x, cols, cols, BLOCK=block, num_dpus=dpus,
                                               num_tasklets=t)
        triton_layernorm.layernorm_kernel[(rows,)](x, y, w, b, cols, 1e-5, BLOCK=block,
                                                   num_dpus=dpus, num_tasklets=t)
    sm, ln = _same_for_all_counts(launch, out, y)
    np.testing.assert_allclose(sm, triton_softmax.reference(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ln, triton_layernorm.reference(x, w, b), rtol=1e-3, atol=1e-3)


@settings(max_examples=5, deadline=None)
@given(rows=st.integers(1, 8), cols=st.integers(1, 8), axis=st.sampled_from([0, 1]),
       n=st.integers(1, 64), seed=st.integers(0, 2**16))
def test_reductions_and_scans_bits(rows, cols, axis, n, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    k = rows if axis == 1 else cols
    outs = [np.zeros(k, np.float32) for _ in range(3)] + [np.zeros(k, np.int32) for _ in range(2)] \
        + [np.zeros(k, np.float32)]
    v = rng.standard_normal(n).astype(np.float32)
    scans = [np.zeros(n, np.float32) for _ in range(3)]

    def launch(t):
        reduce_kernel[(1,)](x, *outs, rows, cols, AXIS=axis, BR=8, BC=8, num_tasklets=t)
        scan_kernel[(1,)](v, *scans, n, BLOCK=64, num_tasklets=t)
    res = _same_for_all_counts(launch, *outs, *scans)
    np.testing.assert_allclose(res[0], x.sum(axis=axis), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[6], np.cumsum(v), rtol=1e-5, atol=1e-5)


@settings(max_examples=5, deadline=None)
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(1, 40), rows=st.integers(0, 9),
       seed=st.integers(0, 2**16))
def test_matmul_and_loops_bits(m, n, k, rows, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.empty((m, n), np.float32)
    x = rng.standard_normal((rows, 8)).astype(np.float32)
    out, count = np.zeros(8, np.float32), np.zeros(1, np.int32)
    grid = (triton.cdiv(m, 16), triton.cdiv(n, 16))

    def launch(t):
        triton_matmul.matmul_kernel[grid](a, b, c, m, n, k, BM=16, BN=16, BK=16, num_dpus=2,
                                          num_tasklets=t)
        loop_kernel[(1,)](x, out, count, rows, C=8, num_tasklets=t)
    res = _same_for_all_counts(launch, c, out, count)
    np.testing.assert_allclose(res[0], a @ b, rtol=1e-4, atol=1e-4)


@settings(max_examples=5, deadline=None)
@given(n=st.integers(1, 700), start=st.integers(0, 7), dtype=st.sampled_from([np.int8, np.float16]),
       seed=st.integers(0, 2**16))
def test_memory_ops_bits(n, start, dtype, seed):
    """Unaligned views (read-modify-write of shared words), strided accesses, atomics."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 100, n + 16).astype(dtype)
    out_base = np.zeros(n + 16, dtype)
    xs = rng.integers(0, 1000, n).astype(np.int32)
    s, mx, hist = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(4, np.int32)
    cols = 1 + n % 7
    mat = np.arange(5 * cols, dtype=np.float32).reshape(5, cols)
    col_out = np.zeros((cols, 5), np.float32)

    def launch(t):
        copy_kernel[(triton.cdiv(n, 64),)](base[start:start + n], out_base[start:start + n], n,
                                           BLOCK=64, num_dpus=3, num_tasklets=t)
        atomic_kernel[(triton.cdiv(n, 32),)](xs, s, mx, hist, n, BLOCK=32, num_dpus=2,
                                             num_tasklets=t)
        column_kernel[(cols,)](mat, col_out, 5, cols, BR=8, num_tasklets=t)
    res = _same_for_all_counts(launch, out_base, s, mx, hist, col_out)
    np.testing.assert_array_equal(res[0][start:start + n], base[start:start + n])
    assert res[1][0] == xs.sum() and res[2][0] == xs.max()
    np.testing.assert_array_equal(res[4], 2 * mat.T)


def _barriers(text: str) -> int:
    return len(re.findall(r"call @edsl_dpu_barrier", text))


def test_one_tasklet_has_no_tasklet_calls():
    module, info = convert_ttir(HEAD + SIG + VECTOR + TAIL)
    text = str(module)
    assert "edsl_dpu_me" not in text and _barriers(text) == 0 and info.tasklets == 1


def test_tasklets_ask_me_once_and_skip_barriers_when_nothing_crosses():
    module, info = convert_ttir(HEAD + SIG + VECTOR + TAIL, tasklets=16)
    text = str(module)
    # The kernel reads its tasklet's id from its launch context once.
    kernel = text[text.index("func.func @k("):text.index("func.func @__dpu_main")]
    assert len(re.findall(rf"getelementptr %arg\d+\[{int(Ctx.TID)}\]", kernel)) == 1
    assert "call @edsl_dpu_me" not in kernel
    # Load, square, store: every tasklet reads only what it loaded itself; barriers
    # (before and after) only on the path storing words two tasklets share.
    assert _barriers(kernel) == 2
    assert not re.search(r"^    llvm.call @edsl_dpu_barrier", kernel, re.M)   # none at top level
    assert info.tasklets == 16


def _main(text: str) -> str:
    return text[text.index("func.func @__dpu_main"):text.index("func.func @__dpu_launch")]


def test_tasklets_that_meet_at_no_barrier_in_a_program_take_turns_after_it():
    """On the model a DPU's tasklets share a host thread: where nothing makes
    them meet inside a program instance, each yields after one, so that they
    go through the arrays together (chunk after chunk of one row) as on a DPU."""
    one, _ = convert_ttir(HEAD + SIG + VECTOR + TAIL)
    many, _ = convert_ttir(HEAD + SIG + VECTOR + TAIL, tasklets=16)
    meet, _ = convert_ttir(HEAD + SIG + REDUCE + TAIL, tasklets=16)
    assert "call @edsl_dpu_yield" not in _main(str(one))
    assert len(re.findall(r"call @edsl_dpu_yield\(%arg\d+\)", _main(str(many)))) == 1
    assert re.search(r"^    llvm.call @edsl_dpu_barrier", str(meet), re.M)
    assert "call @edsl_dpu_yield" not in _main(str(meet))


def test_tasklet_chunks_that_split_a_tile_exactly_need_no_clamp():
    """8 tasklets split a 64-element tile into whole chunks of 8: the bounds
    of a tasklet's chunk are me * 8 and me * 8 + 8, with no clamp to the
    tile (LLVM then knows the chunk's length); 16 tasklets, whose chunks are
    8 elements too (no two share an MRAM word), need one."""
    def clamps(tasklets):
        module, _ = convert_ttir(HEAD + SIG + VECTOR + TAIL, tasklets=tasklets)
        kernel = str(module)
        kernel = kernel[kernel.index("func.func @k("):kernel.index("func.func @__dpu_main")]
        return len(re.findall(r"arith.minsi %\d+, %c64\b", kernel))
    assert clamps(8) == 0
    assert clamps(16) > 0


REDUCE = """    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32> loc(#loc5)
    %px = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>> loc(#loc5)
    %ax = tt.addptr %px, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32> loc(#loc5)
    %v = tt.load %ax : tensor<64x!tt.ptr<f32>> loc(#loc5)
    %s = "tt.reduce"(%v) <{axis = 0 : i32}> ({
    ^bb0(%a: f32 loc(#loc5), %b: f32 loc(#loc5)):
      %t = arith.addf %a, %b : f32 loc(#loc5)
      tt.reduce.return %t : f32 loc(#loc5)
    }) : (tensor<64xf32>) -> f32 loc(#loc5)
    %ss = tt.splat %s : f32 -> tensor<64xf32> loc(#loc5)
    %w = arith.subf %v, %ss : tensor<64xf32> loc(#loc5)
    %py = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>> loc(#loc5)
    %ay = tt.addptr %py, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32> loc(#loc5)
    tt.store %ay, %w : tensor<64x!tt.ptr<f32>> loc(#loc5)
"""


def test_a_reduction_of_its_own_chunk_waits_only_for_the_partial_results():
    one, _ = convert_ttir(HEAD + SIG + REDUCE + TAIL)
    many, _ = convert_ttir(HEAD + SIG + REDUCE + TAIL, tasklets=4)
    text = str(many)
    kernel = text[text.index("func.func @k("):text.index("func.func @__dpu_main")]
    # Each tasklet reduces the groups that are its chunk of the loaded tile
    # (no barrier between the load and the reduction), then a barrier before
    # every tasklet combines the groups' results, and one at the program's end
    # (the next program's results overwrite those cells); two on the slow
    # store path.
    first = kernel.index("call @edsl_dpu_barrier")
    assert kernel.index("call @__dpu_dma") < kernel.index("arith.addf") < first
    top = [m.start() for m in re.finditer(r"^    llvm.call @edsl_dpu_barrier", kernel, re.M)]
    assert len(top) == 2 and _barriers(kernel) == 4
    assert kernel.index("call", top[0]) == first and "scf." not in kernel[top[1]:]
    # Every tasklet combines the 16 groups' results: 15 combines.
    assert len(re.findall(r"^    %\w+ = arith.addf", kernel[top[0]:top[1]], re.M)) == 15
    assert _barriers(str(one)) == 0 and "-> (f32, f32, f32, f32, f32, f32, f32, f32" in str(one)


@triton.jit
def scalar_reduce_kernel(x_ptr, i_ptr, out_ptr, iout_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    i = tl.load(i_ptr + offs, mask=m, other=0)
    tl.store(out_ptr + 0, tl.sum(x * x + 1.0, axis=0))
    tl.store(out_ptr + 1, tl.max(tl.where(m, x, -float("inf")), axis=0))
    tl.store(out_ptr + 2, tl.reduce(tl.where(m, x * 0.01 + 1.0, 1.0), 0, _mul))
    tl.store(iout_ptr + 0, tl.argmax(x, axis=0))
    tl.store(iout_ptr + 1, tl.xor_sum(i, axis=0))
    tl.store(out_ptr + 3 + offs, x - tl.sum(x, axis=0), mask=m)


@triton.jit
def _mul(a, b):
    return a * b


@pytest.mark.parametrize("n, block", [(1000, 1024), (128, 128), (100, 128), (64, 64), (20, 32)])
def test_scalar_reductions_give_the_same_bits_for_1_to_24_tasklets(n, block):
    """Reductions of a whole tile: the tasklets share out the accumulators (or
    one tasklet computes a sequential one), every tasklet reads the result."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    x[n // 3] = np.nan
    i = rng.integers(-1000, 1000, n).astype(np.int32)
    out, iout = np.zeros(3 + n, np.float32), np.zeros(2, np.int32)

    def launch(t):
        scalar_reduce_kernel[(2,)](x, i, out, iout, n, BLOCK=block, num_tasklets=t)
    res, ires = _same_for_all_counts(launch, out, iout, counts=MANY_COUNTS)
    assert ires[0] == np.nanargmax(x) and ires[1] == np.bitwise_xor.reduce(i)
    np.testing.assert_allclose(res[1], np.nanmax(x))


def test_wram_counts_a_staging_buffer_per_tasklet():
    _, one = convert_ttir(HEAD + SIG + VECTOR + TAIL)
    _, many = convert_ttir(HEAD + SIG + VECTOR + TAIL, tasklets=16)
    staging = [b for b in many.wram if "staging" in b.what][0]
    assert "16 tasklets" in staging.what and staging.nbytes % 16 == 0
    assert many.wram_bytes == 256 + staging.nbytes
    # Rank-1 tiles are shared out in chunks (of 8 elements here), so each
    # tasklet's staging buffer is smaller than one tasklet's whole row.
    assert staging.nbytes // 16 < one.wram_bytes - 256
    with pytest.raises(DpuError, match=r"DMA staging buffers \(16 tasklets x"):
        convert_ttir(HEAD + SIG + VECTOR + TAIL, tasklets=16, wram_limit=256 + staging.nbytes - 8)


@triton.jit
def barrier_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1)
    tl.debug_barrier()
    tl.store(x_ptr + offs, tl.load(out_ptr + BLOCK - 1 - offs))


@pytest.mark.parametrize("tasklets", [1, 16])
def test_debug_barrier_orders_stores_and_loads(tasklets):
    x = np.arange(256, dtype=np.float32)
    out = np.zeros_like(x)
    barrier_kernel[(1,)](x, out, BLOCK=256, num_tasklets=tasklets)
    np.testing.assert_array_equal(x, np.arange(256, dtype=np.float32)[::-1] + 1)
    r = edsl.backend.last_report()
    assert r.tasklets_used == tasklets and len(r.per_tasklet_dma) == tasklets
    assert sum(r.per_tasklet_dma) == r.dma_transfers
    if tasklets > 1:
        assert sum(1 for d in r.per_tasklet_dma if d) == 16     # 256 elements: 16 each


def test_a_scalar_every_tasklet_reads_is_read_before_any_tasklet_writes():
    """A scalar is the program's one value: every tasklet reads the count
    before tasklet 0's atomic sets it, so all take the same branch (tasklets
    that read it after took the other one, and the DPU deadlocked)."""
    rng = np.random.default_rng(3)
    rows, n, groups = 12, 100, 3
    x = rng.integers(-50, 50, (rows, n)).astype(np.float32)
    sums = np.empty((groups, n), np.float32)
    locks = np.empty(2 * groups, np.int32)

    def launch(t):
        group_sums[(rows,)](x, sums, locks, n, GROUPS=groups, BLOCK=128, num_tasklets=t)
    (res, lock_words) = _same_for_all_counts(launch, sums, locks, counts=MANY_COUNTS)
    np.testing.assert_array_equal(res, x.reshape(rows // groups, groups, n).sum(0))
    np.testing.assert_array_equal(lock_words, [0] * groups + [1] * groups)
    # Tasklets that read the counter after tasklet 0's atomic stored its new value.
    counter, out = np.empty(1, np.int32), np.empty((5, 64), np.int32)
    (seen, count) = _same_for_all_counts(lambda t: read_then_count[(5,)](counter, out, BLOCK=64, num_tasklets=t),
                                         out, counter, counts=MANY_COUNTS)
    np.testing.assert_array_equal(seen, np.repeat(np.arange(5, dtype=np.int32)[:, None], 64, 1))
    assert count[0] == 5


def test_a_store_after_a_scalar_load_waits_for_every_tasklet_to_read_it():
    """A scalar load, then a store: a barrier between them, at top level,
    and one after the store (the next program instance's load of the
    scalar); a tile load, then a store, none (each tasklet stores what it
    read, and programs are unordered)."""
    scalar = """    %s = tt.load %x : !tt.ptr<f32> loc(#loc5)
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32> loc(#loc5)
    %ss = tt.splat %s : f32 -> tensor<64xf32> loc(#loc5)
    %py = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>> loc(#loc5)
    %ay = tt.addptr %py, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32> loc(#loc5)
    tt.store %ay, %ss : tensor<64x!tt.ptr<f32>> loc(#loc5)
"""
    for body, top_level in ((scalar, 2), (VECTOR, 0)):
        module, _ = convert_ttir(HEAD + SIG + body + TAIL, tasklets=16)
        text = str(module)
        kernel = text[text.index("func.func @k("):text.index("func.func @__dpu_main")]
        assert len(re.findall(r"^    llvm.call @edsl_dpu_barrier", kernel, re.M)) == top_level


@triton.jit
def rows_kernel(x_ptr, out_ptr, R, C, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.arange(0, BR)[:, None]
    c = tl.arange(0, BC)[None, :]
    m = (r < R) & (c < C)
    tl.store(out_ptr + r * C + c, tl.load(x_ptr + r * C + c, mask=m) * 3, mask=m)


@pytest.mark.parametrize("start", [0, 1])
def test_long_rows_fit_in_wram_with_many_tasklets(start):
    """Rows longer than one transfer move in pieces: each tasklet's staging buffer
    stays at one transfer, so a 16 KiB tile fits with 16 tasklets."""
    base = np.arange(4 * 1000 + 8, dtype=np.float32)
    x = base[start:start + 4000]
    out_base = np.full(4 * 1000 + 8, -1, np.float32)
    out = out_base[start:start + 4000]

    def launch(t):
        rows_kernel[(1,)](x, out, 4, 1000, BR=4, BC=1024, num_tasklets=t)
    (res,) = _same_for_all_counts(launch, out_base)
    np.testing.assert_array_equal(res[start:start + 4000], x * 3)
    assert (res[:start] == 0).all() and (res[start + 4000:] == 0).all()
    r = edsl.backend.last_report()
    assert r.wram_bytes <= 64 * 1024 and sum(1 for d in r.per_tasklet_dma if d) == 4   # a row each


def test_kernels_with_barriers_give_the_same_bits_for_1_to_24_tasklets():
    """Barriers (reductions, a k-loop of tl.dot, a debug barrier) with tasklet
    counts that divide the tiles and counts that do not, up to the hardware's 24."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((5, 700)) * 4).astype(np.float32)
    w, b = rng.standard_normal(700).astype(np.float32), rng.standard_normal(700).astype(np.float32)
    sm, ln = np.empty_like(x), np.empty_like(x)
    a = rng.standard_normal((40, 24)).astype(np.float32)
    bm = rng.standard_normal((24, 36)).astype(np.float32)
    mm = np.empty((40, 36), np.float32)
    bx, bout = np.empty(256, np.float32), np.empty(256, np.float32)

    def launch(t):
        triton_softmax.softmax_kernel[(5,)](sm, x, 700, 700, BLOCK=1024, num_dpus=2, num_tasklets=t)
        triton_layernorm.layernorm_kernel[(5,)](x, ln, w, b, 700, 1e-5, BLOCK=1024, num_tasklets=t)
        triton_matmul.matmul_kernel[(3, 2)](a, bm, mm, 40, 36, 24, BM=16, BN=32, BK=8, num_dpus=2,
                                            num_tasklets=t)
        bx[:] = np.arange(256, dtype=np.float32)
        barrier_kernel[(1,)](bx, bout, BLOCK=256, num_tasklets=t)
        assert edsl.backend.last_report().per_tasklet_dma.__len__() == t
    res = _same_for_all_counts(launch, sm, ln, mm, bx, bout, counts=MANY_COUNTS)
    np.testing.assert_allclose(res[0], triton_softmax.reference(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[2], a @ bm, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(res[3], np.arange(256, dtype=np.float32)[::-1] + 1)
