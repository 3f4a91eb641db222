"""DPU time estimates against PrIM's published measurements.

    python benchmarks/dpu_timing.py                 # calibration table (PrIM microbenchmarks)
    python benchmarks/dpu_timing.py --workloads     # + PrIM workloads as Triton kernels
    python benchmarks/dpu_timing.py --plot out.png  # + estimated vs published curves (matplotlib)

Calibration and validation are kept apart: the cost table (edsl/dpu/timing.py)
is set from the microbenchmarks' published figures; the workloads are only
estimated with it. Figures, not wall-clock timings: the output is the same
on any machine.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from prim import calibration, workloads  # noqa: E402

import edsl.backend  # noqa: E402
from edsl.dpu import timing  # noqa: E402

TOLERANCE = 0.15


def print_calibration(points) -> int:
    print(f"{'kernel':15} {'configuration':30} {'published':>10} {'estimated':>10} {'unit':6} {'ratio':>6}  source")
    misses = 0
    for p in points:
        s = calibration.SCALE[p.unit]
        flag = "" if abs(p.ratio - 1) <= TOLERANCE else "  MISS"
        misses += bool(flag)
        print(f"{p.benchmark:15} {p.config:30} {p.published / s:10.2f} {p.estimated / s:10.2f} {p.unit:6} "
              f"{p.ratio:6.2f}  {p.note}{flag}")
    print(f"{len(points) - misses} of {len(points)} points within {TOLERANCE:.0%}")
    return misses


def print_workloads(dpus: int, tasklets: int, scale: float) -> None:
    print(f"\nPrIM workloads as Triton kernels, {dpus} DPU(s), {tasklets} tasklets, "
          f"dataset x{scale:g} (PrIM's 1-rank strong-scaling sizes), at {timing.clock_hz() / 1e6:g} MHz")
    print(f"{'kernel':10} {'published':>10} {'estimated':>10} {'ratio':>6}  "
          f"issue/DMA cycles of the slowest DPU; host transfers")
    for name, make in workloads.WORKLOADS.items():
        kernel, args, consts, check = make(dpus, scale)
        kernel[(dpus,)](*args, num_dpus=dpus, num_tasklets=tasklets, dpu_timing=True, **consts)
        if not check():
            raise SystemExit(f"{name}: wrong result on the DPU model")
        est = edsl.backend.last_report().timing
        host = ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in est.host_seconds.items() if v)
        # PrIM's per-workload times (Figs. 12-16) are bars in plots whose
        # values could not be read here: no published figure to compare with.
        print(f"{name:10} {'n/a':>10} {est.dpu_seconds * 1e3:8.2f}ms {'n/a':>6}  "
              f"{est.issue_cycles:,.0f} / {est.dma_cycles:,.0f}; {host}")


def plot(path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    tasklets = list(range(1, 17))
    for (ty, op), color in zip((("i32", "add"), ("i32", "mul"), ("i64", "add"), ("f32", "add"),
                                ("f32", "mul"), ("f64", "add")), plt.cm.tab10.colors):
        label = f"{calibration.TYPES[ty][0].upper()} {op.upper()}"
        left.plot(tasklets, [calibration.published_throughput(ty, op, t)[0] / 1e6 for t in tasklets],
                  "--", color=color)
        left.plot(tasklets, [calibration.arithmetic_throughput(ty, op, t) / 1e6 for t in tasklets],
                  "o-", color=color, markersize=3, label=label)
    left.set(yscale="log", xlabel="tasklets", ylabel="MOPS",
             title="Arithmetic throughput (PrIM Fig. 4)\nestimated: solid, published: dashed")
    left.legend(fontsize=8)
    sizes = calibration.MRAM_SIZES
    for direction, color in (("read", "tab:blue"), ("write", "tab:red")):
        alpha = timing.FIGURES[f"mram_{direction}_alpha"].value
        right.plot(sizes, [s / (alpha + timing.BETA * s) * timing.DEFAULT_CLOCK_HZ / 1e6 for s in sizes],
                   "--", color=color)
        right.plot(sizes, [calibration.mram_transfer(s, direction)[1] / 1e6 for s in sizes], "o-",
                   color=color, markersize=3, label=f"mram_{direction}")
        right.plot([2048], [timing.FIGURES[f"mram_{direction}_bw_2048"].value / 1e6], "x", color=color,
                   markersize=9)
    right.set(xscale="log", xlabel="transfer size (bytes)", ylabel="MB/s",
              title="MRAM bandwidth, 1 tasklet (PrIM Fig. 7)\nestimated: solid, fit: dashed, measured: x")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", action="store_true", help="also estimate the PrIM workloads")
    parser.add_argument("--dpus", type=int, default=1)
    parser.add_argument("--tasklets", type=int, default=16)
    parser.add_argument("--scale", type=float, default=1.0, help="dataset size factor for the workloads")
    parser.add_argument("--plot", metavar="PNG", nargs="?", const="dpu_timing.png",
                        help="draw estimated vs published curves (needs matplotlib)")
    args = parser.parse_args(argv)
    print_calibration(calibration.points())
    if args.workloads:
        print_workloads(args.dpus, args.tasklets, args.scale)
    if args.plot:
        plot(args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
