"""Launch reports with the time estimate: EDSL functions (`run(..., timing=True)`)
and Triton kernels (`dpu_timing=True`) counted through the real launch path."""
import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import edsl
import edsl.backend
from edsl import InOut, Input
from edsl.dpu import timing
from edsl.base.errors import ArgumentError


@edsl.dialect
def _scale_sum(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], a: Input["f32"]):
    for i in range(y.shape[0]):
        if x[i] > 0.0:
            y[i] = a * x[i] + y[i]
        else:
            y[i] = y[i] - x[i] / a


@edsl.dialect
def _blocks(a: InOut["memref<?xi64, MRAM>"], n: Input["i64"]):
    buf = edsl.wram_alloc((16 * 128,), "i64")
    t = edsl.tasklet_id()
    for base in range(t * 128, n, edsl.num_tasklets() * 128):
        edsl.mram_read(a, buf, 1024, src_offset=base, dst_offset=t * 128)
        for i in range(t * 128, t * 128 + 128):
            buf[i] = buf[i] + 1
        edsl.mram_write(buf, a, 1024, src_offset=t * 128, dst_offset=base)


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.5 + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def _softmax(out_ptr, in_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * cols + offs, mask=offs < cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=offs < cols)


floats = hnp.arrays(np.float32, st.integers(1, 300),
                    elements=st.floats(-1e6, 1e6, width=32, allow_subnormal=False))


# -- EDSL functions ----------------------------------------------------------------------------

@settings(max_examples=15)
@given(floats, st.floats(0.5, 4.0, width=32))
def test_edsl_counting_leaves_results_bit_identical(x, a):
    y0 = np.linspace(-3, 3, x.size, dtype=np.float32)
    plain, counted = y0.copy(), y0.copy()
    assert _scale_sum.run(plain, x, a).timing is None
    report = _scale_sum.run(counted, x, a, timing=True)
    assert plain.tobytes() == counted.tobytes()
    # what executed, from the counters: one multiply per positive element, one division otherwise
    positive = int((x > 0).sum())
    done = report.timing.executed_ops
    assert done["fmul32"] == positive and done["fdiv32"] == x.size - positive
    assert done["fcmp32"] == x.size


def test_edsl_estimate_per_tasklet_and_dma():
    n = 16 * 128 * 4
    a = np.arange(n, dtype=np.int64)
    one = _blocks.run(a, n, tasklets=1, timing=True)
    assert np.array_equal(a, np.arange(n) + 1)
    sixteen = _blocks.run(a, n, tasklets=16, timing=True)
    assert np.array_equal(a, np.arange(n) + 2)
    for r in (one, sixteen):
        est = r.timing
        assert est.executed_ops["dma"] == r.dma_transfers == 2 * n // 128
        assert est.dpu_cycles_max == est.dpu_cycles_mean == est.per_dpu_cycles[0] > 0
        # one DPU: its input and output array move serially, as much as it moved by DMA
        assert est.host_seconds["to_dpu/serial"] == pytest.approx(timing.transfer_seconds("serial", "to_dpu", n * 8))
        assert est.host_seconds["from_dpu/serial"] == pytest.approx(timing.transfer_seconds("serial", "from_dpu", n * 8))
    # the same work shared out: fewer cycles, as on the DPU below 11 tasklets and at 16
    assert sixteen.timing.dpu_cycles_max < one.timing.dpu_cycles_max
    assert sixteen.timing.issue_cycles <= one.timing.issue_cycles


def test_edsl_timing_option_is_checked():
    with pytest.raises(ArgumentError, match="timing must be True or False") as err:
        _scale_sum.run(np.zeros(2, np.float32), np.zeros(2, np.float32), 1.0, timing="yes")
    assert err.value.loc.filename == __file__


# -- Triton kernels ------------------------------------------------------------------------------

@settings(max_examples=10)
@given(floats, st.sampled_from([1, 3]), st.sampled_from([1, 4]))
def test_kernel_counting_leaves_results_bit_identical(x, dpus, tasklets):
    y = x[::-1].copy()
    plain, counted = np.empty_like(x), np.empty_like(x)
    grid = (triton.cdiv(x.size, 64),)
    _add[grid](x, y, plain, x.size, BLOCK=64, num_dpus=dpus, num_tasklets=tasklets)
    assert edsl.backend.last_report().timing is None
    _add[grid](x, y, counted, x.size, BLOCK=64, num_dpus=dpus, num_tasklets=tasklets, dpu_timing=True)
    est = edsl.backend.last_report().timing
    assert plain.tobytes() == counted.tobytes()
    assert est.executed_ops["fmul32"] == est.executed_ops["fadd32"] == x.size
    assert len(est.per_dpu_cycles) == min(dpus, grid[0])


def test_softmax_counting_bit_identical_with_math():
    m = np.random.default_rng(1).standard_normal((37, 50)).astype(np.float32)
    plain, counted = np.empty_like(m), np.empty_like(m)
    _softmax[(37,)](plain, m, 50, BLOCK=64, num_dpus=4, num_tasklets=16)
    _softmax[(37,)](counted, m, 50, BLOCK=64, num_dpus=4, num_tasklets=16, dpu_timing=True)
    assert plain.tobytes() == counted.tobytes()
    est = edsl.backend.last_report().timing
    assert est.executed_ops.get("math", 0) + est.executed_ops.get("fmul32", 0) > 0
    assert est.dpu_cycles_max >= est.dpu_cycles_mean > 0


def test_timing_is_a_compile_option():
    x = np.ones(64, np.float32)
    args = (x, x, np.empty_like(x), 64)
    plain = _add.warmup(*args, BLOCK=64, grid=(1,))
    counted = _add.warmup(*args, BLOCK=64, grid=(1,), dpu_timing=True)
    assert plain.hash != counted.hash
    assert "edsl.counters" not in plain.asm["llmlir"]
    assert "edsl.counters" in counted.asm["llmlir"] and "edsl_dpu_counters" in counted.asm["llmlir"]
    with pytest.raises(ArgumentError, match="dpu_timing must be True or False"):
        _add.warmup(*args, BLOCK=64, grid=(1,), dpu_timing=1)


def _va_estimate(n, dpus, tasklets=16):
    x = np.arange(n, dtype=np.float32)
    out = np.empty_like(x)
    _add[(triton.cdiv(n, 256),)](x, x, out, n, BLOCK=256, num_dpus=dpus, num_tasklets=tasklets, dpu_timing=True)
    assert np.array_equal(out, x * 2.5 + x)
    return edsl.backend.last_report().timing


@settings(max_examples=8)
@given(st.integers(1, 40), st.integers(1, 40), st.sampled_from([1, 2, 4, 8]))
def test_launch_estimate_monotonic(blocks, more, dpus):
    """More data never takes fewer cycles; more DPUs for the same data never
    make the slowest DPU slower; host transfers grow with the data."""
    small, big = _va_estimate(blocks * 256, dpus), _va_estimate((blocks + more) * 256, dpus)
    assert big.dpu_cycles_max >= small.dpu_cycles_max
    assert sum(big.host_seconds.values()) >= sum(small.host_seconds.values())
    spread = _va_estimate((blocks + more) * 256, 2 * dpus)
    assert spread.dpu_cycles_max <= big.dpu_cycles_max


def test_several_dpus_transfer_in_parallel_and_clock_is_settable(monkeypatch):
    est = _va_estimate(64 * 256, 8)
    assert set(est.host_seconds) == {"to_dpu/parallel", "from_dpu/parallel"}
    assert est.per_dpu_cycles == (est.per_dpu_cycles[0],) * 8          # equal shares
    assert est.at(400e6).dpu_seconds == pytest.approx(est.dpu_cycles_max / 400e6)
    monkeypatch.setenv(timing.CLOCK_ENV, "400")
    assert _va_estimate(64 * 256, 8).clock_hz == 400e6
    monkeypatch.setenv(timing.CLOCK_ENV, "fast")
    with pytest.raises(ArgumentError, match="EDSL_DPU_CLOCK_MHZ='fast'"):
        _va_estimate(256, 1)
