"""PrIM's UNI (unique) DPU program as an EDSL kernel, with its host's split and data.

What PrIM's program does (CMU-SAFARI/prim-benchmarks, commit 9a1498f; UNI/dpu/task.c,
UNI/host/app.c, UNI/support/common.h and UNI/Makefile, unchanged there since 3de4b49; the
Makefile's defaults NR_TASKLETS=16 and BL=10, as the workbook was measured): the input is
int64_t elements (T), and each DPU keeps an element when it differs from the one before it
(the first of each run of equal elements), in order, packed at the start of its output
region. Tasklet t walks its DPU's part in 1,024-byte blocks t, t + 16, ... (REGS = 128
elements): `mram_read` of the block into its WRAM cache A; `unique` copies the block's first
element and each one that differs from its predecessor to cache B and counts them (l_count);
a handshake chain hands on from tasklet to tasklet the count kept so far this round
(p_count), the last element kept (to see whether this block's first repeats it: `offset`,
0 or 1) and the number of such repeats so far (o_count); tasklet t then writes l_count
elements from cache B[offset] at message_partial_count + p_count - o_count (without a
barrier: the chain orders the positions). Tasklet 0 records its first kept element in its
first round, tasklet 15 keeps the last element kept (message_last_from_last, for tasklet 0's
next round), adds the round's count to message_partial_count and its DPU_RESULTS entry
(t_count, last), and a barrier ends the round. The host reads every DPU's 16 DPU_RESULTS
({u32 t_count; T first; T last}: 24 B each), drops a DPU's first element where it repeats
the previous DPU's last, scans the counts, and reads back each DPU's kept elements with one
`dpu_copy_from` per DPU.

The host's split (app.c): the total input is divided over the DPUs as
divceil(input_size, dpus), rounded up to a multiple of NR_TASKLETS * REGS = 2,048 elements
(every tasklet does as many blocks: every barrier is reached by all), and every DPU gets that
many elements. Its data (`read_input`): A[i] = i for even i, i + 1 for odd i (runs of two:
0, 2, 2, 4, 4, ...), then the padding repeats A[input_size - 1]. No random numbers: nothing
to seed.

What the workbook's `data_prep_param` is: the total input elements (strong scaling). Read in
VIA-Research/uPIMulator (commit 870d916): golang/uPIMulator/src/assembler/prim/uni.go and
python_cpp/uPIMulator_frontend/src/assembler/data_prep/uni_data_prep.py take
`size = data_prep_params[0]`, `is_strong_scaling = true`, input_size = size, and split it as
PrIM's host does (divceil by the DPUs, rounded up to num_tasklets * 128), with PrIM's data;
tools/upmem_reg_model/src/benchmark/uni.py counts (data_prep_param // num_dpus) * 8 bytes to
each DPU. The hardware rows agree: UNI at 4 DPUs and 2,097,152 takes about 4 times the time
of 16 DPUs and 2,097,152 (12.9 and 3.3 ms). (PrIM's own default, -x 0, is weak scaling: -i
elements per DPU; the workbook's rows are strong.)

Where this port differs from PrIM, and why:
  * The handshake chain (`handshake_wait_for`/`handshake_notify`): the EDSL has barriers
    only. As ports.py does for SCAN-SSA, every tasklet writes what it would hand on (its
    l_count, its first and last kept elements) and a barrier follows; then tasklet t goes
    over tasklets 0..t-1 (a loop of t trips: three loads, a compare and two adds each) to get
    p_count, o_count and the last element kept before its block, where PrIM's chain has a
    wait, three loads, a compare, three stores and a notify. That barrier stands where PrIM
    has none (between the chain and the `mram_write`); PrIM's barrier at the end of the round
    is not needed: the counts, the last elements, message_partial_count and
    message_last_from_last are kept in buffers of two slots, alternating by round, so each
    round has one barrier, as in PrIM.
  * `pos`, PrIM's unsigned index of the next kept element, is zero-extended (arith.extui) to
    index cache B: the code generator then sees it is never negative, as PrIM's unsigned int
    is, and adds no Python negative-index compare and select (a loop variable, as ports.py
    writes its indices, cannot carry a count of kept elements). The same for the round's
    slot `side`. The loop's `cache_a[j - 1]` needs nothing (j counts up from the block's
    first + 1).
  * PrIM's `#pragma unroll` of `unique`'s loop is left to the compiler, as ports.py leaves
    SCAN-SSA's: the EDSL loop is a loop, reading cache A[j] and A[j - 1] each trip.
  * PrIM's `mram_write` of l_count elements from cache B[offset] writes, when offset is 1, one
    element past the kept ones (a stale one of cache B) onto the next tasklet's first place:
    PrIM relies on the next tasklet's write landing after it (it is issued after the next
    tasklet's handshake). The model runs the tasklets of a DPU in no set order, and that
    element came out wrong there: the port writes the l_count - offset kept elements only
    (8 bytes less where offset is 1, one transfer as in PrIM), and none where that is zero
    (the EDSL's DMA rules refuse a size under 8 bytes; never, with PrIM's data).
  * Caches A and B are each a slice of a buffer shared by the tasklets, as ports.py writes
    PrIM's per-tasklet `mem_alloc`; DPU_RESULTS is three InOut WRAM arrays of the 16
    tasklets' t_count (u32), first and last (T); the output region (PrIM's
    DPU_MRAM_HEAP_POINTER + input bytes) is an MRAM array of its own.
"""
from __future__ import annotations

import functools

import numpy as np
from mlir import ir
from mlir.dialects import arith

import edsl
from edsl import InOut, Input

from .. import ports

BENCHMARK = "UNI"
SMALL = (4096, 2)

TASKLETS = 16            # NR_TASKLETS
BLOCK = 1024             # BLOCK_SIZE, bytes (BL=10)
REGS = BLOCK // 8        # int64_t elements of a block
NOT_IN_INPUT = 0xFFFFFFFF    # PrIM's first message_last_from_last ("a value that is not in the input")


def _unsigned(v):
    """`v` (an i32 count) as PrIM's unsigned int index: zero-extended, so never negative."""
    return arith.extui(ir.IntegerType.get_signless(64), v)


@edsl.dialect
def uni_dpu(b: InOut["memref<?xi64, MRAM>"], t_count: InOut["memref<16xi32>"],
            first: InOut["memref<16xi64>"], last: InOut["memref<16xi64>"],
            a: Input["memref<?xi64, MRAM>"], size_bytes: Input["i32"]):
    cache_a = edsl.wram_alloc(TASKLETS * REGS, edsl.i64)
    cache_b = edsl.wram_alloc(TASKLETS * REGS, edsl.i64)
    message = edsl.wram_alloc(2 * TASKLETS, edsl.i32)            # two rounds' l_counts,
    message_first = edsl.wram_alloc(2 * TASKLETS, edsl.i64)      # first and last kept elements
    message_last = edsl.wram_alloc(2 * TASKLETS, edsl.i64)
    partial = edsl.wram_alloc(2, edsl.i32)                       # message_partial_count, two rounds
    last_from_last = edsl.wram_alloc(2, edsl.i64)                # message_last_from_last, two rounds
    t = edsl.tasklet_id()
    n = edsl.num_tasklets()
    edsl.barrier()                                               # (PrIM: mem_reset by tasklet 0)
    mine = t * REGS
    if t == n - 1:
        partial[0] = 0
        last_from_last[0] = NOT_IN_INPUT
    edsl.barrier()
    side = edsl.i32(0)
    i = edsl.i32(0)                                              # the round
    for byte_index in range(t * BLOCK, size_bytes, n * BLOCK):
        edsl.mram_read(a, cache_a, BLOCK, src_offset=byte_index >> 3, dst_offset=mine)
        cache_b[mine] = cache_a[mine]                            # unique()
        pos = mine + 1
        for j in range(mine + 1, mine + REGS):
            x = cache_a[j]
            if x != cache_a[j - 1]:
                cache_b[_unsigned(pos)] = x
                pos += 1
        l_count = pos - mine
        kept_last = cache_b[_unsigned(pos - 1)]                 # output[l_count - 1]
        round_at = _unsigned(side * TASKLETS)
        message[round_at + t] = l_count
        message_first[round_at + t] = cache_b[mine]
        message_last[round_at + t] = kept_last
        edsl.barrier()
        p_count = edsl.i32(0)                                    # the handshake chain's values
        o_count = edsl.i32(0)
        before = last_from_last[_unsigned(side)]
        for k in range(round_at, round_at + t):
            p_count += message[k]
            o_count += edsl.i32(message_first[k] == before)
            before = message_last[k]
        offset = edsl.i32(before == cache_b[mine])
        total = partial[_unsigned(side)]
        if l_count > offset:                                     # (PrIM: l_count * 8 bytes)
            edsl.mram_write(cache_b, b, (l_count - offset) * 8, src_offset=mine + offset,
                            dst_offset=total + p_count - o_count)
        if t == 0 and i == 0:
            first[t] = cache_b[mine]
        if t == n - 1:
            last_from_last[_unsigned(1 - side)] = kept_last
            last[t] = kept_last
            count = total + p_count + l_count - o_count - offset
            t_count[t] = count
            partial[_unsigned(1 - side)] = count
        side = 1 - side
        i += 1


def split(size: int, dpus: int) -> int:
    """PrIM's elements per DPU: divceil(size, dpus), rounded up to NR_TASKLETS * REGS."""
    per = -(-size // dpus)
    return per if per % (TASKLETS * REGS) == 0 else (per // (TASKLETS * REGS) + 1) * (TASKLETS * REGS)


def inputs(size: int, dpus: int) -> np.ndarray:
    """PrIM's host's A for every DPU (`read_input`): i for even i, i + 1 for odd i, then
    A[size - 1] up to dpus * split()."""
    i = np.arange(size, dtype=np.int64)
    a = np.full(split(size, dpus) * dpus, i[-1] + (i[-1] & 1), np.int64)
    a[:size] = i + (i & 1)
    return a


def _unique(part: np.ndarray) -> np.ndarray:
    """NumPy's: the first element of each run of equal elements."""
    return part[np.concatenate(([True], part[1:] != part[:-1]))]


def copy_from(size: int, dpus: int) -> tuple[int, ...]:
    """Bytes of each DPU's `dpu_copy_from` of its kept elements (results[i].t_count * 8),
    which PrIM's host times as DPU-CPU: one serial call per DPU, not a `dpu_push_xfer` (the
    counts are the DPUs' results; `dpu0` checks DPU 0's)."""
    per = split(size, dpus)
    return tuple(len(_unique(p)) * 8 for p in inputs(size, dpus).reshape(dpus, per))


@functools.lru_cache(None)
def dpu0(size: int, dpus: int) -> ports.Share:
    """DPU 0's share of a workbook row (`size` elements in all on `dpus` DPUs) run on the model,
    its kept elements, count, first and last checked against NumPy. Every DPU gets as many
    elements, and DPU 0 has no padding unless it is the only DPU: it keeps the most, so it is
    the slowest."""
    per = split(size, dpus)
    part = inputs(size, dpus)[:per].copy()
    b = np.zeros(per, np.int64)
    t_count = np.zeros(TASKLETS, np.int32)
    first, last = np.zeros(TASKLETS, np.int64), np.zeros(TASKLETS, np.int64)
    rep = uni_dpu.run(b, t_count, first, last, part, per * 8, tasklets=TASKLETS, timing=True)
    want = _unique(part)
    count = int(t_count[TASKLETS - 1])
    if count != len(want) or not np.array_equal(b[:count], want) \
            or first[0] != want[0] or last[TASKLETS - 1] != want[-1]:
        raise AssertionError(f"UNI {size} on {dpus} DPUs: DPU 0's result differs from NumPy "
                             f"({count} kept, {len(want)} expected)")
    # UNI/host/app.c: CPU-DPU (timer 1) is DPU_INPUT_ARGUMENTS (u32 size, enum kernel: 8 B), then
    # A (every DPU's split() elements). The DPU's DPU_RESULTS (16 x {u32 t_count; T first; T last},
    # 24 B each: 384 B) come back by a dpu_push_xfer PrIM times as "Inter-DPU" (timer 3): the
    # workbook has no Inter-DPU time for UNI (0) and uPIMulator's regression
    # (tools/upmem_reg_model/src/benchmark/uni.py) counts those 384 B in DPU-CPU, so they are here.
    # PrIM's DPU-CPU timer (4) holds the serial `dpu_copy_from`s of the kept elements
    # (`copy_from`), one DPU after another: DPU 0's bytes from each.
    return ports.Share(0, rep.timing.dpu_cycles_max,
                       (ports.Xfer("DPU_INPUT_ARGUMENTS", 8), ports.Xfer("A", per * 8)),
                       (ports.Xfer("DPU_RESULTS", TASKLETS * 24), ports.Xfer("B", copy_from(size, dpus)[0], "serial")))
