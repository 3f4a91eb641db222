"""Shape ops against NumPy: trans, reshape, broadcast, expand_dims, join,
split, cat and `.item()`."""
import numpy as np
import triton
import triton.language as tl
import pytest
from edsl.backend import array
from launch_strategies import strategies
import family_ir

DPUS, TASKLETS = strategies()


@triton.jit
def shape_kernel(x_ptr, t_ptr, r_ptr, b_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + r * C + c)
    xt = tl.trans(x)
    tl.store(t_ptr + tl.arange(0, C)[:, None] * R + tl.arange(0, R)[None, :], xt)
    flat = tl.reshape(x, (R * C,))
    tl.store(r_ptr + tl.arange(0, R * C), flat + 1)
    row0 = tl.sum(x, axis=1)
    tl.store(b_ptr + r * C + c, tl.broadcast_to(tl.expand_dims(row0, 1), (R, C)))


@pytest.mark.parametrize("tasklets", [1, 3, 16])
def test_shape_ops(tasklets):
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    t, r, b = np.zeros((8, 4), np.float32), np.zeros(32, np.float32), np.zeros((4, 8), np.float32)
    shape_kernel[(1,)](x, t, r, b, R=4, C=8, num_tasklets=tasklets)
    np.testing.assert_array_equal(t, x.T)
    np.testing.assert_array_equal(r, x.ravel() + 1)
    np.testing.assert_array_equal(b, np.repeat(x.sum(axis=1, keepdims=True), 8, axis=1))


@triton.jit
def pair_kernel(x_ptr, y_ptr, out_ptr, flag_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    a, b = tl.split(tl.join(x, y))
    tl.store(out_ptr + offs, a - b)
    tl.store(out_ptr + N + offs, tl.clamp(x, -1.0, 1.0))
    tl.store(out_ptr + 2 * N + tl.arange(0, 1), tl.sum(tl.cat(a, b, can_reorder=True), axis=0)[None])
    flag = tl.load(flag_ptr + tl.arange(0, 1)) > 0
    if flag.item():
        tl.store(out_ptr + 2 * N + 1 + tl.arange(0, 1), tl.full((1,), 1.0, tl.float32))


@pytest.mark.parametrize("tasklets", [1, 4])
@pytest.mark.parametrize("flag", [0, 1])
def test_join_split_cat_and_item(tasklets, flag):
    """`tl.split` (two named results in the TTIR), `tl.join`, `tl.cat` and the
    `.item()` of a one-element tile (`tt.unsplat`)."""
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    out = np.zeros(34, np.float32)
    pair_kernel[(1,)](x, y, out, np.array([flag], np.int32), N=16, num_tasklets=tasklets)
    np.testing.assert_array_equal(out[:16], x - y)
    np.testing.assert_array_equal(out[16:32], np.clip(x, -1, 1))
    np.testing.assert_allclose(out[32], x.sum() + y.sum(), rtol=1e-5)
    assert out[33] == flag


# --- the family's IR on the golden corpus (family_ir) ---------------------------------------

def test_corpus_shape_ir_at_1_and_4_tasklets_and_under_a_wram_limit():
    assert family_ir.check_family({"tt.trans", "tt.reshape", "tt.broadcast", "tt.expand_dims", "tt.join",
                                   "tt.split", "tt.cat"})
