"""Shape ops: make_range, splat, broadcast, expand_dims, reshape, trans, join,
split, cat, unsplat, gather, and pointer arithmetic (`tt.addptr`).

All of them are index remappings, so they stay lazy: the element function of
the result reads the source at remapped indices.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from .core import (LaneRange, RowForm, Tile, and_valid, byte_size, const_int, is_tensor, lowers,
                   pointee, scalar_type)
from .builders import cast_int, index_c
from . import ops


def _shape(t: ir.Type) -> tuple[int, ...]:
    return tuple(ir.RankedTensorType(t).shape)


def _elem(t: ir.Type) -> ir.Type:
    return scalar_type(ir.RankedTensorType(t).element_type)


@lowers("tt.make_range")
def lower_make_range(conv, op):
    start = ops.MakeRange(op).start
    t = op.results[0].type
    i32 = _elem(t)

    def element(ivs):
        v = arith.index_cast(i32, ivs[0])
        return arith.addi(v, arith.constant(i32, start)) if start else v
    row = RowForm(lambda rivs: arith.constant(i32, start), 1)
    conv.values.set(op.results[0], Tile(_shape(t), i32, fn=element, cost=1, row=row), op)


@lowers("tt.splat")
def lower_splat(conv, op):
    value = conv.values.get(ops.Splat(op).src)
    t = op.results[0].type
    row = RowForm(lambda rivs: value, 0, const=const_int(value))
    conv.values.set(op.results[0], Tile(_shape(t), _elem(t), fn=lambda ivs: value, cost=0, row=row), op)


@lowers("tt.unsplat")
def lower_unsplat(conv, op):
    src = conv.values.tile(ops.Unsplat(op).src)
    conv.values.set(op.results[0], src.at([index_c(0)] * len(src.shape)))


@lowers("tt.broadcast")
def lower_broadcast(conv, op):
    src = conv.values.tile(ops.Broadcast(op).src)
    shape = _shape(op.results[0].type)

    def remap(ivs):
        return [iv if s == d else index_c(0) for iv, s, d in zip(ivs, src.shape, shape)]

    def element(ivs):
        return src.at(remap(ivs))
    row = lanes = None
    if src.shape[-1] == 1 and shape[-1] != 1:
        row = RowForm(lambda rivs: src.at(remap(rivs + [index_c(0)])), 0)
    elif src.shape[-1] == shape[-1]:
        if src.row is not None:
            r = src.row
            row = RowForm(lambda rivs: r.base(remap(rivs + [None])[:-1]), r.stride, r.const,
                          None if r.valid is None else lambda rivs: r.valid(remap(rivs + [None])[:-1]))
        if src.lanes is not None:
            lanes = LaneRange(lambda rivs: src.lanes.bounds(remap(rivs + [None])[:-1]))
    conv.values.set(op.results[0], Tile(shape, src.elem, fn=element, cost=src.cost, row=row, lanes=lanes), op)


@lowers("tt.expand_dims")
def lower_expand_dims(conv, op):
    view = ops.ExpandDims(op)
    src, axis = conv.values.get(view.src), view.axis
    shape = _shape(op.results[0].type)

    def element(ivs):
        return src.at(ivs[:axis] + ivs[axis + 1:])
    row = lanes = None
    if axis == len(shape) - 1:
        row = RowForm(lambda rivs: src.at(rivs), 0)
    else:
        if src.row is not None:
            r = src.row
            row = RowForm(lambda rivs: r.base(rivs[:axis] + rivs[axis + 1:]), r.stride, r.const,
                          None if r.valid is None else lambda rivs: r.valid(rivs[:axis] + rivs[axis + 1:]))
        if src.lanes is not None:
            lanes = LaneRange(lambda rivs: src.lanes.bounds(rivs[:axis] + rivs[axis + 1:]))
    conv.values.set(op.results[0], Tile(shape, src.elem, fn=element, cost=src.cost, row=row, lanes=lanes), op)


def _strides(shape):
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


@lowers("tt.reshape")
def lower_reshape(conv, op):
    src = conv.values.tile(ops.Reshape(op).src)
    shape = _shape(op.results[0].type)
    out_strides, in_strides = _strides(shape), _strides(src.shape)

    def element(ivs):
        flat = None
        for iv, s in zip(ivs, out_strides):
            term = arith.muli(iv, index_c(s)) if s != 1 else iv
            flat = term if flat is None else arith.addi(flat, term)
        if flat is None:
            flat = index_c(0)
        src_ivs = []
        for d, s in zip(src.shape, in_strides):
            q = arith.divui(flat, index_c(s)) if s != 1 else flat
            src_ivs.append(arith.remui(q, index_c(d)))
        return src.at(src_ivs)
    conv.values.set(op.results[0], Tile(shape, src.elem, fn=element, cost=src.cost + 2 * len(shape)), op)


@lowers("tt.trans")
def lower_trans(conv, op):
    view = ops.Trans(op)
    src, order = conv.values.tile(view.src), view.order
    shape = _shape(op.results[0].type)

    def element(ivs):
        src_ivs = [None] * len(ivs)
        for i, o in enumerate(order):
            src_ivs[o] = ivs[i]
        return src.at(src_ivs)
    conv.values.set(op.results[0], Tile(shape, src.elem, fn=element, cost=src.cost), op)


@lowers("tt.join")
def lower_join(conv, op):
    view = ops.Join(op)
    a, b = conv.values.tile(view.lhs), conv.values.tile(view.rhs)
    shape = _shape(op.results[0].type)

    def element(ivs):
        first = arith.cmpi(arith.CmpIPredicate.eq, ivs[-1], index_c(0))
        return arith.select(first, a.at(ivs[:-1]), b.at(ivs[:-1]))
    conv.values.set(op.results[0], Tile(shape, a.elem, fn=element, cost=a.cost + b.cost + 2), op)


@lowers("tt.split")
def lower_split(conv, op):
    src = conv.values.tile(ops.Split(op).src)
    shape = _shape(op.results[0].type)
    for k, result in enumerate(op.results):
        conv.values.set(result, Tile(shape, src.elem, fn=lambda ivs, k=k: src.at(ivs + [index_c(k)]),
                              cost=src.cost), op)


@lowers("tt.cat")
def lower_cat(conv, op):
    view = ops.Cat(op)
    a, b = conv.values.tile(view.lhs), conv.values.tile(view.rhs)
    shape = _shape(op.results[0].type)
    n0 = a.shape[0]
    # The two halves may hold different lazy expressions: materialize both and select.
    a, b = conv.buffers.materialize(a, "tt.cat operand", op), conv.buffers.materialize(b, "tt.cat operand", op)

    def element(ivs):
        first = arith.cmpi(arith.CmpIPredicate.ult, ivs[0], index_c(n0))
        i_b = arith.select(first, index_c(0), arith.subi(ivs[0], index_c(n0)))
        i_a = arith.select(first, ivs[0], index_c(0))
        return arith.select(first, a.at([i_a] + ivs[1:]), b.at([i_b] + ivs[1:]))
    conv.values.set(op.results[0], Tile(shape, a.elem, fn=element, cost=4), op)


@lowers("tt.gather")
def lower_gather(conv, op):
    """`tl.gather(src, idx, axis)`: out[..., j, ...] = src[..., idx[..., j, ...], ...].
    An index outside the source is undefined in Triton; here it is clamped
    into it (the read stays inside the source's buffer)."""
    view = ops.Gather(op)
    src = conv.buffers.materialize(conv.values.tile(view.src), "tt.gather source", op)
    idx, axis = conv.values.tile(view.indices), view.axis
    n = src.shape[axis]

    def element(ivs):
        i = idx.at(ivs)
        i = arith.minsi(arith.maxsi(i, arith.constant(i.type, 0)), arith.constant(i.type, n - 1))
        return src.at(ivs[:axis] + [arith.index_cast(ir.IndexType.get(), i)] + ivs[axis + 1:])
    conv.values.set(op.results[0], Tile(_shape(op.results[0].type), src.elem, fn=element, cost=idx.cost + 4), op)


@lowers("tt.addptr")
def lower_addptr(conv, op):
    """ptr + offset * sizeof(pointee), on i64 MRAM addresses."""
    t = op.results[0].type
    elt = ir.RankedTensorType(t).element_type if is_tensor(t) else t
    size = byte_size(pointee(elt))
    i64 = ir.IntegerType.get_signless(64)
    view = ops.AddPtr(op)
    base, off = conv.values.get(view.ptr), conv.values.get(view.offset)

    def add(p, o):
        o = cast_int(o, i64, signed=True)
        if size != 1:
            o = arith.muli(o, arith.constant(i64, size))
        return arith.addi(p, o)
    if not is_tensor(t):
        conv.values.set(op.results[0], add(base, off), op)
        return
    cost = 2 + sum(v.cost for v in (base, off) if isinstance(v, Tile))
    shape = _shape(t)
    conv.values.set(op.results[0], Tile(shape, i64, fn=lambda ivs: add(
        base.at(ivs) if isinstance(base, Tile) else base,
        off.at(ivs) if isinstance(off, Tile) else off), cost=cost,
        row=_addptr_row(conv, base, off, size, shape[-1])), op)


def _row_of(v):
    """The row form of a tile operand, or a scalar's (stride 0)."""
    if isinstance(v, Tile):
        return v.row
    return RowForm(lambda rivs: v, 0, const=const_int(v))


def no_wrap(base, stride: int, lanes: int):
    """i1: lanes 0..lanes-1 of `base + j * stride` (an integer of width < 64)
    stay within the signed range of its width, so sign extension is affine."""
    w = ir.IntegerType(base.type).width
    i64 = ir.IntegerType.get_signless(64)
    b = arith.extsi(i64, base) if w < 64 else base
    last = arith.addi(b, arith.constant(i64, (lanes - 1) * stride))
    ok_hi = arith.cmpi(arith.CmpIPredicate.sle, last, arith.constant(i64, (1 << (w - 1)) - 1))
    ok_lo = arith.cmpi(arith.CmpIPredicate.sge, last, arith.constant(i64, -(1 << (w - 1))))
    return arith.andi(ok_hi, ok_lo)


def _addptr_row(conv, base, off, size: int, lanes: int):
    """Addresses base + off * size along a row, when both are affine there."""
    pr, orow = _row_of(base), _row_of(off)
    if pr is None or orow is None:
        return None
    i64 = ir.IntegerType.get_signless(64)

    def addr(rivs):
        o = cast_int(orow.base(rivs), i64, signed=True)
        if size != 1:
            o = arith.muli(o, arith.constant(i64, size))
        return arith.addi(pr.base(rivs), o)

    def valid(rivs):
        checks = [pr.valid(rivs) if pr.valid else None, orow.valid(rivs) if orow.valid else None]
        ob = orow.base(rivs)
        if orow.stride and isinstance(ob.type, ir.IntegerType) and ir.IntegerType(ob.type).width < 64:
            checks.append(no_wrap(ob, orow.stride, lanes))
        return and_valid(*checks)
    needs = pr.valid or orow.valid or orow.stride
    return RowForm(addr, pr.stride + orow.stride * size, valid=valid if needs else None)
