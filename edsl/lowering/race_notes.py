"""A program built without the check of races between tasklets carries no
race notes (`abi.RACE_NOTE`, which the code generator emits at every memory
access of EDSL code): their calls are erased from the LLVM-dialect module,
with the address arithmetic that fed only them, before executed blocks are
counted, so that a time estimate counts the program's own work and nothing
of the check."""
from __future__ import annotations

from mlir import ir

from ..target.dpu import RACE_NOTE

# LLVM-dialect ops without side effects, which a note's operands come from.
_PURE = frozenset({
    "llvm.extractvalue", "llvm.insertvalue", "llvm.mlir.constant", "llvm.mlir.undef", "llvm.mlir.poison",
    "llvm.mlir.zero", "llvm.add", "llvm.sub", "llvm.mul", "llvm.sdiv", "llvm.udiv", "llvm.shl", "llvm.lshr",
    "llvm.ashr", "llvm.and", "llvm.or", "llvm.xor", "llvm.ptrtoint", "llvm.inttoptr", "llvm.getelementptr",
    "llvm.sext", "llvm.zext", "llvm.trunc", "llvm.bitcast", "llvm.select", "llvm.icmp",
})


def strip_race_notes(module: ir.Module) -> int:
    """Erase the module's calls of RACE_NOTE and what only they used; their count."""
    calls = []

    def visit(op):
        if op.name == "llvm.call" and "callee" in op.attributes \
                and ir.FlatSymbolRefAttr(op.attributes["callee"]).value == RACE_NOTE:
            calls.append(op)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    for call in calls:
        producers = [v.owner for v in call.operands]
        call.erase()
        for op in _dead(producers):
            op.erase()
    return len(calls)


def _operation(x):
    return x.operation if isinstance(x, ir.OpView) else x


def _dead(ops) -> list:
    """The pure ops among `ops` and what they use that nothing else uses,
    users before what they use, each once. (Nothing is erased while they are
    found: two handles of one op are equal, but a handle of an erased op is not
    safe to read.)"""
    dead, stack = [], [_operation(op) for op in ops if isinstance(op, (ir.OpView, ir.Operation))]
    while stack:
        op = stack.pop()
        if op.name not in _PURE or any(op == d for d in dead):
            continue
        users = [_operation(use.owner) for r in op.results for use in r.uses]
        if all(any(u == d for d in dead) for u in users):
            dead.append(op)
            stack.extend(_operation(v.owner) for v in op.operands if isinstance(v.owner, (ir.OpView, ir.Operation)))
    return dead
