"""Each example against NumPy over shapes (ragged sizes, 0 and 1 elements), DPUs and tasklets."""
import numpy as np
import triton
from hypothesis import given, settings, strategies as st

import edsl.backend
import triton_layernorm
import triton_matmul
import triton_softmax
import triton_topk
import triton_vector_add

from launch_strategies import strategies

DPUS, TASKLETS = strategies()
FEW = settings(max_examples=25, deadline=None)


@FEW
@given(n=st.integers(0, 3000), block=st.sampled_from([64, 256, 1024]), dpus=DPUS, tasklets=TASKLETS,
       seed=st.integers(0, 2**16))
def test_vector_add(n, block, dpus, tasklets, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, dtype=np.float32)
    grid = (triton_vector_add.triton.cdiv(n, block),)
    triton_vector_add.add_kernel[grid](x, y, out, n, BLOCK=block, num_dpus=dpus,
                                       num_tasklets=tasklets)
    np.testing.assert_array_equal(out, x + y)
    if grid[0]:
        r = edsl.backend.last_report()
        assert r.programs == grid[0] and r.dpus_used == min(dpus, grid[0])
        assert r.num_tasklets == tasklets
        assert r.dma_read_bytes >= 8 * n // 8 and r.dma_write_bytes >= 4 * n


@FEW
@given(rows=st.integers(1, 9), cols=st.integers(1, 300), dpus=DPUS, tasklets=TASKLETS,
       seed=st.integers(0, 2**16))
def test_softmax(rows, cols, dpus, tasklets, seed):
    x = (np.random.default_rng(seed).standard_normal((rows, cols)) * 5).astype(np.float32)
    if tasklets == 1:
        out = triton_softmax.softmax(x, num_dpus=dpus)
    else:
        out = np.empty_like(x)
        triton_softmax.softmax_kernel[(rows,)](out, x, cols, cols, BLOCK=triton.next_power_of_2(cols),
                                               num_dpus=dpus, num_tasklets=tasklets)
    np.testing.assert_allclose(out, triton_softmax.reference(x), rtol=1e-5, atol=1e-6)


@FEW
@given(rows=st.integers(1, 6), cols=st.integers(1, 200), dpus=DPUS, tasklets=TASKLETS,
       seed=st.integers(0, 2**16))
def test_layernorm(rows, cols, dpus, tasklets, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w = rng.standard_normal(cols).astype(np.float32)
    b = rng.standard_normal(cols).astype(np.float32)
    if tasklets == 1:
        y = triton_layernorm.layernorm(x, w, b, num_dpus=dpus)
    else:
        y = np.empty_like(x)
        triton_layernorm.layernorm_kernel[(rows,)](x, y, w, b, cols, 1e-5,
                                                   BLOCK=triton.next_power_of_2(cols),
                                                   num_dpus=dpus, num_tasklets=tasklets)
    np.testing.assert_allclose(y, triton_layernorm.reference(x, w, b), rtol=1e-3, atol=1e-3)


@settings(max_examples=8, deadline=None)
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(1, 40), dpus=DPUS,
       tasklets=TASKLETS, seed=st.integers(0, 2**16))
def test_matmul(m, n, k, dpus, tasklets, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.empty((m, n), dtype=np.float32)
    grid = (triton_matmul.triton.cdiv(m, 16), triton_matmul.triton.cdiv(n, 16))
    triton_matmul.matmul_kernel[grid](a, b, c, m, n, k, BM=16, BN=16, BK=16, num_dpus=dpus,
                                      num_tasklets=tasklets)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@FEW
@given(rows=st.integers(1, 6), cols=st.integers(1, 100), k=st.integers(1, 4), dpus=DPUS,
       tasklets=TASKLETS, seed=st.integers(0, 2**16))
def test_topk(rows, cols, k, dpus, tasklets, seed):
    k = min(k, cols)
    x = np.random.default_rng(seed).permutation(rows * cols).reshape(rows, cols).astype(np.float32)
    if tasklets == 1:
        values, indices = triton_topk.topk(x, k, num_dpus=dpus)
    else:
        values, indices = np.empty((rows, k), x.dtype), np.empty((rows, k), np.int32)
        triton_topk.topk_kernel[(rows,)](x, values, indices, cols, K=k,
                                         BLOCK=triton.next_power_of_2(cols), num_dpus=dpus,
                                         num_tasklets=tasklets)
    ref_values, ref_indices = triton_topk.reference(x, k)
    np.testing.assert_array_equal(values, ref_values)
    np.testing.assert_array_equal(indices, ref_indices)
