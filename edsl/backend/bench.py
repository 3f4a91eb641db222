"""Triton's testing tools on the `dpu` backend: the device interface that
`triton.testing.do_bench` (and `perf_report` benchmarks, and the autotuner)
time launches with.

A launch on the DPU model returns when its DPUs are done (there is no
stream), so an event is a reading of a clock: by default the host's
wall-clock, the time the model takes; with `EDSL_BENCH_CLOCK=upmem` the
estimated time on UPMEM hardware (`edsl.dpu.timing`: DPU time and host
transfers) of the launches made so far, what a PIM researcher wants from a
benchmark. That clock needs launches compiled with `dpu_timing=True`, which
the variable makes the default.
"""
from __future__ import annotations

import os
import threading
import time

ENVIRONMENT = "EDSL_BENCH_CLOCK"
CLOCKS = ("host", "upmem")

_estimated = [0.0]              # estimated UPMEM seconds of the launches made so far
_lock = threading.Lock()


def clock() -> str:
    """The clock benchmarks read: "host" or "upmem" (EDSL_BENCH_CLOCK)."""
    name = os.environ.get(ENVIRONMENT, "host").strip().lower() or "host"
    if name not in CLOCKS:
        raise ValueError(f"{ENVIRONMENT}={name!r}: the clocks are {', '.join(CLOCKS)}")
    return name


def count(report) -> None:
    """Add a finished launch's estimated time to the UPMEM clock."""
    if report.timing is not None:
        with _lock:
            _estimated[0] += report.timing.seconds
    elif clock() == "upmem" and report.programs:
        raise RuntimeError(f"{ENVIRONMENT}=upmem times launches by their estimated UPMEM time, and kernel "
                           f"'{report.kernel}' was launched without it: launch it with dpu_timing=True")


def now() -> float:
    """The benchmark clock, in seconds."""
    if clock() == "upmem":
        return _estimated[0]
    return time.perf_counter()


class Event:
    """`torch.cuda.Event` as do_bench uses it: `record()`, then `elapsed_time`."""

    def __init__(self, enable_timing: bool = True, **_):
        self.at = None

    def record(self, stream=None) -> None:
        self.at = now()

    def elapsed_time(self, end: "Event") -> float:
        """Milliseconds from this event to `end`."""
        if self.at is None or end.at is None:
            raise RuntimeError("an event must be recorded before its elapsed time is read")
        return (end.at - self.at) * 1e3

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True


class DeviceInterface:
    """What `triton.testing` reads of `torch.cuda` on a GPU."""
    Event = Event

    @staticmethod
    def synchronize(device=None) -> None:
        pass                    # (launches are synchronous)

    @staticmethod
    def current_device() -> str:
        return "cpu"

    @staticmethod
    def device_count() -> int:
        return 1

    @staticmethod
    def is_available() -> bool:
        return True


def benchmark(kernel_call, quantiles=None, warmup=1, rep=5, **kwargs):
    """The autotuner's benchmarker: `kernel_call` timed `rep` times after
    `warmup` calls, on the benchmark clock; the mean, or the `quantiles`, in ms."""
    for _ in range(warmup):
        kernel_call()
    times = []
    for _ in range(rep):
        t0 = now()
        kernel_call()
        times.append((now() - t0) * 1e3)
    times.sort()
    if quantiles:
        return [times[min(len(times) - 1, int(q * len(times)))] for q in quantiles]
    return sum(times) / len(times)
