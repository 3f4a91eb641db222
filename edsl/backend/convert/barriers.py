"""Barrier placement for a kernel shared among tasklets: a record of the WRAM
and MRAM accesses since the last barrier, and the barriers it puts where
data written by one tasklet is read (or written) by another.

Every WRAM buffer element access goes through `core.load_elem` /
`core.store_elem`, which note the buffer and who touches it here: the tasklet
owning the chunk (`owner`) when the first index is the partitioned loop's own
index, tasklet 0 in `single` code ("one"), any tasklet in other divergent
code ("any"), or all alike at uniform level ("all"). MRAM accesses are noted
per op. An access that conflicts with a recorded one by another tasklet
(write/read, read/write, write/write) puts a barrier before the innermost op
(or divergent code) begun after it: each lowered op opens an *anchor*, a
placeholder op where a barrier can go, removed by `finish`. Loops start and
end their bodies with no pending access (a barrier when needed: `cycle_begin`
/ `cycle_end` compare a body's first accesses with those pending at its end)
and each program instance ends with one, so the next program's writes never
race this one's reads. Branches are recorded from the same state and merged.

With one tasklet nothing is recorded and no barrier is placed.
"""
from __future__ import annotations

from contextlib import contextmanager

from mlir import ir
from mlir.dialects import arith

from ...dpu.abi import BARRIER
from ...errors import CompileError
from ...inject.runtime_calls import runtime_call
from ..ttir_text import user_location


def _unshareable(why: str) -> CompileError:
    """An op this module cannot share among tasklets (a gap of the backend, at
    the line of the op being lowered)."""
    return CompileError(f"the DPU backend cannot share this operation among tasklets ({why}); "
                        "num_tasklets=1 compiles it", user_location(ir.Location.current))


def chunk(shape, tasklets: int) -> int:
    """Elements of the first dimension of `shape` each tasklet owns (rank 1:
    a multiple of 8, so that no two tasklets share an MRAM word)."""
    n = -(-shape[0] // tasklets)
    return -(-n // 8) * 8 if len(shape) == 1 else n


def owner(shape, tasklets: int) -> tuple:
    """Who accesses element i of the first dimension of a `shape` tile in a
    partitioned loop: the tasklet whose chunk holds i."""
    return ("chunk", shape[0], chunk(shape, tasklets))


class Barriers:
    """The access record of one kernel's conversion, and its barriers."""

    def __init__(self, tasklets: int, module_body, info):
        self.tasklets = tasklets
        self.module_body = module_body     # where the barrier's runtime declaration goes
        self.info = info                   # counts the barrier sites
        self._div: list = []               # open divergent regions: their owner
        self._mine: list = []              # loop indices running over the owner's chunk
        self._ops: list = []               # (anchor op, access number, uniform?) open anchors
        self._anchors: list = []
        self._seq = 0                      # accesses recorded so far
        self._cycles: list = []            # [block, accesses logged, still logging?, regions]
        self._log_paused = False
        self.in_region = 0                 # lowering an EDSL region call
        self._regions = 0                  # EDSL region calls lowered so far
        self._w: dict = {}                 # buffer -> (owner, serial) of the last write
        self._r: dict = {}                 # buffer -> [(owner, serial)] reads
        self._mram: list = []              # (write?, owner, serial)

    @contextmanager
    def op(self, region: bool):
        """Lowering one op (`region`: an EDSL region call, `fl.call`)."""
        if self.tasklets == 1:
            yield
            return
        self.open_anchor()
        if region:
            # An EDSL region runs on every tasklet and touches WRAM and MRAM
            # unseen by the access record: it starts with every tile op before
            # it complete, reads operands that are complete (`materialize`
            # waits for them), and is followed by the region's closing
            # barrier, so nothing is left pending.
            self.sync_if_dirty()
            self.in_region += 1
        try:
            yield
        finally:
            self.close_anchor()
            if region:
                self.in_region -= 1
                self._regions += 1
                self._w, self._r, self._mram = {}, {}, []

    def close_anchor(self) -> None:
        self._ops.pop()

    def finish(self) -> None:
        """Drop the anchors."""
        for anchor in self._anchors:
            anchor.erase()
        self._anchors = []

    @contextmanager
    def divergent(self, owner):
        """Code run by some tasklets only (no barrier may be placed inside); a
        barrier it needs goes before it."""
        anchored = not self._div
        if anchored:
            self.open_anchor()
        self._div.append(owner)
        mine = len(self._mine)
        try:
            yield
        finally:
            self._div.pop()
            del self._mine[mine:]
            if anchored:
                self.close_anchor()

    def open_anchor(self) -> None:
        """A place for a barrier, here (at uniform level)."""
        with ir.Location.unknown():
            anchor = arith.constant(ir.IndexType.get(), 0).owner
        self._anchors.append(anchor)
        self._ops.append((anchor, self._seq, not self._div))

    def mine(self, iv: ir.Value) -> None:
        """Declare loop index `iv` to run over the current owner's chunk."""
        self._mine.append(iv)

    def barrier(self) -> None:
        with ir.Location.unknown():
            site = arith.constant(ir.IntegerType.get_signless(64), 0)
        runtime_call(self.module_body, BARRIER, [site])
        self.info.barriers += 1
        block = ir.InsertionPoint.current.block
        for log in self._cycles:
            if log[0] == block:             # executed whenever the cycle's rest is
                log[2] = False
            elif log[2]:                    # ... on this branch's remaining path
                self._log_paused = True

    @contextmanager
    def branch(self):
        """Lower a nested block (a branch, a loop body) of uniform code."""
        paused = self._log_paused
        try:
            yield
        finally:
            self._log_paused = paused

    def sync(self) -> None:
        """A barrier here: every access so far is complete on every tasklet."""
        if self.tasklets == 1:
            return
        if self._div:
            raise _unshareable("a barrier inside code some tasklets skip")
        self.barrier()
        self._w, self._r, self._mram = {}, {}, []

    def dirty(self) -> bool:
        return bool(self._w or self._r or self._mram)

    def sync_if_dirty(self) -> None:
        if self.tasklets > 1 and self.dirty():
            self.sync()

    def cycle_begin(self, block: ir.Block) -> list:
        """Start logging the accesses at the top of code that repeats (a loop
        body, or the kernel: the next program instance); `cycle_end` then
        checks them against the state at its end."""
        log = [block, [], True, self._regions]
        if self.tasklets > 1:
            self._cycles.append(log)
        return log

    def cycle_end(self, log: list, mram: bool = True) -> None:
        """A barrier here if the code's first accesses (up to its first barrier)
        would conflict, on its next run, with accesses pending now. `mram`:
        count MRAM (not across program instances, which Triton leaves unordered)."""
        if self.tasklets == 1:
            return
        self._cycles.remove(log)
        if self._regions != log[3]:          # a region's accesses are not on record
            self.sync()
            return
        for kind, key, who, write in log[1]:
            if kind == "mram":
                if mram and any(w and not (o == who == "one") for w, o, _ in self._mram):
                    self.sync()
                    return
            elif self._buffer_hits(key, who, write):
                self.sync()
                return

    def state(self):
        return dict(self._w), {k: dict(v) for k, v in self._r.items()}, list(self._mram)

    def set_state(self, state) -> None:
        self._w, self._r, self._mram = state[0], state[1], state[2]

    def merge_state(self, a, b):
        w = dict(a[0])
        for k, v in b[0].items():
            if k not in w or w[k][1] < v[1]:
                w[k] = v
        r = {k: dict(v) for k, v in a[1].items()}
        for k, v in b[1].items():
            for o, seq in v.items():
                r.setdefault(k, {})[o] = max(seq, r.get(k, {}).get(o, 0))
        return w, r, a[2] + [x for x in b[2] if x not in a[2]]

    def _owner_of_access(self, buf: ir.Value, ivs) -> object:
        if not self._div:
            return "all"
        top = self._div[-1]
        if top == "one":
            return "one"
        shape = tuple(ir.MemRefType(buf.type).shape)
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
        if self._log_paused:
            return
        for log in self._cycles:
            if log[2]:
                log[1].append(entry)

    def note_buffer(self, buf: ir.Value, ivs, write: bool, who=None) -> None:
        """Record an element access of WRAM buffer `buf` (a barrier first if it
        conflicts with an access by another tasklet since the last barrier)."""
        if self.tasklets == 1:
            return
        if who is None:
            who = self._owner_of_access(buf, ivs)
        hits = self._buffer_hits(buf, who, write)
        if hits:
            self._resolve(max(hits))
        self._seq += 1
        if write:
            self._w[buf] = (who, self._seq)
        else:
            self._r.setdefault(buf, {})[who] = self._seq
        self._log(("buf", buf, who, write))

    def note_mram(self, write: bool, who="all") -> None:
        """Record an MRAM access of the op being lowered (`who`: "all" tasklets,
        or "one" for tasklet 0). A store orders the loads and stores after it
        (as `tl.debug_barrier` would on a GPU, where a load is not ordered
        with a later store of another lane)."""
        if self.tasklets == 1:
            return
        hits = [s for w, o, s in self._mram if w and not (o == who == "one")]
        if hits:
            self._resolve(max(hits))
        self._seq += 1
        self._mram.append((write, who, self._seq))
        self._log(("mram", None, who, write))

    def _resolve(self, latest: int) -> None:
        """A barrier after the access numbered `latest` and before the current
        one: before the innermost op (or divergent code) begun after it."""
        for anchor, seq, uniform in reversed(self._ops):
            if seq < latest:
                break
            if uniform:
                with ir.InsertionPoint(anchor), ir.Location.unknown():
                    self.barrier()
                self._drop_before(seq)
                return
        if not self._div:
            self.sync()
            return
        raise _unshareable("a tasklet conflict inside one op's divergent code")

    def _drop_before(self, seq: int) -> None:
        self._w = {k: v for k, v in self._w.items() if v[1] > seq}
        self._r = {k: {o: x for o, x in v.items() if x > seq} for k, v in self._r.items()}
        self._r = {k: v for k, v in self._r.items() if v}
        self._mram = [x for x in self._mram if x[2] > seq]
