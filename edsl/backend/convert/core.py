"""The conversion's shared machinery: tiles, the op dispatch table, loop nests.

A TTIR tensor value becomes a `Tile`: its shape and element type, and either a
WRAM buffer (a `memref.view` at a fixed offset of the DPU's WRAM, which the
kernel receives as a `memref<?xi8>`: shared by the tasklets of a DPU, laid
out once at compile time, so loops never grow the stack) or a *lazy* element
function that emits the scalar ops computing one element at given indices. Cheap elementwise chains (offsets, masks, pointer
arithmetic, `x + y`) stay lazy and are fused into the loop of the op that
consumes them; tile ops that need random access (reductions, scans, `dot`,
loop-carried values) read materialized buffers. A TTIR scalar stays an SSA
value; a `!tt.ptr<T>` becomes an `i64` MRAM address.

Tasklets. A kernel compiled for T > 1 tasklets is run by every tasklet of a
DPU, as a DPU program is; `me()` (the runtime's `edsl_dpu_me`) selects each
one's share. A tile loop nest is *partitioned*: its outermost loop runs over
the tasklet's chunk of the first dimension (`par_nest`; rank-1 chunks are a
multiple of 8 elements, so that chunks of a row never share an MRAM word).
Code that must run once (atomics, 1-D scans, prints, scalar stores) runs on
tasklet 0 (`single`). Scalars are computed by every tasklet alike (a scalar
reduction reads the whole buffer on each tasklet, in one fixed order), so
control flow stays uniform and every tasklet reaches every barrier.

Barriers (`edsl_dpu_barrier`) are placed from a record of the accesses since
the last barrier: every WRAM buffer element access goes through `load_elem` /
`store_elem`, which note the buffer and who touches it (the tasklet owning
the chunk when the first index is the partitioned loop's own index, else any
tasklet), and MRAM accesses are noted per op. An access that conflicts with a
recorded one by another tasklet (write/read, read/write, write/write) puts a
barrier before the op being lowered. Loops start and end their bodies with
no pending access (a barrier when needed) and each program instance ends
with one, so the next program's writes never race this one's reads.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

from mlir import ir
from mlir.dialects import arith, memref, scf

from ...dpu.limits import BARRIER

from ...errors import CompileError, SourceLoc
from ..ttir_text import user_location

# op name -> function(conv, op) lowering it; filled by the family modules.
LOWERINGS: dict[str, Callable] = {}


def lowers(*names: str):
    """Register a function as the lowering of the TTIR ops `names`."""
    def register(fn):
        for name in names:
            LOWERINGS[name] = fn
        return fn
    return register


# ---- types -----------------------------------------------------------------

def is_ptr(t: ir.Type) -> bool:
    return isinstance(t, ir.OpaqueType) and t.dialect_namespace == "tt" and t.data.startswith("ptr<")


def pointee(t: ir.Type) -> ir.Type:
    """`!tt.ptr<f32>` -> f32 (a pointer to pointers gives `!tt.ptr<..>`)."""
    return ir.Type.parse(ir.OpaqueType(t).data[4:-1])


def is_tensor(t: ir.Type) -> bool:
    return isinstance(t, ir.RankedTensorType)


def byte_size(t: ir.Type) -> int:
    """Bytes one element of `t` takes in MRAM (i1 is stored as one byte)."""
    if is_ptr(t):
        return 8
    if isinstance(t, ir.IntegerType):
        return max(1, t.width // 8)
    if isinstance(t, (ir.F16Type, ir.BF16Type)):
        return 2
    if isinstance(t, ir.F32Type):
        return 4
    if isinstance(t, ir.F64Type):
        return 8
    raise ValueError(f"no MRAM layout for {t}")


def scalar_type(t: ir.Type) -> ir.Type:
    """The converted type of a TTIR scalar (pointers become i64 addresses)."""
    return ir.IntegerType.get_signless(64) if is_ptr(t) else t


def is_float(t: ir.Type) -> bool:
    return isinstance(t, (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type))


# ---- tiles -----------------------------------------------------------------

@dataclass
class RowForm:
    """A tile along its last dimension, as a function of the other indices
    `rivs`: element(rivs + [j]) == base(rivs) + j * stride, in the element
    type's wrapping arithmetic (integers; stride 0: any type, one value per
    row). `valid(rivs)` (an i1, or None: always) says whether the form also
    holds exactly once the values are sign-extended (no lane wraps around)."""
    base: Callable
    stride: int
    const: int | None = None               # the value, for a constant stride-0 form
    valid: Callable | None = None


@dataclass
class LaneRange:
    """An i1 tile true exactly on lanes lo <= j < hi of each row (when
    `valid`): bounds(rivs) -> (lo, hi, valid or None), i64 values."""
    bounds: Callable


@dataclass
class Tile:
    """A tensor value: a WRAM buffer or a lazy element function over indices."""
    shape: tuple[int, ...]
    elem: ir.Type                          # converted element type
    buf: ir.Value | None = None            # memref<shape x elem> in WRAM
    fn: Callable | None = None             # fn(ivs: list[index Value]) -> Value
    cost: int = 0                          # ops one lazy element costs
    row: RowForm | None = None             # affine along the last dimension (lazy tiles)
    lanes: LaneRange | None = None         # a mask's active lanes, in closed form

    def at(self, ivs):
        if self.buf is not None:
            return load_elem(self.buf, list(ivs), self.elem)
        return self.fn(list(ivs))

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


def _i1() -> ir.Type:
    return ir.IntegerType.get_signless(1)


def const_int(v) -> int | None:
    """The value of an integer `arith.constant`, or None."""
    try:
        owner = v.owner
        if isinstance(owner, ir.Operation) and owner.name == "arith.constant":
            return ir.IntegerAttr(owner.attributes["value"]).value
        if hasattr(owner, "operation") and owner.operation.name == "arith.constant":
            return ir.IntegerAttr(owner.operation.attributes["value"]).value
    except (ValueError, TypeError, AttributeError):
        return None
    return None


def and_valid(*preds):
    """The conjunction of optional i1 values (None: true)."""
    out = None
    for p in preds:
        if p is None:
            continue
        out = p if out is None else arith.andi(out, p)
    return out


def buffer_type(elem: ir.Type) -> ir.Type:
    """The element type of a WRAM buffer holding `elem` values (i1 is kept as i8)."""
    return ir.IntegerType.get_signless(8) if elem == _i1() else elem


# The converter being run on this thread: buffer accesses report to it.
_ACTIVE = threading.local()


def _note(buf: ir.Value, ivs, write: bool) -> None:
    conv = getattr(_ACTIVE, "conv", None)
    if conv is not None and conv.tasklets > 1:
        conv.note_buffer(buf, list(ivs), write)


def load_elem(buf: ir.Value, ivs, elem: ir.Type) -> ir.Value:
    _note(buf, ivs, False)
    v = memref.load(buf, list(ivs))
    return arith.trunci(elem, v) if v.type != elem else v


def store_elem(v: ir.Value, buf: ir.Value, ivs) -> None:
    _note(buf, ivs, True)
    stored = ir.MemRefType(buf.type).element_type
    memref.store(arith.extui(stored, v) if v.type != stored else v, buf, list(ivs))


@dataclass
class WramBuffer:
    nbytes: int
    what: str
    loc: SourceLoc | None


@dataclass
class KernelInfo:
    """What the conversion learned about a kernel, for the driver and the report."""
    name: str = ""
    wram: list[WramBuffer] = field(default_factory=list)
    prints: list[str] = field(default_factory=list)
    asserts: list[tuple[str, str]] = field(default_factory=list)
    tasklets: int = 1
    barriers: int = 0                   # barrier sites in the converted kernel
    regions: bool = False               # calls EDSL functions (fl.call)
    # run-time check sites of those EDSL functions: [code, file, line, col]
    sites: list = field(default_factory=list)

    @property
    def wram_bytes(self) -> int:
        return sum(b.nbytes for b in self.wram)


class Converter:
    """Walks one TTIR function and emits its upstream-MLIR counterpart."""

    # A lazy value used more than once is materialized when one element costs
    # more ops than this (recomputing a long chain at every use is slower than
    # one buffer).
    RECOMPUTE_LIMIT = 4

    def __init__(self, info: KernelInfo, entry: ir.Block, ctx_arg: ir.Value,
                 program_ids: list[ir.Value], num_programs: list[ir.Value], debug: bool,
                 wram: ir.Value | None = None, tasklets: int = 1, module_body=None):
        self.info = info
        self.entry = entry
        self.ctx_arg = ctx_arg
        self.program_ids = program_ids
        self.num_programs = num_programs
        self.debug = debug
        self.wram = wram                   # memref<?xi8>: the DPU's WRAM (None: stack buffers)
        self.module_body = module_body
        self.tasklets = tasklets
        info.tasklets = tasklets
        self.values: dict = {}
        self.uses: dict = {}
        self.staging_bytes = 0
        self._staging: ir.Value | None = None
        self._wram_offset = 0
        # Buffers go before this anchor, at the top of the entry block.
        with ir.InsertionPoint(entry), ir.Location.unknown():
            self._anchor = arith.constant(ir.IndexType.get(), 0).owner
        self._alloca_ip = ir.InsertionPoint(self._anchor)
        # Tasklet state (see the module docstring).
        self.me: ir.Value | None = None    # index
        self._ranges: dict = {}
        self._div: list = []               # open divergent regions: their owner
        self._mine: list = []              # loop indices running over the owner's chunk
        self._ops: list = []               # (anchor op, access number, uniform?) open anchors
        self._anchors: list = []
        self._seq = 0                      # accesses recorded so far
        self._cycles: list = []            # [block, accesses logged, still logging?, regions]
        self._log_paused = False
        self._in_region = 0                # lowering an EDSL region call
        self._regions = 0                  # EDSL region calls lowered so far
        self._w: dict = {}                 # buffer -> (owner, serial) of the last write
        self._r: dict = {}                 # buffer -> [(owner, serial)] reads
        self._mram: list = []              # (write?, owner, serial)
        if tasklets > 1:
            # The tasklet's id: `me()`, asked once per DPU by `__dpu_main`.
            from mlir.dialects import llvm

            from .runtime_text import CTX_TID
            with self._alloca_ip, ir.Location.unknown():
                i64 = ir.IntegerType.get_signless(64)
                slot = llvm.getelementptr(llvm.PointerType.get(), ctx_arg, [], [CTX_TID], i64, 0)
                self.me = arith.index_cast(ir.IndexType.get(), llvm.load(i64, slot))

    # -- errors --------------------------------------------------------------
    def error(self, op, message: str) -> CompileError:
        return CompileError(message, user_location(op.location))

    # -- values --------------------------------------------------------------
    def get(self, value: ir.Value):
        return self.values[value]

    def tile(self, value: ir.Value) -> Tile:
        t = self.values[value]
        assert isinstance(t, Tile), value
        return t

    def set(self, value: ir.Value, new, op=None) -> None:
        """Bind a TTIR value to its converted form (a Tile or a scalar Value)."""
        if isinstance(new, Tile) and new.buf is None and new.cost > self.RECOMPUTE_LIMIT \
                and self.uses.get(value, 0) > 1:
            new = self.materialize(new, f"result of {op.name}" if op else "intermediate", op)
        self.values[value] = new

    def count_uses(self, region_op) -> None:
        def walk(op):
            for operand in op.operands:
                self.uses[operand] = self.uses.get(operand, 0) + 1
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.operations:
                        walk(inner)
        walk(region_op)

    # -- constants and index helpers -------------------------------------------
    def index(self, n: int) -> ir.Value:
        return arith.constant(ir.IndexType.get(), n)

    def const(self, t: ir.Type, v) -> ir.Value:
        if is_float(t):
            return arith.constant(t, float(v))
        return arith.constant(t, int(v))

    def i64(self, v) -> ir.Value:
        if isinstance(v, int):
            return arith.constant(ir.IntegerType.get_signless(64), v)
        return v

    def cast_int(self, v: ir.Value, t: ir.Type, signed: bool = True) -> ir.Value:
        """Integer (or index) `v` converted to integer (or index) type `t`."""
        src = v.type
        if src == t:
            return v
        if isinstance(src, ir.IndexType) or isinstance(t, ir.IndexType):
            return arith.index_cast(t, v)
        if src.width < t.width:
            return arith.extsi(t, v) if signed else arith.extui(t, v)
        return arith.trunci(t, v)

    # -- buffers ---------------------------------------------------------------
    def alloca(self, shape, elem: ir.Type, what: str, op=None) -> ir.Value:
        """A WRAM buffer, allocated once at the kernel's entry (never inside a loop)."""
        nbytes = byte_size(elem) * _prod(shape)
        nbytes = (nbytes + 7) // 8 * 8
        self.info.wram.append(WramBuffer(nbytes, what, user_location(op.location) if op is not None else None))
        with self._alloca_ip, ir.Location.unknown():
            mt = ir.MemRefType.get(list(shape), buffer_type(elem))
            if self.wram is None:
                return memref.alloca(mt, [], [], alignment=8)
            offset = self._wram_offset
            self._wram_offset += nbytes
            return memref.view(mt, self.wram, self.index(offset), [])

    def staging(self, nbytes: int) -> ir.Value:
        """This tasklet's WRAM staging buffer for DMA transfers (an i64 address);
        each tasklet has its own, after the shared buffers."""
        self.staging_bytes = max(self.staging_bytes, nbytes)
        if self._staging is None:
            i64 = ir.IntegerType.get_signless(64)
            with self._alloca_ip, ir.Location.unknown():
                if self.wram is None:
                    # Placeholder size, patched in `finish` once every op is seen.
                    mt = ir.MemRefType.get([8], ir.IntegerType.get_signless(8))
                    self._staging_op = memref.alloca(mt, [], [], alignment=8).owner
                    ptr = memref.extract_aligned_pointer_as_index(self._staging_op.result)
                    self._staging = arith.index_cast(i64, ptr)
                else:
                    # Offset and per-tasklet size: placeholders patched in `finish`.
                    base = arith.index_cast(i64, memref.extract_aligned_pointer_as_index(self.wram))
                    self._staging_off = arith.constant(i64, 0).owner
                    addr = arith.addi(base, self._staging_off.result)
                    if self.me is not None:
                        self._staging_size = arith.constant(i64, 0).owner
                        mine = arith.muli(arith.index_cast(i64, self.me), self._staging_size.result)
                        addr = arith.addi(addr, mine)
                    self._staging = addr
        return self._staging

    def finish(self) -> None:
        """Give the staging buffers their final size and record them in the WRAM
        budget (one per tasklet); drop the op anchors."""
        for anchor in self._anchors:
            anchor.erase()
        self._anchors = []
        if self._staging is None:
            return
        nbytes = (self.staging_bytes + 7) // 8 * 8
        if self.wram is None:
            with ir.InsertionPoint(self._staging_op), ir.Location.unknown():
                mt = ir.MemRefType.get([nbytes], ir.IntegerType.get_signless(8))
                new = memref.alloca(mt, [], [], alignment=8)
            self._staging_op.result.replace_all_uses_with(new)
            self._staging_op.erase()
            self.info.wram.append(WramBuffer(nbytes, "DMA staging buffer", None))
            return
        i64 = ir.IntegerType.get_signless(64)
        self._staging_off.attributes["value"] = ir.IntegerAttr.get(i64, self._wram_offset)
        if self.me is not None:
            self._staging_size.attributes["value"] = ir.IntegerAttr.get(i64, nbytes)
        what = "DMA staging buffer"
        if self.tasklets > 1:
            what += f"s ({self.tasklets} tasklets x {nbytes} bytes)"
        self.info.wram.append(WramBuffer(nbytes * self.tasklets, what, None))
        self._wram_offset += nbytes * self.tasklets

    def materialize(self, t: Tile, what: str, op=None) -> Tile:
        """`t` as a WRAM buffer (a no-op when it already is one)."""
        if t.buf is not None:
            return t
        buf = self.alloca(t.shape, t.elem, what, op)
        self.fill(buf, t)
        if self._in_region:
            self.sync()
        # (closed forms along the rows stay true of the buffer's values)
        return Tile(t.shape, t.elem, buf=buf, row=t.row, lanes=t.lanes)

    def fill(self, buf: ir.Value, t: Tile) -> None:
        """Store every element of `t` into `buf`."""
        def body(ivs):
            store_elem(t.at(ivs), buf, ivs)
        self.par_nest(t.shape, body)

    def loop_nest(self, shape, body) -> None:
        """Emit `body(ivs)` inside a nest of `scf.for` loops over `shape`."""
        def rec(dim, ivs):
            if dim == len(shape):
                body(ivs)
                return
            loop = scf.ForOp(self.index(0), self.index(shape[dim]), self.index(1))
            with ir.InsertionPoint(loop.body):
                rec(dim + 1, ivs + [loop.induction_variable])
                scf.yield_([])
        rec(0, [])

    # -- tasklets --------------------------------------------------------------
    def chunk(self, shape) -> int:
        """Elements of the first dimension of `shape` each tasklet owns (rank 1:
        a multiple of 8, so that no two tasklets share an MRAM word)."""
        n = -(-shape[0] // self.tasklets)
        return -(-n // 8) * 8 if len(shape) == 1 else n

    def owner(self, shape) -> tuple:
        return ("chunk", shape[0], self.chunk(shape))

    def my_range(self, shape):
        """(lo, hi) index bounds of this tasklet's chunk of the first dimension."""
        key = (shape[0], self.chunk(shape))
        if key not in self._ranges:
            n, c = key
            with self._alloca_ip, ir.Location.unknown():
                lo = arith.minsi(arith.muli(self.me, self.index(c)), self.index(n))
                hi = arith.minsi(arith.addi(lo, self.index(c)), self.index(n))
            self._ranges[key] = (lo, hi)
        return self._ranges[key]

    @contextmanager
    def divergent(self, owner):
        """Code run by some tasklets only (no barrier may be placed inside); a
        barrier it needs goes before it."""
        anchored = not self._div
        if anchored:
            self._open_anchor()
        self._div.append(owner)
        mine = len(self._mine)
        try:
            yield
        finally:
            self._div.pop()
            del self._mine[mine:]
            if anchored:
                self._ops.pop()

    def _open_anchor(self) -> None:
        """A place for a barrier, here (at uniform level)."""
        with ir.Location.unknown():
            anchor = arith.constant(ir.IndexType.get(), 0).owner
        self._anchors.append(anchor)
        self._ops.append((anchor, self._seq, not self._div))

    def mine(self, iv: ir.Value) -> None:
        """Declare loop index `iv` to run over the current owner's chunk."""
        self._mine.append(iv)

    def par_nest(self, shape, body, tile_shape=None) -> None:
        """`loop_nest` shared out among the tasklets: each runs its chunk of the
        first dimension (chunks as for `tile_shape`, whose first dimension is
        the same: the rows of a tile are shared out as the tile's elements)."""
        if self.tasklets == 1:
            self.loop_nest(shape, body)
            return
        if not shape:
            with self.single():
                body([])
            return
        part = tuple(tile_shape) if tile_shape is not None else tuple(shape)
        lo, hi = self.my_range(part)
        with self.divergent(self.owner(part)):
            loop = scf.ForOp(lo, hi, self.index(1))
            with ir.InsertionPoint(loop.body):
                self.mine(loop.induction_variable)

                def rec(dim, ivs):
                    if dim == len(shape):
                        body(ivs)
                        return
                    inner = scf.ForOp(self.index(0), self.index(shape[dim]), self.index(1))
                    with ir.InsertionPoint(inner.body):
                        rec(dim + 1, ivs + [inner.induction_variable])
                        scf.yield_([])
                rec(1, [loop.induction_variable])
                scf.yield_([])

    @contextmanager
    def single(self):
        """Code run by tasklet 0 only."""
        if self.tasklets == 1:
            yield
            return
        with self.divergent("one"):          # (a barrier it needs goes before the `if`)
            first = arith.cmpi(arith.CmpIPredicate.eq, self.me, self.index(0))
            op = scf.IfOp(first, [], has_else=False)
            with ir.InsertionPoint(op.then_block):
                yield
                scf.yield_([])

    def barrier(self) -> None:
        from ...inject.runtime_calls import runtime_call
        runtime_call(self.module_body, BARRIER, [])
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
        assert not self._div, "a barrier inside code some tasklets skip"
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
        if ivs and shape and any(ivs[0] == m for m in self._mine) and self.owner(shape) == top:
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
        raise AssertionError("a tasklet conflict inside one op's divergent code")

    def _drop_before(self, seq: int) -> None:
        self._w = {k: v for k, v in self._w.items() if v[1] > seq}
        self._r = {k: {o: x for o, x in v.items() if x > seq} for k, v in self._r.items()}
        self._r = {k: v for k, v in self._r.items() if v}
        self._mram = [x for x in self._mram if x[2] > seq]

    # -- the walk ------------------------------------------------------------
    def lower_block(self, block: ir.Block) -> None:
        for op in block.operations:
            self.lower_op(op)

    def lower_op(self, op) -> None:
        name = op.operation.name
        fn = LOWERINGS.get(name)
        if fn is None:
            if name.startswith(("arith.", "math.")):
                fn = LOWERINGS["<elementwise>"]
            else:
                raise self.error(op, f"operation '{name}' is not supported by the DPU backend")
        with op.location:
            if self.tasklets > 1:
                self._open_anchor()
            region = self.tasklets > 1 and name == "func.call"
            if region:
                # An EDSL region (fl.call) runs on every tasklet and touches
                # WRAM and MRAM unseen by the access record: it starts with
                # every tile op before it complete, reads operands that are
                # complete (`materialize` waits for them), and is followed by
                # the region's closing barrier, so nothing is left pending.
                self.sync_if_dirty()
                self._in_region += 1
            try:
                fn(self, op.operation)
            except ValueError as err:       # e.g. an element type with no MRAM layout (fp8)
                raise self.error(op, f"operation '{name}' is not supported by the DPU backend: "
                                     f"{err}") from None
            finally:
                if self.tasklets > 1:
                    self._ops.pop()
                if region:
                    self._in_region -= 1
                    self._regions += 1
                    self._w, self._r, self._mram = {}, {}, []


def _prod(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def prod(shape) -> int:
    return _prod(shape)
