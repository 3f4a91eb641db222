"""How this machine's throughput grows with work at once: the ceiling of
`benchmarks/dpus.py`'s speed-up.

    python benchmarks/host_scaling.py

Each of N threads at once (1, 2, 4, ... up to the cores) runs the same job:
`exp` over a 512 KiB array kept in its core's cache (compute), or copies
between two 64 MiB arrays of its own (memory). NumPy lets the GIL go while
it computes or copies (each call holds it for a few microseconds).

Then the DPU model's own code: each of N processes at once runs the same
launch of `benchmarks/dpus.py` (64 DPUs, 16 tasklets) on one host thread,
again and again. Processes share no GIL and no memory, only the machine, so
a launch on N threads of one process gains at most what N processes do.

Last, a launch's shape without the model: as long a run of NumPy work as
the launch takes on one thread (BLAS matmuls, one thread each), in 64 equal
pieces (its DPUs), on all the cores at once, one run of consecutive pieces
a thread on threads started beforehand, the thread counts in turn as
`benchmarks/dpus.py` takes them: the speed-up this machine gives a burst of
work that short, whatever runs it.

Printed: the throughput of N against one's (threads: best of 3), and the
bursts' speed-up.
"""
import multiprocessing
import os
import pathlib
import queue
import sys
import threading
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")      # (before NumPy loads its BLAS: a piece is one thread's)

import numpy as np  # noqa: E402

from measure import best, best_in_turn  # noqa: E402

ROUNDS = {"compute": 200, "memory": 10}
LAUNCHES = {"softmax": 20, "matmul": 4}          # launches each process runs, timed, by their name's start


def job(kind: str):
    if kind == "compute":
        x = np.linspace(-1.0, 1.0, 1 << 17, dtype=np.float32)
        out = np.empty_like(x)
        return lambda: [np.exp(x, out=out) for _ in range(ROUNDS[kind])]
    a = np.ones(1 << 24, dtype=np.float32)
    b = np.empty_like(a)
    return lambda: [np.copyto(b, a) for _ in range(ROUNDS[kind])]


def wall(kind: str, threads: int) -> float:
    """Seconds for `threads` threads each doing one job at once (best of 3)."""
    best = float("inf")
    for _ in range(3):
        jobs = [job(kind) for _ in range(threads)]
        start = threading.Barrier(threads + 1)

        def run(j):
            start.wait()
            j()
        pool = [threading.Thread(target=run, args=(j,)) for j in jobs]
        for t in pool:
            t.start()
        start.wait()
        t0 = time.perf_counter()
        for t in pool:
            t.join()
        best = min(best, time.perf_counter() - t0)
    return best


def run_launches(kind: str, launches: int, start, done) -> None:
    """One process: warm up, wait for the others, time `launches` launches."""
    os.environ["EDSL_DPU_WORKERS"] = "1"
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    import dpus
    import edsl.backend
    with edsl.backend.activated():
        launch = next(launch for name, (_, launch, _) in dpus.launches().items() if name.startswith(kind))
        for _ in range(dpus.WARM):
            launch()
        start.wait()
        t0 = time.monotonic()
        for _ in range(launches):
            launch()
        done.put((t0, time.monotonic()))


def model_wall(kind: str, processes: int) -> float:
    """Seconds a round of launches took, `processes` processes running at once."""
    spawn = multiprocessing.get_context("spawn")
    start, done = spawn.Barrier(processes), spawn.Queue()
    pool = [spawn.Process(target=run_launches, args=(kind, LAUNCHES[kind], start, done)) for _ in range(processes)]
    for p in pool:
        p.start()
    spans = [done.get() for _ in pool]
    for p in pool:
        p.join()
    return (max(end for _, end in spans) - min(begin for begin, _ in spans)) / LAUNCHES[kind]


class Workers:
    """Host threads started once, each running what it is handed, as the DPU
    model's workers do (edsl.dpu.runtime)."""

    def __init__(self, n: int):
        self.inboxes = [queue.SimpleQueue() for _ in range(n)]
        self.done: queue.SimpleQueue = queue.SimpleQueue()
        for inbox in self.inboxes:
            threading.Thread(target=self._loop, args=(inbox,), daemon=True).start()

    def _loop(self, inbox) -> None:
        while True:
            inbox.get()()
            self.done.put(None)

    def run(self, jobs) -> None:
        for inbox, job in zip(self.inboxes, jobs):
            inbox.put(job)
        for _ in jobs:
            self.done.get()


def burst(seconds: float, workers: Workers, pieces: int = 64) -> tuple[float, float]:
    """`pieces` matmuls taking about `seconds` on one thread: seconds on one
    thread and on `workers`, in turn (as benchmarks/dpus.py)."""
    def matmul_seconds(n: int) -> float:
        a = np.ones((n, n))
        return best(lambda: a @ a, 5)
    n = 64
    while pieces * matmul_seconds(2 * n) < seconds:
        n *= 2
    n = int(n * (seconds / (pieces * matmul_seconds(n))) ** (1 / 3))
    a = [np.random.default_rng(i).standard_normal((n, n)) for i in range(pieces)]
    out = [np.empty_like(x) for x in a]

    def run(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            np.matmul(a[i], a[i], out=out[i])
    w = len(workers.inboxes)
    jobs = [lambda k=k: run(pieces * k // w, pieces * (k + 1) // w) for k in range(w)]
    times = best_in_turn({1: lambda: run(0, pieces), w: lambda: workers.run(jobs)}, 5, warm=4, block=5)
    return times[1], times[w]


def main():
    cores = os.cpu_count() or 1
    counts = [n for n in (1, 2, 4, 8, 16, 32, 64, 128) if n < cores] + [cores]
    measures = [(kind, wall, "threads", "jobs", "thread's") for kind in ROUNDS]
    measures += [(kind, model_wall, "processes", "launches", "process's (the DPU model)") for kind in LAUNCHES]
    one_launch = {}
    for kind, measure, who, what, whose in measures:
        one = None
        for n in counts:
            t = measure(kind, n)
            one = one or t
            print(f"{kind:>7}: {n:3d} {who} {t * 1e3:8.1f} ms for {n} {what} = {n * one / t:5.2f}x one {whose} "
                  "throughput", flush=True)
        if measure is model_wall:
            one_launch[kind] = one
    workers = Workers(cores)
    for kind, seconds in one_launch.items():
        t1, tn = burst(seconds, workers)
        print(f"{kind:>7}-long burst (64 matmuls): 1 thread {t1 * 1e3:8.1f} ms, {cores} threads "
              f"{tn * 1e3:8.1f} ms = {t1 / tn:5.2f}x faster", flush=True)


if __name__ == "__main__":
    main()
