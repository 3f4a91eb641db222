"""libdevice's modified Bessel functions of the first kind, I0 and I1
(`cyl_bessel_i0`, `cyl_bessel_i1`, with an `f` for f32), as f64 functions
the converted module defines (elementwise.py calls them).

No C math library has them, so they are written here by hand: the Chebyshev
expansions of the Cephes Math Library (S. L. Moshier, i0.c and i1.c), whose
coefficients these are, in the order its `chbevl` takes them. A: exp(-x)
I0(x) and exp(-x) I1(x) / x over [0, 8]; B: exp(-x) sqrt(x) I0(x) and
exp(-x) sqrt(x) I1(x) over (8, inf).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, math, scf

_I0_A = (
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
    1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
    -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
    1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
    1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1)
_I0_B = (
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
    2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1)
_I1_A = (
    2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16,
    -1.10559694773538630805e-15, 7.60068429473540693410e-15, -5.04218550472791168711e-14,
    3.22379336594557470981e-13, -1.98397439776494371520e-12, 1.17361862988909016308e-11,
    -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-9,
    9.38153738649577178388e-9, -4.44505912879632808065e-8, 2.00329475355213526229e-7,
    -8.56872026469545474066e-7, 3.47025130813767847674e-6, -1.32731636560394358279e-5,
    4.78156510755005422638e-5, -1.61760815825896745588e-4, 5.12285956168575772895e-4,
    -1.51357245063125314899e-3, 4.15642294431288815669e-3, -1.05640848946261981558e-2,
    2.47264490306265168283e-2, -5.29459812080949914269e-2, 1.02643658689847095384e-1,
    -1.76416518357834055153e-1, 2.52587186443633654823e-1)
_I1_B = (
    7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17,
    -3.20952592199342395980e-17, 2.96262899764595013876e-16, 3.30820231092092828324e-16,
    -1.88035477551078244854e-15, -3.81440307243700780478e-15, 1.04202769841288027642e-14,
    4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
    -7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11,
    3.25260358301548823856e-11, -1.89749581235054123450e-11, -5.58974346219658380687e-10,
    -3.83538038596423702205e-9, -2.63146884688951950684e-8, -2.51223623787020892529e-7,
    -3.88256480887769039346e-6, -1.10588938762623716291e-4, -9.76109749136146840777e-3,
    7.78576235018280120474e-1)
BESSEL_I = {"cyl_bessel_i0": (0, _I0_A, _I0_B), "cyl_bessel_i1": (1, _I1_A, _I1_B)}


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
                  for op in conv.module_body.operations if "sym_name" in op.attributes)
    if not defined:
        f64 = ir.F64Type.get()
        with ir.InsertionPoint(conv.module_body), ir.Location.unknown():
            fn = func.FuncOp(name, ir.FunctionType.get([f64], [f64]), visibility="private")
            with ir.InsertionPoint(fn.add_entry_block()):
                func.ReturnOp([_bessel_i_body(fn.arguments[0], *BESSEL_I[base])])
    return name
