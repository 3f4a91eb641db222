"""Injector step b: tile operands in WRAM buffers.

An EDSL function updates its InOut memrefs in place, while a kernel's tiles
are values: each out tile is copied into a fresh row-major WRAM buffer, which
the region updates and which then stands for the tile's new value. The bytes
are counted against the DPU's WRAM.
"""
from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import memref

from ..base.errors import DpuError


def stage_operands(outs: list[ir.Value], allocate: Callable[[ir.MemRefType], ir.Value]) -> tuple[list[ir.Value], int]:
    """Copies of the tiles `outs` (static memrefs) in buffers from `allocate`
    (which decides where they live, e.g. at the kernel's entry), made at the
    current insertion point; and their bytes (the caller checks them against
    the DPU's WRAM)."""
    staged, total = [], 0
    for v in outs:
        t = ir.MemRefType(v.type)
        if not t.has_static_shape:
            raise DpuError(f"a tile operand needs a static shape to live in WRAM, not {t}")
        n = 1
        for d in t.shape:
            n *= d
        total += n * max(1, t.element_type.width // 8)
        buf = allocate(ir.MemRefType.get(t.shape, t.element_type))
        memref.copy(v, buf)
        staged.append(buf)
    return staged, total
