"""The C of one op of the LLVM dialect: a handler per op name (`_OPS`).

Each handler, `handler(fp, op)`, writes the op's C statement through `fp`,
the printer of the function the op is in (`module._FunctionPrinter`):
`fp.v(value)` and `fp.result(op)` name values, `fp.signed`, `fp.wide` and
`fp.width` read integers, `fp.emit` writes a statement, `fp.labels` names
blocks, and `fp.p` (the module's `Printer`) gives C types, WRAM buffers and
globals.

- `llvm.alloca` of a constant size becomes a static WRAM buffer (one per
  tasklet when every tasklet runs the program), so the WRAM budget is checked
  by the linker rather than by a tasklet's small stack;
- atomic loads and stores (the DPU runtime's flag that stops a DPU) are
  volatile accesses: the tasklets of a DPU share one in-order core without
  caches, where an aligned load or store is atomic and seen by the others in
  program order; `volatile` keeps the C compiler from caching or dropping it
  (read-modify-write atomics are refused);
- a branch assigns the block arguments of its target (through temporaries
  when the assignment is a permutation) before its `goto`.

Separate from the module walk (`module`), which decides what is printed and
in which order, and from the calls (`intrinsics`), whose C depends on the
callee's name: a handler here depends only on its op, its types and its
operands.
"""
from __future__ import annotations

import re

from mlir import ir
from mlir.dialects import llvm

from ...target import dpu as abi
from .common import _array_parts, _check_float, _decl, _err, _int_literal, _type_bytes
from .intrinsics import _call


_ICMP = {0: "eq", 1: "ne", 2: "slt", 3: "sle", 4: "sgt", 5: "sge", 6: "ult", 7: "ule",
         8: "ugt", 9: "uge"}
_FCMP = {0: "false", 1: "oeq", 2: "ogt", 3: "oge", 4: "olt", 5: "ole", 6: "one", 7: "ord",
         8: "ueq", 9: "ugt", 10: "uge", 11: "ult", 12: "ule", 13: "une", 14: "uno", 15: "true"}
_C_OPS = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
          "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}


def _binary_int(c_op: str, signed: bool = False):
    def handler(fp, op):
        a, b = op.operation.operands
        w = fp.width(a)
        r = fp.result(op)
        if w == 1:
            table = {"+": "^", "-": "^", "*": "&", "&": "&", "|": "|", "^": "^"}
            if c_op not in table:
                raise _err(op, f"i1 operands for '{op.operation.name}' are not supported")
            fp.emit(f"{r} = {fp.v(a)} {table[c_op]} {fp.v(b)};")
        elif signed:
            fp.emit(f"{r} = (uint{w}_t)({fp.signed(a)} {c_op} {fp.signed(b)});")
        elif w < 32:
            fp.emit(f"{r} = (uint{w}_t)({fp.wide(a)} {c_op} {fp.wide(b)});")
        else:
            fp.emit(f"{r} = {fp.v(a)} {c_op} {fp.v(b)};")
    return handler


def _shift(c_op: str, signed: bool = False):
    def handler(fp, op):
        a, b = op.operation.operands
        w = fp.width(a)
        if w == 1:
            raise _err(op, "shifts of i1 values are not supported")
        left = fp.signed(a) if signed else fp.wide(a)
        fp.emit(f"{fp.result(op)} = (uint{w}_t)({left} {c_op} {fp.v(b)});")
    return handler


def _binary_float(c_op: str):
    def handler(fp, op):
        a, b = op.operation.operands
        _check_float(op, a.type)
        fp.emit(f"{fp.result(op)} = {fp.v(a)} {c_op} {fp.v(b)};")
    return handler


def _frem(fp, op):
    a, b = op.operation.operands
    s = _check_float(op, a.type)
    fp.p.out.needs_math = True
    fp.emit(f"{fp.result(op)} = fmod{s}({fp.v(a)}, {fp.v(b)});")


def _fneg(fp, op):
    a = op.operation.operands[0]
    _check_float(op, a.type)
    fp.emit(f"{fp.result(op)} = -{fp.v(a)};")


def _icmp(fp, op):
    a, b = op.operation.operands
    pred = _ICMP[ir.IntegerAttr(op.attributes["predicate"]).value]
    r = fp.result(op)
    if isinstance(a.type, llvm.PointerType):
        x, y = f"(uintptr_t){fp.v(a)}", f"(uintptr_t){fp.v(b)}"
    elif pred.startswith("s"):
        x, y = fp.signed(a), fp.signed(b)
    else:
        x, y = fp.v(a), fp.v(b)
    fp.emit(f"{r} = {x} {_C_OPS[pred]} {y};")


def _fcmp(fp, op):
    a, b = op.operation.operands
    _check_float(op, a.type)
    pred = _FCMP[ir.IntegerAttr(op.attributes["predicate"]).value]
    x, y = fp.v(a), fp.v(b)
    text = {
        "false": "false", "true": "true",
        "oeq": f"{x} == {y}", "ogt": f"{x} > {y}", "oge": f"{x} >= {y}", "olt": f"{x} < {y}",
        "ole": f"{x} <= {y}", "one": f"({x} < {y} || {x} > {y})",
        "ord": f"({x} == {x} && {y} == {y})", "uno": f"({x} != {x} || {y} != {y})",
        "ueq": f"!({x} < {y} || {x} > {y})", "ugt": f"!({x} <= {y})", "uge": f"!({x} < {y})",
        "ult": f"!({x} >= {y})", "ule": f"!({x} > {y})", "une": f"{x} != {y}",
    }[pred]
    fp.emit(f"{fp.result(op)} = {text};")


def _select(fp, op):
    c, a, b = op.operation.operands
    if not isinstance(c.type, ir.IntegerType):
        raise _err(op, "vector selects are not supported")
    fp.emit(f"{fp.result(op)} = {fp.v(c)} ? {fp.v(a)} : {fp.v(b)};")


def _narrow_unsupported(o) -> bool:
    """Whether `o` has an integer of 2 to 7 bits it cannot print: only
    llvm.trunc makes one (masked), only llvm.zext to a byte or more reads one
    (the byte that holds it is zero above its width: a cast)."""
    def narrow(values):
        return any(isinstance(v.type, ir.IntegerType) and 1 < v.type.width < 8 for v in values)
    if o.name == "llvm.trunc":
        return False
    return narrow(o.results) or (o.name != "llvm.zext" and narrow(o.operands))


def _trunc(fp, op):
    a = op.operation.operands[0]
    t = op.operation.results[0].type
    r = fp.result(op)
    if t.width == 1:
        fp.emit(f"{r} = ({fp.v(a)} & 1u) != 0;")
    elif t.width < 8:
        fp.emit(f"{r} = (uint8_t)({fp.v(a)} & {(1 << t.width) - 1}u);")
    else:
        fp.emit(f"{r} = (uint{t.width}_t){fp.v(a)};")


# Conversions that are one C cast: {a} the operand, {s} it as a signed
# integer, {w} the result's width, {c} the result's C type.
_CASTS = {
    "llvm.zext": "(uint{w}_t){a}",
    "llvm.sext": "(uint{w}_t)(int{w}_t){s}",
    "llvm.sitofp": "({c}){s}",
    "llvm.uitofp": "({c}){a}",
    "llvm.fptoui": "({c}){a}",
    "llvm.ptrtoint": "(uint{w}_t)(uintptr_t){a}",
    "llvm.inttoptr": "({c})(uintptr_t){a}",
}


def _cast(fp, op):
    a = op.operation.operands[0]
    t = op.operation.results[0].type
    fmt = _CASTS[op.operation.name]
    fields = {"a": fp.v(a), "w": getattr(t, "width", 0)}
    if "{s}" in fmt:
        fields["s"] = fp.signed(a)
    if "{c}" in fmt:
        fields["c"] = fp.p.ctype(t, op)
    fp.emit(f"{fp.result(op)} = {fmt.format(**fields)};")


def _fptosi(fp, op):
    a = op.operation.operands[0]
    t = op.operation.results[0].type
    if t.width == 1:
        fp.emit(f"{fp.result(op)} = {fp.v(a)} != 0;")
    else:
        fp.emit(f"{fp.result(op)} = (uint{t.width}_t)(int{t.width}_t){fp.v(a)};")


def _fpcast(fp, op):
    a = op.operation.operands[0]
    t = op.operation.results[0].type
    _check_float(op, a.type)
    fp.emit(f"{fp.result(op)} = ({fp.p.ctype(t, op)}){fp.v(a)};")


def _bitcast(fp, op):
    a = op.operation.operands[0]
    t = op.operation.results[0].type
    src, dst = fp.p.ctype(a.type, op), fp.p.ctype(t, op)
    r = fp.result(op)
    if src == dst or (isinstance(a.type, llvm.PointerType) and isinstance(t, llvm.PointerType)):
        fp.emit(f"{r} = ({dst}){fp.v(a)};")
        return
    pairs = {("float", "uint32_t"), ("uint32_t", "float"), ("double", "uint64_t"),
             ("uint64_t", "double")}
    if (src, dst) not in pairs:
        raise _err(op, f"bitcast from {a.type} to {t} is not supported")
    fp.emit(f"{{ union {{ {src} from; {dst} to; }} u; u.from = {fp.v(a)}; {r} = u.to; }}")


def _addrspacecast(fp, op):
    raise _err(op, "address space casts between WRAM and MRAM have no DPU equivalent")


def _alloca(fp, op):
    o = op.operation
    size = o.operands[0]
    owner = getattr(size.owner, "operation", size.owner)
    if not (isinstance(owner, ir.Operation) and owner.name == "llvm.mlir.constant"):
        raise _err(op, "an alloca of a dynamic size is not supported (static WRAM buffers only)")
    count = ir.IntegerAttr(owner.attributes["value"]).value
    elem = ir.TypeAttr(o.attributes["elem_type"]).value
    align = ir.IntegerAttr(o.attributes["alignment"]).value if "alignment" in o.attributes else 8
    c = fp.p.ctype(elem, op)
    ref = fp.p.buffer(c, max(count, 1), align, max(count, 1) * _type_bytes(elem))
    fp.emit(f"{fp.result(op)} = (void *){ref};")


def _mem_ptr_type(fp, ptr, ctype: str, op) -> str:
    space = ptr.type.address_space
    if space == abi.MRAM_ADDRSPACE:
        return f"__mram_ptr {ctype} *"
    if space != abi.WRAM_ADDRSPACE:
        raise _err(op, f"memory access in address space {space}")
    return f"{ctype} *"


def _volatile(op) -> str:
    """"volatile " for a volatile or atomic load / store (see this module's doc)."""
    o = op.operation
    atomic = "ordering" in o.attributes and ir.IntegerAttr(o.attributes["ordering"]).value != 0
    return "volatile " if atomic or "volatile_" in o.attributes else ""


def _load(fp, op):
    p = op.operation.operands[0]
    t = op.operation.results[0].type
    c = _volatile(op) + fp.p.ctype(t, op)
    fp.emit(f"{fp.result(op)} = *({_mem_ptr_type(fp, p, c, op)}){fp.v(p)};")


def _store(fp, op):
    v, p = op.operation.operands
    c = _volatile(op) + fp.p.ctype(v.type, op)
    fp.emit(f"*({_mem_ptr_type(fp, p, c, op)}){fp.v(p)} = {fp.v(v)};")


def _gep(fp, op):
    o = op.operation
    base = o.operands[0]
    dynamic = list(o.operands[1:])
    raw = list(ir.DenseI32ArrayAttr(o.attributes["rawConstantIndices"]))
    elem = ir.TypeAttr(o.attributes["elem_type"]).value
    if not isinstance(base.type, llvm.PointerType):
        raise _err(op, "vector getelementptr is not supported")
    terms = []
    t = None
    for k, index in enumerate(raw):
        if index == -2**31:
            value = dynamic.pop(0)
            idx, const = f"(intptr_t){fp.signed(value)}", None
        else:
            idx, const = None, index
        if k == 0:
            t = elem
            size = f"sizeof({fp.p.ctype(elem, op)})"
        elif isinstance(t, llvm.StructType):
            if const is None:
                raise _err(op, "a dynamic struct field index")
            sname = fp.p.ctype(t, op)
            terms.append(f"offsetof({sname}, f{const})")
            t = list(t.body)[const]
            continue
        elif str(t).startswith("!llvm.array<"):
            arr = fp.p.ctype(t, op)
            terms.append(f"offsetof({arr}, a)")
            t = _array_parts(t)[1]
            size = f"sizeof({fp.p.ctype(t, op)})"
        else:
            raise _err(op, f"cannot index into {t}")
        if const == 0:
            continue
        terms.append(f"{idx} * (intptr_t){size}" if const is None else f"(intptr_t){const} * (intptr_t){size}")
    space = "__mram_ptr " if base.type.address_space == abi.MRAM_ADDRSPACE else ""
    rc = fp.p.ctype(o.results[0].type, op)
    offset = " + ".join(terms) or "0"
    fp.emit(f"{fp.result(op)} = ({rc})(({space}char *){fp.v(base)} + ({offset}));")


def _path(t, position: list[int], fp, op) -> str:
    parts = []
    for k in position:
        if isinstance(t, llvm.StructType):
            fp.p.ctype(t, op)
            parts.append(f".f{k}")
            t = list(t.body)[k]
        elif str(t).startswith("!llvm.array<"):
            parts.append(f".a[{k}]")
            t = _array_parts(t)[1]
        else:
            raise _err(op, f"cannot take element {k} of {t}")
    return "".join(parts)


def _extractvalue(fp, op):
    o = op.operation
    agg = o.operands[0]
    position = list(ir.DenseI64ArrayAttr(o.attributes["position"]))
    fp.emit(f"{fp.result(op)} = {fp.v(agg)}{_path(agg.type, position, fp, op)};")


def _insertvalue(fp, op):
    o = op.operation
    agg, value = o.operands[0], o.operands[1]
    position = list(ir.DenseI64ArrayAttr(o.attributes["position"]))
    r = fp.result(op)
    fp.emit(f"{r} = {fp.v(agg)}; {r}{_path(agg.type, position, fp, op)} = {fp.v(value)};")


def _undef(fp, op):
    t = op.operation.results[0].type
    c = fp.p.ctype(t, op)
    r = fp.result(op)
    if isinstance(t, llvm.StructType) or str(t).startswith("!llvm.array<"):
        fp.emit(f"{r} = ({c}){{0}};")
    else:
        fp.emit(f"{r} = ({c})0;")


def _addressof(fp, op):
    symbol = ir.FlatSymbolRefAttr(op.attributes["global_name"]).value
    fp.emit(f"{fp.result(op)} = {fp.p.global_ref(symbol, op)};")


def _branch_to(fp, block, values, op) -> str:
    """Statements assigning `values` to `block`'s arguments, then its goto."""
    args = list(block.arguments)
    label = fp.labels[block]
    if not args:
        return f"goto {label};"
    targets = [fp.v(a) for a in args]
    sources = [fp.v(v) for v in values]
    pairs = [(t, s) for t, s in zip(targets, sources) if t != s]
    if not pairs:
        return f"goto {label};"
    written = {t for t, _ in pairs}
    if any(s in written for _, s in pairs):
        types = {fp.v(a): fp.p.ctype(a.type, op) for a in args}
        tmp = " ".join(f"{_decl(types[t], f't{k}')} = {s};" for k, (t, s) in enumerate(pairs))
        assign = " ".join(f"{t} = t{k};" for k, (t, _) in enumerate(pairs))
        return f"{{ {tmp} {assign} }} goto {label};"
    return " ".join(f"{t} = {s};" for t, s in pairs) + f" goto {label};"


def _br(fp, op):
    o = op.operation
    fp.emit(_branch_to(fp, o.successors[0], list(o.operands), op))


def _cond_br(fp, op):
    o = op.operation
    cond = o.operands[0]
    t = _branch_to(fp, o.successors[0], list(op.trueDestOperands), op)
    f = _branch_to(fp, o.successors[1], list(op.falseDestOperands), op)
    fp.emit(f"if ({fp.v(cond)}) {{ {t} }} else {{ {f} }}")


def _switch(fp, op):
    o = op.operation
    value = o.operands[0]
    segments = list(ir.DenseI32ArrayAttr(o.attributes["case_operand_segments"]))
    sizes = list(ir.DenseI32ArrayAttr(o.attributes["operandSegmentSizes"]))
    operands = list(o.operands)
    default_ops = operands[1:1 + sizes[1]]
    case_ops = operands[1 + sizes[1]:]
    cases = [int(x) for x in re.findall(r"-?\d+", str(o.attributes["case_values"]).split(":")[0])] \
        if "case_values" in o.attributes else []
    w = fp.width(value)
    lines = [f"switch ({fp.v(value)}) {{"]
    k = 0
    for n, (case, count) in enumerate(zip(cases, segments)):
        vals = case_ops[k:k + count]
        k += count
        lines.append(f"case {_int_literal(case, w)}: {_branch_to(fp, o.successors[n + 1], vals, op)}")
    lines.append(f"default: {_branch_to(fp, o.successors[0], default_ops, op)}")
    lines.append("}")
    fp.emit(" ".join(lines))


def _return(fp, op):
    o = op.operation
    if len(o.operands):
        fp.emit(f"return {fp.v(o.operands[0])};")
    else:
        fp.emit("return;")


def _unreachable(fp, op):
    fp.emit("__builtin_unreachable();")


_OPS = {
    "llvm.add": _binary_int("+"), "llvm.sub": _binary_int("-"), "llvm.mul": _binary_int("*"),
    "llvm.and": _binary_int("&"), "llvm.or": _binary_int("|"), "llvm.xor": _binary_int("^"),
    "llvm.udiv": _binary_int("/"), "llvm.urem": _binary_int("%"),
    "llvm.sdiv": _binary_int("/", signed=True), "llvm.srem": _binary_int("%", signed=True),
    "llvm.shl": _shift("<<"), "llvm.lshr": _shift(">>"), "llvm.ashr": _shift(">>", signed=True),
    "llvm.fadd": _binary_float("+"), "llvm.fsub": _binary_float("-"),
    "llvm.fmul": _binary_float("*"), "llvm.fdiv": _binary_float("/"),
    "llvm.frem": _frem, "llvm.fneg": _fneg,
    "llvm.icmp": _icmp, "llvm.fcmp": _fcmp, "llvm.select": _select,
    "llvm.trunc": _trunc, **{name: _cast for name in _CASTS}, "llvm.fptosi": _fptosi,
    "llvm.fpext": _fpcast, "llvm.fptrunc": _fpcast, "llvm.bitcast": _bitcast,
    "llvm.addrspacecast": _addrspacecast,
    "llvm.alloca": _alloca, "llvm.load": _load, "llvm.store": _store,
    "llvm.getelementptr": _gep, "llvm.extractvalue": _extractvalue,
    "llvm.insertvalue": _insertvalue, "llvm.mlir.undef": _undef, "llvm.mlir.poison": _undef,
    "llvm.mlir.zero": _undef, "llvm.mlir.addressof": _addressof,
    "llvm.br": _br, "llvm.cond_br": _cond_br, "llvm.switch": _switch,
    "llvm.return": _return, "llvm.unreachable": _unreachable, "llvm.call": _call,
}
