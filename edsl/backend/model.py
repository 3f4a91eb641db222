"""The DPU model a launch runs on: MRAM image, DPUs, program instances, report.

- The pointer arguments' memory is copied into one MRAM image (each argument
  region at its own 8-byte slot, keeping its address modulo 8), which must fit
  the 64 MiB of a DPU's MRAM; kernel pointers are addresses in that image.
  After the launch the image is copied back into the (writable) arrays.
- Program instances are spread over `num_dpus` DPUs round-robin (DPU d runs
  ids d, d + num_dpus, ...), one at a time per DPU; the model runs the DPUs
  in turn on the host. As on hardware where every DPU has its own MRAM, the
  report counts the image as broadcast to each DPU used and read back from
  each.
- Tile code runs on one tasklet per DPU; `num_tasklets` (1..24) is checked
  and recorded in the report.
- Every MRAM<->WRAM transfer goes through the checked DMA helper; a broken
  DMA rule, an MRAM access outside the image or a failed device assertion
  raises `DpuError` after the program.

`LaunchReport` is the per-launch record: the launcher keeps the last one as
`launcher.report` (`compiled = kernel[grid](...); compiled.run.report`) and
`edsl.backend.last_report()` returns the most recent launch's.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

from ..dpu.limits import MRAM_BYTES, dma_violation
from ..errors import ArgumentError, DpuError, SourceLoc
from .convert.runtime_text import (CTX_ASSERT, CTX_ERR_BYTES, CTX_ERR_DIR, CTX_ERR_MRAM,
                                   CTX_ERR_WRAM, CTX_ERROR, CTX_MRAM_HI, CTX_MRAM_LO,
                                   CTX_READ_BYTES, CTX_READS, CTX_SLOTS, CTX_WRITE_BYTES,
                                   CTX_WRITES, ERR_ASSERT, ERR_DMA_RULE, ERR_MRAM_BOUNDS)
from .engine import call_packed

_LAST: list = [None]


@dataclass
class LaunchReport:
    """What one launch did on the DPU model."""
    kernel: str
    grid: tuple[int, int, int]
    num_dpus: int
    dpus_used: int
    num_tasklets: int
    tasklets_used: int
    programs: int
    wram_bytes: int
    dma_reads: int = 0
    dma_read_bytes: int = 0
    dma_writes: int = 0
    dma_write_bytes: int = 0
    host_to_mram_bytes: int = 0
    mram_to_host_bytes: int = 0
    per_dpu_programs: list[int] = field(default_factory=list)

    @property
    def dma_transfers(self) -> int:
        return self.dma_reads + self.dma_writes

    @property
    def dma_bytes(self) -> int:
        return self.dma_read_bytes + self.dma_write_bytes


def last_report() -> LaunchReport | None:
    """The report of the most recent launch on the DPU model (None before any)."""
    return _LAST[0]


_SCALARS = {
    "i1": ctypes.c_bool, "u1": ctypes.c_bool,
    "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
    "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32, "u64": ctypes.c_uint64,
    "fp32": ctypes.c_float, "fp64": ctypes.c_double,
}


def _array_of(value, name):
    import numpy as np
    if isinstance(value, np.ndarray):
        a = value
    elif hasattr(value, "data_ptr") and hasattr(value, "nbytes"):
        a = value
    else:
        raise ArgumentError(f"argument '{name}' must be a NumPy array (or edsl.dpu.array(a)), "
                            f"not {type(value).__name__}")
    if isinstance(a, np.ndarray) and not a.flags["C_CONTIGUOUS"]:
        raise ArgumentError(f"argument '{name}' must be a C-contiguous NumPy array "
                            f"(use np.ascontiguousarray)")
    return a


def _scalar(ty: str, value, name: str):
    import numpy as np
    if ty in ("fp16", "bf16"):
        bits = np.array([value], dtype=np.float32)
        if ty == "fp16":
            return ctypes.c_uint16(int(bits.astype(np.float16).view(np.uint16)[0]))
        raw = int(bits.view(np.uint32)[0])
        raw += 0x7FFF + ((raw >> 16) & 1)          # round to nearest even
        return ctypes.c_uint16((raw >> 16) & 0xFFFF)
    ctype = _SCALARS.get(ty)
    if ctype is None:
        raise ArgumentError(f"argument '{name}' of type {ty} is not supported by the DPU backend")
    try:
        return ctype(value.item() if hasattr(value, "item") else value)
    except TypeError:
        raise ArgumentError(f"argument '{name}' must be a number for type {ty}, "
                            f"not {type(value).__name__}") from None


class MramImage:
    """The pointer arguments' memory laid out in one MRAM-sized host buffer."""

    GUARD = 8

    def __init__(self, arrays):
        import numpy as np
        spans = []
        for a in arrays:
            lo = a.__array_interface__["data"][0] if isinstance(a, np.ndarray) else a.data_ptr()
            spans.append((lo, lo + max(int(a.nbytes), 1), a))
        regions = []                       # merged [lo, hi) ranges, with their arrays
        for lo, hi, a in sorted(spans, key=lambda s: s[0]):
            if regions and lo < regions[-1][1]:
                regions[-1][1] = max(regions[-1][1], hi)
                regions[-1][2].append(a)
            else:
                regions.append([lo, hi, [a]])
        offset = self.GUARD
        self.regions = []
        for lo, hi, arrs in regions:
            offset = (offset + 7) // 8 * 8 + lo % 8
            self.regions.append((lo, hi, offset, all(_writable(x) for x in arrs)))
            offset += hi - lo + self.GUARD
        self.size = (offset + 7) // 8 * 8 + self.GUARD
        if self.size > MRAM_BYTES:
            raise DpuError(f"the launch's arrays need {self.size} bytes of MRAM, more than "
                           f"the {MRAM_BYTES} bytes of a DPU")
        self.buffer = np.zeros(self.size + 8, dtype=np.uint8)
        raw = self.buffer.__array_interface__["data"][0]
        self.base = (raw + 7) // 8 * 8
        self.data_bytes = sum(hi - lo for lo, hi, _, _ in self.regions)

    def address(self, host_ptr: int) -> int:
        for lo, hi, off, _ in self.regions:
            if lo <= host_ptr < hi or (lo == host_ptr):
                return self.base + off + host_ptr - lo
        raise AssertionError("pointer outside the image")

    def copy_in(self) -> None:
        for lo, hi, off, _ in self.regions:
            ctypes.memmove(self.base + off, lo, hi - lo)

    def copy_out(self) -> None:
        for lo, hi, off, writable in self.regions:
            if writable:
                ctypes.memmove(lo, self.base + off, hi - lo)


def _writable(a) -> bool:
    flags = getattr(a, "flags", None)
    return True if flags is None else bool(flags["WRITEABLE"])


def launch(program, meta: dict, grid, signature, args, num_dpus: int, num_tasklets: int) -> LaunchReport:
    """Run every program instance of `grid` on the DPU model."""
    import numpy as np
    gx, gy, gz = (int(g) for g in grid)
    total = gx * gy * gz
    pointers = [(name, _array_of(v, name)) for (name, ty), v in zip(signature, args) if ty.startswith("*")]
    image = MramImage([a for _, a in pointers])
    values = []
    for (name, ty), v in zip(signature, args):
        if ty.startswith("*"):
            a = _array_of(v, name)
            ptr = a.__array_interface__["data"][0] if isinstance(a, np.ndarray) else a.data_ptr()
            values.append(ctypes.c_int64(image.address(ptr)))
        else:
            values.append(_scalar(ty, v, name))
    dpus_used = min(num_dpus, total)
    report = LaunchReport(kernel=meta["name"], grid=(gx, gy, gz), num_dpus=num_dpus,
                          dpus_used=dpus_used, num_tasklets=num_tasklets, tasklets_used=1,
                          programs=total, wram_bytes=meta["wram_bytes"])
    if total == 0:
        _LAST[0] = report
        return report
    image.copy_in()
    main = program.function("__dpu_main")
    ctx = np.zeros(CTX_SLOTS, dtype=np.int64)
    try:
        for dpu in range(dpus_used):
            ctx[:] = 0
            ctx[CTX_MRAM_LO] = image.base
            ctx[CTX_MRAM_HI] = image.base + image.size
            call_packed(main, values + [ctypes.c_int32(gx), ctypes.c_int32(gy), ctypes.c_int32(gz),
                                        ctypes.c_int32(dpu), ctypes.c_int32(num_dpus),
                                        ctypes.c_void_p(ctx.ctypes.data)])
            _check(ctx, meta, dpu)
            report.dma_reads += int(ctx[CTX_READS])
            report.dma_read_bytes += int(ctx[CTX_READ_BYTES])
            report.dma_writes += int(ctx[CTX_WRITES])
            report.dma_write_bytes += int(ctx[CTX_WRITE_BYTES])
            report.per_dpu_programs.append(len(range(dpu, total, num_dpus)))
    finally:
        image.copy_out()
    report.host_to_mram_bytes = image.data_bytes * dpus_used
    report.mram_to_host_bytes = image.data_bytes * dpus_used
    _LAST[0] = report
    return report


def _check(ctx, meta: dict, dpu: int) -> None:
    code = int(ctx[CTX_ERROR])
    if code == 0:
        return
    name = meta["name"]
    mram, wram, nbytes = int(ctx[CTX_ERR_MRAM]), int(ctx[CTX_ERR_WRAM]), int(ctx[CTX_ERR_BYTES])
    what = "mram_write" if int(ctx[CTX_ERR_DIR]) else "mram_read"
    if code == ERR_DMA_RULE:
        raise DpuError(f"kernel '{name}' on DPU {dpu}: {what} breaks the DMA rules: "
                       f"{dma_violation(mram, wram, nbytes)}")
    if code == ERR_MRAM_BOUNDS:
        raise DpuError(f"kernel '{name}' on DPU {dpu}: {what} of {nbytes} bytes at MRAM offset "
                       f"{mram} is outside the launch's arrays (out-of-bounds pointer)")
    if code == ERR_ASSERT:
        k = int(ctx[CTX_ASSERT]) - 1
        message, where = meta["asserts"][k]
        loc = None
        if where:
            filename, _, line = where.rpartition(":")
            loc = SourceLoc(filename, int(line), 0)
        raise DpuError(f"device assertion failed in kernel '{name}' (program {mram}): {message}", loc)
    raise DpuError(f"kernel '{name}' on DPU {dpu}: error code {code}")
