"""The conversion's shared machinery: tiles, the op dispatch table, loop nests.

A TTIR tensor value becomes a `Tile`: its shape and element type, and either a
WRAM buffer (`memref` allocated once at the kernel's entry, so loops never grow
the stack) or a *lazy* element function that emits the scalar ops computing
one element at given indices. Cheap elementwise chains (offsets, masks, pointer
arithmetic, `x + y`) stay lazy and are fused into the loop of the op that
consumes them; tile ops that need random access (reductions, scans, `dot`,
loop-carried values) read materialized buffers. A TTIR scalar stays an SSA
value; a `!tt.ptr<T>` becomes an `i64` MRAM address.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from mlir import ir
from mlir.dialects import arith, memref, scf

from ...errors import CompileError, SourceLoc
from ...lowering.pipeline import location_of

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
class Tile:
    """A tensor value: a WRAM buffer or a lazy element function over indices."""
    shape: tuple[int, ...]
    elem: ir.Type                          # converted element type
    buf: ir.Value | None = None            # memref<shape x elem> in WRAM
    fn: Callable | None = None             # fn(ivs: list[index Value]) -> Value
    cost: int = 0                          # ops one lazy element costs

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


def buffer_type(elem: ir.Type) -> ir.Type:
    """The element type of a WRAM buffer holding `elem` values (i1 is kept as i8)."""
    return ir.IntegerType.get_signless(8) if elem == _i1() else elem


def load_elem(buf: ir.Value, ivs, elem: ir.Type) -> ir.Value:
    v = memref.load(buf, list(ivs))
    return arith.trunci(elem, v) if v.type != elem else v


def store_elem(v: ir.Value, buf: ir.Value, ivs) -> None:
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
                 program_ids: list[ir.Value], num_programs: list[ir.Value], debug: bool):
        self.info = info
        self.entry = entry
        self.ctx_arg = ctx_arg
        self.program_ids = program_ids
        self.num_programs = num_programs
        self.debug = debug
        self.values: dict = {}
        self.uses: dict = {}
        self.staging_bytes = 0
        self._staging: ir.Value | None = None
        # Buffers go before this anchor, at the top of the entry block.
        with ir.InsertionPoint(entry), ir.Location.unknown():
            self._anchor = arith.constant(ir.IndexType.get(), 0).owner
        self._alloca_ip = ir.InsertionPoint(self._anchor)

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
            return memref.alloca(mt, [], [], alignment=8)

    def staging(self, nbytes: int) -> ir.Value:
        """The one WRAM staging buffer DMA transfers go through (as an i64 address)."""
        self.staging_bytes = max(self.staging_bytes, nbytes)
        if self._staging is None:
            with self._alloca_ip, ir.Location.unknown():
                # Placeholder size, patched in `finish` once every op is seen.
                mt = ir.MemRefType.get([8], ir.IntegerType.get_signless(8))
                self._staging_op = memref.alloca(mt, [], [], alignment=8).owner
                self._staging = self._staging_op.result
        ptr = memref.extract_aligned_pointer_as_index(self._staging)
        return arith.index_cast(ir.IntegerType.get_signless(64), ptr)

    def finish(self) -> None:
        """Give the staging buffer its final size and record it in the WRAM budget."""
        if self._staging is None:
            return
        nbytes = (self.staging_bytes + 7) // 8 * 8
        with ir.InsertionPoint(self._staging_op), ir.Location.unknown():
            mt = ir.MemRefType.get([nbytes], ir.IntegerType.get_signless(8))
            new = memref.alloca(mt, [], [], alignment=8)
        self._staging.replace_all_uses_with(new)
        self._staging_op.erase()
        self.info.wram.append(WramBuffer(nbytes, "DMA staging buffer", None))

    def materialize(self, t: Tile, what: str, op=None) -> Tile:
        """`t` as a WRAM buffer (a no-op when it already is one)."""
        if t.buf is not None:
            return t
        buf = self.alloca(t.shape, t.elem, what, op)
        self.fill(buf, t)
        return Tile(t.shape, t.elem, buf=buf)

    def fill(self, buf: ir.Value, t: Tile) -> None:
        """Store every element of `t` into `buf`."""
        def body(ivs):
            store_elem(t.at(ivs), buf, ivs)
        self.loop_nest(t.shape, body)

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
            try:
                fn(self, op.operation)
            except ValueError as err:       # e.g. an element type with no MRAM layout (fp8)
                raise self.error(op, f"operation '{name}' is not supported by the DPU backend: "
                                     f"{err}") from None


_FILE_LOC = re.compile(r'"(?P<file>[^"]+)":(?P<line>\d+):(?P<col>\d+)')


def user_location(loc) -> SourceLoc | None:
    """The kernel's line in an MLIR location: the first file position outside
    Triton's own library (a call site into `triton.language` names the caller)."""
    found = [SourceLoc(m["file"], int(m["line"]), max(int(m["col"]) - 1, 0))
             for m in _FILE_LOC.finditer(str(loc))]
    for sl in found:
        if "/triton/language/" not in sl.filename.replace("\\", "/"):
            return sl
    return found[0] if found else location_of(loc)


def _prod(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def prod(shape) -> int:
    return _prod(shape)
