"""PrIM's TS (time-series analysis: STREAMP matrix profile of one query) as an EDSL kernel,
with its host split.

What PrIM's program does (CMU-SAFARI/prim-benchmarks, commit 9a1498f70b4383d1ad75d6ec5671e434f72a273a:
TS/dpu/task.c, host/app.c, support/common.h, support/params.h, Makefile, read here). The
Makefile sets NR_TASKLETS=16 and no BL, so common.h's BLOCK_SIZE is 256 bytes (BL 8); DTYPE
is int32, so a block and DOTPIP are 64 elements. The host (`-n` the series' length, `-m` the
query's) rounds the length up to a multiple of NR_DPUS * NR_TASKLETS * m, fills the series
and the query with `i % 127`, computes each subsequence's mean and standard deviation
(`compute_ts_statistics`, in doubles, truncated to int32; its variance subtracts the static
`AMean` before it is filled, i.e. 0, so "sigma" is the root mean square), and gives DPU i
`slice_per_dpu` = length / NR_DPUS subsequences. Each DPU's MRAM holds the query (m), then its
slice of the series, of the means and of the deviations (slice + m each, starting at
i * slice). The host writes `DPU_INPUT_ARGUMENTS` (7 x 4 B) with one `dpu_copy_to` per DPU,
then pushes the query, the series, the means and the deviations (`dpu_push_xfer`, all timed
as CPU-DPU), launches once (the "DPU Kernel" timer), and reads back `DPU_RESULTS` (16 x
{min value, min index, max value, max index}, 256 B) as DPU-CPU.
The DPU program: after a barrier, tasklet t takes subsequences [t * slice / 16, that +
slice / 16 - 1), capped at slice - m; for each run of 64 subsequences it zeroes 64 dot
products, and for each 64-element block of the query reads (`mram_read`, 256 B) the series
block, the block after it and the query block, and adds (`dot_product`) query[i] * series[j
+ i] into dot product j for i, j < 64 (from the second block where j + i > 63); then it reads
the 64 means and deviations and, for each subsequence, computes the distance
2 * (m - (dot - m * mean * query_mean) / (sigma * query_std)) (int32, C's truncating division)
and keeps the least one and its index; it stores them in its `DPU_RESULTS` entry.

What the workbook's `data_prep_param` is (VIA-Research/uPIMulator, commit
870d916334e9ff0b190f555f951a9ec3c4257781, read here): the series' length, PrIM's `-n`, with a
query of 64 elements. `golang/uPIMulator/src/assembler/prim/ts.go` takes
`DataPrepParams()[0]` as `ts_size` with `query_length = 64`, rounds it up to a multiple of
num_dpus * num_tasklets * 64 as PrIM's host does, and fills series and query with `i % 127`;
`tools/upmem_reg_model/src/benchmark/ts.py` counts the transfers with `query_length = 64`.
The workbook agrees: rows of 4,096 to 16,384 elements on 16 and 64 DPUs (rounded up to
1,024 a DPU) take the same time as 65,536 on 64 DPUs, and as 4,096 on 4.

Where this port differs from PrIM, and why:
  * `cache_TS_aux`'s blocks start one block into their buffer (64 unused elements before
    tasklet 0's), so that the subscript `j + i - 64` of PrIM's second-block branch, unsigned
    there, is seen to be never negative and carries no Python negative-index check.
  * The division is MLIR's `arith.divsi` (C's truncating int32 division), written in the
    EDSL's builder style: the EDSL's `//` is Python's floor division.
  * `DPU_INPUT_ARGUMENTS` are the kernel's scalar arguments and `DPU_RESULTS` an InOut WRAM
    array; MRAM is one int32 array laid out as PrIM's host writes it (query, series, means,
    deviations), offsets in elements where PrIM's are byte addresses.
  * (Not a difference, a note:) the host's arguments go by `dpu_copy_to`, one call per DPU,
    not by `dpu_push_xfer`: `Share.to_dpu` holds them first, as an `Xfer` of kind "serial"
    (28 B to each DPU in turn), then the four `dpu_push_xfer`s.
"""
from __future__ import annotations

import functools

import numpy as np
from mlir.dialects import arith

import edsl
from edsl import InOut, Input

from .. import ports

BENCHMARK = "TS"
SMALL = (4096, 64)

TASKLETS = 16            # NR_TASKLETS
BLOCK = 256              # BLOCK_SIZE, bytes (common.h's default: the Makefile sets no BL)
DOTPIP = BLOCK // 4      # int32 elements of a block
QUERY = 64               # the query's length (uPIMulator's; PrIM's -m)
MAX_DATA_VAL = 127
INT32_MAX = 2 ** 31 - 1


@edsl.dialect
def ts_dpu(results: InOut["memref<64xi32>"], mram: Input["memref<?xi32, MRAM>"], query_length: Input["i32"],
           query_mean: Input["i32"], query_std: Input["i32"], slice_per_dpu: Input["i32"]):
    cache_ts = edsl.wram_alloc(TASKLETS * DOTPIP, edsl.i32)
    cache_aux = edsl.wram_alloc(TASKLETS * DOTPIP + DOTPIP, edsl.i32)   # tasklet t's block at (t + 1) * 64
    cache_query = edsl.wram_alloc(TASKLETS * DOTPIP, edsl.i32)
    cache_mean = edsl.wram_alloc(TASKLETS * DOTPIP, edsl.i32)
    cache_sigma = edsl.wram_alloc(TASKLETS * DOTPIP, edsl.i32)
    cache_dot = edsl.wram_alloc(TASKLETS * DOTPIP, edsl.i32)
    t = edsl.tasklet_id()
    edsl.barrier()                                            # after tasklet 0's mem_reset
    part = slice_per_dpu // TASKLETS
    my_start = t * part
    my_end = my_start + part - 1
    if my_end > slice_per_dpu - query_length:
        my_end = slice_per_dpu - query_length
    ts_at = query_length + my_start                           # MRAM offsets, in elements
    mean_at = ts_at + slice_per_dpu + query_length
    sigma_at = mean_at + slice_per_dpu + query_length
    mine = t * DOTPIP
    aux = mine + DOTPIP
    min_distance = edsl.i32(INT32_MAX)
    min_index = edsl.i32(0)
    for i in range(my_start, my_end, DOTPIP):
        for d in range(mine, mine + DOTPIP):
            cache_dot[d] = 0
        ts_block = ts_at + (i - my_start)
        q_block = 0
        for j in range(query_length // DOTPIP):
            edsl.mram_read(mram, cache_ts, BLOCK, src_offset=ts_block, dst_offset=mine)
            edsl.mram_read(mram, cache_aux, BLOCK, src_offset=ts_block + DOTPIP, dst_offset=aux)
            edsl.mram_read(mram, cache_query, BLOCK, src_offset=q_block, dst_offset=mine)
            ts_block += DOTPIP
            q_block += DOTPIP
            for u in range(DOTPIP):                           # dot_product()
                for v in range(DOTPIP):
                    if v + u > DOTPIP - 1:
                        cache_dot[mine + v] += cache_aux[aux + v + u - DOTPIP] * cache_query[mine + u]
                    else:
                        cache_dot[mine + v] += cache_ts[mine + v + u] * cache_query[mine + u]
        edsl.mram_read(mram, cache_mean, BLOCK, src_offset=mean_at, dst_offset=mine)
        edsl.mram_read(mram, cache_sigma, BLOCK, src_offset=sigma_at, dst_offset=mine)
        mean_at += DOTPIP
        sigma_at += DOTPIP
        for k in range(DOTPIP):
            distance = 2 * (query_length - arith.divsi(
                cache_dot[mine + k] - query_length * cache_mean[mine + k] * query_mean,
                cache_sigma[mine + k] * query_std))
            if distance < min_distance:
                min_distance = distance
                min_index = i + k
    results[4 * t] = min_distance                             # DPU_RESULTS[t].minValue
    results[4 * t + 1] = min_index                            # .minIndex


# -- host -------------------------------------------------------------------------------------
def ts_length(n: int, dpus: int, m: int = QUERY) -> int:
    """PrIM's size adjustment: `n` rounded up to a multiple of dpus * NR_TASKLETS * m."""
    unit = dpus * TASKLETS * m
    return n if n % unit == 0 else n + unit - n % unit


def host_inputs(ts_size: int, m: int = QUERY):
    """PrIM's host arrays (series, query, means, deviations: int32, zeros past what the host
    fills, as its static arrays) and the query's mean and deviation."""
    pad = ts_size + 2 * m
    series = np.zeros(pad, np.int64)
    series[:ts_size] = np.arange(ts_size) % MAX_DATA_VAL
    query = np.arange(m) % MAX_DATA_VAL
    profile = ts_size - m
    cum = np.cumsum(series[:ts_size].astype(np.float64))
    sqcum = np.cumsum(series[:ts_size].astype(np.float64) ** 2)
    asum = np.concatenate([[cum[m - 1]], cum[m:] - cum[:-m]])[:profile]
    asumsq = np.concatenate([[sqcum[m - 1]], sqcum[m:] - sqcum[:-m]])[:profile]
    mean = np.zeros(pad, np.int64)
    sigma = np.zeros(pad, np.int64)
    mean[:profile] = np.trunc(asum / m)
    sigma[:profile] = np.trunc(np.sqrt(asumsq / m - 0.0))     # AMean is still 0 when read
    qmean = float(query.sum()) / m
    qstd = np.sqrt(float(((query - qmean) ** 2).sum()) / m)
    return series, query, mean, sigma, int(qmean), int(qstd)


def reference(series, query, mean, sigma, qmean, qstd, slice_per_dpu, d, m=QUERY):
    """Each tasklet's (min distance, min index) of DPU `d`, computed with NumPy as the DPU does."""
    base = d * slice_per_dpu
    part = slice_per_dpu // TASKLETS
    out = []
    for t in range(TASKLETS):
        start = t * part
        end = min(start + part - 1, slice_per_dpu - m)
        subs = np.array([i + k for i in range(start, end, DOTPIP) for k in range(DOTPIP)], np.int64)
        if len(subs) == 0:
            out.append((INT32_MAX, 0))
            continue
        g = base + subs
        windows = series[g[:, None] + np.arange(m)[None, :]]
        dot = windows @ query
        num = dot - m * mean[g] * qmean
        den = sigma[g] * qstd
        quot = np.sign(num) * (np.abs(num) // den)            # C's truncating division
        dist = 2 * (m - quot)
        j = int(np.argmin(dist))                              # the first least, as PrIM's `<`
        out.append((int(dist[j]), int(subs[j])))
    return out


def ts(n: int, dpus: int, dpu_ids=None, tasklets: int = TASKLETS, m: int = QUERY):
    """PrIM's TS on a series of `n` elements (rounded up as PrIM's host does) on `dpus` DPUs:
    each DPU run's tasklet results [(min, index)] checked against NumPy, and one Share each."""
    ts_size = ts_length(n, dpus, m)
    series, query, mean, sigma, qmean, qstd = host_inputs(ts_size, m)
    slice_per_dpu = ts_size // dpus
    shares, found = [], {}
    for d in range(dpus) if dpu_ids is None else dpu_ids:
        lo, hi = d * slice_per_dpu, (d + 1) * slice_per_dpu + m
        image = np.concatenate([query, series[lo:hi], mean[lo:hi], sigma[lo:hi]]).astype(np.int32)
        res = np.zeros(4 * TASKLETS, np.int32)
        rep = ts_dpu.run(res, image, m, qmean, qstd, slice_per_dpu, tasklets=tasklets, timing=True)
        got = [(int(res[4 * t]), int(res[4 * t + 1])) for t in range(TASKLETS)]
        want = reference(series, query, mean, sigma, qmean, qstd, slice_per_dpu, d, m)
        if got != want:
            raise AssertionError(f"TS {n} on {dpus} DPUs: DPU {d}'s result differs from NumPy: {got} != {want}")
        found[d] = got
        # TS/host/app.c: CPU-DPU (timer 1) is DPU_INPUT_ARGUMENTS (7 x 4 B) by dpu_copy_to, DPU
        # after DPU, then four dpu_push_xfers: the query, the series, the means, the deviations (slice + m
        # each); DPU-CPU (timer 3) is DPU_RESULTS, 16 x 16 B (and the host's merge of them).
        seg = (slice_per_dpu + m) * 4
        shares.append(ports.Share(d, rep.timing.dpu_cycles_max,
                                  (ports.Xfer("DPU_INPUT_ARGUMENTS", 28, kind="serial"),
                                   ports.Xfer("query", m * 4), ports.Xfer("tSeries", seg),
                                   ports.Xfer("AMean", seg), ports.Xfer("ASigma", seg)),
                                  (ports.Xfer("DPU_RESULTS", TASKLETS * 16),)))
    return found, shares


@functools.lru_cache(None)
def dpu0(size: int, dpus: int) -> ports.Share:
    """DPU 0's share of a workbook row (a series of `size` elements, query of 64, on `dpus`
    DPUs), run on the model and checked against NumPy (`ts` raises AssertionError). Every
    DPU gets a slice of the same length; DPU 0's values are PrIM's first slice."""
    _, (share,) = ts(size, dpus, dpu_ids=[0])
    return share
