"""A kernel whose tile is the operand of an EDSL function (`fl.call`), for the
tests of what WRAM must hold for an EDSL region (tests/inject, tests/backend)."""
import triton
import triton.language as tl

import edsl
from edsl import InOut, fl


@edsl.dialect
def touch(y: InOut["memref<?xf32>"]):
    y[0] = y[0]


@triton.jit
def region_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    x = fl.call(touch, [x], [])
    tl.store(x_ptr + offs, x)
