"""libdevice's modified Bessel functions of the first kind, I0 and I1
(`cyl_bessel_i0`, `cyl_bessel_i1`, with an `f` for f32), as f64 functions
the converted module defines (elementwise.py calls them).

No C math library has them, so they are written here by hand: the Chebyshev
expansions of the Cephes Math Library (S. L. Moshier, i0.c and i1.c), whose
coefficients `bessel_cephes.json` holds, in the order its `chbevl` takes
them. A: exp(-x) I0(x) and exp(-x) I1(x) / x over [0, 8]; B: exp(-x)
sqrt(x) I0(x) and exp(-x) sqrt(x) I1(x) over (8, inf).
"""
from __future__ import annotations

import json
import pathlib

from mlir import ir
from mlir.dialects import arith, func, math, scf

_COEFFICIENTS = json.loads(pathlib.Path(__file__).with_name("bessel_cephes.json").read_text())
# libdevice name -> (order, A coefficients, B coefficients)
BESSEL_I = {f"cyl_bessel_i{n}": (n, tuple(_COEFFICIENTS[f"i{n}_a"]), tuple(_COEFFICIENTS[f"i{n}_b"]))
            for n in (0, 1)}


def _chebyshev(y: ir.Value, coefficients) -> ir.Value:
    """The Chebyshev series sum'(c_k T_k(y / 2)), |y| <= 2, by Clenshaw's
    recurrence (as Cephes' `chbevl`)."""
    def c(v):
        return arith.constant(y.type, v)
    b0, b1, b2 = c(coefficients[0]), c(0.0), c(0.0)
    for coefficient in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = arith.addf(arith.subf(arith.mulf(y, b1), b2), c(coefficient))
    return arith.mulf(c(0.5), arith.subf(b0, b2))


def _bessel_i_body(x: ir.Value, order: int, a_coefficients, b_coefficients) -> ir.Value:
    """I0(x) or I1(x) in f64."""
    f64 = x.type

    def c(v):
        return arith.constant(f64, v)
    a = math.absf(x)
    branch = scf.IfOp(arith.cmpf(arith.CmpFPredicate.OLE, a, c(8.0)), [f64], has_else=True)
    with ir.InsertionPoint(branch.then_block):           # (y = a/2 - 2 in [-2, 2])
        r = arith.mulf(math.exp(a), _chebyshev(arith.subf(arith.mulf(a, c(0.5)), c(2.0)), a_coefficients))
        scf.YieldOp([arith.mulf(r, a) if order else r])
    with ir.InsertionPoint(branch.else_block):
        # (y = 32/a - 2 in (-2, 2); NaN lands here.) exp(a) as exp(a/2)
        # squared, so that the results between exp's overflow (a > 709.78)
        # and I's (a > 713.98) are finite; a = inf would give inf/inf.
        s = _chebyshev(arith.subf(arith.divf(c(32.0), a), c(2.0)), b_coefficients)
        e = math.exp(arith.mulf(a, c(0.5)))
        r = arith.mulf(arith.mulf(e, arith.divf(s, math.sqrt(a))), e)
        inf = c(float("inf"))
        scf.YieldOp([arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, a, inf), inf, r)])
    r = branch.results[0]
    return math.copysign(r, x) if order else r         # (I1 is odd)


def bessel_i(conv, base: str) -> str:
    """The module's f64 function computing libdevice's `base` (defined once)."""
    name = f"__dpu_bessel_i{BESSEL_I[base][0]}"
    defined = any(ir.StringAttr(op.attributes["sym_name"]).value == name
                  for op in conv.sites.module_body.operations if "sym_name" in op.attributes)
    if not defined:
        f64 = ir.F64Type.get()
        with ir.InsertionPoint(conv.sites.module_body), ir.Location.unknown():
            fn = func.FuncOp(name, ir.FunctionType.get([f64], [f64]), visibility="private")
            with ir.InsertionPoint(fn.add_entry_block()):
                func.ReturnOp([_bessel_i_body(fn.arguments[0], *BESSEL_I[base])])
    return name
