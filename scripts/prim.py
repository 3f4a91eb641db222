"""PrIM's benchmarks (CMU-SAFARI/prim-benchmarks), DPU and host programs
unmodified, built with their own Makefiles against the SDK stand-ins (`edsl
sdk`) and run, each checking its own result against its host's computation.

    python scripts/prim.py PRIM_DIR [--apps VA SEL ...] [--dpus 1 4 16 64] [--tasklets 16] [--model]

PRIM_DIR is a checkout of prim-benchmarks (not part of this project). Each
benchmark is copied to a temporary folder, built with `make` and PrIM's
variables (NR_DPUS, NR_TASKLETS, BL, ...; the stand-ins' bin/ first on PATH)
and run with the arguments of PrIM's `run_strong_rank.py`, the same for
every DPU count; with `--model`, on the DPU model (`edsl sdk --model`),
which checks each DPU's transfers and its tasklets' races. Two inputs PrIM downloads are generated instead, in their
formats and smaller: SpMV's matrix (a random sparse 8192 x 8192 matrix,
about 16 nonzeros a row) and BFS's graph (a random graph of 8192 nodes,
about 8 edges a node). Prints a line a run and a table; exits 1 if a run
fails its check.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from edsl.export.stand_ins import write_stand_ins  # noqa: E402

# name: (make variables, run arguments), as PrIM's run_strong_rank.py runs them
# ({bl}: BL; NW's block size depends on the DPU count there too).
APPS = {
    "VA": ("BL=10", "./bin/host_code -w 0 -e 1 -i 2621440 -x 1"),
    "GEMV": ("BL=10", "./bin/gemv_host -m 8192 -n 1024"),
    "SpMV": ("", "./bin/host_code -v 0 -f data/generated.mtx"),
    "SEL": ("BL=10", "./bin/host_code -w 0 -e 1 -i 3932160 -x 1"),
    "UNI": ("BL=10", "./bin/host_code -w 0 -e 1 -i 3932160 -x 1"),
    "BS": ("BL=10", "./bin/bs_host -i 262144"),
    "TS": ("BL=10", "./bin/ts_host -n 524288"),
    "BFS": ("", "./bin/host_code -v 0 -f data/generated.txt"),
    "MLP": ("BL=10", "./bin/mlp_host -m 8192 -n 1024"),
    "NW": ("BL={nw_bl} BL_IN=2", "./bin/nw_host -w 0 -e 1 -n 2560"),
    "HST-S": ("BL=10", "./bin/host_code -w 0 -e 1 -b 256 -x 1"),
    "HST-L": ("BL=10", "./bin/host_code -w 0 -e 1 -b 256 -x 1"),
    "RED": ("BL=10 VERSION=SINGLE", "./bin/host_code -w 0 -e 1 -i 6553600 -x 1"),
    "SCAN-SSA": ("BL=10", "./bin/host_code -w 0 -e 1 -i 3932160 -x 1"),
    "SCAN-RSS": ("BL=10", "./bin/host_code -w 0 -e 1 -i 3932160 -x 1"),
    "TRNS": ("", "./bin/host_code -w 0 -e 1 -p 64 -o 12288 -x 1"),
}
NODES = 8192


def generate_inputs(app: str, folder: Path) -> None:
    """The inputs PrIM downloads, generated (seeded) in their formats."""
    rng = random.Random(0)
    (folder / "data").mkdir(exist_ok=True)
    if app == "SpMV":        # Matrix Market coordinates, 1-based, by row
        entries = sorted({(r, rng.randrange(NODES)) for r in range(NODES) for _ in range(16)})
        lines = [f"{NODES} {NODES} {len(entries)}"] + [f"{r + 1} {c + 1}" for r, c in entries]
        (folder / "data" / "generated.mtx").write_text("\n".join(lines) + "\n")
    elif app == "BFS":       # node count (twice) and edge count, then the edges by node, both ways
        edges = set()
        for u in range(NODES):
            for _ in range(4):
                v = rng.randrange(NODES)
                if v != u:
                    edges |= {(u, v), (v, u)}
        edges = sorted(edges)
        lines = [f"{NODES} {NODES} {len(edges)}"] + [f"{u} {v}" for u, v in edges]
        (folder / "data" / "generated.txt").write_text("\n".join(lines) + "\n")


def run_one(prim: Path, sdk: Path, app: str, dpus: int, tasklets: int, work: Path) -> tuple[str, float, str]:
    """Build and run one benchmark: (outcome, seconds, the output's last lines)."""
    folder = work / f"{app}-{dpus}"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(prim / app, folder, ignore=shutil.ignore_patterns("bin"))
    generate_inputs(app, folder)
    make_vars, command = APPS[app]
    make_vars = make_vars.format(nw_bl=2560 // dpus)
    env = dict(os.environ, PATH=f"{sdk / 'bin'}{os.pathsep}{os.environ['PATH']}")
    build = subprocess.run(["make", "all", f"NR_DPUS={dpus}", f"NR_TASKLETS={tasklets}", *make_vars.split()],
                           cwd=folder, env=env, capture_output=True, text=True)
    if build.returncode != 0:
        errors = [line for line in build.stderr.splitlines() if "error" in line]
        return "build failed", 0.0, "\n".join(errors[:3])
    start = time.perf_counter()
    try:
        r = subprocess.run(command.split(), cwd=folder, capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        return "timed out", time.perf_counter() - start, ""
    seconds = time.perf_counter() - start
    text = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout + r.stderr)
    tail = "\n".join(text.strip().splitlines()[-3:])
    if r.returncode < 0:
        return f"signal {-r.returncode}", seconds, tail
    if "fault" in text or r.returncode != 0:
        return "fault" if "fault" in text else f"exit {r.returncode}", seconds, tail
    # (PrIM's checks print "[ERROR]" or PRINT_ERROR's "ERROR:"; SpMV and BFS print nothing when right)
    if "[ERROR]" in text or "ERROR:" in text:
        return "wrong result", seconds, tail
    return "ok", seconds, tail


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prim", type=Path, help="a checkout of CMU-SAFARI/prim-benchmarks")
    parser.add_argument("--apps", nargs="+", default=list(APPS), choices=list(APPS))
    parser.add_argument("--dpus", nargs="+", type=int, default=[1, 4, 16, 64])
    parser.add_argument("--tasklets", type=int, default=16)
    parser.add_argument("--model", action="store_true",
                        help="run the DPU programs on the DPU model (edsl sdk --model), checked, not as "
                             "shared objects of the host's C compiler")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="prim.") as tmp:
        sdk = write_stand_ins(Path(tmp) / "sdk", model=args.model)
        for app in args.apps:
            for dpus in args.dpus:
                outcome, seconds, tail = run_one(args.prim, sdk, app, dpus, args.tasklets, Path(tmp))
                results[app, dpus] = outcome
                print(f"{app:9s} {dpus:3d} DPUs  {outcome:13s} {seconds:7.1f} s", flush=True)
                if outcome != "ok":
                    print("    " + tail.replace("\n", "\n    "), flush=True)
    print(f"\n| benchmark | {' | '.join(f'{d} DPUs' for d in args.dpus)} |")
    print(f"|---|{'---|' * len(args.dpus)}")
    for app in args.apps:
        print(f"| {app} | {' | '.join(results[app, d] for d in args.dpus)} |")
    return 0 if all(v == "ok" for v in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
