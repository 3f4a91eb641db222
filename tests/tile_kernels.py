"""A kernel whose tiles can outgrow WRAM (row sums, column maxima, a scan),
for the tests of tiles kept in MRAM on the model (tests/backend) and in the
exported project (tests/export)."""
import triton
import triton.language as tl


@triton.jit
def tile_kernel(x_ptr, y_ptr, rows_ptr, cols_ptr, scan_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + r * C + c)
    tl.store(y_ptr + r * C + c, x * 3 + 1)
    tl.store(rows_ptr + tl.arange(0, R), tl.sum(x, axis=1))
    tl.store(cols_ptr + tl.arange(0, C), tl.max(x, axis=0))
    tl.store(scan_ptr + r * C + c, tl.cumsum(x, axis=1))
