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
