"""PrIM's TRNS (in-place matrix transposition in three steps) as EDSL kernels, with its host.

What PrIM's program does (CMU-SAFARI/prim-benchmarks, commit 9a1498f70b4383d1ad75d6ec5671e434f72a273a:
TRNS/dpu/task.c, host/app.c, support/common.h, support/params.h, Makefile, read here). T is
int64, NR_TASKLETS 16 (the Makefile), and no block size matters: the tiles are the transfers.
The host transposes an (M_ * m) x (N_ * n) matrix, `A[i] = (T) rand()` after `srand(0)`
(glibc's generator: scan_rss.glibc_rand). Step 1 is the host's: each DPU gets a column slab of
n columns, pushed row by row, M_ * m `dpu_push_xfer`s of n elements (all timed as CPU-DPU).
With N_ slabs and NR_DPUS DPUs it runs ceil(N_ / NR_DPUS) rounds of NR_DPUS slabs (at most);
each round frees, allocates and loads the DPUs anew after the first (the binary's globals,
`curr_tile` among them, start at 0 every round), resets the `done` array (M_ * n bytes after
the slab) and launches twice, each launch timed by a "DPU" timer that adds up over the rounds
(Step 2 and Step 3: 2 * rounds `dpu_launch`es), then pulls the slab back (DPU-CPU, one
`dpu_push_xfer` of M_ * m * n elements). The DPU programs:
  * step 2 (`main_kernel1`): after a barrier, tasklet t takes tiles t, t + 16, ... < M_, each
    m * n consecutive elements (an m x n block): reads it (`read_tile_step2`: `mram_read`s of
    at most 2,048 B), moves element i to (i * m) - (m * n - 1) * (i / n) of a second buffer
    (the block transposed; unsigned arithmetic, m and n run-time arguments: a multiply, a
    division and a multiply an element) and writes it back;
  * step 3 (`main_kernel2`): the slab is now an M_ x n array of m-element tiles, transposed
    in place by following the permutation's cycles (tile -> tile * M_ - (M_ * n - 1) *
    (tile / n)): a tasklet takes a tile from a shared counter (`get_tile`, under
    `tile_mutex`), skips it if it is fixed, reads it (`mram_read` of m * 8 B), reads its done
    flag (`get_done`, under `done_mutex`: an 8-byte `mram_read` at byte `tile` of the done
    array, bit tile % 8), and while the flag it last read is clear follows the cycle: reads
    the next tile, reads and sets its flag (`get_and_set_done`: read, or, 8-byte `mram_write`,
    under `done_mutex`), writes its data there unless the flag was set, copies the read tile
    into its data (m elements) and computes the next tile; then takes another tile, until the
    counter passes M_ * n - 2.

What the workbook's `data_prep_param` is (VIA-Research/uPIMulator, commit
870d916334e9ff0b190f555f951a9ec3c4257781, read here): M_, with N_ = 64, n = 8, m = 4.
`tools/upmem_reg_model/src/benchmark/trns.py` counts the transfers with N_ = 64, n_ = 8,
M_ = data_prep_param, m_ = 4 (a DPU's share: N_ * n * M_ * m / num_dpus elements of 8 B), and
`golang/uPIMulator/src/assembler/prim/trns.go` takes `DataPrepParams()[0]` as M with N = 64,
n = 8, m = 4 on several DPUs (strong scaling: 2 * N / num_dpus executions), but N = 1, n = 4,
m = 16 when it simulates a single DPU. The hardware times fit N_ = 64, n = 8, m = 4 at every
DPU count (1 DPU takes 3.97x 4 DPUs' time at M_ = 128), which is what is used here.

Where this port differs from PrIM, and why:
  * Mutexes and the order of step 3: the EDSL has neither mutexes nor atomics (barriers are
    its only synchronisation; a builder-style atomic would act on a memref element, not on the
    MRAM words PrIM's flags are, read and written by DMA), and `f.run` runs a DPU's tasklets as
    host threads, which interleave between barriers as the OS schedules them: PrIM's loop as
    written would hand tiles to whichever thread runs, and its unguarded read-modify-writes of
    the counter and of the done words would race (a first version without the mutexes gave
    run-to-run differences of up to 1.3 % in step 3's work). So step 3 runs in batches of 16
    tiles, ceil((M_ * n - 1) / 16) of them, in which the tasklets take turns in tasklet order,
    a barrier ending each turn: in its turn a tasklet takes one tile from the counter and does
    PrIM's work for it (the flag check and the whole cycle walk). Only one tasklet works
    between two barriers, so the counter's and the flags' read-modify-writes are indivisible,
    as the mutexes make them (their acquire and release, a few instructions a critical
    section, are not counted), and the run is deterministic and race-free. It differs from
    the DPU in three ways, each in the estimate: (1) 16 barriers a batch that PrIM does not
    have (about 7 issue slots a turn a tasklet: at M_ = 128, 110,000 of step 3's 357,000
    slots); (2) on the DPU the tasklets run together, take tiles as they become free, and
    tasklets that started on the same cycle share its walk (each stopping at a tile another
    has set), where here the first tasklet to reach a cycle walks all of it, so the walks are
    spread less evenly (`step3_tasklet_steps`: at M_ = 128 the busiest tasklet takes 21 % of
    them), which the estimate's slowest-tasklet bound sees; (3) a fixed tile uses up its
    tasklet's turn, where PrIM's tasklet takes another at once. Step 3's estimate is bound
    by the DMA engine, which none of them changes: at M_ = 128 the DMA engine is busy 526,000
    cycles of the estimate's 549,000 (526,000 with the racing version).
  * Done flags: PrIM reads and writes 8 bytes at the unaligned byte address `done_array +
    tile`; the EDSL's DMA takes 8-byte aligned addresses only, so the port reads and writes
    the aligned word that holds that byte (word tile >> 3, what the DPU's DMA engine does with
    the address's low 3 bits ignored), bit tile % 8 (written `tile & 7`, as the compiler
    writes PrIM's unsigned `% sizeof(T)`). The done array is ceil(M_ * n / 8) words after the
    slab, as PrIM's M_ * n bytes.
  * PrIM's unsigned arithmetic: the divisions are `arith.divui` and the step-2 subscript is
    zero-extended (`arith.extui`), in the EDSL's builder style: the EDSL's `//` is Python's
    floor division, and a subscript it cannot see is non-negative gets Python's
    negative-index check.
  * WRAM: PrIM's per-tasklet `mem_alloc` of m * n (step 2) and m (step 3) elements are slices
    of buffers shared by the tasklets at fixed strides (TILE2, TILE3 elements); the host checks
    the tiles fit. `curr_tile` (a WRAM global, 0 after each load) is an InOut WRAM array the
    host passes as 0.
  * Each round of a DPU does the same work (the values are only moved; every subscript and
    multiply depends on m, n, M_ and the tile numbers alone), so `dpu0` runs round 0's slab
    and multiplies its cycles by the rounds (checked equal over every round for small sizes
    with `trns(..., all_rounds=True)`).
"""
from __future__ import annotations

import functools

import numpy as np
from mlir import ir
from mlir.dialects import arith

import edsl
from edsl import InOut, Input

from .. import ports
from .scan_rss import glibc_rand

BENCHMARK = "TRNS"
SMALL = (32, 64)

TASKLETS = 16            # NR_TASKLETS
TILE2 = 64               # step 2's per-tasklet tile buffers, elements (m * n at most)
TILE3 = 16               # step 3's, elements (m at most)
N_BIG, N_SMALL, M_SMALL = 64, 8, 4                 # N_, n, m of the workbook's rows


def _u64(x):
    """`x` (i32) zero-extended to i64: PrIM's unsigned int as a subscript."""
    return arith.extui(ir.IntegerType.get_signless(64), x)


# -- step 2 -----------------------------------------------------------------------------------
@edsl.dialect
def trns_step2_dpu(a: InOut["memref<?xi64, MRAM>"], m: Input["i32"], n: Input["i32"], big_m: Input["i32"]):
    data = edsl.wram_alloc(TASKLETS * TILE2, edsl.i64)
    backup = edsl.wram_alloc(TASKLETS * TILE2, edsl.i64)
    t = edsl.tasklet_id()
    edsl.barrier()                                            # after tasklet 0's mem_reset
    mine = t * TILE2
    mn = m * n
    for tile in range(t, big_m, TASKLETS):
        offset = tile * mn
        rest = mn                                             # read_tile_step2
        while rest > 0:
            if rest * 8 > 2048:
                transfer = 2048 // 8
            else:
                transfer = rest
            edsl.mram_read(a, data, transfer * 8, src_offset=offset + mn - rest, dst_offset=mine + (mn - rest) * 8)
            rest -= transfer
        for i in range(mn):
            backup[mine + _u64(i * m - (mn - 1) * arith.divui(i, n))] = data[mine + i]
        rest = mn                                             # write_tile_step2
        while rest > 0:
            if rest * 8 > 2048:
                transfer = 2048 // 8
            else:
                transfer = rest
            edsl.mram_write(backup, a, transfer * 8, src_offset=mine + (mn - rest) * 8, dst_offset=offset + mn - rest)
            rest -= transfer


# -- step 3 -----------------------------------------------------------------------------------
@edsl.dialect
def trns_step3_dpu(a: InOut["memref<?xi64, MRAM>"], curr_tile: InOut["memref<1xi32>"], m: Input["i32"],
                   n: Input["i32"], big_m: Input["i32"]):
    data = edsl.wram_alloc(TASKLETS * TILE3, edsl.i64)
    backup = edsl.wram_alloc(TASKLETS * TILE3, edsl.i64)
    read_done = edsl.wram_alloc(TASKLETS, edsl.i64)
    t = edsl.tasklet_id()
    edsl.barrier()
    mine = t * TILE3
    done_at = big_m * m * n                                   # the done array, after the slab (words)
    tile_max = big_m * n - 1
    for batch in range(0, tile_max, TASKLETS):                # (port: batches of 16 tiles,
        for turn in range(TASKLETS):                          #  the tasklets taking turns)
            if turn == t:
                tile = curr_tile[0]                           # get_tile() (PrIM: under tile_mutex)
                curr_tile[0] = tile + 1
                if tile < tile_max:
                    next_in_cycle = tile * big_m - tile_max * arith.divui(tile, n)
                    if next_in_cycle != tile:
                        edsl.mram_read(a, data, m * 8, src_offset=tile * m, dst_offset=mine)
                        # get_done(tile) (PrIM: under done_mutex)
                        edsl.mram_read(a, read_done, 8, src_offset=done_at + (tile >> 3), dst_offset=t)
                        done = (read_done[t] & (1 << (tile & 7))) != 0
                        while not done:
                            edsl.mram_read(a, backup, m * 8, src_offset=next_in_cycle * m, dst_offset=mine)
                            # get_and_set_done(next_in_cycle) (PrIM: under done_mutex)
                            at = done_at + (next_in_cycle >> 3)
                            edsl.mram_read(a, read_done, 8, src_offset=at, dst_offset=t)
                            bit = 1 << (next_in_cycle & 7)
                            done = (read_done[t] & bit) != 0
                            read_done[t] = read_done[t] | bit
                            edsl.mram_write(read_done, a, 8, src_offset=t, dst_offset=at)
                            if not done:
                                edsl.mram_write(data, a, m * 8, src_offset=mine, dst_offset=next_in_cycle * m)
                            for i in range(mine, mine + m):
                                data[i] = backup[i]
                            next_in_cycle = next_in_cycle * big_m - tile_max * arith.divui(next_in_cycle, n)
            edsl.barrier()


# -- host -------------------------------------------------------------------------------------
def step3_tasklet_steps(big_m: int, n: int = N_SMALL) -> np.ndarray:
    """How many cycle steps each tasklet takes in step 3 as the port runs it (a diagnostic)."""
    tile_max = big_m * n - 1
    done = np.zeros(big_m * n, bool)
    steps, counter = np.zeros(TASKLETS, int), 0
    for _ in range(0, tile_max, TASKLETS):
        for t in range(TASKLETS):
            tile, counter = counter, counter + 1
            nxt = tile * big_m - tile_max * (tile // n)
            if tile >= tile_max or nxt == tile or done[tile]:
                continue
            while True:
                steps[t] += 1
                was, done[nxt] = done[nxt], True
                nxt = nxt * big_m - tile_max * (nxt // n)
                if was:
                    break
    return steps


def trns(big_m: int, dpus: int, m: int = M_SMALL, n: int = N_SMALL, big_n: int = N_BIG,
         all_rounds: bool = False, tasklets: int = TASKLETS):
    """PrIM's TRNS of an (M_ * m) x (N_ * n) int64 matrix on `dpus` DPUs: DPU 0's slab of
    round 0 (or of every round, `all_rounds`) through steps 2 and 3 on the model, checked
    against NumPy's transpose. Returns DPU 0's Share (its kernels over all the rounds)."""
    if m * n > TILE2 or m > TILE3 or m * n * 8 > 2048:
        raise ValueError(f"tiles of {m} x {n} do not fit the port's WRAM buffers")
    rows, cols = big_m * m, big_n * n
    matrix = glibc_rand(rows * cols).reshape(rows, cols)
    rounds = -(-big_n // dpus)                                # DPU 0 is active in every round
    done_words = max(1, -(-(big_m * n) // 8))
    per_round = []
    for r in range(rounds if all_rounds else 1):
        slab = matrix[:, r * dpus * n:(r * dpus + 1) * n]     # DPU 0's columns in round r
        heap = np.zeros(rows * n + done_words, np.int64)
        heap[:rows * n] = slab.ravel()
        c2 = trns_step2_dpu.run(heap, m, n, big_m, tasklets=tasklets, timing=True)
        c3 = trns_step3_dpu.run(heap, np.zeros(1, np.int32), m, n, big_m, tasklets=tasklets, timing=True)
        if not np.array_equal(heap[:rows * n], slab.T.ravel()):
            raise AssertionError(f"TRNS M_={big_m} on {dpus} DPUs: DPU 0's result (round {r}) differs from NumPy")
        per_round.append(c2.timing.dpu_cycles_max + c3.timing.dpu_cycles_max)
    if not np.allclose(per_round, per_round[0], rtol=1e-9, atol=0):
        raise AssertionError(f"TRNS M_={big_m}: DPU 0's rounds differ in cycles: {per_round}")
    # TRNS/host/app.c, every round: CPU-DPU (timer 1) is step 1, M_ * m dpu_push_xfers of one row
    # of the slab (n elements); the done array's reset and DPU_INPUT_ARGUMENTS (16 B, twice) are
    # pushed outside the timers; DPU-CPU (timer 4) is the slab, one dpu_push_xfer.
    to_dpu = (ports.Xfer("A", n * 8),) * (rows * rounds)
    from_dpu = (ports.Xfer("A", rows * n * 8),) * rounds
    return ports.Share(0, per_round[0] * rounds, to_dpu, from_dpu, launches=2 * rounds)


@functools.lru_cache(None)
def dpu0(size: int, dpus: int) -> ports.Share:
    """DPU 0's share of a workbook row (M_ = `size`, N_ = 64, n = 8, m = 4, on `dpus` DPUs):
    its two kernels of every round, checked against NumPy (`trns` raises AssertionError)."""
    return trns(size, dpus)
