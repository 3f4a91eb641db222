"""fp8 on the dpu backend: casts (`tt.fp_to_fp`) between every 8-bit format
Triton names and f16/bf16/f32/f64, exhaustive over the 8-bit values and the
f16 values, with Triton's GPU semantics (round to nearest even or toward zero;
overflow and infinities saturate, as NVIDIA's `cvt.rn.satfinite`, except
infinities rounded toward zero into e5m2); fp8e4b15 (Triton's own format,
i8 in TTIR) as NVIDIA converts it; fp8 `tl.abs`, `tl.dot` and the IR text
of the conversion."""
import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st

from edsl.backend import array
from edsl.backend.convert import convert_ttir
from edsl.base.errors import ArgumentError

from launch_strategies import strategies

DPUS, TASKLETS = strategies()

# Triton's 8-bit formats with an MLIR type, and their NumPy dtypes.
FORMATS = {
    "fp8e4nv": ml_dtypes.float8_e4m3fn,
    "fp8e5": ml_dtypes.float8_e5m2,
    "fp8e4b8": ml_dtypes.float8_e4m3fnuz,
    "fp8e5b16": ml_dtypes.float8_e5m2fnuz,
}
WIDE = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16, "fp32": np.float32, "fp64": np.float64}
ALL_BYTES = np.arange(256, dtype=np.uint8)


@triton.jit
def cast_kernel(x_ptr, z_ptr, n, BLOCK: tl.constexpr, ROUND: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(z_ptr + offs, x.to(z_ptr.dtype.element_ty, fp_downcast_rounding=ROUND), mask=m)


def cast(x, out, rounding=None, dpus=1, tasklets=1):
    n = x.shape[0]
    cast_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024, ROUND=rounding,
                                          num_dpus=dpus, num_tasklets=tasklets)
    return out


def _table(dtype):
    """The finite non-negative values of an 8-bit format, sorted, with their codes."""
    vals = ALL_BYTES.view(dtype).astype(np.float64)
    keep = np.isfinite(vals) & (vals >= 0) & ~np.signbit(vals)
    order = np.argsort(vals[keep], kind="stable")
    return vals[keep][order], ALL_BYTES[keep][order]


def oracle(x, dtype, toward_zero=False):
    """`x` (float64) rounded into `dtype` by looking it up among the format's
    values: ties to the even code; overflow and infinities saturate, except
    infinities rounded toward zero into a format that has them."""
    vals, codes = _table(dtype)
    has_inf = np.isinf(ALL_BYTES.view(dtype).astype(np.float64)).any()
    out = np.empty(len(x), dtype=np.float64)
    for k, v in enumerate(np.asarray(x, dtype=np.float64)):
        a = abs(v)
        if np.isnan(v):
            out[k] = np.nan
            continue
        if np.isinf(a):
            r = np.inf if (toward_zero and has_inf) else vals[-1]
        else:
            i = np.searchsorted(vals, a, side="right") - 1
            if vals[i] == a or toward_zero or i == len(vals) - 1:
                r = vals[i]
            else:
                lo, hi = vals[i], vals[i + 1]
                r = lo if (a - lo < hi - a or (a - lo == hi - a and codes[i] % 2 == 0)) else hi
        out[k] = -r if np.signbit(v) else r
    return out.astype(dtype)


def assert_same(got, want):
    """Equal as values of the format (bit for bit), NaN where NaN."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w)), np.flatnonzero(np.isnan(g) != np.isnan(w))[:8]
    ok = ~np.isnan(w)
    bad = np.flatnonzero(got.view(np.uint8)[ok] != want.view(np.uint8)[ok])
    assert not len(bad), [(g[ok][i], w[ok][i]) for i in bad[:8]]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("wide", WIDE)
def test_every_fp8_value_widens_exactly(fmt, wide):
    x = array(ALL_BYTES.view(FORMATS[fmt]))
    got = cast(x, np.zeros(256, WIDE[wide]))
    want = ALL_BYTES.view(FORMATS[fmt]).astype(np.float64)
    assert np.array_equal(np.isnan(got.astype(np.float64)), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.array_equal(got.astype(np.float64)[ok], want[ok])
    assert np.array_equal(np.signbit(got.astype(np.float64)[ok]), np.signbit(want[ok]))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("rounding", ["rtne", "rtz"])
def test_every_f16_value_narrows_as_on_gpus(fmt, rounding):
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    got = cast(x, np.zeros(len(x), FORMATS[fmt]), rounding, dpus=3, tasklets=16)
    assert_same(got, oracle(x.astype(np.float64), FORMATS[fmt], rounding == "rtz"))


def test_saturation_and_infinities():
    x = np.float32([1e6, -1e6, np.inf, -np.inf, 500.0, 464.0, 463.9, np.nan])
    e4 = cast(x, np.zeros(8, ml_dtypes.float8_e4m3fn), "rtne").astype(np.float32)
    np.testing.assert_array_equal(e4[:7], [448, -448, 448, -448, 448, 448, 448])
    assert np.isnan(e4[7])
    e5 = cast(x, np.zeros(8, ml_dtypes.float8_e5m2), "rtz").astype(np.float32)
    np.testing.assert_array_equal(e5[:7], [57344, -57344, np.inf, -np.inf, 448, 448, 448])
    e5 = cast(x, np.zeros(8, ml_dtypes.float8_e5m2), "rtne").astype(np.float32)
    np.testing.assert_array_equal(e5[:4], [57344, -57344, 57344, -57344])


@settings(max_examples=20)
@given(fmt=st.sampled_from(list(FORMATS)), src=st.sampled_from(["fp32", "fp64", "bf16"]),
       rounding=st.sampled_from(["rtne", "rtz"]), data=st.data(), dpus=DPUS, tasklets=TASKLETS)
def test_wide_floats_narrow_as_on_gpus(fmt, src, rounding, data, dpus, tasklets):
    width = 64 if src == "fp64" else 32
    xs = data.draw(st.lists(st.floats(width=width) | st.floats(-600, 600, width=width)
                            | st.floats(-2.0 ** -5, 2.0 ** -5, width=width), min_size=1, max_size=200))
    x = np.array(xs, dtype=np.float64).astype(WIDE[src])
    got = cast(x, np.zeros(len(x), FORMATS[fmt]), rounding, dpus, tasklets)
    assert_same(got, oracle(x.astype(np.float64), FORMATS[fmt], rounding == "rtz"))


@pytest.mark.parametrize("src,dst", [(s, d) for s in FORMATS for d in FORMATS if s != d])
def test_fp8_to_fp8_rounds_once_and_saturates(src, dst):
    x = array(ALL_BYTES.view(FORMATS[src]))
    got = cast(x, np.zeros(256, FORMATS[dst]))
    assert_same(got, oracle(ALL_BYTES.view(FORMATS[src]).astype(np.float64), FORMATS[dst]))


@pytest.mark.parametrize("dtype", [ml_dtypes.float8_e4m3b11fnuz, ml_dtypes.float8_e4m3, ml_dtypes.float8_e3m4])
def test_an_fp8_array_with_no_triton_type_is_refused(dtype):
    with pytest.raises(ArgumentError, match="has no Triton element type"):
        cast(np.zeros(4, dtype), np.zeros(4, np.float32))


# ---- fp8e4b15 ---------------------------------------------------------------

def e4b15_value(b):
    """fp8e4b15 from its definition: 4 exponent bits biased by 15, 3 mantissa
    bits, subnormals, every pattern finite."""
    b = np.asarray(b, dtype=np.int64)
    e, m = (b >> 3) & 15, b & 7
    mag = np.where(e == 0, m / 8 * 2.0 ** -14, (1 + m / 8) * 2.0 ** (e - 15))
    return np.where(b & 0x80, -mag, mag)


def e4b15_encode(x, toward_zero=False):
    """NVIDIA's encoding: |x| clamped to 1.75 (NaN too), rounded half away from
    zero (or toward zero), sign kept."""
    vals = e4b15_value(np.arange(0x7F))                # 0 .. 1.75, increasing
    out = []
    for v in np.asarray(x, dtype=np.float64):
        a = 1.75 if np.isnan(v) else min(abs(v), 1.75)
        i = np.searchsorted(vals, a, side="right") - 1
        if not toward_zero and vals[i] != a and a - vals[i] >= vals[i + 1] - a:
            i += 1
        out.append(i | (0x80 if np.signbit(v) else 0))
    return np.array(out, dtype=np.uint8)


def test_every_fp8e4b15_value_widens_exactly():
    x = triton.reinterpret(array(ALL_BYTES.copy()), tl.float8e4b15)
    for dtype in (np.float32, np.float16, np.float64):
        got = cast(x, np.zeros(256, dtype)).astype(np.float64)
        np.testing.assert_array_equal(got, e4b15_value(ALL_BYTES))
        assert np.array_equal(np.signbit(got), ALL_BYTES >= 0x80)


@pytest.mark.parametrize("rounding", ["rtne", "rtz"])
def test_every_f16_value_encodes_into_fp8e4b15_as_nvidia(rounding):
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    out = np.zeros(len(x), np.uint8)
    cast(x, triton.reinterpret(array(out), tl.float8e4b15), rounding, dpus=3, tasklets=16)
    np.testing.assert_array_equal(out, e4b15_encode(x.astype(np.float64), rounding == "rtz"))


@settings(max_examples=10)
@given(xs=st.lists(st.floats(width=32) | st.floats(-2, 2, width=32), min_size=1, max_size=100),
       rounding=st.sampled_from(["rtne", "rtz"]))
def test_f32_encodes_into_fp8e4b15_as_from_its_value(xs, rounding):
    x = np.array(xs, dtype=np.float32)
    out = np.zeros(len(x), np.uint8)
    cast(x, triton.reinterpret(array(out), tl.float8e4b15), rounding)
    np.testing.assert_array_equal(out, e4b15_encode(x.astype(np.float64), rounding == "rtz"))


# ---- arithmetic on fp8 tiles ------------------------------------------------

@triton.jit
def abs_kernel(x_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, tl.abs(tl.load(x_ptr + offs)))


@pytest.mark.parametrize("fmt", FORMATS)
def test_abs_of_every_fp8_value(fmt):
    x = ALL_BYTES.view(FORMATS[fmt])
    out = np.zeros(256, FORMATS[fmt])
    abs_kernel[(1,)](array(x), out, BLOCK=256)
    assert_same(out, np.abs(x))


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    offs = r[:, None] * N + r[None, :]
    c = tl.dot(tl.load(a_ptr + offs), tl.load(b_ptr + offs), max_num_imprecise_acc=8)
    tl.store(c_ptr + offs, c)


@settings(max_examples=6)
@given(fmt=st.sampled_from(["fp8e4nv", "fp8e5"]), seed=st.integers(0, 2 ** 16), tasklets=TASKLETS)
def test_dot_of_fp8_tiles_sums_exact_products_in_f32(fmt, seed, tasklets):
    n = 16
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 4, (n, n)).astype(FORMATS[fmt])
    b = rng.normal(0, 4, (n, n)).astype(FORMATS[fmt])
    c = np.zeros((n, n), np.float32)
    dot_kernel[(1,)](array(a), array(b), c, N=n, num_tasklets=tasklets)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-6, atol=1e-6)


# ---- the conversion's IR ----------------------------------------------------

# As Triton 3.9 prints `x.to(tl.float8e5, fp_downcast_rounding="rtz")` and `x.to(tl.float8e4nv)`.
CAST_TTIR = """#loc = loc("k.py":6:1)
module {
  tt.func public @cast_kernel(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("x_ptr"(#loc)), %y_ptr: !tt.ptr<f8E5M2> {tt.divisibility = 16 : i32} loc("y_ptr"(#loc)), %z_ptr: !tt.ptr<f8E4M3FN> {tt.divisibility = 16 : i32} loc("z_ptr"(#loc))) attributes {noinline = false} {
    %offs = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32> loc(#loc1)
    %x = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>> loc(#loc1)
    %x_0 = tt.addptr %x, %offs : tensor<8x!tt.ptr<f32>>, tensor<8xi32> loc(#loc1)
    %x_1 = tt.load %x_0 : tensor<8x!tt.ptr<f32>> loc(#loc1)
    %0 = tt.splat %y_ptr : !tt.ptr<f8E5M2> -> tensor<8x!tt.ptr<f8E5M2>> loc(#loc1)
    %1 = tt.addptr %0, %offs : tensor<8x!tt.ptr<f8E5M2>>, tensor<8xi32> loc(#loc1)
    %2 = tt.fp_to_fp %x_1, rounding = rtz : tensor<8xf32> -> tensor<8xf8E5M2> loc(#loc1)
    tt.store %1, %2 : tensor<8x!tt.ptr<f8E5M2>> loc(#loc1)
    %3 = tt.splat %z_ptr : !tt.ptr<f8E4M3FN> -> tensor<8x!tt.ptr<f8E4M3FN>> loc(#loc1)
    %4 = tt.addptr %3, %offs : tensor<8x!tt.ptr<f8E4M3FN>>, tensor<8xi32> loc(#loc1)
    %5 = tt.fp_to_fp %x_1, rounding = rtne : tensor<8xf32> -> tensor<8xf8E4M3FN> loc(#loc1)
    tt.store %4, %5 : tensor<8x!tt.ptr<f8E4M3FN>> loc(#loc1)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc1 = loc("k.py":9:28)
"""


def test_fp_to_fp_becomes_truncf_with_rounding_and_saturation():
    module, _ = convert_ttir(CAST_TTIR)
    text = str(module)
    truncs = [line for line in text.splitlines() if "arith.truncf" in line]
    assert any("toward_zero" in t and "f8E5M2" in t and "edsl.saturate" not in t for t in truncs), truncs
    assert any("{edsl.saturate}" in t and "f8E4M3FN" in t and "toward_zero" not in t for t in truncs), truncs
    # fp8 values are bytes in memory: no LLVM load or store of an fp8 type
    assert not [line for line in text.splitlines() if "llvm.store" in line and "f8E" in line.split(":")[-1]]
