"""WRAM allocation: the kernel's buffers as views of the DPU's WRAM.

The converted kernel receives the DPU's WRAM (64 KiB, shared by its tasklets)
as a `memref<?xi8>`; each buffer is a `memref.view` of it at a fixed offset,
created at the kernel's entry (never inside a loop). Shared buffers (tiles)
come first, then the buffers each tasklet has a copy of (`private`: the
windows and panels of tiles kept in MRAM, see `spill`), then each tasklet's
DMA staging buffer. The conversion asks for buffers as it goes (`buffer`,
`private`, `staging`: the views start at placeholder offsets); `layout`, a
step after it, gives each its offset (8-byte aligned, in the order asked
for), sizes the staging buffers for the largest transfer seen, and records
the budget that `check` compares with the DPU's WRAM.

A tile buffer carries its request number (`key`): the spill plan
(`spill.plan`) names the tiles it keeps in MRAM by it, and they leave the
layout (`drop`).
"""
from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, memref

from ...target.dpu import align_up
from ...base.errors import DpuError, SourceLoc


@dataclass
class WramBuffer:
    nbytes: int                  # WRAM bytes, every tasklet's copy included
    what: str
    loc: SourceLoc | None
    key: int | None = None       # a tile buffer's request number
    spillable: bool = False      # may live in MRAM instead (not an EDSL region's operand)
    uses: int = 0                # TTIR uses of the values it holds
    shape: tuple = ()            # (tile buffers) elements
    es: int = 0                  # ... and bytes per element


class WramLayout:
    """The buffers of one kernel in the DPU's WRAM (`wram`, a memref<?xi8>),
    their views created at `ip` (the kernel's entry); `me` is the tasklet's id
    (an index), None with one tasklet."""

    def __init__(self, wram: ir.Value, ip: ir.InsertionPoint, tasklets: int, me: ir.Value | None):
        self.wram, self.ip, self.tasklets, self.me = wram, ip, tasklets, me
        self.buffers: list[tuple[WramBuffer, ir.Operation]] = []   # (record, offset constant)
        self.private_buffers: list[tuple[WramBuffer, ir.Operation, int]] = []  # (.., bytes each)
        self.by_view: dict = {}                                     # view -> its record
        self.staging_bytes = 0
        self._staging: ir.Value | None = None
        self._staging_off = self._staging_size = None

    def buffer(self, shape, stored: ir.Type, nbytes: int, what: str, loc: SourceLoc | None,
               key: int | None = None, spillable: bool = False, es: int = 0) -> ir.Value:
        """A buffer of `shape` x `stored` elements (`nbytes` in all) for `what`."""
        return self.place(stored, WramBuffer(align_up(nbytes), what, loc, key, spillable, 0, tuple(shape), es))

    def place(self, stored: ir.Type, record: WramBuffer) -> ir.Value:
        """The view of the buffer `record` describes (its `shape` x `stored`)."""
        with self.ip, ir.Location.unknown():
            offset = arith.constant(ir.IndexType.get(), 0)
            view = memref.view(ir.MemRefType.get(list(record.shape), stored), self.wram, offset, [])
        self.buffers.append((record, offset.owner))
        self.by_view[view] = record
        return view

    def private(self, nbytes: int, what: str, loc: SourceLoc | None = None) -> ir.Value:
        """`nbytes` of which each tasklet has its own copy: this tasklet's, as
        a memref<nbytes x i8> (`view` cuts typed buffers from it)."""
        each = align_up(nbytes)
        index = ir.IndexType.get()
        with self.ip, ir.Location.unknown():
            offset = arith.constant(index, 0)
            at = offset
            if self.me is not None:
                at = arith.addi(offset, arith.muli(self.me, arith.constant(index, each)))
            view = memref.view(ir.MemRefType.get([each], ir.IntegerType.get_signless(8)), self.wram, at, [])
        self.private_buffers.append((WramBuffer(each * self.tasklets, what, loc), offset.owner, each))
        return view

    def view(self, block: ir.Value, at: int, shape, stored: ir.Type) -> ir.Value:
        """A typed buffer `at` bytes into `block` (a `private` block), made at
        the kernel's entry."""
        with self.ip, ir.Location.unknown():
            return memref.view(ir.MemRefType.get(list(shape), stored), block,
                               arith.constant(ir.IndexType.get(), at), [])

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

    def drop(self, views) -> None:
        """Take the buffers of `views` out of the layout (tiles kept in MRAM)."""
        gone = [self.by_view.pop(v) for v in views]
        self.buffers = [(r, c) for r, c in self.buffers if not any(r is g for g in gone)]

    def records(self) -> list[WramBuffer]:
        """The buffers as `layout` lays them out, staging last."""
        out = [record for record, _ in self.buffers]
        for record, _, each in self.private_buffers:
            out.append(WramBuffer(record.nbytes, record.what + (f" ({self.tasklets} tasklets x {each} bytes)"
                                                                if self.tasklets > 1 else ""), record.loc))
        if self._staging is not None:
            nbytes = align_up(self.staging_bytes)
            out.append(WramBuffer(nbytes * self.tasklets, "DMA staging buffer" + (
                f"s ({self.tasklets} tasklets x {nbytes} bytes)" if self._staging_size is not None else ""), None))
        return out

    def layout(self) -> list[WramBuffer]:
        """Give every buffer its offset; the buffers, staging last."""
        offset = 0
        index = ir.IndexType.get()
        for record, constant in self.buffers:
            constant.attributes["value"] = ir.IntegerAttr.get(index, offset)
            offset += record.nbytes
        for record, constant, _ in self.private_buffers:
            constant.attributes["value"] = ir.IntegerAttr.get(index, offset)
            offset += record.nbytes
        if self._staging is not None:
            i64 = ir.IntegerType.get_signless(64)
            self._staging_off.attributes["value"] = ir.IntegerAttr.get(i64, offset)
            if self._staging_size is not None:
                self._staging_size.attributes["value"] = ir.IntegerAttr.get(i64, align_up(self.staging_bytes))
        return self.records()


def wram_limit(limit: int | None) -> int:
    from ...target.dpu import WRAM_BYTES
    return WRAM_BYTES if limit is None else limit


class WramFull(DpuError):
    """A kernel's tiles do not fit in the DPU's WRAM (with those that may be
    kept in MRAM kept there)."""


def check(name: str, buffers: list[WramBuffer], limit: int | None) -> None:
    """A kernel whose WRAM buffers (with its called functions' own,
    `KernelInfo.functions_wram`) exceed the DPU's WRAM fails at compile time."""
    limit = wram_limit(limit)
    total = sum(b.nbytes for b in buffers)
    if total <= limit:
        return
    raise WramFull(f"kernel '{name}' needs {total} bytes of WRAM, more than the "
                   f"{limit} bytes of a DPU; largest buffers: {largest(buffers)}",
                   next((b.loc for b in sorted(buffers, key=lambda b: -b.nbytes)[:3] if b.loc), None))


def largest(buffers: list[WramBuffer], count: int = 3) -> str:
    """The `count` largest buffers, in words."""
    top = sorted(buffers, key=lambda b: -b.nbytes)[:count]
    return ", ".join(f"{b.nbytes} bytes for the {b.what}" + (f" at line {b.loc.lineno}" if b.loc else "")
                     for b in top)
