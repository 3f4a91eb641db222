"""A DPU time estimate from what a program executed: the published DPU model.

Sources (each figure below names its own):
  [PrIM]  J. Gómez-Luna et al., "Benchmarking a New Paradigm: Experimental
          Analysis and Characterization of a Real Processing-in-Memory System",
          IEEE Access 10, 2022 (arXiv:2105.03814). Its text could not be opened
          here; its authors' slides could ("[PrIM] slide N": the slide deck
          Prim_Access22_Slides.pdf, cgiannoula/cgiannoula.github.io), whose
          figures are quoted in shared/reference/prim_figures.md.
  [uPIM]  B. Hyun et al., "Pathfinding Future PIM Architectures by
          Demystifying a Commercial PIM Technology", HPCA 2024
          (arXiv:2308.00846), and its simulator's defaults (uPIMulator,
          golang/uPIMulator/src/main.go).
  [SDK]   UPMEM SDK: its documentation ("DPU chip characteristics", the DPU
          Handbook) and its runtime library's source (syslib/, as shipped in
          VIA-Research/uPIMulator golang/uPIMulator/sdk).
  [vPIM]  raw logs of PrIM's programs on bare-metal UPMEM (SDK 2021.3.0, 16
          tasklets) in the artefact of D. Teguia et al., "vPIM: Processing-in-Memory
          Virtualization", Middleware 2024 (GitHub brisco007/vPIM 768b745,
          apps/vPrIM/single_results/native/ and full_results/native/).
  [ATiM]  real-hardware timings of a tiny PrIM-style GEMV at 1 and 128-2,048 DPUs
          (SDK 2021.3.0, DDR4-2400 PIM modules), pasted in GitHub yongwonshin/atim
          e06eb19, pim_test/upmem/preliminary_experiment.py.
  Both as quoted, with the arithmetic done on them, in the project's reference
  notes on launch and transfer fixed costs (launch_transfer_figures.md).

Each figure's source says whether it was re-read here (checked against a
retrieved text) or recalled (written down from the paper, whose text could
not be opened here).

The model, per DPU:
  * instruction issue: the 14-stage pipeline issues at most one instruction
    per cycle, and one tasklet at most one every 11 cycles [uPIM; PrIM
    slide 25: throughput saturates at 11 tasklets];
  * MRAM<->WRAM DMA: a transfer of n bytes blocks its tasklet for
    alpha + beta * n cycles, and the DPU's one DMA engine serves one transfer
    at a time [PrIM slide 30; checked on STREAM COPY-DMA, slide 33];
  * a tasklet waiting for its DMA leaves the pipeline [SDK DPU Handbook], so
    the tasklets cycle between the pipeline and the DMA engine: a closed
    queueing network, solved by mean-value analysis (`_overlap`), which
    lies between the larger of issue and DMA time and their sum;
  * DPU cycles are at least each of: the pipeline's throughput bound (all
    issue slots), the slowest tasklet's latency path (11 cycles per slot plus
    its DMA latency), the DMA engine's (every transfer's latency) and the
    mutex's: the slots tasklets issue holding a mutex (its lock and unlock
    too) are issued one tasklet at a time, each at most one every 11 cycles
    [SDK syslib/mutex.h: an acquire that waits for the mutex's bit; PrIM
    slide 50, Key Observation 11: mutexes limit the tasklets' scaling],
    as if all were of one mutex (PrIM's HST-L and BFS hold one);
  * a launch (`dpu_launch`, synchronous) takes a fixed time besides its DPUs'
    cycles, growing with the ranks it reaches [vPIM; ATiM];
  * a host<->MRAM transfer (one call of the host API) takes a fixed time, by
    direction, one from several DPUs more [PrIM slide 19; vPIM], and a time
    per byte that depends on its size [PrIM slide 19] and, by kind (serial,
    parallel, broadcast), on the DPUs it reaches [PrIM slide 20; from the
    DPUs, vPIM].
Issue slots per executed operation class come from `INSTRUCTION_COSTS`, the
DPU instruction cost table: one for the 32-bit operations the DPU has, the
runtime library's routine length for the rest, each entry with its source.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from ..base.errors import ArgumentError
from ..target.dpu import HELD, Ctx

if TYPE_CHECKING:
    from ..lowering.counting import CounterTable


@dataclass(frozen=True)
class Figure:
    value: float
    unit: str
    source: str


# -- The published figures: one table --------------------------------------------------------
def _recalled(source: str) -> str:
    """A source whose figure was written down from memory of the publication:
    its text could not be opened here to check it."""
    return f"{source} (recalled, not re-read)"



FIGURES: dict[str, Figure] = {
    "clock_v1a": Figure(350e6, "Hz", "[PrIM] slide 23: \"Up to 350 MHz\" (re-read); [SDK] DPU chip "
                        "characteristics: v1A nominal frequency 350 MHz (re-read); [uPIM] simulator default "
                        "logic_frequency=350"),
    "clock_v1b": Figure(400e6, "Hz", "[SDK] DPU chip characteristics: v1B nominal frequency 400 MHz (re-read)"),
    "pipeline_stages": Figure(14, "stages", "[PrIM] slide 23: \"14 pipeline stages\" (re-read); [uPIM] "
                              "simulator default num_pipeline_stages=14"),
    "revolver_cycles": Figure(11, "cycles",
                              "[uPIM] simulator default num_revolver_scheduling_cycles=11 (re-read): "
                              "a tasklet issues at most once every 11 cycles; [PrIM] slide 25, Key Observation "
                              "1: arithmetic throughput saturates at 11 or more tasklets"),
    # MRAM<->WRAM DMA latency = alpha + beta * size [PrIM slide 30].
    "mram_read_alpha": Figure(77, "cycles",
        _recalled("[PrIM] 3.2.1, Fig. 7: mram_read latency fit, alpha = 77 cycles (the slides give no alpha; a "
                  "secondary restatement agrees)")),
    "mram_write_alpha": Figure(61, "cycles",
        _recalled("[PrIM] 3.2.1, Fig. 7: mram_write latency fit, alpha = 61 cycles (as mram_read_alpha)")),
    "mram_beta": Figure(0.5, "cycles/B", "[PrIM] slide 30: \"beta equals 0.5 cycles/byte\", reads and writes; "
                        "theoretical 700 MB/s at 350 MHz (re-read)"),
    "mram_read_bw_2048": Figure(628.23e6, "B/s",
                                "[PrIM] slides 30/31: sustained mram_read bandwidth at 2,048 B, 1 tasklet (re-read)"),
    "mram_write_bw_2048": Figure(633.22e6, "B/s",
                                 "[PrIM] slides 30/31: sustained mram_write bandwidth at 2,048 B, 1 tasklet "
                                 "(re-read)"),
    # The DMA engine's throughput with many tasklets: STREAM COPY-DMA (mram_read then
    # mram_write of BL=10, 1,024 B, per block: CMU-SAFARI/prim-benchmarks
    # Microbenchmarks/STREAM/run.sh and dpu/copy.c), the top label of its curve.
    "stream_copy_dma": Figure(624.02e6, "B/s",
                              "[PrIM] slide 33: STREAM COPY-DMA on MRAM, INT64, 1 DPU, up to 16 tasklets "
                              "(re-read)"),
    # Arithmetic throughput at saturation (>= 11 tasklets), MOPS [PrIM 3.1.2, Fig. 4 labels].
    "int32_add": Figure(58.56e6, "OPS", _recalled("[PrIM] 3.1.2, Fig. 4(a): INT32 ADD")),
    "int32_sub": Figure(58.56e6, "OPS", _recalled("[PrIM] 3.1.2, Fig. 4(a): INT32 SUB")),
    "int32_mul": Figure(10.27e6, "OPS",
        _recalled("[PrIM] 3.1.2, Fig. 4(a): INT32 MUL (mul_step, 8x8 multiplier)")),
    "int32_mul_steps": Figure(21, "mul_step",
        "[SDK] syslib/mul32.c (as in VIA-Research/uPIMulator, golang/uPIMulator/sdk): __mulsi3 runs one "
        "mul_step per bit of the smaller operand; PrIM's code (CMU-SAFARI/prim-benchmarks 9a1498f, "
        "Microbenchmarks/Arithmetic-Throughput) multiplies rand() data by its elements per DPU, 1,048,576 "
        "(run.sh -i 1048576): 21 bits (re-read)"),
    "int32_div": Figure(11.27e6, "OPS", _recalled("[PrIM] 3.1.2, Fig. 4(a): INT32 DIV (div_step)")),
    "int64_add": Figure(50.16e6, "OPS", _recalled("[PrIM] 3.1.2, Fig. 4(b): INT64 ADD (add + addc)")),
    "int64_sub": Figure(50.16e6, "OPS", _recalled("[PrIM] 3.1.2, Fig. 4(b): INT64 SUB")),
    "int64_mul": Figure(2.56e6, "OPS", _recalled("[PrIM] 3.1.2, Fig. 4(b): INT64 MUL (software)")),
    "int64_div": Figure(1.40e6, "OPS", _recalled("[PrIM] 3.1.2, Fig. 4(b): INT64 DIV (software)")),
    "float_add": Figure(4.91e6, "OPS", _recalled("[PrIM] 3.1.2, Fig. 4(c): FLOAT ADD (no FPU: software)")),
    "float_sub": Figure(4.59e6, "OPS", _recalled("[PrIM] 3.1.2, Fig. 4(c): FLOAT SUB")),
    "float_mul": Figure(1.91e6, "OPS", _recalled("[PrIM] 3.1.2, Fig. 4(c): FLOAT MUL")),
    "float_div": Figure(0.34e6, "OPS", _recalled("[PrIM] 3.1.2, Fig. 4(c): FLOAT DIV")),
    "double_add": Figure(3.32e6, "OPS", _recalled("[PrIM] 3.1.2, Fig. 4(d): DOUBLE ADD")),
    "double_sub": Figure(3.11e6, "OPS", _recalled("[PrIM] 3.1.2, Fig. 4(d): DOUBLE SUB")),
    "double_mul": Figure(0.53e6, "OPS", _recalled("[PrIM] 3.1.2, Fig. 4(d): DOUBLE MUL")),
    "double_div": Figure(0.16e6, "OPS", _recalled("[PrIM] 3.1.2, Fig. 4(d): DOUBLE DIV")),
    # The loop of the arithmetic microbenchmark: 6 instructions for INT32 ADD
    # (address, load, add, store, increment, compare-and-branch) [PrIM 3.1.2, Fig. 4 discussion].
    "arith_loop_instructions": Figure(6, "instructions",
        _recalled("[PrIM] 3.1.2: the INT32 ADD loop compiles to 6 "
                                      "instructions, 350 MHz / 6 = 58.33 MOPS")),
    # Sustained WRAM bandwidth, STREAM on 64-bit integers, 16 tasklets [PrIM 3.1.3, Fig. 5 labels]:
    # calibration targets, not model inputs.
    "wram_copy": Figure(2818.98e6, "B/s", _recalled("[PrIM] 3.1.3, Fig. 5: WRAM STREAM COPY")),
    "wram_add": Figure(1682.46e6, "B/s", _recalled("[PrIM] 3.1.3, Fig. 5: WRAM STREAM ADD")),
    "wram_scale": Figure(42.03e6, "B/s",
        _recalled("[PrIM] 3.1.3, Fig. 5: WRAM STREAM SCALE (64-bit multiply)")),
    "wram_triad": Figure(61.66e6, "B/s",
        _recalled("[PrIM] 3.1.3, Fig. 5: WRAM STREAM TRIAD (64-bit multiply)")),
    # Host<->MRAM bandwidth of 32 MiB in all, 1 rank, at 64 DPUs: the five labels printed at
    # the curves' right ends [PrIM slide 20]. Which label is which curve: read from the
    # chart's drawing (HOST_DPU_CURVE below), where each label sits beside its curve's last
    # marker and agrees with it (benchmarks/prim/slides.py).
    "cpu_dpu_serial_rank": Figure(0.27e9, "B/s", "[PrIM] slide 20: CPU-DPU serial, 64 DPUs (re-read)"),
    "dpu_cpu_serial_rank": Figure(0.12e9, "B/s", "[PrIM] slide 20: DPU-CPU serial, 64 DPUs (re-read)"),
    "cpu_dpu_parallel_rank": Figure(6.68e9, "B/s", "[PrIM] slide 20: CPU-DPU parallel, 64 DPUs (re-read)"),
    "dpu_cpu_parallel_rank": Figure(4.74e9, "B/s", "[PrIM] slide 20: DPU-CPU parallel, 64 DPUs (re-read)"),
    "cpu_dpu_broadcast_rank": Figure(16.88e9, "B/s", "[PrIM] slide 20: CPU-DPU broadcast, 64 DPUs (re-read)"),
    # Fixed costs from real-hardware logs. Where [vPIM] and [ATiM] disagree, [vPIM] is
    # taken within a rank: it ran PrIM's own programs at 1 and 60 DPUs of one rank, as
    # the estimate's validation rows are (1-64 DPUs); [ATiM] ran a GEMV of its own at
    # 2-32 ranks and gives the growth beyond one.
    "launch_rank": Figure(0.272e-3, "s",
        "[vPIM] VA, RED, HST-S and SCAN-SSA at 1 and 60 DPUs (single_results/native/<BENCH>_1, _60): "
        "PrIM's programs, whose 'DPU' timers wrap dpu_launch(DPU_SYNCHRONOUS) alone; the intercept of "
        "each one's time against elements per DPU (0.333, 0.268, 0.435, 0.406 ms), less the estimate's "
        "own for its DPU program (its work besides the elements: 0.002, -0.002, 0.149, 0.000 ms), per "
        "launch (SCAN-SSA's two kernels: two): 0.331, 0.269, 0.285, 0.203 ms; their mean, derived from "
        "the logs (re-read). The spread, 0.20-0.33 ms, is the figure's uncertainty"),
    "launch_per_rank": Figure(6.5e-6, "s/rank",
        "[ATiM] section 3.3.3: near-empty launches take 0.180-0.192 ms at 512 DPUs (8 ranks) and "
        "0.320-0.360 ms at 2,048 (32 ranks): (0.34 - 0.185) ms / 24 ranks, derived from the logs (re-read)"),
    "dpu_cpu_call_rank": Figure(0.088e-3, "s",
        "[vPIM] DPU-CPU timers of PrIM's small retrievals (the 1 KB histograms of HST-S and HST-L, "
        "GEMV's results): 0.233-0.322 ms at 60 DPUs (mean 0.290), 0.183-0.212 ms at one DPU (HST-S, "
        "HST-L; mean 0.202): a DPU->CPU transfer from a rank's DPUs takes 0.088 ms more than from one, "
        "derived from the logs (re-read); [ATiM] agrees: 0.128-0.135 ms at one DPU, 0.212 at 128 (+0.081)"),
    "dpu_cpu_parallel_one": Figure(0.134e9, "B/s",
        "[vPIM] VA_1: PrIM's VA retrieving its 2,621,440 int32 results from one DPU, 82.35 and 74.57 ms "
        "in the two sets of native runs (0.127 and 0.141 GB/s), derived from the logs (re-read)"),
    "dpu_cpu_parallel_60": Figure(1.64e9, "B/s",
        "[vPIM] VA_60: the same from 60 DPUs of one rank, 6.320 and 6.481 ms (1.66 and 1.62 GB/s; VA_64 "
        "of full_results, 2.6 M elements a DPU: 1.54), derived from the logs (re-read)"),
}

DPUS_PER_RANK = 64  # [PrIM] 2.1: a rank of 8 chips x 8 DPUs

DEFAULT_CLOCK_HZ = FIGURES["clock_v1a"].value
CLOCK_ENV = "EDSL_DPU_CLOCK_MHZ"    # the clock launch reports use, in MHz (default 350)
REVOLVER = int(FIGURES["revolver_cycles"].value)
ALPHA_READ = FIGURES["mram_read_alpha"].value
ALPHA_WRITE = FIGURES["mram_write_alpha"].value
BETA = FIGURES["mram_beta"].value


def _routine(op: str) -> float:
    """Issue slots of one `op` (a key of FIGURES) from PrIM's throughput of its
    loop: the INT32 ADD loop's instructions but the add, so at saturation (one
    instruction per cycle) f / throughput = (loop - 1) + slots(op)."""
    return DEFAULT_CLOCK_HZ / FIGURES[op].value - (FIGURES["arith_loop_instructions"].value - 1)


@dataclass(frozen=True)
class Cost:
    """Issue slots of one executed operation of a class, and where the number comes from."""
    slots: float
    source: str


def _from_figure(op: str, what: str) -> Cost:
    return Cost(_routine(op), f"{what}: PrIM's {op} throughput less its loop ({FIGURES[op].source})")


# -- The DPU instruction cost table ---------------------------------------------------------
# One entry per operation class the counting pass (edsl.lowering.counting)
# records per executed block: the issue slots one such operation takes on the
# DPU, and the source of that number. The DPU is a 32-bit core without FPU:
# what it has costs one instruction; the rest is a routine of the runtime
# library (UPMEM SDK syslib/), whose length is read from its source where it
# is a straight sequence, else from PrIM's throughput of the operation.
_MULSI3 = ("[SDK] syslib/mul32.c __mulsi3 (re-read): jgtu and two moves to order the operands, a move to "
           "clear the product, one mul_step per bit of the smaller operand (ending at the step that leaves "
           "it zero), a move of the result; with the call and the return")
_MUTEX = ("[SDK] syslib/mutex.h (as in VIA-Research/uPIMulator golang/uPIMulator/sdk, re-read): "
          "inline assembly")
_ISA = ("[SDK] DPU ISA (its op codes, as uPIMulator implements them: VIA-Research/uPIMulator "
        "golang/uPIMulator/src/linker/kernel/instruction/op_code.go, re-read)")
INSTRUCTION_COSTS: dict[str, Cost] = {
    "alu": Cost(1, _ISA + ": one 32-bit ALU instruction (indices and addresses are 32-bit on the DPU)"),
    "alu64": Cost(2, "[SDK] DPU Handbook 2.1.2: 64-bit values live in register pairs of the 32-bit core; "
                     "an add is add + addc (" + _ISA + "); PrIM's INT64 ADD loop is one instruction longer "
                     "than INT32's (its 50.16 vs 58.56 MOPS, recalled)"),
    # __mulsi3 as a fixed part and its steps: the counting pass adds the steps of
    # each multiply at run time (`mul32_step`), from its operands.
    "mul32": Cost(7, _MULSI3 + ": 3 + 1 + 1 + 2 instructions besides the steps"),
    "mul32_step": Cost(1, _MULSI3 + ": one mul_step"),
    "div32": _from_figure("int32_div", "__divsi3 (div_step per quotient bit)"),
    "mul64": _from_figure("int64_mul", "__muldi3"),
    "div64": _from_figure("int64_div", "__divdi3"),
    "fadd32": _from_figure("float_add", "__addsf3"),
    "fsub32": _from_figure("float_sub", "__subsf3"),
    "fmul32": _from_figure("float_mul", "__mulsf3"),
    "fdiv32": _from_figure("float_div", "__divsf3"),
    "fadd64": _from_figure("double_add", "__adddf3"),
    "fsub64": _from_figure("double_sub", "__subdf3"),
    "fmul64": _from_figure("double_mul", "__muldf3"),
    "fdiv64": _from_figure("double_div", "__divdf3"),
    # Not measured by PrIM (assumptions, stated): a float compare or a
    # conversion costs a float subtraction's routine; a math-library function
    # (exp, log, sqrt, ...) ten float multiplies and ten adds.
    "fcmp32": Cost(_routine("float_sub"), "assumption: as __subsf3 (PrIM's FLOAT SUB, recalled)"),
    "fcmp64": Cost(_routine("double_sub"), "assumption: as __subdf3 (PrIM's DOUBLE SUB, recalled)"),
    "fconv": Cost(_routine("float_sub"), "assumption: as __subsf3 (PrIM's FLOAT SUB, recalled)"),
    "math": Cost(10 * (_routine("float_mul") + _routine("float_add")),
                 "assumption: ten float multiplies and ten adds (PrIM's FLOAT MUL and ADD, recalled)"),
    "load": Cost(1, _ISA + ": lw/ld, one instruction for any width up to 64 bits"),
    "store": Cost(1, _ISA + ": sw/sd, one instruction for any width up to 64 bits"),
    "address": Cost(1, _ISA + ": lsl_add, an address with a run-time index"),
    "branch": Cost(1, _ISA + ": a conditional jump compares and branches in one instruction (jgtu, jneq, ...; "
                      "__mulsi3 uses them)"),
    "call": Cost(2, _ISA + ": call r23 and jump r23, the return (as __mulsi3's callers and __udiv32 do)"),
    "dma": Cost(3, "assumption: ldma/sdma and the set-up of its two addresses (its latency is the DMA "
                   "model's)"),
    "sync": Cost(4, "assumption: a barrier's few instructions around the wait"),
    "mutex_lock": Cost(1, _MUTEX + ": mutex_lock is one acquire (taken: it then jumps on; a waiting tasklet's "
                          "retries are its own slots)"),
    "mutex_unlock": Cost(1, _MUTEX + ": mutex_unlock is one release"),
    "mutex_trylock": Cost(2, _MUTEX + ": mutex_trylock is an acquire and a move"),
}
ISSUE_SLOTS: dict[str, float] = {k: float(c.slots) for k, c in INSTRUCTION_COSTS.items()}


# -- Host transfers -------------------------------------------------------------------------
# PrIM's CPU-DPU microbenchmark (CMU-SAFARI/prim-benchmarks 9a1498f, Microbenchmarks/CPU-DPU:
# run.sh and host/app.c, re-read) moves `-i` uint64 elements in all, split evenly over the
# NR_DPUS DPUs of one rank, by one `dpu_copy_to` per DPU (serial), one `dpu_push_xfer`
# (parallel) or one `dpu_broadcast_to` of a DPU's share (broadcast), with 5 warm-up and 20
# timed repetitions, and prints (elements * 8) / time in GB/s (10^9 B/s): the bytes all the
# DPUs receive or give back, a broadcast's counted once per DPU. Slides 18-20 of [PrIM]
# show what "a microbenchmark" measured on UPMEM SDK 2021.1.1, over run.sh's very ranges
# (8 B to 32 MiB on 1 DPU, 32 MiB on 1 to 64 DPUs): taken to be this one. But for slide
# 20's five 64-DPU points the two charts carry no data labels. Their
# points are read here from the charts' vector drawing in the slides' PDF (each marker's
# centre against the axis gridlines; benchmarks/prim/slides.py reads them again and compares
# with the tables below). Read this way, slide 20's 64-DPU points agree with the labels
# printed beside them (FIGURES "*_rank"): the parallel and broadcast ones within 0.4 %, the
# serial ones round to theirs (0.2727 and 0.1156 to 0.27 and 0.12).
HOST_SIZES = tuple(8 * 4 ** k for k in range(12))      # 8 B ... 32 MiB (run.sh: -i 1 ... 4194304)
HOST_SIZE_CURVE: dict[str, tuple[float, ...]] = {
    # GB/s of one transfer of HOST_SIZES[i] bytes to or from one DPU: [PrIM] slide 19
    # ("1 DPU: variable CPU-DPU and DPU-CPU transfer size (8 bytes to 32 MB)"), read from the
    # chart. The CPU->DPU rate peaks at 512 KiB-2 MiB (0.61-0.66) and falls to 0.33 at 32 MiB.
    "to_dpu": (0.0001549, 0.0006519, 0.002788, 0.01005, 0.03687, 0.1046, 0.2038, 0.2969, 0.6088,
               0.6615, 0.3837, 0.3346),
    "from_dpu": (0.0001549, 0.0006631, 0.002788, 0.009072, 0.02757, 0.05279, 0.07306, 0.08817,
                 0.1179, 0.1220, 0.1227, 0.1220),
}
HOST_DPUS = (1, 2, 4, 8, 16, 32, 64)
HOST_RANK_BYTES = 4194304 * 8      # slide 20's transfers: -i 4194304 uint64 in all (run.sh's largest)
HOST_DPU_CURVE: dict[tuple[str, str], tuple[float, ...]] = {
    # GB/s of 32 MiB in all to or from HOST_DPUS[i] DPUs of one rank: [PrIM] slide 20 ("1 rank:
    # 32 MB CPU-DPU and DPU-CPU transfers to/from a set of 1 to 64 MRAM banks", slide 18), read
    # from the chart; the 64-DPU points' printed labels are 0.27, 0.12, 6.68, 4.74 and 16.88.
    ("serial", "to_dpu"): (0.3311, 0.3346, 0.3311, 0.3311, 0.3020, 0.2990, 0.2727),
    ("serial", "from_dpu"): (0.1216, 0.1216, 0.1216, 0.1216, 0.1156, 0.1156, 0.1156),
    ("parallel", "to_dpu"): (0.3311, 0.5409, 0.7350, 0.8745, 1.807, 4.221, 6.686),
    ("parallel", "from_dpu"): (0.1229, 0.2246, 0.4232, 0.6305, 1.503, 3.170, 4.723),
    ("broadcast", "to_dpu"): (0.3324, 0.6695, 1.355, 2.555, 5.067, 10.15, 16.86),
}
_DIRECTIONS = ("to_dpu", "from_dpu")
_KINDS = ("serial", "parallel", "broadcast")


def _loglog(x: float, xs: Sequence[float], ys: Sequence[float]) -> float:
    """ys at x, piecewise linear in log-log between the points (xs increasing, x within them)."""
    i = min(max(int(np.searchsorted(xs, x, side="right")) - 1, 0), len(xs) - 2)
    f = math.log(x / xs[i]) / math.log(xs[i + 1] / xs[i])
    y = math.exp(math.log(ys[i]) * (1 - f) + math.log(ys[i + 1]) * f)
    return min(max(y, min(ys[i], ys[i + 1])), max(ys[i], ys[i + 1]))   # (between them, rounding aside)


def _size_times(direction: str) -> tuple[float, ...]:
    """Seconds of slide 19's transfers at HOST_SIZES, each at least the one before: its
    8-128-byte points (46-52 us) are equal within the reading's noise, and a larger
    transfer is taken never to be faster than a smaller one."""
    times = [size / (gbs * 1e9) for size, gbs in zip(HOST_SIZES, HOST_SIZE_CURVE[direction])]
    return tuple(np.maximum.accumulate(times).tolist())


_SIZE_TIMES = {d: _size_times(d) for d in _DIRECTIONS}
# The fixed time of one host transfer: slide 19's smallest, 8 bytes to or from one DPU
# (0.0001549 GB/s, 51.6 us; the same point for both directions). What a transfer takes
# beyond it is its time per byte.
HOST_CALL_SECONDS = _SIZE_TIMES["to_dpu"][0]
# What a DPU->CPU transfer from a whole rank takes more [vPIM]: taken to grow with the
# log of the DPUs (an assumption: the sources give 1 and 60 DPUs; [ATiM]'s 128-2,048
# grow by a log's steps) and to stop at one rank, the SDK running ranks in parallel.
FROM_RANK_SECONDS = FIGURES["dpu_cpu_call_rank"].value
# DPU->CPU parallel transfers of PrIM's programs [vPIM]: a power law through its 1- and
# 60-DPU rates (0.134 and 1.64 GB/s). [PrIM] slide 20's microbenchmark gives 4.7 GB/s at
# 64 DPUs; PrIM's VA retrieving its results got 1.5-1.7 at 60-64, and its programs are
# what the estimate is checked on.
_FROM_ONE = FIGURES["dpu_cpu_parallel_one"].value
_FROM_EXPONENT = math.log(FIGURES["dpu_cpu_parallel_60"].value / _FROM_ONE) / math.log(60)


def _check(kind: str, direction: str) -> None:
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction must be 'to_dpu' or 'from_dpu', not {direction!r}")
    if kind not in _KINDS:
        raise ValueError(f"transfer kind must be serial, parallel or broadcast, not {kind!r}")
    if kind == "broadcast" and direction == "from_dpu":
        raise ValueError("a broadcast goes to the DPUs only (the SDK's dpu_broadcast_to)")


def one_dpu_seconds(direction: str, nbytes: float) -> float:
    """Seconds of one transfer of `nbytes` to or from one DPU [PrIM slide 19]: log-log
    between the chart's sizes; the 8-byte time below them, the 32 MiB rate beyond."""
    _check("serial", direction)
    times = _SIZE_TIMES[direction]
    if nbytes <= HOST_SIZES[0]:
        return times[0]
    if nbytes >= HOST_SIZES[-1]:
        return times[-1] * nbytes / HOST_SIZES[-1]
    return _loglog(nbytes, HOST_SIZES, times)


def call_seconds(direction: str, dpus: int = 1) -> float:
    """The fixed time of one call of the host API moving data to or from `dpus` DPUs:
    slide 19's at one DPU; from several, up to FROM_RANK_SECONDS more."""
    within = min(max(int(dpus), 1), DPUS_PER_RANK)
    if direction == "to_dpu" or within == 1:
        return HOST_CALL_SECONDS
    return HOST_CALL_SECONDS + FROM_RANK_SECONDS * min(math.log(within) / math.log(60), 1.0)


def launch_seconds(dpus: int) -> float:
    """The fixed time of a synchronous launch on `dpus` DPUs besides their cycles [vPIM],
    and [ATiM]'s growth for each rank beyond the first (0 for no DPU)."""
    if dpus < 1:
        return 0.0
    ranks = -(-int(dpus) // DPUS_PER_RANK)
    return FIGURES["launch_rank"].value + FIGURES["launch_per_rank"].value * (ranks - 1)


def host_bandwidth(kind: str, direction: str, dpus: int) -> float:
    """Bytes/s of 32 MiB in all moved by a host<->MRAM transfer of `kind` ('serial',
    'parallel', 'broadcast') to/from `dpus` DPUs of one rank [PrIM slide 20], log-log
    between the chart's DPU counts; a parallel one from the DPUs, [vPIM]'s rates of
    PrIM's programs (_FROM_EXPONENT). A broadcast's bytes are those all the DPUs receive.
    Beyond a rank, an assumption: a serial transfer keeps one rank's rate (one DPU after
    another); parallel and broadcast ones scale with the ranks, as the SDK runs a set's
    ranks in parallel threads ([SDK] "Advanced Features of the Host API", Multiple Ranks
    Transfer: "the toolchain uses threads to perform such operations in parallel"; PrIM
    found SDK 2021.1.1 parallelizing "only within the same rank", slide 18)."""
    _check(kind, direction)
    curve = HOST_DPU_CURVE[(kind, direction)]
    dpus = max(int(dpus), 1)
    within = min(dpus, DPUS_PER_RANK)
    if (kind, direction) == ("parallel", "from_dpu"):
        rank = _FROM_ONE * within ** _FROM_EXPONENT
    else:
        rank = _loglog(within, HOST_DPUS, curve) * 1e9
    return rank * (1 if kind == "serial" or dpus <= DPUS_PER_RANK else dpus / DPUS_PER_RANK)


def transfer_seconds(kind: str, direction: str, nbytes: float, dpus: int = 1) -> float:
    """Seconds of one host<->MRAM transfer of `kind` between the host and `dpus` DPUs:
    `nbytes` in all for serial and parallel ones, and for a broadcast the bytes each DPU
    gets. It is a fixed time per call of the host API (`call_seconds`; a serial transfer
    makes one call per DPU) and the per-byte time of one DPU's transfer of the same size in
    all [PrIM slide 19], scaled by how much faster that many DPUs move 32 MiB than one DPU
    does (`host_bandwidth`). Assumptions, stated: that slide 19's dependence on the size (the
    fixed time amortized, and the CPU->DPU rate's rise to 0.66 GB/s at 2 MiB and fall to
    0.33 at 32 MiB, as if the host's caches held the smaller buffers) carries over to
    several DPUs as a function of the bytes moved in all, and that slide 20's ratios (at
    32 MiB) hold at every size. At one DPU this is slide 19's time, at 32 MiB slide 20's
    (within the two charts' 1 % disagreement at their common point, 1 DPU and 32 MiB)."""
    _check(kind, direction)
    if nbytes <= 0:
        return 0.0
    dpus = max(int(dpus), 1)
    moved = nbytes * dpus if kind == "broadcast" else nbytes
    calls = dpus if kind == "serial" else 1
    # Slide 20's time of 32 MiB on `dpus` DPUs less its calls' fixed times, relative to one
    # DPU's. A serial transfer's time at `within` DPUs holds `within` calls; beyond a rank it
    # goes on at one rank's rate.
    within = min(dpus, DPUS_PER_RANK) if kind == "serial" else dpus
    per_byte_rank = HOST_RANK_BYTES / host_bandwidth(kind, direction, within) - (
        within if kind == "serial" else 1) * HOST_CALL_SECONDS
    per_byte_one = HOST_RANK_BYTES / host_bandwidth(kind, direction, 1) - HOST_CALL_SECONDS
    per_byte = max(one_dpu_seconds(direction, moved) - HOST_CALL_SECONDS, 0.0)
    return calls * call_seconds(direction, 1 if kind == "serial" else dpus) + per_byte * per_byte_rank / per_byte_one


@dataclass(frozen=True)
class HostTransfer:
    """One host<->MRAM transfer (one call of the host API, or for a serial one a call
    per DPU) between the host and `dpus` DPUs: `nbytes` in all, or for a broadcast the
    bytes every DPU gets."""
    kind: str          # serial | parallel | broadcast
    direction: str     # to_dpu | from_dpu
    nbytes: int
    dpus: int = 1

    @property
    def seconds(self) -> float:
        return transfer_seconds(self.kind, self.direction, self.nbytes, self.dpus)


def launch_transfers(need_in: Sequence[int], need_out: Sequence[int], in_bytes: int) -> list[HostTransfer]:
    """The host<->MRAM transfers around a launch: DPU d receives `need_in[d]`
    bytes (its parts of the arrays) and gives back `need_out[d]`; `in_bytes`
    is every array's bytes. Assumptions, stated: the inputs go in one
    transfer and the outputs in one, each paying one fixed time
    (`transfer_seconds`); one DPU is served serially; several get one
    broadcast when each needs every byte, else a parallel transfer, which
    moves the same size to each DPU (the largest need), as the SDK's
    `dpu_push_xfer` does."""
    dpus = len(need_in)
    need_in, need_out = [int(b) for b in need_in], [int(b) for b in need_out]
    if dpus == 0:
        return []
    if dpus == 1:
        return [HostTransfer("serial", "to_dpu", need_in[0]), HostTransfer("serial", "from_dpu", need_out[0])]
    if in_bytes > 0 and all(n == in_bytes for n in need_in):
        into = HostTransfer("broadcast", "to_dpu", in_bytes, dpus)
    else:
        into = HostTransfer("parallel", "to_dpu", dpus * max(need_in), dpus)
    return [into, HostTransfer("parallel", "from_dpu", dpus * max(need_out), dpus)]


# -- What one tasklet executed, and the estimate ----------------------------------------------
@dataclass
class TaskletWork:
    """One tasklet's executed operations (class -> count) and DMA transfers."""
    ops: Mapping[str, float] = field(default_factory=dict)
    dma_reads: int = 0
    dma_read_bytes: int = 0
    dma_writes: int = 0
    dma_write_bytes: int = 0

    def issue_slots(self) -> float:
        return sum(slots_of(k) * n for k, n in self.ops.items())

    def held_slots(self) -> float:
        """The slots it issued holding a mutex."""
        return sum(slots_of(k) * n for k, n in self.ops.items() if k.startswith(HELD))

    def dma_latency(self) -> float:
        return _dma_latency(self.dma_reads, self.dma_writes, self.dma_bytes)

    @property
    def dma_bytes(self) -> int:
        return self.dma_read_bytes + self.dma_write_bytes


def slots_of(cls: str) -> float:
    """The issue slots of one operation of class `cls` (HELD + a class: the class's)."""
    try:
        return ISSUE_SLOTS[cls.removeprefix(HELD)]
    except KeyError:
        raise ValueError(f"unknown operation class {cls!r}") from None


def _dma_latency(reads, writes, nbytes):
    """Cycles of `reads` + `writes` MRAM<->WRAM transfers of `nbytes` in all
    (numbers, or arrays of them): alpha per transfer, beta per byte."""
    return reads * ALPHA_READ + writes * ALPHA_WRITE + BETA * nbytes


@dataclass(frozen=True)
class DpuCycles:
    """One DPU's estimate: total cycles, and each part alone."""
    cycles: float
    issue: float       # the instruction stream alone (pipeline and revolver bounds)
    dma: float         # the DMA transfers alone: the DMA engine's busy time


def _overlap(tasklets: int, slots: np.ndarray, transfers: np.ndarray, latency: np.ndarray) -> np.ndarray:
    """Cycles of `tasklets` tasklets, each issuing `slots` and waiting `latency`
    for its `transfers` DMA transfers, taken as alternating evenly between the
    two: a closed queueing network of two stations, solved by mean-value
    analysis (exact MVA over the tasklet count). A tasklet waiting for its DMA
    leaves the pipeline (UPMEM DPU Handbook: "threads issuing DMA instructions
    are temporarily removed from the pipeline"), so while transfers queue at
    the DMA engine fewer than 11 tasklets may be left to issue. The pipeline
    is 11 servers each issuing one instruction every 11 cycles (the revolver),
    taken as one server of `c` cycles a visit and a delay of 10 * c
    (Seidmann's approximation of a multi-server station); the DMA engine is
    one server of a transfer's latency. Exponential service times, as MVA
    assumes, make the queues somewhat longer than the DPU's regular ones.
    Element-wise over DPUs (the arguments' entries); 0 where no transfer."""
    moving = transfers > 0
    if tasklets < 1 or not moving.any():
        return np.zeros_like(slots, dtype=float)
    per = np.where(moving, transfers, 1.0)
    c, d = slots / per, latency / per       # per visit: slots before a transfer, its latency
    queued_pipe = queued_dma = np.zeros_like(c)
    for n in range(1, tasklets + 1):
        at_pipe = c * (1 + queued_pipe) + (REVOLVER - 1) * c
        at_dma = d * (1 + queued_dma)
        visits_per_cycle = n / (at_pipe + at_dma)
        queued_pipe, queued_dma = visits_per_cycle * c * (1 + queued_pipe), visits_per_cycle * at_dma
    return np.where(moving, tasklets * per / visits_per_cycle, 0.0)


def _dpus_cycles(slots: np.ndarray, latency: np.ndarray, transfers: np.ndarray,
                 held: np.ndarray) -> list[DpuCycles]:
    """Cycles of DPUs whose tasklet t issued `slots[d, t]` (`held[d, t]` of
    them holding a mutex), waited `latency[d, t]` for DMA and made
    `transfers[d, t]` transfers."""
    if slots.shape[1] == 0:
        return [DpuCycles(0.0, 0.0, 0.0) for _ in range(slots.shape[0])]
    pipeline = slots.sum(axis=1)
    critical = (REVOLVER * slots + latency).max(axis=1)
    serial = REVOLVER * held.sum(axis=1)          # (one tasklet at a time holds the mutex)
    # One DMA engine serves one transfer at a time, for its whole latency: 16
    # tasklets of STREAM COPY-DMA (1,024-byte read then write) then move
    # 2,048 B per 77 + 61 + 1,024 cycles, 617 MB/s at 350 MHz, where PrIM
    # measured 624.02 (FIGURES["stream_copy_dma"]; beta alone would give 700).
    engine = latency.sum(axis=1)
    n = slots.shape[1]
    overlap = _overlap(n, pipeline / n, transfers.sum(axis=1) / n, engine / n)
    issue = np.maximum.reduce([pipeline, REVOLVER * slots.max(axis=1), serial])
    cycles = np.maximum.reduce([pipeline, critical, engine, overlap, serial])
    return [DpuCycles(float(c), float(i), float(e)) for c, i, e in zip(cycles, issue, engine)]


def dpu_cycles(tasklets: Sequence[TaskletWork]) -> DpuCycles:
    """Cycles of one DPU running `tasklets` (see the module docstring)."""
    slots = np.array([[t.issue_slots() for t in tasklets]], dtype=float)
    latency = np.array([[t.dma_latency() for t in tasklets]], dtype=float)
    transfers = np.array([[t.dma_reads + t.dma_writes for t in tasklets]], dtype=float)
    held = np.array([[t.held_slots() for t in tasklets]], dtype=float)
    return _dpus_cycles(slots, latency, transfers, held)[0]


@dataclass(frozen=True)
class TimingEstimate:
    """The estimated time of one launch on UPMEM hardware. Cycles do not
    depend on the clock; `at(hz)` gives the same estimate at another one."""
    clock_hz: float
    dpu_cycles_max: float
    dpu_cycles_mean: float
    issue_cycles: float          # of the slowest DPU, its instruction stream alone
    dma_cycles: float            # of the slowest DPU, its MRAM<->WRAM transfers alone
    host_seconds: Mapping[str, float]   # by transfer: 'to_dpu/broadcast', ...
    per_dpu_cycles: tuple[float, ...] = ()
    executed_ops: Mapping[str, int] = field(default_factory=dict)   # by class, whole launch
    launch_seconds: float = 0.0  # the launch's fixed time besides the DPUs' cycles (`launch_seconds`)

    @property
    def dpu_seconds(self) -> float:
        return self.dpu_cycles_max / self.clock_hz

    @property
    def issue_seconds(self) -> float:
        return self.issue_cycles / self.clock_hz

    @property
    def dma_seconds(self) -> float:
        return self.dma_cycles / self.clock_hz

    @property
    def seconds(self) -> float:
        """The launch (its fixed time and the DPUs') plus host<->MRAM transfers (done before
        and after the kernel)."""
        return self.launch_seconds + self.dpu_seconds + sum(self.host_seconds.values())

    def at(self, clock_hz: float) -> "TimingEstimate":
        """This estimate at a DPU clock of `clock_hz`."""
        return replace(self, clock_hz=_positive_clock(clock_hz))

    def summary(self) -> str:
        host = ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in self.host_seconds.items() if v) or "none"
        return (f"DPU {self.dpu_cycles_max:,.0f} cycles max, {self.dpu_cycles_mean:,.0f} mean "
                f"({self.dpu_seconds * 1e3:.3f} ms at {self.clock_hz / 1e6:g} MHz; issue "
                f"{self.issue_cycles:,.0f}, DMA {self.dma_cycles:,.0f} cycles); launch "
                f"{self.launch_seconds * 1e3:.3f} ms; host {host}; "
                f"total {self.seconds * 1e3:.3f} ms")


def _positive_clock(clock_hz: float) -> float:
    if not clock_hz > 0:
        raise ValueError(f"clock must be positive, not {clock_hz!r} Hz")
    return float(clock_hz)


def clock_hz() -> float:
    """The DPU clock of launch reports: $EDSL_DPU_CLOCK_MHZ, else 350 MHz."""
    text = os.environ.get(CLOCK_ENV, "").strip()
    if not text:
        return DEFAULT_CLOCK_HZ
    try:
        mhz = float(text)
    except ValueError:
        mhz = float("nan")
    if not mhz > 0 or math.isinf(mhz):
        raise ArgumentError(f"{CLOCK_ENV}={text!r}: the DPU clock must be a positive number of MHz")
    return mhz * 1e6


def estimate(dpus: Sequence[Sequence[TaskletWork]], transfers: Sequence[HostTransfer] = (),
             clock_hz: float = DEFAULT_CLOCK_HZ) -> TimingEstimate:
    """The estimate of a launch: `dpus[d][t]` is what tasklet t of DPU d did."""
    ops: dict[str, float] = {}
    for ts in dpus:
        for t in ts:
            for k, n in t.ops.items():
                ops[k] = ops.get(k, 0) + n
    return _estimate([dpu_cycles(ts) for ts in dpus], transfers, clock_hz, ops)


def _estimate(per: Sequence[DpuCycles], transfers: Sequence[HostTransfer], clock_hz: float,
              ops: Mapping[str, float]) -> TimingEstimate:
    """The estimate of a launch whose DPUs take `per` and that executed `ops`."""
    clock_hz = _positive_clock(clock_hz)
    worst = max(per, key=lambda c: c.cycles, default=DpuCycles(0.0, 0.0, 0.0))
    host: dict[str, float] = {}
    for t in transfers:
        key = f"{t.direction}/{t.kind}"
        host[key] = host.get(key, 0.0) + t.seconds
    cycles = tuple(c.cycles for c in per)
    return TimingEstimate(clock_hz, worst.cycles, sum(cycles) / len(cycles) if cycles else 0.0,
                          worst.issue, worst.dma, host, cycles, dict(ops), launch_seconds(len(cycles)))


def launch_estimate(table: CounterTable, counters: np.ndarray, ctx: np.ndarray, need_in: Sequence[int],
                    need_out: Sequence[int], in_bytes: int) -> TimingEstimate:
    """The estimate of a launch of the DPU model, at `clock_hz()`: `counters`
    [dpu, tasklet, >= table.counters] are its executed-block counters, `ctx`
    [dpu, tasklet, slot] its tasklets' contexts (DMA by direction), and
    the host's transfers as `launch_transfers` takes them."""
    classes = sorted(table.ops)
    per_block = np.array([table.ops[c] for c in classes], dtype=np.int64).reshape(len(classes), table.counters)
    executed = counters[..., :table.counters] @ per_block.T          # [dpu, tasklet, class]
    each = np.array([slots_of(c) for c in classes])
    slots = executed @ each
    held = executed @ (each * np.array([c.startswith(HELD) for c in classes]))
    reads, writes = ctx[..., Ctx.READS].astype(float), ctx[..., Ctx.WRITES].astype(float)
    latency = _dma_latency(reads, writes, ctx[..., Ctx.READ_BYTES] + ctx[..., Ctx.WRITE_BYTES])
    transfers = launch_transfers(need_in, need_out, in_bytes)
    ops = dict(zip(classes, executed.sum(axis=(0, 1)).tolist()))
    return _estimate(_dpus_cycles(slots, latency, reads + writes, held), transfers, clock_hz(), ops)
