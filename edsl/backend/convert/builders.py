"""Small IR builders the lowerings share: i64 and index constants and
casts, values as memory keeps them (`buffer_type`), 8-byte alignment of
addresses, and a transfer cut into pieces that one DMA may move."""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm, scf

from ...target.dpu import DMA_ALIGN, DMA_MAX_BYTES, Ctx


def i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def c64(v: int) -> ir.Value:
    """An i64 constant."""
    return arith.constant(i64(), v)


def index_c(v: int) -> ir.Value:
    """An index constant."""
    return arith.constant(ir.IndexType.get(), v)


def tasklet_id(ctx: ir.Value) -> ir.Value:
    """The tasklet id (an index) that the launch context `ctx` holds."""
    slot = llvm.getelementptr(llvm.PointerType.get(), ctx, [], [Ctx.TID], i64(), 0)
    return arith.index_cast(ir.IndexType.get(), llvm.load(i64(), slot))


def cast_int(v: ir.Value, t: ir.Type, signed: bool = True) -> ir.Value:
    """Integer (or index) `v` converted to integer (or index) type `t`."""
    src = v.type
    if src == t:
        return v
    if isinstance(src, ir.IndexType) or isinstance(t, ir.IndexType):
        return arith.index_cast(t, v)
    if src.width < t.width:
        return arith.extsi(t, v) if signed else arith.extui(t, v)
    return arith.trunci(t, v)


def buffer_type(elem: ir.Type) -> ir.Type:
    """The type an `elem` value is kept as in memory (WRAM buffers, MRAM
    words): i1 as i8, and the 8-bit floats, which LLVM has no type for, as i8."""
    if elem == ir.IntegerType.get_signless(1) or (isinstance(elem, ir.FloatType) and ir.FloatType(elem).width == 8):
        return ir.IntegerType.get_signless(8)
    return elem


def to_stored(v: ir.Value, stored: ir.Type) -> ir.Value:
    """`v` as its in-memory type (`buffer_type`)."""
    if v.type == stored:
        return v
    return arith.bitcast(stored, v) if isinstance(v.type, ir.FloatType) else arith.extui(stored, v)


def from_stored(v: ir.Value, elem: ir.Type) -> ir.Value:
    """An in-memory value (`buffer_type`) as an `elem` again (a byte is true when not 0)."""
    if v.type == elem:
        return v
    if isinstance(elem, ir.FloatType):
        return arith.bitcast(elem, v)
    return arith.cmpi(arith.CmpIPredicate.ne, v, arith.constant(v.type, 0))


def as_index(v: ir.Value) -> ir.Value:
    return arith.index_cast(ir.IndexType.get(), v)


def as_i64(v: ir.Value) -> ir.Value:
    return v if v.type == i64() else arith.index_cast(i64(), v)


def align_down(addr: ir.Value) -> ir.Value:
    """An i64 address rounded down to the DMA alignment."""
    return arith.andi(addr, c64(-DMA_ALIGN))


def align_up(addr: ir.Value) -> ir.Value:
    return align_down(arith.addi(addr, c64(DMA_ALIGN - 1)))


def in_dma_pieces(mram, wram, nbytes, move) -> None:
    """move(mram, wram, size) over `nbytes` (i64, a multiple of 8) in pieces
    of at most 2048 bytes, the most one transfer moves."""
    loop = scf.ForOp(c64(0), nbytes, c64(DMA_MAX_BYTES))
    with ir.InsertionPoint(loop.body):
        off = loop.induction_variable
        size = arith.minsi(c64(DMA_MAX_BYTES), arith.subi(nbytes, off))
        move(arith.addi(mram, off), arith.addi(wram, off), size)
        scf.yield_([])
