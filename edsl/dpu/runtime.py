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
import platform
import sys
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


class _BarrierState(ctypes.Structure):
    _fields_ = [("count", ctypes.c_int32), ("generation", ctypes.c_int32), ("tasklets", ctypes.c_int32)]


# The barrier of the running launch. Tasklets wait at it in compiled code,
# without the GIL (a Python callback per barrier costs ~0.25 ms with 16
# threads); where the futex is not available, the Python barrier serves.
_BARRIER = _BarrierState(0, 0, 1)
_LAUNCH_LOCK = threading.Lock()  # one multi-tasklet launch at a time uses it

# `edsl_dpu_barrier` for a program: a generation-counting barrier over
# `_BARRIER`; waiting tasklets sleep in the kernel (Linux futex) rather than
# spin, since tasklets may outnumber cores.
_FUTEX_SYSCALL = {"x86_64": 202, "aarch64": 98}.get(platform.machine())
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
_BARRIER_TEXT = """
  llvm.func @syscall(i64, ...) -> i64
  llvm.func @{name}() {{
    %state = llvm.mlir.constant({address} : i64) : i64
    %count = llvm.inttoptr %state : i64 to !llvm.ptr
    %gen_p = llvm.getelementptr %count[1] : (!llvm.ptr) -> !llvm.ptr, i32
    %n_p = llvm.getelementptr %count[2] : (!llvm.ptr) -> !llvm.ptr, i32
    %one = llvm.mlir.constant(1 : i32) : i32
    %zero = llvm.mlir.constant(0 : i32) : i32
    %futex = llvm.mlir.constant({futex} : i64) : i64
    %wait_op = llvm.mlir.constant({wait} : i32) : i32
    %wake_op = llvm.mlir.constant({wake} : i32) : i32
    %all = llvm.mlir.constant(2147483647 : i32) : i32
    %null = llvm.mlir.zero : !llvm.ptr
    %n = llvm.load %n_p atomic acquire {{alignment = 4 : i64}} : !llvm.ptr -> i32
    %gen = llvm.load %gen_p atomic acquire {{alignment = 4 : i64}} : !llvm.ptr -> i32
    %arrived = llvm.atomicrmw add %count, %one acq_rel : !llvm.ptr, i32
    %last = llvm.sub %n, %one : i32
    %is_last = llvm.icmp "eq" %arrived, %last : i32
    llvm.cond_br %is_last, ^release, ^wait
  ^release:
    llvm.store %zero, %count atomic release {{alignment = 4 : i64}} : i32, !llvm.ptr
    %next = llvm.atomicrmw add %gen_p, %one acq_rel : !llvm.ptr, i32
    %w = llvm.call @syscall(%futex, %gen_p, %wake_op, %all) vararg(!llvm.func<i64 (i64, ...)>) : (i64, !llvm.ptr, i32, i32) -> i64
    llvm.return
  ^wait:
    %now = llvm.load %gen_p atomic acquire {{alignment = 4 : i64}} : !llvm.ptr -> i32
    %same = llvm.icmp "eq" %now, %gen : i32
    llvm.cond_br %same, ^sleep, ^done
  ^sleep:
    %s = llvm.call @syscall(%futex, %gen_p, %wait_op, %gen, %null) vararg(!llvm.func<i64 (i64, ...)>) : (i64, !llvm.ptr, i32, i32, !llvm.ptr) -> i64
    llvm.br ^wait
  ^done:
    llvm.return
  }}
"""


def _define_barrier(module: ir.Module) -> bool:
    """Give `module`'s declaration of the barrier the body above; False if it
    has none (then it does not use the barrier, or defines it itself)."""
    decl = None
    for op in module.body.operations:
        op = op.operation
        if op.name == "llvm.func" and ir.StringAttr(op.attributes["sym_name"]).value == BARRIER:
            decl = op
    if decl is None or decl.regions[0].blocks or _FUTEX_SYSCALL is None or sys.platform != "linux":
        return False
    decl.erase()
    table = ir.SymbolTable(module.operation)
    text = _BARRIER_TEXT.format(name=BARRIER, address=ctypes.addressof(_BARRIER), futex=_FUTEX_SYSCALL,
                                wait=_FUTEX_WAIT_PRIVATE, wake=_FUTEX_WAKE_PRIVATE)
    source = ir.Module.parse(text, module.context)  # owns the ops until they move
    for op in list(source.body.operations):
        op = op.operation
        if ir.StringAttr(op.attributes["sym_name"]).value in table:
            continue
        op.detach_from_parent()
        module.body.append(op)
    return True


class Program:
    """An LLVM-dialect module compiled for execution on the host DPU model."""

    def __init__(self, module: ir.Module, opt_level: int = 3):
        native_barrier = _define_barrier(module)
        self._engine = ExecutionEngine(module, opt_level=opt_level)
        for name, callback in _CALLBACKS.items():
            if not (native_barrier and name == BARRIER):
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
    if outer[0] is not None:
        raise DpuError("a launch cannot start inside another launch")

    def tasklet(i: int) -> None:
        _tls.launch, _tls.tasklet = launch, i
        body()

    with _LAUNCH_LOCK:
        _BARRIER.count, _BARRIER.tasklets = 0, tasklets
        _run(tasklet, tasklets, outer)
    if launch.error is not None:
        raise launch.error
    return launch.stats


def _run(tasklet, tasklets: int, outer) -> None:
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
