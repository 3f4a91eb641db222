"""PrIM's BS (binary search) DPU program as an EDSL kernel, with its host's split.

What PrIM's program does (BS/dpu/task.c, BS/host/app.c): every DPU holds the whole sorted
int64 input vector (the host pushes it to each DPU's MRAM heap) followed by its slice of
the queries. Each of the 16 tasklets takes `slice_per_dpu / NR_TASKLETS` consecutive
queries; per query it reads the query (an 8-byte `mram_read`), reads the vector's first
block and a block 2,048 bytes before its end (`cache_aux_A`, `cache_aux_B`: read, never
used), then bisects the vector's MRAM byte range: it reads the block at the middle
address and searches it (`search`: -2 when the block's first element is above the query,
else a linear scan of the block's elements for the query, -1 when absent), keeps the left
or the right half, and ends with the boundary checks (a block read and searched at the
start or at the end of the range). A found query's index goes to the tasklet's
`DPU_RESULTS` slot (the last one found stays); the host takes the largest over all.
One `dpu_launch`; no barrier but the one after `mem_reset`.

Read: CMU-SAFARI/prim-benchmarks, BS/dpu/task.c at commit 3de4b49 (PrIM's first commit,
2021-06-16), BS/host/app.c, BS/support/common.h, BS/Makefile (the same at 3de4b49 and
9a1498f). Configuration: 16 tasklets; BS's Makefile passes no BL, so common.h's
BLOCK_SIZE_LOG2 = 8: 256-byte blocks of 32 int64 (`DTYPE int64_t`); uPIMulator's build
(golang/uPIMulator/benchmark/BS/dpu/CMakeLists.txt) passes no BL either.

Which version: PrIM's BS/dpu/task.c was rewritten after its first commit (196683d,
8752719, eda4f83, bab6c1b, December 2021: 8-byte-aligned mid addresses, another boundary
handling, a `printf` of queries not found). uPIMulator's copy of the benchmark
(VIA-Research/uPIMulator 870d916, golang/uPIMulator/benchmark/BS/dpu/task.c, and the
python_cpp one) is the first commit's program (with `search` marked noinline and a
32-bit query counter): uPIMulator simulated that program for the workbook's sim_kernel,
and its copy's Makefile builds it for UPMEM hardware too (the workbook does not say which
source the hardware rows ran; most likely the same). This port is of that program; its
query counter is PrIM's uint64_t. Both versions read and search about as many blocks a
query on the workbook's rows (11.02 and 11.02 at 131,072 elements on 1 DPU, 11.03 and
10.53 at 32,768 on 64 DPUs: a Python model of both loops, not kept).

What data_prep_param means (uPIMulator 870d916: golang/uPIMulator/src/assembler/prim/bs.go
and python_cpp/uPIMulator_frontend/src/assembler/data_prep/bs_data_prep.py; the byte
counts of tools/upmem_reg_model/src/benchmark/bs.py agree): the input vector's length;
the queries are `data_prep_param // 8`, rounded up to a multiple of DPUs x 16 tasklets as
PrIM's host rounds them. Values as PrIM's and uPIMulator's hosts make them (no seed
needed): input[i] = i + 1, query q = q (query 0 is absent; query q is at index q - 1).
PrIM's host divides the queries evenly (`slice_per_dpu`); every DPU searches the whole
vector. DPU 0 gets the smallest queries; the other DPUs' paths through the bisection differ
a little, and DPU 0 is not always the slowest (estimated, every DPU run: 8,192 on 5 DPUs,
DPU 0 the slowest, the others 5-8 % faster; 32,768 on 4 DPUs, DPU 3 1.4 % slower than DPU 0).
`dpu0` gives DPU 0's share.

Where the port differs from PrIM, and why:
  * Addresses are byte offsets from the MRAM heap (PrIM adds DPU_MRAM_HEAP_POINTER, an
    8-byte-aligned address, so every midpoint and comparison is the same); the DMA takes
    the element offset `address >> 3`. For the workbook's lengths (powers of two) every
    address the bisection makes is a multiple of 8 (a Python model of its loop, every
    query); for other lengths a midpoint can be 4 bytes off, which the port takes as
    aligned down (what UPMEM's DMA does with it is not documented here; PrIM's later
    commit 196683d aligns the midpoints itself).
  * The end boundary check's result: PrIM (3de4b49) reports `found + current / 8` for a
    query found in the block it reads at `end - BLOCK_SIZE`, an index off by that
    distance (it happens to the queries in the vector's first block); the port reports
    `found + (end - BLOCK_SIZE) / 8`, the index of what it read: the same instructions,
    and DPU 0's results check against NumPy.
  * `searching_for`, a stack variable PrIM DMAs the query into, is a per-tasklet slot of
    a WRAM buffer, loaded once a query (PrIM passes it to `search` by value); DPU_RESULTS
    (a WRAM array the host reads) is an InOut WRAM array.
  * `search` is written out at its three calls. Its scan stops at the query with a
    `break`, as PrIM's: the EDSL lowers a `break` in a `for` to a flag, about 6 more
    instructions an element than C's loop. That does not move the estimate: BS is bound
    by its DMA (about 14 transfers a query: the query, the two unused blocks and a dozen
    bisection blocks, through one engine for the 16 tasklets; at 131,072 elements on 4
    DPUs, DPU 0 issues 6.2 M cycles' instructions, its DMA takes 11.3 M, and the estimate
    is 11.33 M).
  * A vector whose length is not a power of two can make PrIM's (3de4b49) bisection miss
    queries of the first block (1-16 at 3,072 elements, by a Python model of its loop and
    by this port alike); `dpu0` then raises AssertionError. The workbook's lengths are powers
    of two.
  * The kernel-table dispatch (`kernels[DPU_INPUT_ARGUMENTS.kernel]()`) and `mem_reset`
    are not ported (one kernel; the buffers are static).
Costs PrIM's DPU timer holds beside the kernel's cycles: none (one launch). The DPU-CPU
timer also holds a `malloc` per DPU and the host's loop over the DPUs' results (as RED's).
"""
from __future__ import annotations

import functools

import numpy as np

import edsl
from edsl import InOut, Input

from .. import ports

BENCHMARK = "BS"
SMALL = (4096, 4)            # 512 queries over 4 DPUs: 8 per tasklet

TASKLETS = 16                # NR_TASKLETS
BLOCK = 256                  # BLOCK_SIZE, bytes: BL not set, BLOCK_SIZE_LOG2 8
E = BLOCK // 8               # int64 elements of a block
AUX_B_BACK = BLOCK * 8       # PrIM reads cache_aux_B at end - BLOCK_SIZE * sizeof(DTYPE)
ARGS_BYTES = 24              # dpu_arguments_t: u64 input_size, u64 slice_per_dpu, enum kernel (+4 padding)


@edsl.dialect
def bs_dpu(results: InOut["memref<16xi64>"], mram: Input["memref<?xi64, MRAM>"],
           input_size: Input["i64"], slice_per_dpu: Input["i64"]):
    cache_a = edsl.wram_alloc(TASKLETS * E, edsl.i64)
    cache_aux_a = edsl.wram_alloc(TASKLETS * E, edsl.i64)
    cache_aux_b = edsl.wram_alloc(TASKLETS * E, edsl.i64)
    query = edsl.wram_alloc(TASKLETS, edsl.i64)               # searching_for, one slot a tasklet
    t = edsl.tasklet_id()
    edsl.barrier()
    mine = t * E
    vector_end = edsl.i32(input_size * 8)                     # end_mram_block_addr_A (u32)
    per_tasklet = slice_per_dpu >> 4                          # slice_per_dpu / NR_TASKLETS
    q_addr = vector_end + edsl.i32(t * per_tasklet * 8)       # current_mram_block_addr_query
    for targets in range(per_tasklet):                        # u64 counter, as PrIM's
        edsl.mram_read(mram, query, 8, src_offset=q_addr >> 3, dst_offset=t)
        q_addr += 8
        x = query[t]                                          # searching_for, passed to search()
        start = edsl.i32(0)
        end = vector_end
        edsl.mram_read(mram, cache_aux_a, BLOCK, src_offset=start >> 3, dst_offset=mine)
        edsl.mram_read(mram, cache_aux_b, BLOCK, src_offset=(end - AUX_B_BACK) >> 3, dst_offset=mine)
        current = (start + end) >> 1
        done = False
        while not done:
            edsl.mram_read(mram, cache_a, BLOCK, src_offset=current >> 3, dst_offset=mine)
            found = edsl.i64(-2)                              # search(cache_A, searching_for)
            if cache_a[mine] <= x:
                found = edsl.i64(-1)
                for i in range(mine, mine + E):
                    if cache_a[i] == x:
                        found = edsl.i64(i - mine)
                        break
            if found > -1:
                results[t] = found + (current >> 3)
                break
            if found == -2:                                   # discard the right part
                end = current
                current = (current + start) >> 1
            elif found == -1:                                 # discard the left part
                start = current
                current = (current + end) >> 1
            if current < BLOCK:                               # start boundary check
                done = True
                edsl.mram_read(mram, cache_a, BLOCK, src_offset=current >> 3, dst_offset=mine)
                found = edsl.i64(-2)
                if cache_a[mine] <= x:
                    found = edsl.i64(-1)
                    for i in range(mine, mine + E):
                        if cache_a[i] == x:
                            found = edsl.i64(i - mine)
                            break
                if found > -1:
                    results[t] = found + (current >> 3)
            if current > end - BLOCK:                         # end boundary check
                done = True
                edsl.mram_read(mram, cache_a, BLOCK, src_offset=(end - BLOCK) >> 3, dst_offset=mine)
                found = edsl.i64(-2)
                if cache_a[mine] <= x:
                    found = edsl.i64(-1)
                    for i in range(mine, mine + E):
                        if cache_a[i] == x:
                            found = edsl.i64(i - mine)
                            break
                if found > -1:
                    results[t] = found + ((end - BLOCK) >> 3)


def queries(size: int, dpus: int, tasklets: int = TASKLETS) -> int:
    """PrIM's query count for a vector of `size`: size // 8 (uPIMulator's data preparation),
    rounded up to a multiple of DPUs x tasklets (BS/host/app.c)."""
    q = size // 8
    if q % (dpus * tasklets):
        q += dpus * tasklets - q % (dpus * tasklets)
    return q


def bs(size: int, dpus: int, dpu_ids=None, tasklets: int = TASKLETS):
    """Binary search of `queries(size, dpus)` queries in the vector 1..size (int64) on `dpus`
    DPUs: per DPU run, its tasklets' DPU_RESULTS and its Share."""
    assert size * 8 >= AUX_B_BACK, "PrIM reads a block 2,048 bytes before the vector's end"
    vector = np.arange(1, size + 1, dtype=np.int64)
    qs = np.arange(queries(size, dpus, tasklets), dtype=np.int64)
    slice_per_dpu = len(qs) // dpus
    out = {}
    for d in range(dpus) if dpu_ids is None else dpu_ids:
        mram = np.concatenate([vector, qs[d * slice_per_dpu:(d + 1) * slice_per_dpu]])
        results = np.zeros(TASKLETS, np.int64)
        rep = bs_dpu.run(results, mram, size, slice_per_dpu, tasklets=tasklets, timing=True)
        # BS/host/app.c: CPU-DPU (timer 1) is DPU_INPUT_ARGUMENTS, then the vector and the
        # DPU's queries into the MRAM heap; DPU-CPU (timer 3) is DPU_RESULTS (16 x int64).
        share = ports.Share(d, rep.timing.dpu_cycles_max,
                            (ports.Xfer("DPU_INPUT_ARGUMENTS", ARGS_BYTES), ports.Xfer("input", size * 8),
                             ports.Xfer("queries", slice_per_dpu * 8)),
                            (ports.Xfer("DPU_RESULTS", TASKLETS * 8),))
        out[d] = (results, share)
    return out


def expected_results(size: int, dpus: int, d: int, tasklets: int = TASKLETS) -> np.ndarray:
    """NumPy's DPU_RESULTS of DPU `d`: per tasklet, the index of its last query that is in
    the vector (0, the slot's initial value, if none is)."""
    vector = np.arange(1, size + 1, dtype=np.int64)
    slice_per_dpu = queries(size, dpus, tasklets) // dpus
    per = slice_per_dpu // tasklets
    want = np.zeros(TASKLETS, np.int64)
    for t in range(tasklets):
        qs = np.arange(d * slice_per_dpu + t * per, d * slice_per_dpu + (t + 1) * per, dtype=np.int64)
        at = np.searchsorted(vector, qs)
        hit = (at < size) & (vector[np.minimum(at, size - 1)] == qs)
        if hit.any():
            want[t] = at[hit][-1]
    return want


@functools.lru_cache(None)
def dpu0(size: int, dpus: int) -> ports.Share:
    """DPU 0's share of a workbook row (vector of `size`, `dpus` DPUs), its results checked."""
    ((results, share),) = bs(size, dpus, dpu_ids=[0]).values()
    if not np.array_equal(results, expected_results(size, dpus, 0)):
        raise AssertionError(f"BS {size} on {dpus} DPUs: DPU 0's results differ from NumPy")
    return share
