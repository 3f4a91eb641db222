"""Elementwise arith/math, where, casts and bitcasts against NumPy, over dtypes and ragged sizes."""
import importlib.util
import math

import numpy as np
import pytest
import triton
import triton.language as tl
from edsl.base.errors import CompileError
from triton.language.extra import libdevice
from triton.language.extra.cuda import libdevice as cuda_libdevice
from launch_strategies import strategies
from hypothesis import given, settings, strategies as st
import family_ir

DPUS, TASKLETS = strategies()

INT_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOAT_TYPES = [np.float16, np.float32, np.float64]


@triton.jit
def arith_kernel(x_ptr, y_ptr, add_ptr, mul_ptr, sub_ptr, div_ptr, rem_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    tl.store(add_ptr + offs, x + y, mask=m)
    tl.store(mul_ptr + offs, x * y, mask=m)
    tl.store(sub_ptr + offs, x - y, mask=m)
    tl.store(div_ptr + offs, x // y, mask=m)
    tl.store(rem_ptr + offs, x % y, mask=m)


def _int_reference(x, y):
    """Triton's integer semantics: wrap-around, C (truncating) division and remainder."""
    if np.issubdtype(x.dtype, np.signedinteger):
        big = np.array([abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
                        for a, b in zip(x.astype(object), y.astype(object))], dtype=object)
        div = big.astype(np.int64).astype(x.dtype) if len(x) else x.copy()
        rem = (x.astype(object) - big * y.astype(object)).astype(np.int64).astype(x.dtype) if len(x) else x.copy()
    else:
        div, rem = x // y, x % y
    return x + y, x * y, x - y, div, rem


@settings(max_examples=16, deadline=None)
@given(dtype=st.sampled_from(INT_TYPES), n=st.integers(0, 70), seed=st.integers(0, 2**16),
       dpus=DPUS, tasklets=TASKLETS)
def test_integer_arith(dtype, n, seed, dpus, tasklets):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    x = rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dtype)
    y = rng.integers(max(info.min, -50), min(info.max, 50), n, endpoint=True).astype(dtype)
    y[y == 0] = 3
    outs = [np.zeros(n, dtype) for _ in range(5)]
    arith_kernel[(triton.cdiv(n, 32),)](x, y, *outs, n, BLOCK=32, num_dpus=dpus, num_tasklets=tasklets)
    with np.errstate(over="ignore"):
        refs = _int_reference(x, y)
    for name, out, ref in zip(["add", "mul", "sub", "div", "rem"], outs, refs):
        np.testing.assert_array_equal(out, ref, err_msg=name)


@triton.jit
def float_kernel(x_ptr, y_ptr, add_ptr, mul_ptr, div_ptr, max_ptr, where_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    tl.store(add_ptr + offs, x + y, mask=m)
    tl.store(mul_ptr + offs, x * y, mask=m)
    tl.store(div_ptr + offs, x / y, mask=m)
    tl.store(max_ptr + offs, tl.maximum(x, y), mask=m)
    tl.store(where_ptr + offs, tl.where(x > y, x, -y), mask=m)


@settings(max_examples=10, deadline=None)
@given(dtype=st.sampled_from(FLOAT_TYPES), n=st.integers(0, 70), seed=st.integers(0, 2**16),
       dpus=DPUS, tasklets=TASKLETS)
def test_float_arith(dtype, n, seed, dpus, tasklets):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(dtype)
    y = (rng.standard_normal(n) + 3).astype(dtype)
    outs = [np.zeros(n, dtype) for _ in range(5)]
    float_kernel[(triton.cdiv(n, 16),)](x, y, *outs, n, BLOCK=16, num_dpus=dpus, num_tasklets=tasklets)
    refs = [x + y, x * y, x / y, np.maximum(x, y), np.where(x > y, x, -y)]
    for out, ref in zip(outs, refs):
        np.testing.assert_allclose(out, ref, rtol=2e-3 if dtype == np.float16 else 1e-6)


@triton.jit
def math_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    if FN == "exp":
        y = tl.exp(x)
    elif FN == "log":
        y = tl.log(tl.abs(x) + 1.0)
    elif FN == "sqrt":
        y = tl.sqrt(tl.abs(x))
    elif FN == "sin":
        y = tl.sin(x)
    elif FN == "cos":
        y = tl.cos(x)
    elif FN == "sigmoid":
        y = tl.sigmoid(x)
    elif FN == "floor":
        y = tl.floor(x)
    else:
        y = tl.abs(x)
    tl.store(out_ptr + offs, y, mask=m)


REFS = {"exp": np.exp, "log": lambda x: np.log(np.abs(x) + 1), "sqrt": lambda x: np.sqrt(np.abs(x)),
        "sin": np.sin, "cos": np.cos, "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "floor": np.floor,
        "abs": np.abs}


@pytest.mark.parametrize("tasklets", [1, 16])
@pytest.mark.parametrize("fn", sorted(REFS))
def test_math(fn, tasklets):
    x = np.linspace(-4, 4, 101).astype(np.float32)
    out = np.zeros_like(x)
    math_kernel[(4,)](x, out, x.size, FN=fn, BLOCK=32, num_dpus=3, num_tasklets=tasklets)
    np.testing.assert_allclose(out, REFS[fn](x), rtol=1e-5, atol=1e-6)


# tl.extra.libdevice's functions of the C math library: (arity, NumPy reference, domain).
LIBDEVICE = {
    "abs": (1, np.abs, (-9, 9)), "acos": (1, np.arccos, (-1, 1)), "acosh": (1, np.arccosh, (1, 50)), "asin": (1, np.arcsin, (-1, 1)),
    "asinh": (1, np.arcsinh, (-50, 50)), "atan": (1, np.arctan, (-50, 50)), "atan2": (2, np.arctan2, (-5, 5)),
    "atanh": (1, np.arctanh, (-0.99, 0.99)), "cbrt": (1, np.cbrt, (-50, 50)), "ceil": (1, np.ceil, (-9, 9)),
    "copysign": (2, np.copysign, (-9, 9)), "cos": (1, np.cos, (-9, 9)), "cosh": (1, np.cosh, (-9, 9)),
    "erf": (1, np.vectorize(math.erf), (-4, 4)), "erfc": (1, np.vectorize(math.erfc), (-4, 4)),
    "exp": (1, np.exp, (-20, 20)), "exp2": (1, np.exp2, (-20, 20)), "expm1": (1, np.expm1, (-5, 5)),
    "floor": (1, np.floor, (-9, 9)), "fma": (3, lambda x, y, z: x * y + z, (-9, 9)),
    "fmod": (2, np.fmod, (-9, 9)), "log": (1, np.log, (0.01, 100)), "log10": (1, np.log10, (0.01, 100)),
    "log1p": (1, np.log1p, (-0.9, 100)), "log2": (1, np.log2, (0.01, 100)), "pow": (2, np.power, (0.01, 9)),
    "rint": (1, np.rint, (-9, 9)), "round": (1, lambda x: np.where(x - np.trunc(x) == np.copysign(0.5, x),
                                                                  x + np.copysign(0.5, x), np.rint(x)), (-9, 9)), "sin": (1, np.sin, (-9, 9)), "sinh": (1, np.sinh, (-9, 9)),
    "sqrt": (1, np.sqrt, (0, 100)), "tan": (1, np.tan, (-1.5, 1.5)), "tanh": (1, np.tanh, (-9, 9)),
    "trunc": (1, np.trunc, (-9, 9)),
}


@triton.jit
def libdevice_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, FN: tl.constexpr, ARITY: tl.constexpr,
                     BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if ARITY == 1:
        r = FN(x)
    elif ARITY == 2:
        r = FN(x, tl.load(y_ptr + offs, mask=m))
    else:
        r = FN(x, tl.load(y_ptr + offs, mask=m), tl.load(z_ptr + offs, mask=m))
    tl.store(out_ptr + offs, r, mask=m)


@settings(max_examples=3, deadline=None)
@given(dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16), tasklets=TASKLETS)
@pytest.mark.parametrize("fn", sorted(LIBDEVICE))
def test_libdevice_math_functions(fn, dtype, seed, tasklets):
    """The functions of tl.extra.libdevice that are the C math library's, as
    NVIDIA's libdevice computes them (within a few ulps)."""
    arity, ref, (lo, hi) = LIBDEVICE[fn]
    rng = np.random.default_rng(seed)
    args = [rng.uniform(lo, hi, 50).astype(dtype) for _ in range(3)]
    if fn in ("rint", "round"):                     # ties: to even / away from zero
        args[0][:6] = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]
    out = np.zeros(50, dtype)
    libdevice_kernel[(1,)](*args, out, 50, FN=getattr(cuda_libdevice, fn), ARITY=arity, BLOCK=64,
                           num_tasklets=tasklets)
    expected = ref(*[a.astype(np.float64) for a in args[:arity]])
    tol = 4 * np.finfo(dtype).eps
    np.testing.assert_allclose(out, expected.astype(dtype), rtol=tol, atol=tol)


@triton.jit
def rint_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, libdevice.rint(tl.load(x_ptr + offs)))


@triton.jit
def rcp64h_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, libdevice.rcp64h(tl.load(x_ptr + offs)))


def test_libdevice_as_imported_by_gpu_kernels():
    """`from triton.language.extra import libdevice`, as GPU kernels write it;
    a libdevice function the DPU backend does not compute is an error at its line."""
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.7, -3.7], np.float32)
    out = np.zeros_like(x)
    rint_kernel[(1,)](x, out, BLOCK=8)
    np.testing.assert_array_equal(out, np.rint(x))
    x64, out64 = x.astype(np.float64), np.zeros(8)
    with pytest.raises(CompileError, match="extern function '__nv_rcp64h' is not supported") as err:
        rcp64h_kernel[(1,)](x64, out64, BLOCK=8)
    assert err.value.loc.filename == __file__
    assert err.value.loc.lineno == rcp64h_kernel.fn.__code__.co_firstlineno + 3


@triton.jit
def unary_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, FN(tl.load(x_ptr + offs, mask=m)), mask=m)


def _bits(x):
    return np.array([bin(int(v) & (1 << (8 * x.itemsize)) - 1).count("1") for v in x], np.int32)


def _leading_zeros(x):
    width = 8 * x.itemsize
    return np.array([width - (int(v) & (1 << width) - 1).bit_length() for v in x], np.int32)


# libdevice's integer and classification functions: (input dtype, NumPy reference).
LIBDEVICE_INT = {
    ("clz", np.int32): _leading_zeros, ("clz", np.int64): _leading_zeros,
    ("popc", np.int32): _bits, ("popc", np.int64): _bits,
    ("isinf", np.float32): lambda x: np.isinf(x).astype(np.int32),
    ("isnan", np.float64): lambda x: np.isnan(x).astype(np.int32),
    ("finitef", np.float32): lambda x: np.isfinite(x).astype(np.int32),
    ("isfinited", np.float64): lambda x: np.isfinite(x).astype(np.int32),
}


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**16), tasklets=TASKLETS)
@pytest.mark.parametrize("fn, dtype", list(LIBDEVICE_INT), ids=[f"{f}-{np.dtype(d)}" for f, d in LIBDEVICE_INT])
def test_libdevice_integer_and_classification_functions(fn, dtype, seed, tasklets):
    ref = LIBDEVICE_INT[fn, dtype]
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, 40, dtype=dtype, endpoint=True)
        x[:4] = [0, -1, 1, info.min]
    else:
        x = rng.standard_normal(40).astype(dtype)
        x[:6] = [np.inf, -np.inf, np.nan, -0.0, np.finfo(dtype).max, np.finfo(dtype).tiny]
    out = np.full(40, -7, np.int32)
    unary_kernel[(1,)](x, out, 40, FN=getattr(cuda_libdevice, fn), BLOCK=64, num_tasklets=tasklets)
    np.testing.assert_array_equal(out, ref(x))


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the reference is torch.special")
@pytest.mark.parametrize("fn", ["j0", "j1", "y0", "y1"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_libdevice_bessel_functions(fn, dtype):
    """Bessel functions of the first and second kind: libm's (j0, j0f, ...)."""
    import torch
    x = np.random.default_rng(5).uniform(0.1, 30, 64).astype(dtype)
    out = np.zeros_like(x)
    unary_kernel[(1,)](x, out, 64, FN=getattr(cuda_libdevice, fn), BLOCK=64)
    expected = getattr(torch.special, f"bessel_{fn}")(torch.from_numpy(x.astype(np.float64))).numpy()
    # (absolute: the functions are O(1) and have zeros; torch's and libm's
    # float64 ones agree within 1e-7 there)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-5 if dtype == np.float32 else 1e-7)


def test_exp_is_within_one_ulp_everywhere():
    """tl.exp on f32 is computed inline (vectorizable): within 1 ulp of the
    correctly rounded value, with overflow, underflow and specials as expected."""
    x = np.concatenate([np.linspace(-110, 95, 20001, dtype=np.float32),
                        np.array([np.inf, -np.inf, np.nan, 0, -0.0, 88.72, 88.73, -87.3, -103.9],
                                 np.float32)])
    out = np.zeros_like(x)
    math_kernel[(triton.cdiv(x.size, 1024),)](x, out, x.size, FN="exp", BLOCK=1024)
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64)).astype(np.float32)
    normal = np.isfinite(ref) & (ref >= np.finfo(np.float32).tiny)
    ulps = np.abs(out.view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64))
    assert ulps[normal].max() <= 1
    small = np.isfinite(x) & ~normal & np.isfinite(ref)
    assert np.abs(out[small] - ref[small]).max() <= 2e-45
    np.testing.assert_array_equal(out[-9:-4], [np.inf, 0, np.nan, 1, 1])


@triton.jit
def cast_kernel(x_ptr, i_ptr, h_ptr, b_ptr, bits_ptr, u8_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(i_ptr + offs, x.to(tl.int32), mask=m)
    tl.store(h_ptr + offs, x.to(tl.float16), mask=m)
    tl.store(b_ptr + offs, x.to(tl.bfloat16).to(tl.float32), mask=m)
    tl.store(bits_ptr + offs, x.to(tl.int32, bitcast=True), mask=m)
    tl.store(u8_ptr + offs, (x > 0).to(tl.uint8), mask=m)


def _bf16_round(x):
    raw = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    raw = (raw + 0x7FFF + ((raw >> 16) & 1)) & 0xFFFF0000
    return raw.astype(np.uint32).view(np.float32)


@settings(max_examples=8, deadline=None)
@given(n=st.integers(0, 50), seed=st.integers(0, 2**16), dpus=DPUS, tasklets=TASKLETS)
def test_casts(n, seed, dpus, tasklets):
    x = (np.random.default_rng(seed).standard_normal(n) * 100).astype(np.float32)
    outs = [np.zeros(n, np.int32), np.zeros(n, np.float16), np.zeros(n, np.float32),
            np.zeros(n, np.int32), np.zeros(n, np.uint8)]
    cast_kernel[(triton.cdiv(n, 16),)](x, *outs, n, BLOCK=16, num_dpus=dpus, num_tasklets=tasklets)
    np.testing.assert_array_equal(outs[0], x.astype(np.int32))
    np.testing.assert_array_equal(outs[1], x.astype(np.float16))
    np.testing.assert_array_equal(outs[2], _bf16_round(x))
    np.testing.assert_array_equal(outs[3], x.view(np.int32))
    np.testing.assert_array_equal(outs[4], (x > 0).astype(np.uint8))


# --- the family's IR on the golden corpus (family_ir) ---------------------------------------

ELEMENTWISE_OPS = {"math.absf", "math.exp", "math.exp2", "math.log", "math.log2", "math.sqrt", "math.rsqrt",
                   "math.sin", "math.cos", "math.tanh", "math.erf", "math.floor", "math.ceil", "math.fma",
                   "tt.fp_to_fp", "tt.bitcast", "tt.clampf", "tt.extern_elementwise"}


def test_corpus_elementwise_ir_at_1_and_4_tasklets_and_under_a_wram_limit():
    """The math ops of the TTIR stay math ops (the pipeline lowers them)."""
    assert family_ir.check_family(ELEMENTWISE_OPS, lambda names: sorted(n for n in names if n.startswith("math.")))
