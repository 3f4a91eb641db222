"""`tl.dot_scaled` on the dpu backend: the reader's form of `tt.dot_scaled`
(from the TTIR Triton prints), and the results against NumPy computing
Triton's definition (its GPU backends' decomposition): operands decoded into
bf16 (f16 when one is fp16), e2m1 packed two a byte, low nibble first, times
their e8m0 scales 2**(s - 127) in that type (255: NaN), summed in f32."""
import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st

from edsl.backend import array
from edsl.backend.convert import convert_ttir

from launch_strategies import strategies

DPUS, TASKLETS = strategies()
FP8 = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


@triton.jit
def scaled_kernel(a_ptr, a_scale_ptr, b_ptr, b_scale_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr,
                  K: tl.constexpr, TYPE_A: tl.constexpr, TYPE_B: tl.constexpr, A_SCALED: tl.constexpr,
                  B_SCALED: tl.constexpr, A_KPACK: tl.constexpr):
    KA: tl.constexpr = K // 2 if TYPE_A == "e2m1" and A_KPACK else K
    MA: tl.constexpr = M // 2 if TYPE_A == "e2m1" and not A_KPACK else M
    KB: tl.constexpr = K // 2 if TYPE_B == "e2m1" else K
    a = tl.load(a_ptr + tl.arange(0, MA)[:, None] * KA + tl.arange(0, KA)[None, :])
    b = tl.load(b_ptr + tl.arange(0, KB)[:, None] * N + tl.arange(0, N)[None, :])
    SK: tl.constexpr = K // 32
    a_scale = None
    b_scale = None
    if A_SCALED:
        a_scale = tl.load(a_scale_ptr + tl.arange(0, M)[:, None] * SK + tl.arange(0, SK)[None, :])
    if B_SCALED:
        b_scale = tl.load(b_scale_ptr + tl.arange(0, N)[:, None] * SK + tl.arange(0, SK)[None, :])
    c = tl.dot_scaled(a, a_scale, TYPE_A, b, b_scale, TYPE_B, lhs_k_pack=A_KPACK)
    tl.store(out_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


def decode(raw, fmt, compute, packed_axis):
    """Operand values (float64) of the raw data: e2m1 unpacked along `packed_axis`."""
    if fmt == "e2m1":
        lo, hi = E2M1[raw & 15], E2M1[raw >> 4]
        return np.stack([lo, hi], axis=packed_axis + 1).reshape(
            [d * (2 if k == packed_axis else 1) for k, d in enumerate(raw.shape)])
    if fmt in FP8:
        return raw.view(FP8[fmt]).astype(np.float64)
    return raw.astype(compute).astype(np.float64)


def reference(a, a_fmt, a_scale, b, b_fmt, b_scale, a_kpack=True):
    compute = np.float16 if "fp16" in (a_fmt, b_fmt) else ml_dtypes.bfloat16
    x = decode(a, a_fmt, compute, 1 if a_kpack else 0).astype(compute).astype(np.float64)
    y = decode(b, b_fmt, compute, 0).astype(compute).astype(np.float64)

    def scaled(v, s, k_axis):
        s = s.astype(np.int64)
        if compute is ml_dtypes.bfloat16:            # the bits s << 7 of a bf16: 0 gives 0
            factor = np.where(s == 0, 0.0, 2.0 ** (s - 127))
        else:                                        # 2**(s - 127) as f32, rounded to f16
            with np.errstate(over="ignore"):
                factor = np.ldexp(np.float32(1), s - 127).astype(np.float16).astype(np.float64)
        factor = np.repeat(factor, v.shape[k_axis] // s.shape[1], axis=1)
        if k_axis == 0:
            factor, s = factor.T, np.repeat(s, v.shape[0] // s.shape[1], axis=1).T
        else:
            s = np.repeat(s, v.shape[1] // s.shape[1], axis=1)
        with np.errstate(invalid="ignore", over="ignore"):
            out = (v * factor).astype(compute).astype(np.float64)
        return np.where(s == 255, np.nan, out)
    if a_scale is not None:
        x = scaled(x, a_scale, 1)
    if b_scale is not None:
        y = scaled(y, b_scale, 0)
    with np.errstate(invalid="ignore", over="ignore"):
        return x @ y


def _operand(rng, fmt, shape):
    if fmt in ("bf16", "fp16"):
        return rng.normal(0, 2, shape).astype(ml_dtypes.bfloat16 if fmt == "bf16" else np.float16)
    raw = rng.integers(0, 256, shape, dtype=np.uint8)
    if fmt in FP8:          # finite values (as Triton's test): NaN and infinities replaced
        vals = raw.view(FP8[fmt]).astype(np.float64)
        raw[~np.isfinite(vals)] &= 0x83
    return raw


@settings(max_examples=24)
@given(mx=st.sampled_from(["e2m1", "e4m3", "e5m2"]), normal=st.sampled_from(["e4m3", "e5m2", "bf16", "fp16"]),
       rhs_scaled=st.booleans(), a_kpack=st.booleans(), seed=st.integers(0, 2 ** 16),
       nan_scale=st.booleans(), tasklets=TASKLETS)
def test_dot_scaled_matches_the_decomposition(mx, normal, rhs_scaled, a_kpack, seed, nan_scale, tasklets):
    M, N, K = 16, 16, 64
    rng = np.random.default_rng(seed)
    a_fmt, b_fmt = (normal, mx) if rhs_scaled else (mx, normal)
    a_kpack = a_kpack or a_fmt != "e2m1"
    a_shape = (M, K // 2) if a_fmt == "e2m1" and a_kpack else (M // 2, K) if a_fmt == "e2m1" else (M, K)
    a = _operand(rng, a_fmt, a_shape)
    b = _operand(rng, b_fmt, (K // 2, N) if b_fmt == "e2m1" else (K, N))
    lo, hi = (124, 131) if "fp16" in (a_fmt, b_fmt) else (0, 142)
    scale = rng.integers(lo, hi + 1, (M if not rhs_scaled else N, K // 32), dtype=np.uint8)
    if nan_scale:
        scale[1, 0] = 255
    out = np.zeros((M, N), np.float32)
    dummy = np.zeros(1, np.uint8)
    scaled_kernel[(1,)](array(a), dummy if rhs_scaled else scale, array(b), scale if rhs_scaled else dummy,
                        out, M, N, K, a_fmt, b_fmt, not rhs_scaled, rhs_scaled, a_kpack, num_tasklets=tasklets)
    want = reference(a, a_fmt, None if rhs_scaled else scale, b, b_fmt, scale if rhs_scaled else None, a_kpack)
    finite = np.abs(want[np.isfinite(want)])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5 * max(1.0, finite.max(initial=0)), equal_nan=True)


# As Triton 3.9 prints `tl.dot_scaled(a, a_scale, "e2m1", b, None, "bf16")`.
SCALED_TTIR = """#loc = loc("k.py":1:1)
module {
  tt.func public @k(%a_ptr: !tt.ptr<i8> loc(#loc), %s_ptr: !tt.ptr<i8> loc(#loc), %b_ptr: !tt.ptr<bf16> loc(#loc), %o_ptr: !tt.ptr<f32> loc(#loc)) attributes {noinline = false} {
    %c = arith.constant dense<0.000000e+00> : tensor<32x32xf32> loc(#loc1)
    %a0 = tt.splat %a_ptr : !tt.ptr<i8> -> tensor<32x32x!tt.ptr<i8>> loc(#loc1)
    %a = tt.load %a0 : tensor<32x32x!tt.ptr<i8>> loc(#loc1)
    %b0 = tt.splat %b_ptr : !tt.ptr<bf16> -> tensor<64x32x!tt.ptr<bf16>> loc(#loc1)
    %b = tt.load %b0 : tensor<64x32x!tt.ptr<bf16>> loc(#loc1)
    %s0 = tt.splat %s_ptr : !tt.ptr<i8> -> tensor<32x2x!tt.ptr<i8>> loc(#loc1)
    %s = tt.load %s0 : tensor<32x2x!tt.ptr<i8>> loc(#loc1)
    %d = tt.dot_scaled %a scale %s, %b, %c lhs = e2m1 rhs = bf16 {fastMath = false} : tensor<32x32xi8>, tensor<32x2xi8> * tensor<64x32xbf16> -> tensor<32x32xf32> loc(#loc1)
    %o0 = tt.splat %o_ptr : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>> loc(#loc1)
    tt.store %o0, %d : tensor<32x32x!tt.ptr<f32>> loc(#loc1)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc1 = loc("k.py":4:9)
"""


def test_dot_scaled_is_read_in_operand_order_and_decomposed():
    from mlir import ir
    from edsl.backend.convert import new_context
    from edsl.backend.ttir_reader import read_ttir
    found, module = [], read_ttir(SCALED_TTIR, new_context())
    module.operation.walk(
        lambda op: (found.append(op) if op.name == "tt.dot_scaled" else None, ir.WalkResult.ADVANCE)[1])
    op = found[0]
    assert [str(v.type) for v in op.operands] == ["tensor<32x32xi8>", "tensor<64x32xbf16>",
                                                  "tensor<32x32xf32>", "tensor<32x2xi8>"]
    assert list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])) == [1, 1, 1, 1, 0]
    assert [ir.StringAttr(op.attributes[k]).value for k in ("a_elem_type", "b_elem_type")] == ["e2m1", "bf16"]
    text = str(convert_ttir(SCALED_TTIR)[0])
    assert "tt.dot_scaled" not in text
    assert "f4E2M1FN" in text and "arith.mulf" in text and "bf16" in text
