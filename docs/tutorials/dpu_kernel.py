"""A Triton kernel compiled by the `dpu` backend and run on the DPU model:
NumPy arrays for pointers, the launch's report from `edsl.backend.last_report()`.

    python docs/tutorials/dpu_kernel.py
"""
import numpy as np
import triton
import triton.language as tl

import edsl.backend

edsl.backend.activate()             # the DPU model is Triton's driver, also beside a GPU


# --8<-- [start:kernel]
@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a * x + y, mask=mask)
# --8<-- [end:kernel]


# --8<-- [start:launch]
n, BLOCK = 10_000, 1024
rng = np.random.default_rng(0)
x = rng.standard_normal(n).astype(np.float32)
y = rng.standard_normal(n).astype(np.float32)
out = np.empty_like(x)

axpy_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, 3.0, n, BLOCK=BLOCK, num_dpus=4, num_tasklets=4)
assert np.allclose(out, np.float32(3.0) * x + y, rtol=1e-6, atol=1e-6)
# --8<-- [end:launch]

# --8<-- [start:report]

r = edsl.backend.last_report()
print(f"{r.programs} programs on {r.dpus_used} DPUs, WRAM {r.wram_bytes} bytes, "
      f"{r.dma_transfers} DMA transfers ({r.dma_bytes} bytes), host->MRAM {r.host_to_mram_bytes} bytes")
# --8<-- [end:report]
print("OK: dpu kernel matches NumPy")
