"""Small IR builders the memory lowerings share: i64 and index constants and
casts, 8-byte alignment of addresses, and a transfer cut into pieces that
one DMA may move."""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf

from ...target.dpu import DMA_ALIGN, DMA_MAX_BYTES


def i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def c64(v: int) -> ir.Value:
    """An i64 constant."""
    return arith.constant(i64(), v)


def index_c(v: int) -> ir.Value:
    """An index constant."""
    return arith.constant(ir.IndexType.get(), v)


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
