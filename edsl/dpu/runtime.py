"""The DPU model: runs DPU programs on the host.

A `Program` is an LLVM-dialect module with the DPU runtime library linked in
(edsl.dpu.support), compiled to host object code once per machine and
loaded into this process (edsl.dpu.jit). Its entry points are called through
packed wrappers `_edsl_packed_<name>(void **args)`: `args[i]` points to the
value of (LLVM-level) parameter i, and `args[n]` to the result slot, so any
parameter type (f16 included) passes through memory.

A launch runs on `Launch` contexts: one per tasklet of each DPU (the ABI's
`Ctx` slots: tasklet id, DMA counters, the first error, the MRAM regions a
transfer may touch) and one shared state per DPU (its barrier). A program's
entry runs its tasklets on one worker thread (`Launch.run_entry`): each
tasklet is a user-level context on a stack of its own, switched at its
barriers by the runtime library's scheduler, so that a barrier costs a
context switch in the process, not an OS thread switch (where the host has
no usable ucontext, and for `Launch.run`'s Python work, each tasklet is a
thread). A Triton kernel converted with its tasklets as loops between its
barriers runs them all on tasklet 0, the others ending at once
(edsl.backend.convert.fission). The calling thread only waits, so Ctrl-C interrupts any launch
(barriers and transfers then give up; a tasklet stuck in a loop of its own
is left behind). Errors recorded by the compiled code (DMA rules, MRAM and
WRAM bounds, assertions, index checks, deadlocked barriers) are raised as a
`DpuError` at the source line of their check site once the tasklets return.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import mmap
import math
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import numpy as np

from ..base import cache, sigint
from ..base.errors import DpuError, LoweringError, SourceLoc
from . import jit, races, support
from ..target.dpu import (CTX_SLOTS, DPU_SLOTS, ENTER, EXIT, HOST_CACHE_LINE, LOG_ENDS, LOG_ENTRY, MAX_TASKLETS,
                          OUTSIDE_ARRAYS, OUTSIDE_ARRAYS_LOADED, OVERRUN_SIDES, POLL_ON_MODEL, RACE_ENTRY,
                          RACE_LOG_FULL, RACE_LOG_SLOTS, READ, TRANSFER_NAMES, WRITE, Ctx, Dpu, Err, RaceLog, align_up,
                          dma_violation, error_message)
from .timing import TimingEstimate

if TYPE_CHECKING:
    from ..lowering.counting import CounterTable

PACKED_PREFIX = "_edsl_packed_"
_PACKED = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_CTX_CALL = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@dataclass
class LaunchReport:
    """What one launch did on the DPU model: a Triton kernel's grid, or an
    EDSL function's run (one DPU, one program)."""
    kernel: str
    grid: tuple[int, int, int] = (1, 1, 1)
    num_dpus: int = 1
    dpus_used: int = 1
    num_tasklets: int = 1
    tasklets_used: int = 1
    programs: int = 1
    wram_bytes: int = 0
    dma_reads: int = 0
    dma_read_bytes: int = 0
    dma_writes: int = 0
    dma_write_bytes: int = 0
    host_to_mram_bytes: int = 0
    mram_to_host_bytes: int = 0
    per_dpu_programs: list[int] = field(default_factory=list)
    # The bytes of the arrays each DPU receives: its parts, the hull of what
    # its programs touched in each array (the whole image where the kernel
    # calls EDSL functions).
    per_dpu_part_bytes: list[int] = field(default_factory=list)
    # Per array argument (by name): [lo, hi] per DPU, the bytes of the array
    # (from its first) each DPU's transfers touched ((0, 0) where none).
    array_parts: dict = field(default_factory=dict)
    per_tasklet_dma: list[int] = field(default_factory=list)   # transfers by tasklet id
    # Tiles kept in MRAM (too large for WRAM): each in words, the MRAM scratch
    # they take per DPU, and the DMA that streaming them cost (included in
    # the dma_* figures above).
    spilled_tiles: list[str] = field(default_factory=list)
    spill_bytes: int = 0
    spill_dma_reads: int = 0
    spill_dma_read_bytes: int = 0
    spill_dma_writes: int = 0
    spill_dma_write_bytes: int = 0
    # The estimated time on UPMEM hardware (edsl.dpu.timing), for programs
    # built with executed-block counters; None otherwise.
    timing: TimingEstimate | None = None

    @property
    def tasklets(self) -> int:
        return self.num_tasklets

    # Totals over both directions.
    dma_transfers = property(lambda self: self.dma_reads + self.dma_writes)
    dma_bytes = property(lambda self: self.dma_read_bytes + self.dma_write_bytes)
    spill_dma_transfers = property(lambda self: self.spill_dma_reads + self.spill_dma_writes)
    spill_dma_bytes = property(lambda self: self.spill_dma_read_bytes + self.spill_dma_write_bytes)


# ---- programs ---------------------------------------------------------------------------

def _add_packed_entry(module, name: str) -> None:
    """`_edsl_packed_<name>(ptr)` (`packed_entry`) for llvm.func `name` of `module`."""
    from mlir import ir
    table = ir.SymbolTable(module.operation)
    fn = table[name].operation
    entry = fn.regions[0].blocks[0]
    arg_types = [str(a.type) for a in entry.arguments]
    results = []
    for block in fn.regions[0].blocks:
        term = list(block.operations)[-1].operation
        if term.name == "llvm.return":
            results = [str(v.type) for v in term.operands]
            break
    wrapper = ir.Module.parse(packed_entry(name, arg_types, results[0] if results else None), module.context)
    packed = list(wrapper.body.operations)[-1].operation
    packed.detach_from_parent()
    module.body.append(packed)


def packed_entry(name: str, arg_types: list[str], result: str | None) -> str:
    """LLVM dialect: a declaration of llvm.func `name` and `_edsl_packed_<name>(ptr)`,
    which calls it with the values its argument array points to, and stores
    the result into the last slot."""
    lines = [f"llvm.func @{name}({', '.join(arg_types)}){f' -> {result}' if result else ''}",
             f"llvm.func @{PACKED_PREFIX}{name}(%args: !llvm.ptr) {{"]
    values = []
    for i, t in enumerate(arg_types + ([result] if result else [])):
        lines.append(f"  %p{i} = llvm.getelementptr %args[{i}] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr")
        lines.append(f"  %q{i} = llvm.load %p{i} : !llvm.ptr -> !llvm.ptr")
        if i < len(arg_types):
            lines.append(f"  %a{i} = llvm.load %q{i} : !llvm.ptr -> {t}")
            values.append(f"%a{i}")
    call = f"llvm.call @{name}({', '.join(values)}) : ({', '.join(arg_types)}) -> {result or '()'}"
    if result:
        lines.append(f"  %r = {call}")
        lines.append(f"  llvm.store %r, %q{len(arg_types)} : {result}, !llvm.ptr")
    else:
        lines.append(f"  {call}")
    lines += ["  llvm.return", "}"]
    return "\n".join(lines)


def build(module, entries: list[str], what: str, opt_level: int = 3, mram_shift: int = 0,
          races: bool = False, linked: tuple = (), exported: frozenset = frozenset()) -> bytes:
    """Object code for an LLVM-dialect `module` (changed in place): the runtime
    library linked in (its MRAM addresses the host's plus `mram_shift`,
    `support.MRAM_SHIFT` or 0; `races`: with the check of races between
    tasklets), a packed wrapper per entry, compiled for this host
    (from the on-disk cache when this machine compiled the same IR before);
    `linked`: modules of LLVM IR linked in, (text, the functions it exports)
    of raw functions in C, which call the runtime's functions named in
    `exported`.
    Links it once here, so that a symbol the host cannot give is an error
    naming it and the line that needs it."""
    from ..lowering import to_llvm_ir, verify
    from ..lowering.floats import soft_float_storage
    support.link(module, mram_shift, internal=True, races=races, exported=exported)
    for name in entries:
        _add_packed_entry(module, name)
    soft_float_storage(module.operation)
    verify(module)
    llir = to_llvm_ir(module)
    parts = (jit.host_key(), f"O{opt_level}", llir, *(part for text, names in linked for part in (text, *names)))
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()
    obj = cache.load_bytes(key, "o")
    if obj is None:
        obj = jit.compile_object(llir, opt_level, linked)
        try:
            jit.ObjectProgram(obj, what).address(support.CTX_KEY)
        except jit.MissingSymbols as err:
            raise LoweringError(f"{what}: {err}", _needing(module, err.symbols)) from None
        cache.store_bytes(key, "o", obj)
    return obj


def _needing(module, symbols: list[str]) -> SourceLoc | None:
    """The source line of the first call to one of `symbols`, or of the first
    op on a type the host has no instructions for (code generation turns those
    into library calls)."""
    from mlir import ir

    from ..lowering.pipeline import location_of
    found: list = []

    def visit(op):
        if found:
            return ir.WalkResult.INTERRUPT
        callee = op.attributes["callee"] if "callee" in op.attributes else None
        if callee is not None and ir.FlatSymbolRefAttr(callee).value in symbols:
            found.append(op)
        elif any(str(v.type) in ("f16", "bf16", "i128", "f128") for v in [*op.operands, *op.results]) \
                and op.name not in ("llvm.load", "llvm.store", "llvm.bitcast"):
            found.append(op)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    return location_of(found[0].location) if found else None


class Program:
    """A DPU program loaded into this process."""

    def __init__(self, obj: bytes, name: str, sites: Mapping[int, SourceLoc] | None = None,
                 counters: CounterTable | None = None):
        self.name = name
        self.obj = obj                # (what a process that runs the program elsewhere loads)
        self.sites = dict(sites or {})
        self.counters = counters      # what its executed-block counters count, if it has them
        self._object = jit.ObjectProgram(obj, name)
        key = ctypes.c_uint32 if support.KEY_BITS == 32 else ctypes.c_uint64
        key.from_address(self._object.address(support.CTX_KEY)).value = _ctx_key()
        self._entries: dict[str, Callable] = {}
        self.enter = _CTX_CALL(self._object.address(ENTER))
        self.exit = _CTX_CALL(self._object.address(EXIT))

    def address(self, name: str) -> int:
        return self._object.address(name)

    def spans(self, table: str, n: int) -> list[tuple[int, int]]:
        """The `n` [start, end) pairs of i64 in the program's table `table`
        (`upmem_c.with_address_table`: its C variables in MRAM, in the host's
        memory), each end at the end of its last 8-byte block."""
        pairs = (ctypes.c_int64 * (2 * n)).from_address(self.address(table))
        return [(pairs[2 * k], align_up(pairs[2 * k + 1])) for k in range(n)]

    @functools.cached_property
    def run_tasklets(self) -> Callable[[int], None]:
        """The runtime library's scheduler: runs the tasklets of a block to their end."""
        return _CTX_CALL(self.address(support.RUN_TASKLETS))

    def entry(self, name: str) -> Callable[[ctypes.Array], None]:
        """The packed entry of function `name`: call it with a `void*[]`."""
        fn = self._entries.get(name)
        if fn is None:
            fn = self._entries[name] = _PACKED(self._object.address(PACKED_PREFIX + name))
        return fn


_KEY: list = []


@functools.lru_cache(None)
def _libc():
    """The C library's malloc and free (the access logs live on its heap, where
    the programs' `realloc` grows them)."""
    libc = jit._allowed_libraries()[0]
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    return libc


def _ctx_key() -> int:
    """The process's thread-local key for the running tasklet's context."""
    if not _KEY:
        libc = jit._allowed_libraries()[0]
        key = (ctypes.c_uint32 if support.KEY_BITS == 32 else ctypes.c_uint64)()
        if libc.pthread_key_create(ctypes.byref(key), None) != 0:
            raise DpuError("cannot create a thread-local key for the DPU model")
        _KEY.append(key.value)
    return _KEY[0]


# ---- launches ---------------------------------------------------------------------------

# What DPUs running at once on several host threads write (their shared
# states, contexts, logs' tables, counters) starts on cache lines of its
# own: a line two threads write in turn moves between their cores at each write.
CACHE_LINE = HOST_CACHE_LINE


def _counter_row(counters: int) -> int:
    """The i64 slots of a tasklet's row of `counters` counters: whole cache lines."""
    return align_up(counters, CACHE_LINE // 8)


def _cache_aligned_zeros(shape: tuple[int, ...]) -> np.ndarray:
    """Zeroed int64s of `shape`, starting at a cache line."""
    n = math.prod(shape)
    flat = np.zeros(n + CACHE_LINE // 8, dtype=np.int64)
    start = (-flat.ctypes.data % CACHE_LINE) // 8
    return flat[start:start + n].reshape(shape)


class EntryRun:
    """An entry of a program started on a launch's tasklets (`Launch.start_entry`):
    calling it runs them on the calling thread (the GIL let go while they
    run) and gives the seconds they took; `finish` gives back their stacks,
    or keeps everything they use for the life of the process where they
    still run (Ctrl-C left them behind). Once finished, it no longer runs."""

    def __init__(self, launch: Launch, call: Callable[[], None], uses: tuple,
                 fibers: _Fibers | None = None, rows: slice = slice(None)):
        self.launch, self._call, self.uses, self.fibers, self.rows = launch, call, uses, fibers, rows
        self._state = "ready"               # -> "running" -> "ran"; or "finished"
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            if self._state != "ready":
                return 0.0
            self._state = "running"
        start = time.perf_counter()
        try:
            self._call()
        finally:
            with self._lock:
                self._state = "ran"
        return time.perf_counter() - start

    def finish(self) -> None:
        with self._lock:
            running, self._state = self._state == "running", "finished"
        if self.fibers is None:
            return
        if running:
            _leave_behind(self.launch, self.fibers, *self.uses)   # (in use by the tasklet left behind)
        else:
            self.launch.state[self.rows, Dpu.SCHEDULER] = 0
            _FIBERS.give_back(self.fibers)
        self.fibers = None


class Launch:
    """The contexts of one launch: `dpus` x `tasklets` tasklet contexts and a
    shared state per DPU, over the MRAM regions `regions` ([lo, hi) pairs).
    `first`: the number of its first DPU, for the DPUs first .. first + dpus - 1
    of a larger launch (a rank run in another process, edsl.backend.ranks);
    methods take DPU numbers, and `address()` is where DPU 0's row would be."""

    # The slots a tasklet's run fills (DMA counts, its first error).
    RESULTS = (*range(Ctx.READS, Ctx.ERR_DIR + 1), *range(Ctx.SPILL_READS, Ctx.SPILL_WRITE_BYTES + 1))

    def __init__(self, dpus: int, tasklets: int, regions, counters: int = 0, first: int = 0):
        if not 1 <= tasklets <= MAX_TASKLETS:
            raise DpuError(f"a DPU runs 1 to {MAX_TASKLETS} tasklets, not {tasklets}")
        self.dpus, self.tasklets, self.first = dpus, tasklets, first
        self.regions = np.array(regions, dtype=np.int64).reshape(-1)      # (a copy: `spare` rewrites it)
        self.state = _cache_aligned_zeros((dpus, DPU_SLOTS))
        self.ctx = _cache_aligned_zeros((dpus, tasklets, CTX_SLOTS))
        # Each tasklet's counters on cache lines of their own.
        self.counters = _cache_aligned_zeros((dpus, tasklets, _counter_row(counters)))
        self._footprint = None         # the tasklets' footprints (`keep_footprints`)
        self._log_ends = None          # the access logs' tables by end address (`keep_logs`)
        self._logs = None              # [row, (LOG, LOG_CAP)]: access logs kept from a launch before
        self._fresh = None             # its contexts as `_reset` first made them
        self._reset()

    def _reset(self) -> None:
        """Every slot as a new launch's (one `spare` too: a copy of its first
        contexts, as they were before it ran, where the regions' bounds are
        the same)."""
        self._saves = None             # the save table its transfers use, and what it points to
        self._race = None              # the tasklets' race logs (RaceLog rows), where the launch checks
        self.progress = None           # a base.progress.Progress its runs update (DPUs finished)
        self.state.fill(0)
        self.state[:, Dpu.TASKLETS] = self.tasklets
        self.counters.fill(0)
        bounds = (int(self.regions[0::2].min()), int(self.regions[1::2].max())) if self.regions.size else (0, 0)
        if self._fresh is not None and self._fresh[0, 0, [Ctx.MRAM_LO, Ctx.MRAM_HI]].tolist() == list(bounds):
            np.copyto(self.ctx, self._fresh)
            return
        dpus, tasklets, c = self.dpus, self.tasklets, self.ctx
        c.fill(0)
        c[..., Ctx.MRAM_LO], c[..., Ctx.MRAM_HI] = bounds
        c[..., Ctx.REGIONS] = self.regions.ctypes.data
        c[..., Ctx.NREGIONS] = self.regions.size // 2
        c[..., Ctx.TID] = np.arange(tasklets)[None, :]
        c[..., Ctx.NTASKLETS] = tasklets
        c[..., Ctx.DPU] = (self.state.ctypes.data + np.arange(dpus) * DPU_SLOTS * 8)[:, None]
        c[..., Ctx.DPU_ID] = self.first + np.arange(dpus)[:, None]
        if row := self.counters.shape[-1]:
            c[..., Ctx.COUNTERS] = (self.counters.ctypes.data
                                    + np.arange(dpus * tasklets).reshape(dpus, tasklets) * row * 8)
        if self._footprint is not None:
            self._point_footprints()
        self._fresh = c.copy()

    # -- launches of one shape, one after another ------------------------------
    @property
    def shape(self) -> tuple[int, int, int, int, int]:
        """What a launch's buffers are sized by: DPUs, tasklets, regions, a
        tasklet's counters (a row of whole cache lines), the first DPU."""
        return self.dpus, self.tasklets, self.regions.size // 2, self.counters.shape[-1], self.first

    @staticmethod
    def spare(dpus: int, tasklets: int, regions, counters: int = 0, first: int = 0) -> Launch:
        """A launch's contexts as `Launch(...)` makes them: those a launch of
        the same `shape` gave back (`give_back`), reset, where there are."""
        regions = np.asarray(regions, dtype=np.int64).reshape(-1)
        run = _SPARES.take((dpus, tasklets, regions.size // 2, _counter_row(counters), first))
        if run is None:
            return Launch(dpus, tasklets, regions, counters, first)
        run.regions[:] = regions
        run._reset()
        return run

    def give_back(self) -> None:
        """Done with: its contexts, footprints and access logs are kept for
        the next launch of its `shape` (`spare`), unless a tasklet Ctrl-C
        left running may still use them, or it has more than
        `_SpareLaunches.LARGEST` tasklets."""
        if self.abandoned():
            return
        self.free_race_logs()
        self.progress = None
        kept = self.dpus * self.tasklets <= _SpareLaunches.LARGEST
        flat = self.ctx.reshape(-1, CTX_SLOTS)
        logs = flat[:, [Ctx.LOG, Ctx.LOG_CAP]] if kept else None
        if kept and logs[:, 0].all() and (logs[:, 1] <= _LogBuffers.LARGEST).all():
            self._logs, flat[:, Ctx.LOG] = logs, 0           # (kept with it, not handed to `_LOGS`)
        else:
            self.free_logs()
        if kept:
            _SPARES.give_back(self)

    def _drop(self) -> None:
        """Not kept after all: its access logs go back to `_LOGS`."""
        if self._logs is not None:
            _LOGS.give_back(self._logs[:, 0].copy(), self._logs[:, 1].copy())
            self._logs = None

    # -- access logs (a launch on several DPUs: edsl.dpu.sharing) ------------
    def keep_logs(self, entries: int = 256) -> None:
        """Every tasklet logs the bytes of the arrays it uses (abi.NOTE) in a
        C-heap buffer that its program grows; `free_logs` releases them
        (buffers of earlier launches are used again: `_LOGS`, and those a
        `spare` launch kept)."""
        flat = self.ctx.reshape(-1, CTX_SLOTS)
        if self._logs is not None:
            flat[:, Ctx.LOG], flat[:, Ctx.LOG_CAP] = self._logs[:, 0], self._logs[:, 1]
            self._logs = None
        else:
            flat[:, Ctx.LOG], flat[:, Ctx.LOG_CAP] = _LOGS.take(len(flat), entries)
        flat[:, Ctx.LOG_LEN] = 0
        if self._log_ends is None:              # (kept while a tasklet may log)
            self._log_ends = _cache_aligned_zeros((len(flat), LOG_ENDS))
        else:
            self._log_ends.fill(0)
        flat[:, Ctx.LOG_ENDS] = self._log_ends.ctypes.data + np.arange(len(flat)) * LOG_ENDS * 8

    # -- footprints: the parts of the arrays each DPU's programs touch -----------
    def keep_footprints(self) -> None:
        """Every tasklet keeps, per MRAM region, the hull of the bytes its
        transfers touch there (abi.Ctx.FOOTPRINT; `footprints`)."""
        if self._footprint is None:
            regions = max(1, self.regions.size // 2)
            self._footprint = np.empty((self.dpus, self.tasklets, regions, 2), np.uint64)
            self._point_footprints()
            self._fresh[..., Ctx.FOOTPRINT] = self.ctx[..., Ctx.FOOTPRINT]
        self._empty_footprints(slice(None))

    def _point_footprints(self) -> None:
        flat = self.ctx.reshape(-1, CTX_SLOTS)
        flat[:, Ctx.FOOTPRINT] = self._footprint.ctypes.data + np.arange(len(flat)) * self._footprint[0, 0].nbytes

    def _empty_footprints(self, rows) -> None:
        self._footprint[rows, ..., 0] = np.iinfo(np.uint64).max
        self._footprint[rows, ..., 1] = 0

    def footprints(self) -> np.ndarray:
        """[dpu, region, (lo, hi)]: the hull of the MRAM bytes each DPU's
        transfers touched in each region ((0, 0) where none)."""
        # (tasklets last: NumPy reduces a short middle axis 5 times slower)
        each = np.ascontiguousarray(self._footprint.transpose(0, 2, 3, 1))
        out = np.empty(each.shape[:3], np.uint64)
        np.min(each[:, :, 0], axis=-1, out=out[..., 0])
        np.max(each[:, :, 1], axis=-1, out=out[..., 1])
        out[out[..., 1] <= out[..., 0]] = 0
        return out.view(np.int64)            # (MRAM addresses: below 2**63)

    def set_footprints(self, first: int, footprints: np.ndarray) -> None:
        """Take the footprints of DPUs first .. (as `footprints` gives them,
        from another launch of the same regions: a rank run elsewhere)."""
        rows = slice(first - self.first, first - self.first + len(footprints))
        self._empty_footprints(rows)
        touched = footprints[..., 1] > footprints[..., 0]
        self._footprint[rows, 0][touched] = footprints[touched].astype(np.uint64)

    # -- race logs (the check of races between a DPU's tasklets: edsl.dpu.races) --
    def keep_race_logs(self, entries: int = 1024) -> None:
        """Every tasklet logs its EDSL accesses (abi.RACE_NOTE, in programs
        linked with the race check) in a C-heap buffer its program grows;
        `free_race_logs` releases them."""
        flat = self.ctx.reshape(-1, CTX_SLOTS)
        self._race = np.zeros((len(flat), RACE_LOG_SLOTS), np.int64)
        libc = _libc()
        for row in self._race:
            row[RaceLog.CAP], row[RaceLog.ENTRIES] = entries, libc.malloc(entries * RACE_ENTRY * 8) or 0
        if not self._race[:, RaceLog.ENTRIES].all():
            self.free_race_logs()
            raise MemoryError("cannot allocate the DPU model's race logs")
        flat[:, Ctx.RACE] = self._race.ctypes.data + np.arange(len(flat)) * RACE_LOG_SLOTS * 8

    def take_race_logs(self, dpu: int) -> list[np.ndarray]:
        """The entries (rows of RACE_ENTRY i64) each tasklet of DPU `dpu` logged, by tasklet."""
        rows = self._race[(dpu - self.first) * self.tasklets:(dpu - self.first + 1) * self.tasklets]
        full = np.flatnonzero(rows[:, RaceLog.DROPPED])
        if len(full):
            raise DpuError(RACE_LOG_FULL.format(tasklet=int(full[0])))
        out = []
        for n, buf in rows[:, [RaceLog.LEN, RaceLog.ENTRIES]].tolist():
            entries = np.empty((n, RACE_ENTRY), np.int64)
            ctypes.memmove(entries.ctypes.data, buf, n * RACE_ENTRY * 8)
            out.append(entries)
        return out

    def free_race_logs(self) -> None:
        race = self._race
        if race is None or self.abandoned():
            return
        libc = _libc()
        for p in race[:, RaceLog.ENTRIES].tolist():
            if p:
                libc.free(ctypes.c_void_p(p))
        self.ctx[..., Ctx.RACE] = 0
        self._race = None

    def clear(self) -> None:
        """Forget what the tasklets did (counts, errors, logs, barriers) to run again."""
        for slot in (*self.RESULTS, Ctx.LOG_LEN):
            self.ctx[..., slot] = 0
        if self._race is not None:
            self._race[:, RaceLog.LEN] = 0
        if self._footprint is not None:
            self._empty_footprints(slice(None))
        for slot in (Dpu.COUNT, Dpu.GENERATION, Dpu.FAILED, Dpu.WAIT_SITE, Dpu.WAIT_KEY, Dpu.WAIT_COUNT):
            self.state[:, slot] = 0
        self.counters.fill(0)

    def save_pages(self, table: np.ndarray | None, keep=None) -> None:
        """Transfers save the pages of save table `table` (abi.Ctx.SAVE) before
        they first write them; None: they save nothing. `keep`: what the
        table points to, kept with the launch (a tasklet Ctrl-C left behind
        may still save)."""
        self.ctx[..., Ctx.SAVE] = 0 if table is None else table.ctypes.data
        if table is not None:
            self._saves = (table, keep)

    def take_logs(self, lo: int, hi: int) -> list[np.ndarray]:
        """The entries (rows of LOG_ENTRY i64) the tasklets of DPUs lo .. hi - 1
        logged, DPU by DPU; their logs are emptied."""
        contexts = self.ctx[lo - self.first:hi - self.first].reshape(-1, CTX_SLOTS)
        lengths = contexts[:, Ctx.LOG_LEN].copy()
        out = np.empty((int(lengths.sum()), LOG_ENTRY), dtype=np.int64)
        row_bytes = LOG_ENTRY * 8
        starts = (np.cumsum(lengths) - lengths) * row_bytes + out.ctypes.data
        used = np.flatnonzero(lengths)      # (tasklets that share a thread log into tasklet 0's log)
        for dst, src, n in zip(starts[used].tolist(), contexts[used, Ctx.LOG].tolist(),
                               (lengths[used] * row_bytes).tolist()):
            ctypes.memmove(dst, src, n)
        contexts[:, Ctx.LOG_LEN] = 0
        bounds = [0, *np.cumsum(lengths.reshape(hi - lo, self.tasklets).sum(axis=1)).tolist()]
        return [out[a:b] for a, b in zip(bounds, bounds[1:])]

    def abandoned(self) -> bool:
        """Whether Ctrl-C left a tasklet of this launch running (it may still
        log, and write the arrays)."""
        return any(entry[0] is self for entry in _ABANDONED)

    def free_logs(self) -> None:
        flat = self.ctx.reshape(-1, CTX_SLOTS)
        kept = flat[:, Ctx.LOG] != 0
        if not self.abandoned():
            _LOGS.give_back(flat[kept, Ctx.LOG], flat[kept, Ctx.LOG_CAP])
        flat[:, Ctx.LOG] = flat[:, Ctx.LOG_CAP] = flat[:, Ctx.LOG_LEN] = 0

    def address(self, dpu: int = 0, tid: int = 0) -> int:
        return self.ctx.ctypes.data + ((dpu - self.first) * self.tasklets + tid) * CTX_SLOTS * 8

    def addresses(self, dpu=0) -> np.ndarray:
        """The context addresses of the tasklets of `dpu`, by tasklet id (a
        row for each DPU of an array `dpu`)."""
        rows = (np.asarray(dpu, dtype=np.int64) - self.first)[..., None] * self.tasklets
        return self.ctx.ctypes.data + (rows + np.arange(self.tasklets, dtype=np.int64)) * CTX_SLOTS * 8

    def failed(self, dpu: int) -> bool:
        """Whether a tasklet of DPU `dpu` recorded an error."""
        return bool(self.ctx[dpu - self.first, :, Ctx.ERROR].any())

    def finished_dpus(self) -> int:
        """How many DPUs' tasklets have all finished (a read while they run:
        a count that may lag, for a progress report)."""
        return int(np.count_nonzero((self.state[:, Dpu.COUNT] >> 32) >= self.state[:, Dpu.TASKLETS]))

    def interrupt(self) -> None:
        """Stop every DPU: barriers and transfers give up."""
        self.state[:, Dpu.FAILED] = 1

    def run_alone(self, program: Program, entry: Callable, packed, what: str, race_arrays=None,
                  outside: str = OUTSIDE_ARRAYS, one_thread: str | None = None) -> None:
        """Every tasklet of this launch's one DPU runs `entry(packed)` of
        `program` (a function run alone: an EDSL or C function's `run`); the
        DPU's first error (`outside`: as `raise_error`), then, with the check
        of races (`race_arrays` given: the (name, array) pairs a race may
        name; the program built with it), its first race, raised as a
        DpuError naming `what`. `one_thread`: the name of `entry`, to run the
        tasklets on this thread, switched by the runtime's scheduler where
        they wait or yield, as a DPU's take turns (where the host allows:
        `support.coroutines`), rather than a thread each."""
        if race_arrays is not None:
            self.keep_race_logs()

        def tasklet(tid: int) -> None:
            ctx = self.address(0, tid)
            program.enter(ctx)
            entry(packed)
            program.exit(ctx)
        try:
            if one_thread is not None and support.coroutines():
                self.run_entry(program, one_thread, [ctypes.addressof(packed)] * self.tasklets, self.addresses(0),
                               exit=True)
            else:
                self.run(tasklet)
            self.raise_error(what, program.sites, outside=outside)
            if race_arrays is not None:
                races.raise_first(self.take_race_logs(0), what, program.sites, race_arrays)
        finally:
            self.free_race_logs()

    def run(self, work: Callable[[int], None]) -> None:
        """`work(tid)` on one thread per tasklet; this thread waits (and can be
        interrupted with Ctrl-C)."""
        self._run(work, self.tasklets)

    def run_each(self, jobs: Sequence[Callable[[], object]]) -> list:
        """Each of `jobs` on a host thread of its own, all at once (runs of
        this launch's DPUs); their results in order. This thread waits (and
        can be interrupted with Ctrl-C, which stops the DPUs)."""
        results: list = [None] * len(jobs)

        def work(k: int) -> None:
            results[k] = jobs[k]()
        self._run(work, len(jobs))
        return results

    def run_entry(self, program: Program, entry: str, args: Sequence[int], contexts: Sequence[int],
                  exit: bool = False, dpus: range | None = None, keep_alive=()) -> None:
        """The packed entry `entry` of `program` on every tasklet (`start_entry`);
        this thread waits (and can be interrupted with Ctrl-C). `keep_alive`:
        what else the tasklets use (their WRAM), kept with a tasklet Ctrl-C
        leaves behind."""
        started = self.start_entry(program, entry, args, contexts, exit, dpus, keep_alive)
        try:
            self._run(lambda _: started(), 1)
        finally:
            started.finish()

    def start_entry(self, program: Program, entry: str, args: Sequence[int], contexts: Sequence[int],
                    exit: bool = False, dpus: range | None = None, keep_alive=()) -> EntryRun:
        """The packed entry `entry` of `program` ready to run on every tasklet
        `tid`, with the argument array at address `args[tid]`, as the tasklet
        of context `contexts[tid]` (and marked finished after it with `exit`,
        for an entry that does not do so itself). Calling it runs the tasklets
        on the calling thread (the runtime library's scheduler switches them,
        where the host allows; else each is a thread); `finish` gives back
        what they used. `dpus`: the DPUs the entry runs (all by default;
        entries of disjoint ones may run at once on several threads).
        `keep_alive`: what else the tasklets use (their WRAM)."""
        if not support.coroutines():
            packed = program.entry(entry)

            def work(tid: int) -> None:
                program.enter(int(contexts[tid]))
                packed(int(args[tid]))
                if exit:
                    program.exit(int(contexts[tid]))
            return EntryRun(self, lambda: self.run(work), (args, program, keep_alive))
        rows = slice(None) if dpus is None else slice(dpus.start - self.first, dpus.stop - self.first)
        fibers = _FIBERS.take()
        block = fibers.fill(self.tasklets, program.address(PACKED_PREFIX + entry),
                            program.address(support.TASKLET_START), exit,
                            args, contexts)
        self.state[rows, Dpu.SCHEDULER] = block
        return EntryRun(self, functools.partial(program.run_tasklets, block), (args, program, keep_alive),
                        fibers, rows)

    def _run(self, work: Callable[[int], None], threads: int) -> None:
        if threads == 1 and threading.current_thread() is not threading.main_thread():
            # A host thread running DPUs for a launch (edsl.backend.dpu_run):
            # Ctrl-C reaches the main thread, which waits for it and stops the
            # DPUs; handing the work to another thread would only cost a switch.
            try:
                work(0)
            except BaseException:
                self.interrupt()
                raise
            return
        with sigint.held() as interrupted:      # (Ctrl-C taken by the wait below)
            workers = _POOL.take(threads)
            # (not a SimpleQueue: its get(timeout) of Python 3.11 waits forever where
            # a signal handled in it leaves the time left below zero)
            done: queue.Queue = queue.Queue()
            for tid, worker in enumerate(workers):
                worker.jobs.put((work, tid, done))
            errors, pending = [], len(workers)
            try:
                while pending:
                    if self.progress is not None and self.progress.due():
                        self.progress.update(self.finished_dpus())
                    try:
                        error = done.get(timeout=0.05)
                    except queue.Empty:
                        interrupted.deliver()       # (Python's handler raises KeyboardInterrupt)
                        continue
                    pending -= 1
                    if error is not None:           # (a Python error in `work` itself)
                        errors.append(error)
                        self.interrupt()
            except BaseException:                   # (Ctrl-C, or the error of a handler of its)
                self.interrupt()
                deadline = time.monotonic() + 1.0
                while pending and time.monotonic() < deadline:
                    try:
                        done.get(timeout=max(0.0, deadline - time.monotonic()))
                        pending -= 1
                    except queue.Empty:
                        break
                if pending:
                    # A tasklet in a loop of its own: its threads are not reused, and
                    # its memory and program stay valid for it.
                    _leave_behind(self, work)
                    workers = []
                raise
            finally:
                _POOL.give_back(workers)
            if errors:
                raise errors[0]

    # -- after the tasklets -------------------------------------------------
    def totals(self) -> dict[str, int]:
        flat = self.ctx.reshape(-1, CTX_SLOTS)
        slots = {"dma_reads": Ctx.READS, "dma_read_bytes": Ctx.READ_BYTES, "dma_writes": Ctx.WRITES,
                 "dma_write_bytes": Ctx.WRITE_BYTES, "spill_dma_reads": Ctx.SPILL_READS,
                 "spill_dma_read_bytes": Ctx.SPILL_READ_BYTES, "spill_dma_writes": Ctx.SPILL_WRITES,
                 "spill_dma_write_bytes": Ctx.SPILL_WRITE_BYTES}
        sums = flat[:, list(slots.values())].sum(axis=0).tolist()
        return dict(zip(slots, sums))

    def per_tasklet_dma(self) -> list[int]:
        return (self.ctx[..., Ctx.READS] + self.ctx[..., Ctx.WRITES]).sum(axis=0).tolist()

    def raise_error(self, what: str, sites: Mapping[int, SourceLoc], asserts=(),
                    outside: str = OUTSIDE_ARRAYS) -> None:
        """Raise the first DPU's error as a DpuError at its site (a DPU keeps
        its first error, in the first tasklet's context that holds one: the
        runtime library records no error once the DPU has stopped). `asserts`:
        the (message, "file:line") of each `tl.device_assert`, by number;
        `outside`: why a transfer left the launch's MRAM."""
        errors = self.ctx[..., Ctx.ERROR]
        if not errors.any():
            return
        failed = np.argwhere(errors)
        dpu, tid = (int(i) for i in failed[0])
        c = self.ctx[dpu, tid]
        code, site = int(c[Ctx.ERROR]), int(c[Ctx.ERR_SITE])
        mram, wram, n = int(c[Ctx.ERR_MRAM]), int(c[Ctx.ERR_WRAM]), int(c[Ctx.ERR_BYTES])
        direction = WRITE if int(c[Ctx.ERR_DIR]) != READ else READ
        loc, text = sites.get(site), None
        if code == Err.DEVICE_ASSERT and 0 < site <= len(asserts):
            text, place = asserts[site - 1]
            filename, _, line = place.rpartition(":")
            loc = SourceLoc(filename, int(line), 0) if place else None
        loaded = getattr(loc, "pointer_load", "")
        why = {Err.MRAM_BOUNDS: OUTSIDE_ARRAYS_LOADED.format(where=loaded) if loaded else outside,
               Err.POLL: POLL_ON_MODEL}.get(code, "")
        message = error_message(code, kind=TRANSFER_NAMES[direction], nbytes=n, mram=mram, wram=wram,
                                rule=dma_violation(mram, wram, n), side=OVERRUN_SIDES.get((code, direction), ""),
                                why=why, text=text)
        where = f"{what} on DPU {dpu}" if self.dpus > 1 else what
        raise DpuError(f"{where}: {message}", loc)


class _LogBuffers:
    """C-heap access-log buffers (abi.LOG_ENTRY rows) kept between launches:
    a launch on many DPUs needs one per tasklet, and allocating and freeing
    them one by one is host time every launch would spend. Buffers that grew
    past `LARGEST` entries are freed, not kept."""
    LARGEST = 1 << 16
    KEPT = 1 << 14

    def __init__(self):
        self._lock = threading.Lock()
        self._ptrs = np.zeros(0, np.int64)
        self._caps = np.zeros(0, np.int64)

    def take(self, n: int, entries: int) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            k = min(n, len(self._ptrs))
            ptrs, caps = self._ptrs[len(self._ptrs) - k:], self._caps[len(self._caps) - k:]
            self._ptrs, self._caps = self._ptrs[:len(self._ptrs) - k], self._caps[:len(self._caps) - k]
        libc = _libc()
        new = [libc.malloc(entries * LOG_ENTRY * 8) or 0 for _ in range(n - k)]
        if not all(new):
            self.give_back(np.array([p for p in new if p], np.int64), np.full(sum(map(bool, new)), entries))
            self.give_back(ptrs, caps)
            raise MemoryError("cannot allocate the DPU model's access log")
        return (np.concatenate([ptrs, np.array(new, np.int64)]),
                np.concatenate([caps, np.full(len(new), entries, np.int64)]))

    def give_back(self, ptrs: np.ndarray, caps: np.ndarray) -> None:
        keep = caps <= self.LARGEST
        with self._lock:
            room = max(0, self.KEPT - len(self._ptrs))
            kept = np.flatnonzero(keep)[:room]
            self._ptrs = np.concatenate([self._ptrs, ptrs[kept]])
            self._caps = np.concatenate([self._caps, caps[kept]])
        dropped = np.ones(len(ptrs), dtype=bool)
        dropped[kept] = False
        libc = _libc()
        for p in ptrs[dropped]:
            libc.free(ctypes.c_void_p(int(p)))


_LOGS = _LogBuffers()


class _SpareLaunches:
    """Launches given back (`Launch.give_back`), by shape, for the next
    launch of that shape (`Launch.spare`): a 64-DPU launch's contexts,
    footprints and logs' tables are a megabyte, which new, with logs taken
    and given back, cost about a fifth of its host work (benchmarks/dpus.py).
    The last KEPT given back are kept, each of at most LARGEST tasklets (their
    logs at most as many as `_LogBuffers` keeps)."""
    KEPT = 4
    LARGEST = _LogBuffers.KEPT // KEPT

    def __init__(self):
        self._lock = threading.Lock()
        self._kept: list[tuple[tuple, Launch]] = []

    def take(self, key: tuple) -> Launch | None:
        with self._lock:
            for k, (shape, run) in enumerate(self._kept):
                if shape == key:
                    del self._kept[k]
                    return run
        return None

    def give_back(self, run: Launch) -> None:
        with self._lock:
            self._kept.append((run.shape, run))
            dropped, self._kept = self._kept[:-self.KEPT], self._kept[-self.KEPT:]
        for _, old in dropped:
            old._drop()


_SPARES = _SpareLaunches()
_ABANDONED: list = []          # launches interrupted while a tasklet still ran


def _leave_behind(*objects) -> None:
    """Keep what a tasklet left running uses (its program, stacks, contexts,
    arguments) for the life of the process, interpreter shutdown included
    (a reference no one drops: freeing them under the running tasklet would
    crash the process as it exits)."""
    for obj in objects:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
    _ABANDONED.append(objects)


class _Worker:
    """A host thread that runs tasklets or runs of DPUs, one launch after another."""

    def __init__(self):
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._loop, daemon=True, name="edsl tasklet").start()

    def _loop(self) -> None:
        while True:
            work, tid, done = self.jobs.get()
            try:
                work(tid)
            except BaseException as err:
                done.put(err)
            else:
                done.put(None)


class _Pool:
    """Idle workers, so that a launch does not start threads (starting one
    costs more than a small kernel)."""

    def __init__(self):
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def take(self, n: int) -> list[_Worker]:
        with self._lock:
            taken, self._idle = self._idle[:n], self._idle[n:]
        return taken + [_Worker() for _ in range(n - len(taken))]

    def give_back(self, workers: list[_Worker]) -> None:
        with self._lock:
            self._idle.extend(workers)


_POOL = _Pool()


class _Fibers:
    """What the scheduler of one launch needs (edsl.dpu.support): its block,
    a ucontext and a jump buffer per tasklet and its own jump buffer, a stack per
    tasklet, each below a guard page (an overflow faults instead of
    overwriting another tasklet's stack). Stacks are reserved for
    MAX_TASKLETS at once; the host commits their pages as they are first
    touched, and they are reused launch after launch."""

    STACK_BYTES = 1 << 20     # converted kernels keep tiles in WRAM: their frames are small
    # Each stack's top at another offset in a page: tops a multiple of pages
    # apart would share the same L1 cache sets, which tasklets switching at
    # every barrier then evict from each other.
    STACK_COLOR = 256

    def __init__(self):
        page = mmap.PAGESIZE
        span = self.STACK_BYTES + page
        self._stacks = mmap.mmap(-1, MAX_TASKLETS * span, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        base = ctypes.addressof(ctypes.c_char.from_buffer(self._stacks))
        libc = _libc()
        for t in range(MAX_TASKLETS):
            if libc.mprotect(ctypes.c_void_p(base + t * span), ctypes.c_size_t(page), 0) != 0:
                raise MemoryError("cannot protect the DPU model's tasklet stacks")
        self.stacks = base + page + np.arange(MAX_TASKLETS, dtype=np.int64) * span
        # A ucontext and a jump buffer per tasklet; the scheduler's jump buffer last.
        each = support.UCONTEXT_BYTES + support.JMP_BUF_BYTES
        self._contexts = np.zeros(MAX_TASKLETS * each + support.JMP_BUF_BYTES + 64, dtype=np.uint8)
        self.contexts = align_up(self._contexts.ctypes.data, 64) + np.arange(MAX_TASKLETS + 1, dtype=np.int64) * each
        self.block = np.zeros(support.SCHED_HEADER + MAX_TASKLETS * support.ROW_SLOTS, dtype=np.int64)
        self.rows = self.block[support.SCHED_HEADER:].reshape(MAX_TASKLETS, support.ROW_SLOTS)
        self.filled = 0                      # the tasklets whose rows hold their stacks and contexts
        self.address = self.block.ctypes.data

    def fill(self, tasklets: int, entry: int, start: int, exit: bool, args: Sequence[int],
             contexts: Sequence[int]) -> int:
        """The block's address, filled for a launch of `tasklets` tasklets."""
        header = [0] * support.SCHED_HEADER
        header[support.SCHED_TASKLETS], header[support.SCHED_ENTRY], header[support.SCHED_START] = tasklets, entry, start
        header[support.SCHED_EXIT], header[support.SCHED_MAIN] = int(exit), int(self.contexts[MAX_TASKLETS])
        self.block[:support.SCHED_HEADER] = header
        rows = self.rows[:tasklets]
        if self.filled < tasklets:          # (what the scheduler only reads, once)
            rows[:, support.ROW_UC] = self.contexts[:tasklets]
            rows[:, support.ROW_JB] = self.contexts[:tasklets] + support.UCONTEXT_BYTES
            rows[:, support.ROW_STACK] = self.stacks[:tasklets]
            rows[:, support.ROW_STACK_BYTES] = self.STACK_BYTES - np.arange(tasklets) * self.STACK_COLOR
            self.filled = tasklets
        rows[:, support.ROW_ARGS] = args
        rows[:, support.ROW_CTX] = contexts
        rows[:, support.ROW_DONE] = 0
        return self.address


class _FiberPool:
    """Idle `_Fibers`: one per launch running at a time, kept for the next."""

    def __init__(self):
        self._idle: list[_Fibers] = []
        self._lock = threading.Lock()

    def take(self) -> _Fibers:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return _Fibers()

    def give_back(self, fibers: _Fibers) -> None:
        with self._lock:
            self._idle.append(fibers)


_FIBERS = _FiberPool()
