"""A DPU program for the SDK stand-ins in model mode (`edsl sdk FOLDER
--model`): `dpu-upmem-dpurte-clang` runs `build` (`python -m
edsl.export.model_build SDK ARGS...`), which compiles the C source for the
DPU model (edsl.c_program.CProgram: a compile error is the compiler's, at
its line) and writes, as the program file, what the model needs to compile
it again when `dpu_load` loads it: the source, its macros and include
folders, its tasklets (NR_TASKLETS). The model then runs it
(edsl.export.model_server).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..base.errors import EdslError
from .counting_build import split_command

FORMAT = "edsl DPU program for the model"
# Flags that change nothing the model runs: optimization, warnings, debug
# information, the language standard, code generation and target options.
_IGNORED = ("-O", "-W", "-g", "-std=", "-f", "-m", "-pedantic", "-c")


def program_of(args: list[str], cwd: str) -> tuple[str, dict]:
    """(the output file, the program file's fields) of the DPU compiler's command line."""
    out, sources, flags = split_command(args)
    if len(sources) != 1:
        raise ValueError(f"the DPU model runs a DPU program of one C source; {len(sources)} given")
    defines, include_dirs = {}, []
    flags = iter(flags)
    for flag in flags:
        if flag in ("-D", "-I"):
            flag += next(flags, "")
        if flag.startswith("-D"):
            name, _, value = flag[2:].partition("=")
            defines[name] = value if "=" in flag else None
        elif flag.startswith("-I"):
            include_dirs.append(os.path.join(cwd, flag[2:]))
        elif not flag.startswith(_IGNORED):
            raise ValueError(f"the DPU model does not take the compiler flag {flag!r}")
    tasklets = int(defines.pop("NR_TASKLETS", None) or 1)
    return out, {"format": FORMAT, "source": os.path.join(cwd, sources[0]), "defines": defines,
                 "include_dirs": include_dirs, "tasklets": tasklets}


def read_program(path: str | os.PathLike) -> dict:
    """The fields of a program file `build` wrote (ValueError: not one)."""
    try:
        fields = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} is not a DPU program built for the model (edsl sdk --model): {err}") from None
    if not isinstance(fields, dict) or fields.get("format") != FORMAT:
        raise ValueError(f"{path} is not a DPU program built for the model (edsl sdk --model)")
    return fields


def load_program(fields: dict):
    """The CProgram of a program file's fields (compiled; checked for races
    between tasklets where EDSL_RACE_CHECK asks, as launches are)."""
    from ..c_program import CProgram
    return CProgram(fields["source"], fields["tasklets"], fields["defines"], tuple(fields["include_dirs"]))


def build(args: list[str]) -> int:
    """Compile the DPU program `args` names for the model and write its program file."""
    try:
        out, fields = program_of(args, os.getcwd())
        load_program(fields)
    except (ValueError, EdslError) as err:
        print(f"dpu-upmem-dpurte-clang (edsl SDK stand-ins, DPU model): {err}", file=sys.stderr)
        return 1
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(fields, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(build(sys.argv[1:]))
