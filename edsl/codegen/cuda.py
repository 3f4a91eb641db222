"""Raw functions in CUDA C: compiled to NVPTX LLVM IR by the clang of the
`ziglang` package (edsl.codegen.clang), and read back as far as `fl.call`
needs (edsl.codegen.llvm_ir).

No CUDA toolkit is used (`-nocudainc -nocudalib -nostdinc`): the device-side
language CUDA code expects (qualifiers, `threadIdx`..., `__syncthreads`,
shuffles, atomics, printf, libm, `cuda_fp16.h`...) is the project's own
headers in `cuda_include/`, `edsl_cuda.h` included before the source.
"""
from __future__ import annotations

import os

from ..target import nvptx
from . import clang
from .clang import Source

INCLUDE_DIR = os.path.join(os.path.dirname(__file__), "cuda_include")
PRELUDE = "edsl_cuda.h"
LANGUAGE = "CUDA C"


def flags(source: Source, arch: str) -> list[str]:
    return ["-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib", "-nostdinc",
            f"--cuda-gpu-arch={arch}", "-Wno-unknown-cuda-version", "-std=c++17",
            "-I", INCLUDE_DIR, "-include", PRELUDE] + source.flags()


def preprocessed(source: Source) -> str:
    """The source after the preprocessor (what the compile reads, its #includes in)."""
    return clang.run(source, flags(source, nvptx.DEFAULT_ARCH) + ["-E", "-P"], LANGUAGE)


def compile_llvm(source: Source, arch: str) -> str:
    """The source's LLVM IR for `arch` (`sm_90a`...), optimized (-O2)."""
    return clang.run(source, flags(source, arch) + ["-O2", "-S", "-emit-llvm", "-o", "-"], LANGUAGE)


def digest(source: Source) -> str:
    """What identifies the code of a source: its preprocessed text and defines."""
    return clang.digest(preprocessed(source), source)


__all__ = ["INCLUDE_DIR", "LANGUAGE", "PRELUDE", "compile_llvm", "digest", "flags", "preprocessed"]
