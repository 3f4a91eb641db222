"""Vector addition with an ordinary `@triton.jit` kernel, compiled by the `dpu`
backend and run on the DPU model (no GPU needed).

    python examples/triton_vector_add.py
"""
import numpy as np
import triton
import triton.language as tl

import edsl.backend


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def vector_add(x, y, block=1024, num_dpus=4):
    out = np.empty_like(x)
    n = x.size
    add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block, num_dpus=num_dpus)
    return out


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    n = 100_003
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = vector_add(x, y)
    ok = np.array_equal(out, x + y)
    r = edsl.backend.last_report()
    print(f"vector add of {n} float32: {'OK' if ok else 'MISMATCH'} against NumPy")
    print(f"  {r.programs} programs on {r.dpus_used} DPUs, WRAM {r.wram_bytes} bytes, "
          f"{r.dma_transfers} DMA transfers ({r.dma_bytes} bytes), "
          f"host->MRAM {r.host_to_mram_bytes} bytes")
    raise SystemExit(0 if ok else 1)
