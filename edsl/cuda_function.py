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

import os

from .codegen import clang, cuda, llvm_ir


class CudaFunction:
    """A CUDA C function `fl.call` can call (see the module docstring)."""

    def __init__(self, fn, file=None, source: str | None = None, defines: dict | None = None,
                 extern_func_name: str = "", deferred: bool = False):
        filename, text = clang.read_source('dialect(name="cuda")', file, source, fn, ".cu")
        defines = tuple(sorted((str(k), None if v is None else str(v)) for k, v in (defines or {}).items()))
        self.cuda_source = clang.Source(text, filename, defines, (os.path.dirname(filename),))
        self.extern_func_name = str(extern_func_name or "")
        self.deferred = bool(deferred)
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self.__triton_aggregate__ = True  # a global Triton admits in kernels (see EdslFunction)
        self._identity: str | None = None
        self._compiled: dict[str, tuple[str, llvm_ir.LlvmFunction]] = {}   # arch -> (LLVM IR, called function)

    def __repr__(self) -> str:
        return f"<edsl CUDA function {self.__qualname__} ({self.cuda_source.filename})>"

    @property
    def identity(self) -> str:
        """What identifies its code: the preprocessed source, defines and the name called."""
        if self._identity is None:
            self._identity = f"cuda:{cuda.digest(self.cuda_source)}:{self.extern_func_name}:{self.__name__}"
        return self._identity

    @property
    def __annotations__(self) -> dict:  # hashed by Triton 3.9 into the keys of kernels calling it
        return {"edsl": self.identity}

    @property
    def hash_attrs(self) -> tuple:
        from .gpu.cache_key import kernel_key_part
        return kernel_key_part(self)

    def _compile(self, arch: str) -> tuple[str, llvm_ir.LlvmFunction]:
        if arch not in self._compiled:
            llvm = cuda.compile_llvm(self.cuda_source, arch)
            self._compiled[arch] = llvm, llvm_ir.pick(llvm, self.extern_func_name, self.cuda_source.filename)
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
