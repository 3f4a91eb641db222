"""The soft-float expansion (edsl.lowering.floats): every conversion between
float formats, and from integers, computed by integer code in the compiled
program, checked against ml_dtypes and against an oracle that rounds by
looking the value up among all finite values of the format."""
from __future__ import annotations

import bisect
import ctypes
import functools
import math
from fractions import Fraction

import ml_dtypes  # noqa: F401  (the reference dtypes)
import numpy as np
import pytest
from hypothesis import given, strategies as st
from mlir import ir
from mlir.execution_engine import ExecutionEngine

from edsl.target import dtypes
from edsl.lowering import DEFAULT_PIPELINE, run_pipeline, to_llvm_ir
from edsl.lowering.floats import SATURATE_ATTR

SOFT = [s for s in dtypes.SCALARS if s.is_float and s.mlir not in dtypes.NATIVE_FLOATS]
ENCODABLE = [s for s in SOFT if s.float_format.kind != "e8m0"]


def _storage(bits: int) -> str:
    return f"i{max(8, bits)}"


def _np_storage(bits: int):
    return {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[max(8, bits)]


def _load(t: str, bits: int) -> str:
    if bits >= 8:
        return f"%x = arith.bitcast %raw : {_storage(bits)} to {t}"
    return f"%t = arith.trunci %raw : i8 to i{bits}\n    %x = arith.bitcast %t : i{bits} to {t}"


def _store(t: str, bits: int) -> str:
    if bits >= 8:
        return f"%y = arith.bitcast %v : {t} to {_storage(bits)}"
    return f"%y0 = arith.bitcast %v : {t} to i{bits}\n    %y = arith.extui %y0 : i{bits} to i8"


def _module(src: str, src_bits: int, dst: str, dst_bits: int, op: str, attrs: str = "") -> str:
    si, di = _storage(src_bits), _storage(dst_bits)
    load = _load(src, src_bits) if op in ("extf", "truncf") else "%x = arith.addi %raw, %raw0 : " + si
    return f"""
func.func @f(%a: memref<?x{si}>, %b: memref<?x{di}>) attributes {{llvm.emit_c_interface}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %raw0 = arith.constant 0 : {si}
  %n = memref.dim %a, %c0 : memref<?x{si}>
  scf.for %i = %c0 to %n step %c1 {{
    %raw = memref.load %a[%i] : memref<?x{si}>
    {load}
    %v = arith.{op} %x {attrs}: {src} to {dst}
    {_store(dst, dst_bits)}
    memref.store %y, %b[%i] : memref<?x{di}>
  }}
  return
}}"""


class _Memref(ctypes.Structure):
    _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64),
                ("size", ctypes.c_int64), ("stride", ctypes.c_int64)]


@functools.lru_cache(None)
def _compiled(text: str):
    ctx = ir.Context()
    with ctx:
        module = ir.Module.parse(text)
        run_pipeline(module, DEFAULT_PIPELINE)
        llir = to_llvm_ir(module)
        return ctx, module, ExecutionEngine(module, opt_level=2), llir


def _run(text: str, a: np.ndarray, out_dtype) -> np.ndarray:
    _, _, engine, _ = _compiled(text)
    a = np.ascontiguousarray(a)
    b = np.zeros(a.size, dtype=out_dtype)
    descs = [_Memref(x.ctypes.data, x.ctypes.data, 0, x.size, 1) for x in (a, b)]
    engine.invoke("f", *[ctypes.pointer(ctypes.pointer(d)) for d in descs])
    return b


def convert(values: np.ndarray, src: str, dst: str, op: str, attrs: str = "") -> np.ndarray:
    """Bits of `values` (bits of type `src`, or integers) converted by the compiled program."""
    sb, db = _bits(src), _bits(dst)
    out = _run(_module(src, sb, dst, db, op, attrs), values, _np_storage(db))
    return out


def _bits(name: str) -> int:
    s = dtypes.by_mlir(name)
    return s.width


# ---- the oracle: nearest finite value of the format ------------------------------------

@functools.lru_cache(None)
def _finite_table(name: str):
    """(sorted non-negative finite values as Fractions, their magnitude bits)."""
    s = dtypes.by_mlir(name)
    fmt = s.float_format
    values = {}
    for bits in range(1 << (fmt.bits - 1)):
        e, m = bits >> fmt.mantissa, bits & ((1 << fmt.mantissa) - 1)
        if fmt.kind == "ieee" and e == (1 << fmt.exponent) - 1:
            continue
        if fmt.kind == "fn" and bits == (1 << (fmt.bits - 1)) - 1:
            continue
        if e == 0:
            v = Fraction(m, 1 << fmt.mantissa) * Fraction(2) ** (1 - fmt.bias)
        else:
            v = (1 + Fraction(m, 1 << fmt.mantissa)) * Fraction(2) ** (e - fmt.bias)
        values[v] = bits
    keys = sorted(values)
    return keys, [values[k] for k in keys]


def oracle(value, name: str, toward_zero=False, saturate=False):
    """The bits of `value` (a float or int) rounded into format `name`; None for NaN
    results (their payload is not specified)."""
    s = dtypes.by_mlir(name)
    fmt = s.float_format
    n = fmt.bits
    sign_bit = 1 << (n - 1)
    neg = value < 0 or (isinstance(value, float) and math.copysign(1.0, value) < 0)
    if isinstance(value, float) and math.isnan(value):
        # a format with no NaN keeps the sign and gives zero
        return (sign_bit if neg else 0) if fmt.kind == "finite" else None
    keys, codes = _finite_table(name)
    largest = keys[-1]

    def signed(bits):
        if fmt.kind == "fnuz" and bits == 0:
            return 0
        return bits | (sign_bit if neg else 0)

    def overflow():
        if toward_zero or saturate or fmt.kind == "finite":
            return signed(codes[-1])
        if fmt.kind == "ieee":
            return signed(((1 << fmt.exponent) - 1) << fmt.mantissa)
        return None                                      # NaN

    if isinstance(value, float) and math.isinf(value):
        if saturate or fmt.kind == "finite":
            return signed(codes[-1])
        return signed(((1 << fmt.exponent) - 1) << fmt.mantissa) if fmt.kind == "ieee" else None
    v = abs(Fraction(value))
    if toward_zero:
        if v > largest:
            return overflow()
        i = bisect.bisect_right(keys, v) - 1
        return signed(codes[i])
    # The value one quantum past the largest finite one, with an even code:
    # reaching it (ties to even included) is overflow.
    step = largest - keys[-2]
    if v >= largest + step / 2:
        return overflow() if v > largest + step / 2 or codes[-1] % 2 == 1 else signed(codes[-1])
    if v > largest:
        return signed(codes[-1])
    i = bisect.bisect_left(keys, v)
    if keys[i] == v:
        return signed(codes[i])
    lo, hi = keys[i - 1], keys[i]
    if v - lo < hi - v or (v - lo == hi - v and codes[i - 1] % 2 == 0):
        return signed(codes[i - 1])
    return signed(codes[i])


def _same(got: np.ndarray, want: list) -> np.ndarray:
    """Elementwise: equal bits, or both NaN (want None: a NaN of the format)."""
    return np.array([w is None or int(g) == w for g, w in zip(got, want)])


def _is_nan_bits(bits: int, name: str) -> bool:
    fmt = dtypes.by_mlir(name).float_format
    n = fmt.bits
    mag = bits & ((1 << (n - 1)) - 1)
    if fmt.kind == "ieee":
        return mag >> fmt.mantissa == (1 << fmt.exponent) - 1 and mag & ((1 << fmt.mantissa) - 1) != 0
    if fmt.kind == "fn":
        return mag == (1 << (n - 1)) - 1
    if fmt.kind == "fnuz":
        return bits == 1 << (n - 1)
    return False


def check(got: np.ndarray, inputs, name: str, **mode):
    want = [oracle(float(x) if not isinstance(x, (int, np.integer)) else int(x), name, **mode)
            for x in inputs]
    bad = [(x, int(g), w) for x, g, w in zip(inputs, got, want)
           if (w is None and not _is_nan_bits(int(g), name)) or (w is not None and int(g) != w)]
    assert not bad, f"{name}: {len(bad)} wrong, e.g. (input, got, want) {bad[:5]}"


# ---- tests ------------------------------------------------------------------------------

@pytest.mark.parametrize("s", SOFT, ids=lambda s: s.mlir)
@pytest.mark.parametrize("wide", ["f32", "f64"])
def test_every_value_extends_exactly(s, wide):
    """Every bit pattern of each soft format, as f32 and f64, matches ml_dtypes."""
    fmt = s.float_format
    bits = np.arange(1 << fmt.bits, dtype=_np_storage(fmt.bits))
    ref = bits.astype(np.uint8).view(dtypes.numpy_dtype(s)) if fmt.bits < 8 else bits.view(dtypes.numpy_dtype(s))
    with np.errstate(invalid="ignore"):              # e8m0's NaN
        ref = ref.astype(np.float64 if wide == "f64" else np.float32)
    got = convert(bits, s.mlir, wide, "extf").view(ref.dtype)
    same = (got.view(_np_storage(64 if wide == "f64" else 32)) == ref.view(got.dtype).view(
        _np_storage(64 if wide == "f64" else 32))) | (np.isnan(got) & np.isnan(ref))
    assert same.all(), f"{s.mlir} -> {wide}: {bits[~same][:8]} gave {got[~same][:8]}, want {ref[~same][:8]}"


def _around_every_value(s) -> np.ndarray:
    """The finite values of the format, the midpoints between neighbours and
    the f32 numbers next to both (where rounding decides), as f32."""
    keys, _ = _finite_table(s.mlir)
    vals = np.array([float(k) for k in keys], dtype=np.float64)
    mids = (vals[:-1] + vals[1:]) / 2
    pts = np.concatenate([vals, mids, [vals[-1] + (vals[-1] - vals[-2]) / 2]]).astype(np.float32)
    pts = pts[np.isfinite(pts)]
    pts = np.concatenate([pts, np.nextafter(pts, np.float32(np.inf)), np.nextafter(pts, np.float32(0))])
    return np.concatenate([pts, -pts, np.float32([np.inf, -np.inf, np.nan, 3.4e38, -3.4e38])])


@pytest.mark.parametrize("s", ENCODABLE, ids=lambda s: s.mlir)
def test_f32_rounds_to_nearest_even_around_every_value(s):
    x = _around_every_value(s)
    got = convert(x.view(np.uint32), "f32", s.mlir, "truncf")
    check(got, x, s.mlir)
    with np.errstate(over="ignore"):
        ref = x.astype(dtypes.numpy_dtype(s)).view(np.uint8 if s.float_format.bits <= 8 else np.uint16)
    ref = ref & ((1 << s.float_format.bits) - 1)
    agree = (got == ref) | np.array([_is_nan_bits(int(g), s.mlir) and _is_nan_bits(int(r), s.mlir)
                                     for g, r in zip(got, ref)])
    if s.float_format.kind == "finite":      # ml_dtypes makes NaN a zero of either sign
        agree |= np.isnan(x)
    assert agree.all(), f"{s.mlir}: differs from ml_dtypes at {x[~agree][:8]}"


@pytest.mark.parametrize("s", ENCODABLE, ids=lambda s: s.mlir)
@given(st.lists(st.floats(width=32), min_size=1, max_size=64))
def test_f32_conversion_matches_oracle(s, xs):
    x = np.array(xs, dtype=np.float32)
    check(convert(x.view(np.uint32), "f32", s.mlir, "truncf"), x, s.mlir)


@pytest.mark.parametrize("s", ENCODABLE, ids=lambda s: s.mlir)
@given(st.lists(st.floats(), min_size=1, max_size=64))
def test_f64_rounds_once(s, xs):
    """f64 -> soft format rounds once (through f32 it could round twice)."""
    x = np.array(xs, dtype=np.float64)
    check(convert(x.view(np.uint64), "f64", s.mlir, "truncf"), x, s.mlir)


def test_f64_to_bf16_double_rounding_case():
    # 1 + 2**-8 + 2**-30: through f32 it becomes the tie 1 + 2**-8, which
    # rounds to even (1.0); rounded once it is above the tie: 1 + 2**-7.
    x = np.array([1 + 2 ** -8 + 2 ** -30], dtype=np.float64)
    got = convert(x.view(np.uint64), "f64", "bf16", "truncf")
    assert int(got[0]) == 0x3F81


@pytest.mark.parametrize("name", ["f16", "bf16", "f8E4M3FN", "f8E5M2"])
@given(st.lists(st.floats(width=32), min_size=1, max_size=64))
def test_round_toward_zero(name, xs):
    x = np.array(xs, dtype=np.float32)
    got = convert(x.view(np.uint32), "f32", name, "truncf", "toward_zero ")
    check(got, x, name, toward_zero=True)


@pytest.mark.parametrize("name", ["f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f16"])
def test_saturating_conversion_clamps_to_largest_finite(name):
    x = np.float32([1e30, -1e30, np.inf, -np.inf, 1.0, np.nan])
    got = convert(x.view(np.uint32), "f32", name, "truncf", f"{{{SATURATE_ATTR}}} ")
    check(got, x, name, saturate=True)


def _quiet_nan(name: str, negative: bool) -> int:
    fmt = dtypes.by_mlir(name).float_format
    return (int(negative) << (fmt.bits - 1)) | (((1 << fmt.exponent) - 1) << fmt.mantissa) | (1 << (fmt.mantissa - 1))


@pytest.mark.parametrize("wide,narrow", [("f16", "f8E5M2"), ("f32", "bf16")])
@pytest.mark.parametrize("mode", ["", "toward_zero ", f"{{{SATURATE_ATTR}}} "], ids=["nearest", "zero", "saturate"])
def test_formats_of_one_exponent_field_convert_by_shifting(wide, narrow, mode):
    """f32 <-> bf16 and f16 <-> f8E5M2 share their exponent field and convert by
    shifting the significand: every value of the narrow format widened, and
    every f16 (f32 values around every bf16 one) narrowed, as the oracle
    rounds; NaN the quiet NaN of its sign."""
    w = _bits(wide)
    narrow_bits = np.arange(1 << _bits(narrow), dtype=_np_storage(_bits(narrow)))
    widened = convert(narrow_bits, narrow, wide, "extf")
    want = narrow_bits.view(dtypes.numpy_dtype(dtypes.by_mlir(narrow))).astype(
        np.float16 if wide == "f16" else np.float32)
    nan = np.isnan(want)
    assert (widened[~nan] == want[~nan].view(_np_storage(w))).all()
    assert all(int(g) == _quiet_nan(wide, int(b) >> (_bits(narrow) - 1)) for g, b in zip(widened[nan], narrow_bits[nan]))
    if wide == "f16":
        x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    else:
        x = _around_every_value(dtypes.by_mlir(narrow))
    got = convert(x.view(_np_storage(w)), wide, narrow, "truncf", mode)
    nan = np.isnan(x)
    check(got[~nan], x[~nan], narrow, toward_zero=mode.startswith("toward"), saturate=SATURATE_ATTR in mode)
    signs = np.signbit(x[nan])
    assert all(int(g) == _quiet_nan(narrow, bool(b)) for g, b in zip(got[nan], signs))


@pytest.mark.parametrize("name", ["f16", "bf16", "f8E4M3FN", "f8E5M2", "f8E4M3B11FNUZ"])
@pytest.mark.parametrize("int_type,signed", [("i32", True), ("i64", True), ("i32", False), ("i8", True)])
@given(data=st.data())
def test_integer_to_soft_float_rounds_once(name, int_type, signed, data):
    bits = int(int_type[1:])
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    xs = data.draw(st.lists(st.integers(lo, hi), min_size=1, max_size=64))
    storage = {8: np.int8, 32: np.int32, 64: np.int64}[bits]
    raw = np.array(xs, dtype=np.int64 if signed else np.uint64).astype(
        storage if signed else _np_storage(bits))
    text = _module(int_type, bits, name, _bits(name), "sitofp" if signed else "uitofp")
    got = _run(text, raw, _np_storage(_bits(name)))
    check(got, xs, name)


def test_int32_to_bf16_is_not_rounded_through_f32():
    x = (1 << 25) + (1 << 17) + 1            # through f32: the tie 2**25 + 2**17, then even
    got = _run(_module("i32", 32, "bf16", 16, "sitofp"), np.array([x], dtype=np.int32), np.uint16)
    assert int(got[0]) == oracle(x, "bf16") == 0x4C01


def test_program_calls_no_runtime_library_conversion():
    """The LLVM IR has no float operation on a soft type left: nothing for the
    backend to turn into `__truncsfbf2` and the like."""
    for src, dst in [("f32", "bf16"), ("f64", "f16"), ("bf16", "f32"), ("f16", "f64")]:
        text = _module(src, _bits(src), dst, _bits(dst), "truncf" if _bits(dst) < _bits(src) else "extf")
        _, _, _, llir = _compiled(text)
        for word in ("fptrunc", "fpext", "half", "bfloat", "__trunc", "__extend"):
            assert word not in llir, (src, dst, word)


def test_arith_and_math_on_soft_floats_run_in_f32():
    text = """
    func.func @g(%a: f16, %b: bf16, %c: f8E4M3B11FNUZ) -> (f16, bf16, i1, f8E4M3B11FNUZ) {
      %0 = math.exp %a : f16
      %1 = arith.mulf %b, %b : bf16
      %2 = arith.cmpf olt, %c, %c : f8E4M3B11FNUZ
      %3 = arith.addf %c, %c : f8E4M3B11FNUZ
      return %0, %1, %2, %3 : f16, bf16, i1, f8E4M3B11FNUZ
    }"""
    with ir.Context():
        module = ir.Module.parse(text)
        run_pipeline(module, ["edsl-soft-floats"])
        out = str(module)
    for op in ("math.exp", "arith.mulf", "arith.cmpf", "arith.addf"):
        line = next(ln for ln in out.splitlines() if op in ln)
        assert line.rstrip().endswith("f32"), line
    assert "extf" not in out and "truncf" not in out


def test_host_programs_store_soft_floats_as_integers():
    """x86 code generation widens a bare `bfloat` value to f32 and narrows it
    back through `__truncsfbf2` even for a copy: host programs carry soft floats
    as integers of their width, constants included."""
    from edsl.lowering.floats import soft_float_storage
    text = """
    llvm.func @copy(%p: !llvm.ptr, %q: !llvm.ptr, %h: f16) -> bf16 {
      %x = llvm.load %p : !llvm.ptr -> bf16
      %c = llvm.mlir.constant(1.5 : bf16) : bf16
      %e = llvm.getelementptr %q[1] : (!llvm.ptr) -> !llvm.ptr, bf16
      llvm.store %x, %e : bf16, !llvm.ptr
      %i = llvm.bitcast %h : f16 to i16
      llvm.return %c : bf16
    }"""
    with ir.Context():
        module = ir.Module.parse(text)
        soft_float_storage(module.operation)
        module.operation.verify()
        out = str(module)
        llir = to_llvm_ir(module)
    assert "bf16" not in out and "f16" not in out and "bfloat" not in llir and "half" not in llir
    assert "llvm.mlir.constant(16320 : i16)" in out            # 1.5 in bf16 is 0x3FC0


@pytest.mark.parametrize("text, soft", [
    ("func.func @f(%x: f16) { return }", True),
    ("func.func @f(%x: memref<4xbf16>) { return }", True),
    ("func.func @f(%x: memref<?x8xf8E4M3FN>) { return }", True),
    ("func.func @f(%x: vector<[4]xf8E5M2>) { return }", True),
    ("llvm.func @f(%x: !llvm.struct<(i32, f16)>) { llvm.return }", True),
    ("llvm.func @f() -> !llvm.array<4 x bf16> {\n"
     "  %c = llvm.mlir.undef : !llvm.array<4 x bf16>\n  llvm.return %c : !llvm.array<4 x bf16>\n}", True),
    ("func.func @f() -> f32 {\n  %c = arith.constant 1.0 : f16\n  %e = arith.extf %c : f16 to f32\n"
     "  return %e : f32\n}", True),
    ("func.func @f16x(%x: memref<4xf32>, %y: i16, %z: vector<4xf64>) { return }", False),
])
def test_the_soft_float_passes_find_every_soft_float_in_a_module(text, soft):
    """The soft-float passes skip a module without soft floats, found by a
    search of its text: a soft float anywhere (a shape's element, a struct's
    field, a constant) is seen; f32, f64 and names that contain one are not."""
    from edsl.lowering.floats import has_soft_floats
    with ir.Context():
        module = ir.Module.parse(text)
        assert has_soft_floats(module.operation) == soft
