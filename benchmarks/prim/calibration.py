"""Calibration points: PrIM's microbenchmarks run here, estimated, against the published figures.

Each point is (benchmark, configuration, published, estimated, unit, note).
Every kernel runs through the ordinary launch path with counting on
(`f.run(..., tasklets=t, timing=True)`); its `LaunchReport.timing` is the
estimate. The arithmetic and WRAM figures are PrIM's measured throughputs of
the compute loop alone (the kernels' DMA is outside PrIM's timers), so they
are compared with the estimate's instruction-issue part; the MRAM figures
with the DMA part.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edsl.dpu import timing
from edsl.dpu.timing import FIGURES

from . import micro

TYPES = {"i32": ("int32", np.int32), "i64": ("int64", np.int64), "f32": ("float", np.float32),
         "f64": ("double", np.float64)}
OPS = ("add", "sub", "mul", "div")
TASKLETS = (1, 2, 4, 8, 11, 16)
MRAM_SIZES = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)
# PrIM ran its microbenchmarks on DPUs at 350 MHz (the `clock_v1a` figure).
PRIM_CLOCK_HZ = timing.DEFAULT_CLOCK_HZ
PRIM_SCALAR = 1_048_576         # Arithmetic-Throughput's scalar: its elements per DPU


@dataclass(frozen=True)
class Point:
    benchmark: str
    config: str
    published: float
    estimated: float
    unit: str
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.estimated / self.published


def arithmetic_throughput(ty: str, op: str, tasklets: int) -> float:
    """Estimated operations per second of the arithmetic loop."""
    fn = micro.arithmetic(ty, op)
    dtype = TYPES[ty][1]
    n = 16 * micro.BLOCK // dtype().itemsize * 2          # two blocks per tasklet at 16 tasklets
    # PrIM's operands (the multiply's cost depends on them): rand() data and,
    # as the scalar, the elements per DPU of its run (-i 1048576).
    a = np.random.default_rng(0).integers(0, 2**31 - 1, n).astype(dtype)
    est = fn.run(a, n, PRIM_SCALAR, tasklets=tasklets, timing=True).timing.at(PRIM_CLOCK_HZ)
    return n / est.issue_seconds


def published_throughput(ty: str, op: str, tasklets: int) -> tuple[float, str]:
    """PrIM's figure at saturation; below 11 tasklets, the linear growth the
    paper states (Key Observation 1), which is how Fig. 4's curves rise."""
    fig = FIGURES[f"{TYPES[ty][0]}_{op}"].value
    if tasklets >= timing.REVOLVER:
        return fig, "Fig. 4 label"
    return fig * tasklets / timing.REVOLVER, "Fig. 4 label x t/11"


def wram_bandwidth(op: str, tasklets: int = 16) -> float:
    """Estimated WRAM bytes accessed per second by the STREAM loop."""
    fn = micro.stream(op)
    n = 16 * micro.BLOCK // 8 * 2
    a = np.arange(n, dtype=np.int64)
    b = np.arange(n, dtype=np.int64)
    c = np.zeros(n, dtype=np.int64)
    est = fn.run(a, b, c, n, 3, tasklets=tasklets, timing=True).timing.at(PRIM_CLOCK_HZ)
    per_element = {"copy": 16, "add": 24, "scale": 16, "triad": 24}[op]
    return n * per_element / est.issue_seconds


def mram_transfer(size: int, direction: str) -> tuple[float, float]:
    """Estimated (latency in cycles, bandwidth in B/s) of one `size`-byte transfer, 1 tasklet."""
    fn = micro.mram(size)
    count = 4
    a = np.zeros(count * size // 8, dtype=np.int64)
    report = fn.run(a, count, tasklets=1, timing=True)
    n = report.dma_reads if direction == "read" else report.dma_writes
    nbytes = report.dma_read_bytes if direction == "read" else report.dma_write_bytes
    alpha = timing.ALPHA_READ if direction == "read" else timing.ALPHA_WRITE
    # One tasklet: its DMA cycles are the sum of its transfers' latencies.
    reads, writes = report.dma_reads, report.dma_writes
    total = reads * timing.ALPHA_READ + writes * timing.ALPHA_WRITE + timing.BETA * report.dma_bytes
    assert abs(report.timing.dma_cycles - total) < 1e-6, (report.timing.dma_cycles, total)
    latency = (n * alpha + timing.BETA * nbytes) / n
    return latency, size / latency * PRIM_CLOCK_HZ


def points(tasklets=TASKLETS) -> list[Point]:
    out = []
    for ty in TYPES:
        for op in OPS:
            for t in tasklets:
                pub, note = published_throughput(ty, op, t)
                out.append(Point("arithmetic", f"{TYPES[ty][0].upper()} {op.upper()}, {t} tasklets", pub,
                                 arithmetic_throughput(ty, op, t), "MOPS", note))
    for op in ("copy", "add", "scale", "triad"):
        out.append(Point("WRAM STREAM", f"{op.upper()}, 16 tasklets", FIGURES[f"wram_{op}"].value,
                         wram_bandwidth(op), "MB/s", "Fig. 5 label"))
    for direction in ("read", "write"):
        alpha = FIGURES[f"mram_{direction}_alpha"].value
        for size in MRAM_SIZES:
            latency, bandwidth = mram_transfer(size, direction)
            out.append(Point("MRAM latency", f"mram_{direction} {size} B", alpha + FIGURES["mram_beta"].value * size,
                             latency, "cycles", "Fig. 7 fit"))
        _, bandwidth = mram_transfer(2048, direction)
        out.append(Point("MRAM bandwidth", f"mram_{direction} 2048 B", FIGURES[f"mram_{direction}_bw_2048"].value,
                         bandwidth, "MB/s", "Fig. 7 label"))
    # Host transfers. Slide 20's: 32 MiB in all to or from 64 DPUs, the estimate's time as a
    # bandwidth against the five labels printed on the chart. Slide 19's: one DPU, by size,
    # against the chart's points (read from its drawing: the estimate's input, so a check of
    # its interpolation and of the 8-128-byte times it takes as one fixed time).
    for kind, direction, key in (("serial", "to_dpu", "cpu_dpu_serial_rank"),
                                 ("serial", "from_dpu", "dpu_cpu_serial_rank"),
                                 ("parallel", "to_dpu", "cpu_dpu_parallel_rank"),
                                 ("parallel", "from_dpu", "dpu_cpu_parallel_rank"),
                                 ("broadcast", "to_dpu", "cpu_dpu_broadcast_rank")):
        nbytes = timing.HOST_RANK_BYTES // (timing.DPUS_PER_RANK if kind == "broadcast" else 1)
        seconds = timing.transfer_seconds(kind, direction, nbytes, timing.DPUS_PER_RANK)
        out.append(Point("host transfer", f"{kind} {direction}, 64 DPUs", FIGURES[key].value,
                         timing.HOST_RANK_BYTES / seconds, "GB/s", "slide 20 label (32 MiB)"))
    for direction in ("to_dpu", "from_dpu"):
        for size, gbs in zip(timing.HOST_SIZES, timing.HOST_SIZE_CURVE[direction]):
            out.append(Point("host transfer", f"{direction}, 1 DPU, {size} B", gbs * 1e9,
                             size / timing.transfer_seconds("parallel", direction, size, 1), "MB/s",
                             "slide 19, read (model input)"))
    return out


SCALE = {"MOPS": 1e6, "MB/s": 1e6, "GB/s": 1e9, "cycles": 1}
