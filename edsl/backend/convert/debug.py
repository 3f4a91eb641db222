"""Debug ops: tt.print (`tl.device_print`) and tt.assert (`tl.device_assert`).

`tl.device_print` prints one line per element through the C library's
`printf`, as `pid (x, y, z) idx (i, j) <prefix><value>`. A failed
`tl.device_assert` (compiled only with `debug=True`, as in Triton) records
the assertion's number and the program id in the tasklet's launch context
(the runtime's `__dpu_fail`); the host raises a `DpuError` quoting its
message and line after the launch.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm, scf

from .core import Tile, is_float, lowers
from ...dpu.abi import FAIL, Err

SUPPORT_TEXT = """
  llvm.func @printf(!llvm.ptr, ...) -> i32
  llvm.func @fflush(!llvm.ptr) -> i32
"""


def _global_string(conv, text: str) -> ir.Value:
    """The address of a NUL-terminated constant string in the module."""
    name = f"__dpu_str{len(conv.info.prints)}"
    conv.info.prints.append(text)
    data = text.encode() + b"\0"
    arr = ir.Type.parse(f"!llvm.array<{len(data)} x i8>")
    with ir.InsertionPoint(conv.module_body):
        g = llvm.GlobalOp(arr, name, ir.Attribute.parse("#llvm.linkage<internal>"),
                          value=ir.StringAttr.get(data.decode("latin-1")), constant=True)
    del g
    return llvm.AddressOfOp(llvm.PointerType.get(), name).result


def _printf_arg(v: ir.Value, signed: bool) -> tuple[ir.Value, str]:
    t = v.type
    if is_float(t):
        f64 = ir.F64Type.get()
        return (v if t == f64 else arith.extf(f64, v)), "%f"
    width = ir.IntegerType(t).width
    i64 = ir.IntegerType.get_signless(64)
    if width < 64:
        v = arith.extsi(i64, v) if signed and width > 1 else arith.extui(i64, v)
    return v, "%lld" if signed else "%llu"


def _printf(conv, fmt: str, values) -> None:
    ptr = llvm.PointerType.get()
    i32 = ir.IntegerType.get_signless(32)
    addr = _global_string(conv, fmt)
    llvm.call(i32, [addr, *values], [], [], var_callee_type=ir.TypeAttr.get(
        ir.Type.parse("!llvm.func<i32 (ptr, ...)>")), callee=ir.FlatSymbolRefAttr.get("printf"))
    llvm.call(i32, [llvm.mlir_zero(ptr)], [], [], callee=ir.FlatSymbolRefAttr.get("fflush"))


@lowers("tt.print")
def lower_print(conv, op):
    prefix = ir.StringAttr(op.attributes["prefix"]).value
    signed_flags = list(ir.DenseI32ArrayAttr(op.attributes["isSigned"])) if "isSigned" in op.attributes else []
    with conv.single():                     # one tasklet prints
        _print(conv, op, prefix, signed_flags)


def _print(conv, op, prefix, signed_flags):
    pids = [arith.extsi(ir.IntegerType.get_signless(64), p) for p in conv.program_ids]
    if not len(op.operands):
        _printf(conv, f"pid (%lld, %lld, %lld) {prefix}\n", pids)
        return
    for k, operand in enumerate(op.operands):
        value = conv.get(operand)
        signed = bool(signed_flags[k]) if k < len(signed_flags) else True
        if not isinstance(value, Tile):
            v, spec = _printf_arg(value, signed)
            _printf(conv, f"pid (%lld, %lld, %lld) idx () {prefix}{spec}\n", pids + [v])
            continue

        def body(ivs, value=value, signed=signed):
            v, spec = _printf_arg(value.at(ivs), signed)
            idx = [arith.index_cast(ir.IntegerType.get_signless(64), i) for i in ivs]
            places = ", ".join(["%lld"] * len(ivs))
            _printf(conv, f"pid (%lld, %lld, %lld) idx ({places}) {prefix}{spec}\n", pids + idx + [v])
        conv.loop_nest(value.shape, body)


@lowers("tt.assert")
def lower_assert(conv, op):
    from .core import user_location
    message = ir.StringAttr(op.attributes["message"]).value
    loc = user_location(op.location)
    number = len(conv.info.asserts) + 1
    conv.info.asserts.append((message, f"{conv.file_name(loc.filename)}:{loc.lineno}" if loc else ""))
    cond = conv.get(op.operands[0])
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
    with conv.single():                     # tasklet 0 checks (and records in its slots)
        if isinstance(cond, Tile):
            conv.loop_nest(cond.shape, lambda ivs: check(cond.at(ivs)))
        else:
            check(cond)
