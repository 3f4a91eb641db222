"""PrIM's SCAN-RSS (reduce-scan-scan prefix sum) as EDSL kernels, with its host split.

What PrIM's program does (CMU-SAFARI/prim-benchmarks, commit 9a1498f70b4383d1ad75d6ec5671e434f72a273a:
SCAN-RSS/dpu/task.c, host/app.c, support/common.h, support/params.h, Makefile, read here).
The Makefile's defaults: NR_TASKLETS=16, BL=10 (1,024-byte MRAM<->WRAM blocks), TYPE=INT64
(REGS = 128 elements a block). The host rounds a DPU's share up to a multiple of NR_TASKLETS *
REGS elements (2,048: every tasklet walks as many blocks), pads the input with zeros, and gives
DPU i elements [i * share, (i + 1) * share). It launches two kernels, each timed by a "DPU"
timer of its own (timers 2 and 4: two `dpu_launch`es):
  * kernel 1 (reduction): after a barrier, tasklet t reads blocks t, t + 16, ... of its DPU's
    part (`mram_read` of 1,024 B), adds each block's 128 elements (`reduction`, an unrolled
    loop) into its count, stores the count in a WRAM `message[t]`; after a barrier tasklet 0
    adds the 16 counts and stores the DPU's total in its `DPU_RESULTS[0]` (a WRAM array of
    16 results);
  * between the kernels (timer 3, "Inter-DPU"), the host reads every DPU's `DPU_RESULTS`
    (16 x 8 B), scans the totals, and writes each DPU's `DPU_INPUT_ARGUMENTS` with the sum of
    the DPUs before it;
  * kernel 2 (scan): tasklet 15 sets the shared `message_partial_count` to that sum; after a
    barrier, for each of its blocks tasklet t reads the block of A, scans it into a second
    WRAM block (`scan`, unrolled), hands its block sum on to tasklet t + 1 by a handshake chain
    (`handshake_wait_for`/`handshake_notify`: tasklet t receives the sum of tasklets 0..t-1's
    blocks), meets the others at a barrier, adds `message_partial_count` plus that sum to its
    block (`add`, unrolled) and writes it to MRAM after A (`mram_write`, 1,024 B); tasklet 15
    then stores the running total in its `DPU_RESULTS` entry and in `message_partial_count`.
The host times as CPU-DPU (timer 1) `DPU_INPUT_ARGUMENTS` (u32 size, enum kernel, int64
t_count: 16 B) and A (the DPU's share); as DPU-CPU (timer 5) the scanned share. Inputs:
`A[i] = (int64_t) rand()` after `srand(0)` (glibc's generator, `glibc_rand` here), zeros
past the input.

What the workbook's `data_prep_param` is (VIA-Research/uPIMulator, commit
870d916334e9ff0b190f555f951a9ec3c4257781, read here): the total number of int64 elements.
`golang/uPIMulator/src/assembler/prim/scan_rss.go` takes `DataPrepParams()[0]` as `size` with
`is_strong_scaling := true` (input_size = size; PrIM's `-x 1`), divides it over the DPUs and
rounds each share up to a multiple of 16 x 128 as PrIM's host does;
`tools/upmem_reg_model/src/benchmark/scan_rss.py` counts the transfers as
(data_prep_param // num_dpus) * 8 bytes. The workbook agrees: 1,048,576 elements on 1 DPU
and 4,194,304 on 4 take the same kernel time.

Where this port differs from PrIM, and why:
  * The handshake chain (`handshake_sync`) is replaced as in ports.py's SCAN-SSA (whose first
    kernel is this second kernel): the EDSL has barriers only, so every tasklet stores its
    block sum, and after PrIM's barrier tasklet t adds the sums of tasklets 0..t-1 (t loads
    and adds where PrIM's chain has a wait, a load, a store and a notify). The block sums and
    `message_partial_count` are kept in two slots each, alternating between blocks, so that
    one barrier per block suffices, as in PrIM.
  * PrIM's `reduction`, `scan` and `add` loops carry `#pragma unroll` (REGS = 128: fully
    unrolled); here they are loops, as in ports.py's RED and SCAN-SSA, so the estimate counts
    a loop's increment and branch per element that PrIM's compiled code does not have.
  * `DPU_RESULTS` (a WRAM array of 16 `dpu_results_t`) is an InOut WRAM array; only entry 0
    (kernel 1) and entry 15 (kernel 2) are written, as in PrIM.
"""
from __future__ import annotations

import functools

import numpy as np

import edsl
from edsl import InOut, Input

from .. import ports

BENCHMARK = "SCAN-RSS"
SMALL = (262144, 64)

TASKLETS = 16            # NR_TASKLETS
BLOCK = 1024             # BLOCK_SIZE, bytes (BL=10)
REGS = BLOCK // 8        # int64 elements of a block


def glibc_rand(count: int, seed: int = 0) -> np.ndarray:
    """The first `count` values of glibc's `rand()` after `srand(seed)` (its TYPE_3 additive
    generator: 34 words from the seed by Park-Miller, 310 discarded, then
    r[i] = r[i - 31] + r[i - 3] mod 2**32, each value r[i] >> 1), as int64."""
    seed = seed or 1                     # glibc takes srand(0) as srand(1)
    r = [seed]
    for _ in range(1, 31):
        hi, lo = divmod(r[-1], 127773)
        w = 16807 * lo - 2836 * hi
        r.append(w + 2147483647 if w < 0 else w)
    r += r[:3]
    for i in range(34, 344 + count):
        r.append((r[i - 31] + r[i - 3]) & 0xFFFFFFFF)
    return np.array(r[344:], np.int64) >> 1


# -- kernel 1: reduction ----------------------------------------------------------------------
@edsl.dialect
def rss_reduce_dpu(results: InOut["memref<16xi64>"], a: Input["memref<?xi64, MRAM>"], size_bytes: Input["i32"]):
    cache_a = edsl.wram_alloc(TASKLETS * REGS, edsl.i64)     # one 1,024-byte block a tasklet
    message = edsl.wram_alloc(TASKLETS, edsl.i64)
    t = edsl.tasklet_id()
    edsl.barrier()                                            # after tasklet 0's mem_reset
    mine = t * REGS
    l_count = edsl.i64(0)
    for byte_index in range(t * BLOCK, size_bytes, edsl.num_tasklets() * BLOCK):
        edsl.mram_read(a, cache_a, BLOCK, src_offset=byte_index >> 3, dst_offset=mine)
        output = edsl.i64(0)                                  # reduction()
        for j in range(mine, mine + REGS):
            output += cache_a[j]
        l_count += output
    message[t] = l_count
    edsl.barrier()
    if t == 0:                                                # single-thread reduction
        for k in range(1, edsl.num_tasklets()):
            message[0] += message[k]
        results[0] = message[0]


# -- kernel 2: scan ---------------------------------------------------------------------------
@edsl.dialect
def rss_scan_dpu(b: InOut["memref<?xi64, MRAM>"], results: InOut["memref<16xi64>"],
                 a: Input["memref<?xi64, MRAM>"], size_bytes: Input["i32"], t_count: Input["i64"]):
    cache_a = edsl.wram_alloc(TASKLETS * REGS, edsl.i64)
    cache_b = edsl.wram_alloc(TASKLETS * REGS, edsl.i64)
    message = edsl.wram_alloc(2 * TASKLETS, edsl.i64)        # the block sums, two rounds
    partial = edsl.wram_alloc(2, edsl.i64)                    # message_partial_count, two rounds
    t = edsl.tasklet_id()
    n = edsl.num_tasklets()
    edsl.barrier()
    mine = t * REGS
    if t == n - 1:
        partial[0] = t_count                                  # the sum of the DPUs before
    edsl.barrier()
    side = 0
    for byte_index in range(t * BLOCK, size_bytes, n * BLOCK):
        edsl.mram_read(a, cache_a, BLOCK, src_offset=byte_index >> 3, dst_offset=mine)
        acc = cache_a[mine]                                   # scan(): output[j - 1] in a register
        cache_b[mine] = acc
        for j in range(mine + 1, mine + REGS):
            acc = acc + cache_a[j]
            cache_b[j] = acc
        l_count = acc
        message[side * TASKLETS + t] = l_count                # (PrIM: the handshake chain)
        edsl.barrier()
        p_count = edsl.i64(0)
        for k in range(side * TASKLETS, side * TASKLETS + t):
            p_count += message[k]
        base = partial[side] + p_count
        for q in range(mine, mine + REGS):                    # add()
            cache_b[q] = cache_b[q] + base
        edsl.mram_write(cache_b, b, BLOCK, src_offset=mine, dst_offset=byte_index >> 3)
        if t == n - 1:
            results[t] = base + l_count
            partial[1 - side] = base + l_count
        side = 1 - side


# -- host -------------------------------------------------------------------------------------
def share_elements(n: int, dpus: int) -> int:
    """PrIM's elements per DPU: divceil(n, dpus), rounded up to NR_TASKLETS * REGS."""
    per = -(-n // dpus)
    round_to = TASKLETS * REGS
    return per if per % round_to == 0 else (per // round_to) * round_to + round_to


def scan_rss(a: np.ndarray, dpus: int, dpu_ids=None, tasklets: int = TASKLETS):
    """Inclusive prefix sum of `a` (int64) on `dpus` DPUs as PrIM's host runs it: kernel 1 on
    every DPU, the host's scan of the DPUs' totals, kernel 2. Returns the scanned parts of the
    DPUs run (zeros elsewhere) and one Share per DPU run (its two kernels' cycles). The sum
    handed to DPU d is that of the DPUs before it, whether run or not (taken from `a`)."""
    per = share_elements(len(a), dpus)
    padded = np.zeros(per * dpus, np.int64)
    padded[:len(a)] = a
    ids = list(range(dpus) if dpu_ids is None else dpu_ids)
    out, shares = np.zeros(per * dpus, np.int64), []
    for d in ids:
        part = padded[d * per:(d + 1) * per].copy()
        res = np.zeros(TASKLETS, np.int64)
        first = rss_reduce_dpu.run(res, part, per * 8, tasklets=tasklets, timing=True)
        if res[0] != part.sum():
            raise AssertionError(f"SCAN-RSS DPU {d}: kernel 1's total {res[0]} != {part.sum()}")
        before = int(padded[:d * per].sum())                  # the host's results_scan[d]
        res2, c = np.zeros(TASKLETS, np.int64), np.zeros(per, np.int64)
        second = rss_scan_dpu.run(c, res2, part, per * 8, before, tasklets=tasklets, timing=True)
        out[d * per:(d + 1) * per] = c
        # SCAN-RSS/host/app.c: CPU-DPU (timer 1) is DPU_INPUT_ARGUMENTS (16 B), then A; DPU-CPU
        # (timer 5) is the scanned part. DPU_RESULTS back and the second arguments out are timed
        # between the kernels, as Inter-DPU (timer 3; the workbook's hw_dpu_to_dpu).
        shares.append(ports.Share(d, first.timing.dpu_cycles_max + second.timing.dpu_cycles_max,
                                  (ports.Xfer("DPU_INPUT_ARGUMENTS", 16), ports.Xfer("A", per * 8)),
                                  (ports.Xfer("C", per * 8),), launches=2))
    return out[:len(a)], shares


@functools.lru_cache(None)
def dpu0(size: int, dpus: int) -> ports.Share:
    """DPU 0's share of a workbook row (`size` int64 elements in all on `dpus` DPUs), run on
    the model and checked against NumPy. Every DPU gets PrIM's rounded share (zeros past the
    input), so DPU 0 is as slow as any."""
    per = share_elements(size, dpus)
    a = glibc_rand(min(per, size))                            # DPU 0's part of PrIM's input
    out, (share,) = scan_rss(np.concatenate([a, np.zeros(size - len(a), np.int64)]), dpus, dpu_ids=[0])
    if not np.array_equal(out[:len(a)], np.cumsum(a)):
        raise AssertionError(f"SCAN-RSS {size} on {dpus} DPUs: DPU 0's result differs from NumPy")
    return share
