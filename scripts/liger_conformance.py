#!/usr/bin/env python3
"""Conformance of the `dpu` backend with a production Triton library's op
tests: Liger-Kernel's (LinkedIn's Triton kernels for LLM training).

`prepare DEST` downloads the library's source distribution (which holds its
tests, `test/transformers/`) into DEST, kept outside the project, and
installs the library and the transformers its tests import into this
environment. The runs are `triton_conformance.py run DEST/liger_kernel-<v>`
with case ids such as `test/transformers/test_rms_norm.py::...`, on `dpu`
or the interpreter, side by side:

    python scripts/liger_conformance.py prepare /tmp/liger
    python scripts/triton_conformance.py run /tmp/liger/liger_kernel-0.8.5 --mode dpu \\
        --cases scripts/conformance/liger_cases.txt --expected scripts/conformance/liger_dpu_passes.txt
    python scripts/liger_conformance.py cases /tmp/liger/liger_kernel-0.8.5 > all_cases.txt

The tests need no shim: on a machine without a GPU, Liger's `infer_device()`
gives "cpu", its tests make torch CPU tensors, and Triton launches their
kernels on its active driver (`TRITON_DEFAULT_BACKEND=dpu`, which the run's
mode sets). `EDSL_NUM_DPUS` and `EDSL_NUM_TASKLETS` (the backend's defaults
for launches that do not say) spread every launch over DPUs and tasklets.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VERSION = "0.8.5"
# Its tests import transformers' model code of the 4.x series.
REQUIREMENTS = [f"liger-kernel=={VERSION}", "transformers>=4.49,<5"]
TESTS = "test/transformers"


def prepare(dest: Path) -> Path:
    """The library's source tree in `dest` (downloaded once), the library and
    its tests' requirements installed; its folder."""
    root = dest / f"liger_kernel-{VERSION}"
    if not (root / TESTS).is_dir():
        dest.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                            "-d", tmp, f"liger-kernel=={VERSION}"], check=True)
            archive = next(Path(tmp).glob("*.tar.gz"))
            with tarfile.open(archive) as tar:
                tar.extractall(dest, filter="data")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *REQUIREMENTS], check=True)
    return root


def cases(root: Path) -> list[str]:
    """Every case id of the op tests, as pytest collects them from `root`
    (5 of its files do not import here, so a partial collection counts:
    `triton_conformance.collect` refuses one)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", TESTS, "--collect-only", "-q", "-p", "no:cacheprovider",
                           "--rootdir", "."], cwd=root, capture_output=True, text=True)
    ids = [line for line in proc.stdout.splitlines() if "::" in line and not line[:1].isspace()]
    if not ids:
        sys.exit(f"collection failed (pytest exit {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return ids


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="download the library's tests into DEST and install what they need")
    p.add_argument("dest")
    c = sub.add_parser("cases", help="print every case id of the op tests")
    c.add_argument("root", help="the library's source tree (what `prepare` printed)")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        print(prepare(Path(args.dest).resolve()))
    else:
        print("\n".join(cases(Path(args.root).resolve())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
