"""An EDSL function called from a Triton kernel with `fl.call`, on the `dpu`
backend: the tasklets of a DPU share the tile.

    python docs/tutorials/fl_call.py
"""
import numpy as np
import triton
import triton.language as tl

import edsl
import edsl.backend
from edsl import InOut, Input, fl

edsl.backend.activate()             # the DPU model is Triton's driver, also beside a GPU


# --8<-- [start:function]
@edsl.dialect
def clamp_scale(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], lo: Input["f32"], hi: Input["f32"]):
    for i in range(edsl.thread_id(), x.shape[0], edsl.num_threads()):
        y[i] = 2.0 * min(max(x[i], lo), hi)
# --8<-- [end:function]


# --8<-- [start:kernel]
@triton.jit
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = fl.call(clamp_scale, [tl.zeros_like(x)], [x, -0.5, 0.5])   # outs, ins -> new outs
    tl.store(out_ptr + offs, y, mask=mask)
# --8<-- [end:kernel]


# --8<-- [start:launch]
n, BLOCK = 5_000, 512
x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
out = np.empty_like(x)
kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, num_dpus=2, num_tasklets=4)
assert np.array_equal(out, 2.0 * np.clip(x, -0.5, 0.5))
# --8<-- [end:launch]
print("OK: fl.call matches NumPy")
