"""Matmul on an NVIDIA GPU whose tile product is an EDSL micro-kernel on 2-D
shared-memory tiles (FlagTree's matrix-multiplication TLE-Raw tutorial): the
Triton kernel walks K, loading f16 tiles of A and B, and
`fl.call(mma, [acc], [a, b])` accumulates their product in f32, the elements
of the accumulator shared among the threads of the CTA.

    python examples/gpu_matmul.py
"""
import sys

import triton
import triton.language as tl

import edsl
from edsl import InOut, Input, fl


@edsl.dialect
def mma(c: InOut["memref<?x?xf32, shared>"], a: Input["memref<?x?xf16, shared>"],
        b: Input["memref<?x?xf16, shared>"]):
    t = edsl.thread_id()
    nt = edsl.num_threads()
    rows, cols, depth = c.shape[0], c.shape[1], a.shape[1]
    for e in range(t, rows * cols, nt):
        i = e // cols
        j = e % cols
        s = c[i, j]
        for k in range(depth):
            s += edsl.f32(a[i, k]) * edsl.f32(b[k, j])
        c[i, j] = s


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = fl.call(mma, [acc], [a, b])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b, bm: int = 64, bn: int = 64, bk: int = 32):
    import torch
    (m, k), n = a.shape, b.shape[1]
    c = torch.empty((m, n), device=a.device, dtype=torch.float32)
    matmul_kernel[(triton.cdiv(m, bm), triton.cdiv(n, bn))](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk)
    return c


if __name__ == "__main__":
    import torch
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(300, 200, device="cuda", generator=gen).half()
    b = torch.randn(200, 170, device="cuda", generator=gen).half()
    err = (matmul(a, b) - a.float() @ b.float()).abs().max().item()
    ok = err < 1e-3
    print(f"GPU fl.call matmul f16 (300, 200) @ (200, 170) into f32: max error {err:.2e} vs torch -> "
          f"{'OK' if ok else 'MISMATCH'}")
    sys.exit(0 if ok else 1)
