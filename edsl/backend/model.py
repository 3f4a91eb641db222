"""The DPU model a launch runs on: MRAM image, DPUs, program instances, report.

- MRAM (`Mram`): the pointer arguments' memory, which must fit the 64 MiB of
  a DPU's MRAM once laid out as an image (each argument region at its own
  8-byte slot, keeping its address modulo 8). Writable arrays are used in
  place, read-only ones through a private copy; a kernel with EDSL regions
  gets the whole image as one copied buffer (copied back after the launch).
  DMA may only touch the regions (rounded out to 8-byte words).
- Program instances are spread over `num_dpus` DPUs round-robin (DPU d runs
  ids d, d + num_dpus, ...), one at a time per DPU; the model runs the DPUs
  in turn on the host, each with its WRAM (the kernel's buffers, and a DMA
  staging buffer per tasklet). As on hardware where every DPU has its own
  MRAM, the report counts the arrays as broadcast to each DPU used and read
  back from each.
- Tasklets: a kernel is compiled for `num_tasklets` (1..24) and every
  tasklet of a DPU runs it, as on hardware, sharing out the tile loops and
  meeting at barriers (edsl.dpu.runtime.run_tasklets: one host thread per
  tasklet). Each tasklet has its own launch-context slots (DMA counters,
  first error), summed after the launch. A launch is one call into the
  program per tasklet (`__dpu_launch`: DPUs 0..n-1 in turn).
- Every MRAM<->WRAM transfer goes through the checked DMA helper; a broken
  DMA rule, an MRAM access outside the arrays or a failed device assertion
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
                                   CTX_NREGIONS, CTX_READ_BYTES, CTX_READS, CTX_REGIONS,
                                   CTX_SLOTS, CTX_WRITE_BYTES,
                                   CTX_WRITES, ERR_ASSERT, ERR_DMA_RULE, ERR_MRAM_BOUNDS)

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
    per_tasklet_dma: list[int] = field(default_factory=list)   # transfers by tasklet id
    region_dma_bytes: int = 0          # bytes moved by EDSL regions' mram_read/mram_write

    @property
    def dma_transfers(self) -> int:
        return self.dma_reads + self.dma_writes

    @property
    def dma_bytes(self) -> int:
        return self.dma_read_bytes + self.dma_write_bytes + self.region_dma_bytes


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


class Mram:
    """The launch's MRAM: the pointer arguments' memory, as regions.

    Arrays whose memory overlaps are merged into one region. Each region has a
    place in a virtual MRAM image (8-byte slots keeping each address modulo 8,
    guard bytes between regions), which must fit the 64 MiB of a DPU's MRAM.
    Kernel pointers are host addresses: with `direct`, a region whose arrays
    are all writable is used in place (no copy in or out) and any other region
    is a private copy (writes to read-only arrays are dropped); without it,
    every region is copied into one image buffer and back (the image is then
    the one region DMA may touch, as EDSL regions expect).
    """

    GUARD = 8

    def __init__(self, arrays, direct: bool = True):
        import numpy as np
        spans = []
        for a in arrays:
            lo = a.__array_interface__["data"][0] if isinstance(a, np.ndarray) else a.data_ptr()
            spans.append((lo, lo + max(int(a.nbytes), 1), a))
        merged = []                        # [lo, hi) ranges, with their arrays
        for lo, hi, a in sorted(spans, key=lambda s: s[0]):
            if merged and lo < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
                merged[-1][2].append(a)
            else:
                merged.append([lo, hi, [a]])
        offset = self.GUARD
        layout = []
        for lo, hi, arrs in merged:
            offset = (offset + 7) // 8 * 8 + lo % 8
            layout.append((lo, hi, offset, all(_writable(x) for x in arrs)))
            offset += hi - lo + self.GUARD
        self.size = (offset + 7) // 8 * 8 + self.GUARD
        if self.size > MRAM_BYTES:
            raise DpuError(f"the launch's arrays need {self.size} bytes of MRAM, more than "
                           f"the {MRAM_BYTES} bytes of a DPU")
        self.data_bytes = sum(hi - lo for lo, hi, _, _ in layout)
        self.direct = direct
        # (host lo, host hi, MRAM address of lo, copied?, writable)
        self.regions = []
        self._buffers = []
        self.base = 0
        if not direct:
            self.base = self._buffer(self.size)
        for lo, hi, off, writable in layout:
            if direct and writable:
                self.regions.append((lo, hi, lo, False, True))
            elif direct:                   # a private copy, guard bytes around it
                start = self._buffer(hi - lo + lo % 8 + 2 * self.GUARD) + self.GUARD + lo % 8
                self.regions.append((lo, hi, start, True, False))
            else:
                self.regions.append((lo, hi, self.base + off, True, writable))
        if direct:
            table = [((m // 8) * 8, (m + hi - lo + 7) // 8 * 8) for lo, hi, m, _, _ in self.regions]
        else:
            table = [(self.base, self.base + self.size)]
        self.table = np.array(table or [(0, 0)], dtype=np.int64).reshape(-1)
        self.n_table = len(table)
        self.lo = int(self.table[0::2].min()) if table else 0
        self.hi = int(self.table[1::2].max()) if table else 0

    def _buffer(self, nbytes: int) -> int:
        """The 8-byte aligned address of a new zeroed host buffer."""
        import numpy as np
        buf = np.zeros(nbytes + 16, dtype=np.uint8)
        self._buffers.append(buf)
        return (buf.ctypes.data + 7) // 8 * 8

    def address(self, host_ptr: int) -> int:
        for lo, hi, m, _, _ in self.regions:
            if lo <= host_ptr < hi or lo == host_ptr:
                return m + host_ptr - lo
        raise AssertionError("pointer outside the image")

    def copy_in(self) -> None:
        for lo, hi, m, copied, _ in self.regions:
            if copied:
                ctypes.memmove(m, lo, hi - lo)

    def copy_out(self) -> None:
        for lo, hi, m, copied, writable in self.regions:
            if copied and writable:
                ctypes.memmove(lo, m, hi - lo)


MramImage = Mram


_MRAM_CACHE: dict = {}


def _mram_for(arrays, direct: bool) -> Mram:
    """The launch's `Mram`; a layout that copies nothing depends only on the
    arrays' addresses, sizes and writability, so it is reused across launches."""
    import numpy as np
    key = (direct,) + tuple((a.__array_interface__["data"][0], a.nbytes, a.flags.writeable)
                            if isinstance(a, np.ndarray) else (a.data_ptr(), int(a.nbytes), _writable(a))
                            for a in arrays)
    mram = _MRAM_CACHE.get(key)
    if mram is None:
        mram = Mram(arrays, direct)
        if direct and not mram._buffers:
            if len(_MRAM_CACHE) > 64:
                _MRAM_CACHE.clear()
            _MRAM_CACHE[key] = mram
    return mram


def _writable(a) -> bool:
    flags = getattr(a, "flags", None)
    return True if flags is None else bool(flags["WRITEABLE"])


def _memref_args(buffer, nbytes: int):
    """The five LLVM-level arguments of a `memref<?xi8>` over `buffer`."""
    return [ctypes.c_void_p(buffer), ctypes.c_void_p(buffer), ctypes.c_int64(0),
            ctypes.c_int64(nbytes), ctypes.c_int64(1)]


def launch(program, meta: dict, grid, signature, args, num_dpus: int, num_tasklets: int) -> LaunchReport:
    """Run every program instance of `grid` on the DPU model."""
    import numpy as np

    from ..dpu.runtime import run_tasklets
    gx, gy, gz = (int(g) for g in grid)
    total = gx * gy * gz
    tasklets = int(meta.get("tasklets", 1))
    if tasklets != num_tasklets:
        raise DpuError(f"kernel '{meta['name']}' was compiled for {tasklets} tasklets, "
                       f"not {num_tasklets}")
    arrays = {i: _array_of(v, name) for i, ((name, ty), v) in enumerate(zip(signature, args))
              if ty.startswith("*")}
    mram = _mram_for(list(arrays.values()), not meta.get("regions", False))
    values = []
    for i, ((name, ty), v) in enumerate(zip(signature, args)):
        if i in arrays:
            a = arrays[i]
            ptr = a.__array_interface__["data"][0] if isinstance(a, np.ndarray) else a.data_ptr()
            values.append(ctypes.c_int64(mram.address(ptr)))
        else:
            values.append(_scalar(ty, v, name))
    dpus_used = min(num_dpus, total)
    report = LaunchReport(kernel=meta["name"], grid=(gx, gy, gz), num_dpus=num_dpus,
                          dpus_used=dpus_used, num_tasklets=num_tasklets,
                          tasklets_used=num_tasklets if total else 0,
                          programs=total, wram_bytes=meta["wram_bytes"])
    if total == 0:
        _LAST[0] = report
        return report
    # A DPU's WRAM: the kernel's buffers and staging buffers (the DPUs run in
    # turn, so one host buffer serves them all).
    wram_bytes = max(8, int(meta["wram_bytes"]))
    wram = np.zeros(wram_bytes + 8, dtype=np.uint8)
    wram_addr = (wram.ctypes.data + 7) // 8 * 8
    row = np.zeros(CTX_SLOTS, dtype=np.int64)
    row[[CTX_MRAM_LO, CTX_MRAM_HI, CTX_REGIONS, CTX_NREGIONS]] = (
        mram.lo, mram.hi, mram.table.ctypes.data, mram.n_table)
    ctx = np.empty((dpus_used, tasklets, CTX_SLOTS), dtype=np.int64)
    ctx[...] = row
    dims = [ctypes.c_int32(gx), ctypes.c_int32(gy), ctypes.c_int32(gz)]
    stats = []
    mram.copy_in()
    try:
        # One call runs the whole launch: each tasklet runs DPUs 0..n-1 in turn
        # (all tasklets run the same programs in the same order, so their
        # barriers meet; the conversion keeps one program's accesses apart
        # from the next one's, whatever DPU it runs on).
        entry = program.function("__dpu_launch")
        call = values + dims + [ctypes.c_int32(dpus_used), ctypes.c_int32(num_dpus)] \
            + _memref_args(wram_addr, wram_bytes) + [ctypes.c_void_p(ctx.ctypes.data)]
        packed = (ctypes.c_void_p * len(call))(*[ctypes.addressof(v) for v in call])
        stats.append(run_tasklets(lambda: entry(packed), tasklets))
    finally:
        mram.copy_out()
    totals = ctx.reshape(-1, CTX_SLOTS)[:, :CTX_ERROR + 1].sum(axis=0).tolist()
    if totals[CTX_ERROR]:
        for dpu in range(dpus_used):
            for t in range(tasklets):
                _check(ctx[dpu, t], meta, dpu, mram)
    report.dma_reads, report.dma_read_bytes = totals[CTX_READS], totals[CTX_READ_BYTES]
    report.dma_writes, report.dma_write_bytes = totals[CTX_WRITES], totals[CTX_WRITE_BYTES]
    for st in stats:                       # EDSL regions' transfers (runtime intrinsics)
        report.dma_reads += st.dma_reads
        report.dma_writes += st.dma_writes
        report.region_dma_bytes += st.dma_bytes
    if tasklets == 1:
        report.per_tasklet_dma = [report.dma_reads + report.dma_writes]
    else:
        report.per_tasklet_dma = (ctx[:, :, CTX_READS] + ctx[:, :, CTX_WRITES]).sum(axis=0).tolist()
    report.per_dpu_programs = [len(range(dpu, total, num_dpus)) for dpu in range(dpus_used)]
    report.host_to_mram_bytes = mram.data_bytes * dpus_used
    report.mram_to_host_bytes = mram.data_bytes * dpus_used
    _LAST[0] = report
    return report


def _check(ctx, meta: dict, dpu: int, mram: Mram) -> None:
    code = int(ctx[CTX_ERROR])
    if code == 0:
        return
    name = meta["name"]
    mram_addr, wram, nbytes = int(ctx[CTX_ERR_MRAM]), int(ctx[CTX_ERR_WRAM]), int(ctx[CTX_ERR_BYTES])
    what = "mram_write" if int(ctx[CTX_ERR_DIR]) else "mram_read"
    if code == ERR_DMA_RULE:
        raise DpuError(f"kernel '{name}' on DPU {dpu}: {what} breaks the DMA rules: "
                       f"{dma_violation(mram_addr + mram.lo, wram, nbytes)}")
    if code == ERR_MRAM_BOUNDS:
        raise DpuError(f"kernel '{name}' on DPU {dpu}: {what} of {nbytes} bytes at MRAM address "
                       f"{mram_addr + mram.lo:#x} is outside the launch's arrays (out-of-bounds pointer)")
    if code == ERR_ASSERT:
        k = int(ctx[CTX_ASSERT]) - 1
        message, where = meta["asserts"][k]
        loc = None
        if where:
            filename, _, line = where.rpartition(":")
            loc = SourceLoc(filename, int(line), 0)
        raise DpuError(f"device assertion failed in kernel '{name}' (program {mram_addr}): {message}", loc)
    raise DpuError(f"kernel '{name}' on DPU {dpu}: error code {code}")
