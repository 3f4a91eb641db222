"""Control flow: scf.for, scf.if, scf.index_switch, scf.while with scalar and
tensor values, the step that structures a kernel's branches between
blocks (`structure_control_flow`) before the conversion walks it, and the
waits: barriers and `tl.atomic_poll`.

Scalars stay SSA values carried by the new loop. A loop-carried tensor gets
its own WRAM buffer for the loop's life: the initial value is copied in, the
body reads it, and the values the body yields are copied back at its end
(through a temporary when the yielded value still reads the carried buffers;
the one carried tensor of a loop whose next value reads it elementwise, as
`acc += x`, is updated in place).
An `scf.if` (or `scf.index_switch`) returning tensors writes each branch's
result into one buffer.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm, scf

from ...target.dpu import FAIL, FAILED, Err
from .barriers import ACCESS
from .core import Tile, is_tensor, lowers, pointee, scalar_type
from .builders import cast_int, index_c
from .spill import FLUSH_MARK
from . import ops


def _tile_type(t):
    rt = ir.RankedTensorType(t)
    return tuple(rt.shape), scalar_type(rt.element_type)


def lower_body(conv, block, mapping) -> list:
    """Lower the ops of `block` (arguments bound by `mapping`) except its
    terminator; return the converted operands of that terminator."""
    for arg, value in zip(block.arguments, mapping):
        conv.values.bind(arg, value)
    ops = list(block.operations)
    for op in ops[:-1]:
        conv.lower_op(op)
    return [conv.values.get(v) for v in ops[-1].operands]


def _new_ops(block, first: int) -> list:
    """The ops of `block` from the `first`-th on, nested ones included."""
    found = []

    def walk(op):
        found.append(op)
        for region in op.regions:
            for inner in region.blocks:
                for o in inner.operations:
                    walk(o.operation)
    for op in list(block.operations)[first:]:
        walk(op.operation)
    return found


def _own_elements(events, buf) -> bool:
    """Whether the element accesses `events` (`AccessRecord.recording`) read `buf`
    only at the element that the next store into it writes."""
    pending = []
    for b, ivs, write in events:
        if b != buf:
            continue
        if write:
            if any(r != ivs for r in pending):
                return False
            pending = []
        else:
            pending.append(ivs)
    return not pending


_ELEMENT_USES = frozenset({"memref.load", "memref.store", "memref.reinterpret_cast", ACCESS, FLUSH_MARK})


def _fill_in_place(conv, y, buf) -> bool:
    """Fill carried buffer `buf` with the lazy tile `y` directly, when each
    element of `y` reads `buf` at most at that element (an elementwise update,
    as `acc += x`); else leave nothing emitted and return False."""
    if y.buf is not None:
        return False
    ip = ir.InsertionPoint.current
    if ip.ref_operation is not None:
        return False
    block = ip.block
    first = len(list(block.operations))
    events = []
    with conv.tasklets.accesses.recording(events):
        conv.buffers.fill(buf, y, in_place=True)
    if _own_elements(events, buf) and not any(
            op.name not in _ELEMENT_USES and any(v == buf for v in op.operands) for op in _new_ops(block, first)):
        return True
    for op in reversed(list(block.operations)[first:]):
        op.operation.erase()
    return False


def copy_into_carries(conv, yielded, carries, op):
    """Write the yielded tiles into the loop's carried buffers, safely."""
    tiles = [(y, buf) for y, buf in zip(yielded, carries) if buf is not None]
    if len(tiles) == 1 and _fill_in_place(conv, *tiles[0]):
        return
    staged = []
    for y, buf in zip(yielded, carries):
        if buf is None:
            staged.append(None)
        elif y.buf is not None and y.buf == buf:
            staged.append(None)                      # unchanged
        elif y.buf is not None and not any(c is not None and y.buf == c for c in carries):
            staged.append(y)                         # an independent buffer
        else:                                        # may read a carried buffer
            tmp = conv.buffers.alloca(y.shape, y.elem, "loop-carried tensor (next value)", op)
            conv.buffers.fill(tmp, y)
            staged.append(Tile(y.shape, y.elem, buf=tmp, accesses=conv.buffers.accesses))
    for s, buf in zip(staged, carries):
        if s is not None:
            conv.buffers.fill(buf, s)


def _carries(conv, op, inits, what):
    carries, scalar_inits = [], []
    for init in inits:
        v = conv.values.get(init)
        if isinstance(v, Tile):
            buf = conv.buffers.alloca(v.shape, v.elem, what, op)
            conv.buffers.fill(buf, v)
            carries.append(buf)
        else:
            carries.append(None)
            scalar_inits.append(v)
    return carries, scalar_inits


def _bind(conv, carries, types, scalars):
    out, k = [], 0
    for buf, t in zip(carries, types):
        if buf is None:
            out.append(scalars[k])
            k += 1
        else:
            shape, elem = _tile_type(t)
            out.append(Tile(shape, elem, buf=buf, accesses=conv.buffers.accesses))
    return out


@lowers("scf.for")
def lower_for(conv, op):
    lb, ub, step = (conv.values.get(v) for v in list(op.operands)[:3])
    inits = list(op.operands)[3:]
    body = op.regions[0].blocks[0]
    carries, scalar_inits = _carries(conv, op, inits, "loop-carried tensor")
    types = [a.type for a in list(body.arguments)[1:]]
    loop = scf.ForOp(lb, ub, step, scalar_inits)
    conv.tasklets.accesses.cycle(loop)
    with ir.InsertionPoint(loop.body):
        mapping = [loop.induction_variable] + _bind(conv, carries, types, list(loop.inner_iter_args))
        yielded = lower_body(conv, body, mapping)
        copy_into_carries(conv, yielded, carries, op)
        scf.yield_([y for y, c in zip(yielded, carries) if c is None])
    for result, v in zip(op.results, _bind(conv, carries, [r.type for r in op.results], list(loop.results))):
        conv.values.set(result, v)


def _lower_branches(conv, op, make) -> None:
    """An op running one of its regions (`scf.if`, `scf.index_switch`): `make`
    (scalar result types) builds the new op and returns it with the pairs
    (source block, new block) of its branches; a tensor result is one buffer
    that each branch writes."""
    bufs, scalar_types = [], []
    for r in op.results:
        if is_tensor(r.type):
            shape, elem = _tile_type(r.type)
            bufs.append(conv.buffers.alloca(shape, elem, f"{op.name} result", op))
        else:
            bufs.append(None)
            scalar_types.append(scalar_type(r.type))
    new, branches = make(scalar_types)
    conv.tasklets.accesses.branches(new)                      # (the condition is the same on every tasklet)
    for src, dst in branches:
        with ir.InsertionPoint(dst):
            yielded = lower_body(conv, src, [])
            for y, buf in zip(yielded, bufs):
                if buf is not None and not (y.buf is not None and y.buf == buf):
                    conv.buffers.fill(buf, y)
            scf.yield_([y for y, b in zip(yielded, bufs) if b is None])
    for result, v in zip(op.results, _bind(conv, bufs, [r.type for r in op.results], list(new.results))):
        conv.values.set(result, v)


@lowers("scf.if")
def lower_if(conv, op):
    def make(types):
        has_else = len(op.regions[1].blocks) > 0
        new = scf.IfOp(conv.values.get(op.opview.condition), types, has_else=has_else)
        branches = [(op.regions[0].blocks[0], new.then_block)]
        if has_else:
            branches.append((op.regions[1].blocks[0], new.else_block))
        return new, branches
    _lower_branches(conv, op, make)


@lowers("scf.index_switch")
def lower_index_switch(conv, op):
    """From `structure_control_flow`: the code after a point some paths return from."""
    def make(types):
        switch = op.opview
        new = scf.IndexSwitchOp(types, conv.values.get(switch.arg), list(switch.cases))
        default, *regions = list(op.regions)
        branches = [(r.blocks[0], new.case_block(k)) for k, r in enumerate(regions)]
        branches.append((default.blocks[0], new.default_block))
        return new, branches
    _lower_branches(conv, op, make)


@lowers("scf.execute_region")
def lower_execute_region(conv, op):
    region = op.regions[0]
    if len(region.blocks) != 1:
        raise conv.sites.error(op, "control flow that Triton leaves unstructured is not supported "
                             "by the DPU backend")
    for result, v in zip(op.results, lower_body(conv, region.blocks[0], [])):
        conv.values.set(result, v)


def structure_control_flow(kernel) -> None:
    """A kernel whose TTIR branches between blocks (`cf.cond_br`, as a `return`
    inside an `if` makes it, in the kernel or a `tl.map_elementwise` body) in structured form: upstream `lift-cf-to-scf`
    turns it into `scf.if` / `scf.while` / `scf.index_switch` (the rest of the
    conversion walks one block)."""
    def branches(op) -> bool:
        return any(len(r.blocks) > 1 or any(branches(o) for b in r.blocks for o in b.operations)
                   for r in op.regions)
    if not branches(kernel.operation):
        return
    from mlir.passmanager import PassManager
    pm = PassManager.parse("func.func(lift-cf-to-scf)", kernel.context)
    pm.run(kernel.operation)


@lowers("tt.map_elementwise")
def lower_map_elementwise(conv, op):
    """`tl.map_elementwise`: its scalar body, lowered wherever an element is
    used. With `pack` p the body takes p consecutive elements (along the last
    dimension) of each operand and returns p of each result, in that order."""
    p = ops.MapElementwise(op).pack
    body = op.regions[0].blocks[0]
    operands = [conv.values.get(v) for v in op.operands]
    shape = tuple(ir.RankedTensorType(op.results[0].type).shape)
    cost = len(list(body.operations)) + sum(o.cost for o in operands if isinstance(o, Tile))

    def element(ivs, k):
        *outer, j = ivs
        if p == 1:
            lanes = [ivs]
        else:
            first = arith.muli(arith.divui(j, index_c(p)), index_c(p))
            lanes = [outer + [arith.addi(first, index_c(m))] for m in range(p)]
        args = [o.at(lane) if isinstance(o, Tile) else o for o in operands for lane in lanes]
        results = lower_body(conv, body, args)[k * p:(k + 1) * p]
        out = results[0]
        for m in range(1, p):
            is_m = arith.cmpi(arith.CmpIPredicate.eq, arith.remui(j, index_c(p)), index_c(m))
            out = arith.select(is_m, results[m], out)
        return out

    for k, result in enumerate(op.results):
        elem = scalar_type(ir.RankedTensorType(result.type).element_type)
        conv.values.set(result, Tile(shape, elem, fn=lambda ivs, k=k: element(ivs, k), cost=cost), op)


@lowers("scf.while")
def lower_while(conv, op):
    """A while loop (Triton's `while`): its carried tensors as `scf.for`'s. The
    condition region may pass on to the body the loop's own tensors (the
    buffers they are carried in), as Triton's while loops do, and scalars."""
    before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
    carries, scalar_inits = _carries(conv, op, list(op.operands), "while-carried tensor")
    cond_op = list(before.operations)[-1]
    forwarded = list(cond_op.operands)[1:]
    passed = []                        # each forwarded value's carried buffer (None: a scalar)
    for v in forwarded:
        j = next((k for k, a in enumerate(before.arguments) if a == v), None)
        if is_tensor(v.type) and (j is None or carries[j] is None):
            raise conv.sites.error(op, "a while loop whose condition computes a tensor for its body is "
                                 "not supported by the DPU backend (compute it in the body)")
        passed.append(carries[j] if is_tensor(v.type) else None)
    result_types = [scalar_type(v.type) for v, buf in zip(forwarded, passed) if buf is None]
    new = scf.WhileOp(result_types, scalar_inits)
    conv.tasklets.accesses.cycle(new)
    before_types = [scalar_type(a.type) for a in before.arguments if not is_tensor(a.type)]
    new_before = new.before.blocks.append(*before_types)
    new_after = new.after.blocks.append(*result_types)
    with ir.InsertionPoint(new_before):
        mapping = _bind(conv, carries, [a.type for a in before.arguments], list(new_before.arguments))
        cond_vals = lower_body(conv, before, mapping)
        scf.condition(arith.andi(cond_vals[0], _running(conv)),
                      [c for c, buf in zip(cond_vals[1:], passed) if buf is None])
    with ir.InsertionPoint(new_after):
        args = _bind(conv, passed, [a.type for a in after.arguments], list(new_after.arguments))
        yielded = lower_body(conv, after, args)
        copy_into_carries(conv, yielded, carries, op)
        scf.yield_([y for y, c in zip(yielded, carries) if c is None])
    for result, v in zip(op.results, _bind(conv, passed, [r.type for r in op.results], list(new.results))):
        conv.values.set(result, v)


def _running(conv) -> ir.Value:
    """Whether the DPU still runs (an i1): an error stops it, and a while loop
    whose condition reads what its transfers no longer bring would loop for
    ever."""
    failed = llvm.call(ir.IntegerType.get_signless(1), [conv.ctx_arg], [], [],
                       callee=ir.FlatSymbolRefAttr.get(FAILED))
    return arith.xori(failed, arith.constant(ir.IntegerType.get_signless(1), 1))


@lowers("gpu.barrier", "ttg.barrier")
def lower_barrier(conv, op):
    """`tl.debug_barrier()` (`gpu.barrier` up to Triton 3.6, then `ttg.barrier`): a
    barrier of the DPU's tasklets (none with one tasklet)."""
    conv.tasklets.accesses.sync()


@lowers("tt.atomic_poll")
def lower_atomic_poll(conv, op):
    """`tl.atomic_poll(p, v, timeout_ns=t)`: wait until *p == v, true if it did.
    The model runs one program at a time and the other tasklets of this one
    wait with it, so nothing can change *p while it waits: the poll reads it
    once (tasklet 0, as the atomics do). With a timeout an unmatched poll
    gives false; without one it would wait forever, which is an error at its
    line (a run-time `DpuError`, as a deadlocked barrier is)."""
    from .memory import element_read
    view = ops.AtomicPoll(op)
    ptr, expected = conv.values.get(view.ptr), conv.values.get(view.expected)
    timeout = view.timeout is not None
    t = scalar_type(pointee(ir.RankedTensorType(view.ptr.type).element_type
                            if is_tensor(view.ptr.type) else view.ptr.type))
    i1, i64 = ir.IntegerType.get_signless(1), ir.IntegerType.get_signless(64)
    stg = conv.buffers.staging(8)
    conv.buffers.accesses.note_mram(False, "one")
    site = conv.sites.site()

    def poll(addr, want):
        value = element_read(conv, addr, t, stg)
        matched = arith.cmpi(arith.CmpIPredicate.eq, value, want)
        if not timeout:
            never = scf.IfOp(arith.xori(matched, arith.constant(i1, 1)), [], has_else=False)
            with ir.InsertionPoint(never.then_block):
                zero = arith.constant(i64, 0)
                llvm.call(None, [conv.ctx_arg, arith.constant(i64, Err.POLL), site, cast_int(value, i64),
                                 cast_int(want, i64), zero, zero], [], [],
                          callee=ir.FlatSymbolRefAttr.get(FAIL))
                scf.yield_([])
        return matched
    shape = tuple(ptr.shape) if isinstance(ptr, Tile) else (1,)
    out = conv.buffers.alloca(shape, i1, "tt.atomic_poll result", op)

    def one(ivs):
        at = list(ivs) if isinstance(ptr, Tile) else []
        want = expected.at(at) if isinstance(expected, Tile) else expected
        conv.buffers.store(poll(ptr.at(at) if isinstance(ptr, Tile) else ptr, want), out, ivs)
    with conv.tasklets.single():
        conv.tasklets.loop_nest(shape, one)
    if isinstance(ptr, Tile):
        conv.values.set(op.results[0], Tile(shape, i1, buf=out, accesses=conv.buffers.accesses))
    else:
        conv.values.set(op.results[0], conv.buffers.load(out, [index_c(0)], i1))
