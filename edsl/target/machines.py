"""The machines an edsl function compiles for.

One `@edsl.dialect` source compiles for either target; what changes is what
a target calls its memory spaces, where the tile parameters of a function
live, and which intrinsics exist there:

| | `upmem-dpu` | `nvptx64` |
|---|---|---|
| runs an `fl.call` region | every tasklet of the DPU | every thread of the CTA |
| tile parameters (unqualified memrefs) | WRAM (0) | shared memory (3) |
| pointer parameters | MRAM (255) | global memory (1) |
| memory spaces by name | `WRAM`, `MRAM` | `shared`, `global` |
"""
from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from . import dpu as abi
from ..base.errors import CompileError
from . import nvptx


@dataclass(frozen=True)
class Target:
    name: str
    machine: str                  # for messages
    memory_spaces: dict           # name -> LLVM address space
    tile_space: int               # where tile parameters live (memrefs without a memory space)
    pointer_space: int            # where the pointers of a Triton kernel point

    def __str__(self) -> str:
        return self.name

    @property
    def spaces(self) -> str:
        return ", ".join(f"{n} ({s})" for n, s in self.memory_spaces.items())

    def check_space(self, space: int) -> None:
        """Raise unless `space` is an address space of this target (ValueError: the
        caller knows the line)."""
        if space in (0, *self.memory_spaces.values()):
            return
        raise ValueError(f"memory space {space} does not exist on {self.name} (the {self.machine}); "
                         f"its memory spaces are {self.spaces}")


DPU = Target("upmem-dpu", "UPMEM DPU", {"WRAM": abi.WRAM_ADDRSPACE, "MRAM": abi.MRAM_ADDRSPACE},
             tile_space=abi.WRAM_ADDRSPACE, pointer_space=abi.MRAM_ADDRSPACE)
NVPTX = Target("nvptx64", "NVIDIA GPU", {"global": nvptx.GLOBAL_ADDRSPACE, "shared": nvptx.SHARED_ADDRSPACE},
               tile_space=nvptx.SHARED_ADDRSPACE, pointer_space=nvptx.GLOBAL_ADDRSPACE)
TARGETS = {t.name: t for t in (DPU, NVPTX)}


def get(target: "str | Target | None") -> Target:
    """The target named `target` (None: the DPU)."""
    if target is None:
        return DPU
    if isinstance(target, Target):
        return target
    try:
        return TARGETS[target]
    except (KeyError, TypeError):
        raise CompileError(f"unknown edsl target {target!r}: the targets are "
                           f"{', '.join(repr(n) for n in TARGETS)}") from None


def owner_of_space_name(name: str) -> Target | None:
    return next((t for t in TARGETS.values() if name in t.memory_spaces), None)


# Operations of the MLIR builder style that only one target can run.
_GPU_DIALECTS = ("nvvm.", "gpu.", "nvgpu.")


def foreign_operation(module: ir.Module, target: Target) -> tuple[ir.Operation, str] | None:
    """The first builder-style operation of `module` that `target` cannot run
    (an NVVM operation in a function for the DPU), with why."""
    if target is not DPU:
        return None
    found = []

    def visit(op):
        if op.name.startswith(_GPU_DIALECTS):
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if not found:
        return None
    op = found[0]
    return op, (f"{op.name} is an operation of NVIDIA GPUs: it does not exist on {target.name}; "
                f"edsl.thread_id(), edsl.num_threads() and edsl.barrier() mean the same on both targets")
