"""`tl.dot` (`tt.dot`) against NumPy, narrow floats summed exactly."""
import ml_dtypes
import numpy as np
import triton
import triton.language as tl
from edsl.backend import array
from launch_strategies import strategies
from hypothesis import given, settings, strategies as st
import family_ir

DPUS, TASKLETS = strategies()


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b, out_dtype=c_ptr.dtype.element_ty)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@settings(max_examples=6, deadline=None)
@given(m=st.sampled_from([16, 32]), n=st.sampled_from([16, 32]), k=st.sampled_from([16, 32]),
       dtype=st.sampled_from([np.float32, np.float16]), seed=st.integers(0, 2**16),
       tasklets=TASKLETS)
def test_dot(m, n, k, dtype, seed, tasklets):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    c = np.zeros((m, n), np.float32)
    dot_kernel[(1,)](a, b, c, M=m, N=n, K=k, num_tasklets=tasklets)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-4, atol=1e-4)


NARROW_DOT_TYPES = [(np.float16, np.float32), (np.float16, np.float16),
                    (ml_dtypes.bfloat16, np.float32), (ml_dtypes.float8_e5m2, np.float32)]


@settings(max_examples=8, deadline=None)
@given(types=st.sampled_from(NARROW_DOT_TYPES), k=st.sampled_from([16, 64, 128]),
       seed=st.integers(0, 2**16), tasklets=TASKLETS)
def test_a_dot_of_narrow_floats_sums_its_exact_products_in_fp64(types, k, seed, tasklets):
    """Operands narrower than fp32: the products (exact) are summed in fp64 in
    order of K and rounded once to the result type. Summed in fp32, products
    of magnitudes spread over 2**16 that cancel leave errors of percents
    (test_core's test_scaled_dot); summed in fp16, of several fp16 ulps."""
    src, dst = types
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((16, k)) * 2.0 ** rng.integers(-6, 10, (16, k))).astype(src)
    b = rng.standard_normal((k, 16)).astype(src)
    c = np.zeros((16, 16), dst)
    dot_kernel[(1,)](array(a), array(b), c, M=16, N=16, K=k, num_tasklets=tasklets)
    products = a.astype(np.float64)[:, :, None] * b.astype(np.float64)[None, :, :]
    exact = np.cumsum(products, axis=1)[:, -1, :]          # in order of K, each sum exact to fp64
    np.testing.assert_array_equal(c.view(np.uint8), exact.astype(dst).view(np.uint8))


# --- the family's IR on the golden corpus (family_ir) ---------------------------------------

def test_corpus_dot_ir_at_1_and_4_tasklets_and_under_a_wram_limit():
    """4 tasklets share the operands they load, so meet at barriers."""
    assert family_ir.check_family({"tt.dot", "tt.dot_scaled"}, lambda names: ["arith.mulf"],
                                  barriers_at_4=True)
