"""Tiled matrix multiplication with `tl.dot` (fp32 accumulation) on the DPU model.

    python examples/triton_matmul.py
"""
import numpy as np
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :],
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b, bm=32, bn=32, bk=16, num_dpus=4):
    M, K = a.shape
    N = b.shape[1]
    c = np.empty((M, N), dtype=np.float32)
    matmul_kernel[(triton.cdiv(M, bm), triton.cdiv(N, bn))](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk,
                                                            num_dpus=num_dpus)
    return c


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    a = rng.standard_normal((70, 45)).astype(np.float32)
    b = rng.standard_normal((45, 53)).astype(np.float32)
    c = matmul(a, b)
    ok = np.allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    print(f"matmul {a.shape} x {b.shape} float32: {'OK' if ok else 'MISMATCH'} against NumPy "
          f"(max abs err {np.abs(c - a @ b).max():.2e})")
    raise SystemExit(0 if ok else 1)
