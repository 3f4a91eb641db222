"""Named memory spaces in type strings.

edsl type strings are MLIR type syntax in which the memory space of a memref
or an LLVM pointer may be written by name: `memref<?xf32, MRAM>`,
`!llvm.ptr<global>`. Each target names its own (edsl.target.machines): on the
DPU the address spaces of UPMEM's LLVM (WRAM = 0, the default; MRAM = 255), so
`finalize-memref-to-llvm` turns MRAM memrefs into descriptors over
`!llvm.ptr<255>` with no custom converter; on NVIDIA GPUs those of LLVM's
NVPTX backend (global = 1, shared = 3), as TLE-Raw code writes them.
"""
from __future__ import annotations

import re

from ..target.machines import TARGETS, Target, owner_of_space_name

_NAMES = sorted({n for t in TARGETS.values() for n in t.memory_spaces}, key=len, reverse=True)
_NAMED_SPACE = re.compile(r"(?<![\w#!\"])(" + "|".join(_NAMES) + r")(?![\w\"])")


def resolve_memory_spaces(type_text: str, target: Target | None = None) -> str:
    """Replace the memory-space names in an MLIR type string by their address
    spaces: those of `target`, or of whichever target has the name if None.
    A name of another target is a ValueError."""
    def number(m):
        name = m.group(1)
        owner = owner_of_space_name(name)
        if target is not None and owner is not target:
            raise ValueError(f"{name} is a memory space of {owner.name} (the {owner.machine}), not of "
                             f"{target.name}, whose memory spaces are {target.spaces}")
        return str(owner.memory_spaces[name])
    return _NAMED_SPACE.sub(number, type_text)
