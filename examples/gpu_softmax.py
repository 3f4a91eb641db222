"""Row softmax on an NVIDIA GPU whose body is an EDSL function on shared-memory
tiles (FlagTree's fused-softmax TLE-Raw tutorial, in edsl's Python style): the
threads of the CTA copy the row, halve it with tree reductions separated by
barriers (maximum, then sum of exponentials), and normalize. Each program
walks rows with a stride, so the call sits in a loop.

    python examples/gpu_softmax.py
"""
import sys

import triton
import triton.language as tl

import edsl
from edsl import InOut, Input, fl


@edsl.dialect
def softmax_row(y: InOut["memref<?xf32, shared>"], x: Input["memref<?xf32, shared>"]):
    t = edsl.thread_id()
    nt = edsl.num_threads()
    n = y.shape[0]
    for i in range(t, n, nt):
        y[i] = x[i]
    edsl.barrier()
    m = n
    while m > 1:                      # tree reduction of the maximum into y[0]
        half = (m + 1) // 2
        for i in range(t, m - half, nt):
            y[i] = max(y[i], y[i + half])
        edsl.barrier()
        m = half
    top = y[0]
    edsl.barrier()                    # everyone has read the maximum
    for i in range(t, n, nt):
        y[i] = edsl.exp(x[i] - top)
    edsl.barrier()
    m = n
    while m > 1:                      # tree reduction of the sum into y[0]
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
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
        y = tl.zeros_like(x)
        y = fl.call(softmax_row, [y], [x])
        tl.store(out_ptr + row * out_stride + cols, y, mask=mask)


def softmax(x, programs: int = 32):
    import torch
    rows, cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(programs,)](y, x, x.stride(0), y.stride(0), rows, cols, BLOCK=triton.next_power_of_2(cols))
    return y


if __name__ == "__main__":
    import torch
    x = torch.randn(823, 781, device="cuda", generator=torch.Generator(device="cuda").manual_seed(0))
    got = softmax(x)
    want = torch.softmax(x, dim=1)
    err = (got - want).abs().max().item()
    ok = err < 1e-6
    print(f"GPU fl.call softmax of {tuple(x.shape)}: max error {err:.2e} vs torch -> {'OK' if ok else 'MISMATCH'}")
    sys.exit(0 if ok else 1)
