"""What an installed edsl shows and costs: its version, licence and command
line, and that `import triton` (which imports edsl's backend plug-in) and
`import edsl` load no MLIR (benchmarks/import_cost.py times them)."""
import subprocess
import sys
from importlib import metadata

import edsl


def _modules_after(code: str) -> set:
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_import_triton_and_import_edsl_load_no_mlir():
    for code in ("import triton", "import edsl", "import triton, edsl.backend.compiler, edsl.backend.driver"):
        loaded = _modules_after(code)
        assert "edsl.backend" in loaded or "triton" not in code
        heavy = sorted(m for m in loaded if m == "mlir" or m.startswith(("mlir.", "edsl.function", "edsl.lowering")))
        assert not heavy, f"{code!r} loads {heavy}"


def test_the_compiler_loads_on_first_use(tmp_path):
    script = tmp_path / "first.py"
    script.write_text("import edsl\n\n@edsl.dialect\ndef f(y: edsl.InOut['memref<?xf32>']):\n    y[0] = 1.0\n\n"
                      "f.mlir\n")
    loaded = _modules_after(f"import runpy\nrunpy.run_path({str(script)!r})")
    assert "mlir.ir" in loaded and "edsl.function" in loaded


def test_version_licence_and_command_line():
    assert edsl.__version__ == metadata.version("triton-edsl")
    meta = metadata.metadata("triton-edsl")
    assert meta["License-Expression"] == "MIT"
    for argv in (["-m", "edsl", "--version"], ["-c", "from edsl.export.cli import main; main(['--version'])"]):
        r = subprocess.run([sys.executable, *argv], capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.strip() == f"edsl {edsl.__version__}", r.stdout + r.stderr


def test_compile_stages_log_their_times_and_edsl_dump_ir_prints_edsls_passes(tmp_path, caplog):
    import logging
    script = tmp_path / "stages.py"
    script.write_text("import edsl\n\n@edsl.dialect\ndef g(y: edsl.InOut['memref<?xf32>']):\n    y[0] = 2.0\n\n"
                      "g.llvm\n")
    env = {**__import__("os").environ, "EDSL_CACHE_DIR": str(tmp_path / "cache"), "EDSL_DUMP_IR": "1"}
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "// -----// IR Dump After edsl code generation (g, upmem-dpu) //----- //" in r.stderr
    assert "IR Dump After Canonicalizer" in r.stderr           # each pass of edsl's pipelines
    with caplog.at_level(logging.DEBUG, logger="edsl"):
        @edsl.dialect
        def h(y: edsl.InOut["memref<?xf32>"]):
            y[0] = 3.0
        h.llvm
    stages = [r.getMessage() for r in caplog.records if r.name.startswith("edsl.")]
    assert any(m.startswith("h: code generation for upmem-dpu: ") for m in stages), stages
    assert any(m.startswith("lowering h: ") for m in stages), stages


def test_each_backend_stage_logs_the_kernel_it_compiles(caplog, monkeypatch, tmp_path):
    """The `dpu` backend's stages name their kernel, the first one too
    (whose metadata has the name only once it ran)."""
    import logging
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))        # (compiled here, not found cached)
    import numpy as np
    import triton
    import triton.language as tl

    @triton.jit
    def logged_copy(x, y, B: tl.constexpr):
        tl.store(y + tl.arange(0, B), tl.load(x + tl.arange(0, B)))
    with caplog.at_level(logging.DEBUG, logger="edsl.backend"):
        logged_copy[(1,)](np.ones(16, np.float32), np.zeros(16, np.float32), B=16)
    stages = [r.getMessage().split(":")[0] for r in caplog.records if r.name == "edsl.backend"]
    assert stages == ["kernel 'logged_copy'"] * 4, stages


_PROGRESS_SCRIPT = """
import sys, numpy as np, triton, triton.language as tl, edsl
import edsl.base.progress as progress
progress.SHOW_AFTER = progress.REDRAW = 0.0

@triton.jit
def scale(x, y, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)

x = np.arange(4096, dtype=np.float32)
y = np.zeros_like(x)
if sys.argv[1] == "launch":
    scale[(16,)](x, y, x.size, B=256, num_dpus=8)
    assert (y == 2 * x).all()
else:
    edsl.export(scale, sys.argv[2], sample_args=(x, y, x.size), constants={"B": 256}, grid=(16,),
                num_dpus=4)
"""


def _progress_run(tmp_path, *args, setting="1"):
    script = tmp_path / "progress_run.py"
    script.write_text(_PROGRESS_SCRIPT)
    env = {**__import__("os").environ, "TRITON_DEFAULT_BACKEND": "dpu", "EDSL_PROGRESS": setting,
           "EDSL_CACHE_DIR": str(tmp_path / "cache"), "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    r = subprocess.run([sys.executable, str(script), *args], capture_output=True, env=env)
    r.stderr = r.stderr.decode()                 # (as written: text mode would read each "\r" as a line end)
    return r


def test_a_launch_over_dpus_reports_how_many_finished_and_ends_its_line(tmp_path):
    r = _progress_run(tmp_path, "launch")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.split("\r")
    assert any(line.startswith("edsl: kernel 'scale': ") and "/8 DPUs finished" in line for line in lines)
    assert lines[-1].startswith("edsl: kernel 'scale': 8/8 DPUs finished: done (") and lines[-1].endswith("\n")


def test_a_status_line_says_stopped_when_its_work_fails_and_nothing_where_turned_off(tmp_path, monkeypatch,
                                                                                     capsys):
    from edsl.base import progress
    monkeypatch.setenv("EDSL_PROGRESS", "1")
    monkeypatch.setattr(progress, "SHOW_AFTER", 0.0)
    try:
        with progress.Progress("kernel 'k'", total=8, unit="DPUs finished") as shown:
            shown.update(3)
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert capsys.readouterr().err == ("\redsl: kernel 'k': 3/8 DPUs finished (0 s)"
                                       "\redsl: kernel 'k': 3/8 DPUs finished: stopped (0 s)\n")
    quiet = _progress_run(tmp_path, "launch", setting="0")
    assert quiet.returncode == 0 and "edsl: kernel" not in quiet.stderr, quiet.stderr
    # (EDSL_PROGRESS unset: shown only where stderr is a terminal, which a pipe is not)
    unset = _progress_run(tmp_path, "launch", setting="")
    assert unset.returncode == 0 and "edsl: kernel" not in unset.stderr, unset.stderr


def test_an_export_reports_its_steps(tmp_path):
    r = _progress_run(tmp_path, "export", str(tmp_path / "scale_dpu"))
    assert r.returncode == 0, r.stderr
    steps = [line.split(": ")[2].split(" (")[0] for line in r.stderr.replace("\n", "\r").split("\r")
             if line.startswith("edsl: export of 'scale'")]
    assert steps[0] == "compiling" and "printing it as C" in steps and steps[-1] == "done", steps
    assert steps.index("the reference run on the DPU model") < steps.index("writing the files"), steps
