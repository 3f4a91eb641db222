"""Row softmax whose body is an EDSL region: the tasklets of the DPU share the
row, reduce through a WRAM buffer and meet at barriers (the TLE-Raw softmax
tutorial's algorithm with tasklets in place of GPU threads).

    python examples/fl_softmax.py
"""
import sys

import numpy as np
import triton
import triton.language as tl

import edsl
from edsl import InOut, Input, fl


@edsl.dialect
def softmax_row(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
    me = edsl.tasklet_id()
    nt = edsl.num_tasklets()
    n = x.shape[0]
    partial = edsl.wram_alloc(24, "f32")   # one slot per tasklet
    m = -float("inf")
    for i in range(me, n, nt):
        m = max(m, x[i])
    partial[me] = m
    edsl.barrier()
    m = partial[0]
    for t in range(1, nt):
        m = max(m, partial[t])
    edsl.barrier()                          # everyone has read the maxima
    s = 0.0
    for i in range(me, n, nt):
        e = edsl.exp(x[i] - m)
        y[i] = e
        s += e
    partial[me] = s
    edsl.barrier()
    s = 0.0
    for t in range(nt):
        s += partial[t]
    for i in range(me, n, nt):
        y[i] = y[i] / s


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


if __name__ == "__main__":
    x = np.random.default_rng(0).standard_normal((64, 300)).astype(np.float32)
    got = softmax(x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    err = float(np.abs(got - want).max())
    ok = err < 1e-5
    print(f"fl.call softmax of {x.shape}: max error {err:.2e} vs NumPy -> {'OK' if ok else 'MISMATCH'}")
    sys.exit(0 if ok else 1)
