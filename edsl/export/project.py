"""`export(kernel, out_dir, ...)`: a compiled kernel as a self-contained UPMEM SDK project.

The folder holds the DPU program in C (the kernel's final LLVM-dialect
module with the DPU runtime library linked in, printed by
`edsl.export.printer`), the DPU ABI as a C header (from edsl.target.dpu), the
argument struct shared by host and DPU, a generated host runner, a Makefile
(hardware build with the UPMEM toolchain, and a `sim` build with the host C
compiler against the SDK stand-ins in `sim/`), a README, and -- when sample
arguments are given -- the input data and the expected outputs (from a run on
the DPU model). Its steps: the arguments resolved into an `ExportSpec`
(`arguments`), the kernel compiled and printed to fit the DPU's WRAM
(`build`), the files filled from `templates/` (`generate`); here they are
put together and written.

Everything is written into a temporary folder beside `out_dir` and renamed
at the end, so a failure leaves nothing half-written.
"""
from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..backend.model import last_report
from ..base.errors import ArgumentError, CompileError, EdslError, caller_location
from ..base.progress import Progress
from ..target import dpu as abi
from .arguments import EXPORTED, ExportSpec
from .build import compile_to_fit
from .generate import SHARED_HEADERS, project_files

SDK_DIR = Path(__file__).resolve().parent / "sdk"
SIM_FILES = ("defs.h", "mram.h", "mram_unaligned.h", "barrier.h", "atomic_bit.h", "alloc.h", "stdio.h", "mutex.h",
             "handshake.h", "seqread.h", "perfcounter.h", "dpu.h", "dpu_log.h", "dpu_sim_rt.c", "dpu_sim_host.c")


@dataclass
class ExportResult:
    """What `export` wrote."""
    path: Path
    kernel: str
    params: list
    grid: tuple | None
    num_dpus: int
    num_tasklets: int
    outputs: list
    files: list

    def __fspath__(self) -> str:
        return str(self.path)


def _at_callers_line(fn):
    """A bad argument to `fn` is an error at the user's line that called it
    (`fn.__wrapped__` leaves it without a line, for the `edsl` command)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ArgumentError as err:
            if err.loc is not None:
                raise
            raise ArgumentError(err.message, caller_location()) from None
    return wrapper


def check_out_dir(out: Path, overwrite: bool) -> None:
    if out.exists() and not overwrite:
        raise ArgumentError(f"{out} already exists (pass overwrite=True to replace it)")
    if out.exists() and not out.is_dir():
        raise ArgumentError(f"{out} exists and is not a folder")
    parent = out.resolve().parent
    if not parent.is_dir():
        raise ArgumentError(f"cannot write {out}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ArgumentError(f"cannot write {out}: folder {parent} is not writable")


@_at_callers_line
def export(kernel, out_dir, *, signature=None, constants=None, sample_args=None, grid=None,
           num_dpus: int = 1, num_tasklets: int = 1, outputs: Sequence[str] | None = None,
           debug: bool = False, overwrite: bool = False) -> ExportResult:
    """Write a Triton kernel as a self-contained UPMEM SDK project folder.

    Args:
        kernel: A `@triton.jit` kernel.
        out_dir: The folder to create.
        signature: Types of the non-constexpr parameters: {'x_ptr': '*fp32', 'n': 'i32'}
            (or a list in parameter order); not needed with `sample_args`.
        constants: Values of the `tl.constexpr` parameters: {'BLOCK': 1024}.
        sample_args: Sample arguments (NumPy arrays and numbers, in parameter order, or a
            dict): they give the types, and are written to `data/` with the outputs a run
            on the DPU model computes from them (`grid` needed).
        grid: 1 to 3 ints, or a callable of the argument dict (as in `kernel[grid]`).
        num_dpus: Default number of DPUs of the host runner (1 to 2,560).
        num_tasklets: NR_TASKLETS of the DPU program (1 to 24).
        outputs: Names of the array arguments to gather and check (default: all).
        debug: Compile the kernel's `tl.device_assert` checks (as `kernel[grid](..., debug=True)`).
        overwrite: Replace an existing `out_dir`.

    Returns:
        What was written: the folder, the kernel's parameters, grid, DPUs and tasklets.

    Raises:
        ArgumentError: Bad arguments; nothing is written.
        CompileError: A kernel the export cannot print as DPU C; nothing is written.
    """
    out = Path(out_dir)
    spec = ExportSpec.resolve(kernel, {
        "signature": signature, "constants": constants, "sample_args": sample_args, "grid": grid,
        "num_dpus": num_dpus, "num_tasklets": num_tasklets, "outputs": outputs, "debug": debug})
    check_out_dir(out, overwrite)
    with Progress(f"export of '{spec.fn.__name__}' to {out}") as shown:
        built = compile_to_fit(spec, shown)
        files = project_files(spec, built)
        data = {}
        if spec.sampled:
            shown.stage("the reference run on the DPU model")
            data = _sample_data(spec, built.budget)
        shown.stage("writing the files")
        return _write(out, overwrite, files, data, ExportResult(
            path=out, kernel=built.name, params=spec.params, grid=spec.grid, num_dpus=spec.num_dpus,
            num_tasklets=spec.num_tasklets, outputs=spec.outputs, files=[]))


def _sample_data(spec: ExportSpec, wram_bytes: int) -> dict[str, bytes]:
    """Inputs as bytes, and the expected outputs from a run on the DPU model
    (of the program exported: compiled with the same WRAM budget)."""
    import numpy as np
    fn, grid = spec.fn, spec.grid
    data, run_args = {}, {}
    for p in spec.params:
        v = spec.values[p.name]
        if p.is_pointer:
            a = np.ascontiguousarray(v)
            data[f"{p.name}.bin"] = a.tobytes()
            run_args[p.name] = a.copy()
        else:
            run_args[p.name] = v
    run_args.update(spec.constexprs)
    try:
        fn[grid](**run_args, num_dpus=spec.num_dpus, num_tasklets=spec.num_tasklets, debug=spec.debug,
                 wram_bytes=wram_bytes)
    except EdslError:
        raise
    except Exception as err:  # noqa: BLE001 - a failure of the reference run
        raise CompileError(f"kernel '{fn.__name__}': the reference run on the DPU model failed: "
                           f"{err}") from None
    for name in spec.outputs:
        data[f"{name}.expected.bin"] = np.ascontiguousarray(run_args[name]).tobytes()
    data[PARTS_FILE] = _parts_table(last_report(), [p.name for p in spec.arrays], grid, spec.num_dpus)
    return data


# Each DPU's part of each array, as the reference run found it (templates/host_runner.c: read_parts).
PARTS_FILE = "edsl_parts.bin"


def _parts_table(report, arrays: list[str], grid, num_dpus: int) -> bytes:
    """The host runner's table of parts: int64 DPUs, grid, arrays, then per
    DPU and array the bytes [lo, hi) it receives, in whole 8-byte words
    (the runner places each array at an 8-byte aligned slot)."""
    import numpy as np
    table = np.zeros((num_dpus, len(arrays), 2), np.int64)
    for k, name in enumerate(arrays):
        parts = np.array(report.array_parts[name], np.int64).reshape(-1, 2)
        table[:len(parts), k, 0] = parts[:, 0] // abi.DMA_ALIGN * abi.DMA_ALIGN
        table[:len(parts), k, 1] = -(-parts[:, 1] // abi.DMA_ALIGN) * abi.DMA_ALIGN
    head = np.array([num_dpus, *grid, len(arrays)], np.int64)
    return head.tobytes() + table.tobytes()


@contextlib.contextmanager
def written_whole(out: Path):
    """A temporary folder beside `out` to write into, renamed to `out`
    (replacing it) as the block ends, and removed if it fails: nothing is
    left half-written."""
    parent = out.resolve().parent
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))
    except OSError as err:
        raise ArgumentError(f"cannot write {out}: {err.strerror or err}") from None
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        if out.exists():
            trash = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=parent))
            os.rename(out, trash / "old")
            os.rename(tmp, out)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.rename(tmp, out)
    except OSError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ArgumentError(f"cannot write {out}: {err.strerror or err}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _write(out: Path, overwrite: bool, files: dict, data: dict, result: ExportResult) -> ExportResult:
    with written_whole(out) as tmp:
        for name, text in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_text(text)
        (tmp / "sim").mkdir()
        for name in SIM_FILES:
            shutil.copyfile(SDK_DIR / name, tmp / "sim" / name)
        for path in SHARED_HEADERS:
            shutil.copyfile(path, tmp / "sim" / path.name)
        (tmp / "data").mkdir()
        for name, blob in data.items():
            (tmp / "data" / name).write_bytes(blob)
        result.files = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file())
    return result


__all__ = ["export", "ExportResult", "EXPORTED"]
