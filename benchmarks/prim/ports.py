"""PrIM's VA, RED, SCAN-SSA, GEMV and HST-S DPU programs as EDSL kernels, with their host split.

Written from the C of CMU-SAFARI/prim-benchmarks (commit 9a1498f, `<BENCH>/dpu/task.c`
and `<BENCH>/host/app.c`) with the configuration its Makefiles default to and the
uPIMulator workbook was measured with: 16 tasklets, BL=10 (1,024-byte MRAM<->WRAM
blocks), VA int32, RED and SCAN-SSA int64 (RED's SINGLE version: tasklet 0 adds the
tasklets' counts after a barrier), GEMV uint32, HST-S uint32 pixels of 12 bits (DEPTH).

Each loop has a variable of its own: the code generator then sees it is never
negative, and its subscripts need no Python negative-index check (PrIM's C
indexes with unsigned ints).

Each DPU program keeps PrIM's shape: a barrier at the start (PrIM's `mem_reset` by
tasklet 0), one WRAM block per tasklet (a slice of a buffer shared by the tasklets,
as PrIM's per-tasklet `mem_alloc`), tasklet t walking blocks t, t + 16, ... of its
DPU's MRAM part with `mram_read`/`mram_write` of PrIM's sizes, and PrIM's barriers.
Where PrIM differs from what the EDSL has:
  * SCAN-SSA passes each tasklet's block sum to the next by handshakes
    (`handshake_wait_for`/`handshake_notify`), a chain. The EDSL has barriers only:
    every tasklet writes its sum, and after PrIM's barrier tasklet t adds the sums of
    tasklets 0..t-1 (a loop of t loads and adds where PrIM's chain has a wait and a
    notify). The running total of earlier blocks is kept in a buffer of two slots,
    alternating, so one barrier per block suffices, as in PrIM.
  * GEMV reads whole 1,024-byte blocks of A and B even for 64-element rows (PrIM
    reads past the row into the next rows and past B into C): the host pads A and B
    by a block so those reads stay inside the arrays. Rows are 8-byte aligned here
    (64 uint32 columns), so PrIM's realignment path (`offset`) is never taken and is
    not ported.
  * WRAM results a PrIM host reads back (`DPU_RESULTS`) are InOut WRAM arrays.
  * HST-S's per-tasklet histograms (PrIM's `mem_alloc` of `bins` words each, merged
    through a table of their addresses) are slices of one buffer at a stride of
    MAX_BINS: their indices are then known never negative, as PrIM's unsigned ones are,
    and the merge reads each at a constant's multiple where PrIM loads its address.

Every host function splits the data over `dpus` DPUs as PrIM's host does, runs each
DPU's program on the model (`f.run(..., tasklets=16)`), combines the results as
PrIM's host does and returns them with one `Share` per DPU run: its estimated kernel
cycles and the transfers PrIM's host times as CPU-DPU and DPU-CPU, one `Xfer` per
`dpu_push_xfer` with its bytes per DPU (its argument structure's too). `dpu_ids` runs only some
DPUs: the validation runs DPU 0 alone, as every DPU of these configurations gets the
same share (checked) and the kernel time is the slowest DPU's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import edsl
from edsl import InOut, Input

TASKLETS = 16            # NR_TASKLETS
BLOCK = 1024             # BLOCK_SIZE, bytes (BL=10)
I32 = BLOCK // 4         # elements of a block
I64 = BLOCK // 8
DEPTH = 12               # HST-S pixel depth
MAX_BINS = 256           # HST-S per-tasklet histograms in WRAM (16 x 1 KiB)
GEMV_COLS = 64           # the workbook's GEMV matrices: m rows x 64 columns


@dataclass(frozen=True)
class Xfer:
    """One `dpu_push_xfer` of PrIM's host: `nbytes` to or from each DPU, at DPU symbol
    `symbol` (DPU_INPUT_ARGUMENTS and DPU_RESULTS are WRAM variables, the rest MRAM); or
    with `kind` "serial", a `dpu_copy_to`/`dpu_copy_from` of `nbytes` to each DPU in turn."""
    symbol: str
    nbytes: int
    kind: str = "parallel"


@dataclass(frozen=True)
class Share:
    """One DPU's part of a run: kernel cycles (estimated) and the transfers PrIM's host
    times as CPU-DPU (`to_dpu`) and DPU-CPU (`from_dpu`), in its order. Every one is a
    parallel `dpu_push_xfer` of the same size to each DPU, at 1 DPU too: PrIM's hosts of
    these five benchmarks use neither `dpu_copy_to` nor `dpu_broadcast_to`."""
    dpu: int
    cycles: float
    to_dpu: tuple[Xfer, ...]
    from_dpu: tuple[Xfer, ...]
    launches: int = 1         # the `dpu_launch` calls its kernel time holds

    @property
    def to_dpu_bytes(self) -> int:
        return sum(x.nbytes for x in self.to_dpu)

    @property
    def from_dpu_bytes(self) -> int:
        return sum(x.nbytes for x in self.from_dpu)


def _cycles(report) -> float:
    return report.timing.dpu_cycles_max


# -- VA -------------------------------------------------------------------------------------
@edsl.dialect
def va_dpu(b: InOut["memref<?xi32, MRAM>"], a: Input["memref<?xi32, MRAM>"], size_bytes: Input["i32"]):
    cache_a = edsl.wram_alloc(TASKLETS * I32, edsl.i32)
    cache_b = edsl.wram_alloc(TASKLETS * I32, edsl.i32)
    t = edsl.tasklet_id()
    edsl.barrier()
    mine = t * I32
    for byte_index in range(t * BLOCK, size_bytes, edsl.num_tasklets() * BLOCK):
        l_size = min(BLOCK, size_bytes - byte_index)        # PrIM's bound check
        e = byte_index >> 2
        edsl.mram_read(a, cache_a, l_size, src_offset=e, dst_offset=mine)
        edsl.mram_read(b, cache_b, l_size, src_offset=e, dst_offset=mine)
        for i in range(mine, mine + (l_size >> 2)):
            cache_b[i] = cache_b[i] + cache_a[i]
        edsl.mram_write(cache_b, b, l_size, src_offset=mine, dst_offset=e)


def _split_8bytes(n: int, dpus: int, itemsize: int) -> tuple[int, list[int]]:
    """PrIM's VA/HST-S split: elements per DPU (8-byte aligned, as its `roundup`),
    and each DPU's element count (the last one gets the rest, at most its part:
    PrIM's padded total can exceed it by a few elements, which it reads past its part)."""
    per = -(-n // dpus)
    if per * itemsize % 8:
        per = (per // 8) * 8 + 8
    total = n if n * itemsize % 8 == 0 else (n // 8) * 8 + 8
    return per, [per] * (dpus - 1) + [max(0, min(per, total - per * (dpus - 1)))]


def va(a: np.ndarray, b: np.ndarray, dpus: int, dpu_ids=None, tasklets: int = TASKLETS):
    """c = a + b (int32) on `dpus` DPUs."""
    per, sizes = _split_8bytes(len(a), dpus, 4)
    c = np.zeros(per * dpus, np.int32)
    shares = []
    for d in range(dpus) if dpu_ids is None else dpu_ids:
        sl = slice(d * per, d * per + per)
        pa, pb = np.zeros(per, np.int32), np.zeros(per, np.int32)
        pa[:max(0, min(per, len(a) - d * per))] = a[sl]
        pb[:max(0, min(per, len(b) - d * per))] = b[sl]
        rep = va_dpu.run(pb, pa, sizes[d] * 4, tasklets=tasklets, timing=True)
        c[sl] = pb
        # VA/host/app.c: CPU-DPU is DPU_INPUT_ARGUMENTS (size, transfer_size, kernel: 12 B),
        # then A and B; DPU-CPU is C. All of a DPU's share, padded (input_size_dpu_8bytes).
        shares.append(Share(d, _cycles(rep), (Xfer("DPU_INPUT_ARGUMENTS", 12), Xfer("A", per * 4),
                                              Xfer("B", per * 4)), (Xfer("C", per * 4),)))
    return c[:len(a)], shares


# -- RED ------------------------------------------------------------------------------------
@edsl.dialect
def red_dpu(result: InOut["memref<1xi64>"], a: Input["memref<?xi64, MRAM>"], size_bytes: Input["i32"]):
    cache = edsl.wram_alloc(TASKLETS * I64, edsl.i64)
    message = edsl.wram_alloc(TASKLETS, edsl.i64)
    t = edsl.tasklet_id()
    edsl.barrier()
    mine = t * I64
    l_count = edsl.i64(0)
    for byte_index in range(t * BLOCK, size_bytes, edsl.num_tasklets() * BLOCK):
        l_size = min(BLOCK, size_bytes - byte_index)
        edsl.mram_read(a, cache, l_size, src_offset=byte_index >> 3, dst_offset=mine)
        block_sum = edsl.i64(0)                               # PrIM's reduction()
        for j in range(mine, mine + (l_size >> 3)):
            block_sum += cache[j]
        l_count += block_sum
    message[t] = l_count
    edsl.barrier()
    if t == 0:                                                # VERSION=SINGLE
        for k in range(1, edsl.num_tasklets()):
            message[0] += message[k]
        result[0] = message[0]


def red_results() -> tuple[Xfer, ...]:
    """RED's DPU-CPU transfer: every tasklet's count and cycles (dpu_results_t, 16 B)."""
    return (Xfer("DPU_RESULTS", TASKLETS * 16),)


def red(a: np.ndarray, dpus: int, dpu_ids=None, tasklets: int = TASKLETS):
    """The sum of `a` (int64) on `dpus` DPUs; the host adds the DPUs' counts."""
    per, sizes = _split_8bytes(len(a), dpus, 8)
    total, shares = np.int64(0), []
    for d in range(dpus) if dpu_ids is None else dpu_ids:
        part = np.zeros(per, np.int64)
        part[:max(0, min(per, len(a) - d * per))] = a[d * per:d * per + per]
        out = np.zeros(1, np.int64)
        rep = red_dpu.run(out, part, sizes[d] * 8, tasklets=tasklets, timing=True)
        total += out[0]
        # RED/host/app.c: CPU-DPU is DPU_INPUT_ARGUMENTS (u32 size, kernel, i64 t_count: 16 B),
        # then A; DPU-CPU is DPU_RESULTS, a WRAM array of 16 tasklets x {u64 cycles, i64 t_count}.
        shares.append(Share(d, _cycles(rep), (Xfer("DPU_INPUT_ARGUMENTS", 16), Xfer("A", per * 8)),
                            red_results()))
    return total, shares


# -- SCAN-SSA -------------------------------------------------------------------------------
@edsl.dialect
def scan_dpu(b: InOut["memref<?xi64, MRAM>"], t_count: InOut["memref<1xi64>"],
             a: Input["memref<?xi64, MRAM>"], size_bytes: Input["i32"]):
    """Kernel 1: scan of each block, handed on between tasklets (see the module docstring)."""
    cache_a = edsl.wram_alloc(TASKLETS * I64, edsl.i64)
    cache_b = edsl.wram_alloc(TASKLETS * I64, edsl.i64)
    message = edsl.wram_alloc(2 * TASKLETS, edsl.i64)         # two rounds' block sums
    partial = edsl.wram_alloc(2, edsl.i64)                    # message_partial_count, two rounds
    t = edsl.tasklet_id()
    n = edsl.num_tasklets()
    edsl.barrier()
    mine = t * I64
    if t == n - 1:
        partial[0] = 0
    edsl.barrier()
    side = 0
    for byte_index in range(t * BLOCK, size_bytes, n * BLOCK):
        edsl.mram_read(a, cache_a, BLOCK, src_offset=byte_index >> 3, dst_offset=mine)
        run = cache_a[mine]                                   # output[j - 1], kept in a register
        cache_b[mine] = run
        for j in range(mine + 1, mine + I64):
            run = run + cache_a[j]
            cache_b[j] = run
        l_count = run
        message[side * TASKLETS + t] = l_count
        edsl.barrier()
        p_count = edsl.i64(0)
        for k in range(side * TASKLETS, side * TASKLETS + t):
            p_count += message[k]
        base = partial[side] + p_count
        for q in range(mine, mine + I64):
            cache_b[q] = cache_b[q] + base
        edsl.mram_write(cache_b, b, BLOCK, src_offset=mine, dst_offset=byte_index >> 3)
        if t == n - 1:
            partial[1 - side] = base + l_count
            t_count[0] = base + l_count
        side = 1 - side


@edsl.dialect
def scan_add_dpu(b: InOut["memref<?xi64, MRAM>"], size_bytes: Input["i32"], t_count: Input["i64"]):
    """Kernel 2: add the sum of the earlier DPUs' parts."""
    cache = edsl.wram_alloc(TASKLETS * I64, edsl.i64)
    t = edsl.tasklet_id()
    edsl.barrier()
    mine = t * I64
    for byte_index in range(t * BLOCK, size_bytes, edsl.num_tasklets() * BLOCK):
        edsl.mram_read(b, cache, BLOCK, src_offset=byte_index >> 3, dst_offset=mine)
        for j in range(mine, mine + I64):
            cache[j] = cache[j] + t_count
        edsl.mram_write(cache, b, BLOCK, src_offset=mine, dst_offset=byte_index >> 3)


def scan(a: np.ndarray, dpus: int, dpu_ids=None, tasklets: int = TASKLETS):
    """Inclusive prefix sum of `a` (int64) on `dpus` DPUs: kernel 1, the host's scan
    of the DPUs' totals, kernel 2. A DPU's cycles are its two kernels'."""
    per, round_to = -(-len(a) // dpus), tasklets * I64     # PrIM's roundup to NR_TASKLETS * REGS:
    if per % round_to:                                        # every tasklet does as many blocks
        per = (per // round_to) * round_to + round_to
    ids = list(range(dpus) if dpu_ids is None else dpu_ids)
    parts, totals, first = {}, {}, {}
    for d in ids:
        pa = np.zeros(per, np.int64)
        pa[:max(0, min(per, len(a) - d * per))] = a[d * per:d * per + per]
        pb, tc = np.zeros(per, np.int64), np.zeros(1, np.int64)
        first[d] = _cycles(scan_dpu.run(pb, tc, pa, per * 8, tasklets=tasklets, timing=True))
        parts[d], totals[d] = pb, int(tc[0])
    out, shares, carry = np.zeros(per * dpus, np.int64), [], 0
    for d in ids:                       # the host's inter-DPU scan (DPUs not run add nothing)
        rep = scan_add_dpu.run(parts[d], per * 8, carry, tasklets=tasklets, timing=True)
        out[d * per:d * per + per] = parts[d]
        carry += totals[d]
        # SCAN-SSA/host/app.c: CPU-DPU (timer 1) is DPU_INPUT_ARGUMENTS (u32 size, kernel,
        # i64 t_count: 16 B), then A; DPU-CPU (timer 5) is the output. Reading DPU_RESULTS and
        # writing the second kernel's arguments between the kernels is timed apart, as
        # "Inter-DPU" (timer 3; the workbook's hw_dpu_to_dpu).
        shares.append(Share(d, first[d] + _cycles(rep), (Xfer("DPU_INPUT_ARGUMENTS", 16), Xfer("A", per * 8)),
                            (Xfer("C", per * 8),), launches=2))
    return out[:len(a)], shares


# -- GEMV -----------------------------------------------------------------------------------
@edsl.dialect
def gemv_dpu(c: InOut["memref<?xi32, MRAM>"], a: Input["memref<?xi32, MRAM>"],
             b: Input["memref<?xi32, MRAM>"], n_size: Input["i32"], nr_rows: Input["i32"]):
    cache_a = edsl.wram_alloc(TASKLETS * (I32 + 2), edsl.i32)   # BLOCK_SIZE + 8 bytes
    cache_b = edsl.wram_alloc(TASKLETS * I32, edsl.i32)
    cache_c = edsl.wram_alloc(TASKLETS * 2, edsl.i32)           # 8 bytes: two rows' results
    t = edsl.tasklet_id()
    n = edsl.num_tasklets()
    edsl.barrier()
    ma = t * (I32 + 2)
    mb = t * I32
    mc = t * 2
    # PrIM's share of rows: whole pairs of rows, the rest to the first tasklets.
    dbl_chunks = nr_rows // (n * 2) * 2
    rows_per_tasklet = dbl_chunks
    rest_rows = nr_rows % (n * 2)
    if t * 2 < rest_rows:
        rows_per_tasklet += 2
    start_row = t * dbl_chunks
    if rest_rows > 0:
        if t * 2 >= rest_rows:
            if rest_rows % 2 != 0:
                start_row = (rest_rows // 2) * 2 + 2 + t * dbl_chunks
            else:
                start_row = rest_rows + t * dbl_chunks
        else:
            start_row = t * (dbl_chunks + 2)
    c_at = start_row
    for i in range(start_row, start_row + rows_per_tasklet, 2):
        at_a = i * n_size
        cache_c[mc] = 0
        cache_c[mc + 1] = 0
        for pos in range(2):
            if i + pos < nr_rows:
                at_b = 0
                done = 0
                while done < n_size - I32:                   # whole blocks of the row
                    edsl.mram_read(a, cache_a, BLOCK, src_offset=at_a, dst_offset=ma)
                    edsl.mram_read(b, cache_b, BLOCK, src_offset=at_b, dst_offset=mb)
                    for k in range(I32):
                        cache_c[mc + pos] += cache_a[ma + k] * cache_b[mb + k]
                    at_a += I32
                    at_b += I32
                    done += I32
                edsl.mram_read(a, cache_a, BLOCK, src_offset=at_a, dst_offset=ma)
                edsl.mram_read(b, cache_b, BLOCK, src_offset=at_b, dst_offset=mb)
                for j in range(n_size - done):
                    cache_c[mc + pos] += cache_a[ma + j] * cache_b[mb + j]
                at_a += n_size - done
        edsl.mram_write(cache_c, c, 8, src_offset=mc, dst_offset=c_at)
        c_at += 2


def gemv(a: np.ndarray, x: np.ndarray, dpus: int, dpu_ids=None, tasklets: int = TASKLETS):
    """y = a @ x (uint32, wrapping) with a's rows split over `dpus` DPUs as PrIM's host splits them."""
    m, cols = a.shape
    assert cols * 4 % 8 == 0, "rows must be 8-byte aligned (PrIM's offset path is not ported)"
    chunks, rest = divmod(m, dpus)
    rows = [chunks + (d < rest) for d in range(dpus)]
    prev = np.concatenate([[0], np.cumsum(rows)]).astype(int)
    max_rows = max(r + r % 2 for r in rows)
    ai, xi = a.view(np.int32), x.view(np.int32)
    y = np.zeros(m, np.uint32)
    bpad = np.zeros(max(cols, I32) + I32, np.int32)          # B, then what PrIM reads past it
    bpad[:cols] = xi
    shares = []
    for d in range(dpus) if dpu_ids is None else dpu_ids:
        part = np.zeros(max_rows * cols + I32, np.int32)     # A, then a block PrIM reads past it
        part[:rows[d] * cols] = ai[prev[d]:prev[d + 1]].ravel()
        out = np.zeros(max_rows + 2, np.int32)
        rep = gemv_dpu.run(out, part, bpad, cols, rows[d], tasklets=tasklets, timing=True)
        y[prev[d]:prev[d + 1]] = out[:rows[d]].view(np.uint32)
        # GEMV/host/app.c: CPU-DPU is DPU_INPUT_ARGUMENTS (4 x u32: 16 B), A's rows (max_rows_per_dpu
        # of n_size_pad columns) and B (one buffer, prepared for every DPU: a parallel push, not a
        # broadcast); DPU-CPU is C's rows.
        shares.append(Share(d, _cycles(rep), (Xfer("DPU_INPUT_ARGUMENTS", 16), Xfer("A", max_rows * cols * 4),
                                              Xfer("B", cols * 4)), (Xfer("C", max_rows * 4),)))
    return y, shares


# -- HST-S ----------------------------------------------------------------------------------
@edsl.dialect
def hst_dpu(histo_out: InOut["memref<?xi32, MRAM>"], a: Input["memref<?xi32, MRAM>"],
            size_bytes: Input["i32"], bins: Input["i32"]):
    cache = edsl.wram_alloc(TASKLETS * I32, edsl.i32)
    histo = edsl.wram_alloc(TASKLETS * MAX_BINS, edsl.i32)   # one histogram per tasklet
    t = edsl.tasklet_id()
    n = edsl.num_tasklets()
    edsl.barrier()
    mine = t * I32
    h = t * MAX_BINS            # (PrIM's per-tasklet mem_alloc: a block of its own, at a known stride)
    for z in range(h, h + bins):
        histo[z] = 0
    for byte_index in range(t * BLOCK, size_bytes, n * BLOCK):
        l_size = min(BLOCK, size_bytes - byte_index)
        edsl.mram_read(a, cache, l_size, src_offset=byte_index >> 2, dst_offset=mine)
        for j in range(mine, mine + (l_size >> 2)):
            k = h + ((cache[j] * bins) >> DEPTH)
            histo[k] = histo[k] + 1
    edsl.barrier()
    for b in range(t, bins, n):                               # merge into tasklet 0's histogram
        s = 0
        for u in range(n):
            s += histo[u * MAX_BINS + b]
        histo[b] = s
    edsl.barrier()
    if t == 0:
        for off in range(0, bins, 512):                       # at most 2,048 bytes a transfer
            edsl.mram_write(histo, histo_out, min(bins - off, 512) * 4, src_offset=off, dst_offset=off)


def hst(pixels: np.ndarray, bins: int, dpus: int, dpu_ids=None, tasklets: int = TASKLETS):
    """Histogram of `pixels` (uint32 < 2**DEPTH) into `bins` bins on `dpus` DPUs; the host adds them."""
    assert bins <= MAX_BINS and bins * 4 % 8 == 0
    per, sizes = _split_8bytes(len(pixels), dpus, 4)
    histo, shares = np.zeros(bins, np.uint32), []
    for d in range(dpus) if dpu_ids is None else dpu_ids:
        part = np.zeros(per, np.int32)
        part[:max(0, min(per, len(pixels) - d * per))] = pixels[d * per:d * per + per].view(np.int32)
        out = np.zeros(bins, np.int32)
        rep = hst_dpu.run(out, part, sizes[d] * 4, bins, tasklets=tasklets, timing=True)
        histo += out.view(np.uint32)
        # HST-S/host/app.c: CPU-DPU is DPU_INPUT_ARGUMENTS (size, transfer_size, bins, kernel:
        # 16 B), then A; DPU-CPU is the DPU's histogram (and the host's merge of them).
        shares.append(Share(d, _cycles(rep), (Xfer("DPU_INPUT_ARGUMENTS", 16), Xfer("A", per * 4)),
                            (Xfer("histo", bins * 4),)))
    return histo, shares
