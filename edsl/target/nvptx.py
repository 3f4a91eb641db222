"""Facts of NVIDIA GPUs (the `nvptx64` target) that the layers check against.

Sources: the PTX ISA and CUDA C++ Programming Guide (state spaces, shared
memory limits), and LLVM's NVPTX backend (address-space numbers).
"""

TRIPLE = "nvptx64-nvidia-cuda"

# LLVM address spaces of the NVPTX backend.
GENERIC_ADDRSPACE = 0
GLOBAL_ADDRSPACE = 1
SHARED_ADDRSPACE = 3

# Statically allocated shared memory of one kernel (`__shared__` arrays, and the
# buffers `fl.call` stages its tile operands in) may not exceed 48 KiB.
STATIC_SHARED_BYTES = 48 * 1024

# Where fl.call stages tile operands: each buffer starts at a multiple of this.
SHARED_ALIGN = 16
