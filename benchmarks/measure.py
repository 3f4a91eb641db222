"""The one timing rule of the benchmarks: the best of `reps` runs (after
`warm` unmeasured runs; True: one), in seconds of wall-clock time."""
import time


def best(fn, reps: int, warm: int = 0) -> float:
    for _ in range(int(warm)):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)
