"""Running the DPUs of a launch, each as on its own MRAM (edsl.dpu.sharing),
once its MRAM image is in place: in this process (edsl.backend.model) or
as a rank in a Ray task (edsl.backend.ranks).

`DpuJob` is what a run needs (picklable); `DpuRunner` runs DPUs on their
contexts; `run_dpus` runs them in one pass on several host threads and
keeps that where they kept apart, else one by one, each on the arrays as
transferred; `merge` writes the gathered results into the arrays.
"""
from __future__ import annotations

import ctypes
import functools
import os
import sys
import time
import weakref
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..target.dpu import DMA_ALIGN, ENTRY, LAUNCH, WRAM_MEMREF, Ctx, align_up, lowered_entry_types
from ..dpu.runtime import EntryRun, Launch, Program
from ..dpu.sharing import Gather, SharingError, apart
from ..base.errors import ArgumentError

_VOID_CALL = ctypes.CFUNCTYPE(None)


def _entry_slots(entry: str, **values) -> tuple[np.ndarray, dict[str, int]]:
    """The arguments `abi.ENTRY[entry]` lists, each given by name, one int64
    slot per lowered field: an int for i32 (read from its slot's low bytes,
    both hosts the model runs on being little-endian), an address for a
    pointer, (address, bytes) for the WRAM memref (its descriptor's five
    fields); and each argument's first slot, by name."""
    out, first = [], {}
    for arg in ENTRY[entry]:
        v = values[arg.name]
        first[arg.name] = len(out)
        if arg.type == WRAM_MEMREF:
            buffer, nbytes = v
            out += [buffer, buffer, 0, nbytes, 1]
        else:
            out.append(v)
    assert len(out) == len(lowered_entry_types(entry)) and sys.byteorder == "little"
    return np.array(out, dtype=np.int64), first


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
    and array bytes) had less than PARALLEL_GRAIN of DPU work for each, and
    one where a launch's DPUs on several threads wrote parts of one word."""
    value = os.environ.get("EDSL_DPU_WORKERS", "")
    if value:
        if not value.isdigit() or int(value) < 1:
            raise ArgumentError(f"EDSL_DPU_WORKERS must be a positive integer, not {value!r}")
        return int(value)
    cores = os.cpu_count() or 1
    busy = _BUSY.get(program, {}).get(key) if program is not None else None
    return cores if busy is None else max(1, min(cores, int(busy / PARALLEL_GRAIN)))


def remember_busy(program: Program, key, seconds: float) -> None:
    """Keep how long the DPUs of a launch of `program` took (`dpu_workers`);
    0, DPUs that share words (`run_dpus`), is kept from then on."""
    kept = _BUSY.setdefault(program, {})
    if kept.get(key) != 0.0:
        kept[key] = seconds


@dataclass
class DpuJob:
    """What running a launch's DPUs needs once its MRAM image is in place.
    Picklable, so that a rank of them can run in another process with the
    same image at the same addresses (edsl.backend.ranks)."""
    grid: tuple[int, int, int]
    num_dpus: int                      # the launch's DPUs (abi.dpu_programs: which programs each runs)
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
    # Every write of the arrays is a transfer, which saves the pages it first writes
    # (sharing.Gather): not so where EDSL functions store to MRAM directly.
    pages_saved_by_writes: bool = False
    busy_key: tuple | None = None      # the key its DPU seconds are kept under (`dpu_workers`)
    race_check: bool = False           # its tasklets log their EDSL accesses (edsl.dpu.races)
    # functions giving the variables of its UPMEM C functions their first values
    # (`CompiledC.reset_function`): each DPU starts with its own, as its WRAM on hardware
    variable_resets: tuple = ()
    c_heap: int = 0                    # the WRAM its C functions may take with mem_alloc (alloc.h)
    # its C functions' variables in MRAM, (table, count) per C function with them
    # (`CompiledC.mram_variables_table`): in the program's memory, reset for each DPU
    # with the others (`variable_resets`)
    mram_variable_tables: tuple = ()

    def contexts(self, program: Program, first: int = 0, dpus: int | None = None) -> Launch:
        """The contexts of the job's DPUs first .. first + dpus - 1 (all by
        default) of a launch of `program`: the MRAM they reach is the arrays'
        (`table`), then its C functions' variables in MRAM (where this
        process has `program`; the access logs' claims on them are no
        array's: `sharing.Gather` keeps to `spans`). Given back
        (`Launch.give_back`) when done with, for the next launch of its shape."""
        table = self.table
        # (host addresses: a kernel calling C functions keeps them, `mram_shift` 0)
        variables = [span for name, n in self.mram_variable_tables for span in program.spans(name, n)]
        if variables:
            table = np.concatenate([table, np.array(variables, dtype=np.int64).reshape(-1)])
        run = Launch.spare(self.dpus if dpus is None else dpus, self.tasklets, table, self.counters, first)
        run.ctx[..., Ctx.SCRATCH] = self.scratch
        run.ctx[..., Ctx.C_HEAP] = self.c_heap
        run.keep_footprints()
        if self.race_check:
            run.keep_race_logs()
        return run


class DpuRunner:
    """Runs DPUs of a launch on their contexts: `runner(first, end)` runs DPUs
    first .. end - 1 on this thread, in turn on one WRAM of `job.wram_bytes`;
    `start` readies runs of several ranges of DPUs, each on a WRAM of its
    own, to run on other threads. `keep`: what else the tasklets use (the
    MRAM image)."""

    def __init__(self, program: Program, job: DpuJob, run: Launch, keep=()):
        self.program, self.job, self.run, self.keep = program, job, run, keep
        gx, gy, gz = job.grid
        # Every tasklet's argument array holds the same addresses but for the
        # last one, `tid`: the kernel's values, then the launch's.
        assert ENTRY[LAUNCH][-1].name == "tid"
        self.slots, self.slot_of = _entry_slots(LAUNCH, grid_x=gx, grid_y=gy, grid_z=gz, dpus=job.num_dpus,
                                                ctx=run.address(), first_dpu=0, end_dpu=0, tid=0,
                                                wram=(0, job.wram_bytes))
        self.tids = np.arange(job.tasklets, dtype=np.int32)
        self.values = np.array([ctypes.addressof(v) for v in job.values], dtype=np.int64)
        self.wram_stride = align_up(job.wram_bytes, 64)
        self.resets = [_VOID_CALL(program.address(name)) for name in job.variable_resets]

    @functools.cached_property
    def wram(self) -> np.ndarray:
        """The WRAM DPUs run on in turn on this thread (a pass on several
        threads gives each run its own)."""
        return self._wram(1)

    def _wram(self, n: int) -> np.ndarray:
        """WRAM for `n` runs at once, zeroed."""
        return np.zeros(n * self.wram_stride + 64, dtype=np.uint8)

    def _arguments(self, firsts: np.ndarray, ends: np.ndarray, wram: np.ndarray) -> tuple[np.ndarray, tuple]:
        """The tasklets' argument arrays for running DPUs firsts[j] .. ends[j] - 1
        (row j; tasklet t's address in column t), run j with its WRAM at its
        own place in `wram`; and what they point to."""
        n, tasklets, nv = len(firsts), self.job.tasklets, len(self.values)
        slots = np.tile(self.slots, (n, 1))
        slots[:, self.slot_of["first_dpu"]] = firsts
        slots[:, self.slot_of["end_dpu"]] = ends
        at = self.slot_of["wram"]
        slots[:, at] = slots[:, at + 1] = align_up(wram.ctypes.data, 64) + self.wram_stride * np.arange(n)
        rows = np.empty((n, tasklets, nv + slots.shape[1]), dtype=np.int64)
        rows[:, :, :nv] = self.values
        rows[:, :, nv:] = ((slots.ctypes.data + slots.strides[0] * np.arange(n))[:, None, None]
                           + slots.itemsize * np.arange(slots.shape[1]))
        rows[:, :, -1] = self.tids.ctypes.data + self.tids.itemsize * np.arange(tasklets)
        arrays = rows.ctypes.data + rows.strides[1] * np.arange(n * tasklets).reshape(n, tasklets)
        return arrays, (self.job.values, self.tids, slots, rows, wram, self.keep)

    def __call__(self, first: int, end: int) -> None:
        # Every tasklet runs DPUs first..end-1 in turn (the same programs in the
        # same order, so their barriers meet; each program ends with a barrier
        # where the next one's accesses could race this one's). The entry
        # enters and exits each DPU's context itself. Where the program has C
        # variables, a DPU at a time, each starting with their first values.
        runs = [(first, end)] if not self.resets else [(d, d + 1) for d in range(first, end)]
        for a, b in runs:
            for reset in self.resets:
                reset()
            arrays, uses = self._arguments(np.array([a]), np.array([b]), self.wram)
            self.run.run_entry(self.program, LAUNCH, arrays[0], self.run.addresses(a),
                               dpus=range(a, b), keep_alive=uses)

    def start(self, bounds: np.ndarray) -> list[EntryRun]:
        """Runs of DPUs bounds[j] .. bounds[j + 1] - 1, each ready to run on
        another thread, with a WRAM of its own (`EntryRun`)."""
        assert not self.resets, "DPUs with C variables run in turn on one thread"
        firsts, ends = bounds[:-1], bounds[1:]
        arrays, uses = self._arguments(firsts, ends, self._wram(len(firsts)))
        contexts, started = self.run.addresses(firsts), []
        try:
            for j, (first, end) in enumerate(zip(firsts.tolist(), ends.tolist())):
                started.append(self.run.start_entry(self.program, LAUNCH, arrays[j], contexts[j],
                                                    dpus=range(first, end), keep_alive=uses))
        except BaseException:
            for entry in started:
                entry.finish()
            raise
        return started


def _one_pass(dpus: DpuRunner, run: Launch, workers: int) -> float:
    """Run every DPU of `run` once, on `workers` host threads at once; the
    seconds they took on their threads, in all."""
    ids = range(run.first, run.first + run.dpus)
    if workers == 1:
        start = time.perf_counter()
        dpus(ids.start, ids.stop)
        return time.perf_counter() - start
    # What the threads run is made here, so that they run compiled code only,
    # without the GIL: made on the threads, it took the GIL in turn and
    # started the 16th thread of a softmax launch 3.6 ms after the first (of
    # a 10.7 ms launch). One run of consecutive DPUs a thread: runs of a DPU
    # each, from one queue, gained nothing (docs/benchmarks.md). (Each thread
    # taking its DPUs' logs as its run ends made a softmax launch 1 to 1.5 ms
    # slower, not faster.)
    started = dpus.start(ids.start + run.dpus * np.arange(workers + 1) // workers)
    try:
        return sum(run.run_each(started))
    finally:
        for entry in started:
            entry.finish()


def run_dpus(dpus: DpuRunner, job: DpuJob, run: Launch, gather: Gather) -> tuple[list[np.ndarray] | None,
                                                                                   float | None]:
    """Run the DPUs of `run` (with `dpus`) each as on its own MRAM, the
    arrays as transferred (edsl.dpu.sharing).

    First all run in one pass on the arrays, on `job.threads` host threads at
    once, their transfers saving the pages of the arrays they first write
    into `gather` (where it is `saved_by_writes`): where they kept apart
    (`sharing.apart`), that is what each on its own MRAM gives (errors
    included), whatever ran when; their access logs are returned (none, an
    empty list, where the save table alone showed them apart:
    `Gather.written_apart`) and the arrays hold their results. Otherwise (and for a
    kernel that must run `once`, as one that prints) the arrays are restored
    and the DPUs run one by one, each on the arrays as transferred, `gather`
    keeping each one's result; a DPU that fails stops them, the arrays
    restored (no logs are returned). Also returned: the seconds the one pass
    took on its threads, in all (None: no such pass; 0 where DPUs on several
    threads wrote parts of one word and ran again, but kept apart
    otherwise: `dpu_workers` then gives one thread). Ctrl-C leaves the
    arrays as transferred too, unless a tasklet it left running may still
    write them."""
    try:
        return _pass_or_one_by_one(dpus, job, run, gather)
    except KeyboardInterrupt:
        if not run.abandoned():
            gather.restore()
        raise


def _pass_or_one_by_one(dpus: DpuRunner, job: DpuJob, run: Launch, gather: Gather):
    ids = range(run.first, run.first + run.dpus)
    run.keep_logs()
    run.ctx[..., Ctx.WATCH_LO] = min((lo for lo, _ in gather.spans), default=0)
    run.ctx[..., Ctx.WATCH_HI] = max((hi for _, hi in gather.spans), default=0)
    busy = None
    if not job.once:
        workers = min(job.threads, run.dpus)
        run.save_pages(gather.table, gather)
        busy = _one_pass(dpus, run, workers)
        run.save_pages(None)
        if gather.written_apart() and not run.ctx[..., Ctx.ERROR].any():
            # (their every write a transfer that the save table saw: the logs
            # would show them apart too)
            return [], busy
        logs = run.take_logs(ids.start, ids.stop)
        if apart(logs, word=DMA_ALIGN if workers > 1 else 1):
            return logs, busy
        if workers > 1 and apart(logs, word=1):
            # (apart but for the words they share, which DPUs on one thread
            # may write in turn: the next launch runs its pass on one)
            busy = 0.0
        gather.restore()
        run.clear()
    gather.save()
    for dpu in ids:
        dpus(dpu, dpu + 1)
        if run.failed(dpu):
            # (its result is not used; a transfer the DMA refused is in its log,
            # outside the arrays: not read)
            gather.restore()
            break
        gather.take(dpu, run.take_logs(dpu, dpu + 1)[0])
    return None, busy


def mram_io(job: DpuJob) -> tuple[Callable, Callable]:
    """`read(address, n)` and `write(address, data)` of the launch's MRAM by
    MRAM address (the host's plus `job.mram_shift`), as `sharing.Gather`
    takes them."""
    shift = job.mram_shift
    return (lambda address, n: ctypes.string_at(address - shift, n),
            lambda address, data: ctypes.memmove(address - shift, data, len(data)))


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


def run_apart(program: Program, job: DpuJob, run: Launch, image,
              fits: Callable[[Launch], bool] = lambda run: True) -> SharingError | None:
    """Run the DPUs of a launch each on the arrays as transferred (`run_dpus`)
    and write the gathered results into them; or leave them as they were and
    return why the DPUs' results do not merge. A DPU that fails stops the
    launch (its error is in its contexts; the arrays are left as they were),
    and so do DPUs whose parts of the arrays do not fit their MRAM
    (`fits(run)` false, from their footprints). `image`: the MRAM image
    (kept alive while the tasklets run). The seconds the DPUs took are kept
    under `job.busy_key` (`dpu_workers`)."""
    gather = Gather(job.spans, *mram_io(job), saved_by_writes=job.pages_saved_by_writes)
    try:
        logs, busy = run_dpus(DpuRunner(program, job, run, image), job, run, gather)
        if busy is not None and job.busy_key is not None:
            remember_busy(program, job.busy_key, busy)
        failed = bool(run.ctx[..., Ctx.ERROR].any()) or not fits(run)
        if logs is not None:
            if failed:
                gather.restore()                 # (nothing half-written)
            return None
        return None if failed else merge(gather)
    finally:
        if not run.abandoned():              # (a tasklet Ctrl-C left running may still save pages)
            gather.release()
