"""Math functions on NVIDIA GPUs: libdevice, under the names of libm.

NVPTX has instructions for few math functions (sqrt, fma, floor...); CUDA's
libdevice (`libdevice.10.bc`, shipped with Triton and linked into every kernel
that needs it) implements the C math library under `__nv_` names. The NVPTX
pipeline sends math operations to libm calls (`convert-math-to-libm`); this
step points those calls at libdevice. The other way, `math_op_for` names the
MLIR op that computes a libdevice function (kernels calling
`tl.extra.libdevice` on a target without libdevice).
"""
from __future__ import annotations

from mlir import ir

# The functions `convert-math-to-libm` calls, by libm name (f32: name + "f").
# libdevice names each `__nv_<libm name>`, except where this table says.
_LIBM = ("acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "copysign", "cos", "cosh",
         "erf", "erfc", "exp", "exp2", "expm1", "fabs", "floor", "fma", "fmod", "log", "log10", "log1p", "log2",
         "pow", "rint", "round", "roundeven", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")
_RENAMED = {"roundeven": "rint"}   # libdevice has no roundeven; rint rounds half to even too
# libm functions no MLIR op lowers to, which CUDA C code calls (edsl.inject.cuda_module).
_C_ONLY = ("fmax", "fmin", "rsqrt")
# MLIR ops named unlike their libm function (the others: `math.<libm name>`).
_OPS = {"fabs": "math.absf", "pow": "math.powf", "fmod": "arith.remf", "rint": "math.roundeven"}


def libdevice_name(libm_name: str) -> str | None:
    """The libdevice function for a libm function (`expf` -> `__nv_expf`), or None."""
    names = _LIBM + _C_ONLY
    base, suffix = (libm_name[:-1], "f") if libm_name.endswith("f") and libm_name[:-1] in names else (libm_name, "")
    if base not in names:
        return None
    return f"__nv_{_RENAMED.get(base, base)}{suffix}"


def math_op_for(symbol: str) -> str | None:
    """The MLIR op computing libdevice's function `symbol` (`__nv_rintf` ->
    `math.roundeven`, on the operands' type), or None if it is not one of
    libm's functions."""
    name = symbol.removeprefix("__nv_")
    if name == symbol:
        return None
    base = name if name in _LIBM else name[:-1] if name.endswith("f") and name[:-1] in _LIBM else None
    if base is None or base == "roundeven":     # (libdevice has rint, not roundeven)
        return None
    return _OPS.get(base, f"math.{base}")


# libdevice's bit-counting functions, as MLIR ops (their result converted to
# the call's i32); its classification functions (i32 results), by the test
# they make; and its Bessel functions of the first and second kind, which
# libm has too (j0, j0f, ...).
_INTEGER_OPS = {"clz": "math.ctlz", "clzll": "math.ctlz", "popc": "math.ctpop", "popcll": "math.ctpop"}
_CLASSIFY = {"finitef": "isfinite", "isfinited": "isfinite", "isinff": "isinf", "isinfd": "isinf",
             "isnanf": "isnan", "isnand": "isnan"}
_LIBM_CALLS = ("j0", "j1", "y0", "y1")


def lowering_for(symbol: str) -> tuple[str, str] | None:
    """How a target without libdevice computes libdevice's function `symbol`:
    ("math", MLIR op) for libm's functions (`math_op_for`), ("bits", MLIR op)
    for the bit counts, ("classify", "isinf" | "isnan" | "isfinite"), ("libm",
    the libm function) for the Bessel functions; None for the others."""
    name = symbol.removeprefix("__nv_")
    if name == symbol:
        return None
    base = name[:-1] if name.endswith("f") else name
    for kind, found in (("math", math_op_for(symbol)), ("bits", _INTEGER_OPS.get(name)),
                        ("classify", _CLASSIFY.get(name)), ("libm", name if base in _LIBM_CALLS else None)):
        if found is not None:
            return kind, found
    return None


# libdevice's fast f32 versions (the GPU's approximate instructions, as CUDA's
# `-use_fast_math` and Triton's `tl.exp` use): for functions compiled with
# `fastmath=True`.
_FAST = ("expf", "exp10f", "logf", "log2f", "log10f", "sinf", "cosf", "tanf", "powf")


def use_libdevice(module: ir.Module, fastmath: bool = False) -> int:
    """Rename the libm declarations of an LLVM-dialect module (and their calls)
    to libdevice's names (with `fastmath`, its fast versions where it has
    them); returns how many."""
    renamed = 0
    for op in list(module.body.operations):
        op = op.operation
        if op.name != "llvm.func" or op.regions[0].blocks:
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        new = f"__nv_fast_{name}" if fastmath and name in _FAST else libdevice_name(name)
        if new is None:
            continue
        ir.SymbolTable.replace_all_symbol_uses(name, new, module.operation)
        ir.SymbolTable.set_symbol_name(op, new)
        renamed += 1
    return renamed
