"""Vector add whose EDSL region works directly on MRAM pointers: each tasklet
moves its chunks of the program's block into WRAM by DMA (8-byte aligned,
at most 2048 bytes), adds them, and writes the sum back; the tail that is not
a whole multiple of 8 bytes goes element by element.

    python examples/fl_vector_add.py
"""
import sys

import numpy as np
import triton
import triton.language as tl

import edsl
from edsl import Input, fl

CHUNK = 256  # floats per DMA transfer: 1024 bytes


@edsl.dialect
def add_block(out: Input["memref<?xf32, MRAM>"], x: Input["memref<?xf32, MRAM>"],
              y: Input["memref<?xf32, MRAM>"], count: Input["i32"]):
    me = edsl.tasklet_id()
    nt = edsl.num_tasklets()
    xs = edsl.wram_alloc((24, CHUNK), "f32")   # one row per tasklet
    ys = edsl.wram_alloc((24, CHUNK), "f32")
    whole = count // CHUNK * CHUNK
    for start in range(me * CHUNK, whole, nt * CHUNK):
        edsl.mram_read(x, xs, CHUNK * 4, start, me * CHUNK)
        edsl.mram_read(y, ys, CHUNK * 4, start, me * CHUNK)
        for i in range(CHUNK):
            xs[me, i] = xs[me, i] + ys[me, i]
        edsl.mram_write(xs, out, CHUNK * 4, me * CHUNK, start)
    for i in range(whole + me, count, nt):      # the tail, element by element
        out[i] = x[i] + y[i]


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    count = tl.minimum(n - start, BLOCK)
    fl.call(add_block, [], [out_ptr + start, x_ptr + start, y_ptr + start, count])


def add(x: np.ndarray, y: np.ndarray, num_tasklets: int = 16, block: int = 4096) -> np.ndarray:
    out = np.empty_like(x)
    add_kernel[(triton.cdiv(x.size, block),)](x, y, out, x.size, BLOCK=block,
                                               num_tasklets=num_tasklets, num_dpus=4)
    return out


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x = rng.standard_normal(100_003).astype(np.float32)
    y = rng.standard_normal(100_003).astype(np.float32)
    got = add(x, y)
    ok = np.array_equal(got, x + y)
    print(f"fl.call vector add of {x.size} floats over MRAM pointers -> {'OK' if ok else 'MISMATCH'}")
    sys.exit(0 if ok else 1)
