"""The clang of the `ziglang` package, which compiles raw functions written
in C: CUDA C for NVIDIA GPUs (edsl.codegen.cuda), UPMEM DPU C for the DPU
model (edsl.codegen.upmem_c). No system compiler, CUDA toolkit or UPMEM SDK
is used: the headers such code includes are the project's own.
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass

from ..base.errors import CompileError, SourceLoc


@dataclass(frozen=True)
class Source:
    """A C or CUDA C translation unit."""
    text: str
    filename: str                       # the file, or a name for a source string
    defines: tuple = ()                 # ((name, value), ...): -D
    include_dirs: tuple = ()            # the file's own folder first

    def flags(self) -> list[str]:
        """The source's own flags (its include folders and macros)."""
        flags = []
        for d in self.include_dirs:
            flags += ["-I", d]
        for name, value in self.defines:
            flags.append(f"-D{name}" if value is None else f"-D{name}={value}")
        return flags


def read_source(what: str, file, source: str | None, stub, suffix: str) -> tuple[str, str]:
    """(filename, text) of a raw function given as `file=` or `source=`; a
    source string is named after the stub, beside the stub's file."""
    if (file is None) == (source is None):
        raise CompileError(f"{what} over {stub.__name__}: give the source as file= or source=, one of them")
    if file is not None:
        filename = os.path.abspath(os.fspath(file))
        try:
            with open(filename, encoding="utf-8") as f:
                return filename, f.read()
        except OSError as e:
            raise CompileError(f"{what} over {stub.__name__}: cannot read {filename}: {e.strerror}") from None
    code = getattr(stub, "__code__", None)
    filename = f"{stub.__name__}{suffix}" if code is None else \
        os.path.join(os.path.dirname(os.path.abspath(code.co_filename)), f"{stub.__name__}{suffix}")
    return filename, source


def _clang(language: str) -> list[str]:
    try:
        import ziglang  # noqa: F401  (only its presence: it is run as a program)
    except ImportError:             # (a dependency of the package: an install that lost it)
        raise CompileError(f"raw functions in {language} are compiled by the clang of the ziglang package, which "
                           f"is not installed, though triton-edsl depends on it: reinstall triton-edsl") from None
    return [sys.executable, "-m", "ziglang", "clang"]


def builtin_headers() -> str:
    """The folder of clang's own headers (stdint.h, stddef.h, ...) in the ziglang package."""
    _clang("C")
    import ziglang
    return os.path.join(os.path.dirname(ziglang.__file__), "lib", "include")


def run(source: Source, args: list[str], language: str) -> str:
    """clang's standard output for `source` (read from stdin under its own
    name, so that diagnostics and __FILE__ name it); its first error raised
    as a CompileError at the file's line."""
    cmd = _clang(language) + args + ["-"]
    directory = os.path.dirname(source.filename) or "."
    text = f'# 1 "{source.filename}"\n' + source.text
    done = subprocess.run(cmd, input=text.encode(), capture_output=True, cwd=directory
                          if os.path.isdir(directory) else None)
    if done.returncode != 0:
        raise clang_error(done.stderr.decode(errors="replace"), source.filename)
    return done.stdout.decode()


_DIAGNOSTIC = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): (?:fatal )?error: (?P<msg>.*)$", re.M)


def clang_error(stderr: str, filename: str) -> CompileError:
    """clang's first error as a CompileError at its file and line, the whole
    diagnostic below it."""
    m = _DIAGNOSTIC.search(stderr)
    lines = [line for line in stderr.splitlines() if "CUDA version" not in line]
    if m is None:
        return CompileError(f"clang could not compile {filename}:\n" + "\n".join(lines))
    loc = SourceLoc(m["file"], int(m["line"]), int(m["col"]) - 1)
    rest = "\n".join(line for line in lines if line != m.group(0)).strip()   # notes, other errors
    return CompileError(f"{m['msg']}\n{rest}" if rest else m["msg"], loc)


def digest(preprocessed: str, source: Source) -> str:
    """What identifies the code of a source: its preprocessed text and defines."""
    h = hashlib.sha256(preprocessed.encode())
    h.update(repr(source.defines).encode())
    return h.hexdigest()


__all__ = ["Source", "clang_error", "digest", "read_source", "run"]
