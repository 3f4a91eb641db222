"""Barrier placement for a kernel shared among tasklets, a pass over the
converted kernel.

The conversion states what the pass needs as marker ops in the code it
emits (`AccessRecord`): each buffer element access (`edsl.access`, with the
buffer and the first index), each op's MRAM accesses (`edsl.mram`), the
start and end of each lowered op
(`edsl.op`: a place where a barrier can go), code that some tasklets skip
(`edsl.divergent`, with its owner), loop indices running over the owner's
chunk (`edsl.mine`) and the barriers the conversion itself needs
(`edsl.sync`); loops that repeat lowered code are marked `edsl.cycle` and
ops running one of their regions on every tasklet alike `edsl.branches`.

`place_barriers` walks the kernel in program order and keeps a record of the
accesses since the last barrier. Who touches an element: the tasklet owning
the chunk (`owner`) when the first index is the partitioned loop's own index,
tasklet 0 in `single` code ("one"), any tasklet in other divergent code
("any"), or all alike at uniform level ("all"). An access that conflicts
with a recorded one by another tasklet (write/read, read/write, write/write)
puts a barrier before the innermost op (or divergent code) begun after it.
In MRAM, where the marks name no element, a store orders the accesses after
it; a load is ordered with a later store only where every tasklet reads the
same element (a scalar, "same"): the program's one value, which each tasklet
must read before any tasklet writes MRAM, or tasklets would branch apart on
it (a lock's count read, then set by tasklet 0's atomic). Across program
instances, which Triton leaves unordered, only the conflicts of such a
scalar count (a count one program sets and the next reads).
A cycle starts with no pending access (a barrier before it when needed) and
ends with a barrier when its first accesses, on its next run, would conflict
with those pending at its end; the kernel is a cycle too (the next program
instance). Branches are walked from the same state and merged. The markers
are erased.

With one tasklet nothing is marked and no barrier is placed.
"""
from __future__ import annotations

from contextlib import contextmanager

from mlir import ir
from mlir.dialects import arith

from ...target.dpu import BARRIER, align_up
from ...base.errors import CompileError
from ...inject.runtime_calls import runtime_call
from ..ttir_reader import user_location

OP, OP_END = "edsl.op", "edsl.op_end"
DIVERGENT, DIVERGENT_END = "edsl.divergent", "edsl.divergent_end"
ACCESS, MRAM, MINE, SYNC = "edsl.access", "edsl.mram", "edsl.mine", "edsl.sync"
SAME = "same"      # an MRAM read of one element by every tasklet (see the module docstring)
CYCLE, BRANCHES = "edsl.cycle", "edsl.branches"


def _unshareable(why: str, loc: ir.Location) -> CompileError:
    """An op this module cannot share among tasklets (a gap of the backend, at
    the line of the op being lowered)."""
    return CompileError(f"the DPU backend cannot share this operation among tasklets ({why}); "
                        "num_tasklets=1 compiles it", user_location(loc))


def chunk(shape, tasklets: int) -> int:
    """Elements of the first dimension of `shape` each tasklet owns (rank 1:
    a multiple of 8, so that no two tasklets share an MRAM word)."""
    n = -(-shape[0] // tasklets)
    return align_up(n) if len(shape) == 1 else n


def owner(shape, tasklets: int) -> tuple:
    """Who accesses element i of the first dimension of a `shape` tile in a
    partitioned loop: the tasklet whose chunk holds i."""
    return ("chunk", shape[0], chunk(shape, tasklets))


def _who_attr(who) -> ir.StringAttr:
    return ir.StringAttr.get(who if isinstance(who, str) else " ".join(map(str, who)))


def _who(attr) -> object:
    words = ir.StringAttr(attr).value.split()
    return words[0] if len(words) == 1 else (words[0], int(words[1]), int(words[2]))


# ---- the conversion's side: the markers ---------------------------------------

class AccessRecord:
    """The element accesses of a kernel's conversion, shared among `tasklets`
    tasklets: stated for `place_barriers`, as markers at the current insertion
    point; and what each access consults while it is emitted (one record a
    conversion, so that kernels converting on several threads share nothing):
    the unrolled loops (an index value of one of their elements -> its step's
    `core.UnrollStep` and offset in the step, `unrolled_at`), the tiles that
    may be kept in MRAM (`tile_scopes`), and, while `recording`, a list of
    every access (buffer, indices, write?)."""

    def __init__(self, tasklets: int):
        self.tasklets = tasklets
        self.unrolled: dict = {}
        self.spill = None                 # a spill.SpillSpace
        self.record: list | None = None

    @contextmanager
    def recording(self, events: list):
        """Record the element accesses of buffers made meanwhile into `events`."""
        saved, self.record = self.record, events
        try:
            yield
        finally:
            self.record = saved

    @contextmanager
    def tile_scopes(self, space):
        """Element accesses are stated to `space` (a `spill.SpillSpace`: the
        scopes of the tiles it may keep in MRAM) meanwhile."""
        saved, self.spill = self.spill, space
        try:
            yield
        finally:
            self.spill = saved

    @contextmanager
    def unrolled_at(self, at: ir.Value, step, k: int):
        """Element accesses at index `at` go through windows of `step` (a
        `core.UnrollStep`), at offset `k`, meanwhile."""
        self.unrolled[at] = (step, k)
        try:
            yield
        finally:
            del self.unrolled[at]

    def _mark(self, name: str, operands=(), **attributes) -> None:
        ir.Operation.create(name, operands=list(operands), attributes=attributes)

    @contextmanager
    def op(self, region: bool):
        """Lowering one op (`region`: an EDSL region call, `fl.call`)."""
        if self.tasklets == 1:
            yield
            return
        flag = ir.BoolAttr.get(region)
        self._mark(OP, region=flag)
        try:
            yield
        finally:
            self._mark(OP_END, region=flag)

    @contextmanager
    def divergent(self, owner):
        """Code run by some tasklets only (no barrier may be placed inside); a
        barrier it needs goes before it."""
        if self.tasklets == 1:
            yield
            return
        self._mark(DIVERGENT, owner=_who_attr(owner))
        try:
            yield
        finally:
            self._mark(DIVERGENT_END)

    def mine(self, iv: ir.Value) -> None:
        """Declare loop index `iv` to run over the current owner's chunk."""
        if self.tasklets > 1:
            self._mark(MINE, [iv])

    def note_buffer(self, buf: ir.Value, ivs, write: bool, who=None) -> None:
        """An element access of tile buffer `buf` (its WRAM view, also for a
        tile kept in MRAM) at indices `ivs` (`who`: its owner, when not the
        code's)."""
        if self.tasklets == 1:
            return
        attributes = {"write": ir.BoolAttr.get(write)}
        if who is not None:
            attributes["who"] = _who_attr(who)
        self._mark(ACCESS, [buf] + list(ivs[:1]), **attributes)

    def note_mram(self, write: bool, who="all") -> None:
        """The MRAM accesses of the op being lowered (`who`: "all" tasklets,
        "one" for tasklet 0, or "same": every tasklet reads the same element)."""
        if self.tasklets > 1:
            self._mark(MRAM, write=ir.BoolAttr.get(write), who=_who_attr(who))

    def sync(self) -> None:
        """A barrier here: every access so far complete on every tasklet."""
        if self.tasklets > 1:
            self._mark(SYNC)

    def cycle(self, loop) -> None:
        """`loop` (scf.for, scf.while) repeats code every tasklet runs alike."""
        if self.tasklets > 1:
            loop.operation.attributes[CYCLE] = ir.UnitAttr.get()

    def branches(self, op) -> None:
        """`op` (scf.if, scf.index_switch) runs one of its regions, the same on
        every tasklet."""
        if self.tasklets > 1:
            op.operation.attributes[BRANCHES] = ir.UnitAttr.get()


# ---- every shared access marked ------------------------------------------------

_VIEWS = frozenset({"memref.subview", "memref.cast", "memref.reinterpret_cast",
                    "memref.collapse_shape", "memref.expand_shape", "memref.view"})


def _root(buf: ir.Value, shared) -> ir.Value:
    """The shared tile view that `buf` is a view of (`buf` when none is)."""
    while buf not in shared and isinstance(buf.owner, ir.Operation) and buf.owner.name in _VIEWS:
        buf = buf.owner.operands[0]
    return buf


def unmarked_accesses(entry: ir.Block, shared) -> list:
    """The `memref.load` / `memref.store` ops on a shared tile buffer (a view
    in `shared`) that no access marker of the same lowered op states, with
    the same buffer and direction. `place_barriers` sees only the markers: an
    access without one is a race that one tasklet never shows."""
    missing = []
    scopes = [(set(), [])]                 # per open `edsl.op`: (marked, accesses)

    def close() -> None:
        marked, accesses = scopes.pop()
        missing.extend(op for op, key in accesses if key not in marked)
        if scopes:
            scopes[-1][0].update(marked)

    def walk(block: ir.Block) -> None:
        for op in block.operations:
            name, attrs = op.operation.name, op.operation.attributes
            if name == OP:
                scopes.append((set(), []))
            elif name == OP_END:
                close()
            elif name == ACCESS:
                scopes[-1][0].add((_root(op.operation.operands[0], shared), ir.BoolAttr(attrs["write"]).value))
            elif name in ("memref.load", "memref.store"):
                write = name == "memref.store"
                buf = _root(op.operation.operands[1 if write else 0], shared)
                if buf in shared:
                    scopes[-1][1].append((op.operation, (buf, write)))
            for region in op.operation.regions:
                for inner in region.blocks:
                    walk(inner)

    walk(entry)
    close()
    return missing


# ---- the pass ---------------------------------------------------------------

def place_barriers(entry: ir.Block, tasklets: int, module_body: ir.Block, info, sites=None) -> None:
    """Place the barriers of the kernel whose body is `entry` (declaring the
    runtime's barrier in `module_body`, counting them in `info.barriers`),
    each with the check site (`sites`) of the op it goes before, which a
    deadlock there names."""
    if tasklets == 1:
        return
    placement = _Placement(tasklets, module_body, info, sites)
    terminator = list(entry.operations)[-1]
    log = placement.cycle_begin(entry)
    placement.walk(entry)
    placement.here = terminator
    placement.cycle_end(log, mram=False)      # the next program reuses the buffers
    for marker in placement.markers:
        marker.erase()


def meet_in_every_instance(entry: ir.Block) -> bool:
    """Whether the tasklets of a kernel whose body is `entry` meet at a barrier
    in every program instance: one that no `scf.if` holds (a loop around one
    is taken to run)."""
    def unconditional(op) -> bool:
        parent = op.parent
        while parent.name != "func.func":
            if parent.name == "scf.if":
                return False
            parent = parent.parent
        return True

    found: list = []

    def visit(op):
        if op.name == "llvm.call" and "callee" in op.attributes \
                and ir.FlatSymbolRefAttr(op.attributes["callee"]).value == BARRIER and unconditional(op):
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE
    entry.owner.operation.walk(visit)
    return bool(found)


class _Placement:
    def __init__(self, tasklets: int, module_body, info, sites=None):
        self.tasklets = tasklets
        self.sites = sites
        self.module_body = module_body     # where the barrier's runtime declaration goes
        self.info = info                   # counts the barrier sites
        self.markers: list = []
        self.here = None                   # the op being walked (a barrier "here" goes before it)
        self._div: list = []               # open divergent code: its owner
        self._div_open: list = []          # ... whether it opened an anchor, _mine's length
        self._mine: list = []              # loop indices running over the owner's chunk
        self._ops: list = []               # (anchor op, access number, uniform?) open anchors
        self._seq = 0                      # accesses recorded so far
        self._cycles: list = []            # [block, accesses logged, still logging?, regions]
        self._paused: set = set()          # ids of the logs a barrier on this path has paused
        self._regions = 0                  # EDSL region calls walked so far
        self._w: dict = {}                 # buffer -> (owner, serial) of the last write
        self._r: dict = {}                 # buffer -> [(owner, serial)] reads
        self._mram: list = []              # (write?, owner, serial)
        self._held: list = []              # the states `_branches` holds, with their access numbers

    # -- the walk ------------------------------------------------------------------
    def walk(self, block: ir.Block) -> None:
        for op in list(block.operations):
            marker = self._MARKERS.get(op.operation.name)
            self.here = op
            if marker is not None:
                self.markers.append(op)
                marker(self, op.operation)
            elif CYCLE in op.operation.attributes:
                del op.operation.attributes[CYCLE]
                self._cycle(op.operation)
            elif BRANCHES in op.operation.attributes:
                del op.operation.attributes[BRANCHES]
                self._branches(op.operation)
            else:
                for region in op.operation.regions:
                    for inner in region.blocks:
                        self.walk(inner)

    def _op(self, marker) -> None:
        self._open_anchor(marker)
        if ir.BoolAttr(marker.attributes["region"]).value:
            # An EDSL region runs on every tasklet and touches WRAM and MRAM
            # unseen by the access record: it starts with every tile op before
            # it complete, reads operands that are complete (the conversion
            # syncs after filling them), and is followed by the region's
            # closing barrier, so nothing is left pending.
            self._sync_if_dirty()

    def _op_end(self, marker) -> None:
        self._ops.pop()
        if ir.BoolAttr(marker.attributes["region"]).value:
            self._regions += 1
            self._w, self._r, self._mram = {}, {}, []

    def _divergent(self, marker) -> None:
        anchored = not self._div
        if anchored:
            self._open_anchor(marker)
        self._div.append(_who(marker.attributes["owner"]))
        self._div_open.append((anchored, len(self._mine)))

    def _divergent_end(self, marker) -> None:
        self._div.pop()
        anchored, mine = self._div_open.pop()
        del self._mine[mine:]
        if anchored:
            self._ops.pop()

    def _mine_marker(self, marker) -> None:
        self._mine.append(marker.operands[0])

    def _access(self, marker) -> None:
        buf, *first = marker.operands
        attrs = marker.attributes
        who = (_who(attrs["who"]) if "who" in attrs
               else self._owner_of_access(tuple(ir.MemRefType(buf.type).shape), first[:1]))
        self.note_buffer(buf, who, ir.BoolAttr(attrs["write"]).value)

    def _mram_marker(self, marker) -> None:
        self.note_mram(ir.BoolAttr(marker.attributes["write"]).value, _who(marker.attributes["who"]))

    def _sync(self, marker) -> None:
        self.sync()

    _MARKERS = {OP: _op, OP_END: _op_end, DIVERGENT: _divergent, DIVERGENT_END: _divergent_end,
                MINE: _mine_marker, ACCESS: _access, MRAM: _mram_marker, SYNC: _sync}

    def _cycle(self, loop) -> None:
        """A loop every tasklet runs alike: nothing pending when it starts, a
        barrier at the end of its body if the next iteration's first accesses
        need one."""
        self._sync_if_dirty()
        if loop.name == "scf.for":
            body = loop.regions[0].blocks[0]
            with self._branch():
                log = self.cycle_begin(body)
                self.walk(body)
                self.here = list(body.operations)[-1]
                self.cycle_end(log)
            return
        assert loop.name == "scf.while", loop.name
        before, after = loop.regions[0].blocks[0], loop.regions[1].blocks[0]
        with self._branch():
            log = self.cycle_begin(before)
            self.walk(before)
        leaving = self.state()                  # what is pending when the loop ends
        with self._branch():
            self.walk(after)
            self.here = list(after.operations)[-1]
            self.cycle_end(log)
        self.set_state(self.merge_state(leaving, self.state()))

    def _branches(self, op) -> None:
        """Each region from the state before the op (its condition is the same
        on every tasklet), the states after them merged."""
        regions = list(op.regions)
        if op.name == "scf.index_switch":        # (lowered as its cases, then the default)
            regions = regions[1:] + regions[:1]
        held = {"seq": self._seq, "before": self.state()}
        held["after"] = held["before"]
        self._held.append(held)
        for region in regions:
            if not region.blocks:
                continue
            self.set_state(held["before"])
            with self._branch():
                self.walk(region.blocks[0])
            held["after"] = self.merge_state(held["after"], self.state())
        self._held.pop()
        self.set_state(held["after"])

    # -- barriers --------------------------------------------------------------------
    def _open_anchor(self, marker) -> None:
        """A place for a barrier: before `marker` (at uniform level)."""
        self._ops.append((marker, self._seq, not self._div))

    def barrier(self, at) -> None:
        """A barrier before op `at`."""
        with ir.InsertionPoint(at), ir.Location.unknown():
            site = (self.sites.site_of(at.location) if self.sites is not None
                    else arith.constant(ir.IntegerType.get_signless(64), 0))
            runtime_call(self.module_body, BARRIER, [site])
        self.info.barriers += 1
        block = at.operation.block
        for log in self._cycles:
            if log[0] == block:             # executed whenever the cycle's rest is
                log[2] = False
            elif log[2]:                    # ... on this branch's remaining path: the
                self._paused.add(id(log))   # cycles begun later (inner loops) still log

    @contextmanager
    def _branch(self):
        """Walk a nested block (a branch, a loop body) of uniform code."""
        paused = set(self._paused)
        try:
            yield
        finally:
            self._paused = paused

    def sync(self) -> None:
        """A barrier here: every access so far is complete on every tasklet."""
        if self._div:
            raise _unshareable("a barrier inside code some tasklets skip", self.here.location)
        self.barrier(self.here)
        self._w, self._r, self._mram = {}, {}, []

    def _sync_if_dirty(self) -> None:
        if self._w or self._r or self._mram:
            self.sync()

    def cycle_begin(self, block: ir.Block) -> list:
        """Start logging the accesses at the top of code that repeats (a loop
        body, or the kernel: the next program instance); `cycle_end` then
        checks them against the state at its end."""
        log = [block, [], True, self._regions]
        self._cycles.append(log)
        return log

    def cycle_end(self, log: list, mram: bool = True) -> None:
        """A barrier here if the code's first accesses (up to its first barrier)
        would conflict, on its next run, with accesses pending now. `mram`:
        count every MRAM conflict (across program instances only those of a
        scalar every tasklet reads: `_mram_hits`)."""
        self._cycles.remove(log)
        if self._regions != log[3]:          # a region's accesses are not on record
            self.sync()
            return
        for kind, key, who, write in log[1]:
            if kind == "mram":
                if self._mram_hits(who, write, scalars_only=not mram):
                    self.sync()
                    return
            elif self._buffer_hits(key, who, write):
                self.sync()
                return

    def state(self):
        return dict(self._w), {k: dict(v) for k, v in self._r.items()}, list(self._mram)

    def set_state(self, state) -> None:
        """The record as `state` says (a copy: `state` stays as it is)."""
        self._w, self._r, self._mram = dict(state[0]), {k: dict(v) for k, v in state[1].items()}, list(state[2])

    @staticmethod
    def merge_state(a, b):
        w = dict(a[0])
        for k, v in b[0].items():
            if k not in w or w[k][1] < v[1]:
                w[k] = v
        r = {k: dict(v) for k, v in a[1].items()}
        for k, v in b[1].items():
            for o, seq in v.items():
                r.setdefault(k, {})[o] = max(seq, r.get(k, {}).get(o, 0))
        return w, r, a[2] + [x for x in b[2] if x not in a[2]]

    def _owner_of_access(self, shape, ivs) -> object:
        if not self._div:
            return "all"
        top = self._div[-1]
        if top == "one":
            return "one"
        if ivs and shape and any(ivs[0] == m for m in self._mine) and owner(shape, self.tasklets) == top:
            return top
        return "any"

    @staticmethod
    def _conflict(prev, cur, prev_write: bool, cur_write: bool) -> bool:
        if not (prev_write or cur_write):
            return False
        return not (prev == cur and prev not in ("any", "all"))

    def _buffer_hits(self, buf, who, write: bool) -> list:
        hits = []
        w = self._w.get(buf)
        if w is not None and self._conflict(w[0], who, True, write):
            hits.append(w[1])
        if write:
            hits += [seq for o, seq in self._r.get(buf, {}).items() if self._conflict(o, who, False, True)]
        return hits

    def _log(self, entry) -> None:
        for log in self._cycles:
            if log[2] and id(log) not in self._paused:
                log[1].append(entry)

    def note_buffer(self, buf, who, write: bool) -> None:
        """An element access of buffer `buf` (a barrier first if it conflicts
        with an access by another tasklet since the last barrier)."""
        hits = self._buffer_hits(buf, who, write)
        if hits:
            self._resolve(max(hits))
        self._seq += 1
        if write:
            self._w[buf] = (who, self._seq)
        else:
            self._r.setdefault(buf, {})[who] = self._seq
        self._log(("buf", buf, who, write))

    def note_mram(self, write: bool, who) -> None:
        """An op's MRAM accesses. A store orders the loads and stores after it
        (as `tl.debug_barrier` would on a GPU, where a load is not ordered
        with a later store of another lane); a scalar every tasklet loads
        orders the stores after it (the program's one value)."""
        hits = self._mram_hits(who, write)
        if hits:
            self._resolve(max(hits))
        self._seq += 1
        self._mram.append((write, who, self._seq))
        self._log(("mram", None, who, write))

    def _mram_hits(self, who, write: bool, scalars_only: bool = False) -> list:
        """The recorded MRAM accesses an access by `who` conflicts with: the
        stores (but tasklet 0's, for tasklet 0), and for a store the reads of
        one element by every tasklet. `scalars_only`: only conflicts with such
        a read on either side (across program instances, which Triton leaves
        unordered, but whose scalars must each be one value)."""
        return [s for w, o, s in self._mram
                if (w and not (o == who == "one") and (who == SAME or not scalars_only)) or (write and o == SAME)]

    def _resolve(self, latest: int) -> None:
        """A barrier after the access numbered `latest` and before the current
        one: before the innermost op (or divergent code) begun after it."""
        for anchor, seq, uniform in reversed(self._ops):
            if seq < latest:
                break
            if uniform:
                self.barrier(anchor)
                self._drop_before(seq)
                for held in self._held:       # (the barrier comes before the branches too)
                    if held["seq"] >= seq:
                        held["before"] = _completed(held["before"], seq)
                        held["after"] = _completed(held["after"], seq)
                return
        if not self._div:
            self.sync()
            return
        raise _unshareable("a tasklet conflict inside one op's divergent code", self.here.location)

    def _drop_before(self, seq: int) -> None:
        self.set_state(_completed(self.state(), seq))


def _completed(state, seq: int):
    """`state` less the accesses numbered up to `seq` (a barrier completed them)."""
    w, r, mram = state
    r = {k: {o: x for o, x in v.items() if x > seq} for k, v in r.items()}
    return ({k: v for k, v in w.items() if v[1] > seq}, {k: v for k, v in r.items() if v},
            [x for x in mram if x[2] > seq])
