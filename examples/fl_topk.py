"""Per-row top-k as an EDSL region, one source for both targets: one thread
keeps the k largest values of the row in order (insertion into a sorted list;
ties keep the earlier column), the others wait at the region's barrier.

    python examples/fl_topk.py     # on the DPU model, or on the GPU if Triton's driver is CUDA
"""
import sys

import numpy as np
import triton
import triton.language as tl

import edsl
from edsl import InOut, Input, fl


@edsl.dialect
def topk_row(vals: InOut["memref<?xf32>"], idx: InOut["memref<?xi32>"],
             x: Input["memref<?xf32>"], n: Input["i32"]):
    if edsl.thread_id() == 0:
        k = vals.shape[0]
        for j in range(k):
            vals[j] = -float("inf")
            idx[j] = -1
        for i in range(n):
            v = x[i]
            if v > vals[k - 1] or idx[k - 1] < 0:
                p = k - 1
                while p > 0 and (vals[p - 1] < v or idx[p - 1] < 0):
                    vals[p] = vals[p - 1]
                    idx[p] = idx[p - 1]
                    p -= 1
                vals[p] = v
                idx[p] = i


@triton.jit
def topk_kernel(x_ptr, vals_ptr, idx_ptr, n_cols, BLOCK: tl.constexpr, K: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    vals = tl.full([K], -float("inf"), tl.float32)
    idx = tl.full([K], -1, tl.int32)
    vals, idx = fl.call(topk_row, [vals, idx], [x, n_cols])
    ks = tl.arange(0, K)
    tl.store(vals_ptr + row * K + ks, vals)
    tl.store(idx_ptr + row * K + ks, idx)


def topk(x: np.ndarray, k: int, num_tasklets: int = 16):
    rows, cols = x.shape
    vals = np.empty((rows, k), np.float32)
    idx = np.empty((rows, k), np.int32)
    topk_kernel[(rows,)](x, vals, idx, cols, BLOCK=triton.next_power_of_2(cols), K=k,
                         num_tasklets=num_tasklets, num_dpus=4)
    return vals, idx


def topk_on_gpu(x, k: int):
    """The same kernel on torch CUDA tensors (Triton's nvidia backend)."""
    import torch
    rows, cols = x.shape
    vals = x.new_empty((rows, k))
    idx = torch.empty((rows, k), dtype=torch.int32, device=x.device)
    topk_kernel[(rows,)](x, vals, idx, cols, BLOCK=triton.next_power_of_2(cols), K=k)
    return vals, idx


if __name__ == "__main__":
    x = np.random.default_rng(0).standard_normal((32, 200)).astype(np.float32)
    target = triton.runtime.driver.active.get_current_target().backend
    if target == "cuda":
        import torch
        vals, idx = (t.cpu().numpy() for t in topk_on_gpu(torch.from_numpy(x).cuda(), 8))
    else:
        vals, idx = topk(x, 8)
    want_idx = np.argsort(-x, axis=1, kind="stable")[:, :8]
    ok = np.array_equal(idx, want_idx) and np.array_equal(vals, np.take_along_axis(x, want_idx, 1))
    print(f"fl.call top-8 of {x.shape} rows on {target} -> {'OK' if ok else 'MISMATCH'}")
    sys.exit(0 if ok else 1)
