"""Compiled kernels are cached as Triton caches GPU kernels (TRITON_CACHE_DIR):
a second process reuses them without compiling again."""
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

SCRIPT = textwrap.dedent('''
    import importlib.util, sys, numpy as np
    import edsl.backend; edsl.backend.activate()      # (also beside a GPU driver)
    spec = importlib.util.spec_from_file_location("ex", sys.argv[1])
    ex = importlib.util.module_from_spec(spec); spec.loader.exec_module(ex)
    x = np.arange(3000, dtype=np.float32); y = np.ones(3000, np.float32)
    assert np.array_equal(ex.vector_add(x, y), x + y)
''')


def _run(tmp_path, cache, example=EXAMPLES / "triton_vector_add.py"):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, TRITON_CACHE_DIR=str(cache), EDSL_CACHE_DIR=str(tmp_path / "edsl-cache"))
    done = subprocess.run([sys.executable, str(script), str(example)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()}


def test_second_process_reuses_the_compiled_kernel(tmp_path):
    cache = tmp_path / "triton"
    first = _run(tmp_path, cache)
    binaries = [p for p in first if p.suffix == ".dpubin"]
    assert binaries, sorted(p.name for p in first)
    second = _run(tmp_path, cache)
    assert second == first  # nothing compiled or written again


def test_a_kernel_compiles_to_the_same_bytes_from_any_folder(tmp_path):
    """Triton's cache key ignores the kernel's path, so a compile must too: two
    copies of a project compiling one kernel at once write one cache entry,
    file by file, and a mix of two different compiles would pair one's code
    with the other's check sites (an error then naming no line). Only the
    paths in the IR's locations differ (Triton's own). (A kernel calling an
    EDSL function is keyed by that function's file too.)"""
    stages = []
    for copy in ("a", "b"):
        folder = tmp_path / copy / "project"
        folder.mkdir(parents=True)
        example = shutil.copy(EXAMPLES / "triton_vector_add.py", folder)
        files = _run(tmp_path / copy, tmp_path / copy / "triton", pathlib.Path(example))
        stages.append({p.suffix: p.read_bytes().replace(bytes(folder), b"<folder>") for p in files
                       if p.suffix in (".dpubin", ".llmlir", ".ttir")})
    assert set(stages[0]) == {".dpubin", ".llmlir", ".ttir"}
    assert stages[0] == stages[1]
