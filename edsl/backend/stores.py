"""Which pointer parameters of a kernel it may store through.

A read-only array passed for such a parameter is refused before the launch
(edsl.backend.model). Found on the TTIR as parsed by the reader: the pointer
operand of every store, atomic and EDSL call (`fl.call` may write MRAM) is
followed back through pointer arithmetic, shape ops, selects and loop-carried
values to the kernel's parameters. A pointer that comes from elsewhere (loaded
from memory, made from an integer) makes the answer unknown (None): the
launch then checks the arrays' private copies after the run instead.
"""
from __future__ import annotations

from mlir import ir

# Ops whose result points where their operand 0 points.
_FOLLOW = {"tt.addptr", "tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.trans",
           "tt.bitcast", "tt.advance"}
# Ops whose result may point where any of their pointer operands point.
_ANY = {"arith.select", "tt.join", "tt.cat", "tt.split", "tt.gather"}
_STORES = {"tt.store", "tt.atomic_rmw", "tt.atomic_cas", "tt.descriptor_store"}


class _Unknown(Exception):
    pass


def _is_ptr(t: ir.Type) -> bool:
    text = str(t)
    return "!tt.ptr" in text


def stored_params(kernel) -> list[int] | None:
    """Indices of the parameters of `kernel` (a func.func of parsed TTIR) that
    a store may go through; None if that cannot be told."""
    entry = kernel.regions[0].blocks[0]
    params = list(entry.arguments)
    found: set[int] = set()
    targets: list[ir.Value] = []

    def visit(op):
        name = op.name
        if name in _STORES:
            targets.append(op.operands[0])
        elif name == "func.call":
            targets.extend(v for v in op.operands if _is_ptr(v.type))
        return ir.WalkResult.ADVANCE
    kernel.walk(visit)
    seen: set = set()

    def trace(v: ir.Value) -> None:
        key = v
        if key in seen:
            return
        seen.add(key)
        if isinstance(v, ir.BlockArgument):
            if v.owner == entry:
                found.add(v.arg_number)
                return
            parent = v.owner.owner
            if parent.name == "scf.for" and v.arg_number > 0:
                k = v.arg_number - 1
                trace(parent.operands[3 + k])                          # the initial value
                yielded = list(v.owner.operations)[-1]
                trace(yielded.operands[k])                              # the next iteration's
                return
            raise _Unknown
        op = v.owner
        name = op.name
        if name in _FOLLOW:
            trace(op.operands[0])
        elif name in _ANY:
            for operand in op.operands:
                if _is_ptr(operand.type):
                    trace(operand)
        elif name == "scf.for":
            k = v.result_number
            trace(op.operands[3 + k])
            trace(list(op.regions[0].blocks[0].operations)[-1].operands[k])
        elif name == "scf.if":
            k = v.result_number
            for region in op.regions:
                for block in region.blocks:
                    trace(list(block.operations)[-1].operands[k])
        else:
            raise _Unknown
    try:
        for t in targets:
            trace(t)
    except _Unknown:
        return None
    return sorted(i for i in found if _is_ptr(params[i].type))
