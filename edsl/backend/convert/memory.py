"""Memory ops: tt.load, tt.store, tt.atomic_rmw, tt.atomic_cas.

Pointers are i64 MRAM addresses. Every MRAM access goes through the DMA
helper `__dpu_dma(mram, wram, nbytes, direction, ctx)`, which checks the UPMEM
rules (8-byte aligned addresses, 8..2048 bytes, a multiple of 8) and counts
the transfers. A tile is moved row by row (its last dimension): when the
active lanes of a row are contiguous in MRAM, the 8-byte aligned span they
cover moves in chunks of at most 2048 bytes through a WRAM staging buffer
(a masked or unaligned store reads the span first, so bytes around the
active lanes keep their values); otherwise each active element moves on its
own as one 8-byte transfer of the word holding it.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, llvm, scf

from .core import store_elem, Tile, byte_size, is_float, is_tensor, lowers, pointee, scalar_type

DMA_FN = "__dpu_dma"
READ, WRITE = 0, 1


def _i64():
    return ir.IntegerType.get_signless(64)


def _c(v: int) -> ir.Value:
    return arith.constant(_i64(), v)


def mem_read(addr: ir.Value, t: ir.Type) -> ir.Value:
    """Load a `t` from host address `addr` (an i1 is stored as one byte)."""
    store_t = ir.IntegerType.get_signless(8) if t == ir.IntegerType.get_signless(1) else t
    p = llvm.inttoptr(llvm.PointerType.get(), addr)
    v = llvm.load(store_t, p)
    if store_t != t:
        v = arith.cmpi(arith.CmpIPredicate.ne, v, arith.constant(store_t, 0))
    return v


def mem_write(addr: ir.Value, v: ir.Value) -> None:
    if v.type == ir.IntegerType.get_signless(1):
        v = arith.extui(ir.IntegerType.get_signless(8), v)
    p = llvm.inttoptr(llvm.PointerType.get(), addr)
    llvm.store(v, p)


def dma(conv, mram, wram, nbytes, direction: int) -> None:
    func.CallOp([], ir.FlatSymbolRefAttr.get(DMA_FN),
                [mram, wram, nbytes, _c(direction), conv.ctx_arg])


def dma_span(conv, mram, wram, nbytes, direction: int) -> None:
    """Move `nbytes` (a multiple of 8) in transfers of at most 2048 bytes."""
    from ...dpu.limits import DMA_MAX_BYTES
    loop = scf.ForOp(_c(0), nbytes, _c(DMA_MAX_BYTES))
    with ir.InsertionPoint(loop.body):
        off = loop.induction_variable
        size = arith.minsi(_c(DMA_MAX_BYTES), arith.subi(nbytes, off))
        dma(conv, arith.addi(mram, off), arith.addi(wram, off), size, direction)
        scf.yield_([])


def _align_down(v):
    return arith.andi(v, _c(-8))


def _align_up(v):
    return _align_down(arith.addi(v, _c(7)))


def element_read(conv, addr, t, stg) -> ir.Value:
    word = _align_down(addr)
    dma(conv, word, stg, _c(8), READ)
    return mem_read(arith.addi(stg, arith.subi(addr, word)), t)


def element_write(conv, addr, v, stg) -> None:
    word = _align_down(addr)
    dma(conv, word, stg, _c(8), READ)
    mem_write(arith.addi(stg, arith.subi(addr, word)), v)
    dma(conv, word, stg, _c(8), WRITE)


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


def _for(lo, hi, body, inits=()):
    """scf.for over index [lo, hi) calling body(iv, *iter_args) -> yielded values."""
    one = arith.constant(ir.IndexType.get(), 1)
    loop = scf.ForOp(lo, hi, one, list(inits))
    with ir.InsertionPoint(loop.body):
        out = body(loop.induction_variable, *loop.inner_iter_args)
        scf.yield_(list(out or []))
    return loop.results


def _lane(mask, ivs):
    if mask is None:
        return arith.constant(ir.IntegerType.get_signless(1), 1)
    return mask.at(ivs) if isinstance(mask, Tile) else mask


def _active_span(conv, mask, rivs, length):
    """(first, last, count) of the active lanes of one row, as i64 (-1, -1, 0: none)."""
    if mask is None:
        return _c(0), _c(length - 1), _c(length)

    def body(j, first, last, count):
        m = _lane(mask, rivs + [j])
        j64 = arith.index_cast(_i64(), j)
        unset = arith.cmpi(arith.CmpIPredicate.slt, first, _c(0))
        first = arith.select(arith.andi(m, unset), j64, first)
        last = arith.select(m, j64, last)
        return [first, last, arith.addi(count, arith.extui(_i64(), m))]
    res = _for(conv.index(0), conv.index(length), body, [_c(-1), _c(-1), _c(0)])
    return res[0], res[1], res[2]


def _contiguous(conv, ptrs, rivs, first, last, any_active, es):
    """Whether lanes first..last of a row address consecutive elements."""
    idx = ir.IndexType.get()
    lo = arith.index_cast(idx, arith.select(any_active, first, _c(0)))
    hi = arith.index_cast(idx, arith.select(any_active, arith.addi(last, _c(1)), _c(0)))
    p0 = _first_addr(conv, ptrs, rivs, lo)
    true = arith.constant(ir.IntegerType.get_signless(1), 1)

    def body(j, ok):
        delta = arith.muli(arith.subi(arith.index_cast(_i64(), j), arith.index_cast(_i64(), lo)), _c(es))
        same = arith.cmpi(arith.CmpIPredicate.eq, ptrs.at(rivs + [j]), arith.addi(p0, delta))
        return [arith.andi(ok, same)]
    return _for(lo, hi, body, [true])[0], p0


def _first_addr(conv, ptrs, rivs, lo):
    return ptrs.at(rivs + [lo])


def _span(p_first, p_last, es):
    a0 = _align_down(p_first)
    a1 = _align_up(arith.addi(p_last, _c(es)))
    return a0, a1, arith.subi(a1, a0)


def _load_row(conv, ptrs, mask, other, out, rivs, length, t, es):
    from mlir.dialects import memref
    first, last, _ = _active_span(conv, mask, rivs, length)
    any_active = arith.cmpi(arith.CmpIPredicate.sge, first, _c(0))
    contiguous, p0 = _contiguous(conv, ptrs, rivs, first, last, any_active, es)
    fast = arith.andi(any_active, contiguous)
    stg = conv.staging(length * es + 16)
    idx = ir.IndexType.get()

    def other_at(ivs):
        return other.at(ivs) if isinstance(other, Tile) else (other if other is not None else _zero(t))

    def dma_path():
        p_last = arith.addi(p0, arith.muli(arith.subi(last, first), _c(es)))
        a0, _, n = _span(p0, p_last, es)
        dma_span(conv, a0, stg, n, READ)

        def lane(j):
            ivs = rivs + [j]
            v = _if_else(_lane(mask, ivs), t,
                         lambda: mem_read(arith.addi(stg, arith.subi(ptrs.at(ivs), a0)), t),
                         lambda: other_at(ivs))
            store_elem(v, out, ivs)
        _for(conv.index(0), conv.index(length), lambda j: lane(j))

    def element_path():
        def lane(j):
            ivs = rivs + [j]
            v = _if_else(_lane(mask, ivs), t,
                         lambda: element_read(conv, ptrs.at(ivs), t, stg),
                         lambda: other_at(ivs))
            store_elem(v, out, ivs)
        _for(conv.index(0), conv.index(length), lambda j: lane(j))

    op = scf.IfOp(fast, [], has_else=True)
    with ir.InsertionPoint(op.then_block):
        dma_path()
        scf.yield_([])
    with ir.InsertionPoint(op.else_block):
        element_path()
        scf.yield_([])
    del idx


def _store_row(conv, ptrs, value, mask, rivs, length, t, es):
    first, last, count = _active_span(conv, mask, rivs, length)
    any_active = arith.cmpi(arith.CmpIPredicate.sge, first, _c(0))
    contiguous, p0 = _contiguous(conv, ptrs, rivs, first, last, any_active, es)
    fast = arith.andi(any_active, contiguous)
    stg = conv.staging(length * es + 16)

    def dma_path():
        p_last = arith.addi(p0, arith.muli(arith.subi(last, first), _c(es)))
        a0, a1, n = _span(p0, p_last, es)
        holes = arith.cmpi(arith.CmpIPredicate.ne, count, arith.addi(arith.subi(last, first), _c(1)))
        ragged = arith.ori(arith.cmpi(arith.CmpIPredicate.ne, p0, a0),
                           arith.cmpi(arith.CmpIPredicate.ne, arith.addi(p_last, _c(es)), a1))
        _if(arith.ori(holes, ragged), lambda: dma_span(conv, a0, stg, n, READ))

        def lane(j):
            ivs = rivs + [j]
            _if(_lane(mask, ivs), lambda: mem_write(arith.addi(stg, arith.subi(ptrs.at(ivs), a0)),
                                                     value.at(ivs)))
        _for(conv.index(0), conv.index(length), lambda j: lane(j))
        dma_span(conv, a0, stg, n, WRITE)

    def element_path():
        def lane(j):
            ivs = rivs + [j]
            _if(_lane(mask, ivs), lambda: element_write(conv, ptrs.at(ivs), value.at(ivs), stg))
        _for(conv.index(0), conv.index(length), lambda j: lane(j))

    op = scf.IfOp(fast, [], has_else=True)
    with ir.InsertionPoint(op.then_block):
        dma_path()
        scf.yield_([])
    with ir.InsertionPoint(op.else_block):
        element_path()
        scf.yield_([])


def _operand(conv, op, i):
    return conv.get(op.operands[i]) if len(op.operands) > i else None


@lowers("tt.load")
def lower_load(conv, op):
    ptr_t = op.operands[0].type
    rt = op.results[0].type
    mask, other = _operand(conv, op, 1), _operand(conv, op, 2)
    if not is_tensor(rt):
        t = scalar_type(rt)
        addr = conv.get(op.operands[0])
        stg = conv.staging(8)
        if mask is None:
            conv.set(op.results[0], element_read(conv, addr, t, stg))
        else:
            conv.set(op.results[0], _if_else(mask, t, lambda: element_read(conv, addr, t, stg),
                                             lambda: other if other is not None else _zero(t)))
        return
    ptrs = conv.tile(op.operands[0])
    t = scalar_type(ir.RankedTensorType(rt).element_type)
    es = byte_size(pointee(ir.RankedTensorType(ptr_t).element_type))
    shape = ptrs.shape
    out = conv.alloca(shape, t, "tt.load result", op)
    conv.loop_nest(shape[:-1], lambda rivs: _load_row(conv, ptrs, mask, other, out, rivs,
                                                     shape[-1], t, es))
    conv.set(op.results[0], Tile(shape, t, buf=out))


@lowers("tt.store")
def lower_store(conv, op):
    ptr_t = op.operands[0].type
    value = conv.get(op.operands[1])
    mask = _operand(conv, op, 2)
    if not is_tensor(ptr_t):
        addr = conv.get(op.operands[0])
        stg = conv.staging(8)
        if mask is None:
            element_write(conv, addr, value, stg)
        else:
            _if(mask, lambda: element_write(conv, addr, value, stg))
        return
    ptrs = conv.tile(op.operands[0])
    t = value.elem
    es = byte_size(pointee(ir.RankedTensorType(ptr_t).element_type))
    shape = ptrs.shape
    conv.loop_nest(shape[:-1], lambda rivs: _store_row(conv, ptrs, value, mask, rivs, shape[-1], t, es))


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
    "exch": lambda old, v: v,
    "xchg": lambda old, v: v,
}


def _atomic(conv, op, update):
    """Lower an atomic: program instances run one at a time in the model, so a
    read-modify-write of the element (two 8-byte DMA transfers) is atomic."""
    from mlir.dialects import memref
    rt = op.results[0].type if len(op.results) else None
    stg = conv.staging(8)
    n_vals = len(op.operands) - 1
    ptr = conv.get(op.operands[0])
    vals = [conv.get(v) for v in op.operands[1:]]

    def one(addr, lane_vals, t):
        old = element_read(conv, addr, t, stg)
        new = update(old, *lane_vals)
        element_write(conv, addr, new, stg)
        return old

    if not isinstance(ptr, Tile):
        t = scalar_type(pointee(op.operands[0].type))
        *args, mask = vals if op.name == "tt.atomic_rmw" and n_vals == 2 else (*vals, None)
        if mask is None:
            old = one(ptr, args, t)
        else:
            old = _if_else(mask, t, lambda: one(ptr, args, t), lambda: _zero(t))
        if rt is not None:
            conv.set(op.results[0], old)
        return
    t = scalar_type(pointee(ir.RankedTensorType(op.operands[0].type).element_type))
    has_mask = op.name == "tt.atomic_rmw" and n_vals == 2
    args, mask = (vals[:-1], vals[-1]) if has_mask else (vals, None)
    out = conv.alloca(ptr.shape, t, f"{op.name} result", op)

    def body(ivs):
        lane_vals = [a.at(ivs) if isinstance(a, Tile) else a for a in args]
        old = _if_else(_lane(mask, ivs), t, lambda: one(ptr.at(ivs), lane_vals, t), lambda: _zero(t))
        store_elem(old, out, ivs)
    conv.loop_nest(ptr.shape, body)
    conv.set(op.results[0], Tile(ptr.shape, t, buf=out))


@lowers("tt.atomic_rmw")
def lower_atomic_rmw(conv, op):
    kind = ir.StringAttr(op.attributes["atomic_rmw_op"]).value
    fn = _RMW.get(kind)
    if fn is None:
        raise conv.error(op, f"atomic operation '{kind}' is not supported by the DPU backend")
    if kind == "max" and "umax" in kind:
        fn = _RMW["umax"]
    _atomic(conv, op, fn)


@lowers("tt.atomic_cas")
def lower_atomic_cas(conv, op):
    def cas(old, cmp, val):
        if is_float(old.type):
            same = arith.cmpf(arith.CmpFPredicate.OEQ, old, cmp)
        else:
            same = arith.cmpi(arith.CmpIPredicate.eq, old, cmp)
        return arith.select(same, val, old)
    _atomic(conv, op, cas)
