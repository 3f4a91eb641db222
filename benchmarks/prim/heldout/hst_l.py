"""PrIM's HST-L (histogram, large: one shared histogram a DPU) DPU program as an EDSL kernel,
with its host's split.

What PrIM's program does (HST-L/dpu/task.c, HST-L/host/app.c): the host splits the image's
uint32 pixels over the DPUs as HST-S's host does (8-byte-aligned parts, the last DPU the
rest). On a DPU, with NR_HISTO = 1, the 16 tasklets share one histogram of `bins` words in
WRAM (tasklet 0's `mem_alloc`, its address handed on through `message[0]`): after a
barrier they clear it (tasklet t clears bins t, t + 16, ...), and after another each walks
blocks t, t + 16, ... of the DPU's pixels, reads a block into its own WRAM buffer and, per
pixel, computes the bin `(pixel * bins) >> DEPTH` and adds one to it between
`mutex_lock(my_mutex[0])` and `mutex_unlock` (one mutex for the whole histogram). After a
barrier tasklet t sums bin t, t + 16, ... over the NR_HISTO histograms (one) into the DPU's
histogram; after a last barrier tasklet 0 writes it to MRAM (one `mram_write` of
`bins * 4` bytes, at most 2,048). The host reads the DPUs' histograms and adds them. One
`dpu_launch`.

Read: CMU-SAFARI/prim-benchmarks 9a1498f (HST-L/ unchanged since its first commit
3de4b49): HST-L/dpu/task.c, HST-L/host/app.c, HST-L/support/common.h (`T uint32_t`, DEPTH
12), HST-L/support/params.h (256 bins), HST-L/Makefile (NR_TASKLETS 16, NR_HISTO 1, BL 8 by
default) and HST-L/run.sh (BL=10). Block size: 1,024 bytes (BL=10), as PrIM's run.sh and
uPIMulator's build of the program (VIA-Research/uPIMulator 870d916,
golang/uPIMulator/benchmark/HST-L/dpu/CMakeLists.txt: BL 10, NR_HISTO 1) set it; the
Makefile's default would be 256 bytes. uPIMulator's copy is the same program with
`histogram` marked noinline.

What data_prep_param means (uPIMulator 870d916: golang/uPIMulator/src/assembler/prim/hst_l.go,
python_cpp/uPIMulator_frontend/src/assembler/data_prep/hst_data_prep.py; the byte counts
of tools/upmem_reg_model/src/benchmark/hst_l.py agree): the image's pixels in all (strong
scaling, PrIM's `-x 1`), 4-byte each, into 256 bins. Pixel values: PrIM's host reads the
VanHateren image (12-bit values; its file holds 1,572,864 pixels, and `fread` past its end
leaves the last value repeated), uPIMulator draws uniform values below 4,096; here uniform
12-bit values from a seeded generator (as validation.py's HST-S: the 32-bit multiply by 256
bins takes 8.9 steps on average, the image's 9.0).

Where the port differs from PrIM, and why:
  * The mutex. The EDSL has no mutex (barriers are its only synchronisation: docs/language.md);
    it has atomic read-modify-writes on WRAM through the MLIR builder (`memref.atomic_rmw`).
    The nearest equivalent of `mutex_lock; histo[d] += 1; mutex_unlock` is an atomic add of 1
    to histo[d]; the estimate counts it as a load, an add and a store
    (edsl/lowering/counting.py). PrIM's critical section also issues the `acquire` (again
    and again while another tasklet holds the mutex) and the `release`, and it serialises
    the 16 tasklets: one tasklet at a time between acquire and release, each of its few
    instructions at most every 11 cycles. The estimate has no such serialisation: it
    counts issue slots and DMA as for a lock-free loop, so it is expected to be low for
    HST-L by about what the lock costs (the workbook's hardware times give HST-L about
    3.3 x HST-S's time a pixel).
  * The per-DPU barrier structures NR_HISTO makes (`barriers[]` initialised by tasklet 0,
    `barrier_wait(&barriers[0])`) are, with NR_HISTO = 1, barriers of all 16 tasklets:
    `edsl.barrier()`. `message[]` (the histograms' addresses) is not needed for one
    histogram: the merge reads the one buffer where PrIM loads its address from `message[0]`.
  * `mem_reset`/`mem_alloc` are static WRAM buffers (one block a tasklet, one histogram of
    MAX_BINS = 512 words), so bins <= 512 and one `mram_write` of at most 2,048 bytes
    writes it (PrIM's loop of 2,048-byte writes for more bins is ported, never reached).
  * An odd pixel count is padded to 8 bytes (PrIM's `input_size_8bytes`) and the last DPU
    counts the padding (uninitialised in PrIM's host, zeros here: bin 0).
  * Pixels are uint32 below 4,096 and bins at most 512: the product never reaches 2**31,
    so the EDSL's signed multiply and arithmetic shift give PrIM's unsigned bin.
"""
from __future__ import annotations

import functools

import numpy as np
from mlir.dialects import arith, memref

import edsl
from edsl import InOut, Input

from .. import ports

BENCHMARK = "HST-L"
SMALL = (65536, 4)           # 16,384 pixels a DPU: one 1,024-byte block a tasklet, four rounds

TASKLETS = 16                # NR_TASKLETS
NR_HISTO = 1
BLOCK = 1024                 # BLOCK_SIZE, bytes (BL=10)
I32 = BLOCK // 4             # pixels of a block
DEPTH = 12                   # pixel depth
BINS = 256                   # the workbook's histogram size (PrIM's default)
MAX_BINS = 512               # the histogram buffer, words (2 KiB of WRAM)
ARGS_BYTES = 16              # dpu_arguments_t: size, transfer_size, bins, kernel


@edsl.dialect
def hst_l_dpu(histo_out: InOut["memref<?xi32, MRAM>"], a: Input["memref<?xi32, MRAM>"],
              size_bytes: Input["i32"], bins: Input["i32"]):
    cache = edsl.wram_alloc(TASKLETS * I32, edsl.i32)
    histo = edsl.wram_alloc(MAX_BINS, edsl.i32)               # the DPU's one histogram (message[0])
    t = edsl.tasklet_id()
    edsl.barrier()                                            # my_barrier, after tasklet 0's set-up
    mine = t * I32
    edsl.barrier()                                            # barriers[0], after the histogram's mem_alloc
    for i in range(t, bins, TASKLETS // NR_HISTO):            # clear it
        histo[i] = 0
    edsl.barrier()
    for byte_index in range(t * BLOCK, size_bytes, TASKLETS * BLOCK):
        l_size = BLOCK
        if byte_index + BLOCK >= size_bytes:                  # PrIM's bound check
            l_size = size_bytes - byte_index
        edsl.mram_read(a, cache, l_size, src_offset=byte_index >> 2, dst_offset=mine)
        for j in range(mine, mine + (l_size >> 2)):           # histogram()
            d = (cache[j] * bins) >> DEPTH
            # mutex_lock(my_mutex[0]); histo[d] += 1; mutex_unlock(my_mutex[0]): an atomic add
            memref.atomic_rmw(arith.AtomicRMWKind.addi, edsl.i32(1), histo, [edsl.index(d)])
    edsl.barrier()
    for i in range(t, bins, TASKLETS):                        # merge the NR_HISTO histograms (one)
        b = 0
        for h in range(NR_HISTO):
            b += histo[h * MAX_BINS + i]
        histo[i] = b
    edsl.barrier()
    if t == 0:
        if bins * 4 <= 2048:
            edsl.mram_write(histo, histo_out, bins * 4)
        else:
            for off in range(0, (bins * 4) >> 11):
                edsl.mram_write(histo, histo_out, 2048, src_offset=off << 9, dst_offset=off << 9)


def pixels(size: int, seed: int = 0) -> np.ndarray:
    """`size` uniform 12-bit pixels (uint32), seeded."""
    return np.random.default_rng(seed).integers(0, 1 << DEPTH, size, dtype=np.uint32)


def hst_l(image: np.ndarray, bins: int, dpus: int, dpu_ids=None, tasklets: int = TASKLETS):
    """Per DPU run: its histogram of its part of `image` and its Share."""
    assert bins <= MAX_BINS and bins * 4 % 8 == 0
    per, sizes = ports._split_8bytes(len(image), dpus, 4)     # HST-L's host splits as HST-S's
    out = {}
    for d in range(dpus) if dpu_ids is None else dpu_ids:
        part = np.zeros(per, np.int32)
        part[:max(0, min(per, len(image) - d * per))] = image[d * per:d * per + per].view(np.int32)
        histo = np.zeros(max(bins, 2), np.int32)
        rep = hst_l_dpu.run(histo, part, sizes[d] * 4, bins, tasklets=tasklets, timing=True)
        # HST-L/host/app.c: CPU-DPU (timer 1) is DPU_INPUT_ARGUMENTS, then the DPU's pixels
        # (input_size_dpu_8bytes); DPU-CPU (timer 3) is the DPU's histogram (and the host's merge).
        share = ports.Share(d, rep.timing.dpu_cycles_max,
                            (ports.Xfer("DPU_INPUT_ARGUMENTS", ARGS_BYTES), ports.Xfer("A", per * 4)),
                            (ports.Xfer("histo", bins * 4),))
        out[d] = (histo[:bins].view(np.uint32), share, (d * per, d * per + sizes[d]))
    return out


@functools.lru_cache(None)
def dpu0(size: int, dpus: int) -> ports.Share:
    """DPU 0's share of a workbook row (`size` pixels, `dpus` DPUs), its histogram checked."""
    image = pixels(size)
    ((histo, share, (lo, hi)),) = hst_l(image, BINS, dpus, dpu_ids=[0]).values()
    want = np.bincount((image[lo:min(hi, size)].astype(np.int64) * BINS) >> DEPTH, minlength=BINS)
    want[0] += hi - min(hi, size)             # the zero pixels of PrIM's 8-byte padding (odd sizes)
    if not np.array_equal(histo, want):
        raise AssertionError(f"HST-L {size} on {dpus} DPUs: DPU 0's histogram differs from NumPy")
    return share
