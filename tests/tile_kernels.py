"""Kernels whose tiles can outgrow WRAM (row sums, column maxima, a scan;
carried tiles updated in place), for the tests of tiles kept in MRAM on the
model (tests/backend) and in the exported project (tests/export); sums of
long expressions, whose group loops stay loops in the host code."""
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


@triton.jit
def mean_and_variance_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    """Two loops over a row, each with a carried tile updated elementwise
    (updated in place when they fit in WRAM), as a layer norm's forward pass
    has: the row's mean, then its variance."""
    row = tl.program_id(0)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(total, axis=0) / N
    sq = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
        d = tl.where(cols < N, x - mean, 0.0)
        sq += d * d
    tl.store(out_ptr + 2 * row, mean)
    tl.store(out_ptr + 2 * row + 1, tl.sum(sq, axis=0) / N)


@triton.jit
def carried_update_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, STEPS: tl.constexpr):
    """A carried tile that each step updates elementwise (in place), with the
    step's rows of `x` loaded beside it (STEPS > 1: Triton folds a loop of
    one trip, and with it the carried tile)."""
    at = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    acc = tl.zeros([R, C], dtype=tl.int32) + 1
    for s in range(STEPS):
        acc = acc * 3 + tl.load(x_ptr + s * R * C + at)
    tl.store(out_ptr + at, acc)


@triton.jit
def moments_kernel(x_ptr, dy_ptr, out_ptr, N: tl.constexpr, LONG: tl.constexpr):
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + cols)
    dy = tl.load(dy_ptr + cols)
    if LONG:        # the reads of each sum a chain of products (a norm's backward)
        tl.store(out_ptr, tl.sum(dy * x * x * x * x * x, axis=0))
        tl.store(out_ptr + 1, tl.sum(dy * x * x * x * x, axis=0))
        tl.store(out_ptr + 2, tl.sum(dy * x * x * x, axis=0))
    else:
        tl.store(out_ptr, tl.sum(x, axis=0))
        tl.store(out_ptr + 1, tl.sum(dy, axis=0))
        tl.store(out_ptr + 2, tl.sum(x * dy, axis=0))

