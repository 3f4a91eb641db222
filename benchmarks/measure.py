"""The one timing rule of the benchmarks: the best of `reps` runs (after
`warm` unmeasured runs; True: one), in seconds of wall-clock time; for
settings compared as a ratio, their runs taken in turn (`best_in_turn`)."""
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


def best_in_turn(fns: dict, reps: int, warm: int = 0, block: int = 1) -> dict:
    """`best` of each of `fns` (by key), their runs taken in turn: one of each
    (`block` runs of each, timed together, their mean), `reps` times, after
    `warm` unmeasured turns. A machine whose speed drifts over the run
    (other loads, its clock) then favours none of them."""
    for _ in range(int(warm)):
        for fn in fns.values():
            fn()
    times = {key: [] for key in fns}
    for _ in range(reps):
        for key, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(block):
                fn()
            times[key].append((time.perf_counter() - t0) / block)
    return {key: min(t) for key, t in times.items()}
