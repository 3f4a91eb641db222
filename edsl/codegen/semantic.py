"""Typing and promotion rules, and the IR they emit.

The code generator only walks syntax; every decision about types lives here.
A value in an edsl body is either *static* (a Python number, known at compile
time and folded by Python) or *dynamic* (an `ir.Value`).

Promotion rules (documented in docs/language.md, "Types and promotion"):
  * Python numbers are weak: combined with a dynamic value they take its type
    (an int with a float value takes the float type; a float with an integer
    value gives f32). Alone, where a type is needed: bool -> i1, int -> i64,
    float -> f32.
  * Two dynamic values: i1 < integers < floats. Between integers the wider
    wins (`index` counts as 64 bits and wins over i64); between floats the
    wider wins (f16 with bf16 gives f32). An integer with a float gives the
    float type.
  * `/` is true division: integers are converted to f32 first (f64 if the
    other operand is f64). `//` and `%` follow Python: floor division, and a
    remainder with the sign of the divisor. Integer `// 0` and `% 0` give 0
    (as NumPy does, without its warning) instead of trapping.
  * Integer arithmetic wraps (two's complement), as NumPy's fixed-width
    integers do. Shifts by the bit width or more give 0 (`<<`) or fill with
    the sign bit (`>>`, which is arithmetic). Integers are signed.
  * Floats follow IEEE 754: NaN propagates through arithmetic, `min`/`max`
    (as np.minimum/np.maximum); `==` is false and `!=` true on NaN.
  * Conditions (`if`, `while`, `and`, `or`, `not`) take the truth of a value:
    non-zero integers and floats are true.
"""
from __future__ import annotations

import ast
import numbers
from contextvars import ContextVar

import numpy as np
from mlir import ir
from mlir.dialects import arith, math, memref, scf

from ..target import dtypes
from ..target import dpu as abi
from ..base.errors import TypeMismatchError

Static = (bool, int, float, np.bool_, np.number)

# `@edsl.dialect(fastmath=True)`: float + - * / may be reassociated and
# contracted (LLVM's `fast` flags), which lets reductions vectorize.
FASTMATH: ContextVar[bool] = ContextVar("edsl_fastmath", default=False)

# Values of the function being generated that are never negative by how they
# were made (the NVVM thread and block registers edsl reads: `lower_bound`
# cannot ask their op's name without the bindings importing the NVVM
# dialect's Python module, ~9 ms, see intrinsics.BY_NAME).
NON_NEGATIVE: ContextVar[set] = ContextVar("edsl_non_negative")


def _fast(op):
    def build(a, b):
        if FASTMATH.get():
            return op(a, b, fastmath=ir.Attribute.parse("#arith.fastmath<fast>"))
        return op(a, b)
    return build


def is_static(x) -> bool:
    return isinstance(x, Static)


def val(x):
    """An operation with one result (as MLIR builders return) stands for that result."""
    if isinstance(x, ir.OpView) and len(x.operation.results) == 1:
        return x.operation.result
    return x


# --- types ------------------------------------------------------------------------

def i1() -> ir.Type:
    return ir.IntegerType.get_signless(1)


def int_type(bits: int) -> ir.Type:
    return ir.IntegerType.get_signless(bits)


def is_int(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType)


def is_index(t: ir.Type) -> bool:
    return isinstance(t, ir.IndexType)


def is_integral(t: ir.Type) -> bool:
    return is_int(t) or is_index(t)


def is_float(t: ir.Type) -> bool:
    return isinstance(t, ir.FloatType)


def is_scalar(t: ir.Type) -> bool:
    return is_integral(t) or is_float(t)


def is_memref(t: ir.Type) -> bool:
    return isinstance(t, ir.MemRefType)


def has_identity_layout(t: ir.Type) -> bool:
    """A memref whose elements are contiguous and row-major."""
    m = ir.MemRefType(t)
    return isinstance(m.layout, ir.AffineMapAttr) and m.layout.value == ir.AffineMap.get_identity(m.rank)


def bits(t: ir.Type) -> int:
    if is_index(t):
        return 64
    return t.width


def numpy_dtype(t: ir.Type) -> np.dtype:
    """The NumPy dtype that holds values of scalar type `t` (bf16 and the 8-bit
    floats are ml_dtypes' dtypes)."""
    s = dtypes.by_mlir(str(t))
    if s is None or s.numpy is None:
        raise TypeMismatchError(f"type {t} has no NumPy equivalent")
    return dtypes.numpy_dtype(s)


def mlir_type_of_numpy(dtype: np.dtype) -> ir.Type:
    s = dtypes.of_numpy(np.dtype(dtype))
    if s is None or s.unsigned:
        raise TypeMismatchError(f"NumPy dtype {dtype} is not supported (use bool, int8..int64, "
                                "float16..float64, or ml_dtypes' bfloat16 and float8 types)")
    return ir.Type.parse(s.mlir)


def default_type(x) -> ir.Type:
    """The type a static Python value takes where nothing else decides it."""
    if isinstance(x, (np.bool_, np.number)):
        return mlir_type_of_numpy(np.dtype(type(x)))
    if isinstance(x, bool):
        return i1()
    if isinstance(x, numbers.Integral):
        return int_type(64)
    return ir.F32Type.get()


def join(a: ir.Type, b: ir.Type) -> ir.Type:
    """The common type of two dynamic operands."""
    if a == b:
        return a
    if is_float(a) or is_float(b):
        if not is_float(a):
            return b
        if not is_float(b):
            return a
        if bits(a) == bits(b):  # f16 with bf16
            return ir.F32Type.get()
        return a if bits(a) > bits(b) else b
    if is_index(a) or is_index(b):
        return ir.IndexType.get()
    return a if bits(a) > bits(b) else b


def weak_join(x, t: ir.Type) -> ir.Type:
    """The type of a static value `x` combined with a dynamic value of type `t`."""
    if isinstance(x, (np.bool_, np.number)):
        return join(default_type(x), t)
    if isinstance(x, float) and not is_float(t):
        return ir.F32Type.get()
    if isinstance(x, bool) or is_float(t) or isinstance(x, numbers.Integral):
        return t
    return t


def type_of(x) -> ir.Type:
    return x.type if isinstance(x, ir.Value) else default_type(x)


def common_type(values) -> ir.Type:
    """Join of the types of a mix of static values, dynamic values and types
    (a type stands for a dynamic value of that type)."""
    dyn = [v.type if isinstance(v, ir.Value) else v
           for v in values if isinstance(v, (ir.Value, ir.Type))]
    if not dyn:
        return _static_join(values)
    t = dyn[0]
    for d in dyn[1:]:
        t = join(t, d)
    for v in values:
        if not isinstance(v, (ir.Value, ir.Type)):
            t = weak_join(v, t)
    return t


def _static_join(values) -> ir.Type:
    t = default_type(values[0])
    for v in values[1:]:
        t = join(t, default_type(v))
    return t


def dims(x: ir.Value) -> tuple:
    """The sizes of memref `x`: Python ints where static, index values where dynamic."""
    t = ir.MemRefType(x.type)
    return tuple(d if not ir.ShapedType.is_dynamic_size(d)
                 else memref.dim(x, arith.constant(ir.IndexType.get(), i))
                 for i, d in enumerate(t.shape))


# --- values -----------------------------------------------------------------------

def constant(x, t: ir.Type) -> ir.Value:
    """Materialize the static value `x` as a constant of type `t`."""
    if is_float(t):
        return arith.constant(t, float(x))
    if is_integral(t):
        if isinstance(x, (float, np.floating)):
            if not float(x).is_integer():
                raise TypeMismatchError(f"cannot use the float {x!r} as a value of type {t}")
            x = int(x)
        x = int(x)
        if is_int(t):
            w = t.width
            lo, hi = (0, 1) if w == 1 else (-(1 << (w - 1)), (1 << w) - 1)
            if not lo <= x <= hi:
                raise TypeMismatchError(f"constant {x} does not fit in {t}")
            if w == 1:
                return arith.constant(t, ir.IntegerAttr.get(t, x))
            if x >= 1 << (w - 1):  # unsigned spelling of a negative value
                x -= 1 << w
        return arith.constant(t, x)
    raise TypeMismatchError(f"cannot make a constant of type {t}")


def convert(x, t: ir.Type) -> ir.Value:
    """`x` (static or dynamic) as a value of type `t`, with C/NumPy conversions."""
    x = val(x)
    if not isinstance(x, ir.Value):
        return constant(x, t)
    s = x.type
    if s == t:
        return x
    if not (is_scalar(s) and is_scalar(t)):
        raise TypeMismatchError(f"cannot convert a value of type {s} to {t}")
    if is_index(s) or is_index(t):
        if is_float(t):
            return convert(arith.index_cast(int_type(64), x), t)
        if is_float(s):
            return arith.index_cast(t, convert(x, int_type(64)))
        if is_int(s) and s.width == 1:
            return arith.index_castui(t, x)
        return arith.index_cast(t, x)
    if is_int(s) and is_int(t):
        if s.width == 1:
            return arith.extui(t, x)
        if t.width == 1:
            return arith.cmpi(arith.CmpIPredicate.ne, x, constant(0, s))
        return arith.extsi(t, x) if t.width > s.width else arith.trunci(t, x)
    if is_int(s) and is_float(t):
        return arith.uitofp(t, x) if s.width == 1 else arith.sitofp(t, x)
    if is_float(s) and is_int(t):
        if t.width == 1:
            return arith.cmpf(arith.CmpFPredicate.UNE, x, constant(0.0, s))
        return arith.fptosi(t, x)
    if bits(t) > bits(s) or (bits(t) == bits(s) and t != s and bits(t) == 16):
        if bits(t) == bits(s):  # f16 <-> bf16 goes through f32
            return arith.truncf(t, arith.extf(ir.F32Type.get(), x))
        return arith.extf(t, x)
    return arith.truncf(t, x)


def truth(x):
    """The truth value of `x`: a Python bool if static, else an i1 value."""
    x = val(x)
    if not isinstance(x, ir.Value):
        return bool(x)
    if not is_scalar(x.type):
        raise TypeMismatchError(f"a value of type {x.type} has no truth value")
    return convert(x, i1())


def select(cond: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.select(cond, a, b)


# --- operators ----------------------------------------------------------------------

def _cmpi(pred: str, a, b):
    return arith.cmpi(getattr(arith.CmpIPredicate, pred), a, b)


def _int_div_safe(a, b, op):
    """a op b for signed integers, 0 when b == 0, wrapping for MIN / -1."""
    t = a.type
    zero, one, minus1 = constant(0, t), constant(1, t), constant(-1, t)
    b_zero = _cmpi("eq", b, zero)
    b_m1 = _cmpi("eq", b, minus1)
    safe_b = select(arith.ori(b_zero, b_m1), one, b)
    q = op(a, safe_b)
    if op is arith.remsi:
        return select(arith.ori(b_zero, b_m1), zero, q)
    neg = arith.subi(zero, a)
    return select(b_zero, zero, select(b_m1, neg, q))


def _non_negative_div(a, b, op):
    """a op b (divui or remui) for operands known non-negative, where Python's
    floor division and modulo are the truncating ones: 0 when b == 0."""
    zero, one = constant(0, a.type), constant(1, a.type)
    b_zero = _cmpi("eq", b, zero)
    return select(b_zero, zero, op(a, select(b_zero, one, b)))


def _py_floordiv_int(a, b):
    if known_non_negative(a) and known_non_negative(b):
        return _non_negative_div(a, b, arith.divui)
    return _int_div_safe(a, b, arith.floordivsi)


def _py_mod_int(a, b):
    if known_non_negative(a) and known_non_negative(b):
        return _non_negative_div(a, b, arith.remui)
    r = _int_div_safe(a, b, arith.remsi)
    zero = constant(0, a.type)
    fix = arith.andi(_cmpi("ne", r, zero), arith.xori(_cmpi("slt", r, zero), _cmpi("slt", b, zero)))
    return select(fix, arith.addi(r, b), r)


def _py_divmod_float(a, b):
    """Python's (and NumPy's) float floor division and modulo, edge cases included:
    b == 0 gives a/b and NaN; the remainder takes the sign of b; -0.0 kept."""
    t = a.type
    P = arith.CmpFPredicate
    zero, one, half = constant(0.0, t), constant(1.0, t), constant(0.5, t)
    mod = arith.remf(a, b)
    div = arith.divf(arith.subf(a, mod), b)
    sign_differs = arith.xori(arith.cmpf(P.OLT, b, zero), arith.cmpf(P.OLT, mod, zero))
    adjust = arith.andi(arith.cmpf(P.UNE, mod, zero), sign_differs)
    mod = select(adjust, arith.addf(mod, b), mod)
    div = select(adjust, arith.subf(div, one), div)
    mod = select(arith.cmpf(P.OEQ, mod, zero), math.copysign(zero, b), mod)
    floor = math.floor(div)
    floor = select(arith.cmpf(P.OGT, arith.subf(div, floor), half), arith.addf(floor, one), floor)
    quotient = arith.divf(a, b)
    floor = select(arith.cmpf(P.UNE, div, zero), floor, math.copysign(zero, quotient))
    floor = select(arith.cmpf(P.OEQ, b, zero), quotient, floor)
    return floor, mod


def _shift(a, b, op):
    t = a.type
    width = constant(bits(t), t)
    in_range = arith.andi(_cmpi("ult", b, width), _cmpi("sge", b, constant(0, t)))
    safe = select(in_range, b, constant(0, t))
    r = op(a, safe)
    if op is arith.shrsi:
        fill = arith.shrsi(a, constant(bits(t) - 1, t))
        return select(in_range, r, fill)
    return select(in_range, r, constant(0, t))


def _pow(a, b):
    t = a.type
    if is_float(t):
        return math.powf(a, b)
    return math.ipowi(a, b)


# Operators on integers and on floats: (integer builder, float builder).
_BINARY = {
    ast.Add: (arith.addi, _fast(arith.addf)),
    ast.Sub: (arith.subi, _fast(arith.subf)),
    ast.Mult: (arith.muli, _fast(arith.mulf)),
    ast.FloorDiv: (_py_floordiv_int, lambda a, b: _py_divmod_float(a, b)[0]),
    ast.Mod: (_py_mod_int, lambda a, b: _py_divmod_float(a, b)[1]),
    ast.Pow: (_pow, _pow),
    ast.LShift: (lambda a, b: _shift(a, b, arith.shli), None),
    ast.RShift: (lambda a, b: _shift(a, b, arith.shrsi), None),
    ast.BitAnd: (arith.andi, None),
    ast.BitOr: (arith.ori, None),
    ast.BitXor: (arith.xori, None),
}

_INT_CMP = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "slt", ast.LtE: "sle", ast.Gt: "sgt", ast.GtE: "sge"}
_FLOAT_CMP = {ast.Eq: "OEQ", ast.NotEq: "UNE", ast.Lt: "OLT", ast.LtE: "OLE", ast.Gt: "OGT", ast.GtE: "OGE"}

OPERATOR_SYMBOLS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|",
    ast.BitXor: "^", ast.MatMult: "@", ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<",
    ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
}


def _check_scalar(x, op: str):
    if isinstance(x, ir.Value) and not is_scalar(x.type):
        raise TypeMismatchError(f"operator {op} does not apply to a value of type {x.type}")


def binary(op: type, a, b):
    """`a op b` for an ast operator class; both static gives a Python value."""
    sym = OPERATOR_SYMBOLS.get(op, op.__name__)
    a, b = val(a), val(b)
    _check_scalar(a, sym)
    _check_scalar(b, sym)
    if op is ast.Div:
        t = common_type([a, b])
        if not is_float(t):
            t = ir.F32Type.get()
        return _fast(arith.divf)(convert(a, t), convert(b, t))
    if op not in _BINARY:
        raise TypeMismatchError(f"operator {sym} is not supported")
    t = common_type([a, b])
    if is_index(t) and op in (ast.Pow, ast.LShift, ast.RShift):
        t = int_type(64)
    int_op, float_op = _BINARY[op]
    if is_float(t):
        if float_op is None:
            raise TypeMismatchError(f"operator {sym} needs integer operands, not {t}")
        return float_op(convert(a, t), convert(b, t))
    if op is ast.Pow and not isinstance(b, ir.Value) and b < 0:
        raise TypeMismatchError("integer ** negative exponent: convert to float first")
    return int_op(convert(a, t), convert(b, t))


def compare(op: type, a, b):
    sym = OPERATOR_SYMBOLS.get(op, op.__name__)
    if op not in _INT_CMP:
        raise TypeMismatchError(f"comparison {op.__name__} is not supported on values")
    a, b = val(a), val(b)
    _check_scalar(a, sym)
    _check_scalar(b, sym)
    t = common_type([a, b])
    a, b = convert(a, t), convert(b, t)
    if is_float(t):
        return arith.cmpf(getattr(arith.CmpFPredicate, _FLOAT_CMP[op]), a, b)
    return _cmpi(_INT_CMP[op], a, b)


def unary(op: type, x):
    x = val(x)
    _check_scalar(x, op.__name__)
    t = x.type
    if op is ast.UAdd:
        return x
    if op is ast.USub:
        return arith.negf(x) if is_float(t) else arith.subi(constant(0, t), x)
    if op is ast.Invert:
        if not is_integral(t):
            raise TypeMismatchError(f"operator ~ needs an integer operand, not {t}")
        return arith.xori(x, constant(-1, t))
    if op is ast.Not:
        return arith.xori(truth(x), constant(1, i1()))
    raise TypeMismatchError(f"unary operator {op.__name__} is not supported")


def minmax(kind: str, a, b):
    t = common_type([a, b])
    a, b = convert(a, t), convert(b, t)
    if is_float(t):
        return (arith.minimumf if kind == "min" else arith.maximumf)(a, b)
    return (arith.minsi if kind == "min" else arith.maxsi)(a, b)


def if_value(cond: ir.Value, then_fn, else_fn) -> ir.Value:
    """A value computed by one of two thunks under a dynamic condition (only the
    taken one runs). The result type is the join of the two arms' types, which
    is known only once both are built: build them in a result-less `scf.if`,
    then move their operations into one with the right result type."""
    draft = scf.IfOp(cond, [], has_else=True)
    arms = []
    for block, fn in ((draft.then_block, then_fn), (draft.else_block, else_fn)):
        with ir.InsertionPoint(block):
            arms.append(fn())
    t = common_type(arms)
    for block, value in zip((draft.then_block, draft.else_block), arms):
        with ir.InsertionPoint(block):
            scf.yield_([convert(value, t)])
    final = scf.IfOp(cond, [t], has_else=True, ip=ir.InsertionPoint(draft))
    for src, dst in ((draft.then_block, final.then_block), (draft.else_block, final.else_block)):
        for op in list(src.operations):
            op.detach_from_parent()
            ir.InsertionPoint(dst).insert(op)
    draft.operation.erase()
    return final.result


# Ops whose results are never negative, and those whose least value is their operands'.
_NON_NEGATIVE_OPS = {"memref.dim", "nvvm.read.ptx.sreg.tid.x", "nvvm.read.ptx.sreg.ntid.x", "arith.extui"}
_BOUND_KEEPING_OPS = {"arith.index_cast", "arith.extsi"}


def known_non_negative(v: ir.Value) -> bool:
    """Whether integer `v` is never negative, as far as its definition shows
    (`lower_bound`). Such an index needs no Python-style wrap."""
    least = lower_bound(v)
    return least is not None and least >= 0


def lower_bound(v: ir.Value, depth: int = 8) -> int | None:
    """The least value integer `v` takes, as far as its definition shows, or None:
    a constant, a dimension or a thread id (0), a loop index counting up from a
    bounded value, and sums, products of non-negative values, maxima, selects and
    differences with a constant of those (an index that overflows is out of range
    either way): `j - 1` is never negative in `for j in range(1, n)`."""
    if depth == 0:
        return None
    if v in NON_NEGATIVE.get(()):
        return 0
    if isinstance(v, ir.BlockArgument):
        loop = v.owner.owner
        if loop.name == "scf.for" and v.arg_number == 0:
            step = _constant_int(loop.operands[2])
            return lower_bound(loop.operands[0], depth - 1) if step is not None and step > 0 else None
        return None
    op = v.owner
    name = op.name
    if name == "arith.constant":
        return _constant_int(v)
    if name in _NON_NEGATIVE_OPS:
        return 0
    if name == "func.call":               # the runtime's tasklet id and count
        return 0 if ir.FlatSymbolRefAttr(op.attributes["callee"]).value in (abi.ME, abi.NR_TASKLETS) else None
    operands = [lower_bound(x, depth - 1) for x in (op.operands[1:] if name == "arith.select" else op.operands)]
    if name in _BOUND_KEEPING_OPS:
        return operands[0]
    if name == "arith.maxsi":
        return max((b for b in operands if b is not None), default=None)
    if None in operands:
        return None
    if name in ("arith.addi", "arith.select"):
        return sum(operands) if name == "arith.addi" else min(operands)
    if name in ("arith.muli", "arith.divui", "arith.remui") and min(operands) >= 0:
        return operands[0] * operands[1] if name == "arith.muli" else 0
    if name == "arith.subi" and _constant_int(op.operands[1]) is not None:
        return operands[0] - operands[1]
    return None


def _constant_int(v: ir.Value) -> int | None:
    owner = v.owner if not isinstance(v, ir.BlockArgument) else None
    if owner is None or owner.name != "arith.constant":
        return None
    try:
        return ir.IntegerAttr(owner.attributes["value"]).value
    except ValueError:
        return None
