"""LLVM-dialect MLIR -> C for the UPMEM toolchain (the DPU program of an export).

The UPMEM compiler (`dpu-upmem-dpurte-clang`) is LLVM 12: it cannot read the
opaque-pointer LLVM IR that today's MLIR emits, so the exported DPU program is
C. This printer walks a kernel's final LLVM-dialect module with the `mlir`
Python bindings and writes one C function per `llvm.func`:

- blocks become labels, branches `goto`s; block arguments are variables that
  each branch assigns (through temporaries when the assignment is a
  permutation) before its `goto`;
- one C statement per op; every SSA value is a variable declared at the top of
  its function; constants are printed inline (floats as exact hex literals);
- integers are unsigned `uintN_t` (wrapping, as LLVM's), signed ops cast to
  `intN_t`; `i1` is `bool`; an integer of 2 to 7 bits (the i4 nibble of an
  e2m1 value) is a `uint8_t` zero above its width, which only `llvm.trunc`
  makes and `llvm.zext` reads; LLVM struct types become C structs (arrays
  wrapped in a struct so that they can be values); `!llvm.ptr` is a WRAM
  `void *`, `!llvm.ptr<255>` a `__mram_ptr void *`;
- the DPU runtime library linked into the kernel (edsl.dpu.support) is
  printed like any other function; only the primitives that are the machine
  itself map to the SDK (`PRIMITIVES`), and `llvm.intr.*` math maps to
  `math.h`;
- 16-bit floats (f16, bf16) reach the printer as the integers of their bits
  (`uint16_t`): the export stores them so (edsl.lowering.floats.
  soft_float_storage), as the DPU model does, once the soft-float pass has
  made every conversion integer code, printed like any other. A float type
  without a C type left in the module is an error.

An op, type, intrinsic or callee the printer does not know raises a
`CompileError` naming it: the printer never writes C it is not sure of.

The parts, by what they print:

- `module`: the module walk -- which functions, in which order, their C
  names, types, globals and WRAM buffers (`print_module`, `Printer`,
  `CProgram`);
- `ops`: the C statement of each op of the LLVM dialect (arithmetic,
  comparisons, casts, memory, aggregates, branches);
- `intrinsics`: calls -- the DPU runtime's primitives mapped to the SDK,
  `math.h` functions, `printf` (`tl.device_print`) as the SDK's DPU printf,
  the refused host facilities -- and `llvm.intr.*`;
- `common`: the helpers they share (errors, C declarations and literals,
  LLVM type sizes).
"""
from .intrinsics import BARRIER_VAR, CTX_ARRAY, LOG_FLUSH, PRIMITIVES, PROGRAM_NAMES
from .module import _RESERVED, CProgram, Printer, print_module

# (`_RESERVED`: the C names a printed symbol keeps clear of, which
# edsl.export.arguments keeps its own names clear of too.)
__all__ = ["print_module", "Printer", "CProgram", "PRIMITIVES", "PROGRAM_NAMES", "CTX_ARRAY",
           "BARRIER_VAR", "LOG_FLUSH", "_RESERVED"]
