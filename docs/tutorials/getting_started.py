"""Getting started: a raw function on the host, a Triton kernel on the DPU
model, the function called from the kernel, and a race the model finds.

    python docs/tutorials/getting_started.py
"""
# --8<-- [start:host]
import numpy as np

import edsl
from edsl import InOut, Input


@edsl.dialect
def saxpy(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], a: Input["f32"]):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


x = np.arange(8, dtype=np.float32)
y = np.ones(8, dtype=np.float32)
saxpy(y, x, 2.0)                     # compiled on first use, run on the host
print(y)
# --8<-- [end:host]
assert y.tolist() == (2 * np.arange(8) + 1).tolist()

# --8<-- [start:kernel]
import triton
import triton.language as tl

import edsl.backend

edsl.backend.activate()              # the DPU model is Triton's driver in this process


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


a = np.arange(1000, dtype=np.float32)
out = np.empty_like(a)
add_kernel[(4,)](a, a, out, a.size, BLOCK=256, num_dpus=2, num_tasklets=4)
r = edsl.backend.last_report()
print(f"{r.programs} programs on {r.dpus_used} DPUs, {r.dma_transfers} DMA transfers")
# --8<-- [end:kernel]
assert np.array_equal(out, 2 * a)

# --8<-- [start:call]
from edsl import fl


@triton.jit
def saxpy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    xs = tl.load(x_ptr + offs, mask=mask)
    ys = tl.load(y_ptr + offs, mask=mask)
    ys = fl.call(saxpy, [ys], [xs, 2.0])         # outs, ins -> the outs' new values
    tl.store(y_ptr + offs, ys, mask=mask)


ys = np.ones(1000, dtype=np.float32)
saxpy_kernel[(4,)](a, ys, a.size, BLOCK=256)
print(ys[:4])
# --8<-- [end:call]
assert np.array_equal(ys, 2 * a + 1)


# --8<-- [start:race]
@edsl.dialect
def total(t: InOut["memref<1xf32>"], x: Input["memref<?xf32>"]):
    t[0] = t[0] + x[edsl.thread_id()]        # every tasklet, no barrier


try:
    total.run(np.zeros(1, np.float32), a, tasklets=4, race_check=True)
except edsl.DpuError as err:
    print(err.message.split(";")[0])
# --8<-- [end:race]
else:
    raise AssertionError("the race was not found")

print("OK: getting started")
