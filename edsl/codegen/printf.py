"""`vprintf(fmt, *args)` and `vassert(cond, fmt, *args)` in EDSL functions
(TLE-Raw's names): C's printf, checked at compile time.

Each conversion of the format is matched with its argument, which gets C's
default argument promotions (floats to f64, integers narrower than 32 bits
to i32, sign-extended as EDSL integers are signed; an index, a loop
counter, to the conversion's width); a conversion that
would read its argument as another type than it is (`%d` of an i64, `%f`
of an integer), a count that differs, or a conversion that reads more
arguments than it names (`*` widths) is a `CompileError` at the call's
line: on hardware these print garbage. A string constant is an argument
of `%s`.

On a GPU the arguments are packed into a buffer, as CUDA's `vprintf(fmt,
buffer)` takes them (each at its natural alignment: an LLVM struct); on
the DPU they are passed to the C library's variadic `printf` (the DPU
model's host C library; in an exported project, the SDK's, whose printf
the exporter's C printer checks again). Upstream MLIR lowers `gpu.printf`
to `vprintf` only inside a `gpu.module`, which an EDSL function is not in:
hence this.
"""
from __future__ import annotations

import re

from mlir import ir
from mlir.dialects import arith, llvm

from ..base.errors import CompileError
from ..target.machines import NVPTX
from . import semantic as S

# %[flags][width][.precision][length]conversion
_CONVERSION = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d*))?"
                         r"(?P<len>hh|h|ll|l|j|z|t|L)?(?P<conv>[diouxXeEfFgGaAcspn%])?")
_INTEGER, _FLOAT = set("diouxXc"), set("eEfFgGaA")


def conversions(fmt: str) -> list[tuple[str, str, str]]:
    """The conversions of `fmt` that take an argument: (text, length, letter)."""
    out = []
    for m in _CONVERSION.finditer(fmt):
        text, conv = m.group(0), m.group("conv")
        if conv == "%" and text == "%%":
            continue
        if conv is None or conv in "%n":
            raise CompileError(f"vprintf: '{text}' in the format is not a conversion it prints")
        if m.group("width") == "*" or m.group("prec") == "*":
            raise CompileError(f"vprintf: '{text}' takes its width or precision from an argument; "
                               "write the number in the format")
        out.append((text, m.group("len") or "", conv))
    return out


def arguments(gen, fmt: str, args: list) -> list[ir.Value]:
    """`args` as printf's variadic arguments for the conversions of `fmt`."""
    if not isinstance(fmt, str):
        raise CompileError("the format of vprintf and vassert must be a string constant")
    convs = conversions(fmt)
    if len(convs) != len(args):
        raise CompileError(f"vprintf: the format has {len(convs)} conversions "
                           f"({', '.join(c[0] for c in convs) or 'none'}); {len(args)} arguments given")
    return [_argument(gen, conv, a, k) for k, (conv, a) in enumerate(zip(convs, args))]


def _argument(gen, conv: tuple[str, str, str], a, k: int) -> ir.Value:
    text, length, letter = conv
    i32, i64, f64 = S.int_type(32), S.int_type(64), ir.F64Type.get()
    wide = length in ("l", "ll", "j", "z", "t")
    if letter == "s":
        if not isinstance(a, str):
            raise CompileError(f"vprintf: '{text}' prints a string constant; argument {k} is not one")
        return gen.string_constant(a)
    if isinstance(a, bool) or isinstance(a, int):
        a = S.constant(int(a), i64 if wide else i32)
    elif isinstance(a, float):
        a = S.constant(a, f64)
    if not isinstance(a, ir.Value):
        raise CompileError(f"vprintf: argument {k} for '{text}' is a {type(a).__name__}, not a value it prints")
    t = a.type
    if letter == "p":
        if not str(t).startswith("!llvm.ptr"):
            raise CompileError(f"vprintf: '{text}' prints a pointer; argument {k} is a {t}")
        return a
    if letter in _FLOAT:
        if not S.is_float(t):
            raise CompileError(f"vprintf: '{text}' prints a float; argument {k} is a {t}")
        return a if t == f64 else arith.extf(f64, a)
    assert letter in _INTEGER
    if S.is_float(t) or not (isinstance(t, ir.IntegerType) or isinstance(t, ir.IndexType)):
        raise CompileError(f"vprintf: '{text}' prints an integer; argument {k} is a {t}")
    want = i64 if wide else i32
    if isinstance(t, ir.IndexType):
        # (a loop counter: `%d` as for a Python int; no index of a DPU's or a
        # tile's elements reaches 2**31)
        return arith.index_cast(want, a)
    width = ir.IntegerType(t).width
    if width > 32 and not wide:
        raise CompileError(f"vprintf: '{text}' prints a 32-bit integer; argument {k} is a {t}: "
                           f"write '%ll{letter}'")
    if width == ir.IntegerType(want).width:
        return a
    return arith.extui(want, a) if width == 1 else arith.extsi(want, a)


def emit(gen, fmt: str, values: list[ir.Value]) -> None:
    """Print `fmt` with `values` (from `arguments`) on the function's target."""
    fmt_ptr = gen.string_constant(fmt)
    ptr, i32 = llvm.PointerType.get(), S.int_type(32)
    if gen.target is NVPTX:
        buffer = llvm.mlir_zero(ptr)
        if values:
            struct = ir.Type.parse(f"!llvm.struct<({', '.join(str(v.type) for v in values)})>")
            # (in the entry block: an alloca in a loop would take new stack on each trip)
            with ir.InsertionPoint.at_block_begin(gen.entry):
                one = S.constant(1, S.int_type(64))
                buffer = llvm.alloca(ptr, one, struct)
            for k, v in enumerate(values):
                llvm.store(v, llvm.getelementptr(ptr, buffer, [], [0, k], struct, 0))
        gen.runtime_call("vprintf", [fmt_ptr, buffer], [i32])
        return
    if "printf" not in gen.state.declared:
        gen.state.declared.add("printf")
        with ir.InsertionPoint.at_block_begin(gen.state.module.body):
            llvm.LLVMFuncOp("printf", ir.TypeAttr.get(ir.Type.parse("!llvm.func<i32 (ptr, ...)>")))
    llvm.call(i32, [fmt_ptr, *values], [], [], callee=ir.FlatSymbolRefAttr.get("printf"),
              var_callee_type=ir.TypeAttr.get(ir.Type.parse("!llvm.func<i32 (ptr, ...)>")))
    # (each line out as it is printed: the host's Python output interleaves with it)
    gen.runtime_call("fflush", [llvm.mlir_zero(ptr)], [i32])
