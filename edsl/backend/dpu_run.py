"""Running the DPUs of a launch, each as on its own MRAM (edsl.dpu.sharing),
once its MRAM image is in place: in this process (edsl.backend.model) or
as a rank in a Ray task (edsl.backend.ranks).

`DpuJob` is what a run needs (picklable); `dpu_runner` runs DPUs on their
contexts; `run_dpus` runs them in one pass on several host threads and
keeps that where they kept apart, else one by one, each on the arrays as
transferred; `merge` writes the gathered results into the arrays.
"""
from __future__ import annotations

import ctypes
import functools
import os
import time
import weakref
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..target.dpu import DMA_ALIGN, ENTRY, LAUNCH, WRAM_MEMREF, Ctx, align_up, lowered_entry_types
from ..dpu.runtime import Launch, Program
from ..dpu.sharing import Gather, SharingError, apart
from ..base.errors import ArgumentError


def _entry_args(entry: str, **values) -> list:
    """The ctypes values of the arguments `abi.ENTRY[entry]` lists, each given
    by name: an int for i32, an address for a pointer, (address, bytes) for
    the WRAM memref (its descriptor's five fields)."""
    out = []
    for arg in ENTRY[entry]:
        v = values[arg.name]
        if arg.type == WRAM_MEMREF:
            buffer, nbytes = v
            out += [ctypes.c_void_p(buffer), ctypes.c_void_p(buffer), ctypes.c_int64(0),
                    ctypes.c_int64(nbytes), ctypes.c_int64(1)]
        else:
            out.append(ctypes.c_int32(v) if arg.type == "i32" else ctypes.c_void_p(v))
    assert len(out) == len(lowered_entry_types(entry))
    return out


# A launch's DPUs run on more host threads than one only where each thread
# gets at least this much of their work, as the last launch of the same
# program on the same grid measured it (`run_dpus`): handing DPUs to
# threads and the Python each thread runs under the GIL cost more than a
# small launch's DPUs do (a 64-DPU vector add that took 1.4 ms on one thread
# took 5 to 7 ms on 16, on a 16-core machine).
PARALLEL_GRAIN = 2e-3
_BUSY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()    # Program -> {launch key: seconds}


def dpu_workers(program: Program | None = None, key=None) -> int:
    """The host threads a launch's DPUs may run on at once (each with its own
    WRAM): EDSL_DPU_WORKERS, else the machine's cores, or fewer where the
    last launch of `program` with this `key` (the same grid, DPUs, tasklets
    and array bytes) had less than PARALLEL_GRAIN of DPU work for each."""
    value = os.environ.get("EDSL_DPU_WORKERS", "")
    if value:
        if not value.isdigit() or int(value) < 1:
            raise ArgumentError(f"EDSL_DPU_WORKERS must be a positive integer, not {value!r}")
        return int(value)
    cores = os.cpu_count() or 1
    busy = _BUSY.get(program, {}).get(key) if program is not None else None
    return cores if busy is None else max(1, min(cores, int(busy / PARALLEL_GRAIN)))


def remember_busy(program: Program, key, seconds: float) -> None:
    """Keep how long the DPUs of a launch of `program` took (`dpu_workers`)."""
    _BUSY.setdefault(program, {})[key] = seconds


_EXECUTOR: list = []


def _executor(workers: int):
    """The pool of host threads DPUs run on, with at least `workers` threads."""
    import concurrent.futures
    if not _EXECUTOR or _EXECUTOR[0]._max_workers < workers:
        _EXECUTOR[:] = [concurrent.futures.ThreadPoolExecutor(max(workers, os.cpu_count() or 1),
                                                              thread_name_prefix="edsl dpu")]
    return _EXECUTOR[0]


def _in_parallel(jobs: list, run: Launch) -> list:
    """Run `jobs` (callables) on host threads at once, their results in order;
    Ctrl-C stops the launch."""
    import concurrent.futures
    futures = [_executor(len(jobs)).submit(job) for job in jobs]
    try:
        concurrent.futures.wait(futures)
    except KeyboardInterrupt:
        run.interrupt()
        concurrent.futures.wait(futures, timeout=1.0)
        raise
    return [f.result() for f in futures]


def _run_and_log(dpus: Callable, run: Launch, lo: int, hi: int, *wram: np.ndarray) -> tuple[list, float]:
    """Run DPUs lo .. hi - 1 (in `wram`, or the runner's own) and take their
    access logs, on the thread that ran them (while other threads still run
    DPUs); and the seconds that took."""
    start = time.perf_counter()
    dpus(lo, hi, *wram)
    return run.take_logs(lo, hi), time.perf_counter() - start


@dataclass
class DpuJob:
    """What running a launch's DPUs needs once its MRAM image is in place.
    Picklable, so that a rank of them can run in another process with the
    same image at the same addresses (edsl.backend.ranks)."""
    grid: tuple[int, int, int]
    step: int                          # num_dpus: DPU d runs programs d, d + step, ...
    dpus: int                          # the DPUs used
    tasklets: int
    values: list                       # the kernel's arguments, ctypes values (pointers: MRAM addresses)
    table: np.ndarray                  # the MRAM a transfer may touch: [lo, hi) pairs
    scratch: int                       # the MRAM address of the spilled tiles' scratch (0: none)
    spans: list[tuple[int, int]]       # the arrays' MRAM spans the kernel may write (edsl.dpu.sharing)
    wram_bytes: int
    threads: int                       # host threads the DPUs may run on at once
    once: bool                         # the DPUs run one by one (a kernel that prints)
    counters: int                      # executed-block counters per tasklet (0: none)
    mram_shift: int = 0                # MRAM addresses are the host's plus this (Mram.shift)
    busy_key: tuple | None = None      # the key its DPU seconds are kept under (`dpu_workers`)

    def contexts(self, first: int = 0, dpus: int | None = None) -> Launch:
        """The contexts of the job's DPUs first .. first + dpus - 1 (all by default)."""
        run = Launch(self.dpus if dpus is None else dpus, self.tasklets, self.table, self.counters, first)
        run.ctx[..., Ctx.SCRATCH] = self.scratch
        return run


def dpu_runner(program: Program, job: DpuJob, run: Launch, keep=()) -> Callable:
    """`dpus(first, end, wram)`: runs DPUs first .. end - 1 of `run`, with a
    WRAM of `job.wram_bytes` in `wram` (by default one buffer: the DPUs run
    in turn). `keep`: what else the tasklets use (the MRAM image)."""
    default_wram = np.zeros(job.wram_bytes + 8, dtype=np.uint8)
    gx, gy, gz = job.grid
    launch_args = dict(grid_x=gx, grid_y=gy, grid_z=gz, step=job.step, ctx=run.address())

    def dpus(first: int, end: int, wram: np.ndarray = default_wram) -> None:
        # Every tasklet runs DPUs first..end-1 in turn (the same programs in the
        # same order, so their barriers meet; each program ends with a barrier
        # where the next one's accesses could race this one's). The entry
        # enters and exits each DPU's context itself.
        # The tasklets' argument arrays (row t: the addresses of tasklet t's
        # argument values) differ only in the last one, `tid` (`call` and
        # `tids` hold the values).
        assert ENTRY[LAUNCH][-1].name == "tid"
        call = job.values + _entry_args(LAUNCH, first_dpu=first, end_dpu=end, tid=0,
                                        wram=(align_up(wram.ctypes.data), job.wram_bytes), **launch_args)
        tids = np.arange(job.tasklets, dtype=np.int32)
        rows = np.empty((job.tasklets, len(call)), dtype=np.int64)
        rows[:, :-1] = [ctypes.addressof(v) for v in call[:-1]]
        rows[:, -1] = tids.ctypes.data + tids.itemsize * np.arange(job.tasklets)
        arrays = rows.ctypes.data + rows.strides[0] * np.arange(job.tasklets)
        run.run_entry(program, LAUNCH, arrays, run.addresses(first),
                      dpus=range(first, end), keep_alive=(call, tids, rows, wram, keep))
    return dpus


def run_dpus(dpus: Callable, job: DpuJob, run: Launch, gather: Gather) -> tuple[list[np.ndarray] | None,
                                                                                   float | None]:
    """Run the DPUs of `run` (with `dpus`, a `dpu_runner`) each as on its own
    MRAM, the arrays as transferred (edsl.dpu.sharing).

    First all run in one pass on the arrays, on `job.threads` host threads at
    once: where they kept apart (`sharing.apart`), that is what each on its
    own MRAM gives (errors included), whatever ran when; their access logs
    are returned and the arrays hold their results. Otherwise (and for a
    kernel that must run `once`, as one that prints) the arrays are restored
    and the DPUs run one by one, each on the arrays as transferred, `gather`
    keeping each one's result; a DPU that fails stops them, the arrays
    restored (no logs are returned). Also returned: the seconds the one pass
    took on its threads, in all (None: no such pass)."""
    ids = range(run.first, run.first + run.dpus)
    run.keep_logs()
    run.ctx[..., Ctx.WATCH_LO] = min((lo for lo, _ in gather.spans), default=0)
    run.ctx[..., Ctx.WATCH_HI] = max((hi for _, hi in gather.spans), default=0)
    busy = None
    if not job.once:
        workers = min(job.threads, run.dpus)
        if workers == 1:
            parts = [_run_and_log(dpus, run, ids.start, ids.stop)]
        else:
            chunk = -(-run.dpus // workers)
            buffers = [np.zeros(job.wram_bytes + 8, dtype=np.uint8) for _ in range(workers)]
            parts = _in_parallel([functools.partial(_run_and_log, dpus, run, lo, min(lo + chunk, ids.stop), b)
                                  for lo, b in zip(range(ids.start, ids.stop, chunk), buffers)], run)
        logs = [log for part, _ in parts for log in part]
        busy = sum(seconds for _, seconds in parts)
        if apart(logs, word=DMA_ALIGN if workers > 1 else 1):
            return logs, busy
        gather.restore()
        run.clear()
    for dpu in ids:
        dpus(dpu, dpu + 1)
        if run.failed(dpu):
            # (its result is not used; a transfer the DMA refused is in its log,
            # outside the arrays: not read)
            gather.restore()
            break
        gather.take(dpu, run.take_logs(dpu, dpu + 1)[0])
    return None, busy


# A copy of the arrays a launch may write is cut into pieces of at least this
# many bytes, copied on the DPUs' host threads at once (ctypes' memmove lets
# the GIL go).
COPY_PIECE = 1 << 20


def read_host(address: int, n: int, threads: int = 1) -> np.ndarray:
    """A copy of the `n` bytes at host address `address` (the MRAM image's
    memory), made on up to `threads` host threads."""
    out = np.empty(n, dtype=np.uint8)
    pieces = min(threads, max(1, n // COPY_PIECE))
    if pieces == 1:
        ctypes.memmove(out.ctypes.data, address, n)
        return out
    step = -(-n // pieces)
    jobs = [functools.partial(ctypes.memmove, out.ctypes.data + at, address + at, min(step, n - at))
            for at in range(0, n, step)]
    for f in [_executor(len(jobs)).submit(job) for job in jobs]:
        f.result()
    return out


def write_host(address: int, data: bytes) -> None:
    """Write `data` at host address `address` (the MRAM image's memory)."""
    ctypes.memmove(address, data, len(data))


def mram_io(job: DpuJob) -> tuple[Callable, Callable, Callable]:
    """`read(address, n)`, `write(address, data)` and `snapshot(address, n)` of
    the launch's MRAM by MRAM address (the host's plus `job.mram_shift`), as
    `sharing.Gather` takes them."""
    shift = job.mram_shift
    return (lambda address, n: ctypes.string_at(address - shift, n),
            lambda address, data: write_host(address - shift, data),
            lambda address, n: read_host(address - shift, n, job.threads))


def merge(gather: Gather) -> SharingError | None:
    """Write the DPUs' gathered results into the arrays; or leave them as they
    were and return why the results do not merge."""
    if not gather.restored():
        raise AssertionError("the DPU model wrote MRAM without logging it (edsl.dpu.sharing)")
    try:
        gather.merge()
    except SharingError as err:
        return err
    return None


def run_apart(program: Program, job: DpuJob, run: Launch, image) -> SharingError | None:
    """Run the DPUs of a launch each on the arrays as transferred (`run_dpus`)
    and write the gathered results into them; or leave them as they were and
    return why the DPUs' results do not merge. A DPU that fails stops the
    launch (its error is in its contexts; the arrays are left as they were).
    `image`: the MRAM image (kept alive while the tasklets run). The seconds
    the DPUs took are kept under `job.busy_key` (`dpu_workers`)."""
    gather = Gather(job.spans, *mram_io(job))
    logs, busy = run_dpus(dpu_runner(program, job, run, image), job, run, gather)
    if busy is not None and job.busy_key is not None:
        remember_busy(program, job.busy_key, busy)
    if logs is not None:
        if run.ctx[..., Ctx.ERROR].any():
            gather.restore()                 # (nothing half-written)
        return None
    if run.ctx[..., Ctx.ERROR].any():
        return None
    return merge(gather)
