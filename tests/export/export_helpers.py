"""Helpers for the export tests: build an exported folder with the host C
compiler against the SDK stand-ins (`make sim`) and run its host runner."""
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

HAVE_CC = shutil.which("make") is not None and (shutil.which("cc") or shutil.which("gcc")) is not None
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="needs make and a C compiler")


def build(folder, tasklets=None):
    """`make sim` in an exported folder (-O1 to keep the tests fast)."""
    cmd = ["make", "-s", "sim", "OPT=-O1"]
    if tasklets is not None:
        cmd.append(f"NR_TASKLETS={tasklets}")
    r = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
    assert r.returncode == 0, f"build failed:\n{r.stdout}\n{r.stderr}"


def run(folder, *args):
    """Run the simulated host runner; returns the CompletedProcess."""
    return subprocess.run(["./build/sim/host_runner", *args], cwd=folder, capture_output=True,
                          text=True, timeout=120)


def build_and_run(folder, *args, tasklets=None):
    build(folder, tasklets)
    return run(folder, *args)


def output(folder, name, like):
    """An output array the runner wrote (out/<name>.bin), shaped like `like`."""
    data = (pathlib.Path(folder) / "out" / f"{name}.bin").read_bytes()
    return np.frombuffer(data, dtype=like.dtype).reshape(like.shape)


SDK_HEADERS = {"defs.h", "mram.h", "barrier.h", "alloc.h", "stdint.h", "stddef.h", "stdbool.h",
               "math.h"}
NOT_ON_THE_DPU = (r"\b(malloc|calloc|realloc|free|printf|fprintf|sprintf|puts|putchar|fflush|FILE|"
                  r"stdio|stdout|stderr|memcpy|memset|memmove|exit|abort|pthread_\w+|dlopen|__thread)\b")


def assert_sdk_only(folder):
    """The DPU program and its headers include only the SDK's headers (and each
    other) and use nothing from the C library outside them."""
    import re
    for name in ("dpu_program.c", "kernel_args.h", "dpu_abi.h", "half_bits.h"):
        text = (pathlib.Path(folder) / name).read_text()
        includes = set(re.findall(r'#\s*include\s*[<"]([^>"]+)[>"]', text))
        assert includes <= SDK_HEADERS | {"kernel_args.h", "dpu_abi.h", "half_bits.h"}, (name, includes)
        assert includes or name == "dpu_abi.h", name
        code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        found = re.search(NOT_ON_THE_DPU, code)
        assert found is None, (name, found and found.group(0))


def export_and_run(folder, kernel, args, constants, grid, dpus=1, tasklets=1, **kw):
    """Export `kernel` for these sample arguments, build it and run it on
    them; the runner must pass its check against the model. Its CompletedProcess."""
    from edsl.export import export
    export(kernel, folder, sample_args=args, constants=constants, grid=grid, num_dpus=dpus,
           num_tasklets=tasklets, **kw)
    assert_sdk_only(folder)
    r = build_and_run(folder)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "MISMATCH" not in r.stdout
    return r


def export_with_data_and_run(folder, kernel, arrays: dict, **options):
    """Export `kernel` into `folder` with `options`, write `arrays` (by
    parameter name) as its data, build it and run it: the CompletedProcess."""
    from edsl.export import export
    export(kernel, folder, **options)
    for name, array in arrays.items():
        (pathlib.Path(folder) / "data" / f"{name}.bin").write_bytes(array.tobytes())
    return build_and_run(folder)


def masked(text: str) -> str:
    """`text` with its hex numbers (MRAM addresses: the model's, or the DPU's) masked."""
    import re
    return re.sub(r"0x[0-9a-f]+", "0x...", text)


def run_on_model(kernel, args, constants, grid, dpus=1, tasklets=1, **kw):
    """The arguments after a launch on the DPU model (arrays copied first)."""
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kernel[grid](*copies, **constants, num_dpus=dpus, num_tasklets=tasklets, **kw)
    return copies
