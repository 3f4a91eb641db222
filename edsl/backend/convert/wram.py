"""WRAM allocation: the kernel's buffers as views of the DPU's WRAM.

The converted kernel receives the DPU's WRAM (64 KiB, shared by its tasklets)
as a `memref<?xi8>`; each buffer is a `memref.view` of it at a fixed offset,
created at the kernel's entry (never inside a loop), and each tasklet has a
DMA staging buffer of its own after the shared buffers. The conversion asks
for buffers as it goes (`buffer`, `staging`: the views start at placeholder
offsets); `layout`, a step after it, gives each its offset (8-byte aligned,
in the order asked for), sizes the staging buffers for the largest transfer
seen, and records the budget that `check` compares with the DPU's WRAM.
"""
from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, memref

from ...errors import DpuError, SourceLoc


@dataclass
class WramBuffer:
    nbytes: int
    what: str
    loc: SourceLoc | None


def _aligned(n: int) -> int:
    return (n + 7) // 8 * 8


class WramLayout:
    """The buffers of one kernel in the DPU's WRAM (`wram`, a memref<?xi8>),
    their views created at `ip` (the kernel's entry); `me` is the tasklet's id
    (an index), None with one tasklet."""

    def __init__(self, wram: ir.Value, ip: ir.InsertionPoint, tasklets: int, me: ir.Value | None):
        self.wram, self.ip, self.tasklets, self.me = wram, ip, tasklets, me
        self.buffers: list[tuple[WramBuffer, ir.Operation]] = []   # (record, offset constant)
        self.staging_bytes = 0
        self._staging: ir.Value | None = None
        self._staging_off = self._staging_size = None

    def buffer(self, shape, stored: ir.Type, nbytes: int, what: str, loc: SourceLoc | None) -> ir.Value:
        """A buffer of `shape` x `stored` elements (`nbytes` in all) for `what`."""
        with self.ip, ir.Location.unknown():
            offset = arith.constant(ir.IndexType.get(), 0)
            view = memref.view(ir.MemRefType.get(list(shape), stored), self.wram, offset, [])
        self.buffers.append((WramBuffer(_aligned(nbytes), what, loc), offset.owner))
        return view

    def staging(self, nbytes: int) -> ir.Value:
        """This tasklet's staging buffer for DMA transfers of up to `nbytes`
        (an i64 address)."""
        self.staging_bytes = max(self.staging_bytes, nbytes)
        if self._staging is None:
            i64 = ir.IntegerType.get_signless(64)
            with self.ip, ir.Location.unknown():
                base = arith.index_cast(i64, memref.extract_aligned_pointer_as_index(self.wram))
                self._staging_off = arith.constant(i64, 0).owner
                addr = arith.addi(base, self._staging_off.result)
                if self.me is not None:
                    self._staging_size = arith.constant(i64, 0).owner
                    mine = arith.muli(arith.index_cast(i64, self.me), self._staging_size.result)
                    addr = arith.addi(addr, mine)
                self._staging = addr
        return self._staging

    def layout(self) -> list[WramBuffer]:
        """Give every buffer its offset; the buffers, staging last."""
        offset, out = 0, []
        for record, constant in self.buffers:
            constant.attributes["value"] = ir.IntegerAttr.get(ir.IndexType.get(), offset)
            offset += record.nbytes
            out.append(record)
        if self._staging is None:
            return out
        i64 = ir.IntegerType.get_signless(64)
        nbytes = _aligned(self.staging_bytes)
        self._staging_off.attributes["value"] = ir.IntegerAttr.get(i64, offset)
        what = "DMA staging buffer"
        if self._staging_size is not None:
            self._staging_size.attributes["value"] = ir.IntegerAttr.get(i64, nbytes)
            what += f"s ({self.tasklets} tasklets x {nbytes} bytes)"
        out.append(WramBuffer(nbytes * self.tasklets, what, None))
        return out


def check(name: str, buffers: list[WramBuffer], limit: int | None) -> None:
    """A kernel whose WRAM buffers exceed the DPU's WRAM fails at compile time."""
    from ...dpu.abi import WRAM_BYTES
    limit = WRAM_BYTES if limit is None else limit
    total = sum(b.nbytes for b in buffers)
    if total <= limit:
        return
    largest = sorted(buffers, key=lambda b: -b.nbytes)[:3]
    parts = ", ".join(f"{b.nbytes} bytes for the {b.what}"
                      + (f" at line {b.loc.lineno}" if b.loc else "") for b in largest)
    raise DpuError(f"kernel '{name}' needs {total} bytes of WRAM, more than the "
                   f"{limit} bytes of a DPU; largest buffers: {parts}",
                   next((b.loc for b in largest if b.loc), None))
