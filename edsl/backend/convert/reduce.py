"""Tile ops with a combine region or an inner product: tt.reduce, tt.scan,
tt.histogram, tt.dot, tt.dot_scaled.

The combine region of a reduction or scan (`sum`, `max`, `argmax`, a user's
combine function) is lowered once per step of an `scf.for` that carries the
accumulators, with its block arguments bound to the accumulators and the
next elements. `tl.dot` sums each result element over k in order; with an
operand or the result kept in MRAM it runs blocked over WRAM panels
(`_blocked_dot`), in the same order. A reduction whose combine is one commutative op (`sum`,
`max`, `min`, `and`, ...) over a long axis keeps `LANES` accumulators
(element i goes to accumulator i mod LANES; they are combined pairwise at
the end): a fixed order, the same whatever the number of tasklets, that the
host compiler turns into vector code. Float sums are thereby reassociated,
as on GPUs.
"""
from __future__ import annotations

from math import prod

from mlir import ir
from mlir.dialects import arith, memref, scf

from ...dpu.abi import align_up
from ..ttir_text import user_location
from .control import lower_body
from .core import (Tile, byte_size, from_stored, is_float, is_tensor, load_elem, lowers,
                   scalar_type, store_elem, to_stored)
from .elementwise import convert_float, emit_like
from .spill import DotNeed, SpillBuffer, unflatten


# Float arithmetic a scan of 16-bit floats carries in f32 (`_wide_combine`).
_WIDENED = {"arith.addf", "arith.subf", "arith.mulf", "arith.maximumf", "arith.minimumf", "arith.maxnumf",
            "arith.minnumf"}


def _wide_combine(block):
    """For a combine region that is float arithmetic on bf16 or f16 values (the
    `tl.cumsum` / `tl.cumprod` of Triton >= 3.7, which no longer widen those
    to f32 first): a function combining f32 values with the region's ops in
    f32; else None. A scan then carries its prefix in f32 and rounds each
    result once, so its error does not grow along the row, as a GPU's
    logarithmic-depth scan keeps it small (in bf16, in order, it reaches
    10 % after 128 elements)."""
    ops = list(block.operations)[:-1]
    if not ops or not all(is_float(a.type) and ir.FloatType(a.type).width == 16 for a in block.arguments) \
            or not all(op.name in _WIDENED for op in ops):
        return None
    f32 = ir.F32Type.get()

    def combine(values):
        env = dict(zip(block.arguments, values))
        for op in ops:
            env[op.results[0]] = emit_like(op, [env[v] for v in op.operands], [f32])[0]
        return [env[v] for v in list(block.operations)[-1].operands]
    return combine


def _combine(conv, block, accs, nexts):
    index_combine = _index_combine(block)
    if index_combine is not None:
        return index_combine(*accs, *nexts)
    return lower_body(conv, block, list(accs) + list(nexts))


def _index_combine(block):
    """The combine of `tl.argmax` / `tl.argmin` (Triton's `_argmax_combine`,
    `_argmin_combine`: `(v1, i1)` if `v1 > v2` (`<`), or, breaking ties to the
    left, `v1 == v2 and i1 < i2`; else `(v2, i2)`), recognized by its ops, as
    Triton means it: NaN is skipped, as `tl.max` skips it (the interpreter's
    `nanargmax`; the region's comparisons alone would let a NaN win or lose
    depending on the reduction order). A NaN wins only over NaN, by index.
    Returns a function of (v1, i1, v2, i2), or None for another region."""
    args = list(block.arguments)
    ops = list(block.operations)
    if len(args) != 4 or not isinstance(args[0].type, ir.FloatType) or len(ops[-1].operands) != 2:
        return None
    v1, i1, v2, i2 = args

    def owner(v, name):
        op = v.owner
        return op if isinstance(op, ir.OpView) and op.operation.name == name else None

    def pred(op):
        return ir.IntegerAttr(op.attributes["predicate"]).value

    def cmpf_of(v):
        """The predicate of `arith.cmpf v1, v2` giving `v`, or None."""
        op = owner(v, "arith.cmpf")
        return pred(op) if op is not None and list(op.operands) == [v1, v2] else None
    sel_v, sel_i = (owner(v, "arith.select") for v in ops[-1].operands)
    if sel_v is None or sel_i is None or list(sel_v.operands)[1:] != [v1, v2] \
            or list(sel_i.operands)[1:] != [i1, i2] or sel_v.operands[0] != sel_i.operands[0]:
        return None
    cond = sel_v.operands[0]
    better, tie = cmpf_of(cond), False
    if better is None:                                # `gt or tie`
        either = owner(cond, "arith.ori")
        parts = list(either.operands) if either is not None else []
        cmp = [p for p in parts if cmpf_of(p) in (_OGT, _OLT)]
        both = [a for a in (owner(p, "arith.andi") for p in parts) if a is not None]
        if len(cmp) != 1 or len(both) != 1:
            return None
        inner = list(both[0].operands)
        eq = [p for p in inner if cmpf_of(p) == _OEQ]
        lt = [c for c in (owner(p, "arith.cmpi") for p in inner)
              if c is not None and list(c.operands) == [i1, i2] and pred(c) == _SLT]
        if len(eq) != 1 or len(lt) != 1:
            return None
        better, tie = cmpf_of(cmp[0]), True
    if better not in (_OGT, _OLT) or len(ops) != (8 if tie else 4):
        return None

    def combine(a, ia, b, ib):
        nan_a = arith.cmpf(arith.CmpFPredicate.UNO, a, a)
        nan_b = arith.cmpf(arith.CmpFPredicate.UNO, b, b)
        wins = arith.cmpf(arith.CmpFPredicate(better), a, b)
        pick = arith.andi(arith.xori(nan_a, _true()), arith.ori(nan_b, wins))
        if tie:
            same = arith.ori(arith.cmpf(arith.CmpFPredicate.OEQ, a, b), arith.andi(nan_a, nan_b))
            pick = arith.ori(pick, arith.andi(same, arith.cmpi(arith.CmpIPredicate.slt, ia, ib)))
        return [arith.select(pick, a, b), arith.select(pick, ia, ib)]
    return combine


_OEQ, _OGT, _OLT, _SLT = 1, 2, 4, 2                  # arith.CmpFPredicate, arith.CmpIPredicate


def _true():
    return arith.constant(ir.IntegerType.get_signless(1), 1)


LANES = 16
_COMMUTATIVE = {"arith.addf", "arith.addi", "arith.mulf", "arith.muli", "arith.maximumf",
                "arith.minimumf", "arith.maxnumf", "arith.minnumf", "arith.maxsi", "arith.minsi",
                "arith.maxui", "arith.minui", "arith.andi", "arith.ori", "arith.xori"}


def _single_commutative(block) -> bool:
    """Whether a combine region is one commutative, associative op of its two
    arguments (then any grouping of the elements gives the same kind of result)."""
    ops = list(block.operations)
    args = list(block.arguments)
    if len(args) != 2 or len(ops) != 2 or ops[0].name not in _COMMUTATIVE:
        return False
    operands = list(ops[0].operands)
    return (len(operands) == 2 and all(any(o == a for a in args) for o in operands)
            and operands[0] != operands[1] and len(ops[1].operands) == 1
            and ops[1].operands[0] == ops[0].results[0])


def _lanes_reduce(conv, block, tile, at, n):
    """Reduce elements 0..n-1 (n >= 2 * LANES) with LANES interleaved accumulators."""
    groups = n // LANES
    init = [tile.at(at(conv.index(k))) for k in range(LANES)]
    loop = scf.ForOp(conv.index(1), conv.index(groups), conv.index(1), init)
    with ir.InsertionPoint(loop.body):
        base = arith.muli(loop.induction_variable, conv.index(LANES))
        accs = list(loop.inner_iter_args)
        new = []
        for k in range(LANES):
            nxt = tile.at(at(arith.addi(base, conv.index(k))))
            new.append(_combine(conv, block, [accs[k]], [nxt])[0])
        scf.yield_(new)
    accs = list(loop.results)
    for k in range(n - groups * LANES):
        nxt = tile.at(at(conv.index(groups * LANES + k)))
        accs[k] = _combine(conv, block, [accs[k]], [nxt])[0]
    while len(accs) > 1:
        accs = [_combine(conv, block, [accs[i]], [accs[i + 1]])[0] for i in range(0, len(accs), 2)]
    return accs[0]


@lowers("tt.reduce")
def lower_reduce(conv, op):
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    inputs = [conv.tile(v) for v in op.operands]
    block = op.regions[0].blocks[0]
    shape = inputs[0].shape
    n = shape[axis]
    out_shape = shape[:axis] + shape[axis + 1:]
    elems = [t.elem for t in inputs]
    bufs = [conv.alloca(out_shape, e, "tt.reduce result", op) for e in elems] if out_shape else None
    scalars = []

    lanes = len(inputs) == 1 and n >= 2 * LANES and _single_commutative(block)

    def body(oivs):
        def at(k):
            return oivs[:axis] + [k] + oivs[axis:]
        if lanes:
            v = _lanes_reduce(conv, block, inputs[0], at, n)
            if bufs is None:
                scalars.append(v)
            else:
                store_elem(conv.accesses, v, bufs[0], oivs)
            return
        init = [t.at(at(conv.index(0))) for t in inputs]
        loop = scf.ForOp(conv.index(1), conv.index(n), conv.index(1), init)
        with ir.InsertionPoint(loop.body):
            nexts = [t.at(at(loop.induction_variable)) for t in inputs]
            scf.yield_(_combine(conv, block, loop.inner_iter_args, nexts))
        if bufs is None:
            scalars.extend(loop.results)
        else:
            for v, buf in zip(loop.results, bufs):
                store_elem(conv.accesses, v, buf, oivs)
    if out_shape:
        conv.par_nest(out_shape, body)      # rows are independent: shared out
    else:
        body([])                            # a scalar: every tasklet computes it alike
    for k, result in enumerate(op.results):
        if bufs is None:
            conv.set(result, scalars[k])
        else:
            conv.set(result, Tile(out_shape, elems[k], buf=bufs[k], accesses=conv.accesses))


@lowers("tt.scan")
def lower_scan(conv, op):
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    reverse = "reverse" in op.attributes and ir.BoolAttr(op.attributes["reverse"]).value
    inputs = [conv.tile(v) for v in op.operands]
    block = op.regions[0].blocks[0]
    shape = inputs[0].shape
    n = shape[axis]
    line_shape = shape[:axis] + shape[axis + 1:]
    bufs = [conv.alloca(shape, t.elem, "tt.scan result", op) for t in inputs]
    wide = _wide_combine(block)
    f32 = ir.F32Type.get()

    def body(oivs):
        def at(k):
            return oivs[:axis] + [k] + oivs[axis:]

        def pos(i):                      # the i-th element visited along the axis
            return arith.subi(conv.index(n - 1), i) if reverse else i
        first = at(pos(conv.index(0)))
        init = [t.at(first) for t in inputs]
        for v, buf in zip(init, bufs):
            store_elem(conv.accesses, v, buf, first)
        if wide is not None:
            init = [convert_float(v, f32) for v in init]
        loop = scf.ForOp(conv.index(1), conv.index(n), conv.index(1), init)
        with ir.InsertionPoint(loop.body):
            where = at(pos(loop.induction_variable))
            nexts = [t.at(where) for t in inputs]
            if wide is None:
                new = results = _combine(conv, block, loop.inner_iter_args, nexts)
            else:
                new = wide(list(loop.inner_iter_args) + [convert_float(v, f32) for v in nexts])
                results = [convert_float(v, t.elem) for v, t in zip(new, inputs)]
            for v, buf in zip(results, bufs):
                store_elem(conv.accesses, v, buf, where)
            scf.yield_(new)
    if axis == 0:
        # Lines across the first dimension: tasklets own chunks of that dimension
        # only, so one tasklet scans them all.
        with conv.single():
            conv.loop_nest(line_shape, body)
    else:                                   # rows are independent: shared out
        conv.par_nest(line_shape, body, shape)
    for result, buf, t in zip(op.results, bufs, inputs):
        conv.set(result, Tile(shape, t.elem, buf=buf, accesses=conv.accesses))


@lowers("tt.histogram")
def lower_histogram(conv, op):
    """`tl.histogram(x, bins, mask)`: out[b] counts the elements equal to b
    where the mask is true; values outside [0, bins) are not counted. One
    tasklet counts (the bins are shared by every element)."""
    src = conv.tile(op.operands[0])
    mask = conv.tile(op.operands[1]) if len(op.operands) > 1 else None
    shape = tuple(ir.RankedTensorType(op.results[0].type).shape)
    elem = ir.RankedTensorType(op.results[0].type).element_type
    out = conv.alloca(shape, elem, "tt.histogram result", op)

    def count(ivs):
        v = src.at(ivs)
        ok = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, v, arith.constant(v.type, 0)),
                        arith.cmpi(arith.CmpIPredicate.slt, v, arith.constant(v.type, shape[0])))
        if mask is not None:
            ok = arith.andi(ok, mask.at(ivs))
        branch = scf.IfOp(ok, [], has_else=False)
        with ir.InsertionPoint(branch.then_block):
            at = [arith.index_cast(ir.IndexType.get(), v)]
            old = load_elem(conv.accesses, out, at, elem)
            store_elem(conv.accesses, arith.addi(old, arith.constant(elem, 1)), out, at)
            scf.yield_([])
    with conv.single():
        conv.loop_nest(shape, lambda ivs: store_elem(conv.accesses, arith.constant(elem, 0), out, ivs))
        conv.loop_nest(src.shape, count)
    conv.set(op.results[0], Tile(shape, elem, buf=out, accesses=conv.accesses))


def _widen(v, acc_t):
    """A value of tl.dot converted to the type it is summed in (or back)."""
    t = v.type
    if t == acc_t:
        return v
    if is_float(acc_t):
        if is_float(t):
            if ir.FloatType(t).width < ir.FloatType(acc_t).width:
                return arith.extf(acc_t, v)
            return arith.truncf(acc_t, v)
        return arith.sitofp(acc_t, v)
    if ir.IntegerType(t).width < ir.IntegerType(acc_t).width:
        return arith.extsi(acc_t, v)
    return arith.trunci(acc_t, v)


@lowers("tt.dot")
def lower_dot(conv, op, operands=None):
    """`c + a @ b`; `operands`: the tiles (a, b, c) when not the op's own (dot_scaled)."""
    a, b, c = operands or (conv.tile(v) for v in op.operands)
    if len(a.shape) not in (2, 3):
        raise conv.error(op, "tl.dot on tensors of rank other than 2 or 3 is not supported")
    a = conv.materialize(a, "tl.dot operand", op)
    b = conv.materialize(b, "tl.dot operand", op)
    acc_t = c.elem
    shape = c.shape
    k_dim = a.shape[-1]
    out = conv.alloca(shape, acc_t, "tl.dot result", op)
    mul_t, sum_t = _dot_types(a.elem, b.elem, acc_t)
    panels = conv.dot_panels(DotNeed(conv.tile_key(a.buf), conv.tile_key(b.buf), conv.tile_key(out),
                                     shape[-2], shape[-1], k_dim, byte_size(a.elem), byte_size(b.elem),
                                     byte_size(sum_t), byte_size(acc_t), sum_t != acc_t))
    if panels is not None:
        _blocked_dot(conv, op, a, b, c, out, mul_t, sum_t, panels)
        conv.set(op.results[0], Tile(shape, acc_t, buf=out, accesses=conv.accesses))
        return

    def body(ivs):
        batch, i, j = ivs[:-2], ivs[-2], ivs[-1]
        loop = scf.ForOp(conv.index(0), conv.index(k_dim), conv.index(1), [_widen(c.at(ivs), sum_t)])
        with ir.InsertionPoint(loop.body):
            k = loop.induction_variable
            x = _widen(a.at(batch + [i, k]), mul_t)
            y = _widen(b.at(batch + [k, j]), mul_t)
            scf.yield_([_fma(loop.inner_iter_args[0], x, y)])
        store_elem(conv.accesses, _widen(loop.results[0], acc_t), out, ivs)
    conv.par_nest(shape, body)
    conv.set(op.results[0], Tile(shape, acc_t, buf=out, accesses=conv.accesses))


def _dot_types(a_t, b_t, acc_t):
    """(type of a tl.dot's products, type they are summed in). Float operands
    narrower than 32 bits (16-bit, fp8, and dot_scaled's decoded operands)
    have exact products in fp32, summed in fp64 and rounded once: the result
    is the exact dot rounded (GPU tensor cores keep such products exact too;
    an in-order fp32 sum of products that cancel, |terms| ~ 1e3 for a result
    ~ 1e-2, is off by percents). Other float dots multiply and add in the
    accumulator's type (at least fp32); integer dots in the accumulator's."""
    if not is_float(acc_t):
        return acc_t, acc_t
    if all(is_float(t) and ir.FloatType(t).width < 32 for t in (a_t, b_t)):
        return ir.F32Type.get(), ir.F64Type.get()
    wide = acc_t if ir.FloatType(acc_t).width >= 32 else ir.F32Type.get()
    return wide, wide


def _fma(acc, x, y):
    """acc + x * y, the product widened to the sum's type, rounded after each
    op (both paths of tl.dot: the same bits)."""
    if not is_float(acc.type):
        return arith.addi(acc, arith.muli(x, y))
    return arith.addf(acc, _widen(arith.mulf(x, y), acc.type))


def _blocked_dot(conv, op, a, b, c, out, mul_t, sum_t, panels) -> None:
    """tl.dot when an operand or the result is kept in MRAM: a blocked loop
    over panels of N columns (nb) and K (kb) that fit in WRAM. B's panel
    (kb x nb) is read into WRAM once for all tasklets, each of which then
    takes its rows of M: it reads the row's K segment of A, sums into a WRAM
    row of nb accumulators, and writes the row's result segment. With K in
    one panel a row is done in one visit; with K split, each tasklet carries
    `rb` rows' accumulators across the K panels (B's panels are read once
    per pass over rb rows). Every element is summed in the same order as by
    the unblocked loop (C, then k = 0, 1, ...), so results are
    bit-identical."""
    kb, nb, rb = panels.kb, panels.nb, panels.rb
    shape = c.shape
    batch, (m_dim, n_dim), k_dim = shape[:-2], shape[-2:], a.shape[-1]
    acc_t = c.elem
    wram, loc = conv.wram, user_location(op.location)
    a_mram, b_mram, o_mram = (isinstance(x, SpillBuffer) for x in (a.buf, b.buf, out))
    es_a, es_b, es_sum, es_acc = (byte_size(t) for t in (a.elem, b.elem, sum_t, acc_t))
    i64 = ir.IntegerType.get_signless(64)

    def c64(v):
        return arith.constant(i64, v)

    def bytes_of(count, es):                   # (count elements: an index) rounded up to 8 bytes
        n = arith.muli(arith.index_cast(i64, count), c64(es))
        return arith.andi(arith.addi(n, c64(7)), c64(-8))

    def addr(view):
        return arith.index_cast(i64, memref.extract_aligned_pointer_as_index(view))

    # WRAM: B's panel (shared), and each tasklet's rows.
    panel_w = align_up(nb * es_b) // es_b
    panel = (wram.buffer((kb, panel_w), b.buf.stored, kb * panel_w * es_b, "tl.dot panel of B", loc)
             if b_mram else None)
    acc_w = align_up(nb * es_sum) // es_sum
    sizes = [("acc", (rb, acc_w), es_sum, sum_t)]
    if a_mram:
        sizes.append(("a", (align_up(kb * es_a) // es_a,), es_a, a.buf.stored))
    if o_mram and sum_t != acc_t:
        sizes.append(("out", (align_up(nb * es_acc) // es_acc,), es_acc, out.stored))
    block = wram.private(sum(prod(n) * es for _, n, es, _ in sizes), "tl.dot rows", loc)
    views, at = {}, 0
    for name, n, es, t in sizes:
        views[name] = wram.view(block, at, list(n), t)
        at += prod(n) * es
    acc = views["acc"]
    with conv._alloca_ip, ir.Location.unknown():
        row_addrs = {name: addr(v) for name, v in views.items()}

    def lanes(count, body):
        loop = scf.ForOp(conv.index(0), count, conv.index(1))
        with ir.InsertionPoint(loop.body):
            body(loop.induction_variable)
            scf.yield_([])

    def load_panel(bivs, k0, rows, n0, nw):
        """B[bivs, k0:k0+rows, n0:n0+nw] into the panel, rows shared out."""
        def row(kvs):
            kk = kvs[0]
            guard = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, kk, rows), [], has_else=False)
            with ir.InsertionPoint(guard.then_block):
                k = arith.addi(k0, kk)
                conv.accesses.note_buffer(b.buf, bivs + [k, n0], False)
                conv.accesses.note_buffer(panel, [kk], True)
                dst = arith.addi(addr(panel), arith.muli(arith.index_cast(i64, kk), c64(panel_w * es_b)))
                b.buf.read_row(bivs + [k], n0, bytes_of(nw, es_b), dst)
                scf.yield_([])
        conv.par_nest((kb,), row, (kb, panel_w))

    def start(bivs, i, r, n0, nw):
        """Accumulator row r of result row i: C's values."""
        lanes(nw, lambda jj: memref.store(_widen(c.at(bivs + [i, arith.addi(n0, jj)]), sum_t), acc, [r, jj]))

    def step(bivs, i, r, k0, rows, n0, nw):
        """Accumulator row r += A[i, k0:k0+rows] @ B's panel."""
        if a_mram:
            conv.accesses.note_buffer(a.buf, bivs + [i, k0], False)
            a.buf.read_row(bivs + [i], k0, bytes_of(rows, es_a), row_addrs["a"])

        def kstep(kk):
            k = arith.addi(k0, kk)
            x = (_widen(from_stored(memref.load(views["a"], [kk]), a.elem), mul_t) if a_mram
                 else _widen(a.at(bivs + [i, k]), mul_t))

            def lane(jj):
                y = (_widen(load_elem(conv.accesses, panel, [kk, jj], b.elem), mul_t) if b_mram
                     else _widen(b.at(bivs + [k, arith.addi(n0, jj)]), mul_t))
                memref.store(_fma(memref.load(acc, [r, jj]), x, y), acc, [r, jj])
            lanes(nw, lane)
        lanes(rows, kstep)

    def finish(bivs, i, r, n0, nw):
        """Result row i's segment from accumulator row r, rounded to the result type."""
        def result(jj):
            return _widen(memref.load(acc, [r, jj]), acc_t)
        if not o_mram:
            lanes(nw, lambda jj: store_elem(conv.accesses, result(jj), out, bivs + [i, arith.addi(n0, jj)]))
            return
        src = arith.addi(row_addrs["acc"], arith.muli(arith.index_cast(i64, r), c64(acc_w * es_sum)))
        if sum_t != acc_t:
            lanes(nw, lambda jj: memref.store(to_stored(result(jj), out.stored), views["out"], [jj]))
            src = row_addrs["out"]
        conv.accesses.note_buffer(out, bivs + [i, n0], True)
        out.write_row(bivs + [i], n0, bytes_of(nw, es_acc), src)

    zero = conv.index(0)

    def per_columns(bivs):
        def panel_columns(n0):
            nw = arith.minsi(conv.index(nb), arith.subi(conv.index(n_dim), n0))
            if kb == k_dim:                    # a row in one visit
                if b_mram:
                    load_panel(bivs, zero, conv.index(k_dim), n0, nw)

                def row(ivs):
                    start(bivs, ivs[0], zero, n0, nw)
                    step(bivs, ivs[0], zero, zero, conv.index(k_dim), n0, nw)
                    finish(bivs, ivs[0], zero, n0, nw)
                conv.par_nest((m_dim,), row, (m_dim, n_dim))
                return
            # K split: passes over rb of this tasklet's rows, their accumulators
            # carried across the K panels.
            lo, hi = conv.my_range((m_dim, n_dim)) if conv.tasklets > 1 else (zero, conv.index(m_dim))

            def my_rows(p, body):
                """body(i, r) for row r < rb of pass p of this tasklet's rows."""
                def rows():
                    def each(r):
                        i = arith.addi(lo, arith.addi(arith.muli(p, conv.index(rb)), r))
                        live = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, i, hi), [], has_else=False)
                        with ir.InsertionPoint(live.then_block):
                            conv.accesses.mine(i)
                            body(i, r)
                            scf.yield_([])
                    lanes(conv.index(rb), each)
                if conv.tasklets == 1:
                    rows()
                else:
                    with conv.accesses.divergent(conv.owner((m_dim, n_dim))):
                        rows()

            def one_pass(p):
                def kpanel(k0):
                    depth = arith.minsi(conv.index(kb), arith.subi(conv.index(k_dim), k0))
                    if b_mram:
                        load_panel(bivs, k0, depth, n0, nw)
                    first = arith.cmpi(arith.CmpIPredicate.eq, k0, zero)

                    def compute(i, r):
                        init = scf.IfOp(first, [], has_else=False)
                        with ir.InsertionPoint(init.then_block):
                            start(bivs, i, r, n0, nw)
                            scf.yield_([])
                        step(bivs, i, r, k0, depth, n0, nw)
                    my_rows(p, compute)
                _uniform_loop(conv, 0, k_dim, kb, kpanel)
                my_rows(p, lambda i, r: finish(bivs, i, r, n0, nw))
            rows_each = -(-m_dim // conv.tasklets)
            _uniform_loop(conv, 0, -(-rows_each // rb), 1, one_pass)
        _uniform_loop(conv, 0, n_dim, nb, panel_columns)

    if batch:
        _uniform_loop(conv, 0, prod(batch), 1, lambda bi: per_columns(unflatten(bi, batch)))
    else:
        per_columns([])


def _uniform_loop(conv, lo: int, hi: int, step: int, body) -> None:
    """An scf.for every tasklet runs alike (as control.lower_for: nothing
    pending when it starts, a barrier at the end of its body if the next
    iteration's first accesses need one)."""
    loop = scf.ForOp(conv.index(lo), conv.index(hi), conv.index(step))
    conv.accesses.cycle(loop)
    with ir.InsertionPoint(loop.body):
        body(loop.induction_variable)
        scf.yield_([])


@lowers("tt.dot_scaled")
def lower_dot_scaled(conv, op):
    """`tl.dot_scaled` as Triton's GPU backends decompose it
    (TritonGPU's DecomposeScaledBlocked): each operand is decoded into the
    compute type (f16 if either operand is fp16, else bf16: e2m1 unpacked two
    values a byte, low nibble first, along K or, without k-packing, the other
    dimension; fp8, bf16 and fp16 converted), multiplied by its e8m0 scale
    (2**(s - 127), as that type: one per `K / scale columns` values of K; 255
    gives NaN unless fastMath), then an ordinary dot into the f32 accumulator."""
    sizes = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    a, b, c, *scales = op.operands
    a_scale = scales[0] if sizes[3] else None
    b_scale = scales[-1] if sizes[4] else None
    fmt = [ir.StringAttr(op.attributes[k]).value for k in ("lhs", "rhs")]
    compute = ir.F16Type.get() if "fp16" in fmt else ir.BF16Type.get()
    fast = "fastMath" in op.attributes and ir.BoolAttr(op.attributes["fastMath"]).value
    k_pack = [ir.BoolAttr(op.attributes[k]).value if k in op.attributes else True
              for k in ("lhs_k_pack", "rhs_k_pack")]
    shape = conv.tile(c).shape
    k_dim = conv.tile(a).shape[-1] * (2 if fmt[0] == "e2m1" and k_pack[0] else 1)
    tiles = [_scaled_operand(conv, conv.tile(v), s and conv.tile(s), f, kp, compute, side, fast,
                             shape[:-2] + ((shape[-2], k_dim) if side == 0 else (k_dim, shape[-1])))
             for side, (v, s, f, kp) in enumerate(zip((a, b), (a_scale, b_scale), fmt, k_pack))]
    lower_dot(conv, op, (*tiles, conv.tile(c)))


def _scaled_operand(conv, src, scale, fmt, k_pack, compute, side, fast, shape):
    """Operand `side` (0: lhs, 1: rhs) of a dot_scaled decoded and scaled, as a
    lazy `shape` tile of `compute` values."""
    rank = len(shape)
    k_axis = rank - 1 if side == 0 else rank - 2
    packed = (k_axis if k_pack else (rank - 2 if side == 0 else rank - 1)) if fmt == "e2m1" else None
    i8, i32 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32)
    factor = shape[k_axis] // scale.shape[-1] if scale is not None else 1

    def value(ivs):
        if packed is None:
            return convert_float(src.at(ivs), compute)
        two = conv.index(2)
        byte = src.at(ivs[:packed] + [arith.divui(ivs[packed], two)] + ivs[packed + 1:])
        shift = arith.muli(arith.index_cast(i8, arith.remui(ivs[packed], two)), arith.constant(i8, 4))
        nibble = arith.trunci(ir.IntegerType.get_signless(4), arith.shrui(byte, shift))
        return arith.extf(compute, arith.bitcast(ir.Type.parse("f4E2M1FN"), nibble))

    def element(ivs):
        v = value(ivs)
        if scale is None:
            return v
        # The scale is indexed as if it were the lhs' (rows of N for the rhs).
        other = ivs[-2] if side == 0 else ivs[-1]
        s = scale.at(ivs[:-2] + [other, arith.divui(ivs[k_axis], conv.index(factor))])
        if isinstance(compute, ir.BF16Type):
            i16 = ir.IntegerType.get_signless(16)
            s16 = arith.bitcast(compute, arith.shli(arith.extui(i16, s), arith.constant(i16, 7)))
        else:
            f32 = arith.bitcast(ir.F32Type.get(), arith.shli(arith.extui(i32, s), arith.constant(i32, 23)))
            s16 = arith.truncf(compute, f32)
        out = arith.mulf(v, s16)
        if fast:
            return out
        nan = arith.constant(compute, float("nan"))
        return arith.select(arith.cmpi(arith.CmpIPredicate.eq, s, arith.constant(i8, -1)), nan, out)
    cost = 6 + src.cost + (scale.cost if scale is not None else 0)
    return Tile(tuple(shape), compute, fn=element, cost=cost)


del is_tensor, scalar_type
