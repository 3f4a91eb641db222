"""PrIM's MLP (three fully connected layers) DPU program as an EDSL kernel, with its host's split.

What PrIM's program does (MLP/dpu/task.c, MLP/host/app.c): each layer is a GEMV, one
`dpu_launch` a layer (NUM_LAYERS = 3). The host splits the m rows of the layer's int32
weight matrix over the DPUs (`m / DPUs` each, the first `m % DPUs` DPUs one more) and
pushes each DPU its rows and the whole input vector B; on the DPU the 16 tasklets share
the rows in pairs (PrIM's `start_row`/`rows_per_tasklet`, whole pairs, the rest to the
first tasklets), and per row walk its columns a 1,024-byte block at a time: read a
block of A and of B into WRAM, multiply and add into `cache_C[pos]` (`gemv`), then the
row's last block (an element-count loop with a bound check); every pair of results goes
back to MRAM with one 8-byte `mram_write`. Between layers the host reads every DPU's C,
concatenates the rows into the next B and pushes it, with the next layer's rows of A
(timed apart, as "Inter-DPU"). The DPU applies no ReLU (the host's reference does; the
values here are never negative, so both agree).

Read: CMU-SAFARI/prim-benchmarks 9a1498f (MLP/ unchanged since its first commit 3de4b49):
MLP/dpu/task.c, MLP/host/app.c, MLP/support/common.h, MLP/support/params.h, MLP/Makefile
(NR_TASKLETS 16, BL 10: 1,024-byte blocks; `T int32_t`). uPIMulator's copy
(VIA-Research/uPIMulator 870d916, golang/uPIMulator/benchmark/MLP/) is the same program
with `gemv` marked noinline, built with BL=10 (its dpu/CMakeLists.txt).

What data_prep_param means (uPIMulator 870d916: golang/uPIMulator/src/assembler/prim/mlp.go,
python_cpp/uPIMulator_frontend/src/assembler/data_prep/mlp_data_prep.py; the byte counts
of tools/upmem_reg_model/src/benchmark/mlp.py agree): m = n = data_prep_param, three
layers of m x n weights. Values as PrIM's host makes them (`init_data`, deterministic, no
seed): A[l] element i of the m*n matrix (row-major) is 0 when i % 100 < 98, else
(l + i) % 2; B[i] is 0 when i % 50 < 48, else i % 2. (uPIMulator's data preparation takes
i as the column within a row instead; same density of ones.) Mostly zeros: the 32-bit
multiply's steps, one per bit of the smaller operand, are few.

Where the port differs from PrIM, and why:
  * MRAM layout: A's rows, B and C are three MRAM arrays (PrIM's one heap: A, then B at
    max_rows * n_size_pad, then C); A and B are padded by a block, as PrIM's last block
    of a row (and of B) is read whole, past the row, into what follows in MRAM.
  * Rows are 8-byte aligned (n even; the workbook's n are multiples of 256), so PrIM's
    realignment path (`offset`, which shifts the block by one element and reads 8 more
    bytes) is never taken and is not ported, nor its `offset` test (a compare after each
    row and a branch on it before each block's multiply loop); the host asserts n is even.
  * The unconditional `printf("tasklet_id = %u\\n", ...)` at the start of every tasklet
    (not under `#if PRINT` in MLP/dpu/task.c) is not ported: the EDSL has no printf. The
    last block's bound check (`j >= BLOCK_SIZE / sizeof(T)`: print "error" and break,
    never taken) is ported as a guard of the element's work: one compare-and-branch an
    element, as PrIM's; an EDSL `break` in a `for` lowers to a flag that costs 6 more
    instructions an iteration. The pair loop's exit at `i + pos >= nr_rows` is a guard
    too (as in ports.GEMV): once a row is past the end, so is the next.
  * `mem_reset` and the heap's `mem_alloc` are static WRAM buffers, one block a tasklet.
The kernel's cycles are the three layers' (DPU 0's three launches), `launches=3`. Note on
PrIM's DPU timer: `start(&timer, 2, rep - p.n_warmup)` zeroes the timer whenever its rep
argument is 0, and it is called before each layer's launch, so the first timed
repetition keeps only its last layer: with the defaults (-w 1 -e 3) the printed "DPU
Kernel Time" holds 7 launches over 3 repetitions, 7/3 layers on average, not 3. The
workbook does not say how many repetitions it ran; this Share states the 3 launches of a
repetition, as asked.
To check DPU 0's results at every layer when the other DPUs are not run, their rows of C
(the next layer's B) are NumPy's.
"""
from __future__ import annotations

import functools

import numpy as np

import edsl
from edsl import InOut, Input

from .. import ports

BENCHMARK = "MLP"
SMALL = (256, 4)             # 3 layers of 256 x 256, 64 rows a DPU

TASKLETS = 16                # NR_TASKLETS
BLOCK = 1024                 # BLOCK_SIZE, bytes (BL=10)
I32 = BLOCK // 4             # int32 elements of a block
NUM_LAYERS = 3
ARGS_BYTES = 16              # dpu_arguments_t: n_size, n_size_pad, nr_rows, max_rows (u32)


@edsl.dialect
def mlp_dpu(c: InOut["memref<?xi32, MRAM>"], a: Input["memref<?xi32, MRAM>"],
            b: Input["memref<?xi32, MRAM>"], n_size: Input["i32"], nr_rows: Input["i32"]):
    cache_a = edsl.wram_alloc(TASKLETS * (I32 + 2), edsl.i32)   # BLOCK_SIZE + 8 bytes
    cache_b = edsl.wram_alloc(TASKLETS * I32, edsl.i32)
    cache_c = edsl.wram_alloc(TASKLETS * 2, edsl.i32)           # 8 bytes: a pair of rows' results
    t = edsl.tasklet_id()
    edsl.barrier()
    ma = t * (I32 + 2)
    mb = t * I32
    mc = t * 2
    # PrIM's share of the rows: whole pairs, the rest to the first tasklets (MLP's formulas).
    chunks = nr_rows // (TASKLETS + TASKLETS)
    dbl_chunks = chunks + chunks
    rows_per_tasklet = dbl_chunks
    rest_rows = nr_rows % (TASKLETS + TASKLETS)
    if t + t < rest_rows:
        rows_per_tasklet += 2
    start_row = t * dbl_chunks
    if rest_rows > 0:
        if t + t >= rest_rows:
            hlf_rest_rows = rest_rows >> 1
            if (rest_rows & 1) == 1:
                start_row = (hlf_rest_rows + 1) * (dbl_chunks + 2) + (t - 1 - hlf_rest_rows) * dbl_chunks
            else:
                start_row = hlf_rest_rows * (dbl_chunks + 2) + (t - hlf_rest_rows) * dbl_chunks
        else:
            start_row = t * (dbl_chunks + 2)
    c_at = start_row                                            # mram_base_addr_C, in elements
    for i in range(start_row, start_row + rows_per_tasklet, 2):
        at_a = i * n_size                                       # mram_temp_addr_A
        cache_c[mc] = 0
        cache_c[mc + 1] = 0
        for pos in range(2):
            if i + pos < nr_rows:                               # pos < 2 && i + pos < nr_rows
                at_b = 0                                        # mram_temp_addr_B
                n = 0
                while n < n_size - I32:                         # the row's whole blocks but the last
                    edsl.mram_read(a, cache_a, BLOCK, src_offset=at_a, dst_offset=ma)
                    edsl.mram_read(b, cache_b, BLOCK, src_offset=at_b, dst_offset=mb)
                    for k in range(I32):                        # gemv()
                        cache_c[mc + pos] += cache_a[ma + k] * cache_b[mb + k]
                    at_a += I32
                    at_b += I32
                    n += I32
                edsl.mram_read(a, cache_a, BLOCK, src_offset=at_a, dst_offset=ma)
                edsl.mram_read(b, cache_b, BLOCK, src_offset=at_b, dst_offset=mb)
                for j in range(n_size - n):
                    if j < I32:                                 # PrIM's check (else "error", break)
                        cache_c[mc + pos] += cache_a[ma + j] * cache_b[mb + j]
                at_a += n_size - n
        edsl.mram_write(cache_c, c, 8, src_offset=mc, dst_offset=c_at)
        c_at += 2


def split(m: int, dpus: int) -> tuple[list[int], list[int], int]:
    """MLP/host/app.c's rows per DPU, the rows before each DPU, and max_rows_per_dpu
    (the largest, rounded up to even)."""
    chunks, rest = divmod(m, dpus)
    rows = [chunks + (d < rest) for d in range(dpus)]
    prev = [rest * (chunks + 1) + (d - rest) * chunks if d >= rest else d * (chunks + 1) for d in range(dpus)]
    return rows, prev, max(r + r % 2 for r in rows)


def weights(m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """PrIM's init_data: the three layers' m x n weights and the input vector (int32)."""
    i = np.arange(m * n, dtype=np.int64)
    a = np.stack([np.where(i % 100 < 98, 0, (layer + i) % 2).reshape(m, n) for layer in range(NUM_LAYERS)])
    k = np.arange(n, dtype=np.int64)
    return a.astype(np.int32), np.where(k % 50 < 48, 0, k % 2).astype(np.int32)


def mlp(size: int, dpus: int, dpu_ids=None, tasklets: int = TASKLETS):
    """The three layers on `dpus` DPUs (m = n = size): per layer, the DPUs run give their
    rows of C and NumPy gives the others' (PrIM's DPUs apply no ReLU; these values are never
    negative). Returns, per layer, C as the DPUs left it and NumPy's, and one Share a DPU."""
    m = n = size
    assert n % 2 == 0, "PrIM's realignment path for odd rows is not ported"
    ids = list(range(dpus) if dpu_ids is None else dpu_ids)
    a, x = weights(m, n)
    rows, prev, max_rows = split(m, dpus)
    n_pad = max(n, I32) + I32                                   # B, then what PrIM reads past it
    cycles = dict.fromkeys(ids, 0.0)
    layers = []
    for layer in range(NUM_LAYERS):
        ref = (a[layer].astype(np.int64) @ x.astype(np.int64)).astype(np.int32)   # wraps as int32
        c_all = ref.copy()
        bpad = np.zeros(n_pad, np.int32)
        bpad[:n] = x
        for d in ids:
            part = np.zeros(max_rows * n + I32, np.int32)       # A's rows, then a block PrIM reads past them
            part[:rows[d] * n] = a[layer, prev[d]:prev[d] + rows[d]].ravel()
            out = np.zeros(max_rows + 2, np.int32)
            rep = mlp_dpu.run(out, part, bpad, n, rows[d], tasklets=tasklets, timing=True)
            cycles[d] += rep.timing.dpu_cycles_max
            c_all[prev[d]:prev[d] + rows[d]] = out[:rows[d]]
        layers.append((c_all, ref))
        x = c_all                                               # B_tmp: the DPUs' C, no ReLU
    # MLP/host/app.c: CPU-DPU (timer 1) is DPU_INPUT_ARGUMENTS, the first layer's rows of A
    # (max_rows_per_dpu x n_size_pad) and B; the later layers' C, B and A (timer 4, "Inter-DPU")
    # are neither; DPU-CPU (timer 3) is the last layer's C (max_rows_per_dpu).
    shares = [ports.Share(d, cycles[d], (ports.Xfer("DPU_INPUT_ARGUMENTS", ARGS_BYTES),
                                         ports.Xfer("A", max_rows * n * 4), ports.Xfer("B", n * 4)),
                          (ports.Xfer("C", max_rows * 4),), launches=NUM_LAYERS) for d in ids]
    return layers, shares, rows, prev


@functools.lru_cache(None)
def dpu0(size: int, dpus: int) -> ports.Share:
    """DPU 0's share of a workbook row (m = n = `size`, `dpus` DPUs), its rows checked at every layer."""
    layers, (share,), rows, prev = mlp(size, dpus, dpu_ids=[0])
    for c_all, ref in layers:
        if not np.array_equal(c_all[:rows[0]], np.maximum(ref[:rows[0]], 0)):
            raise AssertionError(f"MLP {size} on {dpus} DPUs: DPU 0's rows differ from NumPy")
    return share
