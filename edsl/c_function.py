"""A raw DPU function in UPMEM C: `@edsl.dialect(name="c", file=...)` (or
`source=...`) over a Python stub whose name it takes.

It runs on the DPU model (`f.run(...)`, each tasklet running the whole
function, as on a DPU launched with NR_TASKLETS tasklets): compiled by the
ziglang package's clang for this host against the project's SDK headers
(edsl.codegen.upmem_c), linked with the model's runtime, its transfers
checked and its faults reported at the `.c` file's line. Its parameters are
read from the compiled function: a `__mram_ptr` pointer takes a NumPy array
in MRAM, a plain pointer a NumPy array in WRAM, a number a scalar of its
type. Arrays are updated in place. A transfer of MRAM must stay within
one of its MRAM arrays, as on a DPU it stays within the DPU's MRAM.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Callable

import numpy as np
from mlir import ir

from . import codegen
from .base.errors import ArgumentError, DpuError
from .codegen import llvm_ir, upmem_c
from .dpu import races, runtime
from .dpu.runtime import LaunchReport, Program
from .dpu.timing import launch_estimate
from .hostcall import ArgSpec, pack_arguments
from .lowering.counting import CounterTable
from .lowering.counting_llvm_ir import count_dpu_c
from .source_function import SourceFunction
from .target.dpu import (COUNTERS, MAX_TASKLETS, MRAM_ADDRSPACE, MRAM_BYTES, OUTSIDE_C_MRAM, WRAM_BYTES, Ctx,
                         align_up, c_heap_bytes)


class CFunction(SourceFunction):
    """A raw function in UPMEM C the DPU model runs (see the module docstring)."""
    LANGUAGE = "c"
    SUFFIX = ".c"

    def __init__(self, fn, file=None, source: str | None = None, defines: dict | None = None,
                 extern_func_name: str = ""):
        super().__init__(fn, file, source, defines, extern_func_name)
        self._compiled: dict[tuple, upmem_c.CompiledC] = {}   # (tasklets, slot) -> compiled
        self._programs: dict[tuple, tuple] = {}    # (tasklets, race check, timing) -> (object code, counter table)
        self.last_stats: LaunchReport | None = None

    def _digest(self) -> str:
        return upmem_c.digest(self.source)

    def compiled(self, tasklets: int = 1, slot: int = 0) -> upmem_c.CompiledC:
        """Its module compiled with NR_TASKLETS = `tasklets`, its site codes in
        `slot` (`upmem_c.site_base`: a kernel's C functions each have one)."""
        key = (tasklets, slot)
        if key not in self._compiled:
            self._compiled[key] = upmem_c.compile_c(self.source, tasklets, self.extern_func_name, self.__name__,
                                                    slot)
        return self._compiled[key]

    def llvm(self, tasklets: int = 1) -> str:
        """Its module's LLVM IR (NR_TASKLETS = `tasklets`)."""
        return self.compiled(tasklets).llvm

    def returned_params(self, tasklets: int = 1) -> list[int] | None:
        """The parameters whose memory it returns (None: not traceable)."""
        return llvm_ir.returned_params(self.llvm(tasklets), self.compiled(tasklets).function)

    def specs(self, tasklets: int = 1) -> list[ArgSpec]:
        """What each parameter takes: an array (in MRAM or WRAM) or a scalar."""
        fn = self.compiled(tasklets).function
        specs = []
        for k, t in enumerate(fn.params):
            mlir = llvm_ir.mlir_type(t)
            if mlir.startswith("!llvm.ptr"):
                space = MRAM_ADDRSPACE if mlir == f"!llvm.ptr<{MRAM_ADDRSPACE}>" else 0
                specs.append(ArgSpec(f"parameter {k}", f"{'__mram_ptr ' if space else ''}pointer", "ptr",
                                     memory_space=space))
            else:
                specs.append(ArgSpec(f"parameter {k}", t, "scalar", scalar=mlir))
        return specs

    def _program(self, tasklets: int, races: bool, timing: bool = False) -> Program:
        """A program of the function, loaded anew (its variables as a DPU's WRAM
        holds them once its program is loaded); `races`: with the check of
        races between tasklets; `timing`: with executed-block counters."""
        compiled = self.compiled(tasklets)
        if (tasklets, races, timing) not in self._programs:
            text, names = self._linked(compiled, races)
            table = None
            if timing:
                text, per_block = count_dpu_c(text, 0)
                table = CounterTable(0, {}).extended(per_block)
            fn = compiled.function
            args = [llvm_ir.mlir_type(t) for t in fn.params]
            result = None if fn.result == "void" else llvm_ir.mlir_type(fn.result)
            entry = "\n".join([runtime.packed_entry(fn.name, args, result),
                               f"llvm.func @{upmem_c.RUN}(!llvm.ptr, !llvm.ptr)",
                               f"llvm.func @{runtime.PACKED_PREFIX}{_ENTRY}(%args: !llvm.ptr) {{",
                               f"  %f = llvm.mlir.addressof @{runtime.PACKED_PREFIX}{fn.name} : !llvm.ptr",
                               f"  llvm.call @{upmem_c.RUN}(%f, %args) : (!llvm.ptr, !llvm.ptr) -> ()",
                               "  llvm.return", "}"])
            with codegen.LOCK, codegen.context():
                module = ir.Module.parse(entry)
                obj = runtime.build(module, [], f"{self.__name__}()", races=races, linked=((text, names),),
                                    exported=upmem_c.RUNTIME_SYMBOLS | ({COUNTERS} if timing else set()))
            self._programs[tasklets, races, timing] = obj, table
        obj, table = self._programs[tasklets, races, timing]
        return Program(obj, self.__name__, compiled.sites, table)

    def _linked(self, compiled: upmem_c.CompiledC, races: bool) -> tuple[str, tuple]:
        """(LLVM IR, the names of the functions it exports) linked into its program."""
        return compiled.linked(races)

    def __call__(self, *args):
        self.run(*args)

    def run(self, *args, tasklets: int = 1, timing: bool = False, race_check: bool | None = None) -> LaunchReport:
        """Run on the host DPU model; arrays are updated in place.

        Args:
            *args: The function's arguments: NumPy arrays for pointers (C-contiguous; those
                of WRAM pointers within a DPU's WRAM), numbers for scalars.
            tasklets: Tasklets of the DPU (1 to 24, its NR_TASKLETS), each running the
                whole function.
            timing: Also estimate the run's time on UPMEM hardware (the report's `.timing`).
            race_check: Refuse two tasklets touching the same bytes with nothing
                ordering them (a barrier, a mutex handed on, a handshake), one
                writing (an `edsl.DpuError` naming both lines); default: the
                environment variable EDSL_RACE_CHECK. Not made for a run whose
                tasklets wait at barriers of fewer tasklets, nor with `timing`.

        Returns:
            What the launch did (also kept in `last_stats`).
        """
        from .function import _caller_loc
        loc = _caller_loc()
        if not isinstance(tasklets, int) or not 1 <= tasklets <= MAX_TASKLETS:
            raise DpuError(f"a DPU runs 1 to {MAX_TASKLETS} tasklets, not {tasklets!r}", loc)
        specs = self.specs(tasklets)
        if len(args) != len(specs):
            raise ArgumentError(f"{self.__name__}() takes {len(specs)} arguments "
                                f"({', '.join(s.type_text for s in specs)}), {len(args)} given", loc)
        wram = 0
        for spec, a in zip(specs, args):
            if spec.kind == "ptr" and isinstance(a, np.ndarray):
                if not a.flags.c_contiguous or not a.flags.writeable:
                    raise ArgumentError(f"argument {spec.name!r}: a C-contiguous, writable NumPy array is "
                                        f"needed", loc)
                wram += a.nbytes if spec.memory_space != MRAM_ADDRSPACE else 0
        if wram > WRAM_BYTES:
            raise ArgumentError(f"{self.__name__}(): its WRAM arrays take {wram} bytes, more than the "
                                f"{WRAM_BYTES} bytes of a DPU's WRAM", loc)
        if not isinstance(timing, bool):
            raise ArgumentError(f"timing must be True or False, not {timing!r}", loc)
        if race_check and timing:
            raise ArgumentError("race_check and timing cannot be combined: the check's bookkeeping would "
                                "count as the DPU's work", loc)
        self.last_stats = self.run_checked(specs, args, tasklets, timing, race_check, wram, loc)
        return self.last_stats

    def run_checked(self, specs: list[ArgSpec], args: tuple, tasklets: int, timing: bool, race_check: bool | None,
                    wram: int, loc=None, dpu: WholeDpu | None = None) -> LaunchReport:
        """`run` on checked arguments (`wram`: the bytes of its WRAM arrays);
        `dpu`: the DPU a whole program runs on (`CProgram.launch`), else a
        function's own: a fresh heap where its source names one."""
        packed, keep = _packed(specs, args, self.compiled(tasklets).function.result, loc)
        # (tasklets ordered by mutexes or handshakes too: their headers log the order, edsl.dpu.races)
        check_races = races.requested(race_check) and tasklets > 1 and not timing
        program = self._program(tasklets, check_races, timing)
        entry = program.entry(_ENTRY)
        table = program.counters
        compiled = self.compiled(tasklets)
        variables = mram_variables(program, compiled)
        # DPU_MRAM_HEAP_POINTER's (mram.h): the MRAM its variables leave, zero pages
        # the host maps only where the function writes; none where it is not named
        fresh = np.zeros(MRAM_BYTES - sum(hi - lo for lo, hi in variables)
                         if dpu is None and compiled.uses_mram_heap else 0, np.uint8)
        if dpu is None:
            dpu = WholeDpu(heap=(fresh.ctypes.data, fresh.nbytes), outside=OUTSIDE_C_MRAM, one_thread=False)
        heap = dpu.heap
        heaps = [(heap[0], heap[0] + heap[1])] if heap[1] else []
        launch = runtime.Launch(1, tasklets, mram_regions(specs, args, variables + heaps),
                                counters=table.counters if table else 0)
        launch.ctx[..., Ctx.C_HEAP] = c_heap_bytes(tasklets, compiled.wram_variable_bytes,
                                                   wram)     # (mem_alloc's, alloc.h)
        launch.ctx[..., Ctx.C_MRAM_HEAP] = heap[0] if heap[1] else 0
        launch.ctx[..., Ctx.C_MRAM_BASE] = dpu.mram_base
        arrays = None
        if check_races:                                     # (what a race may name)
            arrays = [(s.name, a) for s, a in zip(specs, args) if isinstance(a, np.ndarray)] + dpu.named()
        if dpu.on_launch is not None:
            dpu.on_launch(launch)
        launch.run_alone(program, entry, packed, f"{self.__name__}()", arrays,
                         outside=dpu.outside, one_thread=_ENTRY if dpu.one_thread else None)
        del keep, fresh
        report = LaunchReport(self.__name__, num_tasklets=tasklets, tasklets_used=tasklets, wram_bytes=wram,
                              **launch.totals(), per_dpu_programs=[1], per_tasklet_dma=launch.per_tasklet_dma())
        if table is not None:
            # Host<->MRAM: of the MRAM arrays (all in; out, any: C says nothing of which it writes),
            # as much as the run read and wrote.
            in_bytes = sum(a.nbytes for s, a in zip(specs, args)
                           if s.kind == "ptr" and s.memory_space == MRAM_ADDRSPACE)
            report.timing = launch_estimate(table, launch.counters, launch.ctx, [min(in_bytes, report.dma_read_bytes)],
                                            [min(in_bytes, report.dma_write_bytes)], in_bytes)
        return report


_ENTRY = "c_entry"   # the packed entry that runs the function until it returns or a fault stops it


@dataclass(frozen=True)
class WholeDpu:
    """The DPU a run's function or whole program (`CProgram`) has around its arguments."""
    heap: tuple[int, int]              # (address, bytes) of its MRAM heap (DPU_MRAM_HEAP_POINTER); bytes 0: none
    outside: str                       # what a transfer outside its MRAM is told
    one_thread: bool                   # its tasklets take turns on one host thread, switching where they
                                       # wait or transfer, as a DPU's do (`Launch.run_alone`)
    mram_base: int = 0                 # where a whole program's MRAM is (`Ctx.C_MRAM_BASE`)
    named: Callable[[], list] = list   # more (name, array) pairs a race may name (made only where it is checked)
    on_launch: Callable | None = None  # called with the run's `Launch` before it runs (to watch it)


def mram_regions(specs: list[ArgSpec], args: tuple, more=()) -> list[tuple[int, int]]:
    """The MRAM regions of a run on `args`: its MRAM pointers are host
    addresses, so the MRAM it may reach is its MRAM arrays and `more` (its
    variables in MRAM, `mram_variables`, and its MRAM heap), each transfer
    within one of them (to the end of its last 8-byte block, which a direct
    access moves whole)."""
    mram = [_span(a) for spec, a in zip(specs, args)
            if spec.kind == "ptr" and spec.memory_space == MRAM_ADDRSPACE and a.nbytes]
    return sorted(mram + list(more)) or [(0, 0)]


def _span(a: np.ndarray) -> tuple[int, int]:
    return a.ctypes.data, align_up(a.ctypes.data + a.nbytes)


def mram_variables(program: Program, compiled: upmem_c.CompiledC) -> list[tuple[int, int]]:
    """The [start, end) of each of the program's variables in MRAM, in the
    host's memory (`upmem_c.host_mram_variables`), to the end of its last
    8-byte block."""
    if compiled.mram_variables_table is None:
        return []
    return program.spans(compiled.mram_variables_table, len(compiled.mram_variables))


def _packed(specs: list[ArgSpec], args: tuple, result: str, loc):
    """The argument array of the packed entry, a slot for the result last."""
    packed, keep = pack_arguments(specs, args, loc)
    if result != "void":
        keep.append(ctypes.c_int64())       # (the result's slot: a scalar of 8 bytes at most)
        packed = (ctypes.c_void_p * len(keep))(*(ctypes.addressof(k) for k in keep))
    return packed, keep


__all__ = ["CFunction"]
