"""The ranks of a launch as Ray tasks: one launch spread over a cluster.

A rank is 64 DPUs (`timing.DPUS_PER_RANK`, the unit the UPMEM SDK
transfers to in parallel): DPUs [64r, 64r + 64) of a launch. With Ray
initialised in this process (`ray.init(address=...)`; `pip install
'triton-edsl[ray]'`), a launch on more than one rank runs each rank as a Ray
task (one CPU each):

- the arrays (the bytes of the launch's MRAM image, as transferred), the
  job (`dpu_run.DpuJob`: arguments, grid, regions) and the program's object
  code go into Ray's object store once per launch; a worker process loads a
  program once and keeps it;
- a task maps the image at the addresses it has in this process, so the
  kernel's arguments (MRAM addresses) and everything the DPUs log or report
  are unchanged, and runs its DPUs as a launch here does
  (`dpu_run.run_dpus`: one pass where they keep apart, else one by one);
- it hands back what each of its DPUs wrote and read (as
  `sharing.Gather.take` keeps it), its contexts' results (errors, DMA
  counts) and executed-block counters (timing);
- here the DPUs' results merge through `Gather` as in a launch run in this
  process, and the same errors are raised: results, errors and reports are
  identical.

`EDSL_DPU_RAY=0` keeps every launch in this process; `EDSL_DPU_RAY=1` makes
Ray required (a launch of several ranks without it initialised is an
error). Kernels that print run in this process (their output in order). A
worker whose process already uses some of those addresses hands its rank
back, and so does one whose CPU cannot run the program's object code
(compiled for this host); the rank then runs here, with a RuntimeWarning.
Linux only (the mapping needs MAP_FIXED_NOREPLACE); elsewhere every rank
runs here.
"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import hashlib
import mmap
import os
import sys
import warnings
from dataclasses import dataclass

import numpy as np

from ..dpu import jit
from ..target.dpu import DMA_ALIGN, Ctx, align_up
from ..dpu.runtime import Launch, Program
from ..dpu.sharing import Gather, SharingError, apart, uses
from ..dpu.timing import DPUS_PER_RANK
from ..base.errors import ArgumentError
from . import dpu_run


def on_ray(job: dpu_run.DpuJob) -> bool:
    """Whether the launch's ranks run as Ray tasks: Ray initialised, several
    ranks, and neither EDSL_DPU_RAY=0 nor a kernel that prints, nor a launch
    that checks races between tasklets (its logs are read in this process)."""
    setting = os.environ.get("EDSL_DPU_RAY", "")
    if setting not in ("", "0", "1"):
        raise ArgumentError(f"EDSL_DPU_RAY must be 0 or 1, not {setting!r}")
    if setting == "0" or job.dpus <= DPUS_PER_RANK or job.once or job.race_check:
        return False
    ray = sys.modules.get("ray")          # (a process that initialised Ray imported it)
    if ray is not None and ray.is_initialized():
        return True
    if setting == "1":
        raise ArgumentError("EDSL_DPU_RAY=1 runs the ranks of a launch as Ray tasks, and Ray is not "
                            "initialised in this process: call ray.init(address=...) first "
                            "(pip install 'triton-edsl[ray]')")
    return False


@dataclass
class Rank:
    """What the DPUs of one rank did, as a task hands it back."""
    first: int                   # its first DPU
    kept_apart: bool             # its DPUs ran in one pass and kept apart
    results: np.ndarray          # [dpu, tasklet, Launch.RESULTS]: errors, DMA counts
    footprints: np.ndarray       # [dpu, region, (lo, hi)]: Launch.footprints
    counters: np.ndarray         # [dpu, tasklet, counters]: executed-block counters
    uses: list                   # (dpu, writes, reads) of each DPU that ran: log rows (sharing.uses)
    finals: list                 # the final bytes of each one's writes (none where a DPU failed)


def run_ranks(program: Program, job: dpu_run.DpuJob, run: Launch,
              fits=lambda run: True) -> SharingError | None:
    """Run the launch's ranks as Ray tasks and merge their DPUs' results into
    the arrays, filling `run`'s contexts (the launch's, in this process); or
    leave the arrays as they were and return why the results do not merge
    (as they are left where `fits(run)`, from the DPUs' footprints, is
    false). Ctrl-C cancels the tasks."""
    import ray
    shipped = dataclasses.replace(job, threads=1)        # (a task asks Ray for one CPU)
    spans = _array_spans(job)
    shift = job.mram_shift
    data = np.concatenate([_view(lo - shift, hi - shift) for lo, hi in spans]) if spans else np.zeros(0, np.uint8)
    job_ref, image_ref = ray.put(shipped), ray.put((spans, data))
    # (in a list, so that Ray fetches the object code only where a worker asks for it)
    code = [ray.put(program.obj)]
    key = hashlib.sha256(program.obj).hexdigest()
    bounds = [(first, min(first + DPUS_PER_RANK, job.dpus)) for first in range(0, job.dpus, DPUS_PER_RANK)]
    task = _remote(ray)
    refs = [task.remote(key, code, program.name, jit.host(), job_ref, image_ref, first, end)
            for first, end in bounds]
    ranks = _results(ray, refs)
    for k, ((first, end), rank) in enumerate(zip(bounds, ranks)):
        if isinstance(rank, str):         # handed back: it runs here (the arrays are as transferred)
            warnings.warn(f"DPUs {first}..{end - 1} of kernel '{program.name}' ran in this process, "
                          f"not on a Ray worker: {rank}", RuntimeWarning, stacklevel=2)
            ranks[k] = run_rank(program, shipped, first, end)
    return _merge(job, run, ranks, fits)


def run_rank(program: Program, job: dpu_run.DpuJob, first: int, end: int, keep=()) -> Rank:
    """Run DPUs first .. end - 1 of the launch on the MRAM image in this
    process (left as transferred), as `dpu_run.run_dpus` runs a launch's."""
    run = job.contexts(program, first, end - first)
    gather = Gather(job.spans, *dpu_run.mram_io(job))
    try:
        logs, _ = dpu_run.run_dpus(dpu_run.DpuRunner(program, job, run, keep), job, run, gather)
        failed = bool(run.ctx[..., Ctx.ERROR].any())
        if logs is not None and not failed:       # each DPU's writes are in the arrays: keep them
            for dpu, log in zip(range(first, end), logs):
                gather.take(dpu, log)
        done = run.ctx[..., list(Launch.RESULTS)], run.footprints(), run.counters.copy()
    finally:
        run.give_back()
    if not failed and not gather.restored():
        raise AssertionError("the DPU model wrote MRAM without logging it (edsl.dpu.sharing)")
    gather.restore()
    used = [(dpu, claims, reads) for (dpu, claims, _), (_, reads) in zip(gather.claims, gather.reads)]
    if logs is not None and failed:
        # The launch fails: what the DPUs used counts, not what they wrote (a
        # transfer the DMA refused lies outside the image).
        used = [(dpu, *uses(log)) for dpu, log in zip(range(first, end), logs)]
    return Rank(first, logs is not None, *done, used, [] if failed else [finals for _, _, finals in gather.claims])


def _merge(job: dpu_run.DpuJob, run: Launch, ranks: list[Rank], fits) -> SharingError | None:
    """The ranks' results in the launch's contexts, and their DPUs' writes
    merged into the arrays (unless a DPU failed, or their parts of the
    arrays do not fit their MRAM: `fits`)."""
    for rank in ranks:
        rows = slice(rank.first, rank.first + len(rank.results))
        run.ctx[rows, :, list(Launch.RESULTS)] = rank.results
        run.counters[rows] = rank.counters
        run.set_footprints(rank.first, rank.footprints)
    failed = np.flatnonzero(run.ctx[..., Ctx.ERROR].any(axis=1))
    if len(failed):
        if not _one_pass(job, ranks):
            # In one process the DPUs would have run one by one, up to the first that fails.
            run.ctx[failed[0] + 1:, :, Ctx.ERROR] = 0
        return None
    if not fits(run):
        return None
    gather = Gather(job.spans, *dpu_run.mram_io(job))
    for rank in ranks:
        for (dpu, claims, reads), finals in zip(rank.uses, rank.finals):
            gather.add(dpu, claims, finals, reads)
    return dpu_run.merge(gather)


def _one_pass(job: dpu_run.DpuJob, ranks: list[Rank]) -> bool:
    """Whether the launch's DPUs, run in this process, would have kept apart
    in their one pass (`dpu_run.run_dpus` on `job.threads` threads), and so all
    run: else they run one by one there, up to the first that fails."""
    if not all(rank.kept_apart for rank in ranks):
        return False
    logs = [np.concatenate([claims, reads]) for rank in ranks for _, claims, reads in rank.uses]
    return apart(logs, word=DMA_ALIGN if min(job.threads, job.dpus) > 1 else 1)


# ---- in the worker ------------------------------------------------------------------------

_PROGRAMS: dict[str, Program] = {}


def _rank_task(key: str, code: list, name: str, host: tuple[str, str, str], job: dpu_run.DpuJob, image,
               first: int, end: int) -> Rank | str:
    """A Ray task: DPUs [first, end) of the launch, on its image placed at its
    addresses; or why this process cannot run them."""
    foreign = _foreign(host)
    if foreign is not None:
        return foreign
    program = _PROGRAMS.get(key)
    if program is None:
        import ray
        if len(_PROGRAMS) >= 64:
            _PROGRAMS.clear()
        program = _PROGRAMS[key] = Program(ray.get(code[0]), name)
    pages = _place(_pages(job.table - job.mram_shift))
    if pages is None:
        return "its process uses some of the addresses of the launch's arrays"
    spans, data = image
    try:
        offset = 0
        for lo, hi in spans:
            ctypes.memmove(lo - job.mram_shift, data[offset:offset + hi - lo].ctypes.data, hi - lo)
            offset += hi - lo
        rank = run_rank(program, job, first, end, keep=pages)
    except KeyboardInterrupt:
        pages = None                   # (a tasklet left running may still use them)
        raise
    finally:
        if pages is not None:
            _unplace(pages)
    return rank


def _foreign(host: tuple[str, str, str]) -> str | None:
    """Why this process cannot run object code compiled for `host` (triple,
    CPU, features: `jit.host()`), or None."""
    triple, cpu, features = jit.host()
    if triple != host[0]:
        return f"its host is {triple}, the program's {host[0]}"
    missing = {f[1:] for f in host[2].split(",") if f.startswith("+")} - \
        {f[1:] for f in features.split(",") if f.startswith("+")}
    if missing:
        return f"its CPU ({cpu}) lacks {', '.join(sorted(missing))}, for which the program is compiled"
    return None


@functools.lru_cache(None)
def _remote(ray):
    # (a crash of the model is no reason to run the rank again)
    return ray.remote(num_cpus=1, max_retries=0)(_rank_task)


def _results(ray, refs: list) -> list:
    """The tasks' results; Ctrl-C while waiting cancels them."""
    try:
        pending = list(refs)
        while pending:
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=0.1)
        return ray.get(refs)
    except KeyboardInterrupt:
        for ref in refs:
            ray.cancel(ref)
        raise


def _array_spans(job: dpu_run.DpuJob) -> list[tuple[int, int]]:
    """The MRAM spans of the image the host transfers (the scratch of spilled tiles is not)."""
    return [(lo, hi) for lo, hi in job.table.reshape(-1, 2).tolist() if hi > lo and lo != job.scratch]


def _view(lo: int, hi: int) -> np.ndarray:
    return np.ctypeslib.as_array((ctypes.c_uint8 * (hi - lo)).from_address(lo))


def _pages(table: np.ndarray) -> list[tuple[int, int]]:
    """The whole pages the regions of `table` ([lo, hi) pairs) lie in, merged."""
    page = mmap.PAGESIZE
    out: list[tuple[int, int]] = []
    for lo, hi in sorted((lo, hi) for lo, hi in table.reshape(-1, 2).tolist() if hi > lo):
        lo, hi = lo - lo % page, align_up(hi, page)
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return out


_MAP_FIXED_NOREPLACE = 0x100000      # Linux 4.17: fails (EEXIST) where the range is in use


@functools.lru_cache(None)
def _mmap():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return libc


def _place(pages: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """Zeroed memory mapped at exactly these page ranges of this process, or
    None (and nothing mapped) where any is in use."""
    if not sys.platform.startswith("linux"):
        return None
    libc, placed = _mmap(), []
    for lo, hi in pages:
        got = libc.mmap(lo, hi - lo, mmap.PROT_READ | mmap.PROT_WRITE,
                        mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_FIXED_NOREPLACE, -1, 0)
        if got != lo:
            if got is not None and got != ctypes.c_void_p(-1).value:
                libc.munmap(got, hi - lo)        # (a kernel before 4.17 takes the address as a hint)
            _unplace(placed)
            return None
        placed.append((lo, hi))
    return placed


def _unplace(pages: list[tuple[int, int]]) -> None:
    for lo, hi in pages:
        _mmap().munmap(lo, hi - lo)
