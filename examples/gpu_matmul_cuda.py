"""f16 matmul on the tensor cores of an H100/H200 whose body is a raw function
in CUDA C (`examples/gpu_matmul_tc.cu`, compiled by the ziglang package's
clang for sm_90a): each program of the Triton kernel picks its 128 x 256 tile
of C (grouped along M for L2 reuse) and `fl.call` hands the function the
global pointers of A, B and C, M, N, K, the row strides and the tile's
origin; the function runs the whole K loop with `wgmma.mma_async` on
shared-memory descriptors, fed by a 4-stage `cp.async` ring, and writes its
tile of C. The ring is the shared memory fl.call stages tile operands in:
the kernel passes three zero tiles (193 KiB) as the function's workspace.

Layouts: A is M x K row-major; B is read K-major, as `b.t()` of an N x K
row-major tensor (the layout of an `nn.Linear` weight; cuBLAS reads either
at the same speed): `matmul(a, b)` takes a K x N `b` in that layout as is and
transposes any other (a copy). C is M x N f16 (f32 accumulation), as
`torch.matmul` of f16 gives. Any M, N, K: edges are zero-filled; a K that is
not a multiple of 8 takes a slower element-wise load path. Needs sm_90
(wgmma), 8 warps a program.

    python examples/gpu_matmul_cuda.py
"""
import pathlib
import sys

import triton
import triton.language as tl

import edsl
from edsl import fl

BM, BN, GROUP_M = 128, 256, 8   # the tile of C a program computes, as in the .cu file; programs grouped by 8 rows


@edsl.dialect(name="cuda", file=pathlib.Path(__file__).with_name("gpu_matmul_tc.cu"))
def matmul_tc(*args, **kwargs):
    ...


@triton.jit
def matmul_kernel(c_ptr, a_ptr, b_ptr, M, N, K, lda, ldb, ldc,
                  BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    group = GROUP_M * tiles_n
    first_m = (pid // group) * GROUP_M
    rows = tl.minimum(tiles_m - first_m, GROUP_M)
    pm = first_m + (pid % group) % rows
    pn = (pid % group) // rows
    # (the workspace: 128 + 64 + 1 KiB of shared memory, contiguous, for the function's stages)
    fl.call(matmul_tc, [c_ptr, a_ptr, b_ptr, M, N, K, lda, ldb, ldc, pm * BM, pn * BN,
                        tl.zeros([16384], tl.int64), tl.zeros([8192], tl.int64), tl.zeros([128], tl.int64)])


def k_major(b):
    """`b` (K x N) as the kernel reads it: unit stride along K, rows 16-byte aligned."""
    if b.stride(0) == 1 and b.stride(1) % 8 == 0 and b.data_ptr() % 16 == 0:
        return b
    return b.t().contiguous().t()


def matmul(a, b):
    """a (M x K) @ b (K x N), f16 on an sm_90 GPU, into a new M x N f16 tensor."""
    import torch
    if a.dtype != torch.float16 or b.dtype != torch.float16 or a.dim() != 2 or b.dim() != 2 or \
            a.shape[1] != b.shape[0]:
        raise ValueError(f"f16 matrices M x K and K x N, not {a.dtype} {tuple(a.shape)} and {b.dtype} {tuple(b.shape)}")
    if torch.cuda.get_device_capability(a.device)[0] != 9:
        raise ValueError("wgmma needs an sm_90 GPU (H100, H200)")
    M, K = a.shape
    N = b.shape[1]
    if a.stride(1) != 1:
        a = a.contiguous()
    b = k_major(b)
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    if M and N:
        grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
        matmul_kernel[grid](c, a, b, M, N, K, a.stride(0), b.stride(1), c.stride(0),
                            BM=BM, BN=BN, GROUP_M=GROUP_M, num_warps=8)
    return c


if __name__ == "__main__":
    import torch
    gen = torch.Generator(device="cuda").manual_seed(0)
    ok = True
    for M, N, K in ((300, 333, 200), (257, 520, 1000), (129, 77, 37)):
        a = torch.randn(M, K, device="cuda", generator=gen).half()
        b = torch.randn(K, N, device="cuda", generator=gen).half()
        got = matmul(a, b).float()
        want = a.float() @ b.float()
        err = ((got - want).abs() / (want.abs() + 1)).max().item()
        ok &= err < 1e-2
        print(f"GPU fl.call CUDA C tensor-core matmul {M} x {K} @ {K} x {N}: max relative error {err:.1e} "
              f"vs f32 torch -> {'OK' if err < 1e-2 else 'MISMATCH'}")
    sys.exit(0 if ok else 1)
