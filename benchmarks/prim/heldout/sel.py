"""PrIM's SEL (select) DPU program as an EDSL kernel, with its host's split and data.

What PrIM's program does (CMU-SAFARI/prim-benchmarks, commit 9a1498f; SEL/dpu/task.c,
SEL/host/app.c and SEL/support/common.h, unchanged there since 3de4b49; the Makefile's
defaults NR_TASKLETS=16 and BL=10, as the workbook was measured): the input is uint64_t
elements (T), each DPU keeps those that fail the predicate `pred(x) = x % 2 == 0` (the odd
ones), in order, packed at the start of its output region. Tasklet t walks its DPU's part in
1,024-byte blocks t, t + 16, ... (REGS = 128 elements): `mram_read` of the block into its
WRAM cache A, `select` copies the kept elements to its cache B and counts them (l_count),
a handshake chain hands on from tasklet to tasklet the count kept by the earlier tasklets in
this round (p_count), a barrier, then an `mram_write` of its l_count elements at
message_partial_count + p_count (the elements the DPU kept in earlier rounds, kept by
tasklet 15), and tasklet 15 adds its count to that total and to its DPU_RESULTS entry.
The host reads every DPU's 16 DPU_RESULTS (a u32 each), scans the DPUs' counts, and reads
back each DPU's kept elements with one `dpu_copy_from` per DPU.

The host's split (app.c): the total input is divided over the DPUs as
divceil(input_size, dpus), rounded up to a multiple of NR_TASKLETS * REGS = 2,048 elements
(so every tasklet does as many blocks: the per-block barrier is reached by all), and every DPU
gets that many elements. Its data (`read_input`): A[i] = i + 1 for the input_size elements,
then 0 for the padding (0 is even: never kept). No random numbers: nothing to seed.

What the workbook's `data_prep_param` is: the total input elements (strong scaling). Read in
VIA-Research/uPIMulator (commit 870d916): golang/uPIMulator/src/assembler/prim/sel.go and
python_cpp/uPIMulator_frontend/src/assembler/data_prep/sel_data_prep.py take
`size = data_prep_params[0]`, `is_strong_scaling = true`, input_size = size, and split it as
PrIM's host does (divceil by the DPUs, rounded up to num_tasklets * 128), with PrIM's data
(i + 1, padding 0); tools/upmem_reg_model/src/benchmark/sel.py counts
(data_prep_param // num_dpus) * 8 bytes to each DPU. The hardware rows agree: SEL at 1 DPU
and 2,097,152 takes what 4 DPUs and 8,388,608 take (73.7 ms). (PrIM's own default, -x 0, is
weak scaling: -i elements per DPU; the workbook's rows are strong.)

Where this port differs from PrIM, and why:
  * The handshake chain (`handshake_wait_for`/`handshake_notify`): the EDSL has barriers
    only. As ports.py does for SCAN-SSA, every tasklet writes its l_count before PrIM's
    barrier and after it tasklet t adds the counts of tasklets 0..t-1 (a loop of t loads and
    adds where PrIM's chain has a wait, a load, an add, a store and a notify). The counts and
    the running total (message_partial_count) are kept in buffers of two slots, alternating
    by round, so one barrier a round suffices, as in PrIM (tasklet 15 updates the total in
    the round in which the others read it).
  * pred's `x % 2 == 0` on PrIM's unsigned T is `(x & 1) == 0`, what C compiles it to: EDSL
    integers are signed and `%` is Python's floor modulo (a remainder and a sign fix: 4 ALU
    instructions more per element on the model).
  * `pos`, PrIM's unsigned index of the next kept element, is zero-extended (arith.extui) to
    index cache B: the code generator then sees it is never negative, as PrIM's unsigned int
    is, and adds no Python negative-index compare and select (a loop variable, as ports.py
    writes its indices, cannot carry a count of kept elements). The same for the round's
    slot `side`.
  * PrIM's `#pragma unroll` of `select`'s loop is left to the compiler, as ports.py leaves
    SCAN-SSA's: the EDSL loop is a loop.
  * An `mram_write` of zero bytes (a block with nothing kept: only padding blocks, with
    PrIM's data) is skipped: the EDSL's DMA rules refuse a size under 8 bytes (PrIM issues
    it; what the DPU's DMA does with it is not documented).
  * Cache B (PrIM's out-of-place `select`) and A are each a slice of a buffer shared by the
    tasklets, as ports.py writes PrIM's per-tasklet `mem_alloc`; DPU_RESULTS is an InOut WRAM
    array of the 16 tasklets' u32 counts; the output region (PrIM's DPU_MRAM_HEAP_POINTER +
    input bytes) is an MRAM array of its own.
"""
from __future__ import annotations

import functools

import numpy as np
from mlir import ir
from mlir.dialects import arith

import edsl
from edsl import InOut, Input

from .. import ports

BENCHMARK = "SEL"
SMALL = (4096, 2)

TASKLETS = 16            # NR_TASKLETS
BLOCK = 1024             # BLOCK_SIZE, bytes (BL=10)
REGS = BLOCK // 8        # uint64_t elements of a block


def _unsigned(v):
    """`v` (an i32 count) as PrIM's unsigned int index: zero-extended, so never negative."""
    return arith.extui(ir.IntegerType.get_signless(64), v)


@edsl.dialect
def sel_dpu(b: InOut["memref<?xi64, MRAM>"], results: InOut["memref<16xi32>"],
            a: Input["memref<?xi64, MRAM>"], size_bytes: Input["i32"]):
    cache_a = edsl.wram_alloc(TASKLETS * REGS, edsl.i64)
    cache_b = edsl.wram_alloc(TASKLETS * REGS, edsl.i64)
    message = edsl.wram_alloc(2 * TASKLETS, edsl.i32)        # two rounds' l_counts
    partial = edsl.wram_alloc(2, edsl.i32)                   # message_partial_count, two rounds
    t = edsl.tasklet_id()
    n = edsl.num_tasklets()
    edsl.barrier()                                           # (PrIM: mem_reset by tasklet 0)
    mine = t * REGS
    if t == n - 1:
        partial[0] = 0
    edsl.barrier()
    side = edsl.i32(0)
    for byte_index in range(t * BLOCK, size_bytes, n * BLOCK):
        edsl.mram_read(a, cache_a, BLOCK, src_offset=byte_index >> 3, dst_offset=mine)
        pos = mine                                           # select(): keep what fails pred
        for j in range(mine, mine + REGS):
            x = cache_a[j]
            if (x & 1) != 0:
                cache_b[_unsigned(pos)] = x
                pos += 1
        l_count = pos - mine
        round_at = _unsigned(side * TASKLETS)
        message[round_at + t] = l_count
        edsl.barrier()
        p_count = edsl.i32(0)                                # the handshake chain's count
        for k in range(round_at, round_at + t):
            p_count += message[k]
        at = partial[_unsigned(side)] + p_count
        if l_count > 0:
            edsl.mram_write(cache_b, b, l_count * 8, src_offset=mine, dst_offset=at)
        if t == n - 1:
            partial[_unsigned(1 - side)] = at + l_count
            results[t] = at + l_count
        side = 1 - side


def split(size: int, dpus: int) -> int:
    """PrIM's elements per DPU: divceil(size, dpus), rounded up to NR_TASKLETS * REGS."""
    per = -(-size // dpus)
    return per if per % (TASKLETS * REGS) == 0 else (per // (TASKLETS * REGS) + 1) * (TASKLETS * REGS)


def inputs(size: int, dpus: int) -> np.ndarray:
    """PrIM's host's A for every DPU (`read_input`): i + 1, then 0 up to dpus * split()."""
    a = np.zeros(split(size, dpus) * dpus, np.int64)
    a[:size] = np.arange(1, size + 1, dtype=np.int64)
    return a


def copy_from(size: int, dpus: int) -> tuple[int, ...]:
    """Bytes of each DPU's `dpu_copy_from` of its kept elements (results[i].t_count * 8),
    which PrIM's host times as DPU-CPU: one serial call per DPU, not a `dpu_push_xfer` (the
    counts are the DPUs' results; `dpu0` checks DPU 0's)."""
    per = split(size, dpus)
    parts = inputs(size, dpus).reshape(dpus, per)
    return tuple(int((p & 1).sum()) * 8 for p in parts)


@functools.lru_cache(None)
def dpu0(size: int, dpus: int) -> ports.Share:
    """DPU 0's share of a workbook row (`size` elements in all on `dpus` DPUs) run on the model,
    its kept elements and count checked against NumPy. Every DPU gets as many elements, and
    DPU 0 has no padding unless it is the only DPU: it keeps the most, so it is the slowest."""
    per = split(size, dpus)
    part = inputs(size, dpus)[:per].copy()
    b = np.zeros(per, np.int64)
    results = np.zeros(TASKLETS, np.int32)
    rep = sel_dpu.run(b, results, part, per * 8, tasklets=TASKLETS, timing=True)
    want = part[part % 2 != 0]
    count = int(results[TASKLETS - 1])
    if count != len(want) or not np.array_equal(b[:count], want):
        raise AssertionError(f"SEL {size} on {dpus} DPUs: DPU 0's result differs from NumPy "
                             f"({count} kept, {len(want)} expected)")
    # SEL/host/app.c: CPU-DPU (timer 1) is DPU_INPUT_ARGUMENTS (u32 size, enum kernel: 8 B), then
    # A (every DPU's split() elements). The DPU's DPU_RESULTS (16 x u32 t_count: 64 B) come back by
    # a dpu_push_xfer PrIM times as "Inter-DPU" (timer 3): the workbook has no Inter-DPU time for
    # SEL (0) and uPIMulator's regression (tools/upmem_reg_model/src/benchmark/sel.py) counts those
    # 64 B in DPU-CPU, so they are here. PrIM's DPU-CPU timer (4) holds the serial `dpu_copy_from`s
    # of the kept elements (`copy_from`), one DPU after another: DPU 0's bytes from each.
    return ports.Share(0, rep.timing.dpu_cycles_max,
                       (ports.Xfer("DPU_INPUT_ARGUMENTS", 8), ports.Xfer("A", per * 8)),
                       (ports.Xfer("DPU_RESULTS", TASKLETS * 4), ports.Xfer("B", copy_from(size, dpus)[0], "serial")))
