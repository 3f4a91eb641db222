"""What every part of the C printer prints with: the error it raises, C
declarations, integer and float literals, and the shape and size of LLVM
types.

Separate so that the module walk (`module`), the op handlers (`ops`) and the
runtime calls (`intrinsics`) share one copy of each helper and none of them
imports another for it.
"""
from __future__ import annotations

import math
import re

from mlir import ir
from mlir.dialects import llvm

from ...target import dpu as abi
from ...base.errors import CompileError


def _err(op, what: str) -> CompileError:
    where = f" (in `{_short(op)}`)" if op is not None else ""
    return CompileError(f"cannot export the kernel as C for the DPU: {what}{where}")


def _short(op) -> str:
    text = str(op.operation if hasattr(op, "operation") else op).split("\n")[0]
    text = re.sub(r"\s+loc\(.*$", "", text)
    return text if len(text) < 160 else text[:157] + "..."


def _decl(ctype: str, name: str) -> str:
    return f"{ctype}{name}" if ctype.endswith("*") else f"{ctype} {name}"


def _array_parts(t) -> tuple[int, ir.Type]:
    m = re.fullmatch(r"!llvm\.array<(\d+) x (.+)>", str(t))
    if not m:
        raise CompileError(f"cannot export the kernel: unexpected array type {t}")
    text = m.group(2)
    try:
        return int(m.group(1)), ir.Type.parse(text, t.context)
    except ir.MLIRError:        # nested LLVM types print without their dialect prefix
        return int(m.group(1)), ir.Type.parse("!llvm." + text, t.context)


def _type_bytes(t) -> int:
    if isinstance(t, ir.IntegerType):
        return max(1, t.width // 8)
    if isinstance(t, ir.F32Type):
        return 4
    if isinstance(t, ir.F64Type):
        return 8
    if isinstance(t, llvm.PointerType):
        return 4
    if isinstance(t, llvm.StructType):
        total = 0
        for f in t.body:
            size = _type_bytes(f)
            align = min(8, size) or 1
            total = abi.align_up(total, align) + size
        return abi.align_up(total, 8)
    if str(t).startswith("!llvm.array<"):
        n, elem = _array_parts(t)
        return n * _type_bytes(elem)
    return 8


def _int_literal(value: int, width: int) -> str:
    if width == 1:
        return "true" if value & 1 else "false"
    v = value & ((1 << width) - 1)
    if width == 64:
        return f"UINT64_C({v:#x})" if v > 9 else f"UINT64_C({v})"
    if width == 32:
        return f"{v:#x}u" if v > 9 else f"{v}u"
    return f"(uint{width}_t){v}u"


def _float_literal(value: float, is_f32: bool) -> str:
    if math.isnan(value):
        return "(float)NAN" if is_f32 else "(double)NAN"
    if math.isinf(value):
        sign = "-" if value < 0 else ""
        return f"({sign}(float)INFINITY)" if is_f32 else f"({sign}(double)INFINITY)"
    if value == 0.0:
        text = "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    else:
        text = value.hex()
    return f"({text}f)" if is_f32 else f"({text})"


def _check_float(op, t) -> str:
    if isinstance(t, ir.F32Type):
        return "f"
    if isinstance(t, ir.F64Type):
        return ""
    raise _err(op, f"floating-point type {t} is not supported")


def source_line(op) -> str | None:
    """'file.py:line' of an op's (innermost user) location, if it has one."""
    text = str(op.location)
    found = re.findall(r'"([^"]+)":(\d+):\d+', text)
    for filename, line in found:
        if filename != "-" and not filename.startswith("<"):
            return f"{filename.rsplit('/', 1)[-1]}:{line}"
    return None
