"""Tiles kept in MRAM when WRAM cannot hold them: the spill plan and its IR
(on TTIR that Triton printed), line geometry, results against NumPy and
bit-identical to the unspilled path (Hypothesis: tile shapes around the WRAM
limit, 1..24 tasklets), `tl.dot` blocked over WRAM panels, the launch report,
and the errors for what cannot be streamed."""
import re

import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import assume, example, given, settings, strategies as st

import edsl
import edsl.backend
from edsl.backend import array
from edsl.backend.convert import convert_ttir
from edsl.backend.convert.barriers import chunk
from edsl.backend.convert.spill import LINE_CAPS, geometry
from edsl.target.dpu import DMA_MAX_BYTES, MRAM_BYTES
from edsl.base.errors import DpuError
from test_converter import HEAD, SIG, TAIL, VECTOR
from test_steps import _kernel_text, corpus_kernel
from region_kernels import region_kernel, staged_kernel
from source_lines import line_of
from tile_kernels import carried_update_kernel, mean_and_variance_kernel, tile_kernel
from test_dot import dot_kernel

BIG = 1 << 20           # a WRAM budget no tile here reaches: the unspilled path
TASKLETS = st.integers(1, 24)


# ---- the plan, on TTIR text ----------------------------------------------------------------

def test_a_tile_over_the_budget_is_kept_in_mram_and_streamed():
    module, info = convert_ttir(HEAD + SIG + VECTOR + TAIL)
    assert not info.spills and "__dpu_spill" not in str(module)
    module, info = convert_ttir(HEAD + SIG + VECTOR + TAIL, wram_limit=512)
    text = _kernel_text(module)
    assert [(r.what, r.nbytes) for r in info.spills] == [("tt.load result", 256)]
    assert info.scratch_bytes == 256 and info.wram_bytes <= 512
    # The load result is no WRAM view; its window is, and every line moves by
    # the counted spill transfer (the load writes lines, the store reads them).
    assert "memref<64xf32>" not in text
    assert [b.what for b in info.wram] == ["window of the tt.load result kept in MRAM", "DMA staging buffer"]
    assert text.count("call @__dpu_spill_dma") >= 1 and "call @__dpu_spill_swap" in text
    assert "func.func private @__dpu_spill_swap" in str(module)


def test_the_largest_tiles_spill_first_and_staging_never():
    text, view = corpus_kernel(r"@dot_kernel")
    _, whole = convert_ttir(text)
    sizes = {b.what: b.nbytes for b in whole.wram}
    assert sizes["tt.load result"] == sizes["tl.dot result"] == 1024
    _, one = convert_ttir(text, wram_limit=whole.wram_bytes - 8)
    # Three tiles of one size, each used once: the first asked for goes.
    assert [(r.what, r.loc.lineno) for r in one.spills] == [("tt.load result", 114)]
    _, all3 = convert_ttir(text, wram_limit=1000)
    assert sorted(r.what for r in all3.spills) == ["tl.dot result", "tt.load result", "tt.load result"]
    assert any(b.what == "DMA staging buffer" for b in all3.wram)
    assert all3.wram_bytes <= 1000


def test_the_least_used_of_equal_tiles_spills():
    body = """    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32> loc(#loc5)
    %px = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>> loc(#loc5)
    %ax = tt.addptr %px, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32> loc(#loc5)
    %py = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>> loc(#loc5)
    %ay = tt.addptr %py, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32> loc(#loc5)
    %u = tt.load %ax : tensor<64x!tt.ptr<f32>> loc(#loc5)
    %v = tt.load %ay : tensor<64x!tt.ptr<f32>> loc(#loc6)
    %w = arith.mulf %v, %v : tensor<64xf32> loc(#loc5)
    %s = arith.addf %u, %w : tensor<64xf32> loc(#loc5)
    tt.store %ax, %s : tensor<64x!tt.ptr<f32>> loc(#loc5)
"""
    head = HEAD.replace("module {", '#loc6 = loc("k.py":6:3)\nmodule {')
    _, info = convert_ttir(head + SIG + body + TAIL, wram_limit=700)
    assert [(r.what, r.loc.lineno) for r in info.spills] == [("tt.load result", 5)]   # %u: one use


def test_a_dot_with_spilled_operands_reads_b_panels_and_a_rows():
    text, view = corpus_kernel(r"@dot_kernel")
    module, info = convert_ttir(text, wram_limit=1500, tasklets=4)
    whats = [b.what for b in info.wram]
    assert "tl.dot panel of B" in whats                        # shared by the tasklets
    assert any(w.startswith("tl.dot rows (4 tasklets x") for w in whats)
    assert sorted(r.what for r in info.spills) == ["tl.dot result", "tt.load result", "tt.load result"]
    kernel = _kernel_text(module)
    # Loads write the tiles' lines and the dot reads and writes rows of them
    # by DMA; only the store reads elements through a window: one tile's.
    assert kernel.count("call @__dpu_spill_dma") >= 4
    assert len(set(re.findall(r"call @__dpu_spill_swap\((%\w+),", kernel))) == 1
    # The panel is loaded by all tasklets and read by all: barriers around it.
    assert info.barriers >= 2 and kernel.count("call @edsl_dpu_barrier") == info.barriers
    unblocked, _ = convert_ttir(text, tasklets=4)
    assert "__dpu_spill" not in str(unblocked)


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.sampled_from([1, 2, 3, 4, 8, 16, 64, 100, 512, 1024, 3000]), min_size=1, max_size=4),
       es=st.sampled_from([1, 2, 4, 8]), cap=st.sampled_from(LINE_CAPS), tasklets=TASKLETS)
def test_lines_are_single_transfers_that_no_two_tasklets_write(shape, es, cap, tasklets):
    """Every line is one legal DMA transfer (8-byte aligned, 8..2048 bytes),
    within the cap (or 8 elements of a rank-1 tile), and holds elements of one
    tasklet's chunk only (tasklets write the chunks of the first dimension)."""
    g = geometry(shape, es, cap, tasklets)
    assert g.seg % 8 == 0 and 8 <= g.seg <= DMA_MAX_BYTES and g.pitch % 8 == 0
    assert g.seg <= max(cap, 8 * es)
    if g.segs > 1:
        assert g.rows == 1 and (g.lanes * es) % 8 == 0
    if tasklets > 1 and len(shape) == 1 and g.segs > 1:
        assert chunk(tuple(shape), tasklets) % g.lanes == 0
    if tasklets > 1 and len(shape) > 1:
        assert (int(np.prod(shape[1:-1])) % g.rows) == 0      # whole rows of one first index
    if tasklets == 1:
        assert int(np.prod(shape[:-1])) % g.rows == 0


# ---- results --------------------------------------------------------------------------------

def _tiles(x, tasklets, **kw):
    R, C = x.shape
    outs = [np.zeros_like(x), np.zeros(R, x.dtype), np.zeros(C, x.dtype), np.zeros_like(x)]
    tile_kernel[(1,)](x, *outs, R=R, C=C, num_tasklets=tasklets, **kw)
    return outs, edsl.backend.last_report()


@settings(max_examples=8, deadline=None)
@given(rows=st.sampled_from([16, 32, 64, 128]), cols=st.sampled_from([32, 64, 128, 256]),
       tasklets=TASKLETS, seed=st.integers(0, 2**16))
def test_tiles_around_the_wram_limit(rows, cols, tasklets, seed):
    """Tiles of 2 KiB to 128 KiB (int32, exact), with the DPU's 64 KiB: the
    large ones are kept in MRAM; results equal NumPy's and, bit for bit,
    those of the same kernel given WRAM enough for every tile."""
    x = np.random.default_rng(seed).integers(-1000, 1000, (rows, cols)).astype(np.int32)
    outs, report = _tiles(x, tasklets)
    np.testing.assert_array_equal(outs[0], x * 3 + 1)
    np.testing.assert_array_equal(outs[1], x.sum(axis=1))
    np.testing.assert_array_equal(outs[2], x.max(axis=0))
    np.testing.assert_array_equal(outs[3], np.cumsum(x, axis=1))
    assert report.wram_bytes <= 64 * 1024
    assert bool(report.spilled_tiles) == (report.spill_bytes > 0) == (report.spill_dma_transfers > 0)
    if rows * cols * 4 > 64 * 1024:
        assert report.spilled_tiles
    whole, unspilled = _tiles(x, tasklets, wram_bytes=BIG)
    assert not unspilled.spilled_tiles
    for a, b in zip(outs, whole):
        np.testing.assert_array_equal(a, b)


DOT_TYPES = [(np.float32, np.float32), (np.float16, np.float32), (np.float16, np.float16),
             (np.int8, np.int32), (np.float64, np.float64), (ml_dtypes.float8_e5m2, np.float32)]


@settings(max_examples=12, deadline=None)
@example(m=32, n=32, k=64, types=DOT_TYPES[-1], share=0.4, tasklets=7, seed=5)   # fp8 A read by rows
@given(m=st.sampled_from([8, 16, 32, 64]), n=st.sampled_from([8, 16, 32, 64]),
       k=st.sampled_from([8, 16, 32, 64, 128]), types=st.sampled_from(DOT_TYPES),
       share=st.floats(0.35, 0.95), tasklets=TASKLETS, seed=st.integers(0, 2**16))
def test_spilled_dot_is_bit_identical_to_the_unspilled_dot(m, n, k, types, share, tasklets, seed):
    """The same dot with a WRAM budget below what its tiles take: operands and
    result kept in MRAM, the dot blocked over panels, the same bits."""
    src, dst = types
    rng = np.random.default_rng(seed)
    if src == np.int8:
        a, b = rng.integers(-100, 100, (m, k)).astype(src), rng.integers(-100, 100, (k, n)).astype(src)
    else:
        a, b = rng.standard_normal((m, k)).astype(src), rng.standard_normal((k, n)).astype(src)
    whole, part = np.zeros((m, n), dst), np.zeros((m, n), dst)
    a, b = array(a), array(b)           # (fp8 arrays need the view to have a Triton type)
    dot_kernel[(1,)](a, b, whole, M=m, N=n, K=k, num_tasklets=tasklets, wram_bytes=BIG)
    budget = int(edsl.backend.last_report().wram_bytes * share) // 8 * 8
    try:
        dot_kernel[(1,)](a, b, part, M=m, N=n, K=k, num_tasklets=tasklets, wram_bytes=budget)
    except DpuError as err:               # (staging buffers and windows alone over a tiny budget)
        assert "does not make it fit" in str(err)
        assume(False)
    report = edsl.backend.last_report()
    assert report.spilled_tiles and report.wram_bytes <= budget
    np.testing.assert_array_equal(part.view(np.uint8), whole.view(np.uint8))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = 2e-2 if dst == np.float16 else 1e-3
    np.testing.assert_allclose(part.astype(np.float64), ref, rtol=tol, atol=tol * np.sqrt(k))


@triton.jit
def batched_dot_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                       K: tl.constexpr):
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    a = tl.load(a_ptr + rb * M * K + rm * K + tl.arange(0, K)[None, None, :])
    b = tl.load(b_ptr + rb * K * N + tl.arange(0, K)[None, :, None] * N + rn)
    tl.store(c_ptr + rb * M * N + rm * N + rn, tl.dot(a, b))


@pytest.mark.parametrize("tasklets", [1, 6, 24])
def test_batched_dot_with_k_split_over_panels(tasklets):
    """K too deep for one panel of B in WRAM: accumulators carried across the
    K panels; a batch of matrices."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 16, 2048)).astype(np.float32)
    b = rng.standard_normal((2, 2048, 32)).astype(np.float32)
    whole, part = np.zeros((2, 16, 32), np.float32), np.zeros((2, 16, 32), np.float32)
    batched_dot_kernel[(1,)](a, b, whole, B=2, M=16, N=32, K=2048, num_tasklets=tasklets, wram_bytes=BIG)
    batched_dot_kernel[(1,)](a, b, part, B=2, M=16, N=32, K=2048, num_tasklets=tasklets)
    report = edsl.backend.last_report()
    assert len(report.spilled_tiles) >= 2 and report.wram_bytes <= 64 * 1024
    np.testing.assert_array_equal(part, whole)
    np.testing.assert_allclose(part, a @ b, rtol=1e-3, atol=1e-3)


@triton.jit
def square_kernel(z_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
    z = tl.load(z_ptr + offs)
    tl.store(z_ptr + offs, tl.dot(z, z))


@pytest.mark.parametrize("tasklets", [1, 5])
@pytest.mark.parametrize("n, budget", [(16, BIG), (64, BIG), (64, 24 * 1024)])
def test_a_dot_of_a_tile_with_itself(n, budget, tasklets):
    """One tile both operands of a tl.dot, in WRAM or kept in MRAM."""
    z = np.random.default_rng(n).integers(-8, 8, (n, n)).astype(np.float32)
    got = z.copy()
    square_kernel[(1,)](got, N=n, num_tasklets=tasklets, wram_bytes=budget)
    assert bool(edsl.backend.last_report().spilled_tiles) == (budget != BIG)
    np.testing.assert_array_equal(got, z @ z)


@settings(max_examples=6, deadline=None)
@given(tasklets=TASKLETS, dpus=st.sampled_from([1, 2, 3]), seed=st.integers(0, 2**16))
def test_loop_carried_accumulator_in_mram(tasklets, dpus, seed):
    """The tiled matmul example with 128 x 128 blocks: its accumulator (a
    loop-carried tile), loads and dot results kept in MRAM, over programs on
    several DPUs (each program reuses its DPU's scratch)."""
    import triton_matmul
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((150, 100)).astype(np.float32)
    b = rng.standard_normal((100, 140)).astype(np.float32)
    grid = (2, 2)
    spilled, whole = np.zeros((150, 140), np.float32), np.zeros((150, 140), np.float32)
    kw = dict(BM=128, BN=128, BK=32, num_dpus=dpus, num_tasklets=tasklets)
    triton_matmul.matmul_kernel[grid](a, b, spilled, 150, 140, 100, **kw)
    report = edsl.backend.last_report()
    assert any(t.startswith("loop-carried tensor") for t in report.spilled_tiles)
    triton_matmul.matmul_kernel[grid](a, b, whole, 150, 140, 100, wram_bytes=BIG, **kw)
    np.testing.assert_array_equal(spilled, whole)
    np.testing.assert_allclose(spilled, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("tasklets", [1, 4])
def test_a_tile_updated_in_place_is_updated_in_place_when_kept_in_mram_too(tasklets):
    """Over WRAM, the carried tiles are kept in MRAM and still updated in
    place, through their windows (no copy of the next value)."""
    x = np.random.default_rng(0).standard_normal((3, 8192)).astype(np.float16)
    small, big = np.zeros(6, np.float32), np.zeros(6, np.float32)
    mean_and_variance_kernel[(3,)](x, small, 8192, BLOCK=8192, num_tasklets=tasklets)
    spilled = edsl.backend.last_report().spilled_tiles
    assert any(t.startswith("loop-carried tensor") for t in spilled)
    assert not any(t.startswith("loop-carried tensor (next value)") for t in spilled)
    mean_and_variance_kernel[(3,)](x, big, 8192, BLOCK=8192, num_tasklets=tasklets, wram_bytes=BIG)
    np.testing.assert_array_equal(small, big)
    x32 = x.astype(np.float64)
    mean = x32.mean(axis=1)
    np.testing.assert_allclose(small[0::2], mean, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(small[1::2], x32.var(axis=1), rtol=1e-4)


@settings(max_examples=6, deadline=None)
@example(rows=64, cols=256, steps=2, tasklets=16, seed=1)
@example(rows=64, cols=256, steps=3, tasklets=1, seed=2)
@given(rows=st.sampled_from([16, 32, 64]), cols=st.sampled_from([128, 256]), steps=st.integers(2, 3),
       tasklets=TASKLETS, seed=st.integers(0, 2**16))
def test_a_carried_tile_kept_in_mram_is_updated_in_place(rows, cols, steps, tasklets, seed):
    """int32 (exact, wrapping): results equal NumPy's and, bit for bit, those
    with WRAM enough for every tile; over WRAM the carried tile is kept in
    MRAM without a copy of its next value."""
    x = np.random.default_rng(seed).integers(-1000, 1000, (steps, rows, cols)).astype(np.int32)
    spilled, whole = np.zeros((rows, cols), np.int32), np.zeros((rows, cols), np.int32)
    carried_update_kernel[(1,)](x, spilled, R=rows, C=cols, STEPS=steps, num_tasklets=tasklets)
    tiles = edsl.backend.last_report().spilled_tiles
    carried_update_kernel[(1,)](x, whole, R=rows, C=cols, STEPS=steps, num_tasklets=tasklets, wram_bytes=BIG)
    want = np.ones((rows, cols), np.int32)
    for s in range(steps):
        want = want * np.int32(3) + x[s]
    np.testing.assert_array_equal(spilled, want)
    np.testing.assert_array_equal(whole, want)
    if rows * cols * 4 >= 64 * 1024:
        assert any(t.startswith("loop-carried tensor at") for t in tiles), tiles
    assert not any(t.startswith("loop-carried tensor (next value)") for t in tiles), tiles


@pytest.mark.parametrize("tasklets", [1, 4])
def test_a_kernel_over_wram_is_converted_once_and_planned_once(tasklets, monkeypatch):
    """Each op is lowered once, with every tile in WRAM; one plan, made from
    those buffers, keeps some in MRAM and the accesses to them are rewritten
    (the carried tiles stay updated in place)."""
    from edsl.backend.convert import services
    from edsl.backend.convert.converter import Converter
    x = np.zeros((3, 8192), np.float16)
    ttir = mean_and_variance_kernel.warmup(x, np.zeros(6, np.float32), 8192, BLOCK=8192,
                                           grid=(3,)).asm["ttir"]
    lowered, plans, real_plan, real_lower = [], [], services.spill_plan, Converter.lower_op

    def counted(self, op):
        lowered.append(op)
        return real_lower(self, op)

    def planned(*args, **kwargs):
        plans.append(real_plan(*args, **kwargs))
        return plans[-1]
    monkeypatch.setattr(Converter, "lower_op", counted)
    monkeypatch.setattr(services, "spill_plan", planned)
    _, info = convert_ttir(ttir, tasklets=tasklets)
    assert info.spills and len(plans) == 1
    once = len(lowered)
    assert any(r.what.startswith("loop-carried tensor") for r in info.spills)
    assert not any(r.what.startswith("loop-carried tensor (next value)") for r in info.spills)
    lowered.clear()
    _, whole = convert_ttir(ttir, tasklets=tasklets, wram_limit=BIG)
    assert len(lowered) == once and not whole.spills and len(plans) == 1


# ---- the launch report ----------------------------------------------------------------------

def test_report_counts_spilled_bytes_and_their_dma():
    x = np.arange(128 * 256, dtype=np.int32).reshape(128, 256)
    _, small = _tiles(x[:16, :32].copy(), 1)
    assert small.spilled_tiles == [] and small.spill_bytes == 0 and small.spill_dma_transfers == 0
    _, big = _tiles(x, 1)
    assert big.spill_bytes == 2 * 128 * 256 * 4                 # the load and the scan result
    assert sorted(t.split(" at ")[0] for t in big.spilled_tiles) == ["tt.load result", "tt.scan result"]
    assert all("131072 bytes, lines of" in t for t in big.spilled_tiles)
    # Spill transfers are a part of all transfers; each line at most 2048 bytes.
    assert 0 < big.spill_dma_transfers < big.dma_transfers
    assert big.spill_dma_read_bytes <= big.dma_read_bytes and big.spill_dma_write_bytes <= big.dma_write_bytes
    assert big.spill_dma_write_bytes >= big.spill_bytes               # each tile written once at least
    assert big.spill_dma_bytes <= 2048 * big.spill_dma_transfers


def test_driver_reports_the_mram_bank_as_shared_memory():
    utils = triton.runtime.driver.active.utils
    assert utils.get_device_properties(0)["max_shared_mem"] == MRAM_BYTES


# ---- what cannot be streamed ----------------------------------------------------------------

def test_an_edsl_operand_cannot_be_streamed():
    x = np.zeros(8192, np.float32)
    with pytest.raises(DpuError) as err:
        region_kernel[(1,)](x, BLOCK=8192)
    message = str(err.value)
    assert "needs 67600 bytes of WRAM, more than the 65536 bytes of a DPU, and keeping its large tiles in " \
           "MRAM does not make it fit" in message
    assert "32768 bytes for the tt.load result (an EDSL function's operand, read in WRAM)" in message
    assert "32768 bytes for the fl.call out 'y' (an EDSL function's operand, read in WRAM)" in message
    assert err.value.loc.lineno == line_of(region_kernel, "x = tl.load")


def test_an_edsl_functions_wram_buffers_take_the_dpus_wram_too():
    """An EDSL function's wram_alloc buffers are the DPU's WRAM as the
    kernel's tiles are: beside 48 KiB of them and its 8 KiB of operands, a
    16 KiB tile is kept in MRAM (NumPy's results); where the function's
    operands (which stay in WRAM) do not fit beside them, the error names
    them."""
    x = np.arange(1024 + 4096, dtype=np.float32)
    want = np.concatenate([x[:1024] * 2, x[1024:] + 1])
    staged_kernel[(1,)](x, 1024, BLOCK=1024, BIG=4096)
    report = edsl.backend.last_report()
    np.testing.assert_array_equal(x, want)
    assert any(t.startswith("tt.load result") for t in report.spilled_tiles)
    y = np.zeros(4096 + 16, np.float32)
    with pytest.raises(DpuError) as err:
        staged_kernel[(1,)](y, 4096, BLOCK=4096, BIG=16)
    message = str(err.value)
    assert "more than the 65536 bytes of a DPU, and keeping its large tiles in MRAM does not make it fit" in message
    assert "in WRAM stay 49152 bytes for the EDSL functions' wram_alloc buffers" in message
    assert err.value.loc.lineno == line_of(staged_kernel, "x = tl.load")


@triton.jit
def copy_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) + 1)


def test_windows_for_every_tasklet_that_do_not_fit_are_an_error():
    x = np.zeros(4096, np.float32)
    with pytest.raises(DpuError) as err:
        copy_kernel[(1,)](x, x, BLOCK=4096, num_tasklets=24, wram_bytes=4096)
    message = str(err.value)
    assert "more than the 4096 bytes of a DPU, and keeping its large tiles in MRAM does not make it fit" \
           in message
    assert "DMA staging buffers (24 tasklets x" in message
    assert "the 1 tile(s) kept in MRAM need" in message and "(24 tasklet(s))" in message
    assert err.value.loc.lineno == line_of(copy_kernel, "tl.store(y_ptr")
    fits = int(re.search(r"it fits with num_tasklets=(\d+)", message).group(1))
    assert 1 <= fits < 24
    copy_kernel[(1,)](x, x, BLOCK=4096, num_tasklets=fits, wram_bytes=4096)  # as it says
    with pytest.raises(DpuError, match="with num_tasklets="):
        copy_kernel[(1,)](x, x, BLOCK=4096, num_tasklets=fits + 1, wram_bytes=4096)
    copy_kernel[(1,)](x, x, BLOCK=4096, num_tasklets=1, wram_bytes=4096)     # one tasklet fits
    with pytest.raises(DpuError, match="does not fit with num_tasklets=1 either"):
        copy_kernel[(1,)](x, x, BLOCK=4096, num_tasklets=4, wram_bytes=512)


@triton.jit
def rows_copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def test_parts_and_scratch_over_the_mram_bank_fail_at_the_launch():
    """A DPU's parts of the arrays and its scratch share its MRAM."""
    x = np.zeros(MRAM_BYTES // 4 - 4096, np.float32)        # the array leaves less than 64 KiB
    grid = triton.cdiv(x.size, 16384)
    with pytest.raises(DpuError, match="touches 67092480 bytes of the arrays .* and 65536 bytes of tiles kept "
                                       "in MRAM: more than the 67108864") as err:
        rows_copy_kernel[(grid,)](x, x, x.size, BLOCK=16384)  # the launch
    assert err.value.loc.filename == __file__
    assert err.value.loc.lineno == line_of(test_parts_and_scratch_over_the_mram_bank_fail_at_the_launch,
                                            "# the launch")
    assert not x.any()                                       # (left as it was)
    rows_copy_kernel[(grid,)](x, x, x.size, BLOCK=16384, num_dpus=2)
    assert (x == 1).all()
