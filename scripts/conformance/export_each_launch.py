"""pytest plugin of the conformance mode `dpu-export` (scripts/triton_conformance.py).

Every kernel launch on the `dpu` backend is also exported (`edsl.export`, its
arguments as they were before the launch), built against the SDK stand-ins
(`make sim`) and run: the case fails where the exported project cannot be
written or built, or its run does not give the outputs of the DPU model.
"""
import inspect
import shutil
import subprocess
import tempfile

import numpy as np
from triton.runtime.jit import JITFunction

import edsl

_launch = JITFunction.run
_OPTIONS = ("num_dpus", "num_tasklets", "debug")
_exporting = []            # (the export runs the kernel on the model itself)


def _before(value):
    """`value` as it is now: arrays (NumPy, torch) copied, tuples element-wise."""
    if isinstance(value, tuple):
        return tuple(_before(v) for v in value)
    if isinstance(value, np.ndarray):
        return value.copy()
    if hasattr(value, "clone") and hasattr(value, "data_ptr"):
        return value.clone()
    return value


def _export_and_run(fn: JITFunction, args: dict, grid, options: dict) -> None:
    folder = tempfile.mkdtemp(prefix="edsl-export-")
    try:
        edsl.export(fn, f"{folder}/p", sample_args=args, grid=grid, **options)
        build = subprocess.run(["make", "-s", "sim", "OPT=-O1"], cwd=f"{folder}/p", capture_output=True,
                               text=True)
        assert build.returncode == 0, f"the exported project does not build:\n{build.stderr[-2000:]}"
        run = subprocess.run(["./build/sim/host_runner"], cwd=f"{folder}/p", capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 0 and "MISMATCH" not in run.stdout, (
            f"the exported run of kernel '{fn.__name__}' differs from the DPU model "
            f"(exit {run.returncode}):\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _launch_and_export(self, *args, grid, warmup, **kwargs):
    if warmup or _exporting:
        return _launch(self, *args, grid=grid, warmup=warmup, **kwargs)
    names = {p.name for p in self.params}
    bound = inspect.signature(self.fn).bind_partial(*args, **{k: v for k, v in kwargs.items() if k in names})
    before = {name: _before(v) for name, v in bound.arguments.items()}
    kernel = _launch(self, *args, grid=grid, warmup=warmup, **kwargs)
    _exporting.append(self)
    try:
        _export_and_run(self, before, grid, {k: kwargs[k] for k in _OPTIONS if k in kwargs})
    finally:
        _exporting.pop()
    return kernel


def pytest_configure(config):
    # The DPU model's driver, also where a GPU's is active (Triton 3.6 reads
    # no TRITON_DEFAULT_BACKEND and refuses two active drivers).
    import edsl.backend
    edsl.backend.activate()
    JITFunction.run = _launch_and_export
