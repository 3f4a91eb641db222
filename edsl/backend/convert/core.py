"""The conversion's shared machinery: tiles, their element accesses, and the
lowering patterns by op name (the services the patterns work through are in
`services`, the walk that applies them in `converter`).

A TTIR tensor value becomes a `Tile`: its shape and element type, and either a
WRAM buffer (`wram.WramLayout`: a view of the DPU's WRAM, laid out once at
compile time, so loops never grow the stack) or a *lazy* element function
that emits the scalar ops computing one element at given indices. Cheap
elementwise chains (offsets, masks, pointer arithmetic, `x + y`) stay lazy
and are fused into the loop of the op that consumes them; tile ops that need
random access (reductions, scans, `dot`, loop-carried values) read
materialized buffers. A TTIR scalar stays an SSA value; a `!tt.ptr<T>`
becomes an `i64` MRAM address. A buffer is a WRAM view; when the WRAM
cannot hold every tile, the memory plan after the walk keeps some in the
DPU's MRAM and rewrites their accesses (`spill`): `load_elem` / `store_elem`
state each access to the op's scope (`SpillSpace.scope`), where the window
lines of a tile kept in MRAM end.

Tasklets. A kernel compiled for T > 1 tasklets is run by every tasklet of a
DPU, as a DPU program is; `me()` (the runtime's `edsl_dpu_me`) selects each
one's share. A tile loop nest is *partitioned*: its outermost loop runs over
the tasklet's chunk of the first dimension (`Tasklets.par_nest`; rank-1 chunks
are a multiple of 8 elements, so that chunks of a row never share an MRAM
word). Code that must run once (atomics, scans along the first axis, prints,
scalar stores) runs on tasklet 0 (`Tasklets.single`). A buffer's fill runs its
innermost loop `UNROLL` elements a step where the lengths allow, each access
at a constant offset of a window of the step (`Tasklets.unrolled_loop`).
Scalars are computed by every tasklet alike (a scalar reduction reads the
whole buffer on each tasklet, in one fixed order), so control flow stays
uniform and every tasklet reaches every barrier. Every buffer access is stated
in the converted code (`barriers.AccessRecord`), and a pass after the
conversion places the barriers (`barriers.place_barriers`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

from mlir import ir
from mlir.dialects import arith, memref

from ...target import dtypes
from ..ttir_reader import split_top
from .barriers import AccessRecord
from .builders import from_stored, to_stored
from .spill import SpillRecord
from .wram import WramBuffer

# Elements a step of an unrolled tile loop handles (`services.Tasklets.unrolled_loop`).
UNROLL = 4


class Lowering:
    """A lowering pattern in xDSL's shape: `match_and_rewrite(op, rewriter)`
    emits the converted form of a TTIR op named in `names` through the
    rewriter's services (`converter.Converter`: `sites`, `tasklets`,
    `buffers`, `values`)."""

    def __init__(self, names: tuple[str, ...], rewrite: Callable):
        self.names, self._rewrite = names, rewrite

    def match_and_rewrite(self, op, rewriter) -> None:
        self._rewrite(rewriter, op)

    def __repr__(self) -> str:
        return f"Lowering({', '.join(self.names)}: {self._rewrite.__module__}.{self._rewrite.__name__})"


# op name -> its lowering pattern; filled by the family modules.
LOWERINGS: dict[str, Lowering] = {}


def lowers(*names: str):
    """Register `fn(rewriter, op)` as the lowering pattern of the TTIR ops `names`."""
    def register(fn):
        pattern = Lowering(names, fn)
        for name in names:
            LOWERINGS[name] = pattern
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


class UnrollStep:
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


def _access(accesses: AccessRecord, buf, ivs):
    """(memref, indices) an element access of WRAM view `buf` at `ivs` goes
    through: a window of an unrolled loop's step at a constant offset, or `buf`."""
    hit = accesses.unrolled.get(ivs[-1]) if ivs else None
    if hit is not None:
        step, k = hit
        window = step.window(buf, ivs[:-1])
        if window is not None:
            return window, [arith.constant(ir.IndexType.get(), k)]
    return buf, ivs


def _element(accesses: AccessRecord, buf, ivs, write: bool):
    """(memref, indices) of an element access of buffer `buf` at `ivs`
    (`_access`'s), the access stated to the scope of the tiles that may be
    kept in MRAM and to a recording (`AccessRecord`)."""
    if accesses.record is not None:
        accesses.record.append((buf, list(ivs), write))
    if accesses.spill is not None:
        accesses.spill.touch(buf, write)
    return _access(accesses, buf, list(ivs))


def load_elem(accesses: AccessRecord, buf, ivs, elem: ir.Type, who=None) -> ir.Value:
    """Element `ivs` of buffer `buf` (the read recorded in `accesses`; `who`:
    the tasklet owning the element, when not the code's)."""
    at = _element(accesses, buf, ivs, False)
    accesses.note_buffer(buf, list(ivs), False, who)
    return from_stored(memref.load(*at), elem)


def store_elem(accesses: AccessRecord, v: ir.Value, buf, ivs, who=None) -> None:
    at = _element(accesses, buf, ivs, True)
    accesses.note_buffer(buf, list(ivs), True, who)
    memref.store(to_stored(v, ir.MemRefType(buf.type).element_type), *at)


@dataclass(frozen=True)
class CalledC:
    """A UPMEM C function a kernel calls, compiled in its slot (its index in
    `KernelInfo.c_functions`, or the slot of an earlier function of the same
    source, `shares`) and linked into the kernel's program."""
    identity: str
    compiled: object                    # codegen.upmem_c.CompiledC
    source: object                      # codegen.clang.Source: its text, file, macros
    loc: object                         # base.errors.SourceLoc of its first call
    shares: bool = False                # its module is an earlier function's (linked with it)

    @property
    def defines(self) -> tuple:
        """Its source's macros, (name, value)."""
        return self.source.defines

    def files(self) -> tuple:
        """(name, text) of its source and the files that includes, each named
        relative to the source's folder (an SDK project's copy of them)."""
        folder = os.path.dirname(self.compiled.texts[0][0])
        return tuple((os.path.relpath(path, folder), text) for path, text in self.compiled.texts)


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
    # (file "" here and in `asserts`: the kernel's own file, see `services.Sites.file_name`)
    sites: list = field(default_factory=list)
    # accesses whose pointer was loaded from memory: [site code, where the load is]
    pointer_loads: list = field(default_factory=list)
    stored: list | None = None          # pointer parameters stores may go through (None: unknown)
    spills: list[SpillRecord] = field(default_factory=list)   # tiles kept in MRAM
    scratch_bytes: int = 0              # the DPU's MRAM scratch they take
    c_functions: list[CalledC] = field(default_factory=list)   # in their slots (c_calls)
    # the WRAM buffers of the EDSL functions it calls (edsl.wram_alloc: globals of the
    # program, once for each function however often called), bytes by placeholder
    edsl_buffers: dict = field(default_factory=dict)

    @property
    def wram_bytes(self) -> int:
        return sum(b.nbytes for b in self.wram)

    @property
    def c_variable_bytes(self) -> int:
        """The WRAM its C functions' variables take, beside its buffers (not those in MRAM)."""
        from ...target.dpu import align_up
        return sum(align_up(c.compiled.wram_variable_bytes) for c in self.c_functions if not c.shares)

    @property
    def edsl_buffer_bytes(self) -> int:
        return sum(self.edsl_buffers.values())

    def functions_wram(self) -> list[WramBuffer]:
        """The WRAM its called functions take of their own, as buffers that
        stay in WRAM beside the kernel's."""
        own = ((self.c_variable_bytes, "C functions' variables"),
               (self.edsl_buffer_bytes, "EDSL functions' wram_alloc buffers"))
        return [WramBuffer(n, what, None) for n, what in own if n]
