"""Tile ops with a combine region: tt.reduce, tt.scan, tt.histogram (tt.dot
and tt.dot_scaled: `dot`).

The combine region of a reduction or scan (`sum`, `max`, `argmax`, a user's
combine function) is lowered once per step of an `scf.for` that carries the
accumulators, with its block arguments bound to the accumulators and the
next elements. A reduction whose combine is one commutative op (`sum`,
`max`, `min`, `and`, ...) over a long axis keeps several accumulators
(`GROUPS` groups of consecutive elements, each with interleaved
accumulators; they are combined pairwise at the end): a fixed order, the
same whatever the number of tasklets, that the host compiler turns into
vector code. Float sums are thereby reassociated, as on GPUs. A reduction of
a whole tile (a scalar) on several tasklets is computed once: they share its
accumulators out, or tasklet 0 computes a sequential one, into WRAM cells
that every tasklet reads after a barrier; a whole-tile integer reduction of
`where(m, x, 0)` whose mask has its lanes in closed form combines those
lanes only. On several tasklets an integer scan of a rank-1 tile by one
commutative op runs by chunks and a histogram counts per tasklet (integer
results: the same bits in any grouping).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, memref, scf

from .control import lower_body
from ...lowering.walk import collect
from ..ttir_reader import user_location
from .core import Tile, byte_size, is_float, is_tensor, lowers, scalar_type
from .elementwise import convert_float, emit_like
from .builders import buffer_type, from_stored, index_c, to_stored
from . import ops


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


# A reduction over a long axis (n >= 2 * GROUPS elements, a multiple of
# GROUPS) cuts it into GROUPS groups of consecutive elements; a group keeps
# `sub` accumulators (element j of the group goes to accumulator j mod sub:
# the largest power of two up to SUB that leaves each two elements or more),
# combined pairwise, and the group results are combined pairwise: a function
# of n alone, the same on any tasklet count. The tasklets share the groups
# out; where a tasklet's groups are its chunk of the tile, it reduces only
# elements it made (no barrier before). Independent chains let the host
# overlap them. On 16 tasklets a tasklet reduces one group alone and waits
# on its chains of dependent combines (a float max is several host
# instructions): SUB is 8, not 4, for them (softmax 512 x 1024 on one DPU:
# 16 tasklets 1.40 -> 1.18 ms, one tasklet 0.66 -> 0.72 ms, whose passes
# then hold 2 groups, not 4). At most PASS accumulators are live at a time,
# which a DPU's 24 registers hold.
GROUPS = 16
SUB = 8
PASS = 16
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


def _grouped(n: int) -> bool:
    """Whether a reduction over `n` elements goes by groups."""
    return n >= 2 * GROUPS and n % GROUPS == 0


def _index_sum(*terms) -> ir.Value:
    """The sum of ints and index values (the ints folded), an index."""
    const = sum(t for t in terms if isinstance(t, int))
    values = [t for t in terms if not isinstance(t, int)]
    total = values[0]
    for v in values[1:]:
        total = arith.addi(total, v)
    return arith.addi(total, index_c(const)) if const else total


# Ops an element of a lazy tile may cost (`Tile.cost`: a load, a compare and
# a select) for a reduction to read its first elements before the group loop
# and to unroll its passes: more, and an element's code is emitted once (one
# branch a step; 64 copies of four 16-bit float reductions made Liger-Kernel's
# attention residual a 26 MB LLVM module). A row sum of GEMV (cost 2) keeps
# the branch-free form: its estimate was 2.9 % higher with the branch.
CHEAP_READ = 2


def _groups(conv, block, tile, at, n, first, count, mark=None):
    """The results of groups `first` .. `first + count - 1` (`first` an int or
    an index) of a reduction over elements 0..n-1, their accumulators
    interleaved, PASS at a time. `mark(i)` is told each element index read.
    Where the elements are expressions (a lazy tile costing more than
    CHEAP_READ ops an element), each is emitted once:
    whole passes run as a loop, each storing its groups' results in this
    tasklet's cells, and a pass's first step starts its accumulators in the
    loop; the code is one step's reads, whatever the row's length. A tile
    of cheap reads keeps its passes unrolled (no cells) and its first
    step's reads before the loop (no branch a step)."""
    size = n // GROUPS
    sub = SUB
    while sub > 1 and size < 2 * sub:
        sub //= 2
    steps, rest = divmod(size, sub)
    cheap = tile.buf is not None or tile.cost <= CHEAP_READ
    # Groups a pass (the same sums in any grouping of them): one, for
    # expressions, so that a step's block stays short for the host compiler's
    # scheduler (its time grows faster than the block: 88 of 116 s for 64
    # steps of 16 reads of f16 products, 3,668 instructions each).
    per_pass = max(1, PASS // sub) if cheap else 1
    passes = count // per_pass

    def read(i):
        if mark is not None:
            mark(i)
        return tile.at(at(i))

    def one_pass(g0, k):
        """The results of groups `first + g0` .. `first + g0 + k - 1` (g0 an int or an index)."""
        def start(g):
            if isinstance(first, int) and isinstance(g0, int):
                return index_c((first + g0 + g) * size)
            return arith.muli(_index_sum(first, g0, g), index_c(size))
        starts = [start(g) for g in range(k)]
        if cheap:                                 # the first step's reads before the loop
            init = [read(s0 if s == 0 else arith.addi(s0, index_c(s))) for s0 in starts for s in range(sub)]
            loop = scf.ForOp(index_c(1), index_c(steps), index_c(1), init)
        else:                                     # expressions: each emitted once (the zeros never combine)
            zero = arith.constant(tile.elem, 0.0 if is_float(tile.elem) else 0)
            loop = scf.ForOp(index_c(0), index_c(steps), index_c(1), [zero] * (k * sub))
        with ir.InsertionPoint(loop.body):
            step = arith.muli(loop.induction_variable, index_c(sub))
            nexts = []
            for s0 in starts:
                base = arith.addi(s0, step)
                nexts += [read(base if s == 0 else arith.addi(base, index_c(s))) for s in range(sub)]
            scf.yield_(_combine_each(conv, block, loop.inner_iter_args, nexts) if cheap
                       else _first_step_or_combine(conv, block, loop, nexts))
        _keep_rolled_if_long(loop)
        accs = list(loop.results)
        out = []
        for j, s0 in enumerate(starts):
            mine = accs[j * sub:(j + 1) * sub]
            for s in range(rest):
                mine[s] = _combine(conv, block, [mine[s]], [read(arith.addi(s0, index_c(steps * sub + s)))])[0]
            out.append(_pairwise(conv, block, mine))
        return out

    if passes < 2 or cheap:                     # (a pass of cheap reads is short: unrolled)
        return [r for g0 in range(0, count, per_pass) for r in one_pass(g0, min(per_pass, count - g0))]
    cells = conv.buffers.reduction_cells(GROUPS, tile.elem)
    stored = ir.MemRefType(cells.type).element_type
    loop = scf.ForOp(index_c(0), index_c(passes), index_c(1))
    with ir.InsertionPoint(loop.body):
        g0 = arith.muli(loop.induction_variable, index_c(per_pass))
        for j, result in enumerate(one_pass(g0, per_pass)):
            memref.store(to_stored(result, stored), cells, [g0 if j == 0 else arith.addi(g0, index_c(j))])
        scf.yield_([])
    out = [from_stored(memref.load(cells, [index_c(g)]), tile.elem) for g in range(passes * per_pass)]
    if count > passes * per_pass:
        out += one_pass(passes * per_pass, count - passes * per_pass)
    return out


def _first_step_or_combine(conv, block, loop, nexts):
    """Within a group loop from step 0: its first step's elements, or the
    accumulators combined with them (one branch a step)."""
    first_step = arith.cmpi(arith.CmpIPredicate.eq, loop.induction_variable, index_c(0))
    pick = scf.IfOp(first_step, [x.type for x in nexts], has_else=True)
    with ir.InsertionPoint(pick.then_block):
        scf.yield_(nexts)
    with ir.InsertionPoint(pick.else_block):
        scf.yield_(_combine_each(conv, block, loop.inner_iter_args, nexts))
    return list(pick.results)


def _combine_each(conv, block, accs, nexts):
    """Each accumulator combined with its next element."""
    return [_combine(conv, block, [acc], [x])[0] for acc, x in zip(accs, nexts)]


# A group loop whose step has more ops than this stays a loop in the host
# code (LLVM's unrolling off): unrolled, its few steps would put the reads
# of every pass, and of the reductions beside it, in one block, where LLVM's
# SLP vectorizer searches the loads in time growing with their square: 40 of
# the 45 s compile of Liger-Kernel's poly-norm backward (steps of 130 to 226
# ops; a softmax's 67-op steps, left to LLVM, run 5 % faster unrolled).
LONGEST_UNROLLED_STEP = 100


def _keep_rolled_if_long(loop) -> None:
    if len(collect(loop.operation, lambda _op: True)) > LONGEST_UNROLLED_STEP:
        loop.operation.attributes["loop_annotation"] = ir.Attribute.parse(
            "#llvm.loop_annotation<unroll = <disable = true>>")


def _lanes_reduce(conv, block, tile, at, n):
    """Reduce elements 0..n-1 (`_grouped(n)`) by groups."""
    return _pairwise(conv, block, _groups(conv, block, tile, at, n, 0, GROUPS))


def _pairwise(conv, block, accs):
    """Accumulators combined pairwise, (0, 1), (2, 3), ... then their results alike."""
    while len(accs) > 1:
        accs = [_combine(conv, block, [accs[i]], [accs[i + 1]])[0] for i in range(0, len(accs), 2)]
    return accs[0]


def _cells(conv, shape, elem, op):
    """A WRAM buffer of `shape` x `elem` for what the tasklets of a reduction share."""
    count = 1
    for d in shape:
        count *= d
    return conv.buffers.wram.buffer(shape, buffer_type(elem), count * byte_size(elem),
                                    "tt.reduce partial results", user_location(op.location))


def _shared_lanes_reduce(conv, block, tile, n, op):
    """`_lanes_reduce` of a whole rank-1 tile on several tasklets, each group
    computed once: the tasklets share the groups out and store each result in
    a WRAM cell; after a barrier every tasklet combines the cells pairwise. The
    same ops in the same order as one tasklet's, for any tasklet count."""
    tasklets = conv.tasklets
    part = (GROUPS, 1)                                   # (rank 2: chunks of one group)
    cells = _cells(conv, part, tile.elem, op)
    lo, hi = tasklets.my_range(part)
    share = tasklets.chunk(part)
    cell_owner = tasklets.owner(part)
    # A tasklet whose groups are its chunk of the tile reads what it made.
    own = tasklets.chunk(tile.shape) == share * (n // GROUPS)
    mark = tasklets.accesses.mine if own else None

    def groups(first: ir.Value, count: int) -> None:
        """Groups `first` .. `first + count - 1` into their cells."""
        for g, result in enumerate(_groups(conv, block, tile, lambda i: [i], n, first, count, mark)):
            cell = first if g == 0 else arith.addi(first, index_c(g))
            conv.buffers.store(result, cells, [cell, index_c(0)], who=cell_owner)

    with tasklets.accesses.divergent(tasklets.owner(tile.shape) if own else cell_owner):
        whole = scf.IfOp(arith.cmpi(arith.CmpIPredicate.eq, arith.subi(hi, lo), index_c(share)),
                         [], has_else=True)
        with ir.InsertionPoint(whole.then_block):        # a whole share: all its groups at once
            groups(lo, share)
            scf.yield_([])
        with ir.InsertionPoint(whole.else_block):        # the last, shorter share: one by one
            loop = scf.ForOp(lo, hi, index_c(1))
            with ir.InsertionPoint(loop.body):
                groups(loop.induction_variable, 1)
                scf.yield_([])
            scf.yield_([])
    return _pairwise(conv, block, [conv.buffers.load(cells, [index_c(k), index_c(0)], tile.elem)
                                   for k in range(GROUPS)])


# Combines that an operand 0 leaves unchanged (on integers).
_ZERO_IDENTITY = {"arith.addi", "arith.ori", "arith.xori", "arith.maxui"}


def _lane_masked(conv, op, block):
    """For a reduction of a whole rank-1 integer tile `where(m, x, 0)` (perhaps
    reshaped) whose mask's active lanes are known in closed form, by a combine
    that 0 leaves unchanged: (x, m's LaneRange); else None. Only the lanes of
    `m` then count, in any order (integer combines are exact)."""
    src = op.operands[0]
    while isinstance(src.owner, ir.OpView) and src.owner.operation.name == "tt.reshape":
        src = ops.Reshape(src.owner).src
    sel = src.owner.operation if isinstance(src.owner, ir.OpView) else None
    if sel is None or sel.name != "arith.select" or list(block.operations)[0].name not in _ZERO_IDENTITY \
            or len(ir.RankedTensorType(src.type).shape) != 1:
        return None
    cond, x, other = (conv.values.get(v) for v in sel.operands)
    if not (isinstance(cond, Tile) and cond.lanes is not None and isinstance(x, Tile)) \
            or is_float(x.elem) or not isinstance(other, Tile) or other.row is None \
            or other.row.stride != 0 or other.row.const != 0:
        return None
    lo, hi, valid = cond.lanes.bounds([])
    return (x, lo, hi) if valid is None else None


def _reduce_lanes_of(conv, block, x, lo, hi):
    """The combine of the elements lo <= k < hi of `x` (`_lane_masked`), from 0."""
    index = ir.IndexType.get()
    loop = scf.ForOp(arith.index_cast(index, lo), arith.index_cast(index, hi), index_c(1),
                     [arith.constant(x.elem, 0)])
    with ir.InsertionPoint(loop.body):
        scf.yield_(_combine(conv, block, list(loop.inner_iter_args), [x.at([loop.induction_variable])]))
    return loop.results[0]


@lowers("tt.reduce")
def lower_reduce(conv, op):
    axis = ops.Reduce(op).axis
    inputs = [conv.values.tile(v) for v in op.operands]
    block = op.regions[0].blocks[0]
    shape = inputs[0].shape
    n = shape[axis]
    out_shape = shape[:axis] + shape[axis + 1:]
    elems = [t.elem for t in inputs]
    bufs = [conv.buffers.alloca(out_shape, e, "tt.reduce result", op) for e in elems] if out_shape else None
    scalars = []

    lanes = len(inputs) == 1 and _grouped(n) and _single_commutative(block)
    masked = _lane_masked(conv, op, block) if lanes and not out_shape else None

    def body(oivs):
        def at(k):
            return oivs[:axis] + [k] + oivs[axis:]
        if lanes:
            v = _lanes_reduce(conv, block, inputs[0], at, n)
            if bufs is None:
                scalars.append(v)
            else:
                conv.buffers.store(v, bufs[0], oivs)
            return
        init = [t.at(at(index_c(0))) for t in inputs]
        loop = scf.ForOp(index_c(1), index_c(n), index_c(1), init)
        with ir.InsertionPoint(loop.body):
            nexts = [t.at(at(loop.induction_variable)) for t in inputs]
            scf.yield_(_combine(conv, block, loop.inner_iter_args, nexts))
        if bufs is None:
            scalars.extend(loop.results)
        else:
            for v, buf in zip(loop.results, bufs):
                conv.buffers.store(v, buf, oivs)
    if out_shape:
        conv.tasklets.par_nest(out_shape, body)      # rows are independent: shared out
    elif masked is not None:
        scalars.append(_reduce_lanes_of(conv, block, *masked))
    elif conv.tasklets.count > 1 and lanes:       # a scalar: computed once, read by every tasklet
        scalars.append(_shared_lanes_reduce(conv, block, inputs[0], n, op))
    elif conv.tasklets.count > 1 and n >= 2 * GROUPS:
        cells = [_cells(conv, (1,), e, op) for e in elems]
        with conv.tasklets.single():
            body([])
            for v, cell in zip(scalars, cells):
                conv.buffers.store(v, cell, [index_c(0)])
        scalars[:] = [conv.buffers.load(cell, [index_c(0)], e) for cell, e in zip(cells, elems)]
    else:
        body([])                            # a short one: every tasklet computes it alike
    for k, result in enumerate(op.results):
        if bufs is None:
            conv.values.set(result, scalars[k])
        else:
            conv.values.set(result, Tile(out_shape, elems[k], buf=bufs[k], accesses=conv.buffers.accesses))


@lowers("tt.scan")
def lower_scan(conv, op):
    view = ops.Scan(op)
    axis, reverse = view.axis, view.reverse
    inputs = [conv.values.tile(v) for v in op.operands]
    block = op.regions[0].blocks[0]
    shape = inputs[0].shape
    n = shape[axis]
    line_shape = shape[:axis] + shape[axis + 1:]
    bufs = [conv.buffers.alloca(shape, t.elem, "tt.scan result", op) for t in inputs]
    wide = _wide_combine(block)
    f32 = ir.F32Type.get()

    def body(oivs):
        def at(k):
            return oivs[:axis] + [k] + oivs[axis:]

        def pos(i):                      # the i-th element visited along the axis
            return arith.subi(index_c(n - 1), i) if reverse else i
        first = at(pos(index_c(0)))
        init = [t.at(first) for t in inputs]
        for v, buf in zip(init, bufs):
            conv.buffers.store(v, buf, first)
        if wide is not None:
            init = [convert_float(v, f32) for v in init]
        loop = scf.ForOp(index_c(1), index_c(n), index_c(1), init)
        with ir.InsertionPoint(loop.body):
            where = at(pos(loop.induction_variable))
            nexts = [t.at(where) for t in inputs]
            if wide is None:
                new = results = _combine(conv, block, loop.inner_iter_args, nexts)
            else:
                new = wide(list(loop.inner_iter_args) + [convert_float(v, f32) for v in nexts])
                results = [convert_float(v, t.elem) for v, t in zip(new, inputs)]
            for v, buf in zip(results, bufs):
                conv.buffers.store(v, buf, where)
            scf.yield_(new)
    if axis == 0 and _chunked_scan(conv, block, inputs, shape, wide):
        _shared_scan(conv, block, inputs[0], bufs[0], reverse, op)
    elif axis == 0:
        # Lines across the first dimension: tasklets own chunks of that dimension
        # only, so one tasklet scans them all.
        with conv.tasklets.single():
            conv.tasklets.loop_nest(line_shape, body)
    else:                                   # rows are independent: shared out
        conv.tasklets.par_nest(line_shape, body, shape)
    for result, buf, t in zip(op.results, bufs, inputs):
        conv.values.set(result, Tile(shape, t.elem, buf=buf, accesses=conv.buffers.accesses))


def _chunked_scan(conv, block, inputs, shape, wide) -> bool:
    """Whether a scan of a rank-1 tile may be shared out by chunks: one
    integer input combined by one commutative op (associative, exact: any
    grouping gives the same bits)."""
    return (conv.tasklets.count > 1 and len(shape) == 1 and len(inputs) == 1 and wide is None
            and not is_float(inputs[0].elem) and _single_commutative(block))


def _shared_scan(conv, block, tile, buf, reverse: bool, op) -> None:
    """A scan of a rank-1 tile on several tasklets: each scans its chunk into
    `buf` and leaves the chunk's total in a WRAM cell; after a barrier each
    combines the totals of the chunks before its own (after, `reverse`) into
    every element of its chunk."""
    n = tile.shape[0]
    lo, hi = conv.tasklets.my_range(tile.shape)
    rows = (conv.tasklets.count, 1)
    cells = _cells(conv, rows, tile.elem, op)
    chunks = -(-n // conv.tasklets.chunk(tile.shape))            # the tasklets with elements
    one = index_c(1)
    with conv.tasklets.accesses.divergent(conv.tasklets.owner(tile.shape)):
        some = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, lo, hi), [], has_else=False)
        with ir.InsertionPoint(some.then_block):
            last = arith.subi(hi, one)

            def pos(i):                                  # the i-th element of the chunk visited
                where = arith.subi(arith.addi(lo, last), i) if reverse else i
                conv.tasklets.accesses.mine(where)
                return [where]
            first = pos(lo)
            init = tile.at(first)
            conv.buffers.store(init, buf, first)
            loop = scf.ForOp(arith.addi(lo, one), hi, one, [init])
            with ir.InsertionPoint(loop.body):
                where = pos(loop.induction_variable)
                new = _combine(conv, block, list(loop.inner_iter_args), [tile.at(where)])
                conv.buffers.store(new[0], buf, where)
                scf.yield_(new)
            conv.buffers.store(loop.results[0], cells, [conv.tasklets.me, index_c(0)], conv.tasklets.owner(rows))
            scf.yield_([])
    with conv.tasklets.accesses.divergent(conv.tasklets.owner(tile.shape)):
        before = (arith.cmpi(arith.CmpIPredicate.ult, arith.addi(conv.tasklets.me, one), index_c(chunks)) if reverse
                  else arith.cmpi(arith.CmpIPredicate.ugt, conv.tasklets.me, index_c(0)))
        some = scf.IfOp(arith.andi(before, arith.cmpi(arith.CmpIPredicate.ult, lo, hi)), [], has_else=False)
        with ir.InsertionPoint(some.then_block):
            _add_prefix(conv, block, buf, cells, tile.elem, reverse, chunks, lo, hi)
            scf.yield_([])


def _add_prefix(conv, block, buf, cells, elem, reverse, chunks, lo, hi) -> None:
    """`_shared_scan`'s second step on one tasklet (which has chunks before its own)."""
    one, zero = index_c(1), index_c(0)
    start, stop = (arith.addi(conv.tasklets.me, one), index_c(chunks)) if reverse else (zero, conv.tasklets.me)
    loop = scf.ForOp(arith.addi(start, one), stop, one, [conv.buffers.load(cells, [start, zero], elem)])
    with ir.InsertionPoint(loop.body):
        cell = conv.buffers.load(cells, [loop.induction_variable, zero], elem)
        scf.yield_(_combine(conv, block, list(loop.inner_iter_args), [cell]))
    prefix = loop.results[0]
    add = scf.ForOp(lo, hi, one)
    with ir.InsertionPoint(add.body):
        conv.tasklets.accesses.mine(add.induction_variable)
        at = [add.induction_variable]
        v = _combine(conv, block, [prefix], [conv.buffers.load(buf, at, elem)])[0]
        conv.buffers.store(v, buf, at)
        scf.yield_([])


@lowers("tt.histogram")
def lower_histogram(conv, op):
    """`tl.histogram(x, bins, mask)`: out[b] counts the elements equal to b
    where the mask is true; values outside [0, bins) are not counted. On
    several tasklets each counts its chunk of `x` into counts of its own,
    which they then add up bin by bin (`_shared_histogram`); one tasklet
    counts into `out`. Integer counts: the same result in any order."""
    view = ops.Histogram(op)
    src = conv.values.tile(view.src)
    mask = conv.values.tile(view.mask) if view.mask is not None else None
    shape = tuple(ir.RankedTensorType(op.results[0].type).shape)
    elem = ir.RankedTensorType(op.results[0].type).element_type
    out = conv.buffers.alloca(shape, elem, "tt.histogram result", op)

    def count(ivs, counts, row, who=None):
        v = src.at(ivs)
        ok = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, v, arith.constant(v.type, 0)),
                        arith.cmpi(arith.CmpIPredicate.slt, v, arith.constant(v.type, shape[0])))
        if mask is not None:
            ok = arith.andi(ok, mask.at(ivs))
        branch = scf.IfOp(ok, [], has_else=False)
        with ir.InsertionPoint(branch.then_block):
            at = row + [arith.index_cast(ir.IndexType.get(), v)]
            old = conv.buffers.load(counts, at, elem, who)
            conv.buffers.store(arith.addi(old, arith.constant(elem, 1)), counts, at, who)
            scf.yield_([])
    if conv.tasklets.count > 1 and len(src.shape) == 1:
        _shared_histogram(conv, op, src.shape, shape, elem, out, count)
    else:
        with conv.tasklets.single():
            conv.tasklets.loop_nest(shape, lambda ivs: conv.buffers.store(arith.constant(elem, 0), out, ivs))
            conv.tasklets.loop_nest(src.shape, lambda ivs: count(ivs, out, []))
    conv.values.set(op.results[0], Tile(shape, elem, buf=out, accesses=conv.buffers.accesses))


def _shared_histogram(conv, op, src_shape, shape, elem, out, count) -> None:
    """A histogram on several tasklets: tasklet t counts its chunk of the
    input into row t of a WRAM buffer of per-tasklet counts; after a barrier
    each tasklet adds up the rows for its chunk of the bins into `out`."""
    tasklets = conv.tasklets.count
    rows = (tasklets, shape[0])
    counts = conv.buffers.wram.buffer(rows, buffer_type(elem), tasklets * shape[0] * byte_size(elem),
                              "tt.histogram per-tasklet counts", user_location(op.location))
    zero = arith.constant(elem, 0)
    conv.tasklets.par_nest(rows, lambda ivs: conv.buffers.store(zero, counts, ivs))
    conv.tasklets.par_nest(src_shape, lambda ivs: count(ivs, counts, [conv.tasklets.me], conv.tasklets.owner(rows)))

    def merge(ivs):
        total = conv.buffers.load(counts, [index_c(0)] + ivs, elem)
        for t in range(1, tasklets):
            total = arith.addi(total, conv.buffers.load(counts, [index_c(t)] + ivs, elem))
        conv.buffers.store(total, out, ivs)
    conv.tasklets.par_nest(shape, merge)


del is_tensor, scalar_type
