"""Raw DPU functions in UPMEM C: compiled by the clang of the `ziglang`
package (edsl.codegen.clang) to LLVM IR for this host, where the DPU model
runs them.

No UPMEM SDK is used: the SDK's DPU headers the model honours (`defs.h`,
`mram.h`, `barrier.h`, `assert.h`, `stdio.h`) are the project's own, in
`upmem_include/`, `edsl_dpu.h` included before the source. They call the
model's runtime (edsl.target.dpu: its symbols are defined for the compile
from there), so a transfer is checked against the DMA rules and the launch's
MRAM, and a fault stops the tasklet and is reported at the source's line:
each such call passes `EDSL_SITE`: `SITE_BASE`, plus its file's index
(`EDSL_FILE_INDEX`: 0 for the source, then the files it includes) times
`FILE_SITES`, plus its line.

What the model cannot check yet is refused when the function compiles,
naming the line where clang's line table has it: a load or store through a
`__mram_ptr` pointer (the model checks MRAM accesses made by `mram_read` and
`mram_write`), and variables in MRAM.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..base.errors import CompileError, SourceLoc
from ..target import dpu
from . import clang, llvm_ir
from .clang import Source

INCLUDE_DIR = os.path.join(os.path.dirname(__file__), "upmem_include")
PRELUDE = "edsl_dpu.h"
LANGUAGE = "DPU C"
# Site codes of a C source's lines: SITE_BASE + file index * FILE_SITES + line
# (an EDSL function's sites count from 0).
SITE_BASE = 1 << 32
FILE_SITES = 1 << 24
# The runtime's entry points the headers call, as the compile names them.
_RUNTIME = {"EDSL_ME": dpu.ME, "EDSL_BARRIER": dpu.BARRIER, "EDSL_MRAM_READ": dpu.MRAM_READ,
            "EDSL_MRAM_WRITE": dpu.MRAM_WRITE, "EDSL_ASSERT_FAIL": dpu.ASSERT_FAIL, "EDSL_CTX": dpu.CTX}
RUNTIME_SYMBOLS = frozenset(_RUNTIME.values())
RUN = "__edsl_run"      # (packed entry, args): runs a packed entry until it returns or a fault stops it


def flags(source: Source, tasklets: int, files: tuple = ()) -> list[str]:
    """clang's flags; `files`: the files the source includes, as `__FILE__` names them there."""
    index = "".join(f'__builtin_strcmp(__FILE__, "{f}") == 0 ? {k} : ' for k, f in enumerate(files, 1)) + "0"
    defines = [f"-D{k}={v}" for k, v in _RUNTIME.items()]
    defines += [f"-DEDSL_SITE_BASE={SITE_BASE}", f"-DEDSL_FILE_SITES={FILE_SITES}",
                f"-DEDSL_FILE_INDEX=({index})", f"-DEDSL_CTX_C_STOP={int(dpu.Ctx.C_STOP)}",
                f"-DEDSL_CTX_DPU={int(dpu.Ctx.DPU)}", f"-DEDSL_DPU_FAILED={int(dpu.Dpu.FAILED)}",
                f"-DNR_TASKLETS={tasklets}"]
    return ["-x", "c", "-std=gnu11", "-ffreestanding", "-nostdlibinc", "-fno-stack-protector",
            "-isystem", clang.builtin_headers(), "-I", INCLUDE_DIR, "-include", PRELUDE, *defines] + source.flags()


def preprocessed(source: Source) -> str:
    """The source after the preprocessor (its #includes in)."""
    return clang.run(source, flags(source, 1) + ["-E", "-P"], LANGUAGE)


def digest(source: Source) -> str:
    return clang.digest(preprocessed(source), source)


_MARKER = re.compile(r'^# \d+ "((?:[^"\\]|\\.)*)"', re.M)


def included_files(source: Source) -> tuple:
    """The user's files the source includes, as `__FILE__` names them
    (not the project's headers nor clang's)."""
    text = clang.run(source, flags(source, 1) + ["-E"], LANGUAGE)
    ours = (os.path.join(INCLUDE_DIR, ""), os.path.join(clang.builtin_headers(), ""))
    found = []
    for name in _MARKER.findall(text):
        if name.startswith("<") or name == source.filename or name in found:
            continue
        if not os.path.abspath(os.path.join(os.path.dirname(source.filename), name)).startswith(ours):
            found.append(name)
    return tuple(found)


@dataclass(frozen=True)
class CompiledC:
    """A C source compiled for the DPU model with a number of tasklets."""
    llvm: str                           # the module's LLVM IR (with line tables)
    function: llvm_ir.LlvmFunction      # the function run or called
    sites: dict = field(hash=False)     # site code -> SourceLoc
    globals: tuple = ()                 # the module's variables written at run time (a DPU's WRAM)


def compile_c(source: Source, tasklets: int, extern_func_name: str, name: str) -> CompiledC:
    """The source's LLVM IR for the DPU model (-O2), its function `extern_func_name`
    (else the one named `name`, else the one it makes visible), checked for what the
    model cannot run."""
    files = included_files(source)
    llvm = clang.run(source, flags(source, tasklets, files) + ["-O2", "-gline-tables-only", "-S", "-emit-llvm",
                                                               "-o", "-"], LANGUAGE)
    defined = llvm_ir.functions(llvm)
    wanted = extern_func_name or (name if name in defined else "")
    function = llvm_ir.pick(llvm, wanted, source.filename, kind="non-static", ignore=(RUN,))
    _refuse_unchecked(llvm, source)
    return CompiledC(llvm, function, _sites(source, files), _written_globals(llvm))


def _sites(source: Source, files: tuple) -> dict:
    """The SourceLoc of each site code: every line of the source and of the files it includes."""
    sites = {}
    texts = [(source.filename, source.text)]
    for name in files:
        path = os.path.normpath(os.path.join(os.path.dirname(source.filename), name))
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                texts.append((path, f.read()))
        except OSError:
            texts.append((path, ""))
    for k, (path, text) in enumerate(texts):
        base = SITE_BASE + k * FILE_SITES
        sites |= {base + line: SourceLoc(path, line, 0) for line in range(1, text.count("\n") + 2)}
    return sites


_MRAM_ACCESS = re.compile(r"^\s*(?:%\S+ = )?(?:load|store|atomicrmw|cmpxchg)\b[^\n]*ptr addrspace\(255\).*$|"
                          r"^\s*(?:%\S+ = )?(?:tail )?call [^\n]*@llvm\.mem(?:cpy|move|set)\.[^\n(]*p255.*$", re.M)
_MRAM_GLOBAL = re.compile(r"^@([-\w$.]+) = [^\n]*addrspace\(255\)", re.M)
_LOCATION = re.compile(r"^(!\d+) = (?:distinct )?!DILocation\(line: (\d+), column: (\d+)", re.M)


def _refuse_unchecked(llvm: str, source: Source) -> None:
    m = _MRAM_GLOBAL.search(llvm)
    if m:
        raise CompileError(f"the MRAM variable {m[1]!r}: the DPU model runs raw functions in C without MRAM "
                           f"variables of their own (__mram, __mram_noinit); take an MRAM pointer parameter",
                           _declared_at(source, m[1]))
    m = _MRAM_ACCESS.search(llvm)
    if m:
        dbg = re.search(r"!dbg (!\d+)", m.group(0))
        line, col = {k: (int(n), int(c)) for k, n, c in _LOCATION.findall(llvm)}.get(dbg and dbg[1], (0, 1))
        raise CompileError("an access through a __mram_ptr pointer: the DPU model checks MRAM only where "
                           "mram_read and mram_write reach it; copy the bytes to WRAM with mram_read (and "
                           "back with mram_write)", SourceLoc(source.filename, line, col - 1))


def _declared_at(source: Source, name: str) -> SourceLoc:
    for k, line in enumerate(source.text.splitlines(), 1):
        if re.search(rf"\b{re.escape(name)}\b", line):
            return SourceLoc(source.filename, k, 0)
    return SourceLoc(source.filename, 0, 0)


_GLOBAL = re.compile(r"^@([-\w$.]+) = (?:[a-z_]+ )*?global ", re.M)


def _written_globals(llvm: str) -> tuple:
    """The module's variables that are not constants (clang's `global`, not
    `constant`)."""
    return tuple(m[1] for m in _GLOBAL.finditer(llvm))


__all__ = ["CompiledC", "INCLUDE_DIR", "LANGUAGE", "PRELUDE", "RUN", "RUNTIME_SYMBOLS", "SITE_BASE",
           "compile_c", "digest", "flags", "preprocessed"]
