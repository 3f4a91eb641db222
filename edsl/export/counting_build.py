"""A DPU program for the SDK stand-ins built to count what it executes, and
the DPU model's time estimate of its launches: PrIM's own programs, or any
written for the SDK, estimated as EDSL code is (`edsl/dpu/timing.py`).

`edsl sdk FOLDER --counting` writes a `dpu-upmem-dpurte-clang` that runs
`build` (`python -m edsl.export.counting_build SDK ARGS...`): each C source
is compiled by the clang of the `ziglang` package to LLVM IR for the host,
every block of it given a counter by `count_llvm_ir` (the classes EDSL code
is counted by: the same rules), and linked with the stand-in runtime, which
keeps the counters a tasklet and counts its transfers; what each counter's
block executes is written beside the program (`PROGRAM.counters.json`).
With `EDSL_SIM_COUNTS` naming a file, the stand-in host library appends each
DPU's counts of each launch to it; `launch_estimates` turns them into
`timing.TimingEstimate`s, a launch each.

As for C functions on the model, the IR is the host's, its loops shaped as
the DPU's compiler shapes them (`upmem_c.AS_ON_A_DPU`): where the DPU's ABI
differs (a `long` is 64-bit here), so may the count.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ..base.errors import CompileError
from ..codegen import clang, upmem_c
from ..dpu import timing
from ..lowering.counting_llvm_ir import count_llvm_ir
from ..target import dpu as abi
from .stand_ins import DPU_PROGRAM_FLAGS

# The stand-ins' calls, by the class the estimate prices them as (the rest are `counting`'s rules).
CALL_CLASSES = {"edsl_sim_mram_read": ("dma",), "edsl_sim_mram_write": ("dma",), "barrier_wait": ("sync",),
                "mutex_lock": (abi.MUTEX_LOCK,), "mutex_unlock": (abi.MUTEX_UNLOCK,),
                "mutex_trylock": (abi.MUTEX_TRYLOCK,),
                "handshake_wait_for": ("sync",), "handshake_notify": ("sync",), "me": ("alu",)}
TABLES_SUFFIX = ".counters.json"


def split_command(args: list[str]) -> tuple[str, list[str], list[str]]:
    """(the output, the C sources, the other flags) of a compiler command line."""
    out, sources, flags = "a.out", [], []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-o" and i + 1 < len(args):
            out, i = args[i + 1], i + 2
            continue
        if a.startswith("-o") and len(a) > 2:
            out = a[2:]
        elif a.endswith(".c") and not a.startswith("-"):
            sources.append(a)
        else:
            flags.append(a)
        i += 1
    return out, sources, flags


def _ran(cmd: list[str]) -> bool:
    """Run a compiler; its messages to standard error if it fails."""
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
    return done.returncode == 0


def build(sdk: Path, args: list[str]) -> int:
    """Build the DPU program `args` names (the SDK compiler's command line) for counting."""
    out, sources, flags = split_command(args)
    if not sources:
        print("dpu-upmem-dpurte-clang (edsl SDK stand-ins, counting): no C source given", file=sys.stderr)
        return 1
    include = sdk / "include"
    zig = [sys.executable, "-m", "ziglang", "cc", "-target", "x86_64-linux-gnu"]
    tables: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="edsl-count.") as tmp:
        objects = []
        for k, source in enumerate(sources):
            ll, obj = Path(tmp) / f"{k}.ll", Path(tmp) / f"{k}.o"
            if not _ran([*zig, *DPU_PROGRAM_FLAGS, *upmem_c.AS_ON_A_DPU, "-O2", "-S", "-emit-llvm", f"-I{include}",
                         *flags, "-o", str(ll), source]):
                return 1
            counted, per_block = count_llvm_ir(ll.read_text(), len(tables), calls=CALL_CLASSES)
            tables += per_block
            ll.write_text(counted)
            if not _ran([*zig, "-c", "-fPIC", "-o", str(obj), str(ll)]):
                return 1
            objects.append(str(obj))
        slots = Path(tmp) / "slots.c"
        slots.write_text(f"const unsigned int edsl_sim_counter_slots = {max(len(tables), 1)};\n")
        if not _ran([*os.environ.get("CC", "cc").split(), *DPU_PROGRAM_FLAGS, "-shared", "-Wl,-Bsymbolic",
                     f"-I{include}", *flags, f"-DEDSL_SIM_COUNTERS={abi.COUNTERS}", "-o", out,
                     str(include / "dpu_sim_rt.c"), *objects, str(slots), "-lm", "-lpthread"]):
            return 1
    Path(out + TABLES_SUFFIX).write_text(json.dumps(tables))
    return 0


def launch_estimates(counts: str | os.PathLike,
                     clock_hz: float = timing.DEFAULT_CLOCK_HZ) -> list[timing.TimingEstimate]:
    """The estimate of each launch in `counts` (the EDSL_SIM_COUNTS file of a
    run of programs built by `build`): its DPUs' cycles (no host transfers)."""
    tables: dict[str, list] = {}
    launches: dict[int, list] = {}
    for line in Path(counts).read_text().splitlines():
        record = json.loads(line)
        program = record["program"]
        if program not in tables:
            try:
                tables[program] = json.loads(Path(program + TABLES_SUFFIX).read_text())
            except FileNotFoundError:
                raise ValueError(f"{program} was not built for counting (edsl sdk --counting): no "
                                 f"{Path(program).name + TABLES_SUFFIX} beside it") from None
        tasklets = []
        for t, (reads, read_bytes, writes, write_bytes) in enumerate(record["dma"]):
            ops: dict[str, float] = {}
            blocks = record["blocks"][t] if record["blocks"] else []
            for executed, table in zip(blocks, tables[program]):
                for cls, n in table.items():
                    ops[cls] = ops.get(cls, 0) + n * executed
            tasklets.append(timing.TaskletWork(ops, reads, read_bytes, writes, write_bytes))
        launches.setdefault(record["launch"], []).append(tasklets)
    return [timing.estimate(dpus, clock_hz=clock_hz) for _, dpus in sorted(launches.items())]


if __name__ == "__main__":
    try:
        clang.builtin_headers()                  # (the ziglang package, or why not)
    except CompileError as err:
        print(f"dpu-upmem-dpurte-clang (edsl SDK stand-ins, counting): {err.message}", file=sys.stderr)
        sys.exit(1)
    sys.exit(build(Path(sys.argv[1]), sys.argv[2:]))
