"""Run programs on the DPU model with executed-block counters, and estimate their DPU time.

Until the runtime provides `edsl_dpu_counters()` to every program, this
harness gives it a body: the running tasklet's row of a counter array it owns
(one launch at a time). It runs

  * EDSL functions: `run_edsl(fn, args, tasklets)`, one DPU;
  * Triton kernels on the `dpu` backend: `run_triton(kernel, grid, args, ...)`,
    each DPU's programs in turn through `__dpu_main`, so that counters and DMA
    counts are per DPU and per tasklet.
"""
from __future__ import annotations

import ctypes
import os

import numpy as np

os.environ.setdefault("TRITON_DEFAULT_BACKEND", "dpu")

from mlir import ir  # noqa: E402

from edsl.dpu import timing  # noqa: E402
from edsl.dpu.abi import MAX_TASKLETS, ME  # noqa: E402
from edsl.dpu.runtime import Program, run_tasklets  # noqa: E402
from edsl.lowering.counting import COUNTERS, CounterTable, count_executed_blocks  # noqa: E402


def _counted_program(text: str, skip=()) -> tuple[Program, CounterTable, np.ndarray, ir.Context]:
    """`text` (LLVM dialect) with counters, compiled; the counters array is
    [tasklet, counter]."""
    ctx = ir.Context()
    module = ir.Module.parse(text, ctx)
    table = count_executed_blocks(module, skip)
    counters = np.zeros((MAX_TASKLETS, max(1, table.counters)), dtype=np.int64)
    body = f"""
      llvm.func @{COUNTERS}() -> !llvm.ptr {{
        %t = llvm.call @{ME}() : () -> i32
        %t64 = llvm.sext %t : i32 to i64
        %row = llvm.mlir.constant({counters.shape[1] * 8} : i64) : i64
        %off = llvm.mul %t64, %row : i64
        %base = llvm.mlir.constant({counters.ctypes.data} : i64) : i64
        %a = llvm.add %base, %off : i64
        %p = llvm.inttoptr %a : i64 to !llvm.ptr
        llvm.return %p : !llvm.ptr
      }}
      llvm.func @{ME}() -> i32 attributes {{sym_visibility = "private"}}"""
    ir.SymbolTable(module.operation)[COUNTERS].operation.erase()
    symbols = {ir.StringAttr(op.operation.attributes["sym_name"]).value for op in module.body.operations
               if "sym_name" in op.operation.attributes}
    source = ir.Module.parse(body, ctx)
    for op in list(source.body.operations):
        op = op.operation
        if ir.StringAttr(op.attributes["sym_name"]).value in symbols:
            continue
        op.detach_from_parent()
        module.body.append(op)
    return Program(module), table, counters, ctx


def run_edsl(fn, args, tasklets: int = 1) -> list[timing.TaskletWork]:
    """Run EDSL function `fn` on one DPU; what each tasklet did. The runtime
    reports DMA totals only, shared out evenly here (the microbenchmarks'
    tasklets do equal work)."""
    from edsl.function import _caller_loc
    from edsl.hostcall import pack_arguments
    program, table, counters, _ = _cached(fn)
    counters[...] = 0
    packed, keep = pack_arguments(fn._specs, tuple(args), _caller_loc())
    entry = program.entry(fn.__name__)
    stats = run_tasklets(lambda: entry(packed), tasklets, fn.compile().sites)
    del keep
    return [timing.TaskletWork(table.executed(counters[t]),
                               stats.dma_reads // tasklets, _share(stats, "read") // tasklets,
                               stats.dma_writes // tasklets, _share(stats, "write") // tasklets)
            for t in range(tasklets)]


def _share(stats, kind: str) -> int:
    """Bytes read or written: the runtime counts both together; the
    microbenchmarks move the same size each way, in proportion to the transfers."""
    total = stats.dma_reads + stats.dma_writes
    n = stats.dma_reads if kind == "read" else stats.dma_writes
    return stats.dma_bytes * n // total if total else 0


_PROGRAMS: dict = {}


def _cached(fn):
    key = id(fn)
    if key not in _PROGRAMS:
        _PROGRAMS[key] = _counted_program(fn.llvm)
    return _PROGRAMS[key]


def run_triton(kernel, grid, args, num_dpus: int = 1, num_tasklets: int = 1, **constants):
    """Compile and run a Triton kernel on the DPU model, DPU by DPU, with
    counters; returns [dpu][tasklet] TaskletWork and the data bytes of its arrays."""
    from edsl.backend.convert.runtime_text import (CTX_MRAM_HI, CTX_MRAM_LO, CTX_NREGIONS, CTX_READ_BYTES,
                                                   CTX_READS, CTX_REGIONS, CTX_SLOTS, CTX_WRITE_BYTES,
                                                   CTX_WRITES)
    from edsl.backend.model import _array_of, _memref_args, _mram_for, _scalar
    compiled = kernel.warmup(*args, grid=grid, num_dpus=num_dpus, num_tasklets=num_tasklets, **constants)
    key = compiled.asm["llmlir"]
    if key not in _PROGRAMS:
        _PROGRAMS[key] = _counted_program(key, skip=("__dpu_launch", "__dpu_dma"))
    program, table, counters, _ = _PROGRAMS[key]
    signature = [(n, t) for n, t in compiled.src.signature.items() if t != "constexpr"]
    values_in = [a for a, (n, t) in zip(args, compiled.src.signature.items()) if t != "constexpr"]
    arrays = {i: _array_of(v, n) for i, ((n, t), v) in enumerate(zip(signature, values_in)) if t.startswith("*")}
    mram = _mram_for(list(arrays.values()), True)
    values = []
    for i, ((n, t), v) in enumerate(zip(signature, values_in)):
        values.append(ctypes.c_int64(mram.address(arrays[i].__array_interface__["data"][0]))
                      if i in arrays else _scalar(t, v, n))
    gx, gy, gz = (tuple(grid) + (1, 1))[:3]
    wram_bytes = max(8, int(compiled.metadata.wram_bytes if hasattr(compiled.metadata, "wram_bytes")
                            else compiled.metadata.shared))
    wram = np.zeros(wram_bytes + 8, dtype=np.uint8)
    wram_addr = (wram.ctypes.data + 7) // 8 * 8
    entry = program.entry("__dpu_main")
    work = []
    mram.copy_in()
    try:
        for dpu in range(min(num_dpus, gx * gy * gz)):
            ctx = np.zeros((num_tasklets, CTX_SLOTS), dtype=np.int64)
            ctx[:, [CTX_MRAM_LO, CTX_MRAM_HI, CTX_REGIONS, CTX_NREGIONS]] = (
                mram.lo, mram.hi, mram.table.ctypes.data, mram.n_table)
            counters[...] = 0
            call = values + [ctypes.c_int32(gx), ctypes.c_int32(gy), ctypes.c_int32(gz),
                             ctypes.c_int32(dpu), ctypes.c_int32(num_dpus)] \
                + _memref_args(wram_addr, wram_bytes) + [ctypes.c_void_p(ctx.ctypes.data)]
            packed = (ctypes.c_void_p * len(call))(*[ctypes.addressof(v) for v in call])
            run_tasklets(lambda: entry(packed), num_tasklets)
            if ctx[:, 4].any():
                raise RuntimeError(f"kernel failed on DPU {dpu} (error code {int(ctx[:, 4].max())})")
            work.append([timing.TaskletWork(table.executed(counters[t]), int(ctx[t, CTX_READS]),
                                            int(ctx[t, CTX_READ_BYTES]), int(ctx[t, CTX_WRITES]),
                                            int(ctx[t, CTX_WRITE_BYTES])) for t in range(num_tasklets)])
    finally:
        mram.copy_out()
    return work
