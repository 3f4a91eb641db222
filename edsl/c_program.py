"""A whole DPU program in UPMEM C (its `main`) on DPUs of the model, as an
UPMEM host runs one: `load` gives a DPU the program's variables at their
first values, `launch` runs `main` on its NR_TASKLETS tasklets, and between
launches the host reads and writes the variables by name (`dpu_copy_to`,
`dpu_copy_from` of a `__host` variable). Each DPU keeps its own variables;
its MRAM is wherever the host maps it, below 4 GiB where the program keeps
MRAM addresses in 32 bits, as PrIM's do (`DPU_MRAM_HEAP_POINTER` a pointer
into it; an address below the MRAM's size an MRAM address too, as on a DPU).

The code is a `CFunction`'s (edsl.c_function): compiled by the clang of the
`ziglang` package against the model's SDK headers, its transfers checked,
its races between tasklets found, its faults reported at the `.c` line. The
SDK stand-ins' host library in model mode runs DPU programs so
(edsl.sdk_model).
"""
from __future__ import annotations

import ctypes
import dataclasses
import os

import numpy as np

from .c_function import CFunction, WholeDpu
from .codegen import upmem_c
from .dpu import races
from .dpu.runtime import LaunchReport, Program
from .target.dpu import MRAM_BYTES, OUTSIDE_PROGRAM_MRAM

# The model's own variables (alloc.h's heap, mutex words): the DPU's, not the host's to name.
_MODEL_OWN = "__edsl_"


class CProgram(CFunction):
    """A DPU program: the `main` of one C source (see the module docstring)."""

    def __init__(self, path: str | os.PathLike, tasklets: int, defines: dict | None = None,
                 include_dirs: tuple = (), race_check: bool | None = None):
        def main():
            """The DPU program's main."""
        super().__init__(main, file=path, defines=defines, extern_func_name="main")
        here = os.path.dirname(self.source.filename)
        self.source = dataclasses.replace(
            self.source, include_dirs=(here, *(os.path.abspath(d) for d in include_dirs)))
        self.tasklets = tasklets
        compiled = self.compiled(tasklets)          # (a compile error now, as the SDK's compiler gives it)
        self.variables = upmem_c.variable_sizes(compiled.llvm, compiled.globals)
        self._static = upmem_c.with_visible_variables(compiled.llvm, compiled.globals)[1]
        # (as `run_checked` decides it)
        self._races = races.requested(race_check) and tasklets > 1
        # One program loaded for every launch: the variables' values may point
        # into it (function pointers, addresses of variables).
        self._loaded: dict[tuple, Program] = {}
        self._first = self._read_variables(self._program(tasklets, self._races))

    def _program(self, tasklets: int, races: bool, timing: bool = False) -> Program:
        key = (tasklets, races, timing)
        if key not in self._loaded:
            self._loaded[key] = super()._program(tasklets, races, timing)
        return self._loaded[key]

    def _linked(self, compiled: upmem_c.CompiledC, races: bool) -> tuple[str, tuple]:
        text, names = compiled.linked(races)
        return upmem_c.with_visible_variables(text, compiled.globals)[0], names

    def _read_variables(self, program: Program) -> dict:
        return {name: ctypes.string_at(program.address(name), size) for name, size in self.variables.items()}

    def loaded(self) -> dict:
        """A DPU's variables once the program is loaded: name -> bytes."""
        return {name: bytearray(value) for name, value in self._first.items()}

    def symbol(self, name: str) -> tuple[int, bool] | None:
        """(bytes, whether in MRAM) of the variable `name` the host may name; None: no such one."""
        if name.startswith(_MODEL_OWN) or name in self._static or name not in self.variables:
            return None
        return self.variables[name], name in self.compiled(self.tasklets).mram_variables

    def launch(self, variables: dict, mram: int, heap_offset: int = 0, on_launch=None) -> LaunchReport:
        """Run `main` on one DPU whose variables are `variables` (updated, also
        when it faults) and whose MRAM (MRAM_BYTES) is at host address `mram`,
        its heap (DPU_MRAM_HEAP_POINTER) from `heap_offset`; a fault or a race
        is raised as a DpuError at its line. `on_launch(launch)`: called with
        the run's contexts before it runs (`CFunction.run_checked`)."""
        heap = (mram + heap_offset, MRAM_BYTES - heap_offset)
        heap_bytes = np.ctypeslib.as_array((ctypes.c_uint8 * heap[1]).from_address(heap[0])) if heap[1] else None
        program = self._program(self.tasklets, self._races)        # (the one `run_checked` runs)
        for name, value in variables.items():
            ctypes.memmove(program.address(name), bytes(value), len(value))

        def named() -> list:
            """What a race names: the variables' bytes, the heap's."""
            views = [(name, np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(program.address(name)))
                      .view("V1")) for name, size in self.variables.items() if size and not name.startswith(_MODEL_OWN)]
            return views + ([("DPU_MRAM_HEAP_POINTER", heap_bytes.view("V1"))] if heap[1] else [])
        try:
            return self.run_checked([], (), self.tasklets, False, self._races, 0, None,
                                    WholeDpu(heap, OUTSIDE_PROGRAM_MRAM, one_thread=True, mram_base=mram,
                                             named=named, on_launch=on_launch))
        finally:
            variables.update({k: bytearray(v) for k, v in self._read_variables(program).items()})


__all__ = ["CProgram"]
