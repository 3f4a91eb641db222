"""Row softmax on an NVIDIA GPU whose body is an EDSL function on shared-memory
tiles (FlagTree's fused-softmax TLE-Raw tutorial, in edsl's Python style): each
thread of the CTA reduces its share of the row in registers, the partial
results meet in a shared tile of one slot per thread and are halved by tree
reductions separated by barriers (maximum, then sum of exponentials), and the
row is normalized in place (rows up to 8192 f32 fit the 48 KiB of static
shared memory). Each program walks rows with a stride, so the call sits in a
loop.

    python examples/gpu_softmax.py
"""
import sys

import triton
import triton.language as tl

import edsl
from edsl import InOut, fl


@edsl.dialect
def softmax_row(y: InOut["memref<?xf32, shared>"], part: InOut["memref<?xf32, shared>"]):
    """y: the row, normalized in place; part: one slot per thread."""
    t = edsl.thread_id()
    nt = edsl.num_threads()
    n = y.shape[0]
    k = min(nt, n, part.shape[0])    # threads holding a partial result
    top = y[t % n]                    # an element of the row: neutral for the maximum
    for i in range(t, n, k):          # each thread's share of the row, in registers
        top = max(top, y[i])
    if t < k:
        part[t] = top
    edsl.barrier()
    m = k
    while m > 1:                      # tree reduction of the partial maxima into part[0]
        half = (m + 1) // 2
        if t < m - half:
            part[t] = max(part[t], part[t + half])
        edsl.barrier()
        m = half
    top = part[0]
    edsl.barrier()                    # everyone has read the maximum
    total = 0.0
    for i in range(t, n, k):
        total = total + edsl.exp(y[i] - top)
    if t < k:
        part[t] = total
    edsl.barrier()
    m = k
    while m > 1:                      # tree reduction of the partial sums into part[0]
        half = (m + 1) // 2
        if t < m - half:
            part[t] = part[t] + part[t + half]
        edsl.barrier()
        m = half
    total = part[0]
    for i in range(t, n, nt):
        y[i] = edsl.exp(y[i] - top) / total


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols, BLOCK: tl.constexpr,
                   THREADS: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
        y, _ = fl.call(softmax_row, [x, tl.zeros([THREADS], dtype=tl.float32)], [])
        tl.store(out_ptr + row * out_stride + cols, y, mask=mask)


def softmax(x, programs: int = 32):
    import torch
    rows, cols = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    warps = 4 if block <= 1024 else 8 if block <= 4096 else 16
    softmax_kernel[(programs,)](y, x, x.stride(0), y.stride(0), rows, cols, BLOCK=block, THREADS=32 * warps,
                                num_warps=warps)
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
