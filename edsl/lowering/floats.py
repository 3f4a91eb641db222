"""Float formats the host has no instructions for (f16, bf16, the 8-, 6- and
4-bit formats), expanded into integer arithmetic before the LLVM dialect.

LLVM lowers an `fptrunc` to bf16, an `fpext` from f16 without F16C, an f64 to
f16 truncation, ... to calls into the compiler's runtime library
(`__truncsfbf2`, `__extendhfsf2`, ...), which the host may not have. A DPU has
no FPU at all: every float there is software. So a compiled program computes
on f32 and f64 only, and every other format is a storage format converted
exactly by the code below (round to nearest even, or toward zero where the
op asks). The pass `edsl-soft-floats`:

  1. runs every arith and math op on soft floats in f32 (extf, op, truncf),
     as GPUs run f16 math; f16 + - * / and sqrt stay correctly rounded;
  2. encodes integer -> soft float conversions from the integer directly
     (through f32 they would round twice: i32 -> bf16);
  3. turns every extf / truncf with a soft side into integer code.

Upstream has parts of this (`arith-emulate-unsupported-floats` for step 1 on
arith ops, without f8E4M3B11FNUZ, Triton's fp8e4b15; `arith-expand` for
f32 <-> bf16 only, losing the sign of NaN), but no exact conversion between
arbitrary formats: decode/encode below are written from the formats'
definitions in `edsl.target.dtypes`. Conversions between IEEE formats of
one exponent field (f32 and bf16) shift the significand, and those to a
wider IEEE format (f16 -> f32) move the fields: the same bits in a
seventh and a half of the code.
"""
from __future__ import annotations

import re

from mlir import ir
from mlir.dialects import arith, math

from ..target import dtypes
from ..base.errors import LoweringError
from .walk import collect

# A truncf carrying this unit attribute clamps overflow to the largest finite
# value (as NVIDIA's `cvt.satfinite` does for fp8) instead of giving inf/NaN.
SATURATE_ATTR = "edsl.saturate"

# arith.truncf's rounding modes (arith::RoundingMode) that are implemented.
_TO_NEAREST_EVEN, _TOWARD_ZERO = 0, 3


def _format(t: ir.Type) -> dtypes.FloatFormat | None:
    return dtypes.float_format(str(t))


def is_soft(t: ir.Type) -> bool:
    """A float type the host does not compute in."""
    return _format(t) is not None and str(t) not in dtypes.NATIVE_FLOATS


class _Ints:
    """Integer ops on one working width."""

    def __init__(self, width: int):
        self.w = width
        self.t = ir.IntegerType.get_signless(width)

    def c(self, v: int) -> ir.Value:
        v &= (1 << self.w) - 1
        if v >= 1 << (self.w - 1):
            v -= 1 << self.w
        return arith.constant(self.t, v)

    def eq(self, a, b):
        return arith.cmpi(arith.CmpIPredicate.eq, a, b)

    def ne(self, a, b):
        return arith.cmpi(arith.CmpIPredicate.ne, a, b)

    def ugt(self, a, b):
        return arith.cmpi(arith.CmpIPredicate.ugt, a, b)

    def sgt(self, a, b):
        return arith.cmpi(arith.CmpIPredicate.sgt, a, b)

    def clamp(self, v, lo: int, hi: int):
        return arith.minsi(arith.maxsi(v, self.c(lo)), self.c(hi))


class _Value:
    """A decoded number: (-1)**sign * sig * 2**exp, unless a flag says NaN,
    infinity or zero. Every field is an integer of the working width (flags i1)."""

    def __init__(self, sign, sig, exp, nan, inf, zero):
        self.sign, self.sig, self.exp, self.nan, self.inf, self.zero = sign, sig, exp, nan, inf, zero


def _false():
    return arith.constant(ir.IntegerType.get_signless(1), 0)


def _bits_of(x: ir.Value, fmt: dtypes.FloatFormat, k: _Ints) -> ir.Value:
    """The bits of float `x` (format `fmt`) as an integer of width `k.w`."""
    bits = arith.bitcast(ir.IntegerType.get_signless(fmt.bits), x)
    return arith.extui(k.t, bits) if fmt.bits < k.w else bits


def _float_of(bits: ir.Value, fmt: dtypes.FloatFormat, t: ir.Type, k: _Ints) -> ir.Value:
    """The float of type `t` (format `fmt`) whose bits are `bits` (width `k.w`)."""
    if fmt.bits < k.w:
        bits = arith.trunci(ir.IntegerType.get_signless(fmt.bits), bits)
    return arith.bitcast(t, bits)


def decode(x: ir.Value, fmt: dtypes.FloatFormat, k: _Ints) -> _Value:
    """The parts of float `x` (in format `fmt`) as integers of width `k.w`."""
    n, m_bits = fmt.bits, fmt.mantissa
    bits = _bits_of(x, fmt, k)
    e_mask = (1 << fmt.exponent) - 1
    e = arith.andi(arith.shrui(bits, k.c(m_bits)), k.c(e_mask))
    if fmt.kind == "e8m0":
        nan = k.eq(bits, k.c(0xFF))
        return _Value(k.c(0), k.c(1), arith.subi(e, k.c(fmt.bias)), nan, _false(), _false())
    sign = arith.andi(arith.shrui(bits, k.c(n - 1)), k.c(1))
    mag = arith.andi(bits, k.c((1 << (n - 1)) - 1))
    m = arith.andi(bits, k.c((1 << m_bits) - 1))
    if fmt.kind == "ieee":
        top = k.eq(e, k.c(e_mask))
        zero_m = k.eq(m, k.c(0))
        nan = arith.andi(top, arith.xori(zero_m, arith.constant(zero_m.type, 1)))
        inf = arith.andi(top, zero_m)
    elif fmt.kind == "fn":
        nan, inf = k.eq(mag, k.c((1 << (n - 1)) - 1)), _false()
    elif fmt.kind == "fnuz":
        nan, inf = k.eq(bits, k.c(1 << (n - 1))), _false()
    else:                                            # finite
        nan, inf = _false(), _false()
    zero = k.eq(mag, k.c(0))
    normal = k.ne(e, k.c(0))
    sig = arith.select(normal, arith.ori(m, k.c(1 << m_bits)), m)
    exp = arith.subi(arith.select(normal, e, k.c(1)), k.c(fmt.bias + m_bits))
    return _Value(sign, sig, exp, nan, inf, zero)


def encode(v: _Value, fmt: dtypes.FloatFormat, t: ir.Type, k: _Ints, toward_zero: bool,
           saturate: bool) -> ir.Value:
    """`v` rounded into format `fmt` (type `t`): to nearest even, or toward zero."""
    if fmt.kind == "e8m0":
        raise LoweringError(f"conversion to {t} is not supported")
    n, md = fmt.bits, fmt.mantissa
    # The result's quantum: 2**qexp, the lowest bit of the result's
    # significand, of the leading bit's binade or of the subnormals.
    lead = arith.subi(k.c(k.w - 1), math.ctlz(v.sig))
    qmin = 1 - fmt.bias - md
    qexp = arith.maxsi(arith.subi(arith.addi(lead, v.exp), k.c(md)), k.c(qmin))
    d = arith.subi(qexp, v.exp)                      # bits dropped (< 0: shift left)
    dr = k.clamp(d, 1, k.w - 1)
    q = arith.shrui(v.sig, dr)
    if not toward_zero:
        rem = arith.andi(v.sig, arith.subi(arith.shli(k.c(1), dr), k.c(1)))
        half = arith.shli(k.c(1), arith.subi(dr, k.c(1)))
        odd = k.ne(arith.andi(q, k.c(1)), k.c(0))
        up = arith.ori(k.ugt(rem, half), arith.andi(k.eq(rem, half), odd))
        q = arith.addi(q, arith.extui(k.t, up))
    left = arith.shli(v.sig, k.clamp(arith.subi(k.c(0), d), 0, k.w - 1))
    sig = arith.select(k.sgt(d, k.c(0)), q, left)
    # Biased exponent and significand in one sum: a significand that rounds
    # up to the next power of two carries into the exponent field.
    enc = arith.addi(arith.shli(arith.subi(qexp, k.c(qmin)), k.c(md)), sig)

    top = (1 << (n - 1)) - 1                         # every magnitude bit set
    if fmt.kind == "ieee":
        inf_enc = ((1 << fmt.exponent) - 1) << md
        max_enc, nan_enc = inf_enc - 1, inf_enc | (1 << max(md - 1, 0))
    elif fmt.kind == "fn":
        inf_enc, max_enc, nan_enc = None, top - 1, top
    elif fmt.kind == "fnuz":
        inf_enc, max_enc, nan_enc = None, top, 1 << (n - 1)
    else:
        inf_enc, max_enc, nan_enc = None, top, 0
    if toward_zero or saturate or fmt.kind == "finite":
        over = max_enc                               # rounding toward zero never reaches inf
    else:
        over = inf_enc if fmt.kind == "ieee" else nan_enc
    if saturate or fmt.kind == "finite":
        on_inf = max_enc
    else:
        on_inf = inf_enc if fmt.kind == "ieee" else nan_enc
    mag = arith.select(k.ugt(enc, k.c(max_enc)), k.c(over), enc)
    mag = arith.select(v.inf, k.c(on_inf), mag)
    mag = arith.select(v.zero, k.c(0), mag)
    bits = arith.ori(arith.shli(v.sign, k.c(n - 1)), mag)
    if fmt.kind == "fnuz":
        # No negative zero; NaN is the sign bit alone (an overflow or an
        # infinity made NaN above is already that pattern, sign or not).
        is_nan_pattern = k.eq(mag, k.c(nan_enc))
        bits = arith.select(k.eq(mag, k.c(0)), k.c(0), bits)
        bits = arith.select(is_nan_pattern, k.c(nan_enc), bits)
    nan_bits = k.c(nan_enc) if fmt.kind == "fnuz" else arith.ori(arith.shli(v.sign, k.c(n - 1)),
                                                                 k.c(nan_enc))
    return _float_of(arith.select(v.nan, nan_bits, bits), fmt, t, k)


def _width_for(*bits: int) -> int:
    return 64 if max(bits) > 32 else 32


def convert_float(x: ir.Value, t: ir.Type, toward_zero: bool = False, saturate: bool = False) -> ir.Value:
    """Float `x` converted to float type `t` in integer arithmetic."""
    src, dst = _format(x.type), _format(t)
    k = _Ints(_width_for(src.bits, dst.bits))
    if src.kind == dst.kind == "ieee" and (src.exponent, src.bias) == (dst.exponent, dst.bias):
        return _shift_significand(x, src, dst, t, k, toward_zero, saturate)
    if src.kind == dst.kind == "ieee" and src.exponent < dst.exponent and src.mantissa < dst.mantissa:
        return _widen(x, src, dst, t, k)
    return encode(decode(x, src, k), dst, t, k, toward_zero, saturate)


def _widen(x: ir.Value, src: dtypes.FloatFormat, dst: dtypes.FloatFormat, t: ir.Type, k: _Ints) -> ir.Value:
    """`convert_float` to an IEEE format of more exponent and significand bits
    (f16 -> f32, bf16 -> f64, ...), exact, bit for bit as decode/encode give
    it in half the code: a normal number's fields moved and its exponent
    rebiased; a subnormal one made normal (its leading bit found by ctlz);
    NaN the quiet NaN of its sign."""
    bits = _bits_of(x, src, k)
    ms, md, e_top = src.mantissa, dst.mantissa, (1 << src.exponent) - 1
    e = arith.andi(arith.shrui(bits, k.c(ms)), k.c(e_top))
    m = arith.andi(bits, k.c((1 << ms) - 1))
    sign = arith.shli(arith.shrui(bits, k.c(src.bits - 1)), k.c(dst.bits - 1))
    normal = arith.ori(arith.shli(arith.addi(e, k.c(dst.bias - src.bias)), k.c(md)),
                       arith.shli(m, k.c(md - ms)))
    # A subnormal m * 2**(1 - bias - ms) with its leading bit at p: 2**(p + 1 - bias - ms) * 1.f
    p = arith.subi(k.c(k.w - 1), math.ctlz(m))
    sub_e = arith.addi(p, k.c(1 - src.bias - ms + dst.bias))
    sub_f = arith.andi(arith.shli(m, arith.subi(k.c(md), p)), k.c((1 << md) - 1))
    subnormal = arith.select(k.eq(m, k.c(0)), k.c(0), arith.ori(arith.shli(sub_e, k.c(md)), sub_f))
    inf_enc = ((1 << dst.exponent) - 1) << md
    special = arith.select(k.eq(m, k.c(0)), k.c(inf_enc), k.c(inf_enc | (1 << (md - 1))))
    mag = arith.select(k.eq(e, k.c(0)), subnormal, arith.select(k.eq(e, k.c(e_top)), special, normal))
    out = arith.ori(sign, mag)
    return _float_of(out, dst, t, k)


def _shift_significand(x: ir.Value, src: dtypes.FloatFormat, dst: dtypes.FloatFormat, t: ir.Type, k: _Ints,
                       toward_zero: bool, saturate: bool) -> ir.Value:
    """`convert_float` between IEEE formats with one exponent field (f32 and
    bf16, f16 and f8E5M2), bit for bit as decode/encode give it in a seventh
    of the code: the magnitude's bits shifted, rounding by adding below the
    kept bits (a carry moves into the exponent field, up to infinity); NaN
    made the format's quiet NaN with its sign, as `encode` makes it."""
    bits = _bits_of(x, src, k)
    mag = arith.andi(bits, k.c((1 << (src.bits - 1)) - 1))
    sign = arith.shli(arith.shrui(bits, k.c(src.bits - 1)), k.c(dst.bits - 1))
    nan = k.ugt(mag, k.c(((1 << src.exponent) - 1) << src.mantissa))
    shift = dst.mantissa - src.mantissa
    if shift >= 0:                                   # exact
        mag = arith.shli(mag, k.c(shift))
    else:
        drop = -shift
        if not toward_zero:                          # to nearest, ties to the even one
            odd = arith.andi(arith.shrui(mag, k.c(drop)), k.c(1))
            mag = arith.addi(mag, arith.addi(k.c((1 << (drop - 1)) - 1), odd))
        mag = arith.shrui(mag, k.c(drop))
    inf_enc = ((1 << dst.exponent) - 1) << dst.mantissa
    if saturate:                                     # infinity too, as encode
        mag = arith.minui(mag, k.c(inf_enc - 1))
    nan_enc = inf_enc | (1 << max(dst.mantissa - 1, 0))
    out = arith.ori(sign, arith.select(nan, k.c(nan_enc), mag))
    return _float_of(out, dst, t, k)


def convert_int(x: ir.Value, t: ir.Type, signed: bool) -> ir.Value:
    """Integer `x` converted to float type `t` in integer arithmetic."""
    width = ir.IntegerType(x.type).width
    k = _Ints(_width_for(width + 1))
    if width == 1 and signed:                        # i1 true is -1
        neg = x
        mag = arith.extui(k.t, x)
    else:
        wide = (arith.extsi if signed else arith.extui)(k.t, x) if width < k.w else x
        neg = arith.cmpi(arith.CmpIPredicate.slt, wide, k.c(0)) if signed else _false()
        mag = arith.select(neg, arith.subi(k.c(0), wide), wide)
    v = _Value(arith.extui(k.t, neg), mag, k.c(0), _false(), _false(), k.eq(mag, k.c(0)))
    return encode(v, _format(t), t, k, False, False)


def _rounding(op: ir.Operation) -> bool:
    """Whether a truncf rounds toward zero (else to nearest even)."""
    if "roundingmode" not in op.attributes:
        return False
    mode = ir.IntegerAttr(op.attributes["roundingmode"]).value
    if mode not in (_TO_NEAREST_EVEN, _TOWARD_ZERO):
        raise LoweringError(f"rounding mode {op.attributes['roundingmode']} of {op.name} is not supported")
    return mode == _TOWARD_ZERO


def _replace(op: ir.Operation, build) -> None:
    with op.location, ir.InsertionPoint(op):
        new = build()
    for old, value in zip(op.results, new if isinstance(new, list) else [new]):
        old.replace_all_uses_with(value)
    op.erase()


def _in_f32(op: ir.Operation) -> list[ir.Value]:
    """An op on soft floats, computed in f32 and rounded back."""
    f32 = ir.F32Type.get()
    operands = [arith.extf(f32, v) if is_soft(v.type) else v for v in op.operands]
    results = [f32 if is_soft(r.type) else r.type for r in op.results]
    attrs = {name: op.attributes[name] for name in op.attributes}
    new = ir.Operation.create(op.name, results=results, operands=operands, attributes=attrs)
    return [arith.truncf(old.type, r) if is_soft(old.type) else r for old, r in zip(op.results, new.results)]


# Ops that move soft-float bits without computing on them.
_BITS_ONLY = frozenset({"arith.constant", "arith.select", "arith.bitcast", "arith.extf", "arith.truncf"})


def _computes_on_soft(op: ir.Operation) -> bool:
    if not op.name.startswith(("arith.", "math.")) or op.name in _BITS_ONLY:
        return False
    return any(is_soft(v.type) for v in [*op.operands, *op.results])


def _is_soft_cast(op: ir.Operation) -> bool:
    return op.name in ("arith.extf", "arith.truncf") and (
        is_soft(op.operands[0].type) or is_soft(op.results[0].type))


def has_soft_floats(module_op: ir.Operation) -> bool:
    """Whether a soft float appears anywhere in `module_op`: a search of its
    text, so that the passes below skip a module without one (a walk of
    every op costs a large kernel about 75 ms a pass in Python)."""
    return _SOFT_NAME.search(str(module_op)) is not None


def soft_floats(module_op: ir.Operation, _pass=None) -> None:
    """Pass `edsl-soft-floats` (see the module docstring)."""
    if not has_soft_floats(module_op):
        return
    for op in collect(module_op, _computes_on_soft):
        if op.name in ("arith.sitofp", "arith.uitofp"):
            _replace(op, lambda op=op: convert_int(op.operands[0], op.results[0].type,
                                                    op.name == "arith.sitofp"))
        else:
            _replace(op, lambda op=op: _in_f32(op))
    for op in collect(module_op, _is_soft_cast):
        toward_zero = op.name == "arith.truncf" and _rounding(op)
        saturate = SATURATE_ATTR in op.attributes
        _replace(op, lambda op=op, tz=toward_zero, sat=saturate: convert_float(
            op.operands[0], op.results[0].type, tz, sat))


# ---- storage -------------------------------------------------------------------------

def _storage_type(t: ir.Type) -> ir.Type | None:
    """`t` with every soft float in it replaced by the integer of its width, or
    None if it has none."""
    text = str(t)
    new = _SOFT_NAME.sub(lambda m: f"i{dtypes.by_mlir(m.group(0)).width}", text)
    return None if new == text else ir.Type.parse(new)


# A soft float's name in a type or a module's text: alone (`f16`, `: bf16`,
# `(f16,`) or the element of a shape (`4xf16`, `?xbf16`, `[4]xf16`).
_SOFT_NAME = re.compile(
    r"(?:(?<!\w)|(?<=[\d?\]]x))("
    + "|".join(sorted((s.mlir for s in dtypes.SCALARS if s.is_float and s.mlir not in dtypes.NATIVE_FLOATS),
                      key=len, reverse=True)) + r")(?!\w)")
_TYPE_ATTRS = ("function_type", "elem_type", "global_type", "var_callee_type")


def soft_float_storage(module_op: ir.Operation) -> None:
    """In an LLVM-dialect module for the host, soft floats become integers of
    their width: their values only move (loads, stores, selects, arguments)
    once `edsl-soft-floats` has run, and as integers LLVM never promotes them
    (x86 code generation widens a bare `bfloat` to f32 and back through
    `__truncsfbf2`). Run on host programs only: the `.llvm` of a function keeps
    its types, for the kernels it is injected into and for other targets."""
    if has_soft_floats(module_op):
        with module_op.context:
            _to_storage(module_op)


def _to_storage(module_op: ir.Operation) -> None:
    values, retyped = [], []

    def visit(op):
        values.extend(op.results)
        for region in op.regions:
            for block in region.blocks:
                values.extend(block.arguments)
        for name in _TYPE_ATTRS:
            if name in op.attributes:
                new = _storage_type(ir.TypeAttr(op.attributes[name]).value)
                if new is not None:
                    op.attributes[name] = ir.TypeAttr.get(new)
        retyped.append(op)
        return ir.WalkResult.ADVANCE
    module_op.walk(visit)
    for v in values:
        new = _storage_type(v.type)
        if new is not None:
            v.set_type(new)
    for op in retyped:
        if op.name == "llvm.bitcast" and op.operands[0].type == op.results[0].type:
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()
        elif op.name == "llvm.mlir.constant" and isinstance(op.attributes["value"], ir.FloatAttr):
            attr = ir.FloatAttr(op.attributes["value"])
            s = dtypes.by_mlir(str(attr.type))
            if s is not None and s.mlir not in dtypes.NATIVE_FLOATS:
                bits = int(dtypes.value_bits(s, attr.value).value)
                op.attributes["value"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(s.width), bits)
        elif op.name == "llvm.mlir.constant" and _storage_type(op.attributes["value"].type) is not None:
            raise LoweringError(f"a constant of {op.attributes['value'].type} is not supported on the host")
