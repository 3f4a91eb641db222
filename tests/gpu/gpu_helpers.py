"""Compiling kernels for an H100 (sm_90) without one, and loading examples."""
from __future__ import annotations

import importlib.util
import os
import pathlib
import re

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

SM90 = GPUTarget("cuda", 90, 32)
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def compile_sm90(kernel, signature: dict, constexprs: dict | None = None, **options):
    """The kernel compiled by Triton's stock nvidia backend for sm_90, to a cubin."""
    constexprs = constexprs or {}
    sig = dict(signature, **{k: "constexpr" for k in constexprs})
    return triton.compile(ASTSource(kernel, sig, constexprs=constexprs), target=SM90, options=options or None)


def barriers(ptx: str) -> int:
    return len(re.findall(r"\b(?:bar\.sync|barrier\.sync(?:\.aligned)?)\b", ptx))


def static_shared(ptx: str) -> dict[str, int]:
    """Static shared arrays of a PTX module: name -> bytes."""
    return {m[1]: int(m[2]) for m in re.finditer(r"\.shared \.align \d+ \.b8 ([^\s\[]+)\[(\d+)\]", ptx)}


def example(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def linked_libraries(monkeypatch) -> list:
    """The names of the extern libraries (not the empty stand-in) each
    compile hands Triton's make_llir, appended as the compiles run."""
    linked = []
    from triton.backends.nvidia import compiler as nvidia
    stock = nvidia.CUDABackend.make_llir

    def spy(self, src, metadata, options, capability):
        linked.append([name for name, path in options.extern_libs if os.path.getsize(path) > 1000])
        return stock(self, src, metadata, options, capability)

    monkeypatch.setattr(nvidia.CUDABackend, "make_llir", spy)
    return linked
