"""The DPU time estimate against real-hardware times: the uPIMulator workbook's rows.

Each row of workbook.csv (VA, RED, SCAN-SSA, GEMV, HST-S at 1-64 DPUs) is run as
PrIM ran it, through the EDSL ports (ports.py) at 16 tasklets: DPU 0's share of the
row's data, split as PrIM's host splits it, runs on the DPU model with counting on,
and its estimated cycles at 350 MHz are the row's kernel time (every DPU of these
rows gets the same share: the size divides by the DPUs, checked; the kernel time is
the slowest DPU's), plus a launch's fixed time (`timing.launch_seconds`) for each
`dpu_launch(DPU_SYNCHRONOUS)` PrIM's "DPU" timers wrap (SCAN-SSA's two kernels: two).
The host transfers are the estimate's (`timing.transfer_seconds`) for the transfers
PrIM's host times as CPU-DPU and DPU-CPU (ports.Share: a parallel `dpu_push_xfer` each,
its argument structure's included, or a `dpu_copy_from` per DPU where PrIM makes one), and
what else the timer holds: RED's DPU-CPU timer also holds host work per DPU
(`red_host_ms`). Nothing here is fitted on the workbook: the estimate's figures are its
own (edsl/dpu/timing.py), RED's host work vPIM's.

Assumptions, stated: 16 tasklets and 350 MHz (the workbook records neither; 16 is
what uPIMulator's examples and PrIM's Makefiles use, 350 MHz uPIMulator's default).
Input values matter only to the 32-bit multiplies (one `mul_step` per bit of the
smaller operand): GEMV's are PrIM's `rand() % 50`; HST-S's pixels are uniform
12-bit values, whose multiply by 256 bins takes 8.9 steps on average, as the
VanHateren image PrIM reads does (9.0, its first 200,000 pixels).
"""
from __future__ import annotations

import csv
import functools
import importlib
import pathlib
import pkgutil
from dataclasses import dataclass

import numpy as np

from edsl.dpu import timing

from . import ports

HERE = pathlib.Path(__file__).resolve().parent
WORKBOOK = HERE / "workbook.csv"
HELDOUT = HERE / "workbook_heldout.csv"     # the 8 other benchmarks: estimated, never tuned on
CLOCK_HZ = timing.DEFAULT_CLOCK_HZ
BINS = 256


@dataclass(frozen=True)
class Row:
    benchmark: str
    dpus: int
    size: int
    hw_kernel: float          # ms, as all times here
    hw_to_dpu: float
    hw_from_dpu: float
    sim_kernel: float         # uPIMulator's
    est_kernel: float = float("nan")          # the launch's fixed time included
    est_launch: float = float("nan")
    est_to_dpu: float = float("nan")
    est_from_dpu: float = float("nan")


def read_rows(path=WORKBOOK) -> list[Row]:
    with open(path) as f:
        lines = [line for line in f if not line.startswith("#")]
    return [Row(r["benchmark"], int(r["num_dpus"]), int(r["data_prep_param"]), float(r["hw_kernel"]),
                float(r["hw_cpu_to_dpu"]), float(r["hw_dpu_to_cpu"]), float(r["sim_kernel"]))
            for r in csv.DictReader(lines)]


def _inputs(benchmark: str, size: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    if benchmark == "VA":
        return rng.integers(0, 1 << 20, size, dtype=np.int32), rng.integers(0, 1 << 20, size, dtype=np.int32)
    if benchmark in ("RED", "SCAN-SSA"):
        return (rng.integers(0, 1 << 20, size, dtype=np.int64),)
    if benchmark == "GEMV":
        return (rng.integers(0, 50, (size, ports.GEMV_COLS), dtype=np.uint32),
                rng.integers(0, 50, ports.GEMV_COLS, dtype=np.uint32))
    if benchmark == "HST-S":
        return (rng.integers(0, 1 << ports.DEPTH, size, dtype=np.uint32),)
    raise ValueError(benchmark)


@functools.lru_cache(None)
def dpu0(benchmark: str, size: int, dpus: int) -> ports.Share:
    """DPU 0's share of a row, run on the model and its result checked against NumPy."""
    if size % dpus:
        raise ValueError(f"{benchmark} {size} on {dpus} DPUs: shares differ; the slowest DPU must be found")
    per = size // dpus
    args = _inputs(benchmark, size)
    if benchmark == "VA":
        a, b = args
        out, (share,) = ports.va(a, b, dpus, dpu_ids=[0])
        ok = np.array_equal(out[:per], a[:per] + b[:per])
    elif benchmark == "RED":
        out, (share,) = ports.red(args[0], dpus, dpu_ids=[0])
        ok = out == args[0][:per].sum()
    elif benchmark == "SCAN-SSA":
        out, (share,) = ports.scan(args[0], dpus, dpu_ids=[0])
        ok = np.array_equal(out[:per], np.cumsum(args[0][:per]))
    elif benchmark == "GEMV":
        a, x = args
        out, (share,) = ports.gemv(a, x, dpus, dpu_ids=[0])
        ok = np.array_equal(out[:per], a[:per] @ x)
    else:
        out, (share,) = ports.hst(args[0], BINS, dpus, dpu_ids=[0])
        ok = np.array_equal(out, np.bincount((args[0][:per].astype(np.int64) * BINS) >> ports.DEPTH,
                                             minlength=BINS))
    if not ok:
        raise AssertionError(f"{benchmark} {size} on {dpus} DPUs: DPU 0's result differs from NumPy")
    return share


def transfer_ms(xfers, direction: str, dpus: int) -> float:
    """Estimated ms of PrIM's host's transfers `xfers` (ports.Xfer: bytes per DPU) to or
    from `dpus` DPUs: each of its kind, its bytes times the DPUs in all."""
    return 1e3 * sum(timing.transfer_seconds(x.kind, direction, x.nbytes * dpus, dpus) for x in xfers)


# PrIM's RED host times as "Inter-DPU" (the workbook's DPU-CPU column) a `malloc` per DPU,
# the retrieval of every DPU's DPU_RESULTS, and a loop over the DPUs reading, adding and
# freeing them (CMU-SAFARI/prim-benchmarks 9a1498f, RED/host/app.c): work on the host
# per DPU. That timer on hardware [vPIM, brisco007/vPIM apps/vPrIM]: 0.176 ms at one DPU
# (single_results/native/RED_1), 1.103 and 1.227 ms at 60 (RED_60, native.json).
RED_TIMER_MS = ((1, 0.176), (60, (1.103 + 1.227) / 2))


def red_host_ms(dpus: int) -> float:
    """The host work RED's DPU-CPU timer holds besides its transfer, at `dpus` DPUs: linear
    in the DPUs through vPIM's timer less the estimate's transfer at its two points."""
    (d0, t0), (d1, t1) = RED_TIMER_MS
    w0, w1 = (t - transfer_ms(ports.red_results(), "from_dpu", d) for d, t in RED_TIMER_MS)
    return w0 + (w1 - w0) * (dpus - d0) / (d1 - d0)


def estimate(row: Row, share: ports.Share | None = None) -> Row:
    """`row` with the estimate of `share` (by default DPU 0's share of the row, run here)."""
    share = share or dpu0(row.benchmark, row.size, row.dpus)
    host = red_host_ms(row.dpus) if row.benchmark == "RED" else 0.0
    launch = share.launches * timing.launch_seconds(row.dpus) * 1e3
    return Row(**{**row.__dict__, "est_kernel": share.cycles / CLOCK_HZ * 1e3 + launch, "est_launch": launch,
                  "est_to_dpu": transfer_ms(share.to_dpu, "to_dpu", row.dpus),
                  "est_from_dpu": transfer_ms(share.from_dpu, "from_dpu", row.dpus) + host})


def heldout_ports() -> dict:
    """The held-out benchmarks ported (benchmarks/prim/heldout/): name -> module."""
    from . import heldout
    modules = (importlib.import_module(f"{heldout.__name__}.{m.name}") for m in pkgutil.iter_modules(heldout.__path__))
    return {m.BENCHMARK: m for m in modules}


def estimate_heldout(row: Row) -> Row:
    return estimate(row, heldout_ports()[row.benchmark].dpu0(row.size, row.dpus))


def kernel_miss(row: Row, tolerance: float = 0.30) -> str:
    """Why a row's kernel estimate is off by more than `tolerance`, by which cost is short
    or over (empty if within it): what the measurement leaves for the launch's fixed time
    beside the DPUs' estimated cycles."""
    if abs(row.est_kernel / row.hw_kernel - 1) <= tolerance:
        return ""
    dpus = row.est_kernel - row.est_launch
    if dpus > row.hw_kernel:
        return f"DPU cycles over: {dpus:.3f} ms alone"
    left = row.hw_kernel - dpus
    if row.est_kernel > row.hw_kernel:
        return f"launch over: the row leaves it {left:.3f} ms, estimated {row.est_launch:.3f}"
    return f"short {row.hw_kernel - row.est_kernel:.3f} ms: DPU cycles under (launch {row.est_launch:.3f} ms)"


def mape(pairs) -> float:
    pairs = list(pairs)
    return 100 * sum(abs(e - m) / m for e, m in pairs) / len(pairs)


@dataclass(frozen=True)
class Summary:
    rows: int
    kernel_mape: float
    upim_mape: float
    within: int
    transfer_mape: float

    def line(self) -> str:
        return (f"validation: {self.rows} rows, kernel MAPE {self.kernel_mape:.1f} % "
                f"(uPIMulator {self.upim_mape:.1f} %), within 30 %: {self.within} of {self.rows}, "
                f"transfer MAPE {self.transfer_mape:.1f} %")


def summarize(rows: list[Row]) -> Summary:
    return Summary(len(rows), mape((r.est_kernel, r.hw_kernel) for r in rows),
                   mape((r.sim_kernel, r.hw_kernel) for r in rows),
                   sum(abs(r.est_kernel / r.hw_kernel - 1) <= 0.30 for r in rows),
                   mape([(r.est_to_dpu, r.hw_to_dpu) for r in rows] + [(r.est_from_dpu, r.hw_from_dpu) for r in rows]))


def kernel_mapes(rows: list[Row]) -> dict[str, tuple[float, float]]:
    """Per benchmark, the kernel MAPE of the estimate and of uPIMulator, in %."""
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(r.benchmark, []).append(r)
    return {b: (mape((r.est_kernel, r.hw_kernel) for r in rs), mape((r.sim_kernel, r.hw_kernel) for r in rs))
            for b, rs in out.items()}


def transfer_mapes(rows: list[Row]) -> dict[str, tuple[float, float]]:
    """Per benchmark, the MAPE of the CPU-DPU and of the DPU-CPU estimate, in %."""
    out: dict[str, tuple[list, list]] = {}
    for r in rows:
        to, back = out.setdefault(r.benchmark, ([], []))
        to.append((r.est_to_dpu, r.hw_to_dpu))
        back.append((r.est_from_dpu, r.hw_from_dpu))
    return {b: (mape(to), mape(back)) for b, (to, back) in out.items()}


def median_ratios(rows: list[Row], column: str = "est_kernel") -> dict[str, float]:
    """Per benchmark, the median of `column` / measured kernel time."""
    out = {}
    for r in rows:
        out.setdefault(r.benchmark, []).append(getattr(r, column) / r.hw_kernel)
    return {b: float(np.median(v)) for b, v in out.items()}
