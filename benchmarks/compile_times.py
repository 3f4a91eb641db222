"""Compile times of a library's kernels on the `dpu` backend: runs test cases
(pytest node ids, from the library's folder) in this process on `dpu` with
empty caches, so that each kernel compiles, and prints the slowest kernel
compilations and the time of each stage (the `edsl.backend` logger's stage
records: `mlir` the conversion of TTIR, `llmlir` the lowering to the LLVM
dialect, `llir` the translation to LLVM IR, `dpubin` LLVM's optimisation and
the object code). Triton's own `ttir` stage is the rest of the whole.

    python benchmarks/compile_times.py ROOT CASE... [--top 10]
    python benchmarks/compile_times.py /tmp/liger/liger_kernel-0.8.5 \\
        "test/transformers/test_attn_res.py::test_correctness[dtype1-0.01-0.001-40-1-32-128]"

Liger-Kernel's tests: `python scripts/liger_conformance.py prepare DEST`.
"""
import argparse
import collections
import logging
import os
import re
import sys
import tempfile
import time

STAGES = ("mlir", "llmlir", "llir", "dpubin")
RECORD = re.compile(r"kernel '(?P<kernel>[^']*)': stage (?P<stage>\w+): (?P<seconds>[\d.]+) s")


class StageTimes(logging.Handler):
    """Collects the backend's stage records: one compilation a `mlir` record on."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.compiles = []             # [kernel, {stage: seconds}]

    def emit(self, record):
        m = RECORD.match(record.getMessage())
        if not m:
            return
        if m["stage"] == STAGES[0]:
            self.compiles.append([m["kernel"], {}])
        if self.compiles and self.compiles[-1][0] == m["kernel"]:
            self.compiles[-1][1][m["stage"]] = float(m["seconds"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", help="the library's folder (the tests' rootdir)")
    parser.add_argument("cases", nargs="+", help="pytest node ids, relative to ROOT")
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--plugin", action="append", default=[],
                        help="a pytest plugin file to load (a library's shim, as for the conformance runs)")
    a = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="compile-times-")
    os.environ.update(TRITON_DEFAULT_BACKEND="dpu", TRITON_CACHE_DIR=f"{scratch}/triton",
                      EDSL_CACHE_DIR=f"{scratch}/edsl")
    os.environ.pop("TRITON_INTERPRET", None)
    import pytest
    times = StageTimes()
    log = logging.getLogger("edsl.backend")
    log.setLevel(logging.DEBUG)
    log.addHandler(times)
    plugins = []
    for plugin in map(os.path.abspath, a.plugin):
        sys.path.insert(0, os.path.dirname(plugin))
        plugins += ["-p", os.path.splitext(os.path.basename(plugin))[0]]
    os.chdir(a.root)
    sys.path.insert(0, a.root)
    start = time.perf_counter()
    code = pytest.main([*a.cases, "-q", "-p", "no:cacheprovider", *plugins, "--rootdir", "."])
    whole = time.perf_counter() - start
    compiles = [(kernel, sum(stages.values()), stages) for kernel, stages in times.compiles]
    per_kernel = collections.Counter()
    for kernel, total, _ in compiles:
        per_kernel[kernel] += total
    print(f"\n{len(compiles)} compilations of {len(per_kernel)} kernels in {whole:.1f} s of tests (pytest exit {code}); "
          f"edsl's stages {sum(t for _, t, _ in compiles):.1f} s")
    print(f"{'kernel':40} {'total s':>8} " + " ".join(f"{s:>8}" for s in STAGES))
    for kernel, total, stages in sorted(compiles, key=lambda c: -c[1])[:a.top]:
        print(f"{kernel[:40]:40} {total:8.2f} " + " ".join(f"{stages.get(s, 0):8.2f}" for s in STAGES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
