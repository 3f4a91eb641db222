"""Elementwise ops: arith/math on scalars and tensors, constants, casts, program ids.

On a tensor an elementwise op becomes a lazy tile whose element function
emits the same op on scalars, so chains fuse into the consumer's loop.
Integer division and remainder get a guarded divisor: on the host a zero
divisor (or INT_MIN / -1) would trap in lanes Triton leaves undefined.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, math

from ...target import dtypes
from ...lowering.floats import SATURATE_ATTR
from ...lowering.libdevice import lowering_for
from . import libdevice
from .bessel import BESSEL_I, bessel_i
from .core import (LaneRange, RowForm, Tile, and_valid, const_int, is_float, is_ptr, is_tensor, lowers,
                   scalar_type)
from .builders import cast_int, index_c
from . import ops

_DIVISIONS = {"arith.divsi", "arith.divui", "arith.remsi", "arith.remui",
              "arith.floordivsi", "arith.ceildivsi", "arith.ceildivui"}


def _attrs(op) -> dict:
    return {name: op.attributes[name] for name in op.attributes}


def emit_like(op, operands, result_types):
    """Emit `op` again on scalar `operands` (same name and attributes)."""
    return _emit(op.name, operands, result_types, _attrs(op), op.location)


def _emit(name, operands, result_types, attributes=None, loc=None):
    if name == "math.exp" and operands[0].type == ir.F32Type.get():
        return [exp_f32(operands[0])]
    if name in _DIVISIONS:
        operands = [operands[0], _safe_divisor(name, operands[0], operands[1])]
    new = ir.Operation.create(name, results=result_types, operands=operands, attributes=attributes, loc=loc)
    return list(new.results)


def exp_f32(x: ir.Value) -> ir.Value:
    """e**x for f32 in arithmetic only (no library call: vectorizable, and a
    DPU has no FPU to prefer a library for). x = k ln2 + r with |r| <= ln2/2
    (ln2 split in two so that k ln2 is exact), e**r by its Taylor polynomial
    of degree 7 (truncation error below 1e-8), times 2**k built from exponent
    bits in two halves (so that results down to the subnormals are reached)."""
    f32, i32 = ir.F32Type.get(), ir.IntegerType.get_signless(32)

    def c(v):
        return arith.constant(f32, v)
    xc = arith.minnumf(arith.maxnumf(x, c(-104.0)), c(89.0))
    k = math.roundeven(arith.mulf(xc, c(1.4426950408889634)))
    r = arith.subf(xc, arith.mulf(k, c(0.693145751953125)))
    r = arith.subf(r, arith.mulf(k, c(1.428606765330187e-06)))
    p = c(1.0 / 5040.0)
    for coef in (1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0):
        p = arith.addf(arith.mulf(p, r), c(coef))
    ki = arith.fptosi(i32, k)
    k1 = arith.shrsi(ki, arith.constant(i32, 1))
    k2 = arith.subi(ki, k1)

    def pow2(e):
        bits = arith.shli(arith.addi(e, arith.constant(i32, 127)), arith.constant(i32, 23))
        return arith.bitcast(f32, bits)
    y = arith.mulf(arith.mulf(p, pow2(k1)), pow2(k2))
    nan = arith.cmpf(arith.CmpFPredicate.UNO, x, x)
    return arith.select(nan, x, y)


def _safe_divisor(name, x, d):
    """`d`, with 0 replaced by 1 (and -1 by 1 when signed, fixed up by the caller)."""
    t = d.type
    zero = arith.constant(t, 0)
    one = arith.constant(t, 1)
    bad = arith.cmpi(arith.CmpIPredicate.eq, d, zero)
    if name in ("arith.divsi", "arith.remsi", "arith.floordivsi", "arith.ceildivsi"):
        minus_one = arith.constant(t, -1)
        bad = arith.ori(bad, arith.cmpi(arith.CmpIPredicate.eq, d, minus_one))
    return arith.select(bad, one, d)


def _elem(t: ir.Type) -> ir.Type:
    return scalar_type(ir.RankedTensorType(t).element_type) if is_tensor(t) else scalar_type(t)


@lowers("<elementwise>")
def lower_elementwise(conv, op):
    """arith.* / math.* on scalars or same-shape tensors."""
    if len(op.results) != 1:
        raise conv.sites.error(op, f"operation '{op.name}' is not supported by the DPU backend")
    result = op.results[0]
    operands = [conv.values.get(v) for v in op.operands]
    if not is_tensor(result.type):
        out = emit_like(op, operands, [_elem(result.type)])[0]     # (a pointer: its address)
        if op.name in ("arith.divsi", "arith.floordivsi", "arith.ceildivsi"):
            out = _fix_minus_one(op, operands, out)
        conv.values.set(result, out, op)
        return
    shape = tuple(ir.RankedTensorType(result.type).shape)
    elem = _elem(result.type)
    cost = 1 + sum(o.cost for o in operands if isinstance(o, Tile))

    def element(ivs, op=op, operands=operands, elem=elem):
        vals = [o.at(ivs) if isinstance(o, Tile) else o for o in operands]
        out = emit_like(op, vals, [elem])[0]
        if op.name in ("arith.divsi", "arith.floordivsi", "arith.ceildivsi"):
            out = _fix_minus_one(op, vals, out)
        return out

    cost += _EXPENSIVE.get(op.name, 0)
    row, lanes = _row_rules(op, operands, elem, shape[-1])
    conv.values.set(result, Tile(shape, elem, fn=element, cost=cost, row=row, lanes=lanes), op)


# Extra cost of ops much slower than an add: a value computed with one is
# worth a WRAM buffer when it is used more than once.
_EXPENSIVE = {name: 8 for name in (
    "math.exp", "math.exp2", "math.log", "math.log2", "math.log10", "math.sqrt", "math.rsqrt",
    "math.sin", "math.cos", "math.tan", "math.tanh", "math.erf", "math.powf", "math.atan",
    "math.atan2", "math.expm1", "math.log1p", "arith.divf", "arith.remf")}

_SWAPPED = {2: 4, 3: 5, 4: 2, 5: 3}          # slt <-> sgt, sle <-> sge
_EQ = 0


def _row(v):
    if isinstance(v, Tile):
        return v.row
    return RowForm(lambda rivs: v, 0, const=const_int(v))


def _lanes(v, lanes: int):
    """The active lanes of an i1 operand, in closed form, or None."""
    if isinstance(v, Tile) and v.lanes is not None:
        return v.lanes
    r = _row(v)
    if r is None or r.stride != 0:
        return None
    i64 = ir.IntegerType.get_signless(64)

    def bounds(rivs):
        on = r.base(rivs)
        return (arith.constant(i64, 0),
                arith.select(on, arith.constant(i64, lanes), arith.constant(i64, 0)), None)
    return LaneRange(bounds)


def _row_rules(op, operands, elem, lanes: int):
    """(row form, lane range) of an elementwise result, from its operands'."""
    name = op.name
    i1 = ir.IntegerType.get_signless(1)
    rows = [_row(o) for o in operands]
    if name == "arith.andi" and elem == i1:
        ranges = [_lanes(o, lanes) for o in operands]
        if all(r is not None for r in ranges):
            a, b = ranges

            def bounds(rivs):
                lo1, hi1, v1 = a.bounds(rivs)
                lo2, hi2, v2 = b.bounds(rivs)
                return arith.maxsi(lo1, lo2), arith.minsi(hi1, hi2), and_valid(v1, v2)
            row = None
            if all(r is not None and r.stride == 0 for r in rows):
                row = RowForm(lambda rivs: arith.andi(rows[0].base(rivs), rows[1].base(rivs)), 0)
            return row, LaneRange(bounds)
    if any(r is None for r in rows):
        return None, None
    if all(r.stride == 0 for r in rows):
        def base(rivs):
            out = emit_like(op, [r.base(rivs) for r in rows], [elem])[0]
            if name in ("arith.divsi", "arith.floordivsi", "arith.ceildivsi"):
                out = _fix_minus_one(op, [r.base(rivs) for r in rows], out)
            return out
        return RowForm(base, 0), None
    if not isinstance(elem, ir.IntegerType):
        return None, None
    a, b = rows[0], rows[-1]
    if name in ("arith.addi", "arith.subi"):
        sign = 1 if name == "arith.addi" else -1
        emit = arith.addi if sign == 1 else arith.subi
        return RowForm(lambda rivs: emit(a.base(rivs), b.base(rivs)), a.stride + sign * b.stride), None
    if name == "arith.muli":
        for x, y in ((a, b), (b, a)):
            if y.stride == 0 and y.const is not None:
                return RowForm(lambda rivs: arith.muli(a.base(rivs), b.base(rivs)),
                               x.stride * y.const), None
        return None, None
    if name == "arith.extsi":
        from .shape import no_wrap

        def valid(rivs):
            return and_valid(a.valid(rivs) if a.valid else None, no_wrap(a.base(rivs), a.stride, lanes))
        return RowForm(lambda rivs: arith.extsi(elem, a.base(rivs)), a.stride, valid=valid), None
    if name == "arith.cmpi" and elem == i1:
        pred = ir.IntegerAttr(op.attributes["predicate"]).value
        if a.stride == 0 and b.stride == 1 and (pred in _SWAPPED or pred == _EQ):
            a, b, pred = b, a, _SWAPPED.get(pred, pred)
        if not (a.stride == 1 and b.stride == 0 and (pred in _SWAPPED or pred == _EQ)):
            return None, None
        width = ir.IntegerType(operands[0].elem if isinstance(operands[0], Tile)
                               else operands[0].type).width
        if width > 32:
            return None, None
        return None, LaneRange(lambda rivs: _compare_bounds(a, b, pred, lanes, rivs))
    return None, None


def _compare_bounds(a, b, pred: int, lanes: int, rivs):
    """Lanes j with (a + j) <pred> b, given that a + j never wraps."""
    from .shape import no_wrap
    i64 = ir.IntegerType.get_signless(64)
    av, bv = a.base(rivs), b.base(rivs)
    d = arith.subi(arith.extsi(i64, bv), arith.extsi(i64, av))
    zero, full = arith.constant(i64, 0), arith.constant(i64, lanes)

    def clip(v):
        return arith.minsi(arith.maxsi(v, zero), full)
    start, width = const_int(av), ir.IntegerType(av.type).width
    fits = start is not None and -(1 << (width - 1)) <= start + lanes - 1 < 1 << (width - 1)
    valid = and_valid(a.valid(rivs) if a.valid else None, None if fits else no_wrap(av, 1, lanes))
    if pred == _EQ:                          # eq: [d, d + 1)
        return clip(d), clip(arith.addi(d, arith.constant(i64, 1))), valid
    if pred in (3, 4):                       # sle, sgt: j <= d  /  j > d
        d = arith.addi(d, arith.constant(i64, 1))
    cut = clip(d)
    if pred in (2, 3):                       # slt, sle: [0, cut)
        return zero, cut, valid
    return cut, full, valid                  # sgt, sge: [cut, lanes)


def _fix_minus_one(op, vals, out):
    """x / -1 is -x (the guarded divisor computed x / 1)."""
    d = vals[1]
    minus_one = arith.constant(d.type, -1)
    is_m1 = arith.cmpi(arith.CmpIPredicate.eq, d, minus_one)
    neg = arith.subi(arith.constant(d.type, 0), vals[0])
    return arith.select(is_m1, neg, out)


@lowers("arith.constant")
def lower_constant(conv, op):
    result = op.results[0]
    value = op.attributes["value"]
    if not is_tensor(result.type):
        conv.values.set(result, arith.constant(result.type, value))
        return
    rt = ir.RankedTensorType(result.type)
    dense = ir.DenseElementsAttr(value)
    shape, elem = tuple(rt.shape), rt.element_type
    if dense.is_splat:
        splat = dense.get_splat_value()

        def element(ivs, splat=splat, elem=elem):
            return arith.constant(elem, splat)
        known = ir.IntegerAttr(splat).value if isinstance(elem, ir.IntegerType) and elem.width > 1 else None
        row = RowForm(lambda rivs, splat=splat, elem=elem: arith.constant(elem, splat), 0, const=known)
        conv.values.set(result, Tile(shape, elem, fn=element, cost=0, row=row), op)
        return
    # A non-uniform constant: written once into a WRAM buffer.
    buf = conv.buffers.alloca(shape, elem, "constant tensor", op)
    n = len(dense)
    if n > 4096:
        raise conv.sites.error(op, f"constant tensor of {n} elements is too large for the DPU backend")
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    with conv.tasklets.single():
        for flat in range(n):
            ivs = [index_c((flat // strides[d]) % shape[d]) for d in range(len(shape))]
            conv.buffers.store(arith.constant(elem, dense[flat]), buf, ivs)
    conv.values.set(result, Tile(shape, elem, buf=buf, accesses=conv.buffers.accesses), op)


@lowers("ub.poison")
def lower_poison(conv, op):
    t = op.results[0].type
    elem = _elem(t)
    zero = (lambda: arith.constant(elem, 0.0)) if is_float(elem) else (lambda: arith.constant(elem, 0))
    if is_tensor(t):
        conv.values.set(op.results[0], Tile(tuple(ir.RankedTensorType(t).shape), elem, fn=lambda ivs: zero(), cost=0))
    else:
        conv.values.set(op.results[0], zero())


@lowers("llvm.intr.assume")
def lower_assume(conv, op):
    """`tl.assume(c)`: kept for LLVM (UB when false, as on GPUs)."""
    from mlir.dialects import llvm
    cond = conv.values.get(op.operands[0])
    if isinstance(cond, Tile):
        raise conv.sites.error(op, "tl.assume of a tensor is not supported by the DPU backend")
    llvm.intr_assume(cond, [], [])


@lowers("tt.get_program_id")
def lower_program_id(conv, op):
    conv.values.set(op.results[0], conv.program_ids[ops.GetProgramId(op).axis])


@lowers("tt.get_num_programs")
def lower_num_programs(conv, op):
    conv.values.set(op.results[0], conv.num_programs[ops.GetNumPrograms(op).axis])


def _map_unary(conv, op, fn, extra_cost=1):
    """Lower a one-operand op whose scalar form is `fn(value) -> value`."""
    src = conv.values.get(op.operands[0])
    result = op.results[0]
    if not isinstance(src, Tile):
        conv.values.set(result, fn(src), op)
        return
    shape = tuple(ir.RankedTensorType(result.type).shape)
    conv.values.set(result, Tile(shape, _elem(result.type), fn=lambda ivs: fn(src.at(ivs)),
                          cost=src.cost + extra_cost), op)


@lowers("tt.bitcast")
def lower_bitcast(conv, op):
    src_t, dst_t = _elem(ops.Bitcast(op).src.type), _elem(op.results[0].type)
    if src_t == dst_t:                  # pointer to pointer: the address is unchanged
        _map_unary(conv, op, lambda v: v, 0)
    else:
        _map_unary(conv, op, lambda v: arith.bitcast(dst_t, v))


@lowers("tt.ptr_to_int", "tt.int_to_ptr")
def lower_ptr_int(conv, op):
    dst_t = _elem(op.results[0].type)
    _map_unary(conv, op, lambda v: cast_int(v, dst_t, signed=False), 0)


@lowers("tt.fp_to_fp")
def lower_fp_to_fp(conv, op):
    """`tl.cast` between float formats (fp8 included), rounded as the op's
    `rounding` attribute says (rtne when absent)."""
    dst_t = _elem(op.results[0].type)
    rounding = ops.FpToFp(op).rounding
    if rounding not in ("rtne", "rtz"):
        raise conv.sites.error(op, f"rounding mode '{rounding}' of tl.cast is not supported by the DPU backend")
    _map_unary(conv, op, lambda v: convert_float(v, dst_t, rounding == "rtz"))


def convert_float(v: ir.Value, dst_t: ir.Type, toward_zero: bool = False) -> ir.Value:
    """Float `v` as `dst_t`: exact when widening, else rounded to nearest even
    (or toward zero). Into a format of 8 bits or fewer, overflow and
    infinities saturate to the largest finite value and NaN stays NaN, as
    Triton's GPU backends convert (NVIDIA's `cvt.rn.satfinite`, AMD's
    saturating fp8 conversions); rounding toward zero keeps the infinities of
    a format that has them (NVIDIA truncates an f16 into e5m2). The integer
    code is the lowering's (`edsl.lowering.floats`, `edsl.saturate`); two
    formats of one width convert through f32 (exact)."""
    src_w, dst_w = ir.FloatType(v.type).width, ir.FloatType(dst_t).width
    if v.type == dst_t:
        return v
    if dst_w > src_w:
        return arith.extf(dst_t, v)
    if src_w == dst_w:
        v = arith.extf(ir.F32Type.get(), v)
    mode = arith.RoundingMode.toward_zero if toward_zero else None
    out = arith.truncf(dst_t, v, roundingmode=mode)
    fmt = dtypes.float_format(str(dst_t))
    if dst_w <= 8 and not (toward_zero and fmt.kind == "ieee"):
        out.owner.attributes[SATURATE_ATTR] = ir.UnitAttr.get()
    return out


@lowers("tt.precise_sqrt")
def lower_precise_sqrt(conv, op):
    _map_unary(conv, op, math.sqrt)


def _map_nary(conv, op, fn, extra_cost=1):
    vals = [conv.values.get(v) for v in op.operands]
    result = op.results[0]
    if not any(isinstance(v, Tile) for v in vals):
        conv.values.set(result, fn(*vals), op)
        return
    shape = tuple(ir.RankedTensorType(result.type).shape)
    cost = extra_cost + sum(v.cost for v in vals if isinstance(v, Tile))
    conv.values.set(result, Tile(shape, _elem(result.type),
                          fn=lambda ivs: fn(*[v.at(ivs) if isinstance(v, Tile) else v for v in vals]),
                          cost=cost), op)


def _lower_bessel_i(conv, op, symbol: str, base: str, elem: ir.Type) -> None:
    """libdevice's I0 or I1 on f32 or f64: a call of the module's f64
    function. f32 is computed in f64 too: in f32 the series' cancellation
    near x = 8 costs up to 20 ulps; from f64 the rounded result is within an
    ulp."""
    f32, f64 = ir.F32Type.get(), ir.F64Type.get()
    if elem not in (f32, f64):
        raise conv.sites.error(op, f"extern function '{symbol}' is supported for float32 and float64 "
                             f"only (got {elem})")
    callee = bessel_i(conv, base)

    def call(x):
        if elem == f64:
            return func.CallOp([f64], callee, [x]).result
        return arith.truncf(f32, func.CallOp([f64], callee, [arith.extf(f64, x)]).result)
    _map_nary(conv, op, call, 1 + 16)


@lowers("tt.extern_elementwise")
def lower_extern_elementwise(conv, op):
    """A `tl.extra.libdevice` function (the dpu backend maps that module to
    Triton's CUDA one, whose functions call `__nv_<name>`) that is one of
    libm's: the MLIR op computing it, as `tl.math` functions are lowered; the
    Bessel functions I0 and I1: a call of a function the module defines."""
    symbol = ops.ExternElementwise(op).symbol
    elem = _elem(op.results[0].type)
    fn = libdevice.lookup(symbol)
    if fn is not None:
        _map_nary(conv, op, lambda *xs: fn.build(conv, list(xs), elem), 1 + fn.cost)
        return
    base = symbol.removeprefix("__nv_").removesuffix("f")
    if base in BESSEL_I and symbol.startswith("__nv_"):
        _lower_bessel_i(conv, op, symbol, base, elem)
        return
    kind, name = lowering_for(symbol) or (None, None)
    if kind == "math":
        _map_nary(conv, op, lambda *xs: _emit(name, list(xs), [elem], loc=op.location)[0],
                  1 + _EXPENSIVE.get(name, 0))
    elif kind == "bits":
        def bits(x):
            v = _emit(name, [x], [x.type], loc=op.location)[0]
            width, want = ir.IntegerType(x.type).width, ir.IntegerType(elem).width
            return v if width == want else arith.extui(elem, v) if width < want else arith.trunci(elem, v)
        _map_nary(conv, op, bits)
    elif kind == "classify":
        def classify(x):
            if name == "isnan":
                return arith.extui(elem, arith.cmpf(arith.CmpFPredicate.UNO, x, x))
            inf = arith.constant(x.type, float("inf"))
            size = math.absf(x)
            if name == "isinf":
                return arith.extui(elem, arith.cmpf(arith.CmpFPredicate.OEQ, size, inf))
            return arith.extui(elem, arith.cmpf(arith.CmpFPredicate.OLT, size, inf))   # (not NaN)
        _map_nary(conv, op, classify)
    elif kind == "libm":
        callee = conv.sites.declare(name, [elem], [elem])
        _map_nary(conv, op, lambda x: func.CallOp([elem], callee, [x]).result, 1 + 16)
    else:
        raise conv.sites.error(op, f"extern function '{symbol}' is not supported by the DPU backend "
                             "(docs/libdevice.md lists the libdevice functions it computes)")


@lowers("tt.precise_divf")
def lower_precise_divf(conv, op):
    _map_nary(conv, op, arith.divf)


@lowers("tt.mulhiui")
def lower_mulhiui(conv, op):
    def mulhi(x, y):
        t = x.type
        wide = ir.IntegerType.get_signless(2 * t.width)
        p = arith.muli(arith.extui(wide, x), arith.extui(wide, y))
        return arith.trunci(t, arith.shrui(p, arith.constant(wide, t.width)))
    _map_nary(conv, op, mulhi, 3)


@lowers("tt.clampf")
def lower_clampf(conv, op):
    propagate = ops.ClampF(op).propagate_nan
    lo_fn, hi_fn = (arith.maximumf, arith.minimumf) if propagate else (arith.maxnumf, arith.minnumf)
    _map_nary(conv, op, lambda x, lo, hi: hi_fn(lo_fn(x, lo), hi), 2)


def is_pointer_value(t: ir.Type) -> bool:
    return is_ptr(ir.RankedTensorType(t).element_type) if is_tensor(t) else is_ptr(t)
