"""The one family of exceptions edsl raises for user mistakes.

Every error that can be tied to user code carries the Python file, line and
column, and prints the offending line with a caret under the column, so a
mistake reads like a compiler diagnostic rather than a traceback from MLIR.
"""
from __future__ import annotations

import linecache
import os
import sys
import zlib
from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLoc:
    filename: str
    lineno: int
    col: int | None = 0  # 0-based, as in `ast`; None if unknown

    def __str__(self) -> str:
        if self.col is None:
            return f"{self.filename}:{self.lineno}"
        return f"{self.filename}:{self.lineno}:{self.col + 1}"

    @property
    def site(self) -> int:
        """The code of a run-time check at this position, carried by compiled
        code so that its failure names the line: file, line and column packed
        into a positive i64 (the same in every program the check ends up in).
        The file by its name alone: a kernel compiles to the same code from any
        folder, as Triton's cache, whose key ignores paths, expects (copies of
        a project in two folders compiling one kernel at once would otherwise
        leave their cache entry a mix of two compiles)."""
        file = zlib.crc32(os.path.basename(self.filename).encode()) & 0x7FFF
        return file << 48 | (self.lineno & 0xFFFFFFFF) << 16 | min(self.col or 0, 0xFFFF)


@dataclass(frozen=True)
class AccessSite(SourceLoc):
    """The position of a memory access whose pointer was loaded from memory
    (a table of addresses), with where that load is: "line N", or "file:line"
    in another file than the access's."""
    pointer_load: str = ""


class EdslError(Exception):
    """Base of all edsl errors. `loc` is the user's source position, if known."""

    def __init__(self, message: str, loc: SourceLoc | None = None):
        self.message = message
        self.loc = loc
        super().__init__(self._render())

    def _render(self) -> str:
        if self.loc is None:
            return self.message
        text = f"{self.loc}: {self.message}"
        line = linecache.getline(self.loc.filename, self.loc.lineno).rstrip("\n")
        if line:
            text += f"\n    {line}"
            if self.loc.col is not None:
                text += f"\n    {' ' * self.loc.col}^"
        return text

    @property
    def lineno(self) -> int | None:
        return self.loc.lineno if self.loc else None


class CompileError(EdslError):
    """The Python function cannot be compiled (unsupported syntax, unknown name...)."""


class AnnotationError(CompileError):
    """A parameter annotation is missing or is not a valid edsl type."""


class TypeMismatchError(CompileError):
    """Operand types cannot be combined or converted."""


class VerifierError(CompileError):
    """MLIR's verifier rejected the generated IR; `loc` is the user's line."""


class LoweringError(EdslError):
    """A pass of the lowering pipeline failed."""


class ArgumentError(EdslError, TypeError):
    """A call's arguments do not match the function's signature."""


class DpuError(EdslError):
    """A DPU rule was broken (DMA alignment/size, WRAM budget, tasklet count)."""


def file_of_kernel_site(filename: str, kernel_file: str) -> str:
    """The file a compiled kernel's site names, for the kernel launched from
    `kernel_file`: "" is that file, a relative path is beside it."""
    if not filename:
        return kernel_file
    if os.path.isabs(filename) or not kernel_file:
        return filename
    return os.path.normpath(os.path.join(os.path.dirname(kernel_file), filename))


def caller_location() -> SourceLoc | None:
    """The user's line that called into edsl: the first frame outside Triton and edsl."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__", "").partition(".")[0] not in ("edsl", "triton"):
            return SourceLoc(frame.f_code.co_filename, frame.f_lineno, None)
        frame = frame.f_back
    return None
