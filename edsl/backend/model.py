"""A Triton launch on the DPU model: arguments, MRAM image, DPUs, report.

- Pointer arguments are arrays: NumPy arrays, torch CPU tensors, or any object
  with `data_ptr()` (Triton's `TensorWrapper` views of other dtypes
  included), contiguous or strided: the memory a pointer may reach is the
  span its strides cover.
- MRAM (`Mram`): the pointer arguments' memory, laid out as an image (each
  argument region at its own 8-byte slot, keeping its address modulo 8).
  Writable arrays are used in place, read-only ones through a private copy
  (a kernel that stores to one is refused: see `stored_params`); a kernel
  with EDSL regions gets the whole image as one copied buffer (copied back
  after the launch). DMA may only touch the regions (rounded out to 8-byte
  words).
- Each DPU receives its part of each region: the hull of the bytes its
  programs' transfers touch there (`Launch.footprints`), as a UPMEM host
  sends each DPU its rows; its parts and the scratch must fit the 64 MiB of
  its MRAM (checked after the DPUs ran, the arrays then left as they were:
  `_check_parts`). A kernel with EDSL regions receives the whole image on
  every DPU, which must fit before the launch.
- A kernel with tiles too large for WRAM keeps them in a per-DPU MRAM
  scratch (edsl.backend.convert.spill) placed after the arrays in the image.
  The DPUs run in turn, so one host buffer serves as every DPU's scratch (as
  for WRAM); DMA may touch it as it may the arrays.
- Program instances are spread over `num_dpus` DPUs in blocks of consecutive
  ids (`abi.dpu_programs`), one at a time per DPU; the model runs the DPUs
  in turn, each with its WRAM (the kernel's buffers, and a DMA staging buffer
  per tasklet). Every DPU has its own MRAM, as on hardware: on several DPUs
  each runs on the arrays as transferred and the results are gathered as a
  UPMEM host gathers them (`_run_apart`, edsl.dpu.sharing: atomics whose
  old value is unused merge, any other sharing across DPUs is a DpuError).
  The report counts each DPU's parts as sent to it, and its parts of the
  arrays the kernel stores into as read back (`per_dpu_part_bytes`).
- Ranks (64 DPUs): with Ray initialised, the ranks of a launch on several
  run as Ray tasks (edsl.backend.ranks), each on the MRAM image rebuilt at
  the same addresses; the results merge here as above.
- Tasklets: a kernel is compiled for `num_tasklets` (1..24) and every tasklet
  of a DPU runs it, sharing out the tile loops and meeting at barriers, each
  on its own launch context (edsl.dpu.runtime.Launch).
- Compiled with `dpu_timing=True`, the report carries the launch's estimated
  time on UPMEM hardware (`report.timing`, edsl.dpu.timing).
- A broken DMA rule, an MRAM access outside the arrays or a failed device
  assertion raises `DpuError` at the kernel's line after the launch.

`LaunchReport` (edsl.dpu.runtime) is the per-launch record: the launcher
keeps the last one as `launcher.report` and `edsl.backend.last_report()`
returns the most recent launch's.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np

from ..target import dtypes
from ..target.dpu import (DMA_ALIGN, ELEMENT_NAME, MRAM_BYTES, OUTSIDE_ARRAYS, OUTSIDE_KERNEL_C_MRAM, SHARING_ADVICE,
                          SHARING_FORMATS, SHARING_LINE, align_up, c_heap_bytes, dpu_programs, programs_per_dpu)
from ..dpu import races
from ..dpu.runtime import Launch, LaunchReport, Program
from ..dpu.sharing import SharingError
from ..dpu.timing import clock_hz, estimate, launch_estimate
from ..base.errors import ArgumentError, DpuError
from ..base.progress import Progress
from . import bench, ranks
from .compiler import KernelRecord
from .dpu_run import DpuJob, DpuRunner, dpu_workers, run_apart

_LAST: list = [None]

# Grid sizes a launch may have: Triton's limits on GPUs (CUDA's grid).
GRID_LIMITS = (2 ** 31 - 1, 65535, 65535)


def last_report() -> LaunchReport | None:
    """The report of the most recent launch on the DPU model.

    Returns:
        What the launch did (DPUs, tasklets, WRAM, DMA, host transfers, timing), or None before any.
    """
    return _LAST[0]


class Memory:
    """The memory a pointer argument may reach: [lo, hi) host addresses."""

    def __init__(self, value, name: str):
        if isinstance(value, np.ndarray):
            ptr, shape, strides, item = (value.__array_interface__["data"][0], value.shape,
                                         value.strides, value.itemsize)
            self.writable = bool(value.flags.writeable)
        elif callable(getattr(value, "data_ptr", None)):
            device = getattr(value, "device", None)
            if device is not None and getattr(device, "type", str(device)) not in ("cpu", "dpu"):
                raise ArgumentError(f"argument '{name}' is on device {device}; the DPU model "
                                    "takes CPU tensors or NumPy arrays")
            ptr = int(value.data_ptr())
            shape = tuple(value.shape)
            item = int(value.element_size()) if hasattr(value, "element_size") else \
                int(np.dtype(value.dtype).itemsize)
            stride = value.stride() if callable(getattr(value, "stride", None)) else None
            strides = tuple(int(s) * item for s in stride) if stride is not None else \
                tuple(int(np.prod(shape[k + 1:], dtype=np.int64)) * item for k in range(len(shape)))
            flags = getattr(value, "flags", None)
            self.writable = True if flags is None else bool(flags["WRITEABLE"])
        else:
            raise ArgumentError(f"argument '{name}' is a pointer: pass an array (a NumPy array, a "
                                f"torch CPU tensor, or an object with data_ptr()), not "
                                f"{type(value).__name__}")
        if 0 in shape:
            self.lo = self.hi = ptr
        else:
            low = sum(min(0, (d - 1) * s) for d, s in zip(shape, strides))
            high = sum(max(0, (d - 1) * s) for d, s in zip(shape, strides))
            self.lo, self.hi = ptr + low, ptr + high + item
        self.ptr = ptr
        self.item = item
        self.name = name

    @property
    def nbytes(self) -> int:
        return self.hi - self.lo


def _scalar(ty: str, value, name: str):
    """A scalar argument of Triton type `ty` as the ctypes value the program reads."""
    s = dtypes.by_triton(ty)
    if s is None:
        raise ArgumentError(f"argument '{name}' of type {ty} is not supported by the DPU backend")
    try:
        return dtypes.value_bits(s, value)
    except OverflowError:
        raise ArgumentError(dtypes.beyond_range(name, ty, repr(value))) from None
    except (TypeError, ValueError):
        raise ArgumentError(f"argument '{name}' must be a number for type {ty}, "
                            f"not {type(value).__name__}") from None


class Mram:
    """The launch's MRAM: the pointer arguments' memory, as regions.

    Spans that overlap are merged into one region. Each region has a place in
    a virtual MRAM image (8-byte slots keeping each address modulo 8, guard
    bytes between regions), which must fit the 64 MiB of a DPU's MRAM.
    With `direct`, a region whose arrays are all writable is used in place (no
    copy in or out) and any other region is a private copy; without it, every
    region is copied into one image buffer and back (the image is then the
    one region DMA may touch, as EDSL regions expect). A byte's MRAM address
    is the host address where the launch keeps it plus `shift`
    (`support.MRAM_SHIFT`, or 0 for the programs built without it).
    """

    GUARD = 8

    def __init__(self, memories: list[Memory], direct: bool = True, scratch: int = 0, shift: int = 0):
        merged = []                        # [lo, hi) ranges, with their writability
        for m in sorted(memories, key=lambda m: m.lo):
            if merged and m.lo < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], m.hi)
                merged[-1][2] = merged[-1][2] and m.writable
            else:
                merged.append([m.lo, max(m.hi, m.lo + 1), m.writable])
        offset = self.GUARD
        layout = []
        for lo, hi, writable in merged:
            offset = align_up(offset) + lo % 8
            layout.append((lo, hi, offset, writable))
            offset += hi - lo + self.GUARD
        self.size = align_up(offset) + self.GUARD
        if not direct and self.size > MRAM_BYTES:
            raise DpuError(f"the launch's arrays need {self.size} bytes of MRAM, more than "
                           f"the {MRAM_BYTES} bytes of a DPU (a kernel that calls EDSL functions "
                           "receives its whole arrays on every DPU): launch the kernel on parts "
                           "of them (views or slices) that fit together")
        if (self.size if not direct else 0) + scratch > MRAM_BYTES:
            raise DpuError(f"the launch's arrays need {self.size} bytes of MRAM and the kernel's tiles "
                           f"kept in MRAM {scratch} bytes of scratch: more than the {MRAM_BYTES} bytes "
                           "of a DPU")
        # Whether every DPU's parts fit its MRAM whatever they are (the whole image does).
        self.fits_any_parts = self.size + scratch <= MRAM_BYTES
        self.data_bytes = sum(hi - lo for lo, hi, _, _ in layout)
        self.direct = direct
        self.scratch_bytes = scratch
        self.shift = shift
        # (host lo, host hi, host address of lo's byte during the launch, copied?, writable)
        self.regions = []
        self._buffers = []
        base = 0
        if not direct:
            base = self._buffer(self.size + scratch)
        # The scratch of spilled tiles (an MRAM address): after the arrays in the image.
        self.scratch = ((base + self.size if not direct else self._buffer(scratch)) + shift) if scratch else 0
        for lo, hi, off, writable in layout:
            if direct and writable:
                self.regions.append((lo, hi, lo, False, True))
            elif direct:                   # a private copy, guard bytes around it
                start = self._buffer(hi - lo + lo % 8 + 2 * self.GUARD) + self.GUARD + lo % 8
                self.regions.append((lo, hi, start, True, False))
            else:
                self.regions.append((lo, hi, base + off, True, writable))
        if direct:
            table = [(m - m % DMA_ALIGN + shift, align_up(m + hi - lo) + shift) for lo, hi, m, _, _ in self.regions]
            if scratch:
                table.append((self.scratch, self.scratch + scratch))
        else:
            table = [(base + shift, base + self.size + scratch + shift)]
        self.table = np.array(table or [(0, 0)], dtype=np.int64).reshape(-1)
        self.n_table = len(table)
        self.lo = int(self.table[0::2].min()) if table else 0
        self.hi = int(self.table[1::2].max()) if table else 0

    def _buffer(self, nbytes: int) -> int:
        """The 8-byte aligned address of a new zeroed host buffer."""
        buf = np.zeros(nbytes + 16, dtype=np.uint8)
        self._buffers.append(buf)
        return align_up(buf.ctypes.data)

    def region_of(self, host_ptr: int) -> int:
        """The index of the region (in `regions` and the MRAM table) that holds an argument's byte."""
        if not self.direct:
            return 0
        return next(k for k, (lo, hi, _, _, _) in enumerate(self.regions) if lo <= host_ptr < hi or lo == host_ptr)

    def address(self, host_ptr: int) -> int:
        """The MRAM address of an argument's byte at host address `host_ptr`."""
        for lo, hi, m, _, _ in self.regions:
            if lo <= host_ptr < hi or lo == host_ptr:
                return m + host_ptr - lo + self.shift
        raise AssertionError("pointer outside the image")

    def host_address(self, mram: int) -> int | None:
        """The host address of the array byte at MRAM address `mram`."""
        for lo, hi, m, _, _ in self.regions:
            if m <= mram - self.shift < m + hi - lo:
                return lo + mram - self.shift - m
        return None

    def array_spans(self, memories: list[Memory] | None = None) -> list[tuple[int, int]]:
        """The MRAM spans (whole 8-byte words) of the arrays a DPU may reach,
        or of `memories` only."""
        if memories is None:
            pairs = self.table.reshape(-1, 2)[:self.n_table].tolist()
            return [(lo, hi) for lo, hi in pairs if not (self.scratch and lo == self.scratch)]
        return [(self.address(m.lo) - self.address(m.lo) % DMA_ALIGN, align_up(self.address(m.lo) + m.nbytes))
                for m in memories if m.nbytes]

    def copy_in(self) -> None:
        for lo, hi, m, copied, _ in self.regions:
            if copied:
                ctypes.memmove(m, lo, hi - lo)

    def copy_out(self) -> None:
        for lo, hi, m, copied, writable in self.regions:
            if copied and writable:
                ctypes.memmove(lo, m, hi - lo)

    def changed_read_only(self) -> list[tuple[int, int]]:
        """The read-only regions whose private copy differs from the array."""
        return [(lo, hi) for lo, hi, m, copied, writable in self.regions
                if copied and not writable and ctypes.string_at(lo, hi - lo) != ctypes.string_at(m, hi - lo)]


_MRAM_CACHE: dict = {}


def _mram_for(memories: list[Memory], direct: bool, scratch: int, shift: int) -> Mram:
    """The launch's `Mram`; a layout that copies nothing depends only on the
    spans and their writability (and the scratch, which holds nothing from
    one launch to the next), so it is reused across launches."""
    key = (direct, scratch, shift) + tuple((m.lo, m.hi, m.writable) for m in memories)
    mram = _MRAM_CACHE.get(key)
    if mram is None:
        mram = Mram(memories, direct, scratch, shift)
        if direct and len(mram._buffers) == (1 if scratch else 0):
            if len(_MRAM_CACHE) > 64:
                _MRAM_CACHE.clear()
            _MRAM_CACHE[key] = mram
    return mram


def _sharing_error(err: SharingError, kernel: str, mram: Mram, memories: list[Memory], sites) -> DpuError:
    """A DpuError naming the array, the element, the two DPUs and their lines
    (abi.SHARING_FORMATS, as the exported host runner words it)."""
    where = _element_name(err.address, mram, memories) or f"MRAM address {err.address:#x}"

    def line(use) -> str:
        loc = sites.get(use.site)
        return SHARING_LINE.format(line=loc.lineno) if loc is not None else ""
    first, second = err.first, err.second
    what = SHARING_FORMATS[err.why].format(first=first.dpu, second=second.dpu, where=where,
                                           first_verb=first.verb(), second_verb=second.verb(),
                                           first_line=line(first), second_line=line(second))
    return DpuError(f"kernel '{kernel}': {what}. {SHARING_ADVICE}", sites.get(second.site))


def _race_error(race: races.Race, what: str, mram: Mram, memories: list[Memory], sites) -> DpuError:
    """A DpuError naming the two tasklets that race, the element and both lines."""
    def name(address: int, in_mram: bool) -> str | None:
        return _element_name(address, mram, memories) if in_mram else None
    text, loc = races.message(race, what, sites, name)
    return DpuError(text, loc)


def _element_name(address: int, mram: Mram, memories: list[Memory]) -> str | None:
    """The element of an array argument at MRAM `address`, as errors name it
    (abi.ELEMENT_NAME); None outside the arrays."""
    host = mram.host_address(address)
    return next((ELEMENT_NAME.format(index=(host - m.ptr) // m.item, array=m.name) for m in memories
                 if host is not None and m.lo <= host < m.hi), None)


def check_grid(grid) -> tuple[int, int, int]:
    """The grid as three ints, refused where Triton refuses it on GPUs."""
    dims = tuple(int(g) for g in grid)
    for axis, (g, limit) in enumerate(zip(dims, GRID_LIMITS)):
        if not 0 <= g <= limit:
            raise ArgumentError(f"grid size {g} along axis {'xyz'[axis]} is out of range: Triton "
                                f"allows 0 to {limit}")
    return dims


def launch(program: Program, record: KernelRecord, grid, signature, args, num_dpus: int,
           num_tasklets: int) -> LaunchReport:
    """Run every program instance of `grid` on the DPU model."""
    grid = check_grid(grid)
    total = grid[0] * grid[1] * grid[2]
    if record.tasklets != num_tasklets:
        raise DpuError(f"kernel '{record.name}' was compiled for {record.tasklets} tasklets, "
                       f"not {num_tasklets}")
    memories, mram, values = _arguments(record, signature, args)
    dpus_used = min(num_dpus, total)
    report = LaunchReport(kernel=record.name, grid=grid, num_dpus=num_dpus,
                          dpus_used=dpus_used, num_tasklets=num_tasklets,
                          tasklets_used=num_tasklets if total else 0,
                          programs=total, wram_bytes=record.wram_bytes,
                          spilled_tiles=list(record.spills), spill_bytes=mram.scratch_bytes)
    if total == 0:
        if program.counters is not None:
            report.timing = estimate([], (), clock_hz())
    else:
        job = _job(program, record, grid, num_dpus, dpus_used, values, memories, mram)
        run = job.contexts(program)
        try:
            shared, race = _run(program, job, run, mram, record.name)
            if race is not None:
                what = f"kernel '{record.name}'" + (f" on DPU {race[0]}" if dpus_used > 1 else "")
                raise _race_error(race[1], what, mram, list(memories.values()), program.sites)
            _raise_errors(program, record, run, shared, mram, memories)
            hulls = run.footprints() if mram.direct else None
            parts = part_bytes(hulls, mram, run.dpus)
            _check_parts(record.name, parts, mram, run, memories, total, num_dpus)
            _fill_report(report, program, record, run, mram, memories, parts, hulls)
        finally:
            run.give_back()
    _LAST[0] = report
    bench.count(report)
    return report


def _arguments(record: KernelRecord, signature, args) -> tuple[dict[int, Memory], Mram, list]:
    """The pointer arguments' memories (by argument number), the launch's
    MRAM image of them, and every argument's ctypes value (pointers as MRAM
    addresses)."""
    memories = {i: Memory(v, name) for i, ((name, ty), v) in enumerate(zip(signature, args))
                if ty.startswith("*")}
    # Pointers the kernel stores through (None: not known at compile time;
    # then a private copy of a read-only array is compared after the launch).
    stored = record.stored
    for i, m in memories.items():
        if not m.writable and stored is not None and i in stored:
            raise ArgumentError(f"argument '{m.name}' is a read-only array, and kernel "
                                f"'{record.name}' stores through it: pass a writable array")
    mram = _mram_for(list(memories.values()), not record.regions, record.scratch_bytes, record.mram_shift)
    values = []
    for i, ((name, ty), v) in enumerate(zip(signature, args)):
        values.append(ctypes.c_int64(mram.address(memories[i].ptr)) if i in memories
                      else _scalar(ty, v, name))
    return memories, mram, values


def _job(program: Program, record: KernelRecord, grid, num_dpus: int, dpus_used: int, values: list,
         memories: dict[int, Memory], mram: Mram) -> DpuJob:
    """What running the launch's DPUs needs, its MRAM image laid out."""
    # (launches of the program with the same grid, DPUs, tasklets and array bytes do about
    # the same DPU work: `dpu_run.dpu_workers` sizes the thread count from the last one's)
    threads, busy_key = 1, (grid, num_dpus, record.tasklets, mram.data_bytes)
    if dpus_used > 1 and not (record.prints or mram.scratch_bytes or record.regions or record.waits
                              or record.variable_resets):
        # One thread for DPUs that share more than the arrays: a kernel that
        # prints, keeps tiles in the (one) MRAM scratch, or calls EDSL
        # functions (their WRAM buffers are the program's globals) or C
        # functions with variables (the program's too); and for
        # one that uses an atomic's old value: DPUs at once could spin on a
        # lock between them, whose read-modify-writes are atomic within a DPU.
        threads = dpu_workers(program, busy_key)
    stored = record.stored
    written = None if stored is None else [memories[i] for i in stored if i in memories]
    variables = ()
    if any(c.mram_variables for c in record.c_functions):
        from ..codegen.upmem_c import mram_variables_table
        variables = tuple((mram_variables_table(slot), len(c.mram_variables))
                          for slot, c in enumerate(record.c_functions) if c.mram_variables)
    return DpuJob(grid=grid, num_dpus=num_dpus, dpus=dpus_used, tasklets=record.tasklets,
                  values=values, table=mram.table, scratch=mram.scratch,
                  spans=mram.array_spans(written), wram_bytes=max(8, record.wram_bytes),
                  threads=threads, once=record.prints,
                  counters=program.counters.counters if program.counters is not None else 0,
                  mram_shift=mram.shift, busy_key=busy_key,
                  pages_saved_by_writes=not record.regions,
                  race_check=record.race_check, variable_resets=record.variable_resets,
                  mram_variable_tables=variables,
                  # (mem_alloc's heap: the WRAM the kernel's buffers and its functions' variables and buffers leave)
                  c_heap=c_heap_bytes(record.tasklets, record.c_variable_bytes + record.edsl_buffer_bytes,
                                      record.wram_bytes)
                  if record.c_functions else 0)


def _run(program: Program, job: DpuJob, run: Launch, mram: Mram, name: str):
    """Run the launch's DPUs of kernel `name` on their contexts `run`, here
    or (its ranks) as Ray tasks (edsl.backend.ranks): why their results do
    not merge (None: the arrays hold the results, or were left as they were
    on an error), and the first race (DPU, races.Race) or None. Where stderr
    is a terminal, a launch that runs for seconds shows how many DPUs
    finished (base.progress)."""
    shared = race = None
    fits = functools.partial(_fits, mram=mram)
    mram.copy_in()
    run.progress = (Progress(f"kernel '{name}'", total=job.dpus, unit="DPUs finished") if job.dpus > 1
                    else Progress(f"kernel '{name}' on one DPU"))
    try:
        with run.progress:
            if job.dpus == 1 and mram.fits_any_parts:
                DpuRunner(program, job, run, mram)(0, 1)
            elif ranks.on_ray(job):
                shared = ranks.run_ranks(program, job, run, fits)
            else:
                # (one DPU too where its parts may not fit: the arrays are then left as they were)
                shared = run_apart(program, job, run, mram, fits)
        if job.race_check:
            race = next(((d, r) for d in range(job.dpus)
                         if (r := races.first_race(run.take_race_logs(d))) is not None), None)
    finally:
        mram.copy_out()
    return shared, race


def part_bytes(hulls: np.ndarray | None, mram: Mram, dpus: int) -> np.ndarray:
    """[dpu, region]: the bytes of each region of the arrays each of `dpus`
    DPUs receives: the hull of what its transfers touched there (whole
    8-byte words; `hulls`: `Launch.footprints()`); for a kernel with EDSL
    regions (`hulls` None), the whole image."""
    if not mram.direct:
        return np.full((dpus, 1), mram.size, np.int64)
    parts = hulls[:, :len(mram.regions)]
    return parts[..., 1] - parts[..., 0]


def _array_parts(hulls: np.ndarray | None, mram: Mram, memories: dict[int, Memory],
                 dpus: int) -> dict[str, list]:
    """Per array argument: [[lo, hi] per DPU], the bytes of it (from its
    first) that each DPU's transfers touched (`hulls`, as `part_bytes` takes
    them); the whole array where the kernel calls EDSL functions. (Lists:
    reports compare equal.)"""
    arrays = list(memories.values())
    sizes = np.array([m.nbytes for m in arrays], np.int64)[:, None]
    if hulls is None:
        pairs = np.zeros((len(arrays), dpus, 2), np.int64)
        pairs[..., 1] = sizes
    else:
        firsts = np.array([mram.address(m.lo) for m in arrays], np.int64)[:, None, None]
        pairs = np.minimum(np.maximum(hulls[:, [mram.region_of(m.lo) for m in arrays]].transpose(1, 0, 2) - firsts,
                                      0), sizes[..., None])
        pairs[pairs[..., 1] <= pairs[..., 0]] = 0
    return dict(zip((m.name for m in arrays), pairs.tolist()))


def _overfull(parts: np.ndarray, mram: Mram, run: Launch) -> np.ndarray:
    """Per DPU: whether its `parts` of the arrays (as `part_bytes` gives
    them), its scratch and its C functions' variables in MRAM exceed its MRAM."""
    return parts.sum(axis=1) + mram.scratch_bytes + _c_variables_bytes(run, mram) > MRAM_BYTES


def _c_variables_bytes(run: Launch, mram: Mram) -> int:
    """The MRAM the C functions' variables take on each DPU: the regions of
    the launch after the arrays' and the scratch (`DpuJob.contexts`)."""
    variables = run.regions[2 * mram.n_table:]
    return int((variables[1::2] - variables[0::2]).sum())


def _fits(run: Launch, mram: Mram) -> bool:
    """Whether every DPU's parts of the arrays, its scratch and its C
    functions' variables fit its MRAM."""
    if mram.fits_any_parts and not _c_variables_bytes(run, mram):
        return True
    parts = part_bytes(run.footprints() if mram.direct else None, mram, run.dpus)
    return not _overfull(parts, mram, run).any()


def _check_parts(kernel: str, parts: np.ndarray, mram: Mram, run: Launch, memories: dict[int, Memory],
                 programs: int, num_dpus: int) -> None:
    """A DpuError naming the first DPU whose parts of the arrays (`parts`,
    as `part_bytes` gives them), scratch and C variables do not fit its
    MRAM, and its largest parts."""
    over = _overfull(parts, mram, run)
    if not over.any():
        return
    dpu = int(np.argmax(over))
    names = [[] for _ in range(parts.shape[1])]            # (one column: the whole image, `part_bytes`)
    for m in memories.values():
        names[mram.region_of(m.lo)].append(f"'{m.name}'")
    largest = sorted(range(parts.shape[1]), key=lambda k: -parts[dpu, k])[:3]
    of = ", ".join(f"{parts[dpu, k]} of {' and '.join(names[k])}" for k in largest if parts[dpu, k])
    mine = dpu_programs(dpu, programs, num_dpus)
    scratch = f" and {mram.scratch_bytes} bytes of tiles kept in MRAM" if mram.scratch_bytes else ""
    if variables := _c_variables_bytes(run, mram):
        scratch += f" and {variables} bytes of its C functions' variables in MRAM"
    advice = ("Each DPU receives the parts of the arrays that its programs touch: launch on more DPUs (num_dpus, "
              "or EDSL_NUM_DPUS for launches that do not say), each then running fewer programs" if mram.direct
              else "A kernel that calls EDSL or C functions receives its whole arrays on every DPU: launch it on "
                   "parts of them (views or slices) that fit")
    raise DpuError(f"kernel '{kernel}': DPU {dpu} (programs {mine.start} to {mine.stop - 1}) touches "
                   f"{int(parts[dpu].sum())} bytes of the arrays ({of}){scratch}: more than the "
                   f"{MRAM_BYTES} bytes of its MRAM. {advice}")


def _raise_errors(program: Program, record: KernelRecord, run: Launch, shared: SharingError | None, mram: Mram,
                  memories: dict[int, Memory]) -> None:
    """The launch's error, if it had one: stores into read-only arrays, a
    DPU's error, sharing across DPUs."""
    if record.stored is None:
        for lo, hi in mram.changed_read_only():
            names = ", ".join(f"'{m.name}'" for m in memories.values() if lo <= m.lo < hi)
            raise ArgumentError(f"kernel '{record.name}' stored into read-only array argument "
                                f"{names}; the stores were dropped: pass a writable array")
    run.raise_error(f"kernel '{record.name}'", program.sites, record.asserts,
                    outside=OUTSIDE_KERNEL_C_MRAM if record.c_functions else OUTSIDE_ARRAYS)
    if shared is not None:
        raise _sharing_error(shared, record.name, mram, list(memories.values()), program.sites)


def _fill_report(report: LaunchReport, program: Program, record: KernelRecord, run: Launch, mram: Mram,
                 memories: dict[int, Memory], parts: np.ndarray, hulls: np.ndarray | None) -> None:
    """What the DPUs did: DMA, programs per DPU, host<->MRAM bytes (each DPU's
    `parts`, as `part_bytes` gives them from `hulls`), timing."""
    for k, v in run.totals().items():
        setattr(report, k, v)
    report.per_tasklet_dma = run.per_tasklet_dma()
    report.per_dpu_programs = programs_per_dpu(report.programs, report.num_dpus)[:run.dpus]
    # Each DPU receives its parts; the host reads back its parts of the
    # arrays the kernel stores through.
    stored = record.stored
    out = [m for i, m in memories.items() if (i in stored if stored is not None else m.writable)]
    out_regions = sorted({mram.region_of(m.lo) for m in out})
    sent, back = parts.sum(axis=1), parts[:, out_regions].sum(axis=1)
    report.per_dpu_part_bytes = sent.tolist()
    report.array_parts = _array_parts(hulls, mram, memories, run.dpus)
    report.host_to_mram_bytes = int(sent.sum())
    report.mram_to_host_bytes = int(back.sum())
    table = program.counters
    if table is not None:
        report.timing = launch_estimate(table, run.counters, run.ctx, sent.tolist(), back.tolist(),
                                        sum(m.nbytes for m in memories.values()))
