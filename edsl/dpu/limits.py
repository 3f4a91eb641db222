"""Hardware facts of the UPMEM DPU that every layer checks against.

Sources: UPMEM SDK documentation (memory, DMA and tasklet chapters) and the
PrIM benchmark study.
"""

WRAM_BYTES = 64 * 1024          # scratchpad per DPU
MRAM_BYTES = 64 * 1024 * 1024   # DRAM bank per DPU
IRAM_BYTES = 24 * 1024          # instruction memory per DPU
MAX_TASKLETS = 24               # hardware threads per DPU
PIPELINE_FULL_TASKLETS = 11     # tasklets needed to fill the 14-stage pipeline

DMA_ALIGN = 8                   # MRAM<->WRAM transfers: 8-byte aligned addresses
DMA_MIN_BYTES = 8               # ... sizes a multiple of 8, from 8
DMA_MAX_BYTES = 2048            # ... to 2048 bytes per transfer

# LLVM address spaces in UPMEM's toolchain.
WRAM_ADDRSPACE = 0
MRAM_ADDRSPACE = 255


# The runtime interface generated code calls for DPU intrinsics: the host DPU
# model (edsl.dpu.runtime) binds these symbols.
ME = "edsl_dpu_me"                    # () -> i32
NR_TASKLETS = "edsl_dpu_nr_tasklets"  # () -> i32
BARRIER = "edsl_dpu_barrier"          # () -> ()
# DMA: (mram_addr, wram_addr, nbytes, site, mram_end, wram_end) -> (), all i64.
# `site` codes the source line (line << 16 | column); the ends bound the buffers.
MRAM_READ = "edsl_dpu_mram_read"
MRAM_WRITE = "edsl_dpu_mram_write"
# A failed `assert` in a body, an index out of bounds (with bounds checks):
# (site) -> (); the launch stops with an error.
ASSERT_FAIL = "edsl_dpu_assert_fail"
BOUNDS_FAIL = "edsl_dpu_bounds_fail"


def dma_violation(mram_addr: int, wram_addr: int, nbytes: int) -> str | None:
    """Why an mram_read/mram_write of these operands breaks the DMA rules, or None."""
    if nbytes % DMA_ALIGN or not DMA_MIN_BYTES <= nbytes <= DMA_MAX_BYTES:
        return (f"DMA size {nbytes} bytes: must be a multiple of {DMA_ALIGN} "
                f"between {DMA_MIN_BYTES} and {DMA_MAX_BYTES}")
    if mram_addr % DMA_ALIGN:
        return f"MRAM address {mram_addr:#x} is not {DMA_ALIGN}-byte aligned"
    if wram_addr % DMA_ALIGN:
        return f"WRAM address {wram_addr:#x} is not {DMA_ALIGN}-byte aligned"
    return None
