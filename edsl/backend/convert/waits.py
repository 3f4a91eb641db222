"""Where a converted kernel is watched for a wait that cannot end
(`abi.WATCH_WAIT`: one access repeated `WAIT_REPEATS` times in a row). Only a
`while` loop runs until a value changes, so only the accesses made in one
are watched, and the watch is reset before each outermost one: a run of
one access is then this loop's alone. Every other access costs no watch,
on the model and on a DPU."""
from __future__ import annotations

from mlir import ir
from mlir.dialects import llvm

from ...target.dpu import NOTE, WATCH_WAIT, Access
from .builders import c64


def _outermost_while(op):
    """The outermost `scf.while` around `op`, or None."""
    found, parent = None, op.parent
    while parent is not None and parent.name != "func.func":
        if parent.name == "scf.while":
            found = parent
        parent = parent.parent
    return found


def watch_waits(entry: ir.Block) -> None:
    """Watch the accesses (their `NOTE` calls) made in `while` loops of the
    converted kernel whose body is `entry`, each with the note's operands."""
    notes, loops = [], []

    def visit(op):
        if op.name == "llvm.call" and "callee" in op.attributes \
                and ir.FlatSymbolRefAttr(op.attributes["callee"]).value == NOTE:
            loop = _outermost_while(op)
            if loop is not None:
                notes.append(op)
                if not any(loop == seen for seen, _ in loops):
                    loops.append((loop, list(op.operands)[-1]))
        return ir.WalkResult.ADVANCE
    entry.owner.operation.walk(visit)
    callee = ir.FlatSymbolRefAttr.get(WATCH_WAIT)
    for note in notes:
        with ir.InsertionPoint(note), note.location:
            llvm.call(None, list(note.operands), [], [], callee=callee)
    for loop, ctx in loops:
        with ir.InsertionPoint(loop), loop.location:
            # (a store's kind: the run of any access before starts again)
            llvm.call(None, [c64(Access.WRITE), c64(0), c64(0), c64(0), ctx], [], [], callee=callee)
