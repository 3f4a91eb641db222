"""Which pointer parameters of a kernel it may store through, and which
load gave an access its pointer.

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
ACCESSES = {"tt.load", *_STORES}


def _is_ptr(t: ir.Type) -> bool:
    text = str(t)
    return "!tt.ptr" in text


def _sources(v: ir.Value, entry: ir.Block, params: set[int], others: list, seen: set) -> None:
    """Where pointer `v` may point: the indices of the parameters of the
    kernel (whose entry block is `entry`) it is derived from, into `params`,
    and the ops that made it otherwise (a load, an integer cast; None for a
    value not followed), into `others`."""
    if v in seen:
        return
    seen.add(v)

    def follow(u: ir.Value) -> None:
        _sources(u, entry, params, others, seen)
    if isinstance(v, ir.BlockArgument):
        if v.owner == entry:
            params.add(v.arg_number)
            return
        parent = v.owner.owner
        if parent.name == "scf.for" and v.arg_number > 0:
            k = v.arg_number - 1
            follow(parent.operands[3 + k])                          # the initial value
            follow(list(v.owner.operations)[-1].operands[k])        # the next iteration's
            return
        others.append(None)
        return
    op = v.owner
    name = op.name
    if name in _FOLLOW:
        follow(op.operands[0])
    elif name in _ANY:
        for operand in op.operands:
            if _is_ptr(operand.type):
                follow(operand)
    elif name == "scf.for":
        k = v.result_number
        follow(op.operands[3 + k])
        follow(list(op.regions[0].blocks[0].operations)[-1].operands[k])
    elif name == "scf.if":
        k = v.result_number
        for region in op.regions:
            for block in region.blocks:
                follow(list(block.operations)[-1].operands[k])
    else:
        others.append(op)


def stored_params(kernel) -> list[int] | None:
    """Indices of the parameters of `kernel` (a func.func of parsed TTIR) that
    a store may go through; None if that cannot be told."""
    entry = kernel.regions[0].blocks[0]
    targets: list[ir.Value] = []

    def visit(op):
        name = op.name
        if name in _STORES:
            targets.append(op.operands[0])
        elif name == "func.call":
            targets.extend(v for v in op.operands if _is_ptr(v.type))
        return ir.WalkResult.ADVANCE
    kernel.walk(visit)
    params: set[int] = set()
    others: list = []
    seen: set = set()
    for t in targets:
        _sources(t, entry, params, others, seen)
    if others:
        return None
    return sorted(i for i in params if _is_ptr(entry.arguments[i].type))


# Ops an address passes through on its way from a load to a pointer (tt.int_to_ptr).
_INT_FOLLOW = {"tt.int_to_ptr", "arith.extsi", "arith.extui", "arith.trunci", "tt.splat", "tt.broadcast",
               "tt.expand_dims", "tt.reshape", "tt.bitcast"}


def pointer_load(kernel, access) -> ir.Operation | None:
    """The load that produced the pointer of `access` (a load, store or
    atomic of `kernel`): a loaded pointer, or an integer loaded and cast to a
    pointer (a table of addresses); None if it comes from no load."""
    others: list = []
    _sources(access.operands[0], kernel.regions[0].blocks[0], set(), others, set())
    for op in others:
        while op is not None and op.name in _INT_FOLLOW:
            u = op.operands[0]
            op = None if isinstance(u, ir.BlockArgument) else u.owner
        if op is not None and op.name == "tt.load":
            return op
    return None
