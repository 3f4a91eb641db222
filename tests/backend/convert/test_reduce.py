"""Reductions and scans (`tt.reduce`, `tt.scan`) against NumPy, and the
fixed order of long sums."""
import ml_dtypes
import numpy as np
import triton
import triton.language as tl
from launch_strategies import strategies
from tile_kernels import moments_kernel
from hypothesis import given, settings, strategies as st
import family_ir

DPUS, TASKLETS = strategies()


@triton.jit
def reduce_kernel(x_ptr, sum_ptr, max_ptr, min_ptr, argmax_ptr, argmin_ptr, prod_ptr, R, C,
                  AXIS: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.arange(0, BR)[:, None]
    c = tl.arange(0, BC)[None, :]
    m = (r < R) & (c < C)
    x = tl.load(x_ptr + r * C + c, mask=m, other=0)
    s = tl.sum(x, axis=AXIS)
    xm = tl.where(m, x, -1e9)
    xn = tl.where(m, x, 1e9)
    out = tl.arange(0, BR) if AXIS == 1 else tl.arange(0, BC)
    om = out < (R if AXIS == 1 else C)
    tl.store(sum_ptr + out, s, mask=om)
    tl.store(max_ptr + out, tl.max(xm, axis=AXIS), mask=om)
    tl.store(min_ptr + out, tl.min(xn, axis=AXIS), mask=om)
    tl.store(argmax_ptr + out, tl.argmax(xm, axis=AXIS), mask=om)
    tl.store(argmin_ptr + out, tl.argmin(xn, axis=AXIS), mask=om)
    tl.store(prod_ptr + out, tl.reduce(tl.where(m, x, 1), AXIS, _mul), mask=om)


@triton.jit
def _mul(a, b):
    return a * b


@settings(max_examples=12, deadline=None)
@given(rows=st.integers(1, 8), cols=st.integers(1, 8), axis=st.sampled_from([0, 1]),
       seed=st.integers(0, 2**16), tasklets=TASKLETS)
def test_reductions(rows, cols, axis, seed, tasklets):
    x = np.random.default_rng(seed).permutation(rows * cols).reshape(rows, cols).astype(np.float32)
    x = (x - rows * cols / 2) / 4
    k = rows if axis == 1 else cols
    outs = [np.zeros(k, np.float32), np.zeros(k, np.float32), np.zeros(k, np.float32),
            np.zeros(k, np.int32), np.zeros(k, np.int32), np.zeros(k, np.float32)]
    reduce_kernel[(1,)](x, *outs, rows, cols, AXIS=axis, BR=8, BC=8, num_tasklets=tasklets)
    np.testing.assert_allclose(outs[0], x.sum(axis=axis), rtol=1e-5)
    np.testing.assert_array_equal(outs[1], x.max(axis=axis))
    np.testing.assert_array_equal(outs[2], x.min(axis=axis))
    np.testing.assert_array_equal(outs[3], x.argmax(axis=axis))
    np.testing.assert_array_equal(outs[4], x.argmin(axis=axis))
    np.testing.assert_allclose(outs[5], x.prod(axis=axis), rtol=1e-4)


@triton.jit
def _max_fn(a, b):
    return tl.maximum(a, b)


@triton.jit
def scan_kernel(x_ptr, cumsum_ptr, cummax_ptr, rev_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    tl.store(cumsum_ptr + offs, tl.cumsum(x, axis=0), mask=m)
    tl.store(cummax_ptr + offs, tl.associative_scan(x, 0, _max_fn), mask=m)
    tl.store(rev_ptr + offs, tl.cumsum(x, axis=0, reverse=True), mask=m)


@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 64), dtype=st.sampled_from([np.int32, np.float32]), seed=st.integers(0, 2**16),
       tasklets=TASKLETS)
def test_scans(n, dtype, seed, tasklets):
    x = np.random.default_rng(seed).integers(-20, 20, n).astype(dtype)
    outs = [np.zeros(n, dtype) for _ in range(3)]
    scan_kernel[(1,)](x, *outs, n, BLOCK=64, num_tasklets=tasklets)
    np.testing.assert_allclose(outs[0], np.cumsum(x), rtol=1e-6)
    np.testing.assert_array_equal(outs[1], np.maximum.accumulate(x))
    pad = np.zeros(64, dtype)
    pad[:n] = x
    np.testing.assert_allclose(outs[2], np.cumsum(pad[::-1])[::-1][:n], rtol=1e-6)


@triton.jit
def scan16_kernel(x_ptr, sum_ptr, prod_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(sum_ptr + offs, tl.cumsum(x, axis=0))
    tl.store(prod_ptr + offs, tl.cumprod(x, axis=0, reverse=True))


@settings(max_examples=10, deadline=None)
@given(block=st.sampled_from([16, 128, 512]), dtype=st.sampled_from([ml_dtypes.bfloat16, np.float16]),
       seed=st.integers(0, 2**16), tasklets=TASKLETS)
def test_scans_of_16_bit_floats_carry_f32_prefixes(block, dtype, seed, tasklets):
    """Each result is the f32 prefix rounded once (Triton >= 3.7 combines bf16
    and f16 scans in their own type; in order, its rounding error would grow
    along the row)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(block).astype(dtype)
    near_one = (1 + rng.standard_normal(block) / 64).astype(dtype)
    out_sum, out_prod = np.zeros(block, dtype), np.zeros(block, dtype)
    scan16_kernel[(1,)](x, out_sum, out_prod, BLOCK=block, num_tasklets=tasklets)
    want_sum = np.cumsum(x.astype(np.float32), dtype=np.float32).astype(dtype)
    np.testing.assert_array_equal(out_sum.view(np.uint16), want_sum.view(np.uint16))
    scan16_kernel[(1,)](near_one, out_sum, out_prod, BLOCK=block, num_tasklets=tasklets)
    want_prod = np.cumprod(near_one[::-1].astype(np.float32), dtype=np.float32)[::-1].astype(dtype)
    np.testing.assert_array_equal(out_prod.view(np.uint16), want_prod.view(np.uint16))


@triton.jit
def scan2d_kernel(x_ptr, cumsum_ptr, cummax_ptr, R, C, AXIS: tl.constexpr, BR: tl.constexpr,
                  BC: tl.constexpr):
    r = tl.arange(0, BR)[:, None]
    c = tl.arange(0, BC)[None, :]
    m = (r < R) & (c < C)
    x = tl.load(x_ptr + r * C + c, mask=m, other=0)
    tl.store(cumsum_ptr + r * C + c, tl.cumsum(x, axis=AXIS), mask=m)
    tl.store(cummax_ptr + r * C + c, tl.associative_scan(x, AXIS, _max_fn, reverse=True), mask=m)


@settings(max_examples=10, deadline=None)
@given(rows=st.integers(1, 8), cols=st.integers(1, 8), axis=st.sampled_from([0, 1]),
       seed=st.integers(0, 2**16), tasklets=st.sampled_from([1, 2, 5, 16]))
def test_scans_along_either_axis_of_a_2d_tile(rows, cols, axis, seed, tasklets):
    x = np.random.default_rng(seed).integers(-20, 20, (rows, cols)).astype(np.int32)
    cumsum, cummax = np.zeros_like(x), np.zeros_like(x)
    scan2d_kernel[(1,)](x, cumsum, cummax, rows, cols, AXIS=axis, BR=8, BC=8, num_tasklets=tasklets)
    pad = np.zeros((8, 8), np.int32)
    pad[:rows, :cols] = x
    np.testing.assert_array_equal(cumsum, np.cumsum(pad, axis=axis)[:rows, :cols])
    flip = np.flip(pad, axis=axis)
    np.testing.assert_array_equal(cummax, np.flip(np.maximum.accumulate(flip, axis=axis), axis=axis)[:rows, :cols])


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2 ** 16), long=st.booleans())
def test_reductions_of_long_expressions_stay_loops_in_host_code(seed, long):
    """The group loops of a sum whose reads are long expressions keep LLVM
    from unrolling them (`reduce.LONGEST_UNROLLED_STEP`); a short one's are
    left to LLVM. Either way the sums are NumPy's."""
    rng = np.random.default_rng(seed)
    x, dy = (rng.uniform(-1, 1, 512).astype(np.float32) for _ in range(2))
    out = np.zeros(3, np.float32)
    k = moments_kernel[(1,)](x, dy, out, N=512, LONG=long)
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    want = [dy64 @ x64 ** 5, dy64 @ x64 ** 4, dy64 @ x64 ** 3] if long else [x64.sum(), dy64.sum(), x64 @ dy64]
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert ("llvm.loop.unroll.disable" in k.asm["llir"]) == long


@triton.jit
def dot_sum_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr, LONG: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + i)
    if LONG:        # an element costs more than reduce.CHEAP_READ ops
        tl.store(out_ptr, tl.sum(x * y * x + y, axis=0))
    else:
        tl.store(out_ptr, tl.sum(x * y, axis=0))


def _grouped_sum(v):
    """`reduce._groups`' order in NumPy float32: GROUPS groups of consecutive
    elements, each with `sub` interleaved accumulators, combined pairwise."""
    from edsl.backend.convert.reduce import GROUPS, SUB

    def pairwise(accs):
        while len(accs) > 1:
            accs = [accs[i] + accs[i + 1] for i in range(0, len(accs), 2)]
        return accs[0]
    size = len(v) // GROUPS
    sub = SUB
    while sub > 1 and size < 2 * sub:
        sub //= 2
    groups = []
    for g in range(GROUPS):
        row = v[g * size:(g + 1) * size]
        accs = list(row[:sub])
        for i in range(sub, size):
            accs[i % sub] = accs[i % sub] + row[i]
        groups.append(pairwise(accs))
    return pairwise(groups)


@settings(max_examples=12, deadline=None)
@given(log_n=st.integers(5, 12), long=st.booleans(), seed=st.integers(0, 2 ** 16), tasklets=TASKLETS)
def test_a_long_sum_is_one_fixed_order_and_emits_each_element_once(log_n, long, seed, tasklets):
    """A sum over a long row adds in `reduce`'s fixed order on any tasklet
    count and either form of its code (the bits of that order in NumPy).
    Where an element is an expression, its code is emitted once (the passes
    over the groups a loop, the first step in it): the kernel's loads do not
    grow with the row; cheap elements keep the unrolled form."""
    n = 2 ** log_n
    rng = np.random.default_rng(seed)
    x, y = (rng.uniform(-1, 1, n).astype(np.float32) for _ in range(2))
    out = np.zeros(1, np.float32)
    k = dot_sum_kernel[(1,)](x, y, out, N=n, LONG=long, num_tasklets=tasklets)
    assert out[0] == _grouped_sum(x * y * x + y if long else x * y)
    if long and tasklets == 1:
        from edsl.backend.convert.reduce import PASS
        # One step's reads and the cells of the groups: 80 at any n >= 64
        # (1,024 at n = 256 and up while each pass had its own code).
        assert k.asm["mlir"].count("memref.load") <= 5 * PASS


# --- the family's IR on the golden corpus (family_ir) ---------------------------------------

def test_corpus_reduce_ir_at_1_and_4_tasklets_and_under_a_wram_limit():
    """Each tasklet reduces its share; 4 tasklets meet at barriers to combine them."""
    assert family_ir.check_family({"tt.reduce", "tt.scan", "tt.histogram"}, barriers_at_4=True)
