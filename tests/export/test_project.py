"""The exported folder: SDK-only DPU source, the SDK stand-ins' rule checks,
errors the program records (against the DPU model's), signature-only exports,
clear errors for bad input with nothing half-written, and the `edsl` command."""
import ctypes
import os
import re
import subprocess
import tomllib
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st

import edsl
import triton_vector_add
from edsl import Input, fl
from edsl.target import dpu as abi
from edsl.base.errors import ArgumentError, DpuError
from edsl.export import export
from edsl.export import arguments, generate, project as project_mod
from edsl.export.cli import main as cli_main
from export_helpers import (assert_sdk_only, build, export_and_run, export_with_data_and_run, masked, needs_cc, output,
                            run, run_on_model)
from loop_kernels import find_seven
from tile_kernels import moments_kernel

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "edsl" / "export" / "sdk"


@triton.jit
def shifted_copy(x_ptr, out_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs + shift, mask=m), mask=m)


@triton.jit
def printing(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.device_print("x", tl.load(x_ptr + offs, mask=offs < n))


def _add_export(path, n=3000, **kw):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    args = dict(sample_args=(x, y, np.zeros_like(x), n), constants={"BLOCK": 256},
                grid=(triton.cdiv(n, 256),), num_dpus=2)
    args.update(kw)
    return export(triton_vector_add.add_kernel, path, **args), x, y


# -- the DPU source ------------------------------------------------------------
def test_dpu_source_uses_only_sdk_headers_and_features(tmp_path):
    _add_export(tmp_path / "p", num_tasklets=4)
    assert_sdk_only(tmp_path / "p")
    text = (tmp_path / "p" / "dpu_program.c").read_text()
    assert "__host edsl_args_t DPU_INPUT_ARGUMENTS;" in text
    assert "mram_read(" in text and "mram_write(" in text and "BARRIER_INIT(" in text
    assert "me()" in text and "#error" in text          # built for 4 tasklets, checked at compile time


@needs_cc
def test_dpu_source_compiles_with_only_the_sdk_declarations(tmp_path):
    _add_export(tmp_path / "p")
    r = subprocess.run(["cc", "-std=gnu11", "-fsyntax-only", "-Wall", "-Werror=implicit-function-declaration",
                        "-Wno-unused", "-Wno-unused-parameter", "-Isim", "-DNR_TASKLETS=1",
                        "dpu_program.c"], cwd=tmp_path / "p", capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_export_folder_contents(tmp_path):
    result, x, _ = _add_export(tmp_path / "p")
    folder = tmp_path / "p"
    for name in ("dpu_program.c", "kernel_args.h", "host_runner.c", "merge.h", "half_bits.h", "launch_config.h",
                 "Makefile", "README.md", "manifest.json", "sim/dpu.h", "sim/mram.h", "data/x_ptr.bin",
                 "data/out_ptr.expected.bin"):
        assert (folder / name).is_file(), name
    assert (folder / "data/x_ptr.bin").read_bytes() == x.tobytes()
    make = (folder / "Makefile").read_text()
    assert "dpu-upmem-dpurte-clang" in make and "dpu-pkg-config" in make and "sim:" in make
    assert "C" in (folder / "README.md").read_text()
    assert result.kernel == "add_kernel" and result.grid == (12, 1, 1)
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# -- the SDK stand-ins ------------------------------------------------------------
FAULTY = r"""
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <mutex.h>
#include <stdint.h>
__host uint64_t offset;
__host uint64_t nbytes;
__host uint64_t mode;
__host uint64_t result;
BARRIER_INIT(b, NR_TASKLETS);
MUTEX_INIT(m);
static uint8_t buf[4096] __dma_aligned;
int main(void) {
  if (mode == 4) {                   /* tasklet 1 finishes holding the mutex the others wait for */
    if (me() == 1)
      mutex_lock(m);
    barrier_wait(&b);
    if (me() == 1)
      return 0;
    mutex_lock(m);
  }
  if (mode == 5 && me() == 2)
    mutex_lock(m);
  if (mode == 5 && me() == 0)        /* tasklet 0 unlocks the mutex tasklet 2 may hold */
    mutex_unlock(m);
  if (mode == 1 && me() == 1)        /* tasklet 1 breaks a rule while the others wait */
    mram_read((__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER + offset, buf, (unsigned)nbytes);
  if (mode == 2 && me() == 0)
    for (int i = 0; i < 100; i++)
      mem_alloc(4096);
  if (mode == 3 && me() == 1)        /* tasklet 1 finishes while the others wait */
    return 0;
  barrier_wait(&b);
  if (me() == 0) {                   /* an MRAM address kept in 32 bits, as DPU programs keep them */
    uint32_t heap = (uint32_t)DPU_MRAM_HEAP_POINTER;
    mram_read((__mram_ptr uint8_t *)(heap + offset), buf, (unsigned)nbytes);
    result = buf[0] + 1000u * NR_TASKLETS;
  }
  return 0;
}
"""

FAULTY_HOST = r"""
#include <dpu.h>
#include <dpu_log.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
  struct dpu_set_t set, dpu;
  uint64_t offset = strtoull(argv[1], 0, 0), nbytes = strtoull(argv[2], 0, 0), mode = strtoull(argv[3], 0, 0);
  uint8_t image[64];
  for (int i = 0; i < 64; i++) image[i] = (uint8_t)i;
  DPU_ASSERT(dpu_alloc(2, NULL, &set));
  DPU_ASSERT(dpu_load(set, "./faulty.so", NULL));
  DPU_ASSERT(dpu_copy_to(set, "offset", 0, &offset, 8));
  DPU_ASSERT(dpu_copy_to(set, "nbytes", 0, &nbytes, 8));
  DPU_ASSERT(dpu_copy_to(set, "mode", 0, &mode, 8));
  DPU_ASSERT(dpu_copy_to(set, DPU_MRAM_HEAP_POINTER_NAME, 0, image, 64));
  if (dpu_copy_to(set, DPU_MRAM_HEAP_POINTER_NAME, 4, image, 8) != DPU_ERR_INVALID_MRAM_ACCESS) return 10;
  if (dpu_copy_to(set, "offset", 0, image, 16) != DPU_ERR_INVALID_SYMBOL_ACCESS) return 11;
  if (dpu_copy_to(set, "nothing", 0, image, 8) != DPU_ERR_UNKNOWN_SYMBOL) return 12;
  dpu_error_t err = dpu_launch(set, DPU_SYNCHRONOUS);
  if (err != DPU_OK) { printf("launch failed: %d\n", (int)err); DPU_ASSERT(dpu_free(set)); return 3; }
  FILE *sink = fopen("/dev/null", "w");
  DPU_FOREACH(set, dpu) {
    uint64_t result;
    DPU_ASSERT(dpu_copy_from(dpu, "result", 0, &result, 8));
    printf("result %llu\n", (unsigned long long)result);
    if (dpulog_read_for_dpu(dpu.dpu, sink) != DPU_ERR_LOG_CONTEXT_MISSING) return 13;   /* (it never printed) */
  }
  fclose(sink);
  DPU_ASSERT(dpu_free(set));
  return 0;
}
"""


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    d = tmp_path_factory.mktemp("faulty")
    (d / "faulty.c").write_text(FAULTY)
    (d / "host.c").write_text(FAULTY_HOST)
    (d / "dpu_abi.h").write_text(generate.abi_header())       # the stand-ins' limits
    (d / "dma_rules.h").write_text(generate.dma_rules_header())  # ... and DMA rules
    (d / "error_messages.h").write_text(generate.error_messages_header())   # ... and the model's words
    for cmd in (["cc", "-O1", "-std=gnu11", "-fPIC", "-shared", "-Wl,-Bsymbolic", "-I.", f"-I{SDK}",
                 "-DNR_TASKLETS=3", "-o", "faulty.so", "faulty.c", str(SDK / "dpu_sim_rt.c"), "-lpthread"],
                ["cc", "-O1", "-std=gnu11", "-I.", f"-I{SDK}", "-o", "host", "host.c", str(SDK / "dpu_sim_host.c"),
                 "-ldl", "-lpthread"]):
        r = subprocess.run(cmd, cwd=d, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    return d


@needs_cc
@pytest.mark.parametrize("offset,nbytes,mode,message", [
    (8, 16, 0, None),
    (4, 16, 0, "MRAM address 0x4 is not 8-byte aligned"),
    (8, 12, 0, "DMA size 12 bytes"),
    (8, 4096, 0, "DMA size 4096 bytes"),
    (64 << 20, 16, 0, "outside the DPU's 64 MiB MRAM"),
    (4, 16, 1, "tasklet 1: faulty.c:29: mram_read: MRAM address 0x4"),   # the others wait at a barrier
    (8, 16, 2, "mem_alloc(4096): the WRAM heap is exhausted"),
    (8, 16, 3, "deadlock at a barrier"),                           # where hardware would hang
    (8, 16, 4, "deadlock: every tasklet that has not finished waits"),
    (8, 16, 5, "mutex_unlock of a mutex this tasklet does not hold"),
])
def test_sdk_stand_ins_check_the_rules_and_fail_cleanly(faulty, offset, nbytes, mode, message):
    r = subprocess.run(["./host", str(offset), str(nbytes), str(mode)], cwd=faulty, capture_output=True,
                       text=True, timeout=60)
    if message is None:
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["result", "3008", "result", "3008"]   # each DPU has its own globals
    else:
        assert r.returncode == 3, r.stdout + r.stderr
        assert message in r.stderr and "DPU 0 fault" in r.stderr


@needs_cc
@settings(max_examples=40, deadline=None)
@given(offset=st.integers(0, 4096), nbytes=st.integers(0, 2100))
def test_sdk_stand_ins_take_and_refuse_a_transfer_as_the_model_does(faulty, offset, nbytes):
    """An mram_read at any MRAM offset and size: refused by the stand-ins
    exactly where the DPU model's rules refuse it, in the model's words."""
    r = subprocess.run(["./host", str(offset), str(nbytes), "0"], cwd=faulty, capture_output=True, text=True,
                       timeout=60)
    why = abi.dma_violation(offset, 0, nbytes)          # (the WRAM buffer is aligned)
    if why is None:
        assert r.returncode == 0, r.stderr
    else:
        assert r.returncode == 3 and f"mram_read: {why}" in r.stderr, (why, r.stderr)


# -- errors the program records, as the DPU model raises them ----------------------
@needs_cc
def test_signature_only_export_and_out_of_bounds_pointer(tmp_path):
    folder = tmp_path / "copy"
    export(shifted_copy, folder, signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "shift": "i32"},
           constants={"BLOCK": 128}, grid=(8,), num_dpus=3)
    assert list((folder / "data").iterdir()) == []
    n = 1000
    x = np.arange(n + 64, dtype=np.float32)
    (folder / "data" / "x_ptr.bin").write_bytes(x.tobytes())
    (folder / "data" / "out_ptr.bin").write_bytes(np.zeros(n, np.float32).tobytes())
    build(folder)
    r = run(folder, f"n={n}")
    assert r.returncode == 2 and "'shift'" in r.stderr
    r = run(folder, f"n={n}", "shift=5")
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(output(folder, "out_ptr", np.zeros(n, np.float32)), x[5:n + 5])
    r = run(folder, f"n={n}", "shift=100000")
    assert r.returncode == 4 and "outside the launch's arrays" in r.stderr
    with pytest.raises(DpuError, match="outside") as err:
        shifted_copy[(8,)](x, np.zeros(n, np.float32), n, 100000, BLOCK=128, num_dpus=3)
    assert _first_error(r) == _as_runner(err.value)
    # One MRAM region per array, as on the model: reading past the end of x_ptr
    # (into out_ptr, next in the MRAM image) is out of bounds too.
    r = run(folder, f"n={n}", "shift=100")
    assert r.returncode == 4 and "outside the launch's arrays" in r.stderr
    with pytest.raises(DpuError, match="outside") as err:
        shifted_copy[(8,)](x, np.zeros(n, np.float32), n, 100, BLOCK=128, num_dpus=3)
    assert _first_error(r) == _as_runner(err.value)


@needs_cc
def test_an_error_inside_a_while_loop_ends_the_loop_as_on_the_model(tmp_path):
    x, out = np.zeros(16, np.int32), np.zeros(1, np.int32)
    r = export_with_data_and_run(tmp_path / "find", find_seven, {"x_ptr": x, "out_ptr": out},
                        signature={"x_ptr": "*i32", "out_ptr": "*i32"}, grid=(1,), num_tasklets=2)
    with pytest.raises(DpuError, match="outside") as err:
        find_seven[(1,)](x, out, num_tasklets=2)
    assert r.returncode == 4 and _first_error(r) == _as_runner(err.value)


@triton.jit
def table_row(table_ptr, out_ptr, BLOCK: tl.constexpr):
    row = tl.load(table_ptr + tl.program_id(0)).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(row + offs))


@needs_cc
def test_pointer_loaded_from_a_table_is_refused_naming_its_load(tmp_path):
    """A table of host addresses: the model and the exported runner refuse the
    access through it with the same words, naming the load of the pointer."""
    row = np.arange(16, dtype=np.float32)
    table, out = np.array([row.ctypes.data], dtype=np.int64), np.zeros(16, np.float32)
    r = export_with_data_and_run(tmp_path / "table", table_row, {"table_ptr": table, "out_ptr": out},
                        signature={"table_ptr": "*i64", "out_ptr": "*fp32"}, constants={"BLOCK": 16},
                        grid=(1,))
    with pytest.raises(DpuError, match="its pointer was loaded from memory at line") as err:
        table_row[(1,)](table, out, BLOCK=16)
    assert r.returncode == 4 and _first_error(r) == _as_runner(err.value)


@triton.jit
def table_row_of(table_ptr, rows_ptr, out_ptr, BLOCK: tl.constexpr):
    row = tl.load(table_ptr + tl.program_id(0)).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(row + offs) + tl.load(rows_ptr + offs) * 0)


@needs_cc
def test_a_table_of_host_addresses_into_a_passed_array_is_refused_as_on_the_model(tmp_path):
    """The array is an argument, but its host address means nothing on a DPU:
    the runner and the model refuse the access through it alike."""
    rows, out = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    table = np.array([rows.ctypes.data], dtype=np.int64)
    r = export_with_data_and_run(tmp_path / "table", table_row_of, {"table_ptr": table, "rows_ptr": rows, "out_ptr": out},
                        signature={"table_ptr": "*i64", "rows_ptr": "*fp32", "out_ptr": "*fp32"},
                        constants={"BLOCK": 16}, grid=(1,))
    with pytest.raises(DpuError, match="its pointer was loaded from memory at line") as err:
        table_row_of[(1,)](table, rows, out, BLOCK=16)
    assert r.returncode == 4 and _first_error(r) == _as_runner(err.value)
    assert not out.any()


def _first_error(r) -> str:
    return masked(r.stderr.splitlines()[0])


def _as_runner(err: DpuError) -> str:
    """The runner's line for a DpuError of the model: its position (the file's
    base name), then the same message."""
    loc = f"{Path(err.loc.filename).name}:{err.loc.lineno}:{err.loc.col + 1}: " if err.loc else ""
    return masked(f"error: {loc}{err.message}")


@edsl.dialect(bounds_check=True)
def faults(x: Input["memref<?xf32, MRAM>"], mode: Input["i32"], k: Input["i32"]):
    buf = edsl.wram_alloc((16,), "f32")
    if mode == 1:
        edsl.mram_read(x, buf, k)                  # k bytes: the DMA rules
    if mode == 2:
        edsl.mram_read(x, buf, 8, k)               # from element k: an odd k is 4 bytes off
    if mode == 3:
        edsl.mram_write(buf, x, k)                 # k bytes from a 64-byte buffer
    if mode == 4:
        edsl.mram_read(x, buf, 8, k)               # from element k: past the MRAM
    if mode == 5:
        assert k < 0
    if mode == 6:
        buf[k] = 1.0


@triton.jit
def fault_kernel(x_ptr, mode, k):
    fl.call(faults, [], [x_ptr, mode, k])


@needs_cc
def test_runner_reports_the_errors_as_the_model_raises_them(tmp_path):
    """Each error an EDSL function can record (DMA rule, MRAM and WRAM overrun,
    assertion, index): the runner's message is the model's, at the same line."""
    folder = tmp_path / "faults"
    export(fault_kernel, folder, signature={"x_ptr": "*fp32", "mode": "i32", "k": "i32"}, grid=(1,))
    x = np.arange(64, dtype=np.float32)
    (folder / "data" / "x_ptr.bin").write_bytes(x.tobytes())
    build(folder)
    r = run(folder, "mode=0", "k=0")
    assert r.returncode == 0, r.stderr
    for mode, k, what in [(1, 12, "DMA size 12 bytes"), (2, 1, "is not 8-byte aligned"),
                          (3, 128, "overrun the WRAM source"), (4, 1000, "overrun the MRAM source"),
                          (5, 3, "assertion failed"), (6, 16, "index out of bounds")]:
        r = run(folder, f"mode={mode}", f"k={k}")
        assert r.returncode == 4 and what in r.stderr, (mode, r.stdout + r.stderr)
        with pytest.raises(DpuError, match=what) as err:
            fault_kernel[(1,)](x.copy(), mode, k)
        assert _first_error(r) == _as_runner(err.value), mode


@needs_cc
def test_runner_options(tmp_path):
    _add_export(tmp_path / "p", n=3000)
    folder = tmp_path / "p"
    build(folder)
    r = run(folder, "dpus=5")
    assert r.returncode == 0 and "on 5 DPUs" in r.stdout, r.stderr
    (folder / "data" / "out_ptr.expected.bin").write_bytes(np.ones(3000, np.float32).tobytes())
    r = run(folder)
    assert r.returncode == 1 and "out_ptr: MISMATCH" in r.stdout
    r = run(folder, "bogus=1")
    assert r.returncode == 2 and "unknown argument" in r.stderr


# -- bad input ---------------------------------------------------------------------
def _nothing_written(parent: Path, name: str):
    assert not (parent / name).exists()
    assert [p.name for p in parent.iterdir() if p.name.startswith(f".{name}")] == []


def test_missing_signature(tmp_path):
    with pytest.raises(ArgumentError, match="signature"):
        export(triton_vector_add.add_kernel, tmp_path / "p", constants={"BLOCK": 64})
    with pytest.raises(ArgumentError, match="no type for parameter 'n'"):
        export(triton_vector_add.add_kernel, tmp_path / "p", constants={"BLOCK": 64},
               signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"})
    with pytest.raises(ArgumentError, match="BLOCK"):
        export(triton_vector_add.add_kernel, tmp_path / "p",
               signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"})
    _nothing_written(tmp_path, "p")


@pytest.mark.parametrize("bad,match", [
    ({"signature": {"x_ptr": "*fp8e4b15", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}}, "fp8e4b15"),
    ({"signature": {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "int"}}, "'int'"),
    ({"sample_args": (np.zeros(4, ml_dtypes.float8_e4m3b11fnuz), np.zeros(4, np.float32), np.zeros(4, np.float32),
                      4)}, "float8_e4m3b11fnuz"),
    ({"sample_args": (np.zeros(4, np.complex64), np.zeros(4, np.float32), np.zeros(4, np.float32), 4)},
     "complex64"),
    ({"sample_args": ("x", np.zeros(4, np.float32), np.zeros(4, np.float32), 4)}, "str"),
    ({"signature": ["*fp32", "*fp32", "*fp32", "i32"], "num_tasklets": 0}, "num_tasklets"),
    ({"signature": ["*fp32", "*fp32", "*fp32", "i32"], "outputs": ["nope"]}, "nope"),
    ({"signature": ["*fp32", "*fp32"]}, "non-constexpr"),
])
def test_bad_input_is_a_clear_error(tmp_path, bad, match):
    kw = dict(constants={"BLOCK": 64}, grid=(1,))
    kw.update(bad)
    with pytest.raises(ArgumentError, match=match):
        export(triton_vector_add.add_kernel, tmp_path / "p", **kw)
    _nothing_written(tmp_path, "p")


def test_refused_dtype_names_the_callers_line(tmp_path):
    z = np.zeros(4, np.complex64)
    with pytest.raises(ArgumentError, match="complex64 cannot be exported") as err:
        edsl.export(triton_vector_add.add_kernel, tmp_path / "p", constants={"BLOCK": 64}, grid=(1,),
                    sample_args=(z, z, z, 4))
    assert (err.value.loc.filename, err.value.loc.lineno) == (__file__, err.tb.tb_lineno)
    assert str(err.value).splitlines()[1].strip().startswith("edsl.export(")     # the line calling it
    _nothing_written(tmp_path, "p")


def test_out_dir_not_writable(tmp_path):
    sig = dict(signature=["*fp32", "*fp32", "*fp32", "i32"], constants={"BLOCK": 64})
    with pytest.raises(ArgumentError, match="does not exist"):
        export(triton_vector_add.add_kernel, tmp_path / "missing" / "p", **sig)
    (tmp_path / "file").write_text("")
    with pytest.raises(ArgumentError, match="cannot write"):
        export(triton_vector_add.add_kernel, tmp_path / "file" / "p", **sig)
    with pytest.raises(ArgumentError, match="cannot write"):
        export(triton_vector_add.add_kernel, "/proc/edsl-export-test", **sig)
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        with pytest.raises(ArgumentError, match="not writable"):
            export(triton_vector_add.add_kernel, ro / "p", **sig)


def test_existing_out_dir_and_overwrite(tmp_path):
    sig = dict(signature=["*fp32", "*fp32", "*fp32", "i32"], constants={"BLOCK": 64})
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "mine.txt").write_text("keep")
    with pytest.raises(ArgumentError, match="already exists"):
        export(triton_vector_add.add_kernel, tmp_path / "p", **sig)
    assert (tmp_path / "p" / "mine.txt").read_text() == "keep"
    export(triton_vector_add.add_kernel, tmp_path / "p", overwrite=True, **sig)
    assert not (tmp_path / "p" / "mine.txt").exists() and (tmp_path / "p" / "dpu_program.c").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_failure_while_writing_leaves_nothing(tmp_path, monkeypatch):
    def broken(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(project_mod.shutil, "copyfile", broken)
    with pytest.raises(ArgumentError, match="No space left"):
        export(triton_vector_add.add_kernel, tmp_path / "p", signature=["*fp32", "*fp32", "*fp32", "i32"],
               constants={"BLOCK": 64})
    _nothing_written(tmp_path, "p")


def test_a_kernel_that_prints_exports_with_the_sdks_stdout_buffer(tmp_path):
    """A DPU program prints through the SDK's printf into its stdout buffer
    (the runs are compared with the model's in test_export_print.py); a
    program that does not print declares none."""
    export(printing, tmp_path / "p", signature={"x_ptr": "*fp32", "n": "i32"}, constants={"BLOCK": 8})
    text = (tmp_path / "p" / "dpu_program.c").read_text()
    assert "#include <stdio.h>" in text and "STDOUT_BUFFER_INIT(" in text and "printf(" in text
    _add_export(tmp_path / "q")
    assert "stdio" not in (tmp_path / "q" / "dpu_program.c").read_text()


# -- the command ---------------------------------------------------------------------
def test_cli_export(tmp_path, capsys):
    kernel = f"{ROOT / 'examples' / 'triton_vector_add.py'}:add_kernel"
    rc = cli_main(["export", kernel, str(tmp_path / "p"), "--signature", "x_ptr=*fp32", "y_ptr=*fp32",
                   "out_ptr=*fp32", "n=i32", "--constant", "BLOCK=256", "--grid", "4", "--num-dpus", "2"])
    assert rc == 0
    assert "make -C" in capsys.readouterr().out
    manifest = (tmp_path / "p" / "manifest.json").read_text()
    assert '"BLOCK": 256' in manifest and '"grid": [\n    4,\n    1,\n    1\n  ]' in manifest
    rc = cli_main(["export", kernel, str(tmp_path / "q"), "--signature", "x_ptr=*fp8e4b15"])
    assert rc == 2 and "fp8e4b15" in capsys.readouterr().err
    rc = cli_main(["export", "no_such_module_xyz:k", str(tmp_path / "r")])
    assert rc == 2 and "cannot import" in capsys.readouterr().err
    _nothing_written(tmp_path, "q")


@needs_cc
def test_the_cli_examples_next_step_passes(tmp_path, capsys):
    """`edsl export --help`'s example (a kernel the package ships) with
    --data: the printed `make run-sim` builds and checks the outputs; without
    --data, the printed step names the files and scalars a run needs, and
    with them it passes."""
    import numpy as np
    sig = ["--signature", "x_ptr=*fp32", "y_ptr=*fp32", "out_ptr=*fp32", "n=i32", "--constant", "BLOCK=256",
           "--grid", "4", "--num-dpus", "2"]
    x = tmp_path / "x.npy"
    np.save(x, np.arange(1000, dtype=np.float32))
    rc = cli_main(["export", "edsl.export.example:add_kernel", str(tmp_path / "p"), *sig,
                   "--data", f"x_ptr={x}", "y_ptr=1000", "out_ptr=1000", "n=1000"])
    out = capsys.readouterr().out
    assert rc == 0 and f"make -C {tmp_path / 'p'} run-sim\n" in out, out
    build(tmp_path / "p")
    r = run(tmp_path / "p")
    assert r.returncode == 0 and "out_ptr: OK (1000 elements" in r.stdout, r.stdout + r.stderr
    rc = cli_main(["export", "edsl.export.example:add_kernel", str(tmp_path / "q"), *sig])
    out = capsys.readouterr().out
    assert rc == 0 and "x_ptr.bin, y_ptr.bin, out_ptr.bin" in out and 'run-sim RUN_ARGS="n=VALUE"' in out, out
    for name in ("x_ptr", "y_ptr", "out_ptr"):
        np.ones(1000, np.float32).tofile(tmp_path / "q" / "data" / f"{name}.bin")
    build(tmp_path / "q")
    assert run(tmp_path / "q", "n=1000").returncode == 0
    assert "edsl.export.example:add_kernel" in build_parser_help()


def build_parser_help() -> str:
    from edsl.export.cli import build_parser
    return build_parser()._subparsers._group_actions[0].choices["export"].format_help()


def test_export_twice_in_one_process(tmp_path):
    # `edsl.export` stays callable once the `edsl.export` package is imported
    sig = dict(signature=["*fp32", "*fp32", "*fp32", "i32"], constants={"BLOCK": 64})
    for name in ("a", "b"):
        result = edsl.export(triton_vector_add.add_kernel, tmp_path / name, **sig)
        assert (result.path / "dpu_program.c").exists()
    import edsl.export as package
    assert package.export is export and package.printer.PROGRAM_NAMES


def test_console_script_is_declared():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["edsl"] == "edsl.export.cli:main"


@triton.jit
def checked_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.device_assert(x >= 0, "x must be non-negative")
    tl.store(out_ptr + offs, x, mask=m)


@needs_cc
def test_device_assertion_with_debug(tmp_path):
    """export(debug=True) compiles tl.device_assert, as kernel[grid](..., debug=True):
    the runner names the assertion, its program and its line, as the model does."""
    folder = tmp_path / "checked"
    x = np.arange(500, dtype=np.float32)
    export(checked_copy, folder, sample_args=(x, np.zeros_like(x), 500), constants={"BLOCK": 128},
           grid=(4,), num_dpus=2, debug=True)
    build(folder)
    assert run(folder).returncode == 0
    x[300] = -1.0
    (folder / "data" / "x_ptr.bin").write_bytes(x.tobytes())
    r = run(folder)
    assert r.returncode == 4 and "device assertion failed (program 2): x must be non-negative" in r.stderr
    with pytest.raises(DpuError, match="device assertion failed") as err:
        checked_copy[(4,)](x, np.zeros_like(x), 500, BLOCK=128, num_dpus=2, debug=True)
    assert _first_error(r) == _as_runner(err.value)


# -- one DPU ABI -------------------------------------------------------------------------
TEMPLATES = ROOT / "edsl" / "export" / "templates"


def test_abi_header_is_the_abi_module():
    """dpu_abi.h (used by the DPU program, the runner and the SDK stand-ins)
    says what edsl.target.dpu says, and nothing else defines those facts in C."""
    defines = dict(re.findall(r"#define EDSL_(\w+) (-?\d+)", generate.abi_header()))
    want = {name: getattr(abi, name) for name in ("WRAM_BYTES", "MRAM_BYTES", "MAX_TASKLETS", "DMA_ALIGN",
                                                  "DMA_MIN_BYTES", "DMA_MAX_BYTES", "READ", "WRITE",
                                                  "CTX_SLOTS", "DPU_SLOTS", "WAIT_REPEATS")}
    want |= {f"CTX_{s.name}": s.value for s in abi.Ctx} | {f"DPU_{s.name}": s.value for s in abi.Dpu}
    want |= {f"ERR_{e.name}": e.value for e in abi.Err}
    assert {k: int(v) for k, v in defines.items()} == want
    # No size, limit, slot or code of the ABI written again by hand in the C around it.
    numbers = {str(v) for v in (abi.WRAM_BYTES, abi.MRAM_BYTES, abi.DMA_MAX_BYTES, abi.MAX_TASKLETS)}
    for path in [*SDK.iterdir(), *TEMPLATES.iterdir()]:
        if path.name == "README.md":
            continue
        code = re.sub(r"/\*.*?\*/|//[^\n]*", "", path.read_text(), flags=re.S)
        code = re.sub(r"STACK_SIZE \?= \d+", "", code)           # (the tasklets' stack, a choice)
        found = set(re.findall(r"\b(\d+)[uUlL]*\b", code)) & numbers
        found |= set(re.findall(r"\d+u?\s*(?:<<\s*20|\*\s*1024)", code))
        assert not found, (path.name, found)
        assert not re.search(r"\b(?:status|ctx)\w*\[\s*\d+\s*\]", code), path.name   # slots by name


def _header_library(tmp_path_factory, header: str, text: str, source: str) -> ctypes.CDLL:
    """Generated header `header` (its `text`, with dpu_abi.h) and C `source`
    that calls it, compiled as a library."""
    d = tmp_path_factory.mktemp(header.split(".")[0])
    (d / "dpu_abi.h").write_text(generate.abi_header())
    (d / header).write_text(text)
    (d / "lib.c").write_text(f'#include "{header}"\n{source}')
    r = subprocess.run(["cc", "-O1", "-fPIC", "-shared", "-Wall", "-Werror", "-I.", "-o", "lib.so", "lib.c"], cwd=d,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return ctypes.CDLL(str(d / "lib.so"))


@pytest.fixture(scope="module")
def dma_rules_c(tmp_path_factory):
    """The generated dma_rules.h compiled as a library: rules(m, w, n), message(m, w, n)."""
    lib = _header_library(tmp_path_factory, "dma_rules.h", generate.dma_rules_header(),
                          "int rules(uint64_t m, uint64_t w, int64_t n) { return edsl_dma_rules_broken(m, w, n); }\n"
                          "void message(char *out, uint64_t m, uint64_t w, int64_t n) "
                          "{ edsl_dma_violation(out, 256, m, w, n); }\n")
    lib.rules.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int64]
    lib.message.argtypes = [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int64]
    return lib


@needs_cc
@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**40), st.integers(0, 2**20), st.integers(-16, 4200))
def test_exported_dma_rules_are_the_abis(dma_rules_c, mram, wram, n):
    """The C of the exported runner and SDK stand-ins (dma_rules.h, generated
    from abi.DMA_RULES) breaks the rules the ABI says, worded alike; the ABI's
    rules are the hardware's."""
    hardware = abi.DmaRule(0)
    if n % 8 or not 8 <= n <= 2048:
        hardware |= abi.DmaRule.SIZE
    if mram % 8:
        hardware |= abi.DmaRule.MRAM_ALIGN
    if wram % 8:
        hardware |= abi.DmaRule.WRAM_ALIGN
    assert abi.dma_rules_broken(mram, wram, n) == hardware
    assert dma_rules_c.rules(mram, wram, n) == hardware
    out = ctypes.create_string_buffer(256)
    dma_rules_c.message(out, mram, wram, n)
    assert out.value.decode() == (abi.dma_violation(mram, wram, n) or "(no rule broken)")


@pytest.fixture(scope="module")
def error_messages_c(tmp_path_factory):
    """The generated error_messages.h compiled as a library: message(out, size, operands),
    side(code, write), transfer(write)."""
    lib = _header_library(tmp_path_factory, "error_messages.h", generate.error_messages_header(),
                          "void message(char *out, size_t size, const struct edsl_error_operands *o) "
                          "{ edsl_error_message(out, size, o); }\n"
                          "const char *side(int64_t code, int write) { return edsl_overrun_side(code, write); }\n"
                          "const char *transfer(int write) { return edsl_transfer_name(write); }\n"
                          "void sharing(char *out, size_t size, int64_t why, const struct edsl_sharing_operands *o) "
                          "{ edsl_sharing_message(out, size, why, o); }\n"
                          "void atomic_verb(char *out, size_t size, const char *op, const char *old) "
                          "{ edsl_atomic_verb(out, size, op, old); }\n"
                          "void element(char *out, size_t size, int64_t index, const char *array) "
                          "{ edsl_element_name(out, size, index, array); }\n")
    lib.side.restype = lib.transfer.restype = ctypes.c_char_p
    lib.side.argtypes, lib.transfer.argtypes = [ctypes.c_int64, ctypes.c_int], [ctypes.c_int]
    return lib


class ErrorOperands(ctypes.Structure):
    """struct edsl_error_operands, field by field as abi.ERROR_OPERANDS names them."""
    _fields_ = [(name, ctypes.c_char_p if t is str else ctypes.c_int64) for name, t in abi.ERROR_OPERANDS.items()]


ERROR_SAMPLES = [dict(nbytes=n, mram=m, wram=w, kind=kind, rule=rule, side=side, why=why, text=text)
                 for n, m, w in ((8, 0x1000, 0x20), (2049, 7, 3), (0, 0, 0), (1 << 40, (1 << 62) + 5, 1))
                 for kind, rule, side, why, text in (("mram_read", "DMA size 2049 bytes: a %s rule", "MRAM source",
                                                      abi.OUTSIDE_ARRAYS, "x must be 100% non-negative"),
                                                     ("mram_write", "", "WRAM buffer", "", "{braces} and \\"))]


@needs_cc
@pytest.mark.parametrize("code", [0, *abi.Err, 99])
@pytest.mark.parametrize("operands", ERROR_SAMPLES)
def test_exported_error_messages_are_the_abis(error_messages_c, code, operands):
    """The C of the exported runner (error_messages.h, generated from
    abi.ERROR_FORMATS) words every error with its operands as the model
    does (abi.error_message), and falls back alike where a text is missing."""
    out = ctypes.create_string_buffer(4096)
    for missing in (None, *(name for name, t in abi.ERROR_OPERANDS.items() if t is str)):
        given = {k: (None if k == missing else v) for k, v in operands.items()}
        c = ErrorOperands(code=int(code), **{k: v.encode() if isinstance(v, str) else v for k, v in given.items()})
        error_messages_c.message(out, ctypes.sizeof(out), ctypes.byref(c))
        assert out.value.decode() == abi.error_message(code, **given)
    for (err, direction), side in abi.OVERRUN_SIDES.items():
        assert error_messages_c.side(int(err), int(direction == abi.WRITE)).decode() == side
    assert error_messages_c.side(int(abi.Err.DMA_RULE), 0) is None
    assert [error_messages_c.transfer(w).decode() for w in (0, 1)] == [abi.TRANSFER_NAMES[abi.READ],
                                                                       abi.TRANSFER_NAMES[abi.WRITE]]


class SharingOperands(ctypes.Structure):
    """struct edsl_sharing_operands, as abi.SHARING_OPERANDS names them."""
    _fields_ = [(name, ctypes.c_char_p if t is str else ctypes.c_int64) for name, t in abi.SHARING_OPERANDS.items()]


@needs_cc
@pytest.mark.parametrize("why", list(abi.Shared))
def test_exported_sharing_messages_are_the_abis(error_messages_c, why):
    """The exported runner words a sharing across DPUs as the model does
    (error_messages.h, generated from abi.SHARING_FORMATS, ELEMENT_NAME and
    USE_VERBS)."""
    out = ctypes.create_string_buffer(4096)
    error_messages_c.element(out, ctypes.sizeof(out), 12, b"out_ptr")
    where = out.value.decode()
    assert where == abi.ELEMENT_NAME.format(index=12, array="out_ptr") == "element 12 of array 'out_ptr'"
    error_messages_c.atomic_verb(out, ctypes.sizeof(out), b"add", abi.OLD_USED_VERB.encode())
    verb = out.value.decode()
    assert verb == abi.USE_VERBS["atomic"].format(op="add", old_used=abi.OLD_USED_VERB)
    operands = dict(first=3, second=7, where=where, first_verb=verb, second_verb=abi.USE_VERBS["write"],
                    first_line=abi.SHARING_LINE.format(line=41), second_line="")
    c = SharingOperands(**{k: v.encode() if isinstance(v, str) else v for k, v in operands.items()})
    error_messages_c.sharing(out, ctypes.sizeof(out), int(why), ctypes.byref(c))
    assert out.value.decode() == abi.SHARING_FORMATS[why].format(**operands)


def test_templates_are_package_data():
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "templates/*" in package_data["edsl.export"] and "sdk/*" in package_data["edsl.export"]
    assert {p.name for p in TEMPLATES.iterdir()} >= {"dpu_program.c", "dpu_abi.h", "dma_rules.h", "error_messages.h",
                                                     "kernel_args.h",
                                                     "host_runner.c", "launch_config.h", "Makefile", "README.md"}
    assert "*.mlir" in package_data["edsl.dpu"]         # the DPU runtime library
    assert "*.h" in package_data["edsl.dpu"]            # the merge across DPUs (merge.h, half_bits.h)


def test_printed_names_cannot_clash_with_the_program_around_them():
    """Every name the DPU program's template defines is reserved in the printer."""
    from edsl.export.printer import PROGRAM_NAMES
    defined = set(re.findall(r"\bedsl_\w+", (TEMPLATES / "dpu_program.c").read_text()))
    assert defined and defined <= set(PROGRAM_NAMES), defined - set(PROGRAM_NAMES)


@needs_cc
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int16"])
def test_torch_tensors_export_as_sample_arguments(tmp_path, dtype):
    """A Triton user's arrays are torch CPU tensors: they export as NumPy's (ml_dtypes' for
    bf16), and the exported run gives the model's outputs."""
    from export_helpers import export_and_run
    torch = pytest.importorskip("torch", reason="a Triton user's arrays are torch tensors: torch is not installed")
    x = torch.arange(100).to(getattr(torch, dtype))
    y = torch.full((100,), 3).to(getattr(torch, dtype))
    out = torch.zeros(100, dtype=getattr(torch, dtype))
    r = export_and_run(tmp_path / "p", triton_vector_add.add_kernel, (x, y, out, 100), {"BLOCK": 32}, (4,),
                       dpus=2)
    assert "out_ptr: OK" in r.stdout
    like = np.zeros(100, ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    np.testing.assert_array_equal(output(tmp_path / "p", "out_ptr", like).astype(np.float64),
                                  (x + y).double().numpy())


@triton.jit
def scaled_copy(x_ptr, out_ptr, scale_ptr, n, shift=3, BLOCK: tl.constexpr = 16):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if scale_ptr is not None:
        x = x * tl.load(scale_ptr)
    tl.store(out_ptr + offs, x + shift, mask=m)


@needs_cc
def test_sample_arguments_as_a_launch_takes_them(tmp_path):
    """What a launch accepts, export takes: None for a pointer (a constant, as Triton
    specializes it), a parameter left to its default, Triton's reinterpreted view of a
    torch tensor."""
    from export_helpers import export_and_run
    torch = pytest.importorskip("torch", reason="a Triton user's arrays are torch tensors: torch is not installed")
    x = torch.arange(16, dtype=torch.int32)
    out = torch.zeros(16, dtype=torch.int32)
    args = (triton.reinterpret(x, tl.uint32), out, None, 10)
    export_and_run(tmp_path / "p", scaled_copy, args, {}, (1,))
    got = output(tmp_path / "p", "out_ptr", np.zeros(16, np.int32))
    np.testing.assert_array_equal(got[:10], np.arange(10) + 3)


@needs_cc
@pytest.mark.parametrize("tasklets", [1, 16])
def test_sums_whose_group_loops_stay_loops_export_as_the_model_runs_them(tmp_path, tasklets):
    """A reduction's group loops that LLVM may not unroll on the model (long
    reads) print as the same loops: the runner agrees with the model."""
    rng = np.random.default_rng(7)
    x, dy = (rng.uniform(-1, 1, 512).astype(np.float32) for _ in range(2))
    args = [x, dy, np.zeros(3, np.float32)]
    constants = dict(N=512, LONG=True)
    want = run_on_model(moments_kernel, args, constants, (1,), tasklets=tasklets)[2]
    export_and_run(tmp_path / "moments", moments_kernel, args, constants, (1,), tasklets=tasklets)
    np.testing.assert_array_equal(output(tmp_path / "moments", "out_ptr", want), want)


# -- the exported types, from the one type table ---------------------------------

@triton.jit
def shift_add(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, (tl.load(x_ptr + offs, mask=m) >> 1) + tl.load(y_ptr + offs, mask=m), mask=m)


def test_each_exported_type_has_its_c_storage_and_numpy_dtype():
    for t in arguments.EXPORTED:
        s = edsl.target.dtypes.by_triton(t)
        assert arguments.c_type(t) == (s.c if s.c not in (None, "bool") else f"uint{8 * s.nbytes}_t"), t
        if t != "u1":
            assert arguments._type_of_value("a", np.zeros(2, edsl.target.dtypes.numpy_dtype(s))) == "*" + t


@needs_cc
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_integer_arrays_of_every_width_export_by_their_dtype(tmp_path, dtype):
    """The signature comes from the sample arrays' dtypes (uint16 included),
    and the exported program computes what the model computes."""
    info = np.iinfo(dtype)
    x = np.random.default_rng(1).integers(info.min, info.max, 300, dtype=dtype, endpoint=True)
    y = np.arange(300).astype(dtype)
    export_and_run(tmp_path / "k", shift_add, (x, y, 300), {"BLOCK": 128}, (3,), dpus=2)
