"""Row softmax whose body is an EDSL region, one source for both targets: the
threads (tasklets of a DPU, threads of a GPU's CTA) share the row, halve it
with tree reductions separated by barriers (maximum, then sum of
exponentials) and normalize: the TLE-Raw softmax tutorial's algorithm.

    python examples/fl_softmax.py     # on the DPU model, or on the GPU if Triton's driver is CUDA
"""
import sys

import numpy as np
import triton
import triton.language as tl

import edsl
from edsl import InOut, Input, fl


@edsl.dialect
def softmax_row(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
    t = edsl.thread_id()
    nt = edsl.num_threads()
    n = x.shape[0]
    for i in range(t, n, nt):
        y[i] = x[i]
    edsl.barrier()
    m = n
    while m > 1:                            # tree reduction of the maximum into y[0]
        half = (m + 1) // 2
        for i in range(t, m - half, nt):
            y[i] = max(y[i], y[i + half])
        edsl.barrier()
        m = half
    top = y[0]
    edsl.barrier()                          # everyone has read the maximum
    for i in range(t, n, nt):
        y[i] = edsl.exp(x[i] - top)
    edsl.barrier()
    m = n
    while m > 1:                            # tree reduction of the sum into y[0]
        half = (m + 1) // 2
        for i in range(t, m - half, nt):
            y[i] = y[i] + y[i + half]
        edsl.barrier()
        m = half
    total = y[0]
    edsl.barrier()
    for i in range(t, n, nt):
        y[i] = edsl.exp(x[i] - top) / total


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    y = tl.zeros([BLOCK], dtype=tl.float32)
    y = fl.call(softmax_row, [y], [x])
    tl.store(out_ptr + row * stride + cols, y, mask=mask)


def softmax(x: np.ndarray, num_tasklets: int = 16) -> np.ndarray:
    rows, cols = x.shape
    out = np.empty_like(x)
    softmax_kernel[(rows,)](out, x, cols, x.shape[1], BLOCK=triton.next_power_of_2(max(cols, 1)),
                            num_tasklets=num_tasklets, num_dpus=4)
    return out


def softmax_on_gpu(x):
    """The same kernel on torch CUDA tensors (Triton's nvidia backend)."""
    y = x.new_empty(x.shape)
    softmax_kernel[(x.shape[0],)](y, x, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(max(x.shape[1], 1)))
    return y


if __name__ == "__main__":
    x = np.random.default_rng(0).standard_normal((64, 300)).astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    target = triton.runtime.driver.active.get_current_target().backend
    if target == "cuda":
        import torch
        got = softmax_on_gpu(torch.from_numpy(x).cuda()).cpu().numpy()
    else:
        got = softmax(x)
    err = float(np.abs(got - want).max())
    ok = err < 1e-5
    print(f"fl.call softmax of {x.shape} on {target}: max error {err:.2e} vs NumPy -> {'OK' if ok else 'MISMATCH'}")
    sys.exit(0 if ok else 1)
