"""Per-row top-k on an NVIDIA GPU whose body is a raw function in CUDA C
(`examples/gpu_topk_row.cu`, compiled by the ziglang package's clang):
`fl.call` hands it the pointers, the block walks its rows, every thread
keeps its share of a row in registers, each warp picks its k largest by warp
shuffles and warp 0 merges the warps' lists (values in order; ties: the
earlier column). Up to 16 values a thread (4,096 columns at 8 warps), k up
to 32.

    python examples/gpu_topk_cuda.py
"""
import pathlib
import sys

import triton

import edsl
from edsl import fl

MAX_PER_THREAD, MAX_K = 16, 32   # as in the .cu file


@edsl.dialect(name="cuda", file=pathlib.Path(__file__).with_name("gpu_topk_row.cu"))
def row_topk(*args, **kwargs):
    ...


@triton.jit
def topk_kernel(x_ptr, vals_ptr, idx_ptr, n_rows, n_cols, k):
    fl.call(row_topk, [x_ptr, vals_ptr, idx_ptr, n_rows, n_cols, k])


def topk(x, k: int, programs: int = 1056):
    import torch
    rows, cols = x.shape
    warps = 4 if cols <= 2048 else 8 if cols <= 4096 else 16
    if cols > MAX_PER_THREAD * 32 * warps or not 0 < k <= min(cols, MAX_K):
        raise ValueError(f"top-{k} of {cols} columns: at most {MAX_PER_THREAD * 32 * warps} columns, "
                         f"0 < k <= min(columns, {MAX_K})")
    x = x.contiguous()
    vals = torch.empty((rows, k), device=x.device, dtype=torch.float32)
    idx = torch.empty((rows, k), device=x.device, dtype=torch.int32)
    topk_kernel[(min(programs, rows),)](x, vals, idx, rows, cols, k, num_warps=warps)
    return vals, idx


if __name__ == "__main__":
    import torch
    x = torch.randn(64, 3000, device="cuda", generator=torch.Generator(device="cuda").manual_seed(0))
    vals, idx = topk(x, 16)
    want = torch.topk(x, 16, dim=1)
    ok = torch.equal(vals, want.values) and torch.equal(idx.long(), want.indices)
    print(f"GPU fl.call CUDA C top-16 of {tuple(x.shape)} rows -> {'OK' if ok else 'MISMATCH'}")
    sys.exit(0 if ok else 1)
