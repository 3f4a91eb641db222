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

import math

import numpy as np
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
# `fastmath=True`. Each is one or two of PTX's approximate instructions and a
# product by a constant, written here as libdevice writes them (the
# instruction's `.ftz` form where `__nvvm_reflect("__CUDA_FTZ")` says so, as
# Triton's `enable_reflect_ftz` sets it): defined in the function's module,
# they spare a kernel linking libdevice, whose parse is about 55 ms of each
# compile. Inline PTX rather than `llvm.nvvm.*.approx` intrinsics: those are
# named differently by the LLVM of these bindings and by Triton's.
_LOG2_E, _LOG2_10, _LN_2, _LOG10_2 = (float(np.float32(v)) for v in (
    math.log2(math.e), math.log2(10), math.log(2), math.log10(2)))
FAST = {   # libm name -> its body, over a builder `f` and the parameters
    "expf": lambda f, a: f.approx("ex2", f.mul(a, _LOG2_E)),
    "exp10f": lambda f, a: f.approx("ex2", f.mul(a, _LOG2_10)),
    "logf": lambda f, a: f.mul(f.approx("lg2", a), _LN_2),
    "log2f": lambda f, a: f.approx("lg2", a),
    "log10f": lambda f, a: f.mul(f.approx("lg2", a), _LOG10_2),
    "sinf": lambda f, a: f.approx("sin", a),
    "cosf": lambda f, a: f.approx("cos", a),
    "tanf": lambda f, a: f.approx("div", f.approx("sin", a), f.approx("cos", a)),
    "powf": lambda f, a, b: f.approx("ex2", f.mul(b, f.approx("lg2", a))),
}
_REFLECT = """llvm.mlir.global private constant @edsl.cuda_ftz("__CUDA_FTZ\\00") {addr_space = 0 : i32}
llvm.func @__nvvm_reflect(!llvm.ptr) -> i32"""


class _FastBody:
    """The LLVM-dialect lines of one fast function, in order."""

    def __init__(self):
        self.lines: list[str] = []
        flag = self.emit("llvm.call @__nvvm_reflect(" + self.emit("llvm.mlir.addressof @edsl.cuda_ftz : !llvm.ptr")
                         + ") : (!llvm.ptr) -> i32")
        self.ftz = self.emit(f'llvm.icmp "ne" {flag}, {self.emit("llvm.mlir.constant(0 : i32) : i32")} : i32')

    def emit(self, op: str) -> str:
        self.lines.append(f"%v{len(self.lines)} = {op}")
        return f"%v{len(self.lines) - 1}"

    def value(self, v) -> str:
        return self.emit(f"llvm.mlir.constant({v!r} : f32) : f32") if isinstance(v, float) else v

    def mul(self, a, b) -> str:
        return self.emit(f"llvm.fmul {self.value(a)}, {self.value(b)} : f32")

    def approx(self, instruction: str, *operands) -> str:
        args = [self.value(v) for v in operands]
        asm = f"{instruction}.approx%s.f32 $0, " + ", ".join(f"${i + 1}" for i in range(len(args))) + ";"
        kind = f'"{",".join(["=f"] + ["f"] * len(args))}" {", ".join(args)} : ({", ".join(["f32"] * len(args))}) -> f32'
        ftz, plain = (self.emit(f'llvm.inline_asm "{asm % mode}", {kind}') for mode in (".ftz", ""))
        return self.emit(f"llvm.select {self.ftz}, {ftz}, {plain} : i1, f32")


def _fast_function(name: str) -> str:
    """LLVM-dialect text defining libdevice's fast `name` (an internal function)."""
    body = FAST[name]
    params = [f"%{p}" for p in body.__code__.co_varnames[1:body.__code__.co_argcount]]
    f = _FastBody()
    result = body(f, *params)
    return (f"llvm.func internal @edsl.fast_{name}({', '.join(f'{p}: f32' for p in params)}) -> f32 {{\n  "
            + "\n  ".join(f.lines) + f"\n  llvm.return {result} : f32\n}}")


FAST_PREFIX = "__nv_fast_"      # libdevice's names of its fast functions: __nv_fast_<libm name>


def fast_functions_llvm(names, prefix: str) -> str:
    """LLVM IR text defining libdevice's fast versions of the libm functions
    `names` as internal functions `@<prefix>edsl.fast_<name>` (the same
    definitions `use_libdevice` gives EDSL functions), for modules that are
    LLVM IR already (CUDA C functions, edsl.inject.cuda_module); without
    the module header and flags, and without `__nvvm_reflect`'s declaration."""
    from . import to_llvm_ir
    text = "\n".join([_REFLECT] + [_fast_function(n) for n in names])
    text = text.replace("@edsl.", f"@{prefix}edsl.")
    with ir.Context(), ir.Location.unknown():
        llvm = to_llvm_ir(ir.Module.parse(text))
    return "\n".join(line for line in llvm.splitlines()
                     if not line.startswith(("; ModuleID", "source_filename", "!", "declare i32 @__nvvm_reflect")))


def use_libdevice(module: ir.Module, fastmath: bool = False) -> int:
    """Rename the libm declarations of an LLVM-dialect module (and their calls)
    to libdevice's names (with `fastmath`, to definitions of its fast versions
    in the module where it has them); returns how many."""
    renamed = 0
    fast = []
    for op in list(module.body.operations):
        op = op.operation
        if op.name != "llvm.func" or op.regions[0].blocks:
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        new = f"edsl.fast_{name}" if fastmath and name in FAST else libdevice_name(name)
        if new is None:
            continue
        ir.SymbolTable.replace_all_symbol_uses(name, new, module.operation)
        if new.startswith("edsl.fast_"):
            fast.append(name)
            op.erase()
        else:
            ir.SymbolTable.set_symbol_name(op, new)
        renamed += 1
    if fast:
        defined = ir.Module.parse("\n".join([_REFLECT] + [_fast_function(n) for n in fast]))
        for op in list(defined.body.operations):
            module.body.append(op.detach_from_parent())
    return renamed
