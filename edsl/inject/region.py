"""Injector step a: build an `edsl.region` from an EDSL function's LLVM-dialect
text at a call site, with extract placeholders for its arguments and pack
placeholders for its results."""
from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..base.errors import CompileError
from . import dialect


@dataclass(frozen=True)
class ParamKind:
    """How one EDSL parameter is passed: a memref of `rank` (expanded to its
    descriptor fields), a `ptr`, or a `scalar` passed as is."""
    kind: str
    rank: int = 0

    @staticmethod
    def of(t: ir.Type) -> "ParamKind":
        if isinstance(t, ir.MemRefType):
            return ParamKind("memref", ir.MemRefType(t).rank)
        if str(t).startswith("!llvm.ptr"):
            return ParamKind("ptr")
        return ParamKind("scalar")


def _create(name: str, operands, results, attributes=None, regions: int = 0) -> ir.Operation:
    return ir.Operation.create(name, results=results, operands=list(operands), attributes=attributes,
                               regions=regions)


def _extract(kind: ParamKind, operand: ir.Value, ptr_type: ir.Type) -> list[ir.Value]:
    """The LLVM-level arguments one operand stands for, as placeholder results."""
    i64 = ir.IntegerType.get_signless(64)
    if kind.kind == "scalar":
        return [operand]
    if kind.kind == "ptr":
        return [_create("edsl.extract_ptr", [operand], [ptr_type]).result]
    out = [_create("edsl.extract_allocated_ptr", [operand], [ptr_type]).result,
           _create("edsl.extract_aligned_ptr", [operand], [ptr_type]).result,
           _create("edsl.extract_offset", [operand], [i64]).result]
    if kind.rank:
        out += list(_create("edsl.extract_sizes", [operand], [i64] * kind.rank).results)
        out += list(_create("edsl.extract_strides", [operand], [i64] * kind.rank).results)
    return out


def build_region(llvm_text: str, symbol: str, kinds: list[ParamKind],
                 operands: list[ir.Value], out_positions: list[int]) -> list[ir.Value]:
    """At the current insertion point, put the body of `llvm.func @symbol`
    (from `llvm_text`) in an `edsl.region` over `operands` (in the order of
    the function's parameters); returns one `edsl.pack` result per InOut
    operand (at `out_positions`), standing for its new value."""
    if len(kinds) != len(operands):
        raise CompileError(f"{symbol} takes {len(kinds)} operands, {len(operands)} given")
    context = ir.Context.current
    dialect.load(context)
    source = ir.Module.parse(llvm_text)  # owns `fn` until its blocks are moved out
    fn = _find_function(source, symbol)
    result_types = _result_types(fn)
    region_op = _create("edsl.region", [], result_types, regions=1)
    body = fn.regions[0]
    entry = body.blocks[0]
    args = list(entry.arguments)
    # Move the function's blocks into the region; the extract placeholders go
    # at the top of its entry block and replace the function's arguments.
    blocks = list(body.blocks)
    for b in blocks:
        b.append_to(region_op.regions[0])
    with ir.InsertionPoint.at_block_begin(entry):
        values = []
        for kind, operand in zip(kinds, operands):
            values += _extract(kind, operand, _ptr_type_for(operand, args, len(values)))
    _bring_symbols(source, fn, region_op)
    if len(values) != len(args):
        raise CompileError(f"{symbol}: its LLVM signature has {len(args)} arguments, the operands "
                           f"give {len(values)}")
    for arg, v in zip(args, values):
        if arg.type != v.type:
            raise CompileError(f"{symbol}: operand of type {v.type} where the function expects {arg.type}")
        arg.replace_all_uses_with(v)
    for i in reversed(range(len(args))):
        entry.erase_argument(i)
    packs = []
    if result_types:
        for k, out in enumerate(operands[i] for i in out_positions):
            packs.append(_create("edsl.pack", [region_op.result], [out.type],
                                 {"index": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), k)}).result)
    return packs


def _bring_symbols(source: ir.Module, fn: ir.Operation, anchor: ir.Operation) -> None:
    """Move what the function refers to at module level (its WRAM globals, the
    runtime and libm declarations, helper functions) into the module around
    `anchor`; a symbol already there (the same function called twice) is kept."""
    module = anchor
    while module.name != "builtin.module":
        module = module.parent
    table = ir.SymbolTable(module)
    for op in list(source.body.operations):
        op = op.operation
        if op == fn or "sym_name" not in op.attributes:
            continue
        if ir.StringAttr(op.attributes["sym_name"]).value in table:
            continue
        op.detach_from_parent()
        module.regions[0].blocks[0].append(op)


def _result_types(fn: ir.Operation) -> list[ir.Type]:
    for block in fn.regions[0].blocks:
        term = list(block.operations)[-1].operation
        if term.name == "llvm.return":
            return [v.type for v in term.operands]
    return []


def _ptr_type_for(operand: ir.Value, args, position: int) -> ir.Type:
    """The pointer type the function expects at argument `position`."""
    if position < len(args) and str(args[position].type).startswith("!llvm.ptr"):
        return args[position].type
    return ir.Type.parse("!llvm.ptr")


def _find_function(module: ir.Module, symbol: str) -> ir.Operation:
    for op in module.body.operations:
        op = op.operation
        if op.name == "llvm.func" and ir.StringAttr(op.attributes["sym_name"]).value == symbol:
            if not op.regions[0].blocks:
                break
            return op
    raise CompileError(f"no llvm.func @{symbol} with a body in the EDSL function's LLVM dialect")
