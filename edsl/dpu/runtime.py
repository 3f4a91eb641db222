"""Host execution of DPU programs: the DPU model's runtime.

A `Program` is an LLVM-dialect module JIT-compiled by MLIR's ExecutionEngine,
with the DPU intrinsics bound to host implementations: tasklet id and count,
barrier, and MRAM<->WRAM DMA checked against the UPMEM rules. `run_tasklets`
runs one entry on N tasklets (threads), as a DPU runs its program on all of
its tasklets; the JIT-compiled code runs outside the GIL.

DMA rule violations cannot unwind through JIT-compiled frames, so the runtime
records the first one, stops performing transfers, opens the barriers, and
raises it as a `DpuError` (naming the user's line) once the tasklets return.
"""
from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass, field
from typing import Callable, Mapping

from mlir import ir
from mlir.execution_engine import ExecutionEngine

from ..errors import DpuError, SourceLoc
from .limits import (ASSERT_FAIL, BARRIER, BOUNDS_FAIL, MAX_TASKLETS, ME, MRAM_READ, MRAM_WRITE,
                     NR_TASKLETS,
                     dma_violation)



@dataclass
class LaunchStats:
    """What one launch did on the DPU model."""
    tasklets: int = 1
    dma_reads: int = 0
    dma_writes: int = 0
    dma_bytes: int = 0


@dataclass
class _Launch:
    tasklets: int
    sites: Mapping[int, SourceLoc]
    barrier: threading.Barrier
    stats: LaunchStats
    lock: threading.Lock = field(default_factory=threading.Lock)
    error: DpuError | None = None

    def fail(self, message: str, site: int) -> None:
        with self.lock:
            if self.error is None:
                loc = self.sites.get(site) or _SITES.get(site)
                self.error = DpuError(message, loc)
        self.barrier.abort()


_tls = threading.local()  # .launch, .tasklet

# Source lines of the run-time checks of every program compiled in this
# process, for launches that do not name their own (a kernel inlining EDSL
# functions).
_SITES: dict[int, SourceLoc] = {}


def register_sites(sites: Mapping[int, SourceLoc]) -> None:
    _SITES.update(sites)


def _me() -> int:
    return _tls.tasklet


def _nr_tasklets() -> int:
    return _tls.launch.tasklets


def _barrier() -> None:
    try:
        _tls.launch.barrier.wait()
    except threading.BrokenBarrierError:
        pass  # a tasklet failed: the launch is being abandoned


def _dma(kind: str, mram: int, wram: int, nbytes: int, site: int,
         mram_end: int, wram_end: int) -> None:
    launch: _Launch = _tls.launch
    if launch.error is not None:
        return
    why = dma_violation(mram, wram, nbytes)
    if why is None and (mram + nbytes > mram_end or wram + nbytes > wram_end):
        side = "MRAM source" if mram + nbytes > mram_end else "WRAM buffer"
        if kind == "mram_write":
            side = "MRAM destination" if mram + nbytes > mram_end else "WRAM source"
        why = f"{nbytes} bytes overrun the {side}"
    if why is not None:
        launch.fail(f"{kind}: {why}", site)
        return
    if kind == "mram_read":
        ctypes.memmove(wram, mram, nbytes)
    else:
        ctypes.memmove(mram, wram, nbytes)
    with launch.lock:
        stats = launch.stats
        if kind == "mram_read":
            stats.dma_reads += 1
        else:
            stats.dma_writes += 1
        stats.dma_bytes += nbytes


def _assert_fail(site: int) -> None:
    _tls.launch.fail("assertion failed", site)


_I64 = ctypes.c_int64
_CALLBACKS = {
    ME: ctypes.CFUNCTYPE(ctypes.c_int32)(_me),
    NR_TASKLETS: ctypes.CFUNCTYPE(ctypes.c_int32)(_nr_tasklets),
    BARRIER: ctypes.CFUNCTYPE(None)(_barrier),
    MRAM_READ: ctypes.CFUNCTYPE(None, *[_I64] * 6)(
        lambda m, w, n, s, me, we: _dma("mram_read", m, w, n, s, me, we)),
    MRAM_WRITE: ctypes.CFUNCTYPE(None, *[_I64] * 6)(
        lambda m, w, n, s, me, we: _dma("mram_write", m, w, n, s, me, we)),
    ASSERT_FAIL: ctypes.CFUNCTYPE(None, _I64)(_assert_fail),
    BOUNDS_FAIL: ctypes.CFUNCTYPE(None, _I64)(lambda site: _tls.launch.fail("index out of bounds", site)),
}

_PACKED = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class Program:
    """An LLVM-dialect module compiled for execution on the host DPU model."""

    def __init__(self, module: ir.Module, opt_level: int = 3):
        self._engine = ExecutionEngine(module, opt_level=opt_level)
        for name, callback in _CALLBACKS.items():
            self._engine.raw_register_runtime(name, ctypes.cast(callback, ctypes.c_void_p))
        self._entries: dict[str, Callable] = {}

    def entry(self, name: str) -> Callable[[ctypes.Array], None]:
        """The packed entry of function `name`: call it with a `void*[]` holding
        the address of each (LLVM-level) argument, then of the result slot."""
        fn = self._entries.get(name)
        if fn is None:
            address = self._engine.raw_lookup(name)
            if not address:
                raise DpuError(f"no function named {name!r} in the program")
            fn = self._entries[name] = _PACKED(address)
        return fn


def in_launch() -> bool:
    """Is this thread running a tasklet of a launch?"""
    return getattr(_tls, "launch", None) is not None


def run_tasklets(body: Callable[[], None], tasklets: int = 1,
                 sites: Mapping[int, SourceLoc] | None = None) -> LaunchStats:
    """Run `body` (which calls into a Program) on `tasklets` threads of one DPU.

    Raises the first DMA-rule violation as a DpuError after all tasklets stop.
    """
    if not 1 <= tasklets <= MAX_TASKLETS:
        raise DpuError(f"a DPU runs 1 to {MAX_TASKLETS} tasklets, not {tasklets}")
    launch = _Launch(tasklets, sites or {}, threading.Barrier(tasklets), LaunchStats(tasklets))
    outer = getattr(_tls, "launch", None), getattr(_tls, "tasklet", None)

    def tasklet(i: int) -> None:
        _tls.launch, _tls.tasklet = launch, i
        body()

    try:
        if tasklets == 1:
            tasklet(0)
        else:
            threads = [threading.Thread(target=tasklet, args=(i,)) for i in range(1, tasklets)]
            for t in threads:
                t.start()
            try:
                tasklet(0)
            finally:
                for t in threads:
                    t.join()
    finally:
        _tls.launch, _tls.tasklet = outer
    if launch.error is not None:
        raise launch.error
    return launch.stats
