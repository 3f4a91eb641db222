"""Row softmax on an NVIDIA GPU whose body is an EDSL function on shared-memory
tiles (FlagTree's fused-softmax TLE-Raw tutorial, in edsl's Python style): each
thread of the CTA reduces its share of the row in registers, each warp
reduces its threads' results with butterfly shuffles (`edsl.shuffle_xor`),
and the warps' results meet in a shared tile of one slot per warp, which
every thread reads after one barrier (maximum, then sum of exponentials,
which stay in the row); the row is then scaled in place (the row's tile, a
power of two of f32, must fit the shared memory a block opts in to: up to
32,768 f32 on an H100 or H200). Each program walks rows with a
stride, so the call sits in a loop.

    python examples/gpu_softmax.py
"""
import sys

import triton
import triton.language as tl

import edsl
from edsl import InOut, fl


@edsl.dialect(fastmath=True)   # exp by the GPU's ex2.approx, as Triton's tl.exp
def softmax_row(y: InOut["memref<?xf32, shared>"], part: InOut["memref<?xf32, shared>"]):
    """y: the row, scaled in place; part: one slot per warp (the CTA's
    threads are whole warps, as Triton launches them)."""
    t = edsl.thread_id()
    nt = edsl.num_threads()
    n = y.shape[0]
    warps = nt // 32
    top = y[t % n]                    # an element of the row: neutral for the maximum
    for i in range(t, n, nt):         # each thread's share of the row, in registers
        top = max(top, y[i])
    lane = 16
    while lane > 0:                   # the warp's maximum, in each of its lanes
        top = max(top, edsl.shuffle_xor(top, lane))
        lane = lane // 2
    if t % 32 == 0:
        part[t // 32] = top
    edsl.barrier()
    top = part[0]
    for w in range(1, warps):         # the row's maximum, in every thread
        top = max(top, part[w])
    edsl.barrier()                    # everyone has read part before it is written again
    total = 0.0
    for i in range(t, n, nt):         # the exponentials, kept in the row, and their sum
        e = edsl.exp(y[i] - top)
        y[i] = e
        total = total + e
    lane = 16
    while lane > 0:
        total = total + edsl.shuffle_xor(total, lane)
        lane = lane // 2
    if t % 32 == 0:
        part[t // 32] = total
    edsl.barrier()
    total = part[0]
    for w in range(1, warps):
        total = total + part[w]
    scale = 1.0 / total
    for i in range(t, n, nt):
        y[i] = y[i] * scale


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols, BLOCK: tl.constexpr,
                   WARPS: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
        y, _ = fl.call(softmax_row, [x, tl.zeros([WARPS], dtype=tl.float32)], [])
        tl.store(out_ptr + row * out_stride + cols, y, mask=mask)


def softmax(x, programs: int = 32):
    import torch
    rows, cols = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    warps = 4 if block <= 1024 else 8 if block <= 4096 else 16
    softmax_kernel[(programs,)](y, x, x.stride(0), y.stride(0), rows, cols, BLOCK=block, WARPS=warps,
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
