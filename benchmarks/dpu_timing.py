"""DPU time estimates against PrIM's published measurements.

    python benchmarks/dpu_timing.py                 # calibration table (PrIM microbenchmarks)
    python benchmarks/dpu_timing.py --costs         # the DPU instruction cost table, with sources
    python benchmarks/dpu_timing.py --classes       # a microbenchmark per operation class, against the table
    python benchmarks/dpu_timing.py --workloads     # + PrIM workloads as Triton kernels
    python benchmarks/dpu_timing.py --plot out.png  # + estimated vs published curves (matplotlib)
    python benchmarks/dpu_timing.py --overhead      # what counting costs the DPU model's run time
    python benchmarks/dpu_timing.py --validate      # PrIM's programs against real-hardware times
    python benchmarks/dpu_timing.py --validate --plot docs/dpu_validation.png   # ... drawn (matplotlib)
    python benchmarks/dpu_timing.py --heldout       # the workbook's 8 other benchmarks, never tuned on
    python benchmarks/dpu_timing.py --prim-c PRIM_DIR   # all 13 on PrIM's own programs (no ports)
    python benchmarks/dpu_timing.py --versus-ports  # Triton kernels against PrIM's programs, same data

`--overhead` runs the kernels of benchmarks/bench_backend.py (vector add and
softmax on 1M float32, 64 DPUs) and benchmarks/bench_edsl.py (saxpy, sum,
softmax on 1M float32, one tasklet) with counting off and on, alternately,
and prints the ratios of their best wall-clock times (this one does depend
on the machine).

Calibration and validation are kept apart: the cost table (edsl/dpu/timing.py)
is set from the microbenchmarks' published figures; the workloads are only
estimated with it. Figures, not wall-clock timings: the output is the same
on any machine.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from prim import calibration, classes, prim_c, validation, workloads  # noqa: E402

import edsl.backend  # noqa: E402
from edsl.dpu import timing  # noqa: E402

TOLERANCE = 0.15


def print_calibration(points) -> int:
    print(f"{'kernel':15} {'configuration':30} {'published':>10} {'estimated':>10} {'unit':6} {'ratio':>6}  source")
    print("(published: PrIM's figures, each with its source in edsl/dpu/timing.py FIGURES, some recalled, "
          "not re-read)")
    misses = 0
    for p in points:
        s = calibration.SCALE[p.unit]
        flag = "" if abs(p.ratio - 1) <= TOLERANCE else "  MISS"
        misses += bool(flag)
        print(f"{p.benchmark:15} {p.config:30} {p.published / s:10.2f} {p.estimated / s:10.2f} {p.unit:6} "
              f"{p.ratio:6.2f}  {p.note}{flag}")
    print(f"{len(points) - misses} of {len(points)} points within {TOLERANCE:.0%}")
    print_copy_dma()
    return misses


def print_copy_dma(tasklets: int = 16, blocks_per_tasklet: int = 8) -> None:
    """PrIM's STREAM COPY-DMA (Microbenchmarks/STREAM/dpu/copy.c: mram_read then
    mram_write of 1,024 B per block) on the model: the DMA engine's throughput."""
    import numpy as np

    from prim import micro
    count = tasklets * blocks_per_tasklet
    a = np.zeros(count * micro.BLOCK // 8, dtype=np.int64)
    est = micro.mram(micro.BLOCK).run(a, count, tasklets=tasklets, timing=True).timing.at(calibration.PRIM_CLOCK_HZ)
    mb_s = count * 2 * micro.BLOCK / est.dpu_seconds / 1e6
    fig = timing.FIGURES["stream_copy_dma"]
    print(f"STREAM COPY-DMA, {tasklets} tasklets, 1024 B: published {fig.value / 1e6:.2f} MB/s, estimated "
          f"{mb_s:.2f} MB/s, ratio {mb_s * 1e6 / fig.value:.3f}  ({fig.source})")


def print_costs() -> None:
    """The DPU instruction cost table the estimate uses (edsl/dpu/timing.py INSTRUCTION_COSTS)."""
    print(f"{'class':11} {'slots':>7}  source")
    for name, cost in timing.INSTRUCTION_COSTS.items():
        print(f"{name:11} {cost.slots:7.2f}  {cost.source}")


def print_classes() -> None:
    """A microbenchmark per operation class on the model (benchmarks/prim/classes.py), its
    estimated cost per operation beside the cost table's, and two kernels by what dominates."""
    print(f"One operation of each class on the model, {classes.TASKLETS} tasklets: issue slots per operation "
          f"(cycles at saturation), or a DMA's latency in cycles, against the cost table (edsl/dpu/timing.py)")
    print(f"{'class':24} {'estimated':>9} {'table':>8}  classes (source)")
    for r in classes.rows():
        flag = "" if abs(r.estimated - r.table) <= 0.01 * r.table else "  DIFFERS"
        print(f"{r.name:24} {r.estimated:9.2f} {r.table:8.2f}  {r.source}{flag}")
    rng = np.random.default_rng(0)
    n = classes.TASKLETS * 2 * 256
    for name, data, what in (
            ("scan_unique", np.repeat(rng.integers(0, 1 << 20, n // 4), 4).astype(np.int32),
             "PrIM's UNI/SEL shape: keep an element unlike the one before (runs of 4: a quarter kept)"),
            ("bit_loop", rng.integers(0, 1 << 20, n).astype(np.int32),
             "a loop of each element's bit length (0-20 bits, 19.0 on average)")):
        sh = classes.shape(name, data)
        top = ", ".join(f"{c} {share:.0%}" for c, share in sh.dominant()[:5])
        per = ", ".join(f"{c} {v:.2f}" for c, v in sh.per_element.items() if v >= 0.01)
        print(f"\n{name}: {what}\n  {sh.cycles_per_element:.1f} cycles per element; executed per element: {per}"
              f"\n  share of the issue slots: {top}")


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


def _port_cycles(name: str, args: tuple, consts: dict) -> float:
    """The estimated cycles of PrIM's program (benchmarks/prim/ports.py) for
    the data a Triton workload took (`args`), on one DPU, checked against NumPy."""
    import numpy as np
    from prim import ports
    if name == "VA":
        a, b = args[0], args[1]
        c, shares = ports.va(a, b, 1)
        ok = np.array_equal(c, a + b)
    elif name == "RED":
        total, shares = ports.red(args[0], 1)
        ok = total == args[0].sum()
    elif name == "SCAN-SSA":
        out, shares = ports.scan(args[0], 1)
        ok = np.array_equal(out, np.cumsum(args[0]))
    elif name == "GEMV":
        y, shares = ports.gemv(args[0], args[1], 1)
        ok = np.array_equal(y, args[0] @ args[1])
    else:
        h, shares = ports.hst(args[0], consts["BINS"], 1)
        ok = np.array_equal(h, np.bincount((args[0].astype(np.int64) * consts["BINS"]) >> consts["DEPTH"],
                                           minlength=consts["BINS"]))
    if not ok:
        raise SystemExit(f"{name}: PrIM's program gave a wrong result on the DPU model")
    return sum(s.cycles for s in shares)


def print_versus_ports(tasklets: int, scale: float) -> None:
    """Triton kernels (benchmarks/prim/workloads.py) against PrIM's programs
    (benchmarks/prim/ports.py) on the same data, one DPU, estimated DPU time."""
    print(f"\nPrIM's workloads on one DPU, {tasklets} tasklets, dataset x{scale:g}: the Triton kernel's "
          f"estimated DPU time against PrIM's program's, at {timing.clock_hz() / 1e6:g} MHz")
    print(f"{'kernel':10} {'Triton':>10} {'PrIM':>10} {'ratio':>6}")
    for name, make in workloads.WORKLOADS.items():
        kernel, args, consts, check = make(1, scale)
        kernel[(1,)](*args, num_dpus=1, num_tasklets=tasklets, dpu_timing=True, **consts)
        if not check():
            raise SystemExit(f"{name}: wrong result on the DPU model")
        ours = edsl.backend.last_report().timing.dpu_cycles_max
        prim = _port_cycles(name, args, consts)
        hz = timing.clock_hz()
        print(f"{name:10} {ours / hz * 1e3:8.2f}ms {prim / hz * 1e3:8.2f}ms {ours / prim:6.2f}")


# DPU kernel times of PrIM's VA measured on UPMEM hardware by a third party:
# the "native" runs of the vPIM repository (github.com/brisco007/vPIM, files
# named below; PrIM's code with 16 tasklets and BL=10 on 60 DPUs). Their logs
# state neither the element type nor the DPU clock: compared here as int32
# (PrIM's VA type, recalled) at 350 MHz, an assumption.
MEASURED_VA = (  # (elements, DPUs, DPU ms, file)
    (104_857_600, 60, 51.006, "apps/vPrIM/results/native/VA"),
    (167_772_160, 60, 81.332, "apps/vPrIM/full_results/native/VA_60"),
)
MEASURED_CLOCK_HZ = timing.DEFAULT_CLOCK_HZ      # assumed (see above)


def print_measured(tasklets: int = 16) -> None:
    print(f"\nVA against third-party hardware measurements (vPIM repository, native runs): one DPU's share, "
          f"{tasklets} tasklets, at {MEASURED_CLOCK_HZ / 1e6:g} MHz")
    print(f"{'elements':>12} {'DPUs':>5} {'per DPU':>10} {'measured':>10} {'estimated':>10} {'ratio':>6}  file")
    for n, dpus, ms, where in MEASURED_VA:
        share = -(-n // dpus)              # every DPU does the same work: the slowest is any one
        kernel, args, consts, check = workloads.va(1, share / workloads.VA_ELEMENTS)
        kernel[(1,)](*args, num_dpus=1, num_tasklets=tasklets, dpu_timing=True, **consts)
        if not check():
            raise SystemExit("VA: wrong result on the DPU model")
        est = edsl.backend.last_report().timing.at(MEASURED_CLOCK_HZ)
        print(f"{n:12,} {dpus:5} {share:10,} {ms:8.2f}ms {est.dpu_seconds * 1e3:8.2f}ms "
              f"{est.dpu_seconds * 1e3 / ms:6.2f}  {where}")


def print_validation(only: str | None = None, heldout: bool = False) -> list[validation.Row]:
    """The workbook's rows (benchmarks/prim/workbook.csv, or with `heldout` the other
    benchmarks' rows, workbook_heldout.csv, of those ported) against the estimate of
    PrIM's programs ported to the EDSL (benchmarks/prim/validation.py says how)."""
    path, ported = (validation.HELDOUT, validation.heldout_ports()) if heldout else (validation.WORKBOOK, None)
    rows = [r for r in validation.read_rows(path) if only in (None, r.benchmark)
            and (ported is None or r.benchmark in ported)]
    if not rows:
        raise SystemExit(f"no rows of {only or 'any benchmark'} in {path.name} to estimate")
    print(f"PrIM's programs (EDSL ports, 16 tasklets, {validation.CLOCK_HZ / 1e6:g} MHz) against UPMEM hardware: "
          f"uPIMulator's workbook ({path.name}); times in ms, ratio = estimate / measured; "
          f"the kernel's estimate holds a launch's fixed time, {timing.launch_seconds(1) * 1e3:.3f} ms")
    print(f"{'bench':9}{'DPUs':>5}{'size':>9} | {'kernel':>8}{'est.':>9}{'ratio':>6}{'uPIM':>9}{'ratio':>6} | "
          f"{'CPU-DPU':>8}{'est.':>8}{'ratio':>6} | {'DPU-CPU':>8}{'est.':>8}{'ratio':>7}")
    done = []
    for r in rows:
        r = validation.estimate_heldout(r) if heldout else validation.estimate(r)
        done.append(r)
        miss = validation.kernel_miss(r)
        flag = f"  kernel off >30%: {miss}" if miss else ""
        print(f"{r.benchmark:9}{r.dpus:5}{r.size:9} | {r.hw_kernel:8.3f}{r.est_kernel:9.3f}"
              f"{r.est_kernel / r.hw_kernel:6.2f}{r.sim_kernel:9.3f}{r.sim_kernel / r.hw_kernel:6.2f} | "
              f"{r.hw_to_dpu:8.3f}{r.est_to_dpu:8.3f}{r.est_to_dpu / r.hw_to_dpu:6.2f} | "
              f"{r.hw_from_dpu:8.3f}{r.est_from_dpu:8.3f}{r.est_from_dpu / r.hw_from_dpu:7.3f}{flag}")
    for label, column in (("estimate", "est_kernel"), ("uPIMulator", "sim_kernel")):
        medians = validation.median_ratios(done, column)
        print(f"median kernel ratio, {label}: " + ", ".join(f"{b} {v:.2f}" for b, v in medians.items()))
    print("kernel MAPE, estimate / uPIMulator: " + ", ".join(
        f"{b} {est:.1f} / {sim:.1f} %" for b, (est, sim) in validation.kernel_mapes(done).items()))
    print("transfer MAPE, CPU-DPU / DPU-CPU: " + ", ".join(
        f"{b} {to:.1f} / {back:.1f} %" for b, (to, back) in validation.transfer_mapes(done).items()))
    summary = validation.summarize(done).line()
    print(summary.replace("validation:", f"held-out ({', '.join(sorted(ported))}):") if heldout else summary)
    return done


def print_prim_c(prim: str, only: str | None = None) -> None:
    """The workbook's rows of all 13 benchmarks, estimated on PrIM's own programs
    (benchmarks/prim/prim_c.py says how), against the hardware and uPIMulator."""
    rows = [r for path in (validation.WORKBOOK, validation.HELDOUT) for r in validation.read_rows(path)
            if only in (None, r.benchmark)]
    print(f"PrIM's own programs (16 tasklets, {validation.CLOCK_HZ / 1e6:g} MHz) against UPMEM hardware: "
          f"uPIMulator's workbook; times in ms, ratio = estimate / measured; each launch holds its fixed time, "
          f"{timing.launch_seconds(1) * 1e3:.3f} ms")
    print(f"{'bench':9}{'DPUs':>5}{'size':>9} | {'kernel':>8}{'est.':>9}{'ratio':>6}{'uPIM':>9}{'ratio':>6}")
    runner = prim_c.Runner(pathlib.Path(prim))
    done, missing = [], {}
    try:
        for r in rows:
            o = runner.estimate(r)
            if o.problem:
                missing.setdefault(r.benchmark, o.problem)
                print(f"{r.benchmark:9}{r.dpus:5}{r.size:9} | {r.hw_kernel:8.3f}  not estimated: {o.problem}")
                continue
            done.append(validation.Row(**{**r.__dict__, "est_kernel": o.est_kernel}))
            print(f"{r.benchmark:9}{r.dpus:5}{r.size:9} | {r.hw_kernel:8.3f}{o.est_kernel:9.3f}"
                  f"{o.est_kernel / r.hw_kernel:6.2f}{r.sim_kernel:9.3f}{r.sim_kernel / r.hw_kernel:6.2f}", flush=True)
    finally:
        runner.close()
    print("kernel MAPE, estimate / uPIMulator: " + ", ".join(
        f"{b} {est:.1f} / {sim:.1f} %" for b, (est, sim) in validation.kernel_mapes(done).items()))
    for b, why in missing.items():
        print(f"{b}: not estimated: {why}")
    if done:
        print(f"prim-c: {len(done)} of {len(rows)} rows, kernel MAPE "
              f"{validation.mape((r.est_kernel, r.hw_kernel) for r in done):.1f} % (uPIMulator "
              f"{validation.mape((r.sim_kernel, r.hw_kernel) for r in done):.1f} % on them), within 30 %: "
              f"{sum(abs(r.est_kernel / r.hw_kernel - 1) <= 0.30 for r in done)} of {len(done)}")


def plot_validation(rows: list[validation.Row], path: str) -> None:
    """Measured against estimated kernel time, log-log, with the +-30 % band,
    the estimate's points and uPIMulator's for the same rows."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    measured = [r.hw_kernel for r in rows]
    lo, hi = min(measured) / 2, max(measured) * 2
    ax.plot([lo, hi], [lo, hi], "k-", linewidth=0.8)
    ax.fill_between([lo, hi], [0.7 * lo, 0.7 * hi], [1.3 * lo, 1.3 * hi], color="0.88", label="within 30 %")
    ax.plot(measured, [r.sim_kernel for r in rows], "x", color="0.45", markersize=5, label="uPIMulator")
    for bench, color in zip(sorted({r.benchmark for r in rows}), plt.cm.tab10.colors):
        mine = [r for r in rows if r.benchmark == bench]
        ax.plot([r.hw_kernel for r in mine], [r.est_kernel for r in mine], "o", color=color, markersize=4,
                label=f"{bench} (estimate)")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel="measured on UPMEM hardware (ms)",
           ylabel="estimated (ms)", title=validation.summarize(rows).line().replace(", within", ",\nwithin"))
    ax.title.set_fontsize(8)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def print_overhead(reps: int) -> None:
    import time

    import numpy as np
    import triton

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
    import bench_edsl  # noqa: F401  (its kernels; it points the edsl cache at a scratch folder)
    import triton_softmax
    import triton_vector_add

    n, dpus = 1 << 20, 64
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out, one = np.empty_like(x), np.zeros(1, np.float32)
    m, sm = x.reshape(1024, 1024), np.empty((1024, 1024), np.float32)

    def add(t, on):
        triton_vector_add.add_kernel[(n // 1024,)](x, y, out, n, BLOCK=1024, num_dpus=dpus, num_tasklets=t,
                                                    dpu_timing=on)

    def softmax(t, on):
        triton_softmax.softmax_kernel[(1024,)](sm, m, 1024, 1024, BLOCK=1024, num_dpus=dpus, num_tasklets=t,
                                               dpu_timing=on)

    cases = {f"vector add x{t}": (lambda on, t=t: add(t, on)) for t in (1, 16)}
    cases.update({f"softmax x{t}": (lambda on, t=t: softmax(t, on)) for t in (1, 16)})
    cases["edsl saxpy"] = lambda on: bench_edsl.saxpy.run(y, x, 2.0, timing=on)
    cases["edsl sum"] = lambda on: bench_edsl.vsum.run(one, x, timing=on)
    cases["edsl softmax"] = lambda on: bench_edsl.softmax.run(out, x, timing=on)
    print(f"\nCounting's cost on the DPU model: best of {reps} wall-clock runs each, off and on alternately")
    print(f"{'kernel':16} {'off':>10} {'on':>10} {'on/off':>7}")
    for name, run in cases.items():
        best = {False: float("inf"), True: float("inf")}
        for on in (False, True):
            run(on)                                    # compile and load outside the timings
        for _ in range(reps):
            for on in (False, True):
                t0 = time.perf_counter()
                run(on)
                best[on] = min(best[on], time.perf_counter() - t0)
        print(f"{name:16} {best[False] * 1e3:8.2f}ms {best[True] * 1e3:8.2f}ms {best[True] / best[False]:7.2f}")


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
             title="Arithmetic throughput (PrIM Fig. 4)\nestimated: solid, PrIM's figures (recalled): dashed")
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
              title="MRAM bandwidth, 1 tasklet (PrIM Fig. 7, recalled)\nestimated: solid, fit: dashed, measured: x")
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
    parser.add_argument("--overhead", action="store_true", help="measure what counting costs the model")
    parser.add_argument("--costs", action="store_true", help="print the DPU instruction cost table")
    parser.add_argument("--classes", action="store_true",
                        help="a microbenchmark per operation class against the cost table")
    parser.add_argument("--validate", action="store_true",
                        help="estimate PrIM's programs at the uPIMulator workbook's rows against its hardware times")
    parser.add_argument("--heldout", action="store_true",
                        help="the workbook's 8 other benchmarks (those ported), never tuned on")
    parser.add_argument("--prim-c", metavar="PRIM_DIR",
                        help="the workbook's rows of all 13 benchmarks, on PrIM's own programs (a checkout of "
                             "CMU-SAFARI/prim-benchmarks) built against the counting SDK stand-ins")
    parser.add_argument("--only", metavar="BENCH",
                        help="with --validate, --heldout or --prim-c: one benchmark's rows")
    parser.add_argument("--versus-ports", action="store_true",
                        help="the Triton workloads against PrIM's programs on the same data (one DPU)")
    parser.add_argument("--reps", type=int, default=7, help="repetitions for --overhead")
    parser.add_argument("--plot", metavar="PNG", nargs="?", const="dpu_timing.png",
                        help="draw estimated vs published curves, or with --validate estimated vs "
                             "measured kernel times (needs matplotlib)")
    args = parser.parse_args(argv)
    if args.overhead:
        print_overhead(args.reps)
        return 0
    if args.costs:
        print_costs()
        return 0
    if args.classes:
        print_classes()
        return 0
    if args.versus_ports:
        print_versus_ports(args.tasklets, args.scale)
        return 0
    if args.prim_c:
        print_prim_c(args.prim_c, args.only)
        return 0
    if args.validate or args.heldout:
        rows = print_validation(args.only, args.heldout)
        if args.plot:
            plot_validation(rows, args.plot)
        return 0
    print_calibration(calibration.points())
    if args.workloads:
        print_workloads(args.dpus, args.tasklets, args.scale)
        print_measured(args.tasklets)
    if args.plot:
        plot(args.plot)
    return 0


if __name__ == "__main__":
    with edsl.backend.activated():     # (the DPU model, also where a GPU is)
        status = main()
    sys.exit(status)
