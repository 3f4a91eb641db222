"""Barrier fission: a DPU's tasklets as loops, for the DPU model.

The model runs a DPU's tasklets on one host thread, switched at their
barriers (`edsl.dpu.runtime`): each switch saves one tasklet's place and
restores the next one's, and a kernel with a reduction meets at a few
barriers per program instance, so with 16 tasklets most of its time went to
switches. This pass rewrites the converted kernel so that none is needed:
the code between two barriers (a *stretch*) runs in a loop over the
tasklets, `scf.for %t`, each turn with tasklet t's launch context, and the
barrier is the loop's end. Tasklet 0 then runs the whole kernel for all of
them (`__dpu_launch` runs no other: `runtime_text`).

It keeps what the switched tasklets do. Barrier placement orders every
access that two tasklets make of one WRAM or MRAM element, so within a
stretch the tasklets' order changes no result but the order of atomics on
one element, which the loop takes in tasklet order, as one tasklet takes
the lanes. Each turn runs with its tasklet's context, so DMA counts,
errors and access logs are its own.

- A value one stretch defines and another uses is kept per tasklet in a
  slot (`memref<T x type>` on the host stack, indexed by the tasklet id the
  context holds); a constant or a view is computed again where it is used.
- A loop (`for`, `while`) or branch (`if`, `index_switch`) that holds a
  barrier runs once for all tasklets, its body split the same way: its
  loop-carried values and results go through slots, and its bounds and
  condition must be the same on every tasklet, as a barrier inside requires. Where they differ, the
  DPU stops with the error a switched tasklet gets there (`Err.DEADLOCK`).
- A kernel with a barrier under any other op is left as it is: its
  tasklets are switched.

Only the model runs a kernel so rewritten: the exporter's kernel is not
(`fission=False`), a DPU's tasklets being hardware threads. Neither is one
whose blocks are counted for the time estimate (`dpu_timing`): its counts
are each tasklet's.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm, memref, scf

from ...target.dpu import BARRIER, CTX_SLOTS, FAIL, Ctx, Err
from ...inject.runtime_calls import runtime_call
from .builders import buffer_type, c64, from_stored, i64, index_c, tasklet_id, to_stored

# Ops recomputed where a later stretch uses their result (no effect, no
# region): cheaper than a slot, and the only way for values no slot holds
# (memref views).
_RECOMPUTED = ("arith.", "math.", "index.", "ub.poison", "memref.view", "memref.subview", "memref.cast",
               "memref.reinterpret_cast", "memref.extract_aligned_pointer_as_index",
               "memref.extract_strided_metadata", "llvm.mlir.constant", "llvm.mlir.zero", "llvm.mlir.undef",
               "llvm.mlir.addressof", "llvm.getelementptr", "llvm.inttoptr", "llvm.ptrtoint", "llvm.bitcast")
# Values computed by at most this many such ops are recomputed, not kept in
# a slot: a chunk's bounds from the tasklet id stay a form LLVM can fold.
_RECOMPUTE_MOST = 8
_COLLECTIVE = ("scf.for", "scf.if", "scf.while", "scf.index_switch")


class _Unsplittable(Exception):
    """The kernel keeps its switched tasklets."""


def _is_barrier(op) -> bool:
    return (op.name == "llvm.call" and "callee" in op.attributes
            and ir.FlatSymbolRefAttr(op.attributes["callee"]).value == BARRIER)


def _recomputed(op) -> bool:
    return len(op.regions) == 0 and op.name.startswith(_RECOMPUTED)


def _slot_type(t: ir.Type) -> bool:
    return isinstance(t, (ir.IntegerType, ir.IndexType, ir.FloatType))


def split_tasklets(fn, ctx_arg: int, tasklets: int):
    """The kernel function `fn` with its `tasklets` tasklets run as loops
    between its barriers (its argument `ctx_arg` is the launch context):
    a new function in `fn`'s place, or None (`fn` kept) where it cannot be."""
    for b in _barriers(fn):
        parent = b.parent
        while parent.name != "func.func":
            if parent.name not in _COLLECTIVE:
                return None
            parent = parent.parent
    # (rewritten in a module of its own: nothing changes where it cannot be)
    scratch = ir.Module.create(fn.location)
    new = fn.operation.clone(ir.InsertionPoint(scratch.body))
    try:
        _Split(new, ctx_arg, tasklets).run()
    except _Unsplittable:
        return None
    new.move_before(fn)
    fn.operation.erase()
    return new


def _barriers(fn) -> list:
    found: list = []

    def visit(op):
        if _is_barrier(op.operation):
            found.append(op.operation)
        return ir.WalkResult.ADVANCE
    fn.operation.walk(visit)
    return found


def _within(op, ancestor) -> bool:
    """Whether `op` is nested in `ancestor`."""
    while op.name != "func.func":
        op = op.parent.operation
        if op == ancestor:
            return True
    return False


class _Split:
    def __init__(self, fn, ctx_arg: int, tasklets: int):
        self.fn, self.tasklets = fn, tasklets
        self.entry = fn.regions[0].blocks[0]
        self.ctx = self.entry.arguments[ctx_arg]
        self.outside: set = set()           # ops of no stretch: the slots
        self.loops: dict = {}               # tasklet loop -> (its index, the op new ops go before)
        self.slots: dict = {}               # value -> its slot
        self.kept: dict = {}                # slot -> the type of its values
        self.reached: dict = {}             # (value, loop) -> the value in that loop
        self.free: dict = {}                # value -> whether every tasklet has it (`_tasklet_free`)

    def run(self) -> None:
        # (in lists, not sets: an op's hash follows its operands, and
        # rebuilding one op changes those of the ops that use its results)
        barriers = _barriers(self.fn)
        collective = []
        for p in (p for b in barriers for p in _ancestors(b)):
            if p not in collective:
                collective.append(p)
        collective = [self._without_results(op) for op in collective]
        # (a tasklet whose bound or condition differs stops the DPU as a
        # deadlock at the first barrier the op holds would: named by its site)
        sites = [(_deciding(op), _site(next(b for b in barriers if _within(b, op)))) for op in collective]
        blocks = [self.entry] + [b for op in collective for r in op.regions for b in r.blocks]
        stretches = [s for b in blocks for s in self._stretches(b, collective)]
        for b in barriers:
            b.erase()
        for s in stretches:
            self._loop(s)
        for loop in list(self.loops):
            for op in list(loop.regions[0].blocks[0].operations):
                for r in op.results:
                    self._reach_uses(r, loop)
        for op, site in sites:
            for i, v in enumerate(op.operands):
                if self._loop_of(v) is not None:
                    with ir.InsertionPoint(op), op.location:
                        op.operands[i] = self._same_everywhere(v, site)

    # -- stretches and their loops ---------------------------------------------
    def _stretches(self, block, collective: list) -> list[list]:
        """The runs of ops of `block` between its barriers and collective ops."""
        out, run = [], []
        for op in list(block.operations)[:-1]:
            op = op.operation
            if _is_barrier(op) or op in collective or op in self.outside:
                if run:
                    out.append(run)
                run = []
            else:
                run.append(op)
        return out + ([run] if run else [])

    def _loop(self, stretch: list) -> None:
        """The ops of `stretch` into a loop over the tasklets, each turn with
        its tasklet's launch context."""
        first = stretch[0]
        with ir.InsertionPoint(first), first.location:
            loop = scf.ForOp(index_c(0), index_c(self.tasklets), index_c(1))
            with ir.InsertionPoint(loop.body):
                t = loop.induction_variable
                turn = arith.index_cast(i64(), t)
                offset = arith.muli(turn, c64(CTX_SLOTS))
                mine = llvm.getelementptr(llvm.PointerType.get(), self.ctx, [offset], [_DYNAMIC], i64(), 0)
                end = scf.yield_([])
        for op in stretch:
            op.move_before(end)
        tid = f"array<i32: {int(Ctx.TID)}>"
        for use in list(self.ctx.uses):
            user = use.owner.operation
            if not _within(user, loop.operation) or user == mine.owner.operation:
                continue
            user.operands[use.operand_number] = mine
            # (the tasklet id read from the context is the loop's index: a
            # chunk's bounds LLVM can then fold)
            if user.name == "llvm.getelementptr" and str(user.attributes["rawConstantIndices"]) == tid:
                for read in list(user.results[0].uses):
                    if read.owner.operation.name == "llvm.load":
                        read.owner.operation.results[0].replace_all_uses_with(turn)
        self.loops[loop.operation] = (t, stretch[0])

    def _loop_of(self, value):
        """The tasklet loop whose body defines `value` at its top level, or
        whose index it is (None: none; the value is every tasklet's)."""
        owner = value.owner
        parent = owner.owner if isinstance(owner, ir.Block) else owner.operation.parent
        parent = parent.operation if parent is not None else None
        return parent if parent is not None and parent in self.loops else None

    def _home(self, op):
        """The tasklet loop `op` runs in (None: it runs once)."""
        op = op.operation
        while op.name != "func.func":
            if op in self.loops:
                return op
            op = op.parent
        return None

    # -- collective ops: carried values and results in slots --------------------
    def _without_results(self, op):
        """`op` (a collective op: one that holds a barrier) rebuilt without
        results: each tasklet's carried values and results kept in
        slots."""
        op = op.operation
        results = list(op.results)
        if not results and not (op.name == "scf.while" and list(op.operands)):
            return op                       # (nothing carried, nothing out)
        slots = [self._slot(r.type) for r in results]
        at = ir.InsertionPoint(op)
        if op.name == "scf.while":
            new = self._while_without_values(op, slots)
        elif op.name == "scf.index_switch":
            new = ir.Operation.create(op.name, results=[], operands=list(op.operands),
                                      attributes={"cases": op.attributes["cases"]},
                                      regions=len(op.regions), loc=op.location, ip=at)
            for old, region in zip(op.regions, new.regions):
                self._move_body(old.blocks[0], region.blocks.append(), slots)
        elif op.name == "scf.for":
            with at, op.location:
                for slot, init in zip(slots, op.opview.initArgs):
                    self._store(slot, init)
            loop = op.opview
            new = scf.ForOp(loop.lowerBound, loop.upperBound, loop.step, ip=at)
            old = op.regions[0].blocks[0]
            self._move_body(old, new.body, slots)
            old.arguments[0].replace_all_uses_with(new.induction_variable)
            first = list(new.body.operations)[0]
            for slot, arg in zip(slots, list(old.arguments)[1:]):
                with ir.InsertionPoint(first), op.location:
                    arg.replace_all_uses_with(self._load(slot))
        else:
            has_else = len(op.regions[1].blocks) > 0
            new = scf.IfOp(op.opview.condition, [], has_else=has_else, ip=at)
            self._move_body(op.regions[0].blocks[0], new.then_block, slots)
            if has_else:
                self._move_body(op.regions[1].blocks[0], new.else_block, slots)
        # (each result read back after the new op)
        for slot, r in zip(slots, results):
            with at, op.location:
                r.replace_all_uses_with(self._load(slot))
        op.erase()
        return new.operation

    def _while_without_values(self, op, forwarded):
        """An scf.while rebuilt without arguments or results: the values it
        carries into each `before` in slots, and those its condition
        forwards (to `after` and out) in `forwarded`."""
        old_before, old_after = op.regions[0].blocks[0], op.regions[1].blocks[0]
        carried = [self._slot(a.type) for a in old_before.arguments]
        with ir.InsertionPoint(op), op.location:
            for slot, init in zip(carried, list(op.operands)):
                self._store(slot, init)
            new = scf.WhileOp([], [])
        before, after = new.before.blocks.append(), new.after.blocks.append()
        condition = list(old_before.operations)[-1].operation
        with ir.InsertionPoint(before), condition.location:
            scf.ConditionOp(condition.opview.condition, [])
        self._move_body(old_before, before, forwarded)
        self._move_body(old_after, after, carried)
        for block, old, slots in ((before, old_before, carried), (after, old_after, forwarded)):
            first = list(block.operations)[0]
            for slot, arg in zip(slots, old.arguments):
                with ir.InsertionPoint(first), op.location:
                    arg.replace_all_uses_with(self._load(slot))
        return new

    def _move_body(self, old, body, slots) -> None:
        """The ops of block `old` into `body`, the values `old` yields (or its
        condition forwards) stored in `slots`."""
        term = list(old.operations)[-1].operation
        values = list(term.operands)[1:] if term.name == "scf.condition" else list(term.operands)
        if not list(body.operations):
            with ir.InsertionPoint(body), term.location:
                scf.yield_([])
        end = list(body.operations)[-1]
        for o in list(old.operations)[:-1]:
            o.operation.move_before(end)
        with ir.InsertionPoint(end), term.location:
            for slot, v in zip(slots, values):
                self._store(slot, v)
        term.erase()

    # -- values used by another stretch ------------------------------------------
    def _reach_uses(self, value, loop) -> None:
        for use in list(value.uses):
            home = self._home(use.owner)
            if home is None or home == loop:
                continue                    # (none: a collective operand, `_same_everywhere`)
            t, anchor = self.loops[home]
            with ir.InsertionPoint(anchor), use.owner.location:
                use.owner.operands[use.operand_number] = self._in_loop(value, home, t)

    def _in_loop(self, value, home, t):
        """`value`, defined in another tasklet loop, as the current tasklet's in
        the loop `home` (index `t`): recomputed there, or loaded from its slot."""
        loop = self._loop_of(value)
        if loop is None or loop == home:
            return value
        if isinstance(value.owner, ir.Block):
            return t                        # (another loop's index: this one's)
        key = (value, home)
        if key not in self.reached:
            op = value.owner.operation
            cost = self._ops_to_recompute(value)
            if cost <= _RECOMPUTE_MOST or (cost < float("inf") and not _slot_type(value.type)):
                self.reached[key] = _recompute(value, [self._in_loop(v, home, t) for v in op.operands])
            else:
                self.reached[key] = self._get(self._slot_of(value), t)
        return self.reached[key]

    def _ops_to_recompute(self, value, seen=None) -> float:
        """How many ops recomputing `value` in another tasklet loop takes
        (inf: it cannot be)."""
        seen = set() if seen is None else seen
        if self._loop_of(value) is None or isinstance(value.owner, ir.Block) or value in seen:
            return 0
        seen.add(value)
        op = value.owner.operation
        if not _recomputed(op):
            return float("inf")
        return 1 + sum(self._ops_to_recompute(v, seen) for v in op.operands)

    def _slot_of(self, value):
        """The slot of `value`, stored at the end of the loop that defines it."""
        if value not in self.slots:
            if not _slot_type(value.type):
                raise _Unsplittable(f"a {value.type} value used across a barrier")
            slot = self.slots[value] = self._slot(value.type)
            loop = self._loop_of(value)
            end = list(loop.regions[0].blocks[0].operations)[-1]
            with ir.InsertionPoint(end), value.owner.location:
                self._put(slot, value, self.loops[loop][0])
        return self.slots[value]

    # -- operands of collective ops ------------------------------------------------
    def _same_everywhere(self, value, site: int, made=None):
        """`value` (a bound of a loop, the condition of an if or a while loop,
        the case of an index_switch, that holds a barrier) as every tasklet
        has it: tasklet 0's, the DPU stopped with a deadlock where another
        tasklet's differs. (`made`: the values made
        so far for this operand, each made once.)"""
        made = {} if made is None else made
        if value not in made:
            made[value] = self._make_same(value, site, made)
        return made[value]

    def _make_same(self, value, site: int, made: dict):
        op = value.owner.operation
        if self._tasklet_free(value) or (_recomputed(op) and not _slot_type(value.type)):
            return _recompute(value, [self._same_everywhere(v, site, made) if self._loop_of(v) is not None
                                      else v for v in op.operands])
        slot = self._slot_of(value)
        first = memref.load(slot, [index_c(0)])   # (as kept: compared as kept)
        i1 = ir.IntegerType.get_signless(1)
        check = scf.ForOp(index_c(1), index_c(self.tasklets), index_c(1), [arith.constant(i1, 0)])
        with ir.InsertionPoint(check.body):
            other = memref.load(slot, [check.induction_variable])
            differs = arith.cmpi(arith.CmpIPredicate.ne, _bits(other), _bits(first))
            scf.yield_([arith.ori(check.inner_iter_args[0], differs)])
        stop = scf.IfOp(check.results[0])
        with ir.InsertionPoint(stop.then_block):
            zero = c64(0)
            runtime_call(self.fn.operation.block, FAIL,
                         [self.ctx, c64(int(Err.DEADLOCK)), c64(site), zero, zero, zero, zero])
            scf.yield_([])
        return from_stored(first, value.type)

    def _tasklet_free(self, value) -> bool:
        """Whether `value` is computed by recomputed ops from values every
        tasklet has (the same on all)."""
        if value not in self.free:
            if self._loop_of(value) is None:
                self.free[value] = True
            elif isinstance(value.owner, ir.Block):
                self.free[value] = False            # (a tasklet loop's index)
            else:
                op = value.owner.operation
                self.free[value] = _recomputed(op) and all(self._tasklet_free(v) for v in op.operands)
        return self.free[value]

    # -- slots -----------------------------------------------------------------------
    def _slot(self, t: ir.Type) -> ir.Value:
        """A slot per tasklet for values of type `t` (kept as memory keeps
        them: `buffer_type`)."""
        with ir.InsertionPoint.at_block_begin(self.entry), ir.Location.unknown():
            slot = memref.alloca(ir.MemRefType.get([self.tasklets], buffer_type(t)), [], [])
        self.outside.add(slot.owner.operation)
        self.kept[slot] = t
        return slot

    def _put(self, slot, v, t) -> None:
        memref.store(to_stored(v, buffer_type(v.type)), slot, [t])

    def _get(self, slot, t) -> ir.Value:
        return from_stored(memref.load(slot, [t]), self.kept[slot])

    # (the tasklet id from the launch context: in a tasklet loop, each turn's own)
    def _store(self, slot, v) -> None:
        self._put(slot, v, tasklet_id(self.ctx))

    def _load(self, slot) -> ir.Value:
        return self._get(slot, tasklet_id(self.ctx))


_DYNAMIC = -2147483648      # (llvm.getelementptr: the index is an operand)


def _recompute(value, operands) -> ir.Value:
    """`value` computed again here, by a copy of its op on `operands`."""
    op = value.owner.operation
    clone = op.clone()
    for i, v in enumerate(operands):
        clone.operands[i] = v
    return clone.results[list(op.results).index(value)]


def _bits(v: ir.Value) -> ir.Value:
    """`v` as an integer of its width (floats compared bit for bit: a NaN
    every tasklet has is the same)."""
    if isinstance(v.type, ir.FloatType):
        return arith.bitcast(ir.IntegerType.get_signless(ir.FloatType(v.type).width), v)
    return v


def _site(barrier) -> int:
    """The check site a barrier call passes (0: none)."""
    code = barrier.operands[0].owner
    if isinstance(code, ir.Block) or code.name != "arith.constant":
        return 0
    return ir.IntegerAttr(code.attributes["value"]).value


def _deciding(op):
    """The op whose operands decide how a collective op runs: the op itself
    (a loop's bounds, an if's condition), or a while loop's condition."""
    if op.name == "scf.while":
        return list(op.regions[0].blocks[0].operations)[-1].operation
    return op


def _ancestors(op) -> list:
    out = []
    parent = op.parent
    while parent.name != "func.func":
        out.append(parent.operation)
        parent = parent.parent
    return out
