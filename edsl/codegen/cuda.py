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
import re

from ..base.errors import CompileError
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
    return _run(source, flags(source, nvptx.DEFAULT_ARCH) + ["-E", "-P"])


def compile_llvm(source: Source, arch: str) -> str:
    """The source's LLVM IR for `arch` (`sm_90a`...), optimized (-O2)."""
    return _run(source, flags(source, arch) + ["-O2", "-S", "-emit-llvm", "-o", "-"])


# A header of CUDA's C++ libraries (CCCL: CUB, Thrust, libcu++) that clang did not find.
_CCCL_HEADER = re.compile(r"^'((?:cub|thrust|cuda|nv)/[^']+)' file not found")
CCCL_UNAVAILABLE = ("{header}: CUDA's C++ libraries (CCCL: CUB, Thrust, libcu++) are not available to raw "
                    "functions in CUDA C. CCCL needs the CUDA toolkit's runtime headers, which nvcc, or clang's "
                    "CUDA wrapper headers, include first, and a C++ standard library; the ziglang package's "
                    "clang has neither the wrapper headers nor a configured libc++ (docs/porting-tle-raw.md)")


def _run(source: Source, args: list[str]) -> str:
    """clang on `source`; an #include of a CCCL header refused at its line, saying why."""
    try:
        return clang.run(source, args, LANGUAGE)
    except CompileError as err:
        m = _CCCL_HEADER.match(err.message)
        if m is None:
            raise
        raise CompileError(CCCL_UNAVAILABLE.format(header=m[1]), err.loc) from None


def digest(source: Source) -> str:
    """What identifies the code of a source: its preprocessed text and defines."""
    return clang.digest(preprocessed(source), source)


__all__ = ["INCLUDE_DIR", "LANGUAGE", "PRELUDE", "compile_llvm", "digest", "flags", "preprocessed"]
