"""Matmul on an NVIDIA GPU over shared buffers the Triton kernel allocates
(the TLE port path: `edsl.tle.language.gpu`, FlagTree's `tle.gpu`): the
accumulator lives in a shared buffer for the whole kernel, zeroed and read
back with `tl.store` / `tl.load` through `local_ptr`; each step of K copies
tiles of A and B (masked at the edges) into buffers of their own, and
`call_smem` runs the EDSL micro-kernel on the three buffers in place.

    python examples/gpu_matmul_smem.py
"""
import sys

import triton
import triton.language as tl

import edsl
from edsl import InOut, Input
import edsl.tle.language.gpu as tle_gpu
import edsl.tle.language.raw as tle_raw


@edsl.dialect
def accumulate(c: InOut["memref<?x?xf32, shared>"], a: Input["memref<?x?xf16, shared>"],
               b: Input["memref<?x?xf16, shared>"]):
    """c += a @ b, one rank-1 update a step of K: a[:, k] times b[k, :]; each
    thread updates the same elements of c every step."""
    t = edsl.thread_id()
    nt = edsl.num_threads()
    width = c.shape[1]
    for k in range(a.shape[1]):
        for e in range(t, c.shape[0] * width, nt):
            c[e // width, e % width] += edsl.f32(a[e // width, k]) * edsl.f32(b[k, e % width])


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tle_gpu.alloc([BM, BN], tl.float32, scope=tle_gpu.smem)
    tl.store(tle_gpu.local_ptr(acc), tl.zeros([BM, BN], dtype=tl.float32))
    a_tile = tle_gpu.alloc([BM, BK], tl.float16, scope=tle_gpu.smem)
    b_tile = tle_gpu.alloc([BK, BN], tl.float16, scope=tle_gpu.smem)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        tl.store(tle_gpu.local_ptr(a_tile), a)
        tl.store(tle_gpu.local_ptr(b_tile), b)
        acc = tle_raw.call_smem(accumulate, [acc], [a_tile, b_tile])   # (between barriers of the CTA)
    rows = tl.arange(0, BM)[:, None] + tl.zeros([BM, BN], dtype=tl.int32)
    cols = tl.arange(0, BN)[None, :] + tl.zeros([BM, BN], dtype=tl.int32)
    c = tl.load(tle_gpu.local_ptr(acc, indices=(rows, cols)))
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b, bm: int = 64, bn: int = 64, bk: int = 32):
    import torch
    (m, k), n = a.shape, b.shape[1]
    c = torch.empty((m, n), device=a.device, dtype=torch.float32)
    matmul_kernel[(triton.cdiv(m, bm), triton.cdiv(n, bn))](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk, num_stages=1)
    return c


if __name__ == "__main__":
    import torch
    gen = torch.Generator(device="cuda").manual_seed(1)
    shapes = (257, 96), (96, 130)
    a, b = (torch.randn(*shape, device="cuda", generator=gen).half() for shape in shapes)
    err = (matmul(a, b) - a.float() @ b.float()).abs().max().item()
    verdict = "OK" if err < 1e-3 else "MISMATCH"
    print(f"GPU matmul over shared buffers of the kernel, {shapes[0]} @ {shapes[1]} f16 into f32: "
          f"max error {err:.2e} vs torch -> {verdict}")
    sys.exit(0 if verdict == "OK" else 1)
