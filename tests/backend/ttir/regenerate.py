"""Regenerate the golden TTIR corpus from the installed Triton.

    python tests/backend/ttir/regenerate.py

Runs the project's examples and its tests that compile Triton kernels, and
records the TTIR the `dpu` backend receives for each kernel (after the stock
`make_ttir` passes) together with Triton's own view of it (`triton_view`:
each op's name, operand types and result types, from Triton's `module.walk`).
Writes `<triton version>/<kernel>-<n>.mlir`: the TTIR as Triton prints it,
then the view as `// view:` comment lines. Kernels whose op sequence is the
same as one already kept are left out, and so are the random programs of
`test_control` (Hypothesis runs with a fixed seed). Paths of this machine are replaced by
the repository-relative path (and `site-packages/` for installed packages).
`test_ttir_corpus.py` reads every version's folder.
"""
from __future__ import annotations

import os
import pathlib
import re
import runpy
import shutil
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
TESTS = ["tests/backend", "tests/inject", "tests/export"]


class Recorder:
    """Wraps the backend's `make_mlir` stage to keep each new kernel's TTIR."""

    def __init__(self):
        self.kernels: dict[tuple, tuple[str, str, list]] = {}

    def install(self):
        from edsl.backend import compiler
        from edsl.backend.ttir_reader import triton_view
        make_mlir = compiler.DpuBackend.make_mlir

        def recording(mod, metadata, options, state):
            if not isinstance(mod, str):
                view = triton_view(mod)
                shape = tuple(op.name for op in view)
                name = mod.get_entry_func_name() if hasattr(mod, "get_entry_func_name") else "kernel"
                self.kernels.setdefault((name, shape), (name, mod.str(), view))
            return make_mlir(mod, metadata, options, state)
        compiler.DpuBackend.make_mlir = staticmethod(recording)


def _portable(text: str) -> str:
    """The text with this machine's paths made relative."""
    import triton
    site = str(pathlib.Path(triton.__file__).resolve().parents[1])
    text = text.replace(site + os.sep, "site-packages/")
    text = text.replace(str(ROOT) + os.sep, "")
    return re.sub(r'"/tmp/[^"]*/', '"', text)


def main() -> int:
    import pytest
    import triton
    os.environ["TRITON_DEFAULT_BACKEND"] = "dpu"
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="ttir-corpus-")
    os.chdir(ROOT)
    recorder = Recorder()
    recorder.install()
    sys.path.insert(0, str(ROOT / "examples"))
    for example in sorted((ROOT / "examples").glob("*.py")):
        if "triton" in example.read_text():
            try:
                runpy.run_path(str(example), run_name="__main__")
            except SystemExit as done:
                if done.code:
                    return int(done.code)
    # (a fixed seed: the same examples every run; generated programs left out)
    code = pytest.main(["-q", "-p", "no:cacheprovider", "--hypothesis-seed=0",
                        "-k", "not generated_control_flow", *TESTS])
    if code not in (0, 1):
        return int(code)
    out = HERE / triton.__version__
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    counts: dict[str, int] = {}
    for name, text, view in recorder.kernels.values():
        counts[name] = counts.get(name, 0) + 1
        body = _portable(text).rstrip("\n") + "\n" + "".join(f"// view: {op}\n" for op in view)
        (out / f"{name}-{counts[name]}.mlir").write_text(body)
    print(f"{len(recorder.kernels)} kernels written to {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
