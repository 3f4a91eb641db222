"""Tile ops with an inner product: tt.dot and tt.dot_scaled.

`tl.dot` sums each result element over k in order (`_dot_types` says in
which type); with an operand or the result kept in MRAM it runs blocked over
WRAM panels (`_blocked_dot`), in the same order, so results are bit-identical.
`tl.dot_scaled` decodes and scales its operands, then is an ordinary dot.
"""
from __future__ import annotations

from math import prod

from mlir import ir
from mlir.dialects import arith, memref, scf

from ...target.dpu import align_up
from ..ttir_reader import user_location
from .core import Tile, byte_size, is_float, lowers
from .elementwise import convert_float
from .spill import DotNeed, unflatten
from .builders import align_up as align_up_value, as_i64, c64, from_stored, index_c, to_stored
from . import ops


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
    a, b, c = operands or (conv.values.tile(v) for v in op.operands)
    if len(a.shape) not in (2, 3):
        raise conv.sites.error(op, "tl.dot on tensors of rank other than 2 or 3 is not supported")
    a = conv.buffers.materialize(a, "tl.dot operand", op)
    b = conv.buffers.materialize(b, "tl.dot operand", op)
    acc_t = c.elem
    shape = c.shape
    k_dim = a.shape[-1]
    out = conv.buffers.alloca(shape, acc_t, "tl.dot result", op)
    mul_t, sum_t = _dot_types(a.elem, b.elem, acc_t)
    key = conv.buffers.tile_key
    number = conv.buffers.note_dot(DotNeed(key(a.buf), key(b.buf), key(out), shape[-2], shape[-1], k_dim,
                                           byte_size(a.elem), byte_size(b.elem), byte_size(sum_t),
                                           byte_size(acc_t), sum_t != acc_t))

    def body(ivs):
        batch, i, j = ivs[:-2], ivs[-2], ivs[-1]
        loop = scf.ForOp(index_c(0), index_c(k_dim), index_c(1), [_widen(c.at(ivs), sum_t)])
        with ir.InsertionPoint(loop.body):
            k = loop.induction_variable
            x = _widen(a.at(batch + [i, k]), mul_t)
            y = _widen(b.at(batch + [k, j]), mul_t)
            scf.yield_([_fma(loop.inner_iter_args[0], x, y)])
        conv.buffers.store(_widen(loop.results[0], acc_t), out, ivs)

    def emit():
        # (blocked when the plan keeps an operand or the result in MRAM)
        panels = conv.buffers.spill.panels(number)
        if panels is not None:
            _blocked_dot(conv, op, a, b, c, out, mul_t, sum_t, panels)
        else:
            conv.tasklets.par_nest(shape, body)
    conv.buffers.spill.unit([a.buf, b.buf, out], emit)
    conv.values.set(op.results[0], Tile(shape, acc_t, buf=out, accesses=conv.buffers.accesses))


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
    dot = _BlockedDot(conv, op, a, b, c, out, mul_t, sum_t, panels)
    batch = c.shape[:-2]
    if batch:
        _uniform_loop(conv, 0, prod(batch), 1, lambda bi: dot.columns(unflatten(bi, batch)))
    else:
        dot.columns([])


class _BlockedDot:
    """The WRAM of a blocked tl.dot (B's panel, each tasklet's rows) and the
    steps `_blocked_dot` runs over it."""

    def __init__(self, conv, op, a, b, c, out, mul_t, sum_t, panels):
        self.conv, self.a, self.b, self.c, self.out = conv, a, b, c, out
        self.mul_t, self.sum_t, self.acc_t = mul_t, sum_t, c.elem
        self.kb, self.nb, self.rb = panels.kb, panels.nb, panels.rb
        self.m_dim, self.n_dim = c.shape[-2:]
        self.k_dim = a.shape[-1]
        # (the tiles kept in MRAM; None: in WRAM)
        self.a_mram, self.b_mram, self.o_mram = (conv.buffers.spill.of(x) for x in (a.buf, b.buf, out))
        self.es_a, self.es_b, self.es_sum, self.es_acc = (byte_size(t) for t in (a.elem, b.elem, sum_t, c.elem))
        wram, loc = conv.buffers.wram, user_location(op.location)
        # WRAM: B's panel (shared), and each tasklet's rows.
        self.panel_w = align_up(self.nb * self.es_b) // self.es_b
        self.panel = (wram.buffer((self.kb, self.panel_w), self.b_mram.stored, self.kb * self.panel_w * self.es_b,
                                  "tl.dot panel of B", loc) if self.b_mram else None)
        self.acc_w = align_up(self.nb * self.es_sum) // self.es_sum
        sizes = [("acc", (self.rb, self.acc_w), self.es_sum, sum_t)]
        if self.a_mram:
            sizes.append(("a", (align_up(self.kb * self.es_a) // self.es_a,), self.es_a, self.a_mram.stored))
        if self.o_mram and sum_t != self.acc_t:
            sizes.append(("out", (align_up(self.nb * self.es_acc) // self.es_acc,), self.es_acc, self.o_mram.stored))
        block = wram.private(sum(prod(n) * es for _, n, es, _ in sizes), "tl.dot rows", loc)
        self.views, at = {}, 0
        for name, n, es, t in sizes:
            self.views[name] = wram.view(block, at, list(n), t)
            at += prod(n) * es
        self.acc = self.views["acc"]
        with conv.buffers.at_entry():
            self.row_addrs = {name: self.addr(v) for name, v in self.views.items()}

    # -- helpers ------------------------------------------------------------------------
    def bytes_of(self, count, es):
        """(count elements: an index) rounded up to 8 bytes."""
        return align_up_value(arith.muli(as_i64(count), c64(es)))

    def addr(self, view):
        return as_i64(memref.extract_aligned_pointer_as_index(view))

    def lanes(self, count, body):
        loop = scf.ForOp(index_c(0), count, index_c(1))
        with ir.InsertionPoint(loop.body):
            body(loop.induction_variable)
            scf.yield_([])

    # -- the steps ----------------------------------------------------------------------
    def load_panel(self, bivs, k0, rows, n0, nw):
        """B[bivs, k0:k0+rows, n0:n0+nw] into the panel, rows shared out."""
        conv, b, panel = self.conv, self.b, self.panel

        def row(kvs):
            kk = kvs[0]
            guard = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, kk, rows), [], has_else=False)
            with ir.InsertionPoint(guard.then_block):
                k = arith.addi(k0, kk)
                dst = conv.buffers.row_address(panel, [kk], self.es_b, True)
                self.b_mram.read_row(bivs + [k], n0, self.bytes_of(nw, self.es_b), dst)
                scf.yield_([])
        conv.tasklets.par_nest((self.kb,), row, (self.kb, self.panel_w))

    def start(self, bivs, i, r, n0, nw):
        """Accumulator row r of result row i: C's values."""
        self.lanes(nw, lambda jj: memref.store(_widen(self.c.at(bivs + [i, arith.addi(n0, jj)]), self.sum_t),
                                               self.acc, [r, jj]))

    def step(self, bivs, i, r, k0, rows, n0, nw):
        """Accumulator row r += A[i, k0:k0+rows] @ B's panel."""
        conv, a, b = self.conv, self.a, self.b
        if self.a_mram:
            self.a_mram.read_row(bivs + [i], k0, self.bytes_of(rows, self.es_a), self.row_addrs["a"])

        def kstep(kk):
            k = arith.addi(k0, kk)
            x = (_widen(from_stored(memref.load(self.views["a"], [kk]), a.elem), self.mul_t) if self.a_mram
                 else _widen(a.at(bivs + [i, k]), self.mul_t))

            def lane(jj):
                y = (_widen(conv.buffers.load(self.panel, [kk, jj], b.elem), self.mul_t) if self.b_mram
                     else _widen(b.at(bivs + [k, arith.addi(n0, jj)]), self.mul_t))
                memref.store(_fma(memref.load(self.acc, [r, jj]), x, y), self.acc, [r, jj])
            self.lanes(nw, lane)
        self.lanes(rows, kstep)

    def finish(self, bivs, i, r, n0, nw):
        """Result row i's segment from accumulator row r, rounded to the result type."""
        conv, out = self.conv, self.out

        def result(jj):
            return _widen(memref.load(self.acc, [r, jj]), self.acc_t)
        if not self.o_mram:
            self.lanes(nw, lambda jj: conv.buffers.store(result(jj), out, bivs + [i, arith.addi(n0, jj)]))
            return
        src = arith.addi(self.row_addrs["acc"],
                         arith.muli(as_i64(r), c64(self.acc_w * self.es_sum)))
        if self.sum_t != self.acc_t:
            self.lanes(nw, lambda jj: memref.store(to_stored(result(jj), self.o_mram.stored), self.views["out"],
                                                   [jj]))
            src = self.row_addrs["out"]
        self.o_mram.write_row(bivs + [i], n0, self.bytes_of(nw, self.es_acc), src)

    # -- the loops ----------------------------------------------------------------------
    def columns(self, bivs):
        """The result's panels of nb columns (of batch element `bivs`)."""
        conv = self.conv

        def panel_columns(n0):
            nw = arith.minsi(index_c(self.nb), arith.subi(index_c(self.n_dim), n0))
            if self.kb == self.k_dim:
                self.rows_in_one_visit(bivs, n0, nw)
            else:
                self.rows_over_k_panels(bivs, n0, nw)
        _uniform_loop(conv, 0, self.n_dim, self.nb, panel_columns)

    def rows_in_one_visit(self, bivs, n0, nw):
        """K in one panel: each row of M summed in one visit."""
        conv, zero = self.conv, index_c(0)
        if self.b_mram:
            self.load_panel(bivs, zero, index_c(self.k_dim), n0, nw)

        def row(ivs):
            self.start(bivs, ivs[0], zero, n0, nw)
            self.step(bivs, ivs[0], zero, zero, index_c(self.k_dim), n0, nw)
            self.finish(bivs, ivs[0], zero, n0, nw)
        conv.tasklets.par_nest((self.m_dim,), row, (self.m_dim, self.n_dim))

    def rows_over_k_panels(self, bivs, n0, nw):
        """K split: passes over rb of this tasklet's rows, their accumulators
        carried across the K panels."""
        conv, zero, rb = self.conv, index_c(0), self.rb
        whole = (self.m_dim, self.n_dim)
        lo, hi = conv.tasklets.my_range(whole) if conv.tasklets.count > 1 else (zero, index_c(self.m_dim))

        def my_rows(p, body):
            """body(i, r) for row r < rb of pass p of this tasklet's rows."""
            def rows():
                def each(r):
                    i = arith.addi(lo, arith.addi(arith.muli(p, index_c(rb)), r))
                    live = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, i, hi), [], has_else=False)
                    with ir.InsertionPoint(live.then_block):
                        conv.tasklets.accesses.mine(i)
                        body(i, r)
                        scf.yield_([])
                self.lanes(index_c(rb), each)
            if conv.tasklets.count == 1:
                rows()
            else:
                with conv.tasklets.accesses.divergent(conv.tasklets.owner(whole)):
                    rows()

        def one_pass(p):
            def kpanel(k0):
                depth = arith.minsi(index_c(self.kb), arith.subi(index_c(self.k_dim), k0))
                if self.b_mram:
                    self.load_panel(bivs, k0, depth, n0, nw)
                first = arith.cmpi(arith.CmpIPredicate.eq, k0, zero)

                def compute(i, r):
                    init = scf.IfOp(first, [], has_else=False)
                    with ir.InsertionPoint(init.then_block):
                        self.start(bivs, i, r, n0, nw)
                        scf.yield_([])
                    self.step(bivs, i, r, k0, depth, n0, nw)
                my_rows(p, compute)
            _uniform_loop(conv, 0, self.k_dim, self.kb, kpanel)
            my_rows(p, lambda i, r: self.finish(bivs, i, r, n0, nw))
        rows_each = -(-self.m_dim // conv.tasklets.count)
        _uniform_loop(conv, 0, -(-rows_each // rb), 1, one_pass)


def _uniform_loop(conv, lo: int, hi: int, step: int, body) -> None:
    """An scf.for every tasklet runs alike (as control.lower_for: nothing
    pending when it starts, a barrier at the end of its body if the next
    iteration's first accesses need one)."""
    loop = scf.ForOp(index_c(lo), index_c(hi), index_c(step))
    conv.tasklets.accesses.cycle(loop)
    with ir.InsertionPoint(loop.body):
        body(loop.induction_variable)
        scf.yield_([])


@lowers("tt.dot_scaled")
def lower_dot_scaled(conv, op):
    """`tl.dot_scaled` as Triton's GPU backends decompose it
    (TritonGPU's DecomposeScaledBlocked): each operand is decoded into the
    compute type (f16 if either operand is fp16, else bf16: e2m1 unpacked two
    values a byte, low nibble first, along K or, without k-packing, the other
    dimension; fp8, bf16 and fp16 converted), multiplied by its scale (one
    per `K / scale columns` values of K: 32 for mxfp, 16 for nvfp4; see
    `_scale_factor`), then an ordinary dot into the f32 accumulator."""
    view = ops.DotScaled(op)
    a, b, c, a_scale, b_scale = view.a, view.b, view.c, view.a_scale, view.b_scale
    fmt = [view.a_format, view.b_format]
    compute = ir.F16Type.get() if "fp16" in fmt else ir.BF16Type.get()
    fast = view.fast_math
    k_pack = [view.lhs_k_pack, view.rhs_k_pack]
    shape = conv.values.tile(c).shape
    k_dim = conv.values.tile(a).shape[-1] * (2 if fmt[0] == "e2m1" and k_pack[0] else 1)
    tiles = [_scaled_operand(conv, conv.values.tile(v), s and conv.values.tile(s), f, kp, compute, side, fast,
                             shape[:-2] + ((shape[-2], k_dim) if side == 0 else (k_dim, shape[-1])))
             for side, (v, s, f, kp) in enumerate(zip((a, b), (a_scale, b_scale), fmt, k_pack))]
    lower_dot(conv, op, (*tiles, conv.values.tile(c)))


def _scaled_operand(conv, src, scale, fmt, k_pack, compute, side, fast, shape):
    """Operand `side` (0: lhs, 1: rhs) of a dot_scaled decoded and scaled, as a
    lazy `shape` tile of `compute` values."""
    rank = len(shape)
    k_axis = rank - 1 if side == 0 else rank - 2
    packed = (k_axis if k_pack else (rank - 2 if side == 0 else rank - 1)) if fmt == "e2m1" else None
    i8 = ir.IntegerType.get_signless(8)
    factor = shape[k_axis] // scale.shape[-1] if scale is not None else 1

    def value(ivs):
        if packed is None:
            return convert_float(src.at(ivs), compute)
        two = index_c(2)
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
        s = scale.at(ivs[:-2] + [other, arith.divui(ivs[k_axis], index_c(factor))])
        out = arith.mulf(v, _scale_factor(s, compute))
        if fast or is_float(s.type):
            return out
        nan = arith.constant(compute, float("nan"))
        return arith.select(arith.cmpi(arith.CmpIPredicate.eq, s, arith.constant(i8, -1)), nan, out)
    cost = 6 + src.cost + (scale.cost if scale is not None else 0)
    return Tile(tuple(shape), compute, fn=element, cost=cost)


def _scale_factor(s, compute):
    """A dot_scaled scale as a `compute` value, decoded by its element type
    as DecomposeScaledBlocked::scaleTo16 does. A float scale (nvfp4's fp8
    e4m3) is its own value, converted exactly; its NaN needs no mask, the
    product is NaN. A byte is e8m0, 2**(s - 127): the byte shifted into the
    exponent field of a bf16, or of an f32 rounded to f16 (0 gives 0 either
    way; the caller masks 255, NaN)."""
    if is_float(s.type):
        return convert_float(s, compute)
    if isinstance(compute, ir.BF16Type):
        i16 = ir.IntegerType.get_signless(16)
        return arith.bitcast(compute, arith.shli(arith.extui(i16, s), arith.constant(i16, 7)))
    i32 = ir.IntegerType.get_signless(32)
    f32 = arith.bitcast(ir.F32Type.get(), arith.shli(arith.extui(i32, s), arith.constant(i32, 23)))
    return arith.truncf(compute, f32)
