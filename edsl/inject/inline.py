"""Injector step d: inline each `edsl.region` into its block.

The block is split after the region; a branch enters the region's first block,
and each `llvm.return` of the region becomes a branch to the continuation,
whose block argument replaces the region's result. Run once the region's
parent is a CFG region (after `convert-scf-to-cf`).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import llvm

from ..lowering.walk import collect


def inline_regions(module: ir.Module) -> int:
    regions = collect(module, lambda op: op.name == "edsl.region")
    for op in regions:
        with op.location:
            _inline(op)
    return len(regions)


def _inline(op: ir.Operation) -> None:
    block = op.block
    result_types = [r.type for r in op.results]
    after = block.create_after(*result_types)
    # Move everything after the region op into the continuation.
    following, seen = [], False
    for o in block.operations:
        if seen:
            following.append(o.operation)
        elif o.operation == op:
            seen = True
    for o in following:
        o.detach_from_parent()
        ir.InsertionPoint(after).insert(o)
    for r, arg in zip(op.results, after.arguments):
        r.replace_all_uses_with(arg)
    inner = list(op.regions[0].blocks)
    parent_region = block.region
    for b in inner:
        b.append_to(parent_region)
        term = list(b.operations)[-1].operation
        if term.name == "llvm.return":
            with ir.InsertionPoint(term):
                llvm.br(list(term.operands), after)
            term.erase()
    with ir.InsertionPoint(block):
        llvm.br([], inner[0])
    op.erase()
