"""Tiled matmul whose inner tile product is an EDSL micro-kernel, one source for
both targets: the Triton kernel walks K in tiles, and
`fl.call(mma, [acc], [a, b])` accumulates each product, its rows shared among
the threads (tasklets of a DPU, threads of a GPU's CTA).

    python examples/fl_matmul.py     # on the DPU model, or on the GPU if Triton's driver is CUDA
"""
import sys

import numpy as np
import triton
import triton.language as tl

import edsl
from edsl import InOut, Input, fl


@edsl.dialect
def mma(c: InOut["memref<?x?xf32>"], a: Input["memref<?x?xf32>"], b: Input["memref<?x?xf32>"]):
    me = edsl.thread_id()
    nt = edsl.num_threads()
    for i in range(me, c.shape[0], nt):
        for j in range(c.shape[1]):
            s = c[i, j]
            for k in range(a.shape[1]):
                s += a[i, k] * b[k, j]
            c[i, j] = s


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :],
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = fl.call(mma, [acc], [a, b])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a: np.ndarray, b: np.ndarray, num_tasklets: int = 16) -> np.ndarray:
    (m, k), n = a.shape, b.shape[1]
    c = np.empty((m, n), dtype=np.float32)
    bm = bn = bk = 16
    matmul_kernel[(triton.cdiv(m, bm), triton.cdiv(n, bn))](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk,
                                                          num_tasklets=num_tasklets, num_dpus=4)
    return c


def matmul_on_gpu(a, b):
    """The same kernel on torch CUDA tensors (Triton's nvidia backend)."""
    (m, k), n = a.shape, b.shape[1]
    c = a.new_empty((m, n))
    bm = bn = bk = 16
    matmul_kernel[(triton.cdiv(m, bm), triton.cdiv(n, bn))](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk)
    return c


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    a = rng.standard_normal((70, 45)).astype(np.float32)
    b = rng.standard_normal((45, 33)).astype(np.float32)
    target = triton.runtime.driver.active.get_current_target().backend
    if target == "cuda":
        import torch
        got = matmul_on_gpu(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()).cpu().numpy()
    else:
        got = matmul(a, b)
    err = float(np.abs(got - a @ b).max())
    ok = err < 1e-4
    print(f"fl.call matmul (70, 45) @ (45, 33) on {target}: max error {err:.2e} vs NumPy -> "
          f"{'OK' if ok else 'MISMATCH'}")
    sys.exit(0 if ok else 1)
