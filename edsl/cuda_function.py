"""A raw function in CUDA C: `@edsl.dialect(name="cuda", file=...)` (or
`source=...`), TLE-Raw's spelling, over a Python stub whose name it takes.

It runs on NVIDIA GPUs only, called by `fl.call` from a Triton kernel, every
thread of the block running it (as an EDSL function does there). Its
parameters are read from the compiled function, and each `fl.call` operand
takes, in order: a tile, the fields of its memref descriptor (allocated and
aligned pointers in shared memory, offset, sizes, strides: 3 + 2 x rank
parameters); a Triton pointer, one pointer parameter (global memory); a
scalar, one parameter of its type. It is compiled for the kernel's
architecture when a kernel calling it compiles (edsl.codegen.cuda).
"""
from __future__ import annotations

from .codegen import cuda, llvm_ir
from .source_function import SourceFunction


class CudaFunction(SourceFunction):
    """A CUDA C function `fl.call` can call (see the module docstring)."""
    LANGUAGE = "cuda"
    SUFFIX = ".cu"

    def __init__(self, fn, file=None, source: str | None = None, defines: dict | None = None,
                 extern_func_name: str = "", deferred: bool = False):
        super().__init__(fn, file, source, defines, extern_func_name)
        self.deferred = bool(deferred)
        self._compiled: dict[str, tuple[str, llvm_ir.LlvmFunction]] = {}   # arch -> (LLVM IR, called function)

    def _digest(self) -> str:
        return cuda.digest(self.source)

    def _compile(self, arch: str) -> tuple[str, llvm_ir.LlvmFunction]:
        if arch not in self._compiled:
            llvm = cuda.compile_llvm(self.source, arch)
            self._compiled[arch] = llvm, llvm_ir.pick(llvm, self.extern_func_name, self.source.filename)
        return self._compiled[arch]

    def llvm(self, arch: str) -> str:
        """Its module's LLVM IR for `arch` (`sm_90a`...)."""
        return self._compile(arch)[0]

    def llvm_function(self, arch: str) -> llvm_ir.LlvmFunction:
        """The function `fl.call` calls (extern_func_name's, else the one visible)."""
        return self._compile(arch)[1]

    def returned_params(self, arch: str) -> list[int] | None:
        """The parameters whose memory it returns (None: not traceable)."""
        return llvm_ir.returned_params(self.llvm(arch), self.llvm_function(arch))


__all__ = ["CudaFunction"]
