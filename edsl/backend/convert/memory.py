"""Memory ops: tt.load, tt.store, tt.atomic_rmw, tt.atomic_cas.

Pointers are i64 MRAM addresses. Every MRAM access goes through the DMA
routine of the DPU runtime, `__dpu_dma(mram, wram, nbytes, direction, site,
ctx)` (edsl.dpu.support), which checks the UPMEM rules (8-byte aligned
addresses, 8..2048 bytes, a multiple of 8) and the launch's MRAM, and counts
the transfers; `site` names the op's line in its errors. A tile is moved row by row (its last dimension): when the
active lanes of a row are contiguous in MRAM, the 8-byte aligned span they
cover moves in chunks of at most 2048 bytes through a WRAM staging buffer
(a masked or unaligned store reads the span first, so bytes around the
active lanes keep their values); otherwise each active element moves on its
own as one 8-byte transfer of the word holding it.

When the row's addresses are `base + j * size` and its mask is a range of
lanes (`offs < n`, `(r < R) & (c < C)`, ... : the `RowForm` / `LaneRange`
the shape and elementwise lowerings derive), the span is known in closed form
(no per-lane scan), and an aligned span moves straight between MRAM and the
tile's WRAM buffer. A run-time check (no i32 offset wraps within the row)
guards that path; the per-lane path remains for the rest.

What a row access is (its segments, active lanes, contiguity, closed form,
spans) is worked out in `rows`; this module emits the transfers and element
loops from it.

Tasklets share rows out (rank 1: chunks of each row, whole 8-byte words
apart). A load needs nothing more. A store lets every tasklet write its
segments that are whole words at once; segments needing a read-modify-write
of a word another tasklet may write (ragged ends, holes, scattered elements)
are stored afterwards by tasklet 0, in order, between barriers (skipped when
the closed form shows there are none).

A row segment is at most one 2048-byte transfer of lanes (so the staging
buffers stay small). A load whose result is a tile kept in MRAM (`spill`)
writes each line of it into the tile's WRAM window and from there to MRAM;
a store of such a tile reads its lines through the window.
"""
from __future__ import annotations

import re

from mlir import ir
from mlir.dialects import arith, llvm, scf

from ...target.dpu import DMA as DMA_FN, NOTE, READ, WRITE, Access, AtomicOp, atomic_kind

from .core import Tile, byte_size, is_float, is_tensor, lowers, pointee, scalar_type
from .barriers import SAME
from .builders import (align_down, as_index, buffer_type, c64, from_stored, i64, in_dma_pieces, index_c,
                       to_stored)
from .rows import (RowSegment, active_span, bytes_of, closed_form, contiguity, lane_active, needs_rest,
                   seg_chunk, segments, span, split, true)
from . import ops


def mem_read(addr: ir.Value, t: ir.Type) -> ir.Value:
    """Load a `t` from host address `addr` (an i1 or an fp8 is stored as one byte)."""
    p = llvm.inttoptr(llvm.PointerType.get(), addr)
    return from_stored(llvm.load(_store_t(t), p), t)


def mem_write(addr: ir.Value, v: ir.Value) -> None:
    p = llvm.inttoptr(llvm.PointerType.get(), addr)
    llvm.store(to_stored(v, _store_t(v.type)), p)


_store_t = buffer_type


def lane_base(addr: ir.Value) -> ir.Value:
    """A pointer for `lane_read` / `lane_write` (made once, outside the lane loop:
    addresses as pointer + index keep the loop analysable, and vectorizable)."""
    return llvm.inttoptr(llvm.PointerType.get(), addr)


def lane_read(base: ir.Value, k: ir.Value, t: ir.Type) -> ir.Value:
    """Element k (i64) of type `t` from pointer `base`."""
    st = _store_t(t)
    p = llvm.getelementptr(llvm.PointerType.get(), base, [k], [-2147483648], st, 0)
    return from_stored(llvm.load(st, p), t)


def lane_write(base: ir.Value, k: ir.Value, v: ir.Value) -> None:
    v = to_stored(v, _store_t(v.type))
    p = llvm.getelementptr(llvm.PointerType.get(), base, [k], [-2147483648], v.type, 0)
    llvm.store(v, p)


def dma(conv, mram, wram, nbytes, direction: int) -> None:
    llvm.call(None, [mram, wram, nbytes, c64(direction), conv.sites.site(), conv.ctx_arg], [], [],
              callee=ir.FlatSymbolRefAttr.get(DMA_FN))


def dma_span(conv, mram, wram, nbytes, direction: int) -> None:
    """Move `nbytes` (a multiple of 8) in transfers of at most 2048 bytes."""
    in_dma_pieces(mram, wram, nbytes, lambda m, w, size: dma(conv, m, w, size, direction))


def note(conv, kind: int, mram, nbytes) -> None:
    """Log that the program used (Access.READ) or wrote MRAM bytes [mram,
    mram + nbytes) of the launch's arrays: the host checks what DPUs share
    (edsl.dpu.sharing). The DMA around it may move more (whole 8-byte words)."""
    llvm.call(None, [c64(kind), mram, nbytes, conv.sites.site(), conv.ctx_arg], [], [],
              callee=ir.FlatSymbolRefAttr.get(NOTE))


def element_read(conv, addr, t, stg, access: int | None = Access.READ) -> ir.Value:
    """Element `t` at MRAM address `addr`, through the word around it (`access`:
    how the read is logged, None: by the caller)."""
    word = align_down(addr)
    dma(conv, word, stg, c64(8), READ)
    if access is not None:
        note(conv, access, addr, c64(byte_size(t)))
    return mem_read(arith.addi(stg, arith.subi(addr, word)), t)


def element_write(conv, addr, v, stg, access: int | None = Access.WRITE) -> None:
    word = align_down(addr)
    dma(conv, word, stg, c64(8), READ)
    mem_write(arith.addi(stg, arith.subi(addr, word)), v)
    dma(conv, word, stg, c64(8), WRITE)
    if access is not None:
        note(conv, access, addr, c64(byte_size(v.type)))


def _zero(t: ir.Type) -> ir.Value:
    return arith.constant(t, 0.0) if is_float(t) else arith.constant(t, 0)


def _if_else(cond, result_type, then_fn, else_fn):
    op = scf.IfOp(cond, [result_type], has_else=True)
    with ir.InsertionPoint(op.then_block):
        scf.yield_([then_fn()])
    with ir.InsertionPoint(op.else_block):
        scf.yield_([else_fn()])
    return op.results[0]


def _if(cond, then_fn):
    op = scf.IfOp(cond, [], has_else=False)
    with ir.InsertionPoint(op.then_block):
        then_fn()
        scf.yield_([])


def _if_else_none(cond, then_fn, else_fn):
    op = scf.IfOp(cond, [], has_else=True)
    with ir.InsertionPoint(op.then_block):
        then_fn()
        scf.yield_([])
    with ir.InsertionPoint(op.else_block):
        else_fn()
        scf.yield_([])


class BufferRows:
    """The rows of a WRAM buffer, as a load writes its row segments into them
    (`spill.LineTarget` is the same for a line of a tile kept in MRAM)."""

    def __init__(self, conv, buf, es: int):
        self.conv, self.buf, self.es = conv, buf, es
        self.length = ir.MemRefType(buf.type).shape[-1]

    def row_address(self, seg: RowSegment) -> ir.Value:
        """The WRAM address (i64) of lane 0 of `seg`'s row, for a DMA into it."""
        return seg.row_address(self.conv, self.buf, True)

    def store(self, v, ivs) -> None:
        self.conv.buffers.store(v, self.buf, ivs)


def _load_row(conv, seg: RowSegment, other, out):
    """Load a row segment into the rows `out` (`BufferRows` or a
    `spill.LineTarget`; `other`, or 0, on inactive lanes)."""
    t, es = seg.t, seg.es

    def other_at(ivs):
        return other.at(ivs) if isinstance(other, Tile) else (other if other is not None else _zero(t))

    def fill_other(lo, hi):
        seg.lanes(conv, lo, hi, lambda j: out.store(other_at(seg.ivs(j)), seg.ivs(j)))

    def fast(lo, hi, n, p0, nb, a0, a1, span):
        dst = arith.addi(out.row_address(seg), arith.muli(lo, c64(es)))
        aligned = arith.andi(arith.cmpi(arith.CmpIPredicate.eq, p0, a0),
                             arith.cmpi(arith.CmpIPredicate.eq, arith.andi(arith.ori(nb, dst), c64(7)), c64(0)))
        some = arith.cmpi(arith.CmpIPredicate.sgt, n, c64(0))

        def direct():
            dma_span(conv, a0, dst, nb, READ)
            note(conv, Access.READ, p0, nb)

        def staged():
            dma_span(conv, a0, seg.stg, span, READ)
            note(conv, Access.READ, p0, nb)
            # Lane j is element j - lo after p0 (p0 - a0 bytes into the staging buffer).
            src = lane_base(arith.subi(arith.addi(seg.stg, arith.subi(p0, a0)), arith.muli(lo, c64(es))))

            def lane(j):
                v = lane_read(src, arith.index_cast(i64(), j), t)
                out.store(v, seg.ivs(j))
            seg.lanes(conv, as_index(lo), as_index(hi), lane)
        _if(some, lambda: _if_else_none(aligned, direct, staged))
        fill_other(seg.j0, as_index(lo))
        fill_other(as_index(hi), seg.j1)
    _row_access(conv, seg, out.length, fast, lambda: _load_row_general(conv, seg, other_at, out))


def _row_access(conv, seg: RowSegment, length: int, fast, general) -> None:
    """`fast(lo, hi, *bytes_of(...))` on the active lanes [lo, hi) of a row
    segment in closed form, guarded by the form's run-time check; else (or
    where the check fails) `general()`."""
    form = closed_form(conv, seg, length)
    if form is None:
        general()
        return
    base, lo, hi, valid = form

    def closed():
        fast(lo, hi, *bytes_of(base, lo, hi, seg.es))
    if valid is None:
        closed()
    else:
        _if_else_none(valid, closed, general)


def _load_row_general(conv, seg: RowSegment, other_at, out):
    """A row segment with no closed form: its contiguous active lanes by one
    DMA span, else each active element by itself."""
    t, es = seg.t, seg.es
    first, last, _ = active_span(conv, seg)
    any_active = arith.cmpi(arith.CmpIPredicate.sge, first, c64(0))
    contiguous, p0 = contiguity(seg, first, last, any_active)
    fast = arith.andi(any_active, contiguous)

    def dma_path():
        p_last = arith.addi(p0, arith.muli(arith.subi(last, first), c64(es)))
        a0, _, n = span(p0, p_last, es)
        dma_span(conv, a0, seg.stg, n, READ)

        def read(ivs):
            p = seg.ptrs.at(ivs)
            note(conv, Access.READ, p, c64(es))
            return mem_read(arith.addi(seg.stg, arith.subi(p, a0)), t)

        def lane(j):
            ivs = seg.ivs(j)
            out.store(_if_else(seg.active(j), t, lambda: read(ivs), lambda: other_at(ivs)), ivs)
        seg.lanes(conv, seg.j0, seg.j1, lane)

    def element_path():
        def lane(j):
            ivs = seg.ivs(j)
            v = _if_else(seg.active(j), t,
                         lambda: element_read(conv, seg.ptrs.at(ivs), t, seg.stg),
                         lambda: other_at(ivs))
            out.store(v, ivs)
        seg.lanes(conv, seg.j0, seg.j1, lane)
    _if_else_none(fast, dma_path, element_path)


def _store_row(conv, seg: RowSegment, value, mode: str):
    """Store one row segment. `mode`: "all" (one tasklet), "clean" (only when
    the active lanes are whole 8-byte words: no read-modify-write, so tasklets
    may store neighbouring segments at once) or "rest" (the others)."""
    t, es = seg.t, seg.es
    def fast(lo, hi, n, p0, nb, a0, a1, span):
        clean = arith.andi(arith.cmpi(arith.CmpIPredicate.eq, p0, a0),
                           arith.cmpi(arith.CmpIPredicate.eq, arith.andi(nb, c64(7)), c64(0)))
        some = arith.cmpi(arith.CmpIPredicate.sgt, n, c64(0))
        whole = (value.buf is not None and conv.buffers.spill.of(value.buf) is None
                 and ir.MemRefType(value.buf.type).element_type == _store_t(t))

        def write_clean():
            if whole:
                src = arith.addi(seg.row_address(conv, value.buf, False), arith.muli(lo, c64(es)))
                aligned = arith.cmpi(arith.CmpIPredicate.eq, arith.andi(src, c64(7)), c64(0))

                def direct():
                    dma_span(conv, a0, src, nb, WRITE)
                    note(conv, Access.WRITE, p0, nb)
                _if_else_none(aligned, direct, lambda: write_staged(False))
            else:
                write_staged(False)

        def write_staged(rmw: bool):
            if rmw:
                dma_span(conv, a0, seg.stg, span, READ)
            dst = lane_base(arith.subi(arith.addi(seg.stg, arith.subi(p0, a0)), arith.muli(lo, c64(es))))

            def lane(j):
                lane_write(dst, arith.index_cast(i64(), j), value.at(seg.ivs(j)))
            seg.lanes(conv, as_index(lo), as_index(hi), lane)
            dma_span(conv, a0, seg.stg, span, WRITE)
            note(conv, Access.WRITE, p0, nb)

        if mode == "all":
            _if(some, lambda: _if_else_none(clean, write_clean, lambda: write_staged(True)))
        elif mode == "clean":
            _if(arith.andi(some, clean), write_clean)
        else:
            _if(arith.andi(some, arith.xori(clean, true())), lambda: write_staged(True))
    _row_access(conv, seg, seg.ptrs.shape[-1], fast, lambda: _store_row_general(conv, seg, value, mode))


def _store_row_general(conv, seg: RowSegment, value, mode):
    es = seg.es
    first, last, count = active_span(conv, seg)
    any_active = arith.cmpi(arith.CmpIPredicate.sge, first, c64(0))
    contiguous, p0 = contiguity(seg, first, last, any_active)
    fast = arith.andi(any_active, contiguous)
    p_last = arith.addi(p0, arith.muli(arith.subi(last, first), c64(es)))
    a0, a1, n = span(p0, p_last, es)
    holes = arith.cmpi(arith.CmpIPredicate.ne, count, arith.addi(arith.subi(last, first), c64(1)))
    ragged = arith.ori(arith.cmpi(arith.CmpIPredicate.ne, p0, a0),
                       arith.cmpi(arith.CmpIPredicate.ne, arith.addi(p_last, c64(es)), a1))
    rmw = arith.ori(holes, ragged)

    def dma_path():
        if mode == "all":
            _if(rmw, lambda: dma_span(conv, a0, seg.stg, n, READ))
        elif mode == "rest":
            dma_span(conv, a0, seg.stg, n, READ)

        def write(ivs):
            p = seg.ptrs.at(ivs)
            mem_write(arith.addi(seg.stg, arith.subi(p, a0)), value.at(ivs))
            note(conv, Access.WRITE, p, c64(es))

        def lane(j):
            ivs = seg.ivs(j)
            _if(seg.active(j), lambda: write(ivs))
        seg.lanes(conv, seg.j0, seg.j1, lane)
        dma_span(conv, a0, seg.stg, n, WRITE)

    def element_path():
        def lane(j):
            ivs = seg.ivs(j)
            _if(seg.active(j), lambda: element_write(conv, seg.ptrs.at(ivs), value.at(ivs), seg.stg))
        seg.lanes(conv, seg.j0, seg.j1, lane)

    if mode == "all":
        _if_else_none(fast, dma_path, element_path)
    elif mode == "clean":
        _if(arith.andi(fast, arith.xori(rmw, true())), dma_path)
    else:
        _if(arith.andi(fast, rmw), dma_path)
        _if(arith.andi(any_active, arith.xori(contiguous, true())), element_path)


def _value(conv, v):
    return conv.values.get(v) if v is not None else None


@lowers("tt.load")
def lower_load(conv, op):
    view = ops.Load(op)
    ptr_t = view.ptr.type
    rt = op.results[0].type
    mask, other = _value(conv, view.mask), _value(conv, view.other)
    conv.buffers.accesses.note_mram(False, "all" if is_tensor(rt) else SAME)
    if not is_tensor(rt):
        t = scalar_type(rt)
        addr = conv.values.get(view.ptr)
        stg = conv.buffers.staging(8)
        if mask is None:
            conv.values.set(op.results[0], element_read(conv, addr, t, stg))
        else:
            conv.values.set(op.results[0], _if_else(mask, t, lambda: element_read(conv, addr, t, stg),
                                             lambda: other if other is not None else _zero(t)))
        return
    ptrs = conv.values.tile(view.ptr)
    t = scalar_type(ir.RankedTensorType(rt).element_type)
    es = byte_size(pointee(ir.RankedTensorType(ptr_t).element_type))
    shape = ptrs.shape
    out = conv.buffers.alloca(shape, t, "tt.load result", op)

    def emit():
        spilled = conv.buffers.spill.of(out)
        if spilled is not None:
            stg = conv.buffers.staging(spilled.geo.lanes * es + 16)
            spilled.stream(lambda rivs, j0, j1, target, mine: _load_row(
                conv, RowSegment(ptrs, mask, rivs, j0, j1, t, es, mine, stg), other, target))
        else:
            rows = BufferRows(conv, out, es)
            segments(conv, shape, lambda seg: _load_row(conv, seg, other, rows), ptrs, mask, t, es)
    conv.buffers.spill.unit([out], emit)
    conv.values.set(op.results[0], Tile(shape, t, buf=out, accesses=conv.buffers.accesses))


@lowers("tt.store")
def lower_store(conv, op):
    view = ops.Store(op)
    ptr_t = view.ptr.type
    value, mask = conv.values.get(view.value), _value(conv, view.mask)
    if not is_tensor(ptr_t):
        conv.buffers.accesses.note_mram(True, "one")
        addr = conv.values.get(view.ptr)
        stg = conv.buffers.staging(8)
        with conv.tasklets.single():
            if mask is None:
                element_write(conv, addr, value, stg)
            else:
                _if(mask, lambda: element_write(conv, addr, value, stg))
        return
    ptrs = conv.values.tile(view.ptr)
    es = byte_size(pointee(ir.RankedTensorType(ptr_t).element_type))
    # (a tile kept in MRAM is stored through staging: its rows are not in WRAM)
    conv.buffers.spill.unit([value.buf], lambda: _store_rows(conv, ptrs, mask, value, es))


def _store_rows(conv, ptrs, mask, value, es: int) -> None:
    """The stores of tile `value`'s rows through the pointers `ptrs`."""
    t, shape = value.elem, ptrs.shape
    seg = seg_chunk(conv, shape, es)

    def rows(mode):
        return lambda segment: _store_row(conv, segment, value, mode)

    def segment(rivs, j0, j1):
        return RowSegment(ptrs, mask, rivs, j0, j1, t, es, False, conv.buffers.staging(seg * es + 16))
    if conv.tasklets.count == 1:
        conv.tasklets.loop_nest(shape[:-1], lambda rivs: split(conv, index_c(0), index_c(shape[-1]), seg,
                                                      lambda a, b: rows("all")(segment(rivs, a, b)), shape[-1]))
        return
    # Tasklets store the segments that are whole 8-byte words at once; the
    # others (read-modify-write of words two segments may share) follow on
    # tasklet 0, after a barrier, in order.
    conv.buffers.accesses.note_mram(True)
    segments(conv, shape, rows("clean"), ptrs, mask, t, es)
    rest = scf.IfOp(needs_rest(conv, ptrs, mask, es, shape), [], has_else=False)
    conv.tasklets.accesses.branches(rest)
    with ir.InsertionPoint(rest.then_block):
        conv.tasklets.accesses.sync()
        conv.buffers.accesses.note_mram(True, "one")
        with conv.tasklets.single():
            if len(shape) == 1:
                c = conv.tasklets.chunk(shape)
                chunks = scf.ForOp(index_c(0), index_c(shape[0]), index_c(c))
                with ir.InsertionPoint(chunks.body):
                    j0 = chunks.induction_variable
                    j1 = arith.minsi(arith.addi(j0, index_c(c)), index_c(shape[0]))
                    split(conv, j0, j1, seg, lambda a, b: rows("rest")(segment([], a, b)))
                    scf.yield_([])
            else:
                conv.tasklets.loop_nest(shape[:-1], lambda rivs: split(
                    conv, index_c(0), index_c(shape[-1]), seg,
                    lambda a, b: rows("rest")(segment(rivs, a, b))))
        conv.tasklets.accesses.sync()                             # (the slow path leaves nothing pending)
        scf.yield_([])


def _points_to_floats(ptr: ir.Value) -> bool:
    """Whether integer pointers `ptr` are a `tt.bitcast` of float pointers of
    the same width (as Triton casts them for a float `tl.atomic_max`)."""
    owner = ptr.owner
    if not isinstance(owner, ir.OpView) or owner.operation.name != "tt.bitcast":
        return False
    return re.search(r"!tt\.ptr<f(32|64)>", str(ops.Bitcast(owner).src.type)) is not None


_RMW = {
    "add": lambda old, v: arith.addi(old, v),
    "fadd": lambda old, v: arith.addf(old, v),
    "max": lambda old, v: (arith.maximumf(old, v) if is_float(v.type) else arith.maxsi(old, v)),
    "min": lambda old, v: (arith.minimumf(old, v) if is_float(v.type) else arith.minsi(old, v)),
    "umax": lambda old, v: arith.maxui(old, v),
    "umin": lambda old, v: arith.minui(old, v),
    "and": lambda old, v: arith.andi(old, v),
    "or": lambda old, v: arith.ori(old, v),
    "xor": lambda old, v: arith.xori(old, v),
    "xchg": lambda old, v: v,
}


# The log's name of each atomic (edsl.target.dpu.AtomicOp), for integers and floats.
_ATOMIC_OPS = {"add": (AtomicOp.ADD, AtomicOp.FADD), "fadd": (AtomicOp.FADD, AtomicOp.FADD),
               "max": (AtomicOp.MAX, AtomicOp.FMAX), "min": (AtomicOp.MIN, AtomicOp.FMIN),
               "umax": (AtomicOp.UMAX,) * 2, "umin": (AtomicOp.UMIN,) * 2, "and": (AtomicOp.AND,) * 2,
               "or": (AtomicOp.OR,) * 2, "xor": (AtomicOp.XOR,) * 2,
               "xchg": (AtomicOp.XCHG,) * 2}


# Triton's float max / min as integer atomics on the float's bits: the two
# halves of each (edsl.target.dpu.AtomicOp.FMAX_BITS).
_ON_FLOAT_BITS = {"max": AtomicOp.FMAX_BITS, "umin": AtomicOp.FMAX_BITS,
                  "min": AtomicOp.FMIN_BITS, "umax": AtomicOp.FMIN_BITS}


def _atomic_log_kind(conv, op, t) -> int:
    """How an atomic is logged: its operation, whether its old value is used,
    and its element type (the host merges atomics across DPUs by them)."""
    if op.name == "tt.atomic_cas":
        which = AtomicOp.CAS
    else:
        name = ops.AtomicRMW(op).kind
        which = _ATOMIC_OPS[name][is_float(t)]
        if name in _ON_FLOAT_BITS and not is_float(t) and _points_to_floats(ops.AtomicRMW(op).ptr):
            which = _ON_FLOAT_BITS[name]
    used = conv.values.uses.get(op.results[0], 0) > 0
    return atomic_kind(which, used, byte_size(t), str(t) if is_float(t) else None)


def _atomic(conv, op, pointers: ir.Value, operands: list, mask_operand: ir.Value | None, update):
    """Lower an atomic on `pointers`, `update(old, *operands' lanes)` the new
    value where `mask_operand` (if any) is true: program instances run one
    at a time in the model, and tasklet 0 alone runs the atomic op of a
    program, so a read-modify-write of the element (two 8-byte DMA
    transfers) is atomic. A scalar result reaches the other tasklets through
    a WRAM cell."""
    rt = op.results[0].type if len(op.results) else None
    if rt is not None and conv.values.uses.get(op.results[0], 0) > 0:
        conv.info.waits = True             # (a spin lock: its DPUs must not run at once, `model._job`)
    stg = conv.buffers.staging(8)
    conv.buffers.accesses.note_mram(True, "one")
    ptr = conv.values.get(pointers)
    args = [conv.values.get(v) for v in operands]
    mask = conv.values.get(mask_operand) if mask_operand is not None else None

    def one(addr, lane_vals, t):
        old = element_read(conv, addr, t, stg, access=None)
        new = update(old, *lane_vals)
        element_write(conv, addr, new, stg, access=_atomic_log_kind(conv, op, t))
        return old

    if not isinstance(ptr, Tile):
        t = scalar_type(pointee(pointers.type))

        def run():
            if mask is None:
                return one(ptr, args, t)
            return _if_else(mask, t, lambda: one(ptr, args, t), lambda: _zero(t))
        if conv.tasklets.count == 1:
            old = run()
            if rt is not None:
                conv.values.set(op.results[0], old)
            return
        cell = conv.buffers.alloca((1,), t, f"{op.name} result", op)
        zero = index_c(0)
        with conv.tasklets.single():
            conv.buffers.store(run(), cell, [zero])
        if rt is not None:
            conv.values.set(op.results[0], conv.buffers.load(cell, [zero], t))
        return
    t = scalar_type(pointee(ir.RankedTensorType(pointers.type).element_type))
    used = conv.values.uses.get(op.results[0], 0) > 0          # (an unused result needs no buffer)
    out = conv.buffers.alloca(ptr.shape, t, f"{op.name} result", op) if used else None

    def body(ivs):
        lane_vals = [a.at(ivs) if isinstance(a, Tile) else a for a in args]
        old = _if_else(lane_active(mask, ivs), t, lambda: one(ptr.at(ivs), lane_vals, t), lambda: _zero(t))
        if used:
            conv.buffers.store(old, out, ivs)
    with conv.tasklets.single():
        conv.tasklets.loop_nest(ptr.shape, body)
    if used:
        conv.values.set(op.results[0], Tile(ptr.shape, t, buf=out, accesses=conv.buffers.accesses))


@lowers("tt.atomic_rmw")
def lower_atomic_rmw(conv, op):
    view = ops.AtomicRMW(op)
    fn = _RMW.get(view.kind)
    if fn is None:
        raise conv.sites.error(op, f"atomic operation '{view.kind}' is not supported by the DPU backend")
    _atomic(conv, op, view.ptr, [view.val], view.mask, fn)


@lowers("tt.atomic_cas")
def lower_atomic_cas(conv, op):
    def cas(old, cmp, val):
        if is_float(old.type):
            same = arith.cmpf(arith.CmpFPredicate.OEQ, old, cmp)
        else:
            same = arith.cmpi(arith.CmpIPredicate.eq, old, cmp)
        return arith.select(same, val, old)
    view = ops.AtomicCAS(op)
    _atomic(conv, op, view.ptr, [view.cmp, view.val], None, cas)
