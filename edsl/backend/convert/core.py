"""The conversion's shared machinery: tiles, the op dispatch table, loop nests.

A TTIR tensor value becomes a `Tile`: its shape and element type, and either a
WRAM buffer (`wram.WramLayout`: a view of the DPU's WRAM, laid out once at
compile time, so loops never grow the stack) or a *lazy* element function
that emits the scalar ops computing one element at given indices. Cheap
elementwise chains (offsets, masks, pointer arithmetic, `x + y`) stay lazy
and are fused into the loop of the op that consumes them; tile ops that need
random access (reductions, scans, `dot`, loop-carried values) read
materialized buffers. A TTIR scalar stays an SSA value; a `!tt.ptr<T>`
becomes an `i64` MRAM address. A buffer is a WRAM view, or a tile kept in
the DPU's MRAM when the WRAM cannot hold every tile (`spill`: the
conversion is then run again with the plan of which tile buffers spill);
`load_elem` / `store_elem` reach either, and each op's window lines of
spilled tiles end with the op (`SpillSpace.scope`).

Tasklets. A kernel compiled for T > 1 tasklets is run by every tasklet of a
DPU, as a DPU program is; `me()` (the runtime's `edsl_dpu_me`) selects each
one's share. A tile loop nest is *partitioned*: its outermost loop runs over
the tasklet's chunk of the first dimension (`par_nest`; rank-1 chunks are a
multiple of 8 elements, so that chunks of a row never share an MRAM word).
Code that must run once (atomics, scans along the first axis, prints, scalar
stores) runs on tasklet 0 (`single`). A buffer's fill runs its innermost loop
`UNROLL` elements a step where the lengths allow, each access at a constant
offset of a window of the step (`unrolled_loop`). Scalars are computed by every tasklet
alike (a scalar reduction reads the whole buffer on each tasklet, in one
fixed order), so control flow stays uniform and every tasklet reaches every
barrier. Every buffer access is stated in the converted code (`barriers.AccessRecord`),
and a pass after the conversion places the barriers (`barriers.place_barriers`).
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from math import prod
from typing import Callable

from mlir import ir
from mlir.dialects import arith, func, memref, scf

from ...target import dtypes
from ...base.errors import CompileError
from ..ttir_reader import split_top, user_location
from .barriers import AccessRecord, chunk, owner
from .spill import DotNeed, SpillBuffer, SpillPlan, SpillRecord, SpillSpace
from .wram import WramBuffer, WramLayout

# Elements a step of an unrolled tile loop handles (`Converter.unrolled_loop`).
UNROLL = 4

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
    """`!tt.ptr<f32>` -> f32 (a pointer to pointers gives `!tt.ptr<..>`; a
    qualifier after the pointee, as `tl.const`'s `"constant"`, is dropped)."""
    return ir.Type.parse(split_top(ir.OpaqueType(t).data[4:-1])[0])


def is_tensor(t: ir.Type) -> bool:
    return isinstance(t, ir.RankedTensorType)


def byte_size(t: ir.Type) -> int:
    """Bytes one element of `t` takes in MRAM (i1 is stored as one byte)."""
    if is_ptr(t):
        return 8
    s = dtypes.by_mlir(str(t))
    if s is None:
        raise ValueError(f"no MRAM layout for {t}")
    return s.nbytes


def scalar_type(t: ir.Type) -> ir.Type:
    """The converted type of a TTIR scalar (pointers become i64 addresses)."""
    return ir.IntegerType.get_signless(64) if is_ptr(t) else t


def is_float(t: ir.Type) -> bool:
    return isinstance(t, ir.FloatType)


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
    accesses: AccessRecord | None = None   # records the accesses of `buf`

    def __post_init__(self):
        assert self.buf is None or self.accesses is not None, "a buffer tile without its record"

    def at(self, ivs):
        if self.buf is not None:
            return load_elem(self.accesses, self.buf, list(ivs), self.elem)
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
    """The type an `elem` value is kept as in memory (WRAM buffers, MRAM
    words): i1 as i8, and the 8-bit floats, which LLVM has no type for, as i8."""
    if elem == _i1() or (isinstance(elem, ir.FloatType) and ir.FloatType(elem).width == 8):
        return ir.IntegerType.get_signless(8)
    return elem


def to_stored(v: ir.Value, stored: ir.Type) -> ir.Value:
    """`v` as its in-memory type (`buffer_type`)."""
    if v.type == stored:
        return v
    return arith.bitcast(stored, v) if is_float(v.type) else arith.extui(stored, v)


def from_stored(v: ir.Value, elem: ir.Type) -> ir.Value:
    """An in-memory value (`buffer_type`) as an `elem` again (a byte is true when not 0)."""
    if v.type == elem:
        return v
    if is_float(elem):
        return arith.bitcast(elem, v)
    return arith.cmpi(arith.CmpIPredicate.ne, v, arith.constant(v.type, 0))


def in_wram(buf) -> bool:
    """Whether a tile buffer is a WRAM view (not a tile kept in MRAM)."""
    return isinstance(buf, ir.Value)


class _Emitting(threading.local):
    """What element accesses consult while a conversion emits them, one per
    thread (Triton may compile kernels on several threads at once): the
    unrolled loops (`Converter.unrolled_loop`: an index value of one of their
    elements -> its step's `_Step` and offset in the step) and, when a list,
    where `recording` keeps each element access (buffer, indices, write?)."""

    def __init__(self):
        self.unrolled: dict = {}
        self.record: list | None = None


_EMITTING = _Emitting()


@contextmanager
def recording(events: list):
    """Record the element accesses of buffers made meanwhile into `events`."""
    saved, _EMITTING.record = _EMITTING.record, events
    try:
        yield
    finally:
        _EMITTING.record = saved


class _Step:
    """One step of an unrolled loop: its first index, and the windows of the
    buffers it accesses (views of `UNROLL` elements at that index, made
    before `anchor`, the start of the step's code)."""

    def __init__(self, iv: ir.Value, anchor):
        self.iv, self.anchor, self.windows = iv, anchor, {}

    def window(self, buf: ir.Value, outer: list):
        """The window of `buf` at `outer` + [iv] (None: not one it can make)."""
        mt = ir.MemRefType(buf.type)
        identity = (isinstance(mt.layout, ir.AffineMapAttr)
                    and ir.AffineMapAttr(mt.layout).value == ir.AffineMap.get_identity(mt.rank))
        if not (mt.has_static_shape and identity):
            return None
        keys = []
        for v in outer:
            c = const_int(v)
            if c is None and not _encloses(v, self.anchor):
                return None
            keys.append(c if c is not None else v)
        key = (buf, tuple(keys))
        if key not in self.windows:
            with ir.InsertionPoint(self.anchor):
                index = ir.IndexType.get()
                offset, stride = self.iv, 1
                for k, d in zip(reversed(keys), reversed(mt.shape[1:])):
                    stride *= d
                    at = arith.constant(index, k * stride) if isinstance(k, int) else \
                        arith.muli(k, arith.constant(index, stride))
                    offset = arith.addi(offset, at)
                dyn = ir.ShapedType.get_dynamic_stride_or_offset()
                wt = ir.MemRefType.get([UNROLL], mt.element_type, layout=ir.StridedLayoutAttr.get(dyn, [1]),
                                       memory_space=mt.memory_space)
                self.windows[key] = memref.reinterpret_cast(wt, buf, [offset], [], [], [dyn], [UNROLL], [1])
        return self.windows[key]


def _encloses(v: ir.Value, op) -> bool:
    """Whether `v` is an argument of a block that holds `op` (or an outer one)."""
    owner = v.owner
    if not isinstance(owner, ir.Block):
        return False
    block = op.operation.block
    while block is not None:
        if block == owner:
            return True
        parent = block.owner
        block = parent.operation.block if parent is not None and parent.operation.parent is not None else None
    return False


def _access(buf, ivs):
    """(memref, indices) an element access of WRAM view `buf` at `ivs` goes
    through: a window of an unrolled loop's step at a constant offset, or `buf`."""
    hit = _EMITTING.unrolled.get(ivs[-1]) if ivs else None
    if hit is not None:
        step, k = hit
        window = step.window(buf, ivs[:-1])
        if window is not None:
            return window, [arith.constant(ir.IndexType.get(), k)]
    return buf, ivs


def load_elem(accesses: AccessRecord, buf, ivs, elem: ir.Type, who=None) -> ir.Value:
    """Element `ivs` of buffer `buf` (the read recorded in `accesses`; `who`:
    the tasklet owning the element, when not the code's, for a WRAM view)."""
    if _EMITTING.record is not None:
        _EMITTING.record.append((buf, list(ivs), False))
    if isinstance(buf, SpillBuffer):
        assert who is None
        return from_stored(buf.load(accesses, ivs), elem)
    accesses.note_buffer(buf, list(ivs), False, who)
    return from_stored(memref.load(*_access(buf, list(ivs))), elem)


def store_elem(accesses: AccessRecord, v: ir.Value, buf, ivs, who=None) -> None:
    if _EMITTING.record is not None:
        _EMITTING.record.append((buf, list(ivs), True))
    if isinstance(buf, SpillBuffer):
        assert who is None
        buf.store(accesses, to_stored(v, buf.stored), ivs)
        return
    accesses.note_buffer(buf, list(ivs), True, who)
    memref.store(to_stored(v, ir.MemRefType(buf.type).element_type), *_access(buf, list(ivs)))


@dataclass
class KernelInfo:
    """What the conversion learned about a kernel, for the driver and the report."""
    name: str = ""
    wram: list[WramBuffer] = field(default_factory=list)
    prints: list[str] = field(default_factory=list)
    asserts: list[tuple[str, str]] = field(default_factory=list)     # (message, "file:line")
    tasklets: int = 1
    barriers: int = 0                   # barrier sites in the converted kernel
    regions: bool = False               # calls EDSL functions (fl.call)
    waits: bool = False                 # uses an atomic's old value (its programs may wait on others)
    # run-time check sites of the kernel and of those EDSL functions: [code, file, line, col]
    # (file "" here and in `asserts`: the kernel's own file, see `Converter.file_name`)
    sites: list = field(default_factory=list)
    # accesses whose pointer was loaded from memory: [site code, where the load is]
    pointer_loads: list = field(default_factory=list)
    stored: list | None = None          # pointer parameters stores may go through (None: unknown)
    spills: list[SpillRecord] = field(default_factory=list)   # tiles kept in MRAM
    scratch_bytes: int = 0              # the DPU's MRAM scratch they take

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
                 wram: ir.Value, tasklets: int = 1, module_body=None, plan: SpillPlan | None = None):
        self.info = info
        self.entry = entry
        self.ctx_arg = ctx_arg
        self.program_ids = program_ids
        self.num_programs = num_programs
        self.debug = debug
        self.module_body = module_body
        self.tasklets = tasklets
        info.tasklets = tasklets
        self.values: dict = {}
        self.uses: dict = {}
        self.callees: dict = {}            # name -> a function the kernel calls (lowered in place)
        self.in_place = True               # may update a carried tile in place (control.copy_into_carries)
        here = user_location(entry.owner.location)     # (the new function has the kernel's location)
        self.kernel_file = here.filename if here is not None else None
        self.calling: list = []            # the callees being lowered, outermost first
        # Buffers go before this anchor, at the top of the entry block.
        with ir.InsertionPoint(entry), ir.Location.unknown():
            self._anchor = arith.constant(ir.IndexType.get(), 0).owner
        self._alloca_ip = ir.InsertionPoint(self._anchor)
        # Tasklet state (see the module docstring).
        self.me: ir.Value | None = None    # index
        self._ranges: dict = {}
        self.accesses = AccessRecord(tasklets)
        self._op_location = None           # of the op being lowered
        self._site_codes: set[int] = set()
        self._declared: set[str] = set()   # functions of the C library declared in the module
        if tasklets > 1:
            # The tasklet's id: `me()`, asked once per DPU by `__dpu_main`.
            from mlir.dialects import llvm

            from ...target.dpu import Ctx
            with self._alloca_ip, ir.Location.unknown():
                i64 = ir.IntegerType.get_signless(64)
                slot = llvm.getelementptr(llvm.PointerType.get(), ctx_arg, [], [Ctx.TID], i64, 0)
                self.me = arith.index_cast(ir.IndexType.get(), llvm.load(i64, slot))
        self.wram = WramLayout(wram, self._alloca_ip, tasklets, self.me)
        self.spill = SpillSpace(self, plan)
        self._tile_keys = 0                # tile buffers asked for so far (their plan keys)
        self._wram_only = 0                # lowering an EDSL region call: its tiles stay in WRAM
        self.dots: list[DotNeed] = []      # the tl.dot ops lowered, for a spill plan

    @contextmanager
    def at_entry(self):
        """Build at the top of the kernel's entry block (values every op may use:
        buffers, addresses, this tasklet's ranges), with no location."""
        with self._alloca_ip, ir.Location.unknown():
            yield

    def declare(self, name: str, args: list, results: list) -> str:
        """`name`, a function of the C library or libm, declared once in the
        converted module (a program may call those and no others)."""
        if name not in self._declared:
            with ir.InsertionPoint(self.module_body), ir.Location.unknown():
                func.FuncOp(name, ir.FunctionType.get(args, results), visibility="private")
            self._declared.add(name)
        return name

    # -- errors --------------------------------------------------------------
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
        loc = user_location(self._op_location) if self._op_location is not None else None
        code = 0
        if loc is not None:
            code = loc.site
            if code not in self._site_codes:
                self._site_codes.add(code)
                self.info.sites.append([code, self.file_name(loc.filename), loc.lineno, loc.col])
        return arith.constant(ir.IntegerType.get_signless(64), code)

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
        if isinstance(new, Tile) and new.buf is not None and in_wram(new.buf):
            record = self.wram.by_view.get(new.buf)
            if record is not None:                 # (how much it is used: the spill order)
                record.uses += self.uses.get(value, 0)
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
    def alloca(self, shape, elem: ir.Type, what: str, op=None):
        """A buffer for a `shape` x `elem` tile: a WRAM view (laid out by
        `finish`), or a tile kept in MRAM when the spill plan says so."""
        key = self._tile_keys
        self._tile_keys += 1
        es = byte_size(elem)
        loc = user_location(op.location) if op is not None else None
        if self.spill.spills(key) and not self._wram_only:
            return self.spill.buffer(key, shape, buffer_type(elem), es, what, loc)
        return self.wram.buffer(shape, buffer_type(elem), es * prod(shape), what, loc, key=key,
                                spillable=not self._wram_only, es=es)

    def dot_panels(self, need: DotNeed):
        """Record a tl.dot for spill plans; its `spill.Panels` when the plan
        keeps an operand or its result in MRAM (None: it runs unblocked)."""
        number = len(self.dots)
        self.dots.append(need)
        panels = self.spill.plan.dots[number] if self.spill.plan is not None else None
        assert panels is not None or not any(self.spill.spills(k) for k in (need.a, need.b, need.out)
                                             if k is not None), "a spilled tl.dot without panels"
        return panels

    def tile_key(self, buf) -> int | None:
        """The plan key of a tile buffer (None: not one a plan can name)."""
        if isinstance(buf, SpillBuffer):
            return buf.key
        record = self.wram.by_view.get(buf)
        return record.key if record is not None else None

    def staging(self, nbytes: int) -> ir.Value:
        """This tasklet's WRAM staging buffer for DMA transfers (an i64 address)."""
        return self.wram.staging(nbytes)

    def finish(self) -> None:
        """The step after the walk: lay WRAM out."""
        self.info.wram = self.wram.layout()
        self.info.spills = self.spill.records
        self.info.scratch_bytes = self.spill.bytes

    def materialize(self, t: Tile, what: str, op=None) -> Tile:
        """`t` as a buffer (a no-op when it already is one; in WRAM for an
        EDSL region)."""
        if t.buf is not None and in_wram(t.buf) and self._wram_only:
            record = self.wram.by_view.get(t.buf)
            if record is not None:         # (kept in MRAM, it would need a WRAM copy anyway)
                record.spillable = False
        if t.buf is not None and (in_wram(t.buf) or not self._wram_only):
            return t
        if t.buf is not None:          # a spilled tile's WRAM copy (not a tile a plan names)
            buf = self.wram.buffer(t.shape, buffer_type(t.elem), byte_size(t.elem) * prod(t.shape), what,
                                   user_location(op.location) if op is not None else None)
        else:
            buf = self.alloca(t.shape, t.elem, what, op)
        self.fill(buf, t)
        if self._wram_only:            # (an EDSL region's operand: complete before it runs)
            self.accesses.sync()
        # (closed forms along the rows stay true of the buffer's values)
        return Tile(t.shape, t.elem, buf=buf, row=t.row, lanes=t.lanes, accesses=self.accesses)

    def fill(self, buf, t: Tile) -> None:
        """Store every element of `t` into `buf` (the window lines it reads
        end with the fill: it may run inside a loop of the op lowered)."""
        with self.spill.scope():
            if isinstance(buf, SpillBuffer):
                buf.fill(t)
                return

            def body(ivs):
                store_elem(self.accesses, t.at(ivs), buf, ivs)
            self.par_nest(t.shape, body, unroll=True)

    def loop_nest(self, shape, body, outer=(), unroll: bool = False) -> None:
        """Emit `body(outer + ivs)` inside a nest of `scf.for` loops over `shape`
        (`unroll`: the innermost one unrolled, when its length allows)."""
        if not shape:
            body(list(outer))
            return
        if unroll and len(shape) == 1 and shape[0] % UNROLL == 0:
            self.unrolled_loop(self.index(0), self.index(shape[0]), lambda iv: body([*outer, iv]))
            return
        loop = scf.ForOp(self.index(0), self.index(shape[0]), self.index(1))
        with ir.InsertionPoint(loop.body):
            self.loop_nest(shape[1:], body, [*outer, loop.induction_variable], unroll)
            scf.yield_([])

    def unrolled_loop(self, lo, hi, body, mine: bool = False) -> None:
        """`body(i)` for lo <= i < hi (hi - lo a multiple of UNROLL), UNROLL
        elements a step; their buffer accesses go through windows of the step
        (`_Step`), at constant offsets (`mine`: the indices are in the
        current owner's chunk)."""
        loop = scf.ForOp(lo, hi, self.index(UNROLL))
        with ir.InsertionPoint(loop.body):
            iv = loop.induction_variable
            step = _Step(iv, arith.constant(ir.IndexType.get(), 0).owner)
            for k in range(UNROLL):
                at = iv if k == 0 else arith.addi(iv, self.index(k))
                if mine:
                    self.accesses.mine(at)
                _EMITTING.unrolled[at] = (step, k)
                try:
                    body(at)
                finally:
                    del _EMITTING.unrolled[at]
            scf.yield_([])

    # -- tasklets --------------------------------------------------------------
    def chunk(self, shape) -> int:
        return chunk(shape, self.tasklets)

    def owner(self, shape) -> tuple:
        return owner(shape, self.tasklets)

    def my_range(self, shape):
        """(lo, hi) index bounds of this tasklet's chunk of the first dimension."""
        key = (shape[0], self.chunk(shape))
        if key not in self._ranges:
            n, c = key
            with self.at_entry():
                lo = arith.minsi(arith.muli(self.me, self.index(c)), self.index(n))
                hi = arith.minsi(arith.addi(lo, self.index(c)), self.index(n))
            self._ranges[key] = (lo, hi)
        return self._ranges[key]

    def par_nest(self, shape, body, tile_shape=None, unroll: bool = False) -> None:
        """`loop_nest` shared out among the tasklets: each runs its chunk of the
        first dimension (chunks as for `tile_shape`, whose first dimension is
        the same: the rows of a tile are shared out as the tile's elements)."""
        if self.tasklets == 1:
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
            loop = scf.ForOp(lo, hi, self.index(1))
            with ir.InsertionPoint(loop.body):
                self.accesses.mine(loop.induction_variable)
                self.loop_nest(tuple(shape[1:]), body, [loop.induction_variable], unroll)
                scf.yield_([])

    @contextmanager
    def single(self):
        """Code run by tasklet 0 only."""
        if self.tasklets == 1:
            yield
            return
        with self.accesses.divergent("one"):  # (a barrier it needs goes before the `if`)
            first = arith.cmpi(arith.CmpIPredicate.eq, self.me, self.index(0))
            op = scf.IfOp(first, [], has_else=False)
            with ir.InsertionPoint(op.then_block):
                yield
                scf.yield_([])

    # -- the walk ------------------------------------------------------------
    def lower_block(self, block: ir.Block) -> None:
        for op in block.operations:
            self.lower_op(op)

    def is_region_call(self, op) -> bool:
        """A call of an EDSL function (fl.call's region), not of a Triton
        function the kernel calls (lowered in place)."""
        return (op.operation.name == "func.call"
                and ir.FlatSymbolRefAttr(op.attributes["callee"]).value not in self.callees)

    def lower_op(self, op) -> None:
        name = op.operation.name
        fn = LOWERINGS.get(name)
        if fn is None:
            if name.startswith(("arith.", "math.")):
                fn = LOWERINGS["<elementwise>"]
            else:
                raise self.error(op, f"operation '{name}' is not supported by the DPU backend")
        self._op_location = op.location
        region = self.is_region_call(op)
        self._wram_only += region
        with op.location, self.accesses.op(region=region), self.spill.scope():
            try:
                fn(self, op.operation)
            except ValueError as err:       # e.g. an element type with no MRAM layout (fp8)
                raise self.error(op, f"operation '{name}' is not supported by the DPU backend: "
                                     f"{err}") from None
            finally:
                self._wram_only -= region
