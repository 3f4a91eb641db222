"""Named DPU memory spaces in type strings.

edsl type strings are MLIR type syntax in which the memory space of a memref
or an LLVM pointer may be written by name: `memref<?xf32, MRAM>`,
`!llvm.ptr<MRAM>`. The names stand for the address spaces of UPMEM's LLVM
(WRAM = 0, the default; MRAM = 255), so `finalize-memref-to-llvm` turns
MRAM memrefs into descriptors over `!llvm.ptr<255>` with no custom converter.
"""
import re

from ..dpu.abi import MRAM_ADDRSPACE, WRAM_ADDRSPACE

MEMORY_SPACES = {"WRAM": WRAM_ADDRSPACE, "MRAM": MRAM_ADDRSPACE}

_NAMED_SPACE = re.compile(r"(?<![\w#!\"])(WRAM|MRAM)(?![\w\"])")


def resolve_memory_spaces(type_text: str) -> str:
    """Replace the names WRAM/MRAM in an MLIR type string by their address spaces."""
    return _NAMED_SPACE.sub(lambda m: str(MEMORY_SPACES[m.group(1)]), type_text)
