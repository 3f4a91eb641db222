"""The DPU time estimate of PrIM's own programs, DPU and host code unmodified,
at the uPIMulator workbook's rows: no port between PrIM's C and the estimate.

Each benchmark of a row is built with its own Makefile against the SDK
stand-ins built for counting (`edsl sdk --counting`: every block of the DPU
program counted by the classes EDSL code is counted by,
edsl/export/counting_build.py), at the row's DPUs, 16 tasklets and the
workbook's set-up (validation.py: BL=10, VA int32, RED and SCAN-SSA int64,
RED's SINGLE version), and run once (`-w 0 -e 1`) on the row's size, checking
its own result. Its kernel estimate is that of every launch of the run (the
launches PrIM's "DPU Kernel" timers wrap: SCAN-SSA's and SCAN-RSS's two, MLP's
layers), each its slowest DPU's cycles at 350 MHz plus a launch's fixed time,
as validation.py counts them. Nothing is fitted here.

PRIM_DIR is a checkout of CMU-SAFARI/prim-benchmarks (not part of this project).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from edsl.dpu import timing
from edsl.export.counting_build import launch_estimates
from edsl.export.stand_ins import write_stand_ins

from . import validation

TASKLETS = 16


@dataclass(frozen=True)
class Program:
    make: str          # make's variables beside NR_DPUS and NR_TASKLETS
    run: str           # the host program and its arguments; {n}: the row's size


# How each benchmark runs a row of size n (what n is: validation.py, heldout/*.py).
PROGRAMS = {
    "VA": Program("BL=10 TYPE=INT32", "./bin/host_code -w 0 -e 1 -i {n} -x 1"),
    "RED": Program("BL=10 VERSION=SINGLE TYPE=INT64", "./bin/host_code -w 0 -e 1 -i {n} -x 1"),
    "SCAN-SSA": Program("BL=10 TYPE=INT64", "./bin/host_code -w 0 -e 1 -i {n} -x 1"),
    "GEMV": Program("BL=10", "./bin/gemv_host -w 0 -e 1 -m {n} -n 64"),
    "HST-S": Program("BL=10", "./bin/host_code -w 0 -e 1 -i {n} -b 256 -x 1"),
    "HST-L": Program("BL=10", "./bin/host_code -w 0 -e 1 -i {n} -b 256 -x 1"),
    "SEL": Program("BL=10", "./bin/host_code -w 0 -e 1 -i {n} -x 1"),
    "UNI": Program("BL=10", "./bin/host_code -w 0 -e 1 -i {n} -x 1"),
    "SCAN-RSS": Program("BL=10", "./bin/host_code -w 0 -e 1 -i {n} -x 1"),
    "MLP": Program("BL=10", "./bin/mlp_host -w 0 -e 1 -m {n} -n {n}"),
    "TS": Program("BL=10", "./bin/ts_host -w 0 -e 1 -n {n} -m 64"),
    "TRNS": Program("", "./bin/host_code -w 0 -e 1 -p 64 -n 8 -m 4 -o {n} -x 1"),
}
# What keeps a benchmark's rows from running as PrIM wrote it.
NOT_RUN = {"BS": "PrIM's BS fixes its input's length in its source (support/common.h: INPUT_SIZE "
                 "2,048,576); the workbook's rows are of other lengths"}


@dataclass
class Outcome:
    row: validation.Row
    est_kernel: float = float("nan")     # ms, its launches' fixed time included
    launches: int = 0
    problem: str = ""                    # why there is no estimate


class Runner:
    """Builds and runs PrIM's benchmarks against the counting stand-ins, in a temporary folder."""

    def __init__(self, prim: Path):
        self.prim = Path(prim)
        self.tmp = Path(tempfile.mkdtemp(prefix="prim-c."))
        self.sdk = write_stand_ins(self.tmp / "sdk", counting=True)
        self.built: dict[tuple[str, int], Path | str] = {}

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _build(self, benchmark: str, dpus: int) -> Path | str:
        """The benchmark's folder, built for `dpus` DPUs, or why it did not build."""
        key = (benchmark, dpus)
        if key not in self.built:
            folder = self.tmp / f"{benchmark}-{dpus}"
            shutil.copytree(self.prim / benchmark, folder, ignore=shutil.ignore_patterns("bin"))
            env = dict(os.environ, PATH=f"{self.sdk / 'bin'}{os.pathsep}{os.environ['PATH']}")
            done = subprocess.run(["make", "all", f"NR_DPUS={dpus}", f"NR_TASKLETS={TASKLETS}",
                                   *PROGRAMS[benchmark].make.split()], cwd=folder, env=env, capture_output=True,
                                  text=True)
            errors = [line for line in done.stderr.splitlines() if "error" in line]
            self.built[key] = folder if done.returncode == 0 else f"build failed: {errors[:1]}"
        return self.built[key]

    def estimate(self, row: validation.Row) -> Outcome:
        if row.benchmark in NOT_RUN:
            return Outcome(row, problem=NOT_RUN[row.benchmark])
        folder = self._build(row.benchmark, row.dpus)
        if isinstance(folder, str):
            return Outcome(row, problem=folder)
        program = PROGRAMS[row.benchmark]
        counts = folder / "counts.jsonl"
        counts.unlink(missing_ok=True)
        done = subprocess.run(program.run.format(n=row.size).split(), cwd=folder, capture_output=True, text=True,
                              env=dict(os.environ, EDSL_SIM_COUNTS=str(counts)), timeout=3600)
        text = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
        if done.returncode != 0 or "fault" in text:
            last = [line for line in text.splitlines() if "fault" in line] or text.strip().splitlines()[-1:]
            return Outcome(row, problem=f"the run failed: {last[0] if last else done.returncode}")
        if "[ERROR]" in text or "ERROR:" in text:
            return Outcome(row, problem="its own check failed")
        launches = launch_estimates(counts, validation.CLOCK_HZ)
        ms = sum(e.dpu_seconds + timing.launch_seconds(row.dpus) for e in launches) * 1e3
        return Outcome(row, ms, len(launches))
