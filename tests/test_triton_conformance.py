"""The conformance runner (scripts/triton_conformance.py) on a small test
folder of known outcomes, including a case that kills pytest's process and
one stuck where pytest-timeout's signal does not reach."""
from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "triton_conformance.py"
spec = importlib.util.spec_from_file_location("triton_conformance", SCRIPT)
conformance = importlib.util.module_from_spec(spec)
spec.loader.exec_module(conformance)

CONFTEST = """
def pytest_addoption(parser):
    parser.addoption("--device", action="store", default="cuda")
"""

TESTS = """
import os, signal, time
import pytest

@pytest.mark.parametrize("n", [1, 2, 3])
def test_param(n):
    assert n != 2, "two is wrong"

def test_skip():
    pytest.skip("bfloat16 is not supported in the interpreter")

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False

def test_crash():
    os.kill(os.getpid(), signal.SIGSEGV)

def test_stuck():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # as in compiled code
    time.sleep(600)

def test_mode():
    assert os.environ.get("TRITON_DEFAULT_BACKEND") == "dpu" and "TRITON_INTERPRET" not in os.environ

def test_last():
    pass
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("triton-tests")
    (path / "conftest.py").write_text(CONFTEST)
    (path / "test_core.py").write_text(textwrap.dedent(TESTS))
    return path


@pytest.fixture(scope="module")
def results(folder, tmp_path_factory):
    scratch = tmp_path_factory.mktemp("scratch")
    ids = conformance.collect(folder, "dpu", None, scratch)
    return ids, conformance.run_cases(folder, "dpu", ids, timeout=1, stall_s=4, scratch=scratch).cases


def test_outcomes_of_every_case(results):
    ids, cases = results
    assert {i.split("::")[1]: cases[i]["outcome"] for i in ids} == {
        "test_param[1]": "passed",
        "test_param[2]": "failed",
        "test_param[3]": "passed",
        "test_skip": "skipped",
        "test_xfail": "xfailed",
        "test_crash": "crashed",
        "test_stuck": "timeout",
        "test_mode": "passed",
        "test_last": "passed",
    }
    assert cases["test_core.py::test_param[2]"]["error"] == "AssertionError: two is wrong"
    assert cases["test_core.py::test_skip"]["error"] == "bfloat16 is not supported in the interpreter"
    assert cases["test_core.py::test_crash"]["error"] == "pytest process died (signal SIGSEGV)"


def test_cases_dealt_to_two_workers_end_as_with_one(folder, results, tmp_path):
    ids, cases = results
    shared = conformance.run_cases(folder, "dpu", ids, timeout=1, stall_s=4, scratch=tmp_path, workers=2).cases
    assert {i: c["outcome"] for i, c in shared.items()} == {i: c["outcome"] for i, c in cases.items()}
    assert shared["test_core.py::test_crash"]["error"] == "pytest process died (signal SIGSEGV)"
    # Each worker ran its own pytest over every other case, with its own caches.
    dealt = [(tmp_path / f"worker-{k}" / "cases-1.txt").read_text().split() for k in (0, 1)]
    assert dealt == [ids[0::2], ids[1::2]]
    assert all((tmp_path / f"worker-{k}" / "report-1.jsonl").exists() for k in (0, 1))


def test_expected_file_judges_the_run(results, tmp_path, capsys):
    ids, cases = results
    expected = tmp_path / "expected.txt"
    expected.write_text("# cases expected to pass\ntest_core.py::test_param[1]\ntest_core.py::test_param[2]\n")
    assert conformance.judge(cases, expected, update=False) == 1
    out = capsys.readouterr().out
    assert "FAILED: 1 cases expected to pass did not" in out
    assert "[failed] AssertionError: two is wrong" in out
    assert "test_core.py::test_last" in out  # passes, not listed: reported for an update
    assert conformance.judge(cases, expected, update=True) == 0
    assert expected.read_text().splitlines() == [
        "# cases expected to pass",
        "test_core.py::test_param[1]",
        "test_core.py::test_param[3]",
        "test_core.py::test_mode",
        "test_core.py::test_last",
    ]
    assert conformance.judge(cases, expected, update=False) == 0


def test_error_key_groups_variants_of_one_cause():
    compile_error = ("triton.compiler.errors.CompilationError: at 24:8:\n    a = tl.load(a_ptr)\n"
                     "ValueError('type fp8e5b16 not supported in this architecture.')")
    assert conformance.error_key(compile_error) == "ValueError('type fp8e5b16 not supported in this architecture.')"
    wram = ("edsl.base.errors.DpuError: /somewhere/test_core.py:3925:13: kernel 'kernel' needs 132624 bytes of WRAM\n"
            "    c = tl.dot(a, b)")
    assert conformance.error_key(wram) == "edsl.base.errors.DpuError: <file> kernel '<name>' needs N bytes of WRAM"
    missing = ("LoweringError: the program needs __truncsfbf2 (Failed to materialize symbols: "
               "{ (main, { kernel, edsl_dpu_ctx }) })")
    assert conformance.error_key(missing) == "LoweringError: the program needs __truncsfbf2 (Failed to materialize symbols: <set>)"


def test_spread_order_covers_the_range_evenly():
    assert conformance.spread_order(8) == [0, 4, 2, 6, 1, 5, 3, 7]
    for n in range(1, 40):
        assert sorted(conformance.spread_order(n)) == list(range(n))


def test_spread_over_functions_samples_every_function_first():
    ids = [f"t.py::test_a[{i}]" for i in range(4)] + ["t.py::test_b[0]", "t.py::test_b[1]", "t.py::test_c"]
    assert conformance.spread_over_functions(ids) == [
        "t.py::test_a[0]", "t.py::test_b[0]", "t.py::test_c",
        "t.py::test_a[2]", "t.py::test_b[1]", "t.py::test_a[1]", "t.py::test_a[3]"]


def test_a_stopped_run_leaves_no_pytest_behind(folder, tmp_path):
    """SIGTERM to the runner ends the pytest process it started in its own session."""
    marker = tmp_path / "pid"
    stuck = folder.parent / "stuck-tests"
    stuck.mkdir(exist_ok=True)
    (stuck / "conftest.py").write_text(CONFTEST)
    (stuck / "test_core.py").write_text(textwrap.dedent(f"""
        import os, time
        def test_wait():
            open({str(marker)!r}, "w").write(str(os.getpid()))
            time.sleep(600)
    """))
    runner = subprocess.Popen([sys.executable, str(SCRIPT), "run", str(stuck), "--mode", "dpu", "--timeout", "0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marker.exists(), "pytest never started the case"
    pid = int(marker.read_text())
    runner.send_signal(signal.SIGTERM)
    runner.wait(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
    pytest.fail("the pytest process outlived its runner")


EXPORT_TESTS = """
import numpy as np
import triton
import triton.language as tl


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def show(x_ptr):
    tl.device_print("x", tl.load(x_ptr))


def test_exported():
    x, y = np.arange(100, dtype=np.float32), np.ones(100, np.float32)
    out = np.zeros_like(x)
    add[(4,)](x, y, out, 100, BLOCK=32, num_dpus=2)
    np.testing.assert_array_equal(out, x + y)


def test_prints():
    show[(1,)](np.ones(1, np.float32))


@triton.jit
def past_end(x_ptr):
    tl.store(x_ptr + 4096, tl.load(x_ptr))


def test_fails():
    past_end[(1,)](np.ones(1, np.float32))
"""


@pytest.mark.skipif(not (shutil.which("make") and (shutil.which("cc") or shutil.which("gcc"))),
                    reason="needs make and a C compiler")
def test_export_mode_exports_builds_and_runs_every_launch(tmp_path):
    """--mode dpu-export: a launch the export writes, builds and runs with the
    model's outputs passes (a kernel that prints too); one that fails fails the
    case."""
    folder = tmp_path / "tests"
    folder.mkdir()
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "test_core.py").write_text(textwrap.dedent(EXPORT_TESTS))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ids = conformance.collect(folder, "dpu-export", None, scratch)
    cases = conformance.run_cases(folder, "dpu-export", ids, timeout=300, stall_s=None, scratch=scratch).cases
    assert cases["test_core.py::test_exported"]["outcome"] == "passed", cases["test_core.py::test_exported"]
    assert cases["test_core.py::test_prints"]["outcome"] == "passed", cases["test_core.py::test_prints"]
    failed = cases["test_core.py::test_fails"]
    assert failed["outcome"] == "failed" and "DpuError" in failed["error"], failed
