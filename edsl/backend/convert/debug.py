"""Debug ops: tt.print (`tl.device_print`) and tt.assert (`tl.device_assert`).

`tl.device_print` prints through the C library's `printf` the lines Triton
prints on a GPU: one per element, `pid (x, y, z) idx (i, j)<prefix><value>`
(Triton's frontend makes the prefix ` name: `), each index padded to the
width of its dimension's largest, `(operand n) ` before the value when there
are several operands, and a scalar, or a print of no operand, once per thread
of the GPU program. A failed `tl.device_assert` (compiled only with
`debug=True`, as in Triton) records the assertion's number and the program id
in the tasklet's launch context (the runtime's `__dpu_fail`); the host raises a
`DpuError` quoting its message and line after the launch.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm, scf

from ..ttir_reader import user_location
from .core import Tile, is_float, is_ptr, is_tensor, lowers
from ...target.dpu import FAIL, Err
from .builders import index_c
from . import ops

def _global_string(conv, text: str) -> ir.Value:
    """The address of a NUL-terminated constant string in the module."""
    name = f"__dpu_str{len(conv.info.prints)}"
    conv.info.prints.append(text)
    data = text.encode() + b"\0"
    arr = ir.Type.parse(f"!llvm.array<{len(data)} x i8>")
    with ir.InsertionPoint(conv.sites.module_body):
        g = llvm.GlobalOp(arr, name, ir.Attribute.parse("#llvm.linkage<internal>"),
                          value=ir.StringAttr.get(data.decode("latin-1")), constant=True)
    del g
    return llvm.AddressOfOp(llvm.PointerType.get(), name).result


def _printf_arg(v: ir.Value, signed: bool, hex: bool, ptr: bool) -> tuple[ir.Value, str]:
    """`v` as a printf argument (f64 or i64), and its conversion as a GPU's
    printf has it: `%f`/`%a`, integers `%lld`/`%llu` or zero-padded hex of
    the type's width, pointers `0x` and their address."""
    t = v.type
    if is_float(t):
        f64 = ir.F64Type.get()
        return (v if t == f64 else arith.extf(f64, v)), "%a" if hex else "%f"
    if ptr:
        return v, "0x%llx"
    width = ir.IntegerType(t).width
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    if width < 32:
        # A GPU's printf gets an i32, extended as the type's sign says (in
        # hex, a negative value shows 32 bits).
        v = arith.extsi(i32, v) if signed and width > 1 else arith.extui(i32, v)
    if hex:
        digits = width // 4
        return (arith.extui(i64, v) if width < 64 else v), f"0x%0{digits}llx" if digits else "0x%llx"
    if width < 64:
        v = arith.extsi(i64, v) if signed else arith.extui(i64, v)
    return v, "%lld" if signed else "%llu"


def _printf(conv, fmt: str, values) -> None:
    ptr = llvm.PointerType.get()
    i32 = ir.IntegerType.get_signless(32)
    addr = _global_string(conv, fmt)
    llvm.call(i32, [addr, *values], [], [], var_callee_type=ir.TypeAttr.get(
        ir.Type.parse("!llvm.func<i32 (ptr, ...)>")), callee=ir.FlatSymbolRefAttr.get("printf"))
    llvm.call(i32, [llvm.mlir_zero(ptr)], [], [], callee=ir.FlatSymbolRefAttr.get("fflush"))


def _gpu_threads(op) -> int:
    """The threads of one program on a GPU (num_warps * warp size), as the
    backend records them on the TTIR module; 1 where it does not say."""
    top = op.operation
    while top.parent is not None:
        top = top.parent
    n = 1
    for key in ("ttg.num-warps", "ttg.threads-per-warp"):
        if key in top.attributes:
            n *= ir.IntegerAttr(top.attributes[key]).value
    return n


@lowers("tt.print")
def lower_print(conv, op):
    with conv.tasklets.single():                     # one tasklet prints
        _print(conv, op)


def _print(conv, op):
    attrs = op.attributes
    prefix = _global_string(conv, ir.StringAttr(attrs["prefix"]).value)   # (an argument: it may hold '%')
    hex = "hex" in attrs and ir.BoolAttr(attrs["hex"]).value
    signed_flags = list(ir.DenseI32ArrayAttr(attrs["isSigned"])) if "isSigned" in attrs else []
    pids = [arith.extsi(ir.IntegerType.get_signless(64), p) for p in conv.program_ids]
    pid = "pid (%lld, %lld, %lld)"

    def repeated(fmt, values):
        # A GPU prints a value that is not a tensor once per thread of the
        # program (each holds it), so it is printed that many times here too.
        loop = scf.ForOp(index_c(0), index_c(_gpu_threads(op)), index_c(1))
        with ir.InsertionPoint(loop.body):
            _printf(conv, fmt, values)
            scf.yield_([])

    if not len(op.operands):
        repeated(f"{pid}%s\n", pids + [prefix])
        return
    several = len(op.operands) > 1
    for k, operand in enumerate(op.operands):
        value = conv.values.get(operand)
        signed = bool(signed_flags[k]) if k < len(signed_flags) else True
        t = operand.type
        ptr = is_ptr(ir.RankedTensorType(t).element_type if is_tensor(t) else t)
        tail = f"%s{f'(operand {k}) ' if several else ''}"
        if not isinstance(value, Tile):
            v, spec = _printf_arg(value, signed, hex, ptr)
            repeated(f"{pid} idx (){tail}{spec}\n", pids + [prefix, v])
            continue
        # Each index as wide as its dimension's largest (`%3lld` for 128).
        places = ", ".join(f"%{len(str(max(d - 1, 0)))}lld" for d in value.shape)

        def body(ivs, value=value, signed=signed, ptr=ptr, tail=tail, places=places):
            v, spec = _printf_arg(value.at(ivs), signed, hex, ptr)
            idx = [arith.index_cast(ir.IntegerType.get_signless(64), i) for i in ivs]
            _printf(conv, f"{pid} idx ({places}){tail}{spec}\n", pids + idx + [prefix, v])
        conv.tasklets.loop_nest(value.shape, body)


@lowers("tt.assert")
def lower_assert(conv, op):
    message = ops.Assert(op).message
    loc = user_location(op.location)
    number = len(conv.info.asserts) + 1
    conv.info.asserts.append((message, f"{conv.sites.file_name(loc.filename)}:{loc.lineno}" if loc else ""))
    cond = conv.values.get(ops.Assert(op).condition)
    i64 = ir.IntegerType.get_signless(64)

    def check(c):
        failed = arith.xori(c, arith.constant(c.type, 1))
        fail = scf.IfOp(failed, [], has_else=False)
        with ir.InsertionPoint(fail.then_block):
            zero = arith.constant(i64, 0)
            args = [conv.ctx_arg, arith.constant(i64, Err.DEVICE_ASSERT), arith.constant(i64, number),
                    arith.extsi(i64, conv.program_ids[0]), zero, zero, zero]
            llvm.call(None, args, [], [], callee=ir.FlatSymbolRefAttr.get(FAIL))
            scf.yield_([])
    with conv.tasklets.single():                     # tasklet 0 checks (and records in its slots)
        if isinstance(cond, Tile):
            conv.tasklets.loop_nest(cond.shape, lambda ivs: check(cond.at(ivs)))
        else:
            check(cond)
