"""A DPU time estimate from what a program executed: the published DPU model.

Sources (each figure below names its own):
  [PrIM]  J. Gómez-Luna et al., "Benchmarking a New Paradigm: Experimental
          Analysis and Characterization of a Real Processing-in-Memory System",
          IEEE Access 10, 2022 (arXiv:2105.03814).
  [uPIM]  B. Hyun et al., "Pathfinding Future PIM Architectures by
          Demystifying a Commercial PIM Technology", HPCA 2024
          (arXiv:2308.00846), and its simulator's defaults (uPIMulator,
          golang/uPIMulator/src/main.go).
  [SDK]   UPMEM SDK documentation, "DPU chip characteristics".

Each figure's source says whether it was re-read here (the uPIMulator
defaults, in its source) or recalled: the PrIM figures were written down from
the paper's figures and text (each one's place is named) and could not be
re-read here, only checked for consistency with the paper's own
instruction-count model (e.g. 350 MHz / 6 instructions = 58.3 MOPS for the
INT32 ADD loop).

The model, per DPU:
  * instruction issue: the 14-stage pipeline issues at most one instruction
    per cycle, and one tasklet at most one every 11 cycles [uPIM, PrIM 2.3];
  * MRAM<->WRAM DMA: a transfer of n bytes blocks its tasklet for
    alpha + beta * n cycles, and the DPU's DMA engine moves beta cycles/byte
    whatever the tasklets [PrIM 3.2.1];
  * DPU cycles = max(sum of issue slots, max over tasklets of
    11 * issue slots + DMA latency, beta * all DMA bytes): the throughput
    bound of the pipeline, the latency bound of the slowest tasklet, the
    bandwidth bound of MRAM.
  * host<->MRAM transfers take bytes / bandwidth, by kind [PrIM 3.4].
Issue slots per executed operation come from `ISSUE_SLOTS`: one for the
32-bit operations the DPU has, software-routine costs for the rest, derived
from PrIM's arithmetic-throughput figures.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from ..errors import ArgumentError
from .abi import Ctx

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
    "clock_v1a": Figure(350e6, "Hz", "[uPIM] simulator default logic_frequency=350 (MHz) (re-read); "
                        "[SDK] DPU chip characteristics: v1A nominal frequency, recalled, not re-read"),
    "clock_v1b": Figure(400e6, "Hz",
        _recalled("[SDK] DPU chip characteristics: v1B nominal frequency 400 MHz")),
    "pipeline_stages": Figure(14, "stages", "[uPIM] simulator default num_pipeline_stages=14 (re-read)"),
    "revolver_cycles": Figure(11, "cycles",
                              "[uPIM] simulator default num_revolver_scheduling_cycles=11 (re-read): "
                              "a tasklet issues at most once every 11 cycles; also [PrIM] 3.1.2, Key Observation "
                              "1: throughput saturates at 11 tasklets, recalled, not re-read"),
    # MRAM<->WRAM DMA latency = alpha + beta * size [PrIM 3.2.1, Fig. 7, Eq. 2].
    "mram_read_alpha": Figure(77, "cycles",
        _recalled("[PrIM] 3.2.1, Fig. 7: mram_read latency fit, alpha = 77 cycles")),
    "mram_write_alpha": Figure(61, "cycles",
        _recalled("[PrIM] 3.2.1, Fig. 7: mram_write latency fit, alpha = 61 cycles")),
    "mram_beta": Figure(0.5, "cycles/B",
        _recalled("[PrIM] 3.2.1, Fig. 7: beta = 0.5 cycles/B for reads and writes "
                        "(theoretical 700 MB/s at 350 MHz, also [uPIM] Fig. 5 caption)")),
    "mram_read_bw_2048": Figure(628.23e6, "B/s",
        _recalled("[PrIM] 3.2.1, Fig. 7: sustained mram_read bandwidth at 2,048 B")),
    "mram_write_bw_2048": Figure(633.22e6, "B/s",
        _recalled("[PrIM] 3.2.1, Fig. 7: sustained mram_write bandwidth at 2,048 B")),
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
    # Host<->MRAM bandwidth for large transfers [PrIM 3.4, Fig. 10].
    "cpu_dpu_serial": Figure(0.33e9, "B/s", _recalled("[PrIM] 3.4, Fig. 10(a): CPU-DPU, 1 DPU, 32 MB")),
    "dpu_cpu_serial": Figure(0.12e9, "B/s", _recalled("[PrIM] 3.4, Fig. 10(a): DPU-CPU, 1 DPU, 32 MB")),
    "cpu_dpu_parallel_rank": Figure(6.68e9, "B/s",
        _recalled("[PrIM] 3.4, Fig. 10(b): CPU-DPU parallel, 64 DPUs (a rank)")),
    "dpu_cpu_parallel_rank": Figure(4.74e9, "B/s",
        _recalled("[PrIM] 3.4, Fig. 10(b): DPU-CPU parallel, 64 DPUs (a rank)")),
    "cpu_dpu_broadcast_rank": Figure(16.88e9, "B/s",
        _recalled("[PrIM] 3.4, Fig. 10(b): CPU-DPU broadcast, 64 DPUs")),
}

DPUS_PER_RANK = 64  # [PrIM] 2.1: a rank of 8 chips x 8 DPUs

DEFAULT_CLOCK_HZ = FIGURES["clock_v1a"].value
CLOCK_ENV = "EDSL_DPU_CLOCK_MHZ"    # the clock launch reports use, in MHz (default 350)
REVOLVER = int(FIGURES["revolver_cycles"].value)
ALPHA_READ = FIGURES["mram_read_alpha"].value
ALPHA_WRITE = FIGURES["mram_write_alpha"].value
BETA = FIGURES["mram_beta"].value


def _routine(op: str, base_loop: float | None = None) -> float:
    """Issue slots of one `op` (a key of FIGURES): PrIM's loop around it has the
    INT32 ADD loop's instructions but its add, so at saturation (one
    instruction per cycle) f / throughput = (loop - 1) + slots(op)."""
    f = DEFAULT_CLOCK_HZ
    loop = FIGURES["arith_loop_instructions"].value if base_loop is None else base_loop
    return f / FIGURES[op].value - (loop - 1)


# -- Issue slots per executed operation class -----------------------------------------------
# The classes are what the counting pass (edsl.lowering.counting) records per
# executed block. Instructions the DPU has cost one slot; the rest are the
# software routines' cost, from the arithmetic-throughput figures.
ISSUE_SLOTS: dict[str, float] = {
    "alu": 1.0,          # a 32-bit ALU op (indices and addresses are 32-bit on the DPU)
    "alu64": _routine("int64_add"),   # 64-bit data: add + addc
    # UPMEM's __mulsi3 runs one mul_step per bit of the smaller operand (the
    # counting pass counts them, `mul32_step`); the rest of the routine is
    # PrIM's INT32 MUL cost less the steps of its loop, whose smaller operand
    # is the scalar 1,048,576 (21 bits) against rand() data.
    "mul32": _routine("int32_mul") - FIGURES["int32_mul_steps"].value,
    "mul32_step": 1.0,
    "div32": _routine("int32_div"),
    "mul64": _routine("int64_mul"),
    "div64": _routine("int64_div"),
    "fadd32": _routine("float_add"),
    "fsub32": _routine("float_sub"),
    "fmul32": _routine("float_mul"),
    "fdiv32": _routine("float_div"),
    "fadd64": _routine("double_add"),
    "fsub64": _routine("double_sub"),
    "fmul64": _routine("double_mul"),
    "fdiv64": _routine("double_div"),
    # Not measured by PrIM (assumptions, stated): a float compare or a
    # conversion costs a float subtraction's routine; a math-library function
    # (exp, log, sqrt, ...) ten float multiplies and ten adds.
    "fcmp32": _routine("float_sub"),
    "fcmp64": _routine("double_sub"),
    "fconv": _routine("float_sub"),
    "math": 10 * (_routine("float_mul") + _routine("float_add")),
    "load": 1.0,         # lw/ld: one instruction, any width up to 64 bits
    "store": 1.0,
    "address": 1.0,      # an address with a run-time index (lsl_add)
    "branch": 1.0,       # a conditional branch, compare fused in (jcc)
    "call": 2.0,         # call and return
    "dma": 3.0,          # ldma/sdma and its address set-up (its latency is the DMA model's)
    "sync": 4.0,         # a barrier: a few instructions around the wait
}


# -- Host transfers -------------------------------------------------------------------------
def host_bandwidth(kind: str, direction: str, dpus: int) -> float:
    """Bytes/s of a host<->MRAM transfer of `kind` ('serial', 'parallel',
    'broadcast') to/from `dpus` DPUs. Between 1 and 64 DPUs the parallel and
    broadcast figures are interpolated as a power law between PrIM's 1-DPU and
    64-DPU points (an assumption); beyond a rank they scale with the ranks."""
    if direction not in ("to_dpu", "from_dpu"):
        raise ValueError(f"direction must be 'to_dpu' or 'from_dpu', not {direction!r}")
    one = FIGURES["cpu_dpu_serial" if direction == "to_dpu" else "dpu_cpu_serial"].value
    if kind == "serial" or dpus <= 1:
        return one
    if kind == "broadcast" and direction == "to_dpu":
        rank = FIGURES["cpu_dpu_broadcast_rank"].value
    elif kind in ("parallel", "broadcast"):
        rank = FIGURES["cpu_dpu_parallel_rank" if direction == "to_dpu" else "dpu_cpu_parallel_rank"].value
    else:
        raise ValueError(f"transfer kind must be serial, parallel or broadcast, not {kind!r}")
    if dpus >= DPUS_PER_RANK:
        return rank * dpus / DPUS_PER_RANK
    gamma = math.log(rank / one) / math.log(DPUS_PER_RANK)
    return one * dpus ** gamma


@dataclass(frozen=True)
class HostTransfer:
    """`nbytes` in all, moved between the host and `dpus` DPUs' MRAM."""
    kind: str          # serial | parallel | broadcast
    direction: str     # to_dpu | from_dpu
    nbytes: int
    dpus: int = 1

    @property
    def seconds(self) -> float:
        if self.nbytes <= 0:
            return 0.0
        # A serial transfer goes to one DPU after the other at one DPU's rate;
        # a broadcast moves `nbytes` once for all DPUs.
        return self.nbytes / host_bandwidth(self.kind, self.direction, self.dpus)


def launch_transfers(read_bytes: Sequence[int], written_bytes: Sequence[int], in_bytes: int,
                     out_bytes: int) -> list[HostTransfer]:
    """The host<->MRAM transfers around a launch, from what each DPU moved by
    DMA (`read_bytes[d]`, `written_bytes[d]`) and the bytes of its input and
    output arrays. Assumptions, stated: DPU d needs min(in_bytes, what it
    read) from the host, and gives back min(out_bytes, what it wrote); one
    DPU is served serially; several get one broadcast when each needs every
    input byte, else a parallel transfer, which moves the same size to each
    DPU (the largest need), as the SDK's `dpu_push_xfer` does."""
    dpus = len(read_bytes)
    need_in = [min(in_bytes, int(b)) for b in read_bytes]
    need_out = [min(out_bytes, int(b)) for b in written_bytes]
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
        try:
            return sum(ISSUE_SLOTS[k] * n for k, n in self.ops.items())
        except KeyError as err:
            raise ValueError(f"unknown operation class {err.args[0]!r}") from None

    def dma_latency(self) -> float:
        return (self.dma_reads * ALPHA_READ + self.dma_writes * ALPHA_WRITE
                + BETA * (self.dma_read_bytes + self.dma_write_bytes))

    @property
    def dma_bytes(self) -> int:
        return self.dma_read_bytes + self.dma_write_bytes


@dataclass(frozen=True)
class DpuCycles:
    """One DPU's estimate: total cycles, and each part alone."""
    cycles: float
    issue: float       # the instruction stream alone (pipeline and revolver bounds)
    dma: float         # the DMA transfers alone (latency and bandwidth bounds)


def dpu_cycles(tasklets: Sequence[TaskletWork]) -> DpuCycles:
    """Cycles of one DPU running `tasklets` (see the module docstring)."""
    if not tasklets:
        return DpuCycles(0.0, 0.0, 0.0)
    slots = [t.issue_slots() for t in tasklets]
    latency = [t.dma_latency() for t in tasklets]
    mram = BETA * sum(t.dma_bytes for t in tasklets)
    pipeline = sum(slots)
    critical = max(REVOLVER * s + d for s, d in zip(slots, latency))
    issue = max(pipeline, REVOLVER * max(slots))
    dma = max(max(latency), mram)
    return DpuCycles(max(pipeline, critical, mram), issue, dma)


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
        """DPU time plus host<->MRAM transfers (done before and after the kernel)."""
        return self.dpu_seconds + sum(self.host_seconds.values())

    def at(self, clock_hz: float) -> "TimingEstimate":
        """This estimate at a DPU clock of `clock_hz`."""
        return replace(self, clock_hz=_positive_clock(clock_hz))

    def summary(self) -> str:
        host = ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in self.host_seconds.items() if v) or "none"
        return (f"DPU {self.dpu_cycles_max:,.0f} cycles max, {self.dpu_cycles_mean:,.0f} mean "
                f"({self.dpu_seconds * 1e3:.3f} ms at {self.clock_hz / 1e6:g} MHz; issue "
                f"{self.issue_cycles:,.0f}, DMA {self.dma_cycles:,.0f} cycles); host {host}; "
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
    clock_hz = _positive_clock(clock_hz)
    per = [dpu_cycles(ts) for ts in dpus]
    worst = max(per, key=lambda c: c.cycles, default=DpuCycles(0.0, 0.0, 0.0))
    host: dict[str, float] = {}
    for t in transfers:
        key = f"{t.direction}/{t.kind}"
        host[key] = host.get(key, 0.0) + t.seconds
    ops: dict[str, float] = {}
    for ts in dpus:
        for t in ts:
            for k, n in t.ops.items():
                ops[k] = ops.get(k, 0) + n
    cycles = tuple(c.cycles for c in per)
    return TimingEstimate(clock_hz, worst.cycles, sum(cycles) / len(cycles) if cycles else 0.0,
                          worst.issue, worst.dma, host, cycles, ops)


def launch_estimate(table: CounterTable, counters: np.ndarray, ctx: np.ndarray, in_bytes: int,
                    out_bytes: int) -> TimingEstimate:
    """The estimate of a launch of the DPU model, at `clock_hz()`: `counters`
    [dpu, tasklet, >= table.counters] are its executed-block counters, `ctx`
    [dpu, tasklet, slot] its tasklets' contexts (DMA by direction), and
    `in_bytes`/`out_bytes` the bytes of its input/output arrays in MRAM."""
    classes = sorted(table.ops)
    per_block = np.array([table.ops[c] for c in classes], dtype=np.int64).reshape(len(classes), table.counters)
    executed = counters[..., :table.counters] @ per_block.T          # [dpu, tasklet, class]
    dma = ctx[..., [Ctx.READS, Ctx.READ_BYTES, Ctx.WRITES, Ctx.WRITE_BYTES]].tolist()
    work = [[TaskletWork(dict(zip(classes, executed[d, t].tolist())), *dma[d][t])
             for t in range(ctx.shape[1])] for d in range(ctx.shape[0])]
    transfers = launch_transfers(ctx[..., Ctx.READ_BYTES].sum(axis=1).tolist(),
                                 ctx[..., Ctx.WRITE_BYTES].sum(axis=1).tolist(), in_bytes, out_bytes)
    return estimate(work, transfers, clock_hz())
