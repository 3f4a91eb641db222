"""Facts of NVIDIA GPUs (the `nvptx64` target) that the layers check against.

Sources: the PTX ISA and CUDA C++ Programming Guide (state spaces, shared
memory limits), and LLVM's NVPTX backend (address-space numbers).
"""

TRIPLE = "nvptx64-nvidia-cuda"


def arch(capability: int) -> str:
    """The GPU architecture a kernel of `capability` is compiled for, as Triton
    names it (`sm_90a`: the architecture-specific features from 9.0 on)."""
    return f"sm_{capability}" + ("a" if capability >= 90 else "")


DEFAULT_ARCH = arch(90)

# LLVM address spaces of the NVPTX backend.
GENERIC_ADDRSPACE = 0
GLOBAL_ADDRSPACE = 1
SHARED_ADDRSPACE = 3

# Threads of a warp: a Triton kernel's CTA has num_warps of them, in one
# dimension (edsl.inject.gpu_library pins the CTA's size to that).
WARP_SIZE = 32

# Shared memory one block may use, opted in to (dynamic shared memory; static
# arrays stop at 48 KiB), by compute capability: the CUDA C++ Programming
# Guide's "Technical Specifications per Compute Capability". fl.call's tiles
# are staged in dynamic shared memory after Triton's own (edsl.gpu.stages).
MAX_SHARED_BYTES = {80: 163 * 1024, 86: 99 * 1024, 87: 163 * 1024, 89: 99 * 1024, 90: 227 * 1024,
                    100: 227 * 1024, 103: 227 * 1024, 120: 99 * 1024}

# Where fl.call stages tile operands: each buffer starts at a multiple of this.
SHARED_ALIGN = 16
