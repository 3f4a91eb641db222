"""Tiles kept in MRAM: a tile buffer that does not fit in WRAM lives in the
DPU's MRAM scratch and is streamed through WRAM by DMA, as DPU programs keep
big data in MRAM.

Which tiles (`plan`). The walk keeps every tile in WRAM. When its buffers
exceed the DPU's WRAM, `plan` picks tile buffers to keep in MRAM instead,
the largest first (then those whose values are used least), never the DMA
staging buffers or an EDSL region's operands (an EDSL function reads its
tile operands in WRAM), until the rest fits together with what the spilled
tiles need in WRAM: a window per tile and tasklet, and the panels of each
`tl.dot` with a spilled operand or result (`SpillPlan`: tile buffers named
by their request number). The plan's WRAM total bounds the rewritten
kernel's, so one plan is enough. What cannot fit that way is a compile
error saying what stays in WRAM.

How (`SpillSpace`). The walk states, on each tile's WRAM view, what the
rewrite needs: the end of each scope that touched the tile, and the
*units*, code whose form depends on where a tile is (a load's result, a
fill, a store of its rows, a `tl.dot`), each with its emitter. After the
plan, each unit that names a spilled tile is emitted again in place, in
its MRAM form; the remaining element loads and stores of a spilled tile
(also those through an unrolled step's window) and its scope ends become
window code (below).

Where. The scratch is per DPU, in its MRAM after the launch's arrays (the
model places it in the launch's MRAM image: `edsl.backend.model`); the
kernel finds it in its launch context (`Ctx.SCRATCH`). Tiles are laid out
one after another, row-major, each row (the last dimension) padded to 8
bytes, so that every row starts 8-byte aligned.

Lines. A spilled tile is moved by *lines*: a segment of a row, or whole
rows, of at most the plan's line size (<= 2048 bytes: one DMA transfer,
8-byte aligned, a multiple of 8 bytes). A line never holds elements that
two tasklets write (see `geometry`).

Access.
- Writes that produce a whole tile (a load's result, a materialized tile,
  a `tl.dot` result) stream it: each line is computed in the tile's WRAM
  window and written to MRAM by one transfer (`SpillBuffer.stream`); not
  so a carried tile updated in place (`acc += x`), which reads what it
  writes.
- Any other element access goes through the window as a one-line cache
  (`SpillBuffer.load` / `store`): a miss writes the window's line back if
  it was changed and reads the needed one (`__dpu_spill_swap`). A line is
  valid only within the op (or fill) that brought it in: at its end the
  window is written back if changed and forgotten (`SpillSpace.scope`), so
  a tasklet never reads a line another tasklet has changed since, and the
  barriers placed from the access record (it records spilled tiles as buffers)
  come after the write-backs.
- `tl.dot` reads rows of its spilled operands into its panels by DMA
  (dot.py).
Every spill transfer goes through the one DMA routine and is also counted
in the context's SPILL_* slots, which the launch report shows.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from math import prod
from pathlib import Path

from mlir import ir
from mlir.dialects import arith, func, llvm, memref, scf

from ...target.dpu import (COUNT_TRANSFER, DMA, DMA_MAX_BYTES, DMA_MIN_BYTES, MRAM_ADDRSPACE, MRAM_BYTES,
                        READ, WRITE, Ctx, align_up)
from ...base import templates
from ...base.errors import DpuError
from .barriers import ACCESS as ACCESS_MARKER, chunk
from .builders import align_up as align_up_value, as_i64, c64, i64, in_dma_pieces, index_c, to_stored
from .wram import WramBuffer, WramFull, largest

SWAP = "__dpu_spill_swap"        # (base, state, data, line, segs, unit, seg, total, site, ctx)
FLUSH = "__dpu_spill_flush"      # (base, state, data, segs, unit, seg, total, site, ctx)
SPILL_DMA = "__dpu_spill_dma"    # (mram, wram, nbytes, direction, site, ctx): a counted transfer
# Placeholders on a tile's WRAM view (`SpillSpace`).
FLUSH_MARK, UNIT, UNIT_END = "edsl.spill_flush", "edsl.spill_unit", "edsl.spill_unit_end"
# Line sizes tried, largest first: the legal DMA sizes that are powers of two.
LINE_CAPS = tuple(DMA_MAX_BYTES >> i for i in range(DMA_MAX_BYTES.bit_length())
                  if DMA_MAX_BYTES >> i >= DMA_MIN_BYTES)
STATE_BYTES = 16                 # a window's line tag (line + 1; 0: none) and changed flag


# ---- geometry ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Geometry:
    """The MRAM layout and lines of a spilled tile: rows of `pitch` bytes, a
    line `lanes` elements of one row (segments) or `rows` whole rows."""
    shape: tuple
    es: int              # bytes per element
    lanes: int
    rows: int

    @property
    def n(self) -> int:
        return self.shape[-1]

    @property
    def pitch(self) -> int:
        return align_up(self.n * self.es)

    @property
    def row_count(self) -> int:
        return prod(self.shape[:-1])

    @property
    def total(self) -> int:
        return self.row_count * self.pitch

    @property
    def segs(self) -> int:
        return -(-self.n // self.lanes)

    @property
    def unit(self) -> int:
        """Bytes between the starts of consecutive line groups."""
        return self.rows * self.pitch

    @property
    def seg(self) -> int:
        """Bytes of a full line."""
        return self.lanes * self.es if self.segs > 1 else self.unit


def geometry(shape, es: int, cap: int, tasklets: int) -> Geometry:
    """Lines of at most `cap` bytes that never hold elements two tasklets
    write: tasklets write chunks of the first dimension (`barriers.chunk`),
    so with several tasklets a line of a rank-1 tile divides a chunk, and
    whole rows are grouped only within one index of the first dimension."""
    shape = tuple(shape)
    n = shape[-1]
    pitch = align_up(n * es)
    if len(shape) == 1 and tasklets > 1:
        c = chunk(shape, tasklets) // 8
        cap = max(cap, 8 * es)
        m = max(d for d in range(1, c + 1) if c % d == 0 and 8 * d * es <= cap)
        return Geometry(shape, es, min(8 * m, n), 1)
    if pitch <= cap:
        pool = prod(shape[:-1]) if tasklets == 1 else prod(shape[1:-1])
        g = max(d for d in range(1, min(pool, cap // pitch) + 1) if pool % d == 0)
        return Geometry(shape, es, n, g)
    return Geometry(shape, es, max(1, cap // es), 1)


# ---- the plan ---------------------------------------------------------------------------

@dataclass(frozen=True)
class DotNeed:
    """A `tl.dot` as the plan sees it: its operand and result buffers (tile
    keys, None: not a tile buffer) and what its panels hold."""
    a: int | None
    b: int | None
    out: int | None
    m: int
    n: int
    k: int
    es_a: int
    es_b: int
    es_sum: int          # the accumulator's element (fp64 for narrow float operands)
    es_acc: int          # the result's element
    narrow: bool         # the result is rounded from the accumulator


@dataclass(frozen=True)
class SpillPlan:
    tiles: frozenset     # keys of the tile buffers kept in MRAM
    line_cap: int        # bytes of a line (window) at most
    dots: tuple          # per tl.dot in lowering order: its `Panels`, or None


@dataclass(frozen=True)
class Panels:
    """A blocked `tl.dot`'s WRAM panels: kb x nb of B, rb accumulator rows
    of nb per tasklet (rb > 1 only when K is split: kb < K)."""
    kb: int
    nb: int
    rb: int


def dot_panels(need: DotNeed, spilled, p: Panels, tasklets: int) -> int:
    """WRAM bytes of a blocked `tl.dot`: a shared panel of B (kb x nb) when B
    is in MRAM; per tasklet rb accumulator rows (nb), a row segment of A (kb)
    when A is in MRAM, and a rounded result row when the result is."""
    shared = p.kb * align_up(p.nb * need.es_b) if need.b in spilled else 0
    each = p.rb * align_up(p.nb * need.es_sum)
    if need.a in spilled:
        each += align_up(p.kb * need.es_a)
    if need.out in spilled and need.narrow:
        each += align_up(p.nb * need.es_acc)
    return shared + tasklets * each


def _transfers(count: int, nbytes: int) -> float:
    """The DMA time (cycles, the timing model's figures) of `count` transfers
    of `nbytes` each, each cut at 2048 bytes."""
    from ...dpu.timing import ALPHA_READ, BETA
    return count * (_ceil_div(nbytes, DMA_MAX_BYTES) * ALPHA_READ + BETA * nbytes)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def dot_cost(need: DotNeed, spilled, p: Panels, tasklets: int) -> float:
    """The DMA time of a blocked `tl.dot` (per matrix of the batch): B's
    panels, A's row segments, the result's rows."""
    n_panels = _ceil_div(need.n, p.nb)
    passes = 1 if p.kb == need.k else _ceil_div(_ceil_div(need.m, tasklets), p.rb)
    cost = 0.0
    if need.b in spilled:
        cost += _transfers(n_panels * passes * need.k, p.nb * need.es_b)
    if need.a in spilled:
        cost += _transfers(n_panels * need.m * _ceil_div(need.k, p.kb), p.kb * need.es_a)
    if need.out in spilled:
        cost += _transfers(n_panels * need.m, p.nb * need.es_acc)
    return cost


def _dot_fit(need: DotNeed, spilled, room: int, tasklets: int) -> Panels | None:
    """The panels within `room` bytes whose DMA costs least: per (kb, nb),
    with K split as many accumulator rows as fit."""
    ks = [need.k] + [x for x in (1024, 512, 256, 128, 64, 32, 16, 8) if x < need.k]
    ns = [need.n] + [x for x in (512, 256, 128, 64, 32, 16, 8) if x < need.n]
    rows = _ceil_div(need.m, tasklets)
    best = None
    for kb in ks:
        for nb in ns:
            p = Panels(kb, nb, 1)
            if dot_panels(need, spilled, p, tasklets) > room:
                continue
            if kb < need.k:
                spare = room - dot_panels(need, spilled, p, tasklets)
                p = Panels(kb, nb, min(rows, 1 + spare // (tasklets * align_up(nb * need.es_sum))))
            if best is None or dot_cost(need, spilled, p, tasklets) < dot_cost(need, spilled, best, tasklets):
                best = p
    return best


def line_bytes(record: WramBuffer, cap: int, tasklets: int) -> int:
    return geometry(record.shape, record.es, cap, tasklets).seg


def window_bytes(record: WramBuffer, cap: int, tasklets: int) -> int:
    return tasklets * align_up(STATE_BYTES + line_bytes(record, cap, tasklets))


def scratch_bytes(record: WramBuffer) -> int:
    return align_up(record.es * record.shape[-1]) * prod(record.shape[:-1])


def plan(name: str, records: list[WramBuffer], dots: list[DotNeed], limit: int, tasklets: int) -> SpillPlan:
    """The tiles to keep in MRAM, given the WRAM buffers of the converted
    kernel with every tile in WRAM and its `tl.dot`s. The WRAM a plan is
    chosen by bounds the kernel's once rewritten: the buffers other than
    tiles stay (a spilled tile's staging is a line, no more than its loads
    staged in WRAM), and each spilled tile adds its windows and its tl.dots'
    panels."""
    tiles = [r for r in records if r.key is not None]
    other = sum(r.nbytes for r in records if r.key is None)
    # Spilling a tile no larger than its windows frees nothing.
    order = sorted((r for r in tiles if r.spillable and r.nbytes > window_bytes(r, 8, tasklets)),
                   key=lambda r: (-r.nbytes, r.uses, r.key))
    resident = sum(r.nbytes for r in tiles)
    spilled: list[WramBuffer] = []
    chosen = None                            # (estimated DMA time, plan, tiles)
    for r in order:
        spilled.append(r)
        resident -= r.nbytes
        keys = frozenset(s.key for s in spilled)
        for cap in LINE_CAPS:
            total = other + resident + sum(window_bytes(s, cap, tasklets) for s in spilled)
            # Each spilled tile is written and read once in lines, at least.
            cost = sum(_transfers(2 * _ceil_div(scratch_bytes(s), line_bytes(s, cap, tasklets)),
                                  line_bytes(s, cap, tasklets)) for s in spilled)
            choice = []
            for need in dots:
                if not keys & {need.a, need.b, need.out}:
                    choice.append(None)
                    continue
                fit = _dot_fit(need, keys, limit - total, tasklets)
                if fit is None:
                    break
                total += dot_panels(need, keys, fit, tasklets)
                cost += dot_cost(need, keys, fit, tasklets)
                choice.append(fit)
            else:
                if total <= limit and (chosen is None or cost < chosen[0]):
                    chosen = (cost, SpillPlan(keys, cap, tuple(choice)), list(spilled))
        # Once a plan fits, keeping more tiles in MRAM can only pay by the
        # wider tl.dot panels the WRAM they free allows.
        if chosen is not None and not any(c is not None for c in chosen[1].dots):
            break
    if chosen is not None:
        scratch = sum(scratch_bytes(s) for s in chosen[2])
        if scratch > MRAM_BYTES:
            raise DpuError(f"kernel '{name}' keeps {scratch} bytes of tiles in MRAM, more "
                           f"than the {MRAM_BYTES} bytes of a DPU's MRAM; largest: "
                           f"{largest(chosen[2])}", chosen[2][0].loc)
        return chosen[1]
    raise _cannot_stream(name, records, spilled, dots, limit, tasklets)


def _cannot_stream(name, records, spilled, dots, limit, tasklets) -> WramFull:
    """Why a kernel does not fit in WRAM even with its tiles kept in MRAM:
    what stays in WRAM, and what the spilled tiles need there at least."""
    def why(r):
        if r.key is None:
            return r
        reason = ("an EDSL function's operand, read in WRAM" if not r.spillable
                  else "no larger than the windows it would need")
        return WramBuffer(r.nbytes, f"{r.what} ({reason})", r.loc)
    stays = [why(r) for r in records if r not in spilled]
    total = sum(r.nbytes for r in records)
    parts = [f"in WRAM stay {largest(stays)}"]
    if spilled:
        windows = sum(window_bytes(s, 8, tasklets) for s in spilled)
        parts.append(f"the {len(spilled)} tile(s) kept in MRAM need {windows} bytes of windows at "
                     f"least ({tasklets} tasklet(s))")
        keys = {s.key for s in spilled}
        if any(keys & {d.a, d.b, d.out} for d in dots):
            parts.append("and the tl.dot panels")
    loc = next((r.loc for r in sorted(stays, key=lambda r: -r.nbytes) if r.loc), None)
    return WramFull(f"kernel '{name}' needs {total} bytes of WRAM, more than the {limit} bytes of a "
                    f"DPU, and keeping its large tiles in MRAM does not make it fit: " + "; ".join(parts),
                    loc or next((r.loc for r in spilled if r.loc), None))


# ---- the kernel's spilled tiles -------------------------------------------------------------

def _addr(view: ir.Value) -> ir.Value:
    return arith.index_cast(i64(), memref.extract_aligned_pointer_as_index(view))


@dataclass
class SpillRecord:
    """A tile kept in MRAM, for the kernel's info and the launch report."""
    what: str
    loc: object
    nbytes: int          # MRAM scratch bytes
    line: int            # bytes of a line

    def describe(self) -> str:
        at = f" at line {self.loc.lineno}" if self.loc else ""
        return f"{self.what}{at}: {self.nbytes} bytes, lines of {self.line} bytes"


class LineTarget:
    """Lanes [j0, ...) of row `r` of the line in a window: where a streamed
    row segment is written (the interface memory.py writes rows through)."""

    def __init__(self, buf: SpillBuffer, r, j0):
        self.buf, self.r, self.j0 = buf, r, j0
        self.length = buf.shape[-1]

    def _slot(self, j):
        g = self.buf.geo
        base = arith.subi(j, self.j0)
        if g.rows == 1:
            return base
        return arith.addi(arith.muli(self.r, index_c(g.pitch // g.es)), base)

    def row_address(self, seg) -> ir.Value:
        """The WRAM address (i64) lane 0 of `seg`'s row would have (the
        stream states its writes once)."""
        g = self.buf.geo
        off = arith.subi(c64(0), arith.muli(as_i64(self.j0), c64(g.es)))
        if g.rows > 1:
            off = arith.addi(off, arith.muli(as_i64(self.r), c64(g.pitch)))
        return arith.addi(self.buf.data_addr, off)

    def store(self, v, ivs) -> None:
        memref.store(to_stored(v, self.buf.stored), self.buf.data, [self._slot(ivs[-1])])


class SpillBuffer:
    """A tile buffer kept in the DPU's MRAM scratch (see the module
    docstring). `view` is the WRAM view the walk gave the tile, now a
    stand-in that takes no WRAM: its element loads and stores are rewritten
    to go through the window (`SpillSpace.apply`), its accesses stay stated
    on it for barrier placement, and it is erased after. `type` is its MRAM
    memref type: the row code reads the tile's shape from it."""

    def __init__(self, space: SpillSpace, key: int, view: ir.Value, es: int, offset: int,
                 geo: Geometry, what: str, loc):
        mt = ir.MemRefType(view.type)
        self.space, self.key, self.view, self.es = space, key, view, es
        self.shape, self.stored = tuple(mt.shape), mt.element_type
        shape, stored = self.shape, self.stored
        self.offset, self.geo, self.what, self.loc = offset, geo, what, loc
        self.type = ir.MemRefType.get(list(shape), stored,
                                      memory_space=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), MRAM_ADDRSPACE))
        block = space.wram.private(STATE_BYTES + geo.seg, f"window of the {what} kept in MRAM", loc)
        self.state = space.wram.view(block, 0, [2], i64())
        self.data = space.wram.view(block, STATE_BYTES, [geo.seg // es], stored)
        with space.at_entry():
            self.base = arith.addi(space.scratch(), c64(offset))
            self.state_addr = _addr(self.state)
            self.data_addr = _addr(self.data)

    # -- addresses --------------------------------------------------------------------
    def row_index(self, rivs) -> ir.Value:
        """The flat row number (index) of rows indices `rivs`."""
        r, stride = None, 1
        for d in range(len(rivs) - 1, -1, -1):
            term = rivs[d] if stride == 1 else arith.muli(rivs[d], index_c(stride))
            r = term if r is None else arith.addi(r, term)
            stride *= self.shape[d]
        return r if r is not None else index_c(0)

    def row_mram(self, rivs, j0) -> ir.Value:
        """The MRAM address (i64) of element rivs + [j0]."""
        off = arith.muli(as_i64(self.row_index(rivs)), c64(self.geo.pitch))
        if j0 is not None:
            off = arith.addi(off, arith.muli(as_i64(j0), c64(self.es)))
        return arith.addi(self.base, off)

    def _geometry_args(self):
        g = self.geo
        return [c64(g.segs), c64(g.unit), c64(g.seg), c64(g.total)]

    # -- element access through the window ----------------------------------------------
    def _locate(self, ivs):
        g = self.geo
        r, j = self.row_index(ivs[:-1]), ivs[-1]
        if g.segs > 1:
            line = arith.addi(arith.muli(r, index_c(g.segs)), arith.divui(j, index_c(g.lanes)))
            return line, arith.remui(j, index_c(g.lanes))
        if g.rows == 1:
            return r, j
        line = arith.divui(r, index_c(g.rows))
        slot = arith.addi(arith.muli(arith.remui(r, index_c(g.rows)), index_c(g.pitch // g.es)), j)
        return line, slot

    def _ensure(self, line, site: ir.Value) -> None:
        want = arith.addi(as_i64(line), c64(1))
        tag = memref.load(self.state, [index_c(0)])
        miss = arith.cmpi(arith.CmpIPredicate.ne, tag, want)
        op = scf.IfOp(miss, [], has_else=False)
        with ir.InsertionPoint(op.then_block):
            func.CallOp([], ir.FlatSymbolRefAttr.get(SWAP),
                        [self.base, self.state_addr, self.data_addr, as_i64(line), *self._geometry_args(),
                         site, self.space.ctx_arg])
            scf.yield_([])

    def load(self, ivs, site: ir.Value) -> ir.Value:
        """Element `ivs` as stored, through the window."""
        line, slot = self._locate(list(ivs))
        self._ensure(line, site)
        return memref.load(self.data, [slot])

    def store(self, v: ir.Value, ivs, site: ir.Value) -> None:
        """Store `v`, of the stored type, at element `ivs`, through the window."""
        line, slot = self._locate(list(ivs))
        self._ensure(line, site)
        memref.store(v, self.data, [slot])
        memref.store(c64(1), self.state, [index_c(1)])

    def flush(self, changed: bool, site: ir.Value) -> None:
        """End of a scope: write the window's line back if `changed`, forget it."""
        if changed:
            func.CallOp([], ir.FlatSymbolRefAttr.get(FLUSH),
                        [self.base, self.state_addr, self.data_addr, *self._geometry_args(), site,
                         self.space.ctx_arg])
        else:
            memref.store(c64(0), self.state, [index_c(0)])

    # -- streamed writes ---------------------------------------------------------------
    def stream(self, body) -> None:
        """Write the whole tile line by line: `body(rivs, j0, j1, target, mine)`
        fills lanes [j0, j1) of row `rivs` into `target` (a `LineTarget`;
        `mine`: the lanes run over this tasklet's chunk), then the line goes to
        MRAM. Tasklets share the lines out as they share the tile's rows."""
        tasklets, accesses, g = self.space.tasklets, self.space.accesses, self.geo
        self.space.begin_stream(self)
        shape, n = self.shape, g.n

        def out(mram, nbytes):
            self.space.dma(mram, self.data_addr, nbytes, WRITE)

        def seg_bytes(j0, j1):
            return align_up_value(arith.muli(as_i64(arith.subi(j1, j0)), c64(g.es)))

        def row_segments(rivs, lo, hi, mine):
            loop = scf.ForOp(lo, hi, index_c(g.lanes))
            with ir.InsertionPoint(loop.body):
                j0 = loop.induction_variable
                j1 = arith.minsi(arith.addi(j0, index_c(g.lanes)), hi)
                body(rivs, j0, j1, LineTarget(self, index_c(0), j0), mine)
                out(self.row_mram(rivs, j0), seg_bytes(j0, j1))
                scf.yield_([])

        if len(shape) == 1:
            if tasklets.count > 1:
                lo, hi = tasklets.my_range(shape)
                with accesses.divergent(tasklets.owner(shape)):
                    accesses.note_buffer(self.view, [], True, who=tasklets.owner(shape))
                    row_segments([], lo, hi, True)
            else:
                row_segments([], index_c(0), index_c(n), False)
        elif g.rows == 1:
            def row(rivs):
                accesses.note_buffer(self.view, rivs, True)
                row_segments(rivs, index_c(0), index_c(n), False)
            tasklets.par_nest(shape[:-1], row, shape)
        else:
            inner = shape[1:-1] if tasklets.count > 1 else shape[:-1]

            def group(outer):
                if outer:
                    accesses.note_buffer(self.view, outer, True)
                loop = scf.ForOp(index_c(0), index_c(prod(inner) // g.rows), index_c(1))
                with ir.InsertionPoint(loop.body):
                    q = loop.induction_variable
                    rows = scf.ForOp(index_c(0), index_c(g.rows), index_c(1))
                    with ir.InsertionPoint(rows.body):
                        u = rows.induction_variable
                        rivs = outer + unflatten(arith.addi(arith.muli(q, index_c(g.rows)), u), inner)
                        body(rivs, index_c(0), index_c(n), LineTarget(self, u, index_c(0)), False)
                        scf.yield_([])
                    first = outer + unflatten(arith.muli(q, index_c(g.rows)), inner)
                    out(self.row_mram(first, None), c64(g.unit))
                    scf.yield_([])
            if tasklets.count > 1:
                tasklets.par_nest(shape[:1], group, shape)
            else:
                group([])
        # The window now holds the last line written: nothing valid, nothing changed.
        memref.store(c64(0), self.state, [index_c(0)])
        memref.store(c64(0), self.state, [index_c(1)])
        self.space.end_stream(self)

    def fill(self, tile) -> None:
        """Stream the elements of `tile` into this buffer."""
        def body(rivs, j0, j1, target, mine):
            loop = scf.ForOp(j0, j1, index_c(1))
            with ir.InsertionPoint(loop.body):
                j = loop.induction_variable
                if mine:
                    self.space.accesses.mine(j)
                target.store(tile.at(rivs + [j]), rivs + [j])
                scf.yield_([])
        self.stream(body)

    # -- rows by DMA (tl.dot panels) ---------------------------------------------------------
    def read_row(self, rivs, j0, nbytes: ir.Value, wram: ir.Value) -> None:
        """DMA `nbytes` (a multiple of 8) of the row from element rivs + [j0] to
        WRAM address `wram`, in transfers of at most 2048 bytes (the read
        stated for barrier placement)."""
        self.space.accesses.note_buffer(self.view, list(rivs) + [j0], False)
        self.space.dma_span(self.row_mram(rivs, j0), wram, nbytes, READ)

    def write_row(self, rivs, j0, nbytes: ir.Value, wram: ir.Value) -> None:
        self.space.accesses.note_buffer(self.view, list(rivs) + [j0], True)
        self.space.dma_span(self.row_mram(rivs, j0), wram, nbytes, WRITE)


def unflatten(flat: ir.Value, shape) -> list:
    """Indices over `shape` of row-major position `flat` (an index)."""
    out = []
    for d in range(len(shape) - 1, -1, -1):
        if d == 0:
            out.append(flat)
        else:
            out.append(arith.remui(flat, index_c(shape[d])))
            flat = arith.divui(flat, index_c(shape[d]))
    return out[::-1]


class SpillSpace:
    """The tiles of one kernel's conversion that may be kept in MRAM: the
    scopes that bound their windows' lines and the units whose code differs
    when a tile they write or read is kept in MRAM, stated during the walk on
    the tiles' WRAM views; then the plan's rewrite of those kept in MRAM
    (`apply`) and their scratch.

    Placeholders on a tile's view: `edsl.spill_flush` (the end of a scope
    that touched it; `changed`: it wrote the tile) and `edsl.spill_unit` /
    `edsl.spill_unit_end` around a unit's code (`number`: its emitter). For a
    tile kept in MRAM, the rewrite emits each unit again in place and turns
    the flushes and element accesses into window code; for the others it
    erases the placeholders."""

    def __init__(self, tasklets, sites, ctx_arg: ir.Value, wram, at_entry):
        self.plan: SpillPlan | None = None
        # The conversion's services it works through (`services`): the tasklets
        # (their chunks, the access record), the error sites, the DPU's WRAM
        # layout and the kernel's entry block.
        self.tasklets, self.accesses, self.sites = tasklets, tasklets.accesses, sites
        self.ctx_arg, self.wram, self.at_entry = ctx_arg, wram, at_entry
        self.records: list[SpillRecord] = []
        self.by_view: dict = {}           # a spilled tile's view -> its SpillBuffer
        self.bytes = 0
        self._scratch: ir.Value | None = None
        self._scopes: list[dict] = []     # open scopes: tile view -> written?
        self._streaming: set = set()      # views of the tiles being streamed
        self._units: list = []            # (emit, ir.Location, Sites.location) by number
        self._applied = False

    def of(self, buf) -> SpillBuffer | None:
        """The tile kept in MRAM that tile buffer `buf` is the view of (None: in WRAM)."""
        return self.by_view.get(buf) if isinstance(buf, ir.Value) else None

    def panels(self, number: int) -> Panels | None:
        """The panels of the `number`-th tl.dot (None: it runs unblocked)."""
        return self.plan.dots[number] if self.plan is not None else None

    def scratch(self) -> ir.Value:
        """The MRAM address (i64) of the DPU's scratch, read at the kernel's entry."""
        if self._scratch is None:
            with self.at_entry():
                slot = llvm.getelementptr(llvm.PointerType.get(), self.ctx_arg, [], [Ctx.SCRATCH], i64(), 0)
                self._scratch = llvm.load(i64(), slot)
        return self._scratch

    def _tile(self, view) -> bool:
        """Whether `view` is a tile buffer's (one a plan can keep in MRAM)."""
        if view in self.by_view:
            return True
        record = self.wram.by_view.get(view) if isinstance(view, ir.Value) else None
        return record is not None and record.key is not None

    # -- scopes and units, during the walk -------------------------------------------------
    @contextmanager
    def scope(self):
        """Code whose window lines end with it (an op, a fill)."""
        self._scopes.append({})
        try:
            yield
        finally:
            used = self._scopes.pop()
        for view, changed in used.items():
            ir.Operation.create(FLUSH_MARK, operands=[view], attributes={"changed": ir.BoolAttr.get(changed)})

    def touch(self, view: ir.Value, write: bool) -> None:
        """An element access of buffer `view` in the current scope."""
        if not self._tile(view):
            return
        assert self._scopes, "a tile accessed outside any op"
        assert view not in self._streaming, "a tile kept in MRAM read while it is being written"
        top = self._scopes[-1]
        top[view] = top.get(view, False) or write

    def unit(self, views, emit) -> None:
        """Emit `emit()`, code whose form depends on whether the tiles of
        `views` are kept in MRAM (it asks `of`), in a scope of its own; the
        rewrite emits it again where one of them is."""
        views = list(dict.fromkeys(v for v in views if self._tile(v)))     # (tl.dot(a, a): a once)
        if not views or self._applied:
            with self.scope():
                emit()
            return
        number = ir.IntegerAttr.get(i64(), len(self._units))
        self._units.append((emit, ir.Location.current, self.sites.location))
        ir.Operation.create(UNIT, operands=views, attributes={"number": number})
        with self.scope():
            emit()
        ir.Operation.create(UNIT_END, operands=views[:1], attributes={"number": number})

    def begin_stream(self, buf: SpillBuffer) -> None:
        assert not any(buf.view in s for s in self._scopes), f"the {buf.what} streamed while its window is in use"
        self._streaming.add(buf.view)

    def end_stream(self, buf: SpillBuffer) -> None:
        self._streaming.discard(buf.view)

    # -- the rewrite after the plan --------------------------------------------------------
    def apply(self, plan: SpillPlan | None, tiles: dict) -> None:
        """Keep the tiles `plan` names in MRAM (`tiles`: key -> (view, record),
        the tile buffers, no longer in the WRAM layout), then rewrite: their
        units emitted again, their flushes and element accesses through their
        windows; the placeholders on the tiles left in WRAM erased."""
        self.plan, self._applied = plan, True
        for key in sorted(plan.tiles if plan is not None else ()):
            view, record = tiles[key]
            geo = geometry(record.shape, record.es, plan.line_cap, self.tasklets.count)
            self.by_view[view] = SpillBuffer(self, key, view, record.es, self.bytes, geo, record.what, record.loc)
            self.bytes += geo.total
            self.records.append(SpillRecord(record.what, record.loc, geo.total, geo.seg))
        while (unit := self._next_unit()) is not None:
            self._emit_again(*unit)
        for buf in self.by_view.values():
            for use in list(buf.view.uses):
                self._rewrite(buf, _operation(use.owner))
        for view, _ in tiles.values():
            if view not in self.by_view:
                for use in list(view.uses):
                    op = _operation(use.owner)
                    if op.name in (FLUSH_MARK, UNIT, UNIT_END):
                        op.erase()

    def _next_unit(self):
        """(begin, end) markers of the first unit left that names a spilled tile."""
        begins = [_operation(u.owner) for buf in self.by_view.values() for u in buf.view.uses
                  if _operation(u.owner).name == UNIT]
        if not begins:
            return None
        begin = min(begins, key=_number)
        end = next(_operation(u.owner) for u in begin.operands[0].uses
                   if _operation(u.owner).name == UNIT_END and _number(_operation(u.owner)) == _number(begin))
        return begin, end

    def _emit_again(self, begin, end) -> None:
        """Emit a unit's code again, between its markers, with the plan known."""
        emit, location, site_location = self._units[_number(begin)]
        ops = list(begin.block.operations)
        first = next(i for i, op in enumerate(ops) if op.operation == begin)
        last = next(i for i, op in enumerate(ops) if op.operation == end)
        for op in reversed(ops[first + 1:last]):      # (users first: nothing after `end` uses them)
            assert not any(list(r.uses) for r in op.operation.results), "a unit's value used after it"
            op.operation.erase()
        saved, self.sites.location = self.sites.location, site_location
        try:
            with ir.InsertionPoint(end), location, self.scope():
                emit()
        finally:
            self.sites.location = saved
        begin.erase()
        end.erase()

    def _rewrite(self, buf: SpillBuffer, op) -> None:
        """`op`, a use of spilled tile `buf`'s view, through its window."""
        if op.name == ACCESS_MARKER:
            return
        with ir.InsertionPoint(op), op.location:
            if op.name == FLUSH_MARK:
                buf.flush(ir.BoolAttr(op.attributes["changed"]).value, self.sites.site_of(op.location))
            elif op.name == "memref.reinterpret_cast":        # an unrolled step's window (`core.UnrollStep`)
                for use in list(op.results[0].uses):
                    self._rewrite_at(buf, _operation(use.owner), op.operands[1])
            else:
                self._rewrite_at(buf, op, None)
        op.erase()

    def _rewrite_at(self, buf: SpillBuffer, op, offset) -> None:
        """Element load or store `op` of `buf`'s view, or at flat `offset` plus
        its index of a window of it, through the window."""
        store = op.name == "memref.store"
        assert op.name in ("memref.load", "memref.store"), f"the {buf.what} kept in MRAM used by {op.name}"
        with ir.InsertionPoint(op), op.location:
            ivs = list(op.opview.indices)
            if offset is not None:
                ivs = unflatten(arith.addi(offset, ivs[0]), buf.shape)
            site = self.sites.site_of(op.location)
            if store:
                buf.store(op.opview.value, ivs, site)
            else:
                op.results[0].replace_all_uses_with(buf.load(ivs, site))
        if offset is not None:
            op.erase()

    def erase_views(self) -> None:
        """Erase the spilled tiles' views (after barrier placement, which read
        the access markers on them)."""
        for view in self.by_view:
            assert not list(view.uses), "a spilled tile's view still used"
            op = view.owner.operation
            offset = op.operands[1].owner.operation
            op.erase()
            if not list(offset.results[0].uses):
                offset.erase()

    # -- transfers ---------------------------------------------------------------------------
    def dma(self, mram, wram, nbytes, direction: int) -> None:
        func.CallOp([], ir.FlatSymbolRefAttr.get(SPILL_DMA),
                    [mram, wram, nbytes, c64(direction), self.sites.site(), self.ctx_arg])

    def dma_span(self, mram, wram, nbytes, direction: int) -> None:
        """Move `nbytes` (a multiple of 8) in transfers of at most 2048 bytes."""
        in_dma_pieces(mram, wram, nbytes, lambda m, w, size: self.dma(m, w, size, direction))


def _operation(op) -> ir.Operation:
    return getattr(op, "operation", op)


def _number(marker) -> int:
    return ir.IntegerAttr(marker.attributes["number"]).value


def support_text() -> str:
    """The runtime of spilled tiles (`spill_support.mlir`), added to modules
    that have some."""
    return templates.fill(Path(__file__).with_name("spill_support.mlir"),
                          count_transfer=COUNT_TRANSFER, dma=DMA, flush=FLUSH, read=READ, spill_dma=SPILL_DMA,
                          spill_reads=int(Ctx.SPILL_READS), swap=SWAP, write=WRITE)
