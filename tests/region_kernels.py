"""Kernels whose tiles are operands of EDSL functions (`fl.call`), for the
tests of what WRAM must hold for an EDSL region (tests/inject, tests/backend,
tests/export): the tiles, and the functions' own wram_alloc buffers."""
import triton
import triton.language as tl

import edsl
from edsl import InOut, Input, fl


@edsl.dialect
def touch(y: InOut["memref<?xf32>"]):
    y[0] = y[0]


@triton.jit
def region_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    x = fl.call(touch, [x], [])
    tl.store(x_ptr + offs, x)


@edsl.dialect
def scale_through_wram(y: InOut["memref<?xf32>"], count: Input["i32"]):
    staged = edsl.wram_alloc((12288,), "f32")       # 48 KiB, a global of the program
    if edsl.tasklet_id() == 0:
        for i in range(count):
            staged[i] = y[i] * 2.0
        for i in range(count):
            y[i] = staged[i]


@triton.jit
def staged_kernel(x_ptr, n, BLOCK: tl.constexpr, BIG: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    x = fl.call(scale_through_wram, [x], [n])
    tl.store(x_ptr + offs, x)
    big = BLOCK + tl.arange(0, BIG)
    tl.store(x_ptr + big, tl.load(x_ptr + big) + 1.0)
