"""The rows of a tile load or store: facts about an access, not the access.

A pointer tile is accessed row by row (its last dimension), in row segments
of at most one DMA transfer of lanes (`RowSegment`, `segments`, `seg_chunk`).
Of a segment this module works out where its active lanes lie and whether
their MRAM addresses are consecutive (`active_span`, `contiguity`: a per-lane
scan), or, when the row's addresses are `base + j * size` and its mask a
range of lanes (the `RowForm` / `LaneRange` the shape and elementwise
lowerings derive), the same in closed form with its run-time check
(`closed_form`); then the 8-byte aligned span the lanes cover (`span`,
`bytes_of`), and whether a store has segments that are not whole 8-byte
words (`needs_rest`).

`memory` emits the loads, stores and DMA transfers from these facts; kept
apart so that what an access is can be read (and changed) without the code
that performs it. Nothing here moves data to or from MRAM.
"""
from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, scf

from ...target.dpu import DMA_MAX_BYTES

from .core import Tile, and_valid
from .builders import align_down, align_up, c64, i64, index_c


def true() -> ir.Value:
    """An i1 true."""
    return arith.constant(ir.IntegerType.get_signless(1), 1)


def _for(lo, hi, body, inits=()):
    """scf.for over index [lo, hi) calling body(iv, *iter_args) -> yielded values."""
    one = arith.constant(ir.IndexType.get(), 1)
    loop = scf.ForOp(lo, hi, one, list(inits))
    with ir.InsertionPoint(loop.body):
        out = body(loop.induction_variable, *loop.inner_iter_args)
        scf.yield_(list(out or []))
    return loop.results


def lane_active(mask, ivs):
    """i1: the lane at `ivs` is active under `mask` (an i1 Tile, an i1 value,
    or None: every lane)."""
    if mask is None:
        return true()
    return mask.at(ivs) if isinstance(mask, Tile) else mask


@dataclass
class RowSegment:
    """Lanes j0 <= j < j1 of one row of a tile load or store: what moving it
    between MRAM and WRAM needs."""
    ptrs: Tile                 # the MRAM addresses (i64) of the whole tile
    mask: object               # an i1 Tile, an i1 value, or None (every lane)
    rivs: list                 # the row's indices (all but the last dimension)
    j0: ir.Value               # index bounds of the segment
    j1: ir.Value
    t: ir.Type                 # element type
    es: int                    # bytes per element in MRAM
    mine: bool                 # lane indices run over this tasklet's chunk (rank 1)
    stg: ir.Value              # this tasklet's WRAM staging buffer (i64 address)

    def ivs(self, j) -> list:
        return self.rivs + [j]

    def active(self, j) -> ir.Value:
        """i1: lane j is active."""
        return lane_active(self.mask, self.ivs(j))

    def lanes(self, conv, lo, hi, body) -> None:
        """body(j) for the lanes lo <= j < hi."""
        def run(j):
            if self.mine:
                conv.tasklets.accesses.mine(j)
            body(j)
        _for(lo, hi, run)

    def row_address(self, conv, buf, write: bool) -> ir.Value:
        """The WRAM address (i64) of this segment's row of tile buffer `buf`,
        for a DMA that writes (or reads) the segment there."""
        if len(self.rivs):
            return conv.buffers.row_address(buf, self.rivs, self.es, write)
        who = conv.tasklets.owner(tuple(ir.MemRefType(buf.type).shape)) if self.mine else None
        return conv.buffers.row_address(buf, [], self.es, write, at=self.j0, who=who)


# ---- the row segments of an access ---------------------------------------------------

def segments(conv, shape, body, ptrs, mask, t, es: int):
    """Call body(RowSegment) for each row segment of this tasklet: rank 1, its
    chunk of the lanes (lane indices run over the tasklet's chunk); else its
    rows. With several tasklets a segment is at most one DMA transfer long, so
    that each tasklet's staging buffer is small."""
    length = shape[-1]
    lanes = seg_chunk(conv, shape, es)

    def segment(rivs, j0, j1, mine):
        body(RowSegment(ptrs, mask, rivs, j0, j1, t, es, mine, conv.buffers.staging(lanes * es + 16)))
    if conv.tasklets.count > 1 and len(shape) == 1:
        lo, hi = conv.tasklets.my_range(shape)
        with conv.tasklets.accesses.divergent(conv.tasklets.owner(shape)):
            split(conv, lo, hi, lanes, lambda j0, j1: segment([], j0, j1, True))
        return
    conv.tasklets.par_nest(shape[:-1], lambda rivs: split(conv, index_c(0), index_c(length), lanes,
                                                 lambda j0, j1: segment(rivs, j0, j1, False), length), shape)


def split(conv, lo, hi, seg: int, fn, length: int | None = None) -> None:
    """fn(j0, j1) over [lo, hi) in pieces of at most `seg` lanes (`length`:
    hi - lo when known)."""
    if length is not None and length <= seg:
        fn(lo, hi)
        return
    loop = scf.ForOp(lo, hi, index_c(seg))
    with ir.InsertionPoint(loop.body):
        j0 = loop.induction_variable
        fn(j0, arith.minsi(arith.addi(j0, index_c(seg)), hi))
        scf.yield_([])


def seg_chunk(conv, shape, es: int) -> int:
    """Lanes of one row segment (the staging buffer holds one)."""
    cap = max(8, DMA_MAX_BYTES // es // 8 * 8)
    if len(shape) == 1 and conv.tasklets.count > 1:
        return min(conv.tasklets.chunk(shape), shape[0], cap)
    return min(shape[-1], cap)


# ---- a segment lane by lane ----------------------------------------------------------

def active_span(conv, seg: RowSegment):
    """(first, last, count) of the active lanes of a row segment, as i64
    (-1, -1, 0: none)."""
    if seg.mask is None:
        lo, hi = arith.index_cast(i64(), seg.j0), arith.index_cast(i64(), seg.j1)
        some = arith.cmpi(arith.CmpIPredicate.slt, lo, hi)
        return (arith.select(some, lo, c64(-1)), arith.select(some, arith.subi(hi, c64(1)), c64(-1)),
                arith.subi(hi, lo))

    def body(j, first, last, count):
        if seg.mine:
            conv.tasklets.accesses.mine(j)
        m = seg.active(j)
        j64 = arith.index_cast(i64(), j)
        unset = arith.cmpi(arith.CmpIPredicate.slt, first, c64(0))
        first = arith.select(arith.andi(m, unset), j64, first)
        last = arith.select(m, j64, last)
        return [first, last, arith.addi(count, arith.extui(i64(), m))]
    res = _for(seg.j0, seg.j1, body, [c64(-1), c64(-1), c64(0)])
    return res[0], res[1], res[2]


def contiguity(seg: RowSegment, first, last, any_active):
    """Whether lanes first..last of a row address consecutive elements, and the
    address of the first."""
    idx = ir.IndexType.get()
    lo = arith.index_cast(idx, arith.select(any_active, first, c64(0)))
    hi = arith.index_cast(idx, arith.select(any_active, arith.addi(last, c64(1)), c64(0)))
    p0 = seg.ptrs.at(seg.ivs(lo))

    def body(j, ok):
        delta = arith.muli(arith.subi(arith.index_cast(i64(), j), arith.index_cast(i64(), lo)),
                           c64(seg.es))
        same = arith.cmpi(arith.CmpIPredicate.eq, seg.ptrs.at(seg.ivs(j)), arith.addi(p0, delta))
        return [arith.andi(ok, same)]
    return _for(lo, hi, body, [true()])[0], p0


def span(p_first, p_last, es):
    """The 8-byte aligned span (start, end, size) over the elements at MRAM
    addresses p_first..p_last."""
    a0 = align_down(p_first)
    a1 = align_up(arith.addi(p_last, c64(es)))
    return a0, a1, arith.subi(a1, a0)


# ---- a row in closed form ------------------------------------------------------------

def _clamp(v, lo, hi):
    return arith.minsi(arith.maxsi(v, lo), hi)


def _lanes_of(mask, length: int):
    """The closed-form active lanes of a mask (None: all lanes), or False."""
    from .elementwise import _lanes
    if mask is None:
        return None
    r = _lanes(mask, length)
    return False if r is None else r


def _affine(conv, ptrs, mask, es: int, length: int):
    """Whether a row access has a closed form: addresses base + j * es and
    active lanes [lo, hi) (checked at run time by `valid`)."""
    if not isinstance(ptrs, Tile) or ptrs.row is None or ptrs.row.stride != es:
        return None
    if mask is not None and not isinstance(mask, Tile):
        return None
    lanes = _lanes_of(mask, length)
    if lanes is False:
        return None
    row = ptrs.row

    def at(rivs):
        base = row.base(rivs)
        if lanes is None:
            lo, hi, v = c64(0), c64(length), None
        else:
            lo, hi, v = lanes.bounds(rivs)
        return base, lo, hi, and_valid(row.valid(rivs) if row.valid else None, v)
    return at


def closed_form(conv, seg: RowSegment, length: int):
    """A row segment in closed form, or None: the row's MRAM base, its active
    lanes [lo, hi) clamped to [j0, j1), and the run-time check of the form."""
    affine = _affine(conv, seg.ptrs, seg.mask, seg.es, length)
    if affine is None:
        return None
    base, lo, hi, valid = affine(seg.rivs)
    lo = _clamp(lo, arith.index_cast(i64(), seg.j0), arith.index_cast(i64(), seg.j1))
    hi = _clamp(hi, lo, arith.index_cast(i64(), seg.j1))
    return base, lo, hi, valid


def bytes_of(base, lo, hi, es: int):
    """Lanes [lo, hi) in MRAM: their count, first address, byte count, and the
    8-byte aligned span (start, end, size) that covers them."""
    n = arith.subi(hi, lo)
    p0 = arith.addi(base, arith.muli(lo, c64(es)))
    nb = arith.muli(n, c64(es))
    a0, a1, size = span(p0, arith.subi(arith.addi(p0, nb), c64(es)), es)
    return n, p0, nb, a0, a1, size


def needs_rest(conv, ptrs, mask, es: int, shape) -> ir.Value:
    """i1, the same on every tasklet: whether some row segment of a store is not
    whole 8-byte words (true when unknown)."""
    length = shape[-1]
    affine = _affine(conv, ptrs, mask, es, length)
    if affine is None:
        return true()
    i1 = ir.IntegerType.get_signless(1)

    def row_bad(rivs):
        base, lo, hi, valid = affine(rivs)
        p_lo = arith.addi(base, arith.muli(lo, c64(es)))
        p_hi = arith.addi(base, arith.muli(hi, c64(es)))
        bad = arith.cmpi(arith.CmpIPredicate.ne, arith.andi(arith.ori(p_lo, p_hi), c64(7)), c64(0))
        if len(shape) == 1 or length > seg_chunk(conv, shape, es):
            # segment edges inside the active lanes: aligned with the base
            bad = arith.ori(bad, arith.cmpi(arith.CmpIPredicate.ne, arith.andi(base, c64(7)), c64(0)))
        some = arith.cmpi(arith.CmpIPredicate.slt, lo, hi)
        bad = arith.andi(some, bad)
        return bad if valid is None else arith.ori(bad, arith.xori(valid, true()))
    if len(shape) == 1:
        return row_bad([])
    result = [arith.constant(i1, 0)]

    def nest(dim, rivs, acc):
        if dim == len(shape) - 1:
            return arith.ori(acc, row_bad(rivs))
        loop = scf.ForOp(index_c(0), index_c(shape[dim]), index_c(1), [acc])
        with ir.InsertionPoint(loop.body):
            scf.yield_([nest(dim + 1, rivs + [loop.induction_variable], loop.inner_iter_args[0])])
        return loop.results[0]
    result[0] = nest(0, [], result[0])
    return result[0]
