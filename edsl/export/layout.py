"""The exported program's layout beside the kernel: its MRAM regions, the
size of its argument struct, and the WRAM it takes of its own (the
tasklets' contexts, the DPU's state, the regions, the arguments, the
access logs, printf) -- what the compile must leave it, and what the
generated files state."""
from __future__ import annotations

from ..backend.compiler import KernelRecord
from ..target import dpu as abi
from .arguments import ExportSpec, Param

# Entries of a tasklet's access log kept in WRAM (abi.LOG_ENTRY i64 each; a
# launch on several DPUs logs what each load, store and atomic used): few, as
# WRAM is the kernel's; a full one is flushed to the tasklet's log in MRAM.
LOG_WRAM_ENTRIES = 4

# A kernel that prints (tl.device_print): each DPU's printf log buffer in MRAM,
# by default the SDK's default size (the Makefile's STDOUT_BUFFER_SIZE), and
# the WRAM of the SDK's printf: its globals in the SDK's dpu-rt
# src/stdlib/stdio.c are 32 bytes (an 8-byte DMA-aligned cache, the buffer's
# size, write pointer and wrap state, the cache index, the wrap count; its
# lock is an atomic bit, not WRAM), 40 with alignment; 64 leaves a margin.
# (The hex-float digits are on the tasklet's stack.)
STDOUT_BUFFER_BYTES = 1 << 20
PRINTF_WRAM_BYTES = 64


def per_array(params: list[Param], record: KernelRecord) -> bool:
    """Whether a transfer may touch only the array it addresses (one MRAM region
    per array, as on the DPU model), or any byte of the arrays (one region, the
    whole image: the model's choice for a kernel with EDSL regions)."""
    return any(p.is_pointer for p in params) and not record.regions


def nregions(params: list[Param], per_array: bool, scratch: int) -> int:
    """The MRAM regions of a transfer: each array and the scratch (as the model
    has them), or the one region of the whole image, scratch included."""
    return sum(p.is_pointer for p in params) + (scratch > 0) if per_array else 1


def args_bytes(params: list[Param], per_array: bool, scratch: int) -> int:
    """sizeof(edsl_args_t): a field per parameter, 10 launch fields, the regions."""
    return 8 * (len(params) + 10 + 2 * nregions(params, per_array, scratch))


def log_bytes(tasklets: int) -> int:
    """WRAM of the access logs (templates/dpu_program.c): each tasklet's
    entries and its count of entries."""
    return 8 * tasklets * (LOG_WRAM_ENTRIES * abi.LOG_ENTRY + 1)


def runtime_bytes(spec: ExportSpec, per_array: bool, scratch: int, prints: bool) -> int:
    """The WRAM the program takes beside the kernel's buffers: the contexts
    (one per tasklet and the host's), the DPU's state, each region's bounds,
    the arguments, the access logs, and printf's if the kernel prints."""
    params, tasklets = spec.params, spec.num_tasklets
    return (8 * (abi.CTX_SLOTS * (tasklets + 1) + abi.DPU_SLOTS + 2 * nregions(params, per_array, scratch))
            + args_bytes(params, per_array, scratch) + log_bytes(tasklets)
            + (PRINTF_WRAM_BYTES if prints else 0))


def reserve(spec: ExportSpec) -> int:
    """The program's own WRAM as it is known before the kernel is compiled:
    `runtime_bytes` with what the compile decides at its most -- a region
    per array and one for a scratch (a kernel with EDSL regions has one
    region, no more), and printf's."""
    return runtime_bytes(spec, per_array=True, scratch=1, prints=True)
