"""The one timing rule of the benchmarks: the best of `reps` runs (after one
unmeasured run when `warm`), in seconds of wall-clock time."""
import time


def best(fn, reps: int, warm: bool = False) -> float:
    if warm:
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)
