"""`tl.dot_scaled` with nvfp4 operands on the dpu backend: e2m1 values packed
two a byte (along K, or along M/N), scaled by fp8 e4m3 values, one scale
per group of 16 (or 32) values of K. Triton's GPU decomposition converts
such a scale into the compute type (exact) and multiplies: the product of an
e2m1 value and an e4m3 scale is exact in bf16 and f16, and so is the f64 sum
the dot rounds once, so the results are checked bit for bit against NumPy
(ml_dtypes decoding e2m1 and e4m3); in the model and in an exported program."""
import pathlib
import sys

import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl
from triton.language.semantic import TritonSemantic
from hypothesis import given, settings, strategies as st

from mlir import ir

from edsl.backend.convert import convert_ttir
from edsl.backend.convert import new_context
from edsl.backend.ttir_reader import read_ttir
from edsl.base.errors import CompileError
from edsl.export.printer import print_module
from launch_strategies import strategies

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "export"))
from export_helpers import export_and_run, needs_cc, output, run_on_model  # noqa: E402

DPUS, TASKLETS = strategies()
E4M3 = ml_dtypes.float8_e4m3fn
HALF = {"bf16": ml_dtypes.bfloat16, "fp16": np.float16}


@triton.jit
def nvfp4_kernel(a_ptr, a_scale_ptr, b_ptr, b_scale_ptr, c_ptr, out_ptr, BM: tl.constexpr, N: tl.constexpr,
                 K: tl.constexpr, VEC: tl.constexpr, TYPE_B: tl.constexpr, A_SCALED: tl.constexpr,
                 B_SCALED: tl.constexpr, A_KPACK: tl.constexpr, B_KPACK: tl.constexpr):
    """Rows pid*BM.. of `c + (a * a_scale) @ (b * b_scale)`; a is e2m1."""
    pid = tl.program_id(0)
    AM: tl.constexpr = BM if A_KPACK else BM // 2
    AK: tl.constexpr = K // 2 if A_KPACK else K
    BK: tl.constexpr = K // 2 if TYPE_B == "e2m1" and B_KPACK else K
    BN: tl.constexpr = N // 2 if TYPE_B == "e2m1" and not B_KPACK else N
    a = tl.load(a_ptr + (pid * AM + tl.arange(0, AM))[:, None] * AK + tl.arange(0, AK)[None, :])
    b = tl.load(b_ptr + tl.arange(0, BK)[:, None] * BN + tl.arange(0, BN)[None, :])
    SK: tl.constexpr = K // VEC
    a_scale = None
    b_scale = None
    if A_SCALED:
        a_scale = tl.load(a_scale_ptr + (pid * BM + tl.arange(0, BM))[:, None] * SK + tl.arange(0, SK)[None, :])
        if a_scale_ptr.dtype.element_ty == tl.uint8:       # (the bytes of e4m3 values)
            a_scale = a_scale.to(tl.float8e4nv, bitcast=True)
    if B_SCALED:
        b_scale = tl.load(b_scale_ptr + tl.arange(0, N)[:, None] * SK + tl.arange(0, SK)[None, :])
        if b_scale_ptr.dtype.element_ty == tl.uint8:
            b_scale = b_scale.to(tl.float8e4nv, bitcast=True)
    rows = (pid * BM + tl.arange(0, BM))[:, None] * N + tl.arange(0, N)[None, :]
    c = tl.dot_scaled(a, a_scale, "e2m1", b, b_scale, TYPE_B, tl.load(c_ptr + rows),
                      lhs_k_pack=A_KPACK, rhs_k_pack=B_KPACK)
    tl.store(out_ptr + rows, c)


def unpack_e2m1(raw, axis):
    """Packed e2m1 bytes as float64, two values a byte along `axis`, the low nibble first."""
    nibbles = np.stack([raw & 15, raw >> 4], axis=axis + 1)
    shape = [d * (2 if k == axis else 1) for k, d in enumerate(raw.shape)]
    return nibbles.reshape(shape).view(ml_dtypes.float4_e2m1fn).astype(np.float64)


def scales(s, rows_k):
    """A scale matrix (rows, K / group) of e4m3 as float64, repeated over its groups of K."""
    return np.repeat(s.astype(np.float64), rows_k // s.shape[1], axis=1)


def reference(a, a_scale, a_kpack, b, b_fmt, b_scale, b_kpack, c):
    """`c + (a * a_scale) @ (b * b_scale)` in float64 (exact for these
    operands), rounded once to f32."""
    x = unpack_e2m1(a, 1 if a_kpack else 0)
    y = unpack_e2m1(b, 0 if b_kpack else 1) if b_fmt == "e2m1" else b.astype(np.float64)
    if a_scale is not None:
        x = x * scales(a_scale, x.shape[1])
    if b_scale is not None:
        y = y * scales(b_scale, y.shape[0]).T
    with np.errstate(invalid="ignore"):
        return (c.astype(np.float64) + x @ y).astype(np.float32)


def e4m3_scales(rng, shape, nan):
    """Random e4m3 scales: every finite byte, positive and negative; with `nan`, some NaNs."""
    raw = rng.integers(0, 256, shape, dtype=np.uint8)
    raw[(raw & 0x7F) == 0x7F] &= 0xF0
    if nan:
        raw[rng.random(shape) < 0.05] = 0x7F
    return raw.view(E4M3)


def operands(rng, M, N, K, vec, b_fmt, a_scaled, b_scaled, a_kpack, b_kpack, nan=False):
    a = rng.integers(0, 256, (M, K // 2) if a_kpack else (M // 2, K), dtype=np.uint8)
    if b_fmt == "e2m1":
        b = rng.integers(0, 256, (K // 2, N) if b_kpack else (K, N // 2), dtype=np.uint8)
    else:               # multiples of 1/16 in [-8, 8]: exact in bf16 and f16
        b = (rng.integers(-128, 129, (K, N)) / 16).astype(HALF[b_fmt])
    a_scale = e4m3_scales(rng, (M, K // vec), nan) if a_scaled else None
    b_scale = e4m3_scales(rng, (N, K // vec), nan) if b_scaled else None
    c = (rng.integers(-4096, 4097, (M, N)) / 16).astype(np.float32)
    return a, a_scale, b, b_scale, c


def launch(a, a_scale, b, b_fmt, b_scale, c, M, N, K, vec, bm, a_kpack, b_kpack, dpus=1, tasklets=1):
    out = np.zeros_like(c)
    dummy = np.zeros(1, E4M3)
    nvfp4_kernel[(M // bm,)](a, dummy if a_scale is None else a_scale, b, dummy if b_scale is None else b_scale,
                             c, out, bm, N, K, vec, b_fmt, a_scale is not None, b_scale is not None, a_kpack,
                             b_kpack, num_dpus=dpus, num_tasklets=tasklets)
    return out


# Groups of e4m3 scales: Triton deduces them from the shapes since its
# `deduce_scale_factor`; before (3.6) its front end fixes them at 16.
E4M3_GROUPS = [16, 32] if hasattr(TritonSemantic, "deduce_scale_factor") else [16]


@settings(max_examples=20)
@given(vec=st.sampled_from(E4M3_GROUPS), b_fmt=st.sampled_from(["e2m1", "e2m1", "bf16", "fp16"]),
       scaled=st.sampled_from([(True, True), (True, False), (False, True)]), a_kpack=st.booleans(),
       b_kpack=st.booleans(), nan=st.booleans(), seed=st.integers(0, 2 ** 16), dpus=DPUS, tasklets=TASKLETS)
def test_nvfp4_dot_scaled_is_exact(vec, b_fmt, scaled, a_kpack, b_kpack, nan, seed, dpus, tasklets):
    M, N, K, bm = 32, 16, 64, 16
    b_kpack = b_kpack or b_fmt != "e2m1"
    a_scaled, b_scaled = scaled
    b_scaled = b_scaled and b_fmt == "e2m1"       # (a bf16 or fp16 operand has no scale)
    rng = np.random.default_rng(seed)
    a, a_scale, b, b_scale, c = operands(rng, M, N, K, vec, b_fmt, a_scaled, b_scaled, a_kpack, b_kpack, nan)
    out = launch(a, a_scale, b, b_fmt, b_scale, c, M, N, K, vec, bm, a_kpack, b_kpack, dpus, tasklets)
    np.testing.assert_array_equal(out, reference(a, a_scale, a_kpack, b, b_fmt, b_scale, b_kpack, c))


def test_every_e4m3_byte_scales_by_its_value():
    """Row m of ones scaled by the e4m3 byte m sums 16 of them: 16 * that
    byte's value (NaN for 0x7F and 0xFF), subnormals and negatives included."""
    M, N, K = 256, 16, 16
    a = np.full((M, K // 2), 0x22, np.uint8)               # e2m1 1.0, twice a byte
    b = np.full((K // 2, N), 0x22, np.uint8)
    a_scale = np.arange(256, dtype=np.uint8).reshape(M, 1).view(E4M3)
    c = np.zeros((M, N), np.float32)
    out = launch(a, a_scale, b, "e2m1", None, c, M, N, K, 16, 16, True, True)
    want = np.broadcast_to(16 * np.arange(256, dtype=np.uint8).view(E4M3).astype(np.float32)[:, None], (M, N))
    np.testing.assert_array_equal(out, want)


# As Triton 3.9 prints `tl.dot_scaled(a, a_scale, "e2m1", b, b_scale, "e2m1")` with e4m3 scales.
NVFP4_TTIR = """#loc = loc("k.py":1:1)
module {
  tt.func public @k(%a_ptr: !tt.ptr<i8> loc(#loc), %sa_ptr: !tt.ptr<f8E4M3FN> loc(#loc), %b_ptr: !tt.ptr<i8> loc(#loc), %sb_ptr: !tt.ptr<f8E4M3FN> loc(#loc), %o_ptr: !tt.ptr<f32> loc(#loc)) attributes {noinline = false} {
    %c = arith.constant dense<0.000000e+00> : tensor<16x16xf32> loc(#loc1)
    %a0 = tt.splat %a_ptr : !tt.ptr<i8> -> tensor<16x32x!tt.ptr<i8>> loc(#loc1)
    %a = tt.load %a0 : tensor<16x32x!tt.ptr<i8>> loc(#loc1)
    %b0 = tt.splat %b_ptr : !tt.ptr<i8> -> tensor<32x16x!tt.ptr<i8>> loc(#loc1)
    %b = tt.load %b0 : tensor<32x16x!tt.ptr<i8>> loc(#loc1)
    %sa0 = tt.splat %sa_ptr : !tt.ptr<f8E4M3FN> -> tensor<16x4x!tt.ptr<f8E4M3FN>> loc(#loc1)
    %sa = tt.load %sa0 : tensor<16x4x!tt.ptr<f8E4M3FN>> loc(#loc1)
    %sb0 = tt.splat %sb_ptr : !tt.ptr<f8E4M3FN> -> tensor<16x4x!tt.ptr<f8E4M3FN>> loc(#loc1)
    %sb = tt.load %sb0 : tensor<16x4x!tt.ptr<f8E4M3FN>> loc(#loc1)
    %d = tt.dot_scaled %a scale %sa, %b scale %sb, %c lhs = e2m1 rhs = e2m1 {fastMath = false} : tensor<16x32xi8>, tensor<16x4xf8E4M3FN> * tensor<32x16xi8>, tensor<16x4xf8E4M3FN> -> tensor<16x16xf32> loc(#loc1)
    %o0 = tt.splat %o_ptr : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>> loc(#loc1)
    tt.store %o0, %d : tensor<16x16x!tt.ptr<f32>> loc(#loc1)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc1 = loc("k.py":4:9)
"""


def _dot_scaled_op(text: str):
    """(The module the reader reads from a TTIR text, its `tt.dot_scaled` op)."""
    module = read_ttir(text, new_context())
    found = []
    module.operation.walk(lambda op: (found.append(op) if op.name == "tt.dot_scaled" else None,
                                      ir.WalkResult.ADVANCE)[1])
    return module, found[0]


def test_e4m3_scales_are_converted_as_floats():
    """The reader takes both f8E4M3FN scales; the conversion extends them to
    the compute type (bf16) rather than reading their bytes as e8m0."""
    _module, op = _dot_scaled_op(NVFP4_TTIR)
    assert [str(v.type) for v in op.operands][3:] == ["tensor<16x4xf8E4M3FN>"] * 2
    assert list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])) == [1, 1, 1, 1, 1]
    text = str(convert_ttir(NVFP4_TTIR)[0])
    assert "tt.dot_scaled" not in text
    assert "arith.extf" in text and "f8E4M3FN to bf16" in text


NIBBLE = """module {
  llvm.func @nibble(%a: i8) -> i32 {
    %n = llvm.trunc %a : i8 to i4
    %r = llvm.zext %n : i4 to i32
    llvm.return %r : i32
  }
  llvm.func @sum(%a: i8) -> i4 {
    %n = llvm.trunc %a : i8 to i4
    %r = llvm.add %n, %n : i4
    llvm.return %r : i4
  }
}"""


def test_the_c_printer_takes_an_e2m1_nibble_and_nothing_more():
    """An e2m1 nibble (i8 -> i4 -> i32) is printed as a masked byte; other
    arithmetic on an integer narrower than a byte is refused."""
    module = ir.Module.parse(NIBBLE, ir.Context())
    text = "\n".join(print_module(module, ["nibble"]).functions)
    assert "& 15u" in text and "uint8_t" in text
    with pytest.raises(CompileError, match="narrower than a byte.*llvm.add"):
        print_module(module, ["sum"])


@needs_cc
def test_nvfp4_dot_scaled_exports_and_gives_the_models_results(tmp_path):
    """The exported program (scales bitcast from bytes to e4m3 in the kernel)
    gives the model's results, which are NumPy's."""
    M, N, K, vec, bm = 32, 16, 64, 16, 16
    rng = np.random.default_rng(7)
    a, a_scale, b, b_scale, c = operands(rng, M, N, K, vec, "e2m1", True, True, True, True, nan=True)
    out = np.zeros_like(c)
    # The scales as their bytes (the exporter takes no fp8 arrays); the kernel bitcasts them.
    args = [a, a_scale.view(np.uint8), b, b_scale.view(np.uint8), c, out]
    constants = dict(BM=bm, N=N, K=K, VEC=vec, TYPE_B="e2m1", A_SCALED=True, B_SCALED=True, A_KPACK=True,
                     B_KPACK=True)
    folder = tmp_path / "project"
    export_and_run(folder, nvfp4_kernel, args, constants, (M // bm,), dpus=1, tasklets=2)
    model = run_on_model(nvfp4_kernel, args, constants, (M // bm,), dpus=1, tasklets=2)[5]
    np.testing.assert_array_equal(output(folder, "out_ptr", model), model)
    np.testing.assert_array_equal(model, reference(a, a_scale, True, b, "e2m1", b_scale, True, c))
