"""How this machine's throughput grows with threads, for work in cache and
for work bound by memory: the ceiling of `benchmarks/dpus.py`'s speed-up.

    python benchmarks/host_scaling.py

Each of N threads at once (1, 2, 4, ... up to the cores) runs the same job:
`exp` over a 512 KiB array kept in its core's cache (compute), or copies
between two 64 MiB arrays of its own (memory). NumPy lets the GIL go while
it computes or copies (each call holds it for a few microseconds). Printed: the throughput of N threads against one's, best of 3. A
launch of the DPU model whose DPUs mostly move data (softmax: each DPU
copies its rows into WRAM and back) cannot gain more than the memory
figure; one that computes on data in WRAM (matmul) can gain up to the
compute figure.
"""
import os
import threading
import time

import numpy as np

ROUNDS = {"compute": 200, "memory": 10}


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


def main():
    cores = os.cpu_count() or 1
    counts = [n for n in (1, 2, 4, 8, 16, 32, 64, 128) if n < cores] + [cores]
    for kind in ROUNDS:
        one = None
        for n in counts:
            t = wall(kind, n)
            one = one or t
            print(f"{kind:>7}: {n:3d} threads {t * 1e3:8.1f} ms for {n} jobs = {n * one / t:5.2f}x one thread's "
                  "throughput", flush=True)


if __name__ == "__main__":
    main()
