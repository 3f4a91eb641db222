"""libdevice (`tl.extra.libdevice`, CUDA's `__nv_` functions) on the DPU:
the one table of every function the dpu backend computes, how, and how
accurately (`LIBDEVICE`; docs/libdevice.md is generated from it).

A DPU has no libdevice, and the C math library covers a third of it: the
rest is written here by hand, in arith/math ops that the model and the
exported C both run. Three ideas carry most of it:

- Rounding-mode variants (`_rz`, `_rd`, `_ru`) round an exact value given as
  an unevaluated sum hi + lo of doubles (`_directed`): hi rounded to nearest
  is off by one step at most, and the sign of what is left says which way.
  The exact sums come from error-free transformations (Knuth's TwoSum, the
  residual of an FMA), with f32 operations carried out in f64, where
  products and sums of two f32 values are exact or exactly split.
- Bit-level functions (byte_perm, brev, ffs, hadd, mulhi, ...) are integer
  arithmetic as CUDA's documentation defines them, saturating conversions
  as the PTX `cvt` instructions behind them.
- Special functions with no C counterpart (erfinv, erfcinv, normcdfinv,
  erfcx, sinpi, cospi, ...) are computed in f64 from libm's erf/erfc/sin
  (Newton steps on erf or erfc, argument reduction by exact steps) and
  rounded once to f32; their f64 forms are measured in tests against mpmath.

`Fn.ulps` (f32) and `Fn.ulps_f64` are the bounds CUDA's programming guide
documents for the function (0: correctly rounded or exact) and the bounds
the tests check; where this backend's f64 form is looser than CUDA's,
`Fn.cuda_f64` keeps CUDA's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from mlir import ir
from mlir.dialects import arith, func, math

F32 = ir.F32Type
F64 = ir.F64Type


@dataclass(frozen=True)
class Fn:
    build: Callable             # (conv, args: list[ir.Value], result type) -> ir.Value
    ulps: float | None          # CUDA's documented bound (0: exact / correctly rounded), f32;
                                # None: the C library's (where CUDA bounds the absolute error)
    what: str                   # a few words for the docs
    cost: int = 8               # extra cost, as elementwise._EXPENSIVE's
    ulps_f64: float | None = None   # the f64 form's bound, where it differs
    cuda_f64: float | None = None   # CUDA's f64 bound, where this backend's is looser


def _i(width: int) -> ir.Type:
    return ir.IntegerType.get_signless(width)


def _c(t: ir.Type, v) -> ir.Value:
    return arith.constant(t, v)


def _is_f32(t: ir.Type) -> bool:
    return t == F32.get()


def _bits(t: ir.Type) -> tuple[ir.Type, int, int, int]:
    """(same-width integer, width, mantissa bits, exponent bias) of a float type."""
    return (_i(32), 32, 23, 127) if _is_f32(t) else (_i(64), 64, 52, 1023)


def _sel(c, a, b):
    return arith.select(c, a, b)


def _cmpf(pred: str, a, b):
    return arith.cmpf(getattr(arith.CmpFPredicate, pred), a, b)


def _not(c):
    return arith.xori(c, _c(_i(1), 1))


def _cmpi(pred: str, a, b):
    return arith.cmpi(getattr(arith.CmpIPredicate, pred), a, b)


# -- exact sums and directed rounding ----------------------------------------
def _two_sum(a, b):
    """s + e == a + b exactly, s = fl(a + b) (Knuth; no overflow)."""
    s = arith.addf(a, b)
    bb = arith.subf(s, a)
    e = arith.addf(arith.subf(a, arith.subf(s, bb)), arith.subf(b, bb))
    return s, e


def _next(x, up: bool):
    """The float after x towards +inf (up) or -inf; x itself for NaN and for
    the infinity it would leave."""
    it, width, _, _ = _bits(x.type)
    b = arith.bitcast(it, x)
    one = _c(it, 1)
    zero = _cmpf("OEQ", x, _c(x.type, 0.0))
    positive = _cmpi("sge", b, _c(it, 0))
    away = positive if up else _not(positive)   # (magnitude grows)
    stepped = arith.bitcast(x.type, _sel(away, arith.addi(b, one), arith.subi(b, one)))
    tiny = arith.bitcast(x.type, _c(it, 1 if up else -(2 ** (width - 1)) + 1))   # +-min subnormal
    inf = _c(x.type, float("inf") if up else float("-inf"))
    r = _sel(zero, tiny, stepped)
    keep = arith.ori(_cmpf("UNO", x, x), _cmpf("OEQ", x, inf))
    return _sel(keep, x, r)


def _directed(hi, lo, t: ir.Type, mode: str):
    """hi + lo (doubles, or the result type's floats; |lo| at most half an ulp
    of hi) rounded to `t` towards zero ("rz"), -inf ("rd") or +inf ("ru")."""
    r = arith.truncf(t, hi) if hi.type != t else hi
    d = arith.subf(hi, arith.extf(hi.type, r)) if hi.type != t else _c(t, 0.0)
    zero = _c(hi.type, 0.0)
    d_zero = _cmpf("OEQ", d, zero)
    below = arith.ori(_cmpf("OLT", d, zero), arith.andi(d_zero, _cmpf("OLT", lo, _c(lo.type, 0.0))))
    above = arith.ori(_cmpf("OGT", d, zero), arith.andi(d_zero, _cmpf("OGT", lo, _c(lo.type, 0.0))))
    rzero = _c(t, 0.0)
    if mode == "rd":
        return _sel(below, _next(r, up=False), r)
    if mode == "ru":
        return _sel(above, _next(r, up=True), r)
    toward = arith.ori(arith.andi(below, _cmpf("OGT", r, rzero)), arith.andi(above, _cmpf("OLT", r, rzero)))
    down = _sel(_cmpf("OGT", r, rzero), _next(r, up=False), _next(r, up=True))
    return _sel(toward, down, r)


def _sign_of_sum(values):
    """-1.0, 0.0 or 1.0 (f64): the sign of the exact sum of `values`
    (Shewchuk's expansion growth: no rounding is lost, none overflows)."""
    expansion = []
    for v in values:
        q, grown = v, []
        for e in expansion:
            q, h = _two_sum(q, e)
            grown.append(h)
        expansion = grown + [q]
    t = expansion[0].type
    sign = _c(t, 0.0)
    for e in expansion:                 # (the largest nonzero component decides)
        s = math.copysign(_c(t, 1.0), e)
        sign = _sel(_cmpf("ONE", e, _c(t, 0.0)), s, sign)
    # NaN where a sum overflowed on the way
    return _sel(_all_finite(expansion), sign, _c(t, float("nan")))


_SCALE_EXP = 200          # f64 operands scaled by 2**200 where a result is near the subnormals
_TINY = 2.0 ** -900


def _exact_pair(op: str, args, t: ir.Type):
    """(hi, lo): the exact result of `op` on `args` as hi + lo (the sign of
    lo, at least, exact), hi the result rounded to nearest."""
    f64 = F64.get()
    if _is_f32(t):
        xs = [arith.extf(f64, a) for a in args]
    else:
        xs = list(args)
    w = xs[0].type
    if op == "add":
        s, e = _two_sum(xs[0], xs[1])
        return s, _overflowed(s, e, xs)
    if op == "sub":
        s, e = _two_sum(xs[0], arith.negf(xs[1]))
        return s, _overflowed(s, e, xs)
    if op == "mul":
        p = arith.mulf(xs[0], xs[1])
        if _is_f32(t):
            return p, _c(w, 0.0)                    # (exact in f64)
        return p, _product_residual(xs[0], xs[1], p)
    if op in ("div", "rcp"):
        a, b = (_c(w, 1.0), xs[0]) if op == "rcp" else xs
        q = arith.divf(a, b)
        small = arith.ori(_cmpf("OLT", math.absf(q), _c(w, _TINY)), _cmpf("OLT", math.absf(a), _c(w, _TINY)))
        scale = _sel(small, _c(w, 2.0 ** _SCALE_EXP), _c(w, 1.0))
        r = math.fma(arith.negf(arith.mulf(q, scale)), b, arith.mulf(a, scale))
        return q, arith.mulf(r, math.copysign(_c(w, 1.0), b))
    if op == "sqrt":
        x = xs[0]
        s = math.sqrt(x)
        small = _cmpf("OLT", x, _c(w, _TINY))
        xs_, ss = (_sel(small, arith.mulf(x, _c(w, 2.0 ** _SCALE_EXP)), x),
                   _sel(small, arith.mulf(s, _c(w, 2.0 ** (_SCALE_EXP // 2))), s))
        return s, math.fma(arith.negf(ss), ss, xs_)
    if op == "fma":
        a, b, c = xs
        if _is_f32(t):
            s, e = _two_sum(arith.mulf(a, b), c)     # (the product exact in f64)
            return s, e
        return _fma_f64_pair(a, b, c)
    raise AssertionError(op)


def _all_finite(xs):
    finite = None
    for x in xs:
        check = _cmpf("OLT", math.absf(x), _c(x.type, float("inf")))
        finite = check if finite is None else arith.andi(finite, check)
    return finite


def _overflowed(s, e, xs):
    """The residual e of an operation on `xs` whose rounded value s
    overflowed (e is then NaN or wrong): any value of the sign opposite to s."""
    finite = _all_finite(xs)
    inf = _cmpf("OEQ", math.absf(s), _c(s.type, float("inf")))
    return _sel(arith.andi(finite, inf), arith.negf(s), e)


def _fma_f64_pair(a, b, c):
    """(r, the sign of a*b + c - r), r = fma(a, b, c), in f64. With a*b
    clear of the subnormals, the exact sum of its split and c less r; with
    a*b tiny and c too, the same with the smaller factor, c and r scaled by
    2**200; otherwise a*b is below every bit of c and r: c - r (exact)
    decides, or, where it is 0, the product's sign."""
    w = a.type
    r = math.fma(a, b, c)
    p = arith.mulf(a, b)

    def expansion(a, b, c, r):
        p = arith.mulf(a, b)
        terms = [p, math.fma(a, b, arith.negf(p)), c, arith.negf(r)]
        sign = _sign_of_sum(terms)
        # Near the largest double the expansion's own sums can round to inf: then
        # again with all terms 2**100 times smaller. (An overflow needs p and c large,
        # and then no term that the scaling pushes below the subnormals can decide.)
        scaled = _sign_of_sum([arith.mulf(v, _c(w, 2.0 ** -100)) for v in terms])
        return _sel(_cmpf("UNO", sign, sign), scaled, sign)
    scale = _c(w, 2.0 ** _SCALE_EXP)
    a_smaller = _cmpf("OLE", math.absf(a), math.absf(b))
    a2, b2 = _sel(a_smaller, arith.mulf(a, scale), a), _sel(a_smaller, b, arith.mulf(b, scale))
    c2, r2 = arith.mulf(c, scale), arith.mulf(r, scale)
    tiny = _c(w, _TINY)
    normal = _cmpf("OGE", math.absf(p), tiny)
    scaled = arith.andi(_cmpf("OLT", math.absf(c), _c(w, 2.0 ** -800)),
                        _cmpf("OGE", math.absf(arith.mulf(a2, b2)), tiny))
    d = arith.subf(c, r)
    rest = _sel(_cmpf("ONE", d, _c(w, 0.0)), math.copysign(_c(w, 1.0), d), _product_sign(a, b))
    sign = _sel(normal, expansion(a, b, c, r), _sel(scaled, expansion(a2, b2, c2, r2), rest))
    # (an infinite or NaN operand: r is exact)
    finite = _all_finite([a, b, c])
    return r, _sel(finite, _overflowed(r, sign, [a, b, c]), _c(w, 0.0))


def _product_sign(a, b):
    """The sign of a*b as -1, 0 or 1."""
    w = a.type
    zero = arith.ori(_cmpf("OEQ", a, _c(w, 0.0)), _cmpf("OEQ", b, _c(w, 0.0)))
    return _sel(zero, _c(w, 0.0), arith.mulf(math.copysign(_c(w, 1.0), a), math.copysign(_c(w, 1.0), b)))


def _product_residual(a, b, p):
    """The sign-exact residual a*b - p of an f64 product (where p is near the
    subnormals, the smaller operand is scaled by 2**200 first)."""
    w = a.type
    small = _cmpf("OLT", math.absf(p), _c(w, _TINY))
    a_smaller = _cmpf("OLE", math.absf(a), math.absf(b))
    scale = _c(w, 2.0 ** _SCALE_EXP)
    a2 = _sel(arith.andi(small, a_smaller), arith.mulf(a, scale), a)
    b2 = _sel(arith.andi(small, _not(a_smaller)), arith.mulf(b, scale), b)
    p2 = _sel(small, arith.mulf(p, scale), p)
    residual = math.fma(a2, b2, arith.negf(p2))
    # (a product that rounded to 0 is below even the scaled range: its sign is the residual's)
    return _sel(_cmpf("OEQ", p, _c(w, 0.0)), _product_sign(a, b), residual)


def _rounded(op: str, mode: str):
    def build(conv, args, t):
        if mode == "rn":
            return _nearest(op, args)
        hi, lo = _exact_pair(op, args, t)
        return _directed(hi, lo, t, mode)
    return build


def _nearest(op: str, args):
    a = args[0]
    return {"add": lambda: arith.addf(a, args[1]), "sub": lambda: arith.subf(a, args[1]),
            "mul": lambda: arith.mulf(a, args[1]), "div": lambda: arith.divf(a, args[1]),
            "rcp": lambda: arith.divf(_c(a.type, 1.0), a), "sqrt": lambda: math.sqrt(a),
            "fma": lambda: math.fma(a, args[1], args[2])}[op]()


# -- conversions ---------------------------------------------------------------
def _to_int(mode: str, width: int, signed: bool):
    """A float rounded by `mode` to an integer, saturating (NaN -> 0), as PTX's cvt."""
    def build(conv, args, t):
        x = args[0]
        r = {"rn": math.roundeven, "rz": math.trunc, "rd": math.floor, "ru": math.ceil}[mode](x)
        lo = -(2.0 ** (width - 1)) if signed else 0.0
        hi = 2.0 ** (width - 1) if signed else 2.0 ** width          # (exclusive)
        it = _i(width)
        conv_ = arith.fptosi if signed else arith.fptoui
        inside = arith.andi(_cmpf("OGE", r, _c(x.type, lo)), _cmpf("OLT", r, _c(x.type, hi)))
        safe = _sel(inside, r, _c(x.type, 0.0))
        v = conv_(it, safe)
        top = _c(it, (2 ** (width - 1) - 1) if signed else -1)
        bottom = _c(it, -(2 ** (width - 1)) if signed else 0)
        v = _sel(inside, v, _sel(_cmpf("OGE", r, _c(x.type, hi)), top, bottom))
        return _sel(_cmpf("UNO", x, x), _c(it, 0), v)
    return build


def _int_to_float(mode: str, width: int, signed: bool):
    """An integer converted to f32/f64, rounded by `mode`."""
    def build(conv, args, t):
        x = args[0]
        if mode == "rn":
            return (arith.sitofp if signed else arith.uitofp)(t, x)
        f64 = F64.get()
        if width == 32:                                  # (exact in f64)
            return _directed((arith.sitofp if signed else arith.uitofp)(f64, x), _c(f64, 0.0), t, mode)
        i64 = _i(64)
        high = (arith.shrsi if signed else arith.shrui)(x, _c(i64, 32))
        low = arith.andi(x, _c(i64, 0xFFFFFFFF))
        h = arith.mulf((arith.sitofp if signed else arith.uitofp)(f64, high), _c(f64, 2.0 ** 32))
        s, e = _two_sum(h, arith.uitofp(f64, low))
        return _directed(s, e, t, mode)
    return build


def _double2float(mode: str):
    def build(conv, args, t):
        if mode == "rn":
            return arith.truncf(t, args[0])
        return _directed(args[0], _c(args[0].type, 0.0), t, mode)
    return build


def _cast(kind: str):
    def build(conv, args, t):
        x = args[0]
        if kind == "bitcast":
            return arith.bitcast(t, x)
        i64 = _i(64)
        if kind in ("hi", "lo"):
            b = arith.bitcast(i64, x)
            return arith.trunci(t, arith.shrui(b, _c(i64, 32)) if kind == "hi" else b)
        hi, lo = args
        b = arith.ori(arith.shli(arith.extui(i64, hi), _c(i64, 32)), arith.extui(i64, lo))
        return arith.bitcast(t, b)
    return build


# -- integer functions ----------------------------------------------------------
def _brev(conv, args, t):
    x = args[0]
    width = ir.IntegerType(t).width
    masks = [(1, 0x5555555555555555), (2, 0x3333333333333333), (4, 0x0F0F0F0F0F0F0F0F),
             (8, 0x00FF00FF00FF00FF), (16, 0x0000FFFF0000FFFF), (32, 0x00000000FFFFFFFF)]
    for shift, mask in masks:
        if shift >= width:
            break
        m = mask & ((1 << width) - 1)
        m = m - (1 << width) if m >= 1 << (width - 1) else m
        sh = _c(t, shift)
        x = arith.ori(arith.andi(arith.shrui(x, sh), _c(t, m)), arith.shli(arith.andi(x, _c(t, m)), sh))
    return x


def _byte_perm(conv, args, t):
    """__byte_perm(x, y, s): byte n of the result is byte ((s >> 4n) & 7) of y:x."""
    x, y, s = args
    i64 = _i(64)
    both = arith.ori(arith.shli(arith.extui(i64, y), _c(i64, 32)), arith.extui(i64, x))
    s64 = arith.extui(i64, s)
    r = _c(i64, 0)
    for n in range(4):
        sel = arith.andi(arith.shrui(s64, _c(i64, 4 * n)), _c(i64, 7))
        byte = arith.andi(arith.shrui(both, arith.muli(sel, _c(i64, 8))), _c(i64, 0xFF))
        r = arith.ori(r, arith.shli(byte, _c(i64, 8 * n)))
    return arith.trunci(t, r)


def _ffs(conv, args, t):
    x = args[0]
    n = arith.addi(math.cttz(x), _c(x.type, 1))
    n = _sel(_cmpi("eq", x, _c(x.type, 0)), _c(x.type, 0), n)
    width = ir.IntegerType(x.type).width
    return n if width == 32 else arith.trunci(t, n)


def _halving(signed: bool, rounded: bool):
    """(x + y) >> 1 without overflow (+1 first where `rounded`)."""
    def build(conv, args, t):
        i64 = _i(64)
        ext = arith.extsi if signed else arith.extui
        s = arith.addi(ext(i64, args[0]), ext(i64, args[1]))
        if rounded:
            s = arith.addi(s, _c(i64, 1))
        return arith.trunci(t, (arith.shrsi if signed else arith.shrui)(s, _c(i64, 1)))
    return build


def _mul24(signed: bool):
    def build(conv, args, t):
        eight = _c(t, 8)
        xs = [arith.shrsi(arith.shli(a, eight), eight) if signed else arith.andi(a, _c(t, 0xFFFFFF))
              for a in args]
        return arith.muli(*xs)
    return build


def _mulhi(signed: bool):
    """The high half of the full product."""
    def build(conv, args, t):
        width = ir.IntegerType(t).width
        if width == 32:
            i64 = _i(64)
            ext = arith.extsi if signed else arith.extui
            p = arith.muli(ext(i64, args[0]), ext(i64, args[1]))
            return arith.trunci(t, arith.shrui(p, _c(i64, 32)))
        return _mulhi64(args[0], args[1], signed)
    return build


def _mulhi64(x, y, signed: bool):
    """The high 64 bits of a 64x64 product, from 32-bit halves."""
    i64 = x.type
    m32, s32 = _c(i64, 0xFFFFFFFF), _c(i64, 32)
    xl, xh = arith.andi(x, m32), arith.shrui(x, s32)
    yl, yh = arith.andi(y, m32), arith.shrui(y, s32)
    ll = arith.muli(xl, yl)
    lh = arith.muli(xl, yh)
    hl = arith.muli(xh, yl)
    hh = arith.muli(xh, yh)
    mid = arith.addi(arith.addi(arith.shrui(ll, s32), arith.andi(lh, m32)), arith.andi(hl, m32))
    high = arith.addi(arith.addi(hh, arith.shrui(lh, s32)), arith.addi(arith.shrui(hl, s32), arith.shrui(mid, s32)))
    if signed:          # (unsigned high half, less y where x < 0 and x where y < 0)
        zero = _c(i64, 0)
        high = arith.subi(high, _sel(_cmpi("slt", x, zero), y, zero))
        high = arith.subi(high, _sel(_cmpi("slt", y, zero), x, zero))
    return high


def _sad(signed: bool):
    """|x - y| + z."""
    def build(conv, args, t):
        x, y, z = args
        i64 = _i(64)
        ext = arith.extsi if signed else arith.extui
        d = arith.subi(ext(i64, x), ext(i64, y))
        d = _sel(_cmpi("slt", d, _c(i64, 0)), arith.subi(_c(i64, 0), d), d)
        return arith.addi(arith.trunci(t, d), z)
    return build


def _abs_int(conv, args, t):
    return math.absi(args[0])


# -- float functions -------------------------------------------------------------
def _in_f64(compute: Callable):
    """f32: computed in f64 and rounded once; f64 as it is."""
    def build(conv, args, t):
        if _is_f32(t) and all(_is_f32(a.type) for a in args):
            f64 = F64.get()
            return arith.truncf(t, compute(conv, [arith.extf(f64, a) for a in args], f64))
        return compute(conv, args, t)
    return build


def _libm(name: str, conv, args, t, arg_types=None):
    """A call of the C math library's `name` (`name` + "f" for f32)."""
    symbol = name + ("f" if _is_f32(t) else "")
    callee = conv.sites.declare(symbol, arg_types or [a.type for a in args], [t])
    return func.CallOp([t], callee, list(args)).result


def _signbit(conv, args, t):
    x = args[0]
    it, width, _, _ = _bits(x.type)
    s = arith.shrui(arith.bitcast(it, x), _c(it, width - 1))
    return s if width == 32 else arith.trunci(t, s)


def _fdim(conv, args, t):
    x, y = args
    d = arith.subf(x, y)
    return _sel(_cmpf("UGT", x, y), d, _sel(_cmpf("UNO", x, y), d, _c(t, 0.0)))


def _saturate(conv, args, t):
    x = args[0]
    # (NaN -> 0, as CUDA's __saturatef)
    return arith.minnumf(arith.maxnumf(_sel(_cmpf("UNO", x, x), _c(t, 0.0), x), _c(t, 0.0)), _c(t, 1.0))


def _ilogb(conv, args, t):
    """The unbiased exponent; INT_MIN for 0 and NaN, INT_MAX for infinities (CUDA's)."""
    x = args[0]
    it, width, mant, bias = _bits(x.type)
    b = arith.andi(arith.bitcast(it, x), _c(it, (1 << (width - 1)) - 1))
    e = arith.shrui(b, _c(it, mant))
    normal = arith.subi(e, _c(it, bias))
    # subnormal: (width - 1 - clz(b)) - (bias - 1 + mant)
    sub = arith.subi(arith.subi(_c(it, width - 1), math.ctlz(b)), _c(it, bias - 1 + mant))
    r = _sel(_cmpi("eq", e, _c(it, 0)), sub, normal)
    r = r if width == 32 else arith.trunci(t, r)
    i32 = t
    r = _sel(_cmpf("OEQ", math.absf(x), _c(x.type, float("inf"))), _c(i32, 2 ** 31 - 1), r)
    return _sel(_cmpf("UEQ", x, _c(x.type, 0.0)), _c(i32, -(2 ** 31)), r)


def _logb(conv, args, t):
    x = args[0]
    e = arith.sitofp(t, _ilogb(conv, args, _i(32)))
    size = math.absf(x)
    e = _sel(_cmpf("OEQ", size, _c(t, float("inf"))), size, e)
    e = _sel(_cmpf("OEQ", x, _c(t, 0.0)), _c(t, float("-inf")), e)
    return _sel(_cmpf("UNO", x, x), x, e)


def _pow2(t: ir.Type, n):
    """2**n as a float of type t, n an i32 within the normal exponents."""
    it, width, mant, bias = _bits(t)
    n = n if width == 32 else arith.extsi(it, n)
    return arith.bitcast(t, arith.shli(arith.addi(n, _c(it, bias)), _c(it, mant)))


def _scalbn(conv, args, t):
    """x * 2**n, rounded once: n is clamped (beyond, the result saturates
    anyway) and applied in steps that keep every intermediate normal but the
    last."""
    x, n = args
    i32 = n.type
    _, width, mant, bias = _bits(t)
    emax, reach = bias, 2 * bias + mant + 2
    n = arith.maxsi(arith.minsi(n, _c(i32, reach)), _c(i32, -reach))
    for _ in range(2):
        big = _cmpi("sgt", n, _c(i32, emax))
        x = _sel(big, arith.mulf(x, _pow2(t, _c(i32, emax))), x)
        n = _sel(big, arith.subi(n, _c(i32, emax)), n)
        step = mant + 2 - bias        # (2**(1 - bias) * 2**(mant + 1): what is left is then below
                                      # -(mant + 1), so a result that went subnormal is not rounded twice)
        small = _cmpi("slt", n, _c(i32, 1 - bias))
        x = _sel(small, arith.mulf(x, _pow2(t, _c(i32, step))), x)
        n = _sel(small, arith.subi(n, _c(i32, step)), n)
    n = arith.maxsi(arith.minsi(n, _c(i32, emax)), _c(i32, 1 - bias))
    return arith.mulf(x, _pow2(t, n))


def _nextafter(conv, args, t):
    x, y = args
    up = _next(x, up=True)
    down = _next(x, up=False)
    # from +-0 the smallest subnormal with the sign of the direction
    r = _sel(_cmpf("OLT", x, y), up, down)
    r = _sel(_cmpf("OEQ", x, y), y, r)
    return _sel(arith.ori(_cmpf("UNO", x, x), _cmpf("UNO", y, y)), arith.addf(x, y), r)


def _llround(conv, args, t):
    return _to_int("rz", 64, True)(conv, [math.round(args[0])], t)


def _llrint(conv, args, t):
    return _to_int("rn", 64, True)(conv, args, t)


def _rsqrt(conv, args, t):
    x = args[0]
    return arith.divf(_c(t, 1.0), math.sqrt(x))


def _rsqrt_rn(conv, args, t):
    """1/sqrt(x) rounded once (f32): the f64 value's f32 neighbours, the
    midpoint m between them compared exactly: 1/sqrt(x) > m <=> m*m*x < 1."""
    x = args[0]
    f64 = F64.get()
    xd = arith.extf(f64, x)
    z = arith.divf(_c(f64, 1.0), math.sqrt(xd))
    r = arith.truncf(t, z)
    rd = arith.extf(f64, r)
    other = arith.extf(f64, _sel(_cmpf("OLT", rd, z), _next(r, True), _next(r, False)))
    m = arith.mulf(arith.addf(rd, other), _c(f64, 0.5))              # (exact: 25 bits)
    m2 = arith.mulf(m, m)                                           # (exact: 50 bits)
    p = arith.mulf(m2, xd)
    e = math.fma(m2, xd, arith.negf(p))
    diff = arith.subf(p, _c(f64, 1.0))
    d = _sel(_cmpf("OEQ", diff, _c(f64, 0.0)), e, diff)           # sign of m*m*x - 1
    # m between r and other: where 1/sqrt(x) is beyond m (on other's side), other; on m, the even one
    beyond_other = _sel(_cmpf("OGT", other, rd), _cmpf("OLT", d, _c(f64, 0.0)), _cmpf("OGT", d, _c(f64, 0.0)))
    it = _i(32)
    r_even = _cmpi("eq", arith.andi(arith.bitcast(it, r), _c(it, 1)), _c(it, 0))
    tie = _cmpf("OEQ", d, _c(f64, 0.0))
    pick_other = arith.ori(beyond_other, arith.andi(tie, _not(r_even)))
    result = _sel(pick_other, arith.truncf(t, other), r)
    special = arith.ori(_cmpf("ULE", x, _c(t, 0.0)), _cmpf("OEQ", x, _c(t, float("inf"))))
    return _sel(special, arith.divf(_c(t, 1.0), math.sqrt(x)), result)


def _pi_reduced(x, cos: bool):
    """(r, sign): sinpi(x) = sign * sin(pi r) (cospi: cos(pi x) likewise),
    r in [-1/2, 1/2], by exact steps."""
    t = x.type
    if cos:
        x = math.absf(x)
    r = arith.subf(x, arith.mulf(_c(t, 2.0), math.roundeven(arith.mulf(x, _c(t, 0.5)))))  # [-1, 1]
    if cos:
        r = math.absf(r)                                     # cos(pi r), r in [0, 1]
        return arith.subf(_c(t, 0.5), r)                     # = sin(pi (1/2 - r)), exact for r >= 1/4
    far = _cmpf("OGT", math.absf(r), _c(t, 0.5))
    return _sel(far, arith.subf(math.copysign(_c(t, 1.0), r), r), r)


def _sinpi(cos: bool):
    def compute(conv, args, t):
        x = args[0]
        r = _pi_reduced(x, cos)
        y = math.sin(arith.mulf(_c(t, 3.141592653589793), r))
        inf = _cmpf("OEQ", math.absf(x), _c(t, float("inf")))
        y = _sel(inf, _c(t, float("nan")), y)
        if not cos:      # (sinpi(+-0) = +-0, and integers give zeros of x's sign)
            y = _sel(_cmpf("OEQ", y, _c(t, 0.0)), math.copysign(_c(t, 0.0), x), y)
        return y
    return _in_f64(compute)


def _exp10(conv, args, t):
    return math.powf(_c(t, 10.0), args[0])


def _rcbrt(conv, args, t):
    """1/cbrt(x), refined by a Newton step whose residual x y^3 - 1 is
    carried in two parts (y^2 and y^3 split by FMA)."""
    x = args[0]
    y = arith.divf(_c(t, 1.0), _libm("cbrt", conv, [x], t))
    a = arith.mulf(y, y)
    a_err = math.fma(y, y, arith.negf(a))
    b = arith.mulf(a, y)
    b_err = arith.addf(math.fma(a, y, arith.negf(b)), arith.mulf(a_err, y))
    residual = arith.addf(math.fma(x, b, _c(t, -1.0)), arith.mulf(x, b_err))
    refined = arith.subf(y, arith.mulf(y, arith.mulf(residual, _c(t, 1.0 / 3.0))))
    finite = arith.andi(_cmpf("ONE", x, _c(t, 0.0)), _cmpf("OLT", math.absf(x), _c(t, float("inf"))))
    return _sel(finite, refined, y)


def _hypot_of(conv, xs, t):
    """sqrt(sum of squares) without overflow or underflow: a chain of libm hypot."""
    h = _libm("hypot", conv, xs[:2], t)
    if len(xs) == 3:
        h = _libm("hypot", conv, [h, xs[2]], t)
    elif len(xs) == 4:
        h = _libm("hypot", conv, [h, _libm("hypot", conv, xs[2:], t)], t)
    return h


def _norm(reciprocal: bool):
    def compute(conv, args, t):
        h = _hypot_of(conv, args, t)
        return arith.divf(_c(t, 1.0), h) if reciprocal else h
    return compute


# erfinv and friends: a first guess (Winitzki's closed form, relative error
# below 2e-3) refined by Newton steps on erf(x) = y, or erfc(x) = q where the
# answer is large (erfc keeps the tail's relative precision).
_WINITZKI_A = 0.147
_TWO_OVER_SQRT_PI = 1.1283791670955126


def _erfc_inverse(conv, q, small_y):
    """x >= 0 with erfc(x) = q (q in (0, 1]); `small_y` = 1 - q where it is
    exact and small (Newton on erf then, as erf(x) = y keeps its precision)."""
    t = q.type

    def c(v):
        return _c(t, v)
    y = arith.subf(c(1.0), q)
    w = arith.negf(math.log(arith.mulf(q, arith.subf(c(2.0), q))))     # -log(1 - y^2)
    k = arith.addf(c(2.0 / (3.141592653589793 * _WINITZKI_A)), arith.mulf(w, c(0.5)))
    x = math.sqrt(arith.subf(math.sqrt(arith.subf(arith.mulf(k, k), arith.divf(w, c(_WINITZKI_A)))), k))
    use_erf = _cmpf("OLT", y, c(0.5))
    for _ in range(4):
        slope = arith.mulf(c(_TWO_OVER_SQRT_PI), math.exp(arith.negf(arith.mulf(x, x))))
        f_erf = arith.subf(_libm("erf", conv, [x], t), small_y)
        f_erfc = arith.subf(q, _libm("erfc", conv, [x], t))          # (erfc decreasing: sign flipped)
        f = _sel(use_erf, f_erf, f_erfc)
        step = arith.divf(f, slope)
        x = _sel(_cmpf("OGT", slope, c(0.0)), arith.subf(x, step), x)
    return x


def _erfinv(conv, args, t):
    y = args[0]
    size = math.absf(y)
    q = arith.subf(_c(t, 1.0), size)                 # (exact for |y| >= 1/2; else erf's branch is used)
    x = _erfc_inverse(conv, _sel(_cmpf("OEQ", q, _c(t, 0.0)), _c(t, 1.0), q), size)
    x = _sel(_cmpf("OEQ", size, _c(t, 1.0)), _c(t, float("inf")), x)
    x = _sel(_cmpf("OEQ", size, _c(t, 0.0)), _c(t, 0.0), x)
    x = _sel(_cmpf("UGT", size, _c(t, 1.0)), _c(t, float("nan")), x)
    return math.copysign(x, y)


def _erfcinv(conv, args, t):
    """erfc(x) = p, p in [0, 2]: for p > 1, -x with erfc(x) = 2 - p."""
    p = args[0]
    upper = _cmpf("OGT", p, _c(t, 1.0))
    q = _sel(upper, arith.subf(_c(t, 2.0), p), p)
    small_y = arith.subf(_c(t, 1.0), q)
    x = _erfc_inverse(conv, _sel(_cmpf("OEQ", q, _c(t, 0.0)), _c(t, 1.0), q), small_y)
    x = _sel(_cmpf("OEQ", q, _c(t, 0.0)), _c(t, float("inf")), x)
    x = _sel(upper, arith.negf(x), x)
    return _sel(arith.ori(_cmpf("ULT", p, _c(t, 0.0)), _cmpf("UGT", p, _c(t, 2.0))), _c(t, float("nan")), x)


def _normcdfinv(conv, args, t):
    """-sqrt(2) erfcinv(2p)."""
    return arith.mulf(_c(t, -1.4142135623730951), _erfcinv(conv, [arith.mulf(args[0], _c(t, 2.0))], t))


_SQRT_HALF = (0.7071067811865476, -4.833646656726457e-17)     # 1/sqrt(2) as a sum of two doubles


def _normcdf(conv, args, t):
    """erfc(z) / 2, z = -x / sqrt(2) = h + l exactly enough (h rounded, l its
    error): erfc(h) - l erfc'(h), as erfc's relative slope grows with z."""
    x = args[0]
    c, c_lo = (_c(t, v) for v in _SQRT_HALF)
    h = arith.negf(arith.mulf(x, c))
    l_ = arith.negf(arith.addf(math.fma(x, c, h), arith.mulf(x, c_lo)))
    slope = arith.mulf(_c(t, _TWO_OVER_SQRT_PI), math.exp(arith.negf(arith.mulf(h, h))))
    return arith.mulf(_c(t, 0.5), arith.subf(_libm("erfc", conv, [h], t), arith.mulf(l_, slope)))


def _erfcx(conv, args, t):
    """exp(x^2) erfc(x): exp of x^2 split exactly in two (x^2 = h + l), so
    that the large exponent loses nothing; beyond x = 25, the asymptotic
    series (erfc underflows there)."""
    x = args[0]

    def c(v):
        return _c(t, v)
    h = arith.mulf(x, x)
    l_ = math.fma(x, x, arith.negf(h))
    direct = arith.mulf(arith.mulf(math.exp(h), arith.addf(c(1.0), l_)), _libm("erfc", conv, [x], t))
    # 1/(x sqrt(pi)) * sum_n (-1)^n (2n-1)!! u^n, u = 1/(2x^2), to n = 7 (the next term: below 4e-19)
    u = arith.divf(c(1.0), arith.mulf(c(2.0), h))
    series = c(-135135.0)
    for coefficient in (10395.0, -945.0, 105.0, -15.0, 3.0, -1.0, 1.0):
        series = arith.addf(arith.mulf(series, u), c(coefficient))
    asymptotic = arith.divf(series, arith.mulf(x, c(1.7724538509055159)))
    return _sel(_cmpf("OGT", x, c(25.0)), asymptotic, direct)


def _libm_fn(name: str):
    def build(conv, args, t):
        return _libm(name, conv, args, t)
    return build


def _math(op_name: str):
    """An MLIR math/arith op of the operands' type."""
    def build(conv, args, t):
        return ir.Operation.create(op_name, results=[t], operands=list(args)).result
    return build


# -- the table ----------------------------------------------------------------------
def _both(table: dict, name: str, fn: Fn, f32_name: str | None = None) -> None:
    """`__nv_<name>` (f64) and `__nv_<name>f` (f32)."""
    table[f"__nv_{name}"] = fn
    table[f"__nv_{f32_name or name + 'f'}"] = fn


_ROUNDINGS = ("rn", "rz", "rd", "ru")


def _make_table() -> dict[str, Fn]:
    t: dict[str, Fn] = {}
    _add_rounded(t)
    _add_integer_and_bits(t)
    _both(t, "fdim", Fn(_fdim, 0, "x - y where x > y, else +0", 2))
    t["__nv_saturatef"] = Fn(_saturate, 0, "x clamped to [0, 1] (NaN: 0)", 2)
    _both(t, "nearbyint", Fn(_math("math.roundeven"), 0, "rounded to the nearest integer, ties to even", 1))
    _both(t, "llrint", Fn(_llrint, 0, "rounded to the nearest i64, ties to even", 2))
    _both(t, "llround", Fn(_llround, 0, "rounded to the nearest i64, ties away from zero", 2))
    _both(t, "ilogb", Fn(_ilogb, 0, "the unbiased exponent (0, NaN: INT_MIN; inf: INT_MAX)", 3))
    _both(t, "logb", Fn(_logb, 0, "the unbiased exponent as a float", 3))
    _both(t, "ldexp", Fn(_scalbn, 0, "x * 2**n", 4))
    _both(t, "scalbn", Fn(_scalbn, 0, "x * 2**n", 4))
    _both(t, "powi", Fn(lambda conv, a, ty: math.powf(a[0], arith.sitofp(ty, a[1])), 2, "x ** n"))
    _both(t, "nextafter", Fn(_nextafter, 0, "the float after x towards y", 3))
    _both(t, "remainder", Fn(_libm_fn("remainder"), 0, "x - n y, n = x / y rounded to even"))
    _both(t, "hypot", Fn(_in_f64(_norm(False)), 3, "sqrt(x^2 + y^2)", ulps_f64=2))
    _both(t, "rhypot", Fn(_in_f64(_norm(True)), 2, "1 / sqrt(x^2 + y^2)", ulps_f64=2, cuda_f64=1))
    _both(t, "norm3d", Fn(_in_f64(_norm(False)), 3, "sqrt(a^2 + b^2 + c^2)", ulps_f64=2))
    _both(t, "rnorm3d", Fn(_in_f64(_norm(True)), 3, "1 / sqrt(a^2 + b^2 + c^2)", ulps_f64=2, cuda_f64=1))
    _both(t, "norm4d", Fn(_in_f64(_norm(False)), 3, "sqrt(a^2 + b^2 + c^2 + d^2)", ulps_f64=2))
    _both(t, "rnorm4d", Fn(_in_f64(_norm(True)), 3, "1 / sqrt(a^2 + b^2 + c^2 + d^2)", ulps_f64=2, cuda_f64=1))
    _both(t, "rsqrt", Fn(_in_f64(_rsqrt), 2, "1 / sqrt(x)", ulps_f64=2, cuda_f64=1))
    t["__nv_frsqrt_rn"] = Fn(_rsqrt_rn, 0, "1 / sqrt(x), rounded to nearest even", 12)
    _both(t, "rcbrt", Fn(_in_f64(_rcbrt), 1, "1 / cbrt(x)"))
    _both(t, "exp10", Fn(_in_f64(_exp10), 2, "10 ** x", ulps_f64=2, cuda_f64=1))
    _both(t, "sinpi", Fn(_sinpi(False), 1, "sin(pi x)", ulps_f64=2))
    _both(t, "cospi", Fn(_sinpi(True), 1, "cos(pi x)", ulps_f64=2))
    _both(t, "erfinv", Fn(_in_f64(_erfinv), 2, "the inverse of erf", 64, ulps_f64=5))
    _both(t, "erfcinv", Fn(_in_f64(_erfcinv), 4, "the inverse of erfc", 64, ulps_f64=6))
    _both(t, "normcdfinv", Fn(_in_f64(_normcdfinv), 5, "the inverse of the standard normal CDF", 64, ulps_f64=8))
    _both(t, "normcdf", Fn(_in_f64(_normcdf), 5, "the standard normal CDF", ulps_f64=5))
    _both(t, "erfcx", Fn(_in_f64(_erfcx), 4, "exp(x^2) erfc(x)", 24, ulps_f64=4))
    _both(t, "jn", Fn(_libm_fn("jn"), None, "the Bessel function J_n", 24))
    _both(t, "yn", Fn(_libm_fn("yn"), None, "the Bessel function Y_n", 24))
    _both(t, "lgamma", Fn(_libm_fn("lgamma"), 6, "log |Gamma(x)| (the C library's)", 24, ulps_f64=4))
    _both(t, "tgamma", Fn(_libm_fn("tgamma"), 5, "Gamma(x) (the C library's)", 24, ulps_f64=10))
    # CUDA's fast intrinsics: computed as accurately as their full forms (within their looser bounds)
    for fast, full in (("fast_sinf", "math.sin"), ("fast_cosf", "math.cos"), ("fast_tanf", "math.tan"),
                       ("fast_expf", "math.exp"), ("fast_logf", "math.log"), ("fast_log2f", "math.log2"),
                       ("fast_log10f", "math.log10"), ("fast_powf", "math.powf"),
                       ("fast_fdividef", "arith.divf")):
        t[f"__nv_{fast}"] = Fn(_math(full), 2, f"as {full.split('.')[1]} (accurately)")
    t["__nv_fast_exp10f"] = Fn(_in_f64(_exp10), 2, "as exp10 (accurately)")
    return t


def _add_rounded(t: dict[str, Fn]) -> None:
    """The arithmetic and conversions of each rounding mode."""
    for mode in _ROUNDINGS:
        for op in ("add", "sub", "mul", "div"):
            fn = Fn(_rounded(op, mode), 0, f"x {dict(add='+', sub='-', mul='*', div='/')[op]} y, rounded "
                    f"{_MODE_WORDS[mode]}", 4 if op != "div" else 12)
            t[f"__nv_f{op}_{mode}"] = t[f"__nv_d{op}_{mode}"] = fn
        t[f"__nv_frcp_{mode}"] = t[f"__nv_drcp_{mode}"] = Fn(_rounded("rcp", mode), 0,
                                                             f"1 / x, rounded {_MODE_WORDS[mode]}", 12)
        t[f"__nv_fsqrt_{mode}"] = t[f"__nv_dsqrt_{mode}"] = Fn(_rounded("sqrt", mode), 0,
                                                               f"sqrt(x), rounded {_MODE_WORDS[mode]}", 12)
        t[f"__nv_fmaf_{mode}"] = t[f"__nv_fma_{mode}"] = Fn(_rounded("fma", mode), 0,
                                                            f"x * y + z, rounded once {_MODE_WORDS[mode]}", 12)
        t[f"__nv_double2float_{mode}"] = Fn(_double2float(mode), 0, f"f64 to f32, rounded {_MODE_WORDS[mode]}", 2)
        for src in ("float", "double"):
            for dst, bits, signed in (("int", 32, True), ("uint", 32, False), ("ll", 64, True),
                                      ("ull", 64, False)):
                t[f"__nv_{src}2{dst}_{mode}"] = Fn(_to_int(mode, bits, signed), 0,
                                                   f"to a {'signed' if signed else 'unsigned'} {bits}-bit "
                                                   f"integer, rounded {_MODE_WORDS[mode]}, saturating", 2)
        for src, width, signed in (("int", 32, True), ("uint", 32, False), ("ll", 64, True), ("ull", 64, False)):
            t[f"__nv_{src}2float_{mode}"] = Fn(_int_to_float(mode, width, signed), 0,
                                               f"to f32, rounded {_MODE_WORDS[mode]}", 2)
            if width == 64:
                t[f"__nv_{src}2double_{mode}"] = Fn(_int_to_float(mode, width, signed), 0,
                                                    f"to f64, rounded {_MODE_WORDS[mode]}", 2)


def _add_integer_and_bits(t: dict[str, Fn]) -> None:
    """Exact conversions, bit-level functions and integer arithmetic."""
    t["__nv_int2double_rn"] = Fn(_int_to_float("rn", 32, True), 0, "to f64 (exact)", 1)
    t["__nv_uint2double_rn"] = Fn(_int_to_float("rn", 32, False), 0, "to f64 (exact)", 1)
    for name in ("float_as_int", "int_as_float", "float_as_uint", "uint_as_float", "double_as_longlong",
                 "longlong_as_double"):
        t[f"__nv_{name}"] = Fn(_cast("bitcast"), 0, "the same bits", 0)
    t["__nv_double2hiint"] = Fn(_cast("hi"), 0, "the high 32 bits", 1)
    t["__nv_double2loint"] = Fn(_cast("lo"), 0, "the low 32 bits", 1)
    t["__nv_hiloint2double"] = Fn(_cast("hilo"), 0, "the double of high and low 32 bits", 1)
    t["__nv_brev"] = t["__nv_brevll"] = Fn(_brev, 0, "bits reversed", 4)
    t["__nv_byte_perm"] = Fn(_byte_perm, 0, "bytes of y:x selected by s", 4)
    t["__nv_ffs"] = t["__nv_ffsll"] = Fn(_ffs, 0, "1 + the position of the lowest set bit, 0 for 0", 2)
    t["__nv_hadd"] = Fn(_halving(True, False), 0, "(x + y) >> 1 without overflow", 2)
    t["__nv_uhadd"] = Fn(_halving(False, False), 0, "(x + y) >> 1 without overflow, unsigned", 2)
    t["__nv_rhadd"] = Fn(_halving(True, True), 0, "(x + y + 1) >> 1 without overflow", 2)
    t["__nv_urhadd"] = Fn(_halving(False, True), 0, "(x + y + 1) >> 1 without overflow, unsigned", 2)
    t["__nv_mul24"] = Fn(_mul24(True), 0, "the low 32 bits of the product of the low 24 bits", 2)
    t["__nv_umul24"] = Fn(_mul24(False), 0, "the low 32 bits of the product of the low 24 bits", 2)
    t["__nv_mulhi"] = Fn(_mulhi(True), 0, "the high 32 bits of the product", 3)
    t["__nv_umulhi"] = Fn(_mulhi(False), 0, "the high 32 bits of the product, unsigned", 3)
    t["__nv_mul64hi"] = Fn(_mulhi(True), 0, "the high 64 bits of the product", 8)
    t["__nv_umul64hi"] = Fn(_mulhi(False), 0, "the high 64 bits of the product, unsigned", 8)
    t["__nv_sad"] = Fn(_sad(True), 0, "|x - y| + z", 3)
    t["__nv_usad"] = Fn(_sad(False), 0, "|x - y| + z, unsigned", 3)
    t["__nv_abs"] = t["__nv_llabs"] = Fn(_abs_int, 0, "|x|", 1)
    t["__nv_signbitf"] = t["__nv_signbitd"] = Fn(_signbit, 0, "1 where the sign bit is set", 1)


_MODE_WORDS = {"rn": "to nearest even", "rz": "towards zero", "rd": "down", "ru": "up"}

LIBDEVICE: dict[str, Fn] = _make_table()


def lookup(symbol: str) -> Fn | None:
    """How the dpu backend computes libdevice's `symbol`, or None (the older
    paths of elementwise.py: libm's functions, bit counts, classification)."""
    return LIBDEVICE.get(symbol)
