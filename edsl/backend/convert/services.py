"""The services every lowering works through, each the owner of one part of a
conversion's state (the `Converter` hands them to the lowerings):

- `Sites`: where the op being lowered is in the user's source (compile errors
  at its line, run-time check-site codes, the kernel's files by name), and
  the C library functions the converted module declares;
- `Tasklets`: the tasklets a DPU shares the tile code among (this one's id,
  its chunk of a tile, loop nests shared out or run by one tasklet);
- `Buffers`: the tile buffers (WRAM views, or tiles kept in MRAM: `spill`),
  their element accesses, each stated for barrier placement as it is
  emitted (`barriers.AccessRecord`), and the DMA staging buffer;
- `Values`: the converted form of each TTIR value (a `Tile` or a scalar).
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from math import prod

from mlir import ir
from mlir.dialects import arith, func, memref, scf

from ...base.errors import CompileError
from ...target.dpu import align_up
from ..ttir_reader import user_location
from .barriers import AccessRecord, chunk, owner
from .builders import buffer_type, c64, i64, index_c, tasklet_id
from .core import UNROLL, KernelInfo, Tile, UnrollStep, byte_size, load_elem, store_elem
from .spill import DotNeed, SpillSpace, plan as spill_plan
from .wram import WramBuffer, WramLayout


class Sites:
    """The op being lowered, in the user's source, and what the module declares."""

    def __init__(self, info: KernelInfo, kernel_file: str | None, module_body):
        self.info, self.kernel_file, self.module_body = info, kernel_file, module_body
        self.location = None               # of the op being lowered
        self._codes: set[int] = set()
        self._declared: set[str] = set()   # functions of the C library declared in the module

    def error(self, op, message: str) -> CompileError:
        return CompileError(message, user_location(op.location))

    def file_name(self, filename: str) -> str:
        """`filename` as the compiled kernel names it: "" for the kernel's own
        file and a path relative to its folder for another (a callee's), which
        the launch resolves from the file of the kernel launched (Triton's
        cache key ignores paths: copies of one source tree in two folders
        share the compiled kernel; `errors.file_of_kernel_site`)."""
        if filename == self.kernel_file:
            return ""
        if self.kernel_file and os.path.isabs(filename):
            return os.path.relpath(filename, os.path.dirname(self.kernel_file))
        return filename

    def site(self) -> ir.Value:
        """An i64 check-site code of the op being lowered (0: unknown), so that
        a run-time error (a DMA out of the arrays) names the kernel's line."""
        return self.site_of(self.location)

    def site_of(self, location) -> ir.Value:
        """The i64 check-site code of `location` (the user's line it comes from)."""
        loc = user_location(location) if location is not None else None
        code = 0
        if loc is not None:
            code = loc.site
            if code not in self._codes:
                self._codes.add(code)
                self.info.sites.append([code, self.file_name(loc.filename), loc.lineno, loc.col])
        return arith.constant(ir.IntegerType.get_signless(64), code)

    def declare(self, name: str, args: list, results: list) -> str:
        """`name`, a function of the C library or libm, declared once in the
        converted module (a program may call those and no others)."""
        if name not in self._declared:
            with ir.InsertionPoint(self.module_body), ir.Location.unknown():
                func.FuncOp(name, ir.FunctionType.get(args, results), visibility="private")
            self._declared.add(name)
        return name


class Tasklets:
    """The `count` tasklets of a DPU, which share the kernel's tile code: a
    tile loop nest runs over each one's chunk of the first dimension
    (`par_nest`), code that must run once on tasklet 0 (`single`)."""

    def __init__(self, count: int, entry: ir.InsertionPoint, ctx_arg: ir.Value, accesses: AccessRecord):
        self.count, self.accesses, self._entry = count, accesses, entry
        self._ranges: dict = {}
        self.me: ir.Value | None = None    # this tasklet's id (an index), with several
        if count > 1:
            # `me()`, asked once per DPU by `__dpu_main`.
            with entry, ir.Location.unknown():
                self.me = tasklet_id(ctx_arg)

    def chunk(self, shape) -> int:
        return chunk(shape, self.count)

    def owner(self, shape) -> tuple:
        return owner(shape, self.count)

    def whole(self, shape) -> bool:
        """Whether the tasklets' chunks of the first dimension are all of one
        length (`chunk`), none cut at its end."""
        return self.chunk(shape) * self.count == shape[0]

    def my_range(self, shape):
        """(lo, hi) index bounds of this tasklet's chunk of the first dimension
        (without a clamp where the chunks are whole: a length LLVM can fold)."""
        key = (shape[0], self.chunk(shape))
        if key not in self._ranges:
            n, c = key
            with self._entry, ir.Location.unknown():
                exact = arith.IntegerOverflowFlags.nsw | arith.IntegerOverflowFlags.nuw
                lo = arith.muli(self.me, index_c(c), overflow_flags=exact)
                if self.whole(shape):
                    hi = arith.addi(lo, index_c(c), overflow_flags=exact)
                else:
                    lo = arith.minsi(lo, index_c(n))
                    hi = arith.minsi(arith.addi(lo, index_c(c)), index_c(n))
            self._ranges[key] = (lo, hi)
        return self._ranges[key]

    def loop_nest(self, shape, body, outer=(), unroll: bool = False) -> None:
        """Emit `body(outer + ivs)` inside a nest of `scf.for` loops over `shape`
        (`unroll`: the innermost one unrolled, when its length allows)."""
        if not shape:
            body(list(outer))
            return
        if unroll and len(shape) == 1 and shape[0] % UNROLL == 0:
            self.unrolled_loop(index_c(0), index_c(shape[0]), lambda iv: body([*outer, iv]))
            return
        loop = scf.ForOp(index_c(0), index_c(shape[0]), index_c(1))
        with ir.InsertionPoint(loop.body):
            self.loop_nest(shape[1:], body, [*outer, loop.induction_variable], unroll)
            scf.yield_([])

    def unrolled_loop(self, lo, hi, body, mine: bool = False) -> None:
        """`body(i)` for lo <= i < hi (hi - lo a multiple of UNROLL), UNROLL
        elements a step; their buffer accesses go through windows of the step
        (`core.UnrollStep`), at constant offsets (`mine`: the indices are in the
        current owner's chunk)."""
        loop = scf.ForOp(lo, hi, index_c(UNROLL))
        with ir.InsertionPoint(loop.body):
            iv = loop.induction_variable
            step = UnrollStep(iv, arith.constant(ir.IndexType.get(), 0).owner)
            for k in range(UNROLL):
                at = iv if k == 0 else arith.addi(iv, index_c(k))
                if mine:
                    self.accesses.mine(at)
                with self.accesses.unrolled_at(at, step, k):
                    body(at)
            scf.yield_([])

    def par_nest(self, shape, body, tile_shape=None, unroll: bool = False) -> None:
        """`loop_nest` shared out among the tasklets: each runs its chunk of the
        first dimension (chunks as for `tile_shape`, whose first dimension is
        the same: the rows of a tile are shared out as the tile's elements)."""
        if self.count == 1:
            self.loop_nest(shape, body, unroll=unroll)
            return
        if not shape:
            with self.single():
                body([])
            return
        part = tuple(tile_shape) if tile_shape is not None else tuple(shape)
        lo, hi = self.my_range(part)
        with self.accesses.divergent(self.owner(part)):
            if unroll and len(shape) == 1 and shape[0] % UNROLL == 0 and self.chunk(part) % UNROLL == 0:
                self.unrolled_loop(lo, hi, lambda iv: body([iv]), mine=True)
                return
            loop = scf.ForOp(lo, hi, index_c(1))
            with ir.InsertionPoint(loop.body):
                self.accesses.mine(loop.induction_variable)
                self.loop_nest(tuple(shape[1:]), body, [loop.induction_variable], unroll)
                scf.yield_([])

    @contextmanager
    def single(self):
        """Code run by tasklet 0 only."""
        if self.count == 1:
            yield
            return
        with self.accesses.divergent("one"):  # (a barrier it needs goes before the `if`)
            first = arith.cmpi(arith.CmpIPredicate.eq, self.me, index_c(0))
            op = scf.IfOp(first, [], has_else=False)
            with ir.InsertionPoint(op.then_block):
                yield
                scf.yield_([])


class Buffers:
    """The kernel's tile buffers and their element accesses. Every buffer is
    a view of the DPU's WRAM during the walk; `plan_memory`, the step after
    it, keeps some tiles in MRAM when they do not all fit (`spill`) and
    `finish` lays WRAM out. `load`/`store` state each access for barrier
    placement."""

    def __init__(self, wram: ir.Value, entry: ir.InsertionPoint, tasklets: Tasklets, sites: Sites,
                 ctx_arg: ir.Value):
        self._entry = entry
        self.tasklets = tasklets
        self.accesses = tasklets.accesses
        self.wram = WramLayout(wram, entry, tasklets.count, tasklets.me)
        self.spill = SpillSpace(tasklets, sites, ctx_arg, self.wram, self.at_entry)
        self._tile_count = 0               # tile buffers asked for so far (their keys)
        self.wram_only = 0                 # lowering an EDSL region call: its tiles stay in WRAM
        self.dots: list[DotNeed] = []      # the tl.dot ops lowered, for a spill plan
        self._reduction_cells = None       # (`reduction_cells`)

    @contextmanager
    def at_entry(self):
        """Build at the top of the kernel's entry block (values every op may use:
        buffers, addresses, this tasklet's ranges), with no location."""
        with self._entry, ir.Location.unknown():
            yield

    def load(self, buf, ivs, elem: ir.Type, who=None) -> ir.Value:
        """Element `ivs` of `buf` (`who`: the tasklet owning it, when not the code's)."""
        return load_elem(self.accesses, buf, ivs, elem, who)

    def store(self, v: ir.Value, buf, ivs, who=None) -> None:
        store_elem(self.accesses, v, buf, ivs, who)

    def row_address(self, buf: ir.Value, rivs, es: int, write: bool, at=None, who=None) -> ir.Value:
        """The WRAM address (i64) of row `rivs` of WRAM tile buffer `buf`
        (element rivs + [0]), for a DMA that writes (or reads) part of the row
        there: the access is stated for barrier placement, at first index `at`
        for a rank-1 buffer (`who`: its owner, when not the code's)."""
        self.accesses.note_buffer(buf, list(rivs) + ([at] if at is not None else []), write, who)
        shape = ir.MemRefType(buf.type).shape
        addr = arith.index_cast(i64(), memref.extract_aligned_pointer_as_index(buf))
        stride, off = shape[-1], None
        for d in range(len(shape) - 2, -1, -1):
            term = arith.muli(arith.index_cast(i64(), rivs[d]), c64(stride * es))
            off = term if off is None else arith.addi(off, term)
            stride *= shape[d]
        return addr if off is None else arith.addi(addr, off)

    def alloca(self, shape, elem: ir.Type, what: str, op=None):
        """A WRAM view for a `shape` x `elem` tile (laid out by `finish`; one
        the plan may keep in MRAM)."""
        key = self._tile_count
        self._tile_count += 1
        es = byte_size(elem)
        return self.wram.place(buffer_type(elem), WramBuffer(
            align_up(es * prod(shape)), what, user_location(op.location) if op is not None else None,
            key, not self.wram_only, 0, tuple(shape), es))

    def reduction_cells(self, count: int, elem: ir.Type) -> ir.Value:
        """`count` cells of `elem` (stored) of this tasklet's, for the partial
        results of one reduction (`reduce._groups`): every reduction of the
        kernel uses the same WRAM, storing and reading it within its op."""
        if self._reduction_cells is None:
            self._reduction_cells = self.wram.private(count * 8, "tt.reduce partial results")
        assert count * 8 <= ir.MemRefType(self._reduction_cells.type).shape[0], "cells asked for alike"
        return self.wram.view(self._reduction_cells, 0, [count], buffer_type(elem))

    def note_dot(self, need: DotNeed) -> int:
        """Record a tl.dot for the plan; its number (`SpillSpace.panels`)."""
        self.dots.append(need)
        return len(self.dots) - 1

    def plan_memory(self, name: str, limit: int, beside: list) -> None:
        """The step after the walk: when the buffers, with those `beside`
        them (the called functions' own: they stay), exceed `limit` bytes of
        WRAM, keep the tiles `spill.plan` picks in MRAM and rewrite their code
        (the placeholders on the other tiles erased either way)."""
        records = self.wram.records() + beside
        tiles = {r.key: (view, r) for view, r in self.wram.by_view.items() if r.key is not None}
        plan = (spill_plan(name, records, self.dots, limit, self.tasklets.count)
                if sum(r.nbytes for r in records) > limit else None)
        if plan is not None:
            self.wram.drop([tiles[k][0] for k in plan.tiles])
        self.spill.apply(plan, tiles)

    def tile_key(self, buf) -> int | None:
        """The plan key of a tile buffer (None: not one a plan can name)."""
        record = self.wram.by_view.get(buf)
        return record.key if record is not None else None

    def staging(self, nbytes: int) -> ir.Value:
        """This tasklet's WRAM staging buffer for DMA transfers (an i64 address)."""
        return self.wram.staging(nbytes)

    def finish(self, info: KernelInfo) -> None:
        """The step after barrier placement: lay WRAM out."""
        self.spill.erase_views()
        info.wram = self.wram.layout()
        info.spills = self.spill.records
        info.scratch_bytes = self.spill.bytes

    def materialize(self, t: Tile, what: str, op=None) -> Tile:
        """`t` as a buffer (a no-op when it already is one; in WRAM for an
        EDSL region)."""
        if t.buf is not None:
            record = self.wram.by_view.get(t.buf)
            if record is not None and self.wram_only:   # (an EDSL region reads it in WRAM)
                record.spillable = False
            return t
        buf = self.alloca(t.shape, t.elem, what, op)
        self.fill(buf, t)
        if self.wram_only:             # (an EDSL region's operand: complete before it runs)
            self.accesses.sync()
        # (closed forms along the rows stay true of the buffer's values)
        return Tile(t.shape, t.elem, buf=buf, row=t.row, lanes=t.lanes, accesses=self.accesses)

    def fill(self, buf, t: Tile, in_place: bool = False) -> None:
        """Store every element of `t` into `buf` (the window lines it reads
        end with the fill: it may run inside a loop of the op lowered).
        `in_place`: `t` reads `buf`, each element at the one it writes (a
        tile kept in MRAM is then updated through its window, not streamed)."""
        def nest():
            def body(ivs):
                store_elem(self.accesses, t.at(ivs), buf, ivs)
            self.tasklets.par_nest(t.shape, body, unroll=True)

        def emit():
            spilled = self.spill.of(buf)
            if spilled is not None:
                spilled.fill(t)
            else:
                nest()
        if in_place:
            with self.spill.scope():
                nest()
        else:
            self.spill.unit([buf], emit)


class Values:
    """The converted form of each TTIR value: a `Tile` or a scalar `ir.Value`."""

    # A lazy value used more than once is materialized when one element costs
    # more ops than this (recomputing a long chain at every use is slower than
    # one buffer).
    RECOMPUTE_LIMIT = 4

    def __init__(self, buffers: Buffers):
        self.buffers = buffers
        self._values: dict = {}
        self.uses: dict = {}

    def get(self, value: ir.Value):
        return self._values[value]

    def tile(self, value: ir.Value) -> Tile:
        t = self._values[value]
        assert isinstance(t, Tile), value
        return t

    def bind(self, value: ir.Value, new) -> None:
        """Bind a TTIR value to its converted form as it is (block arguments)."""
        self._values[value] = new

    def set(self, value: ir.Value, new, op=None) -> None:
        """Bind a TTIR value to its converted form (a lazy tile used more than
        once, whose elements cost much, as a buffer)."""
        if isinstance(new, Tile) and new.buf is None and new.cost > self.RECOMPUTE_LIMIT \
                and self.uses.get(value, 0) > 1:
            new = self.buffers.materialize(new, f"result of {op.name}" if op else "intermediate", op)
        if isinstance(new, Tile) and new.buf is not None:
            record = self.buffers.wram.by_view.get(new.buf)
            if record is not None:                 # (how much it is used: the spill order)
                record.uses += self.uses.get(value, 0)
        self._values[value] = new

    def count_uses(self, region_op) -> None:
        def walk(op):
            for operand in op.operands:
                self.uses[operand] = self.uses.get(operand, 0) + 1
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.operations:
                        walk(inner)
        walk(region_op)
