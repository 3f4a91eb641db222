"""Kernels with tiles too large for WRAM, kept in a per-DPU MRAM scratch
(edsl.backend.convert.spill), exported: the runner places the scratch after
the arrays in each DPU's MRAM and the program's contexts get its address.
Each is built with the host C compiler against the SDK stand-ins
(`make run-sim`) and compared bit for bit with the DPU model and with NumPy
(Hypothesis: tile shapes around the WRAM limit, 1..24 tasklets)."""
import json
import re

import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import example, given, settings, strategies as st

import edsl
import edsl.backend
import triton_matmul
from edsl import Input, fl
from edsl.target import dpu as abi
from edsl.export import build as export_build, export

from export_helpers import build, build_and_run, export_and_run, needs_cc, output, run, run_on_model
from region_kernels import region_kernel, staged_kernel
from source_lines import line_of
from tile_kernels import carried_update_kernel, mean_and_variance_kernel, tile_kernel

pytestmark = needs_cc


def _export_run(folder, kernel, args, constants, grid, dpus=1, tasklets=1, **kw):
    export_and_run(folder, kernel, args, constants, grid, dpus, tasklets, **kw)
    return json.loads((folder / "manifest.json").read_text())


def _model(kernel, args, constants, grid, dpus=1, tasklets=1, **kw):
    return run_on_model(kernel, args, constants, grid, dpus, tasklets, **kw), edsl.backend.last_report()


def _export_and_model(folder, kernel, args, constants, grid, tasklets):
    """Export and run `kernel`, and run it on the model with the WRAM the
    exported program leaves the kernel (`kernel_budget`): both keep the same
    tiles in MRAM. The manifest, the model's arrays and its report."""
    manifest = _export_run(folder, kernel, args, constants, grid, tasklets=tasklets)
    model, report = _model(kernel, args, constants, grid, tasklets=tasklets,
                           wram_bytes=manifest["wram_bytes"]["kernel_budget"])
    assert manifest["spilled_tiles"] == report.spilled_tiles
    return manifest, model, report


@settings(max_examples=6, deadline=None)
@example(rows=128, cols=256, tasklets=7, seed=1)          # the load and the scan result in MRAM
@example(rows=64, cols=256, tasklets=20, seed=0)          # fits the model's WRAM, not with the program's
@given(rows=st.sampled_from([64, 128]), cols=st.sampled_from([128, 256]), tasklets=st.integers(1, 24),
       seed=st.integers(0, 2**16))
def test_tiles_in_mram_export_and_give_the_models_results(tmp_path_factory, rows, cols, tasklets, seed):
    """Tiles of 32 KiB to 128 KiB (int32, exact): those over the DPU's WRAM
    are kept in the scratch, by the exported program as by the model. The
    exported program's own WRAM (its tasklets' contexts, ...) leaves the
    kernel less than the model gives it: the export compiles it with that
    budget (`kernel_budget`), and the model with the same one keeps the same
    tiles in MRAM; with the whole WRAM, the same results."""
    x = np.random.default_rng(seed).integers(-1000, 1000, (rows, cols)).astype(np.int32)
    args = [x, np.zeros_like(x), np.zeros(rows, np.int32), np.zeros(cols, np.int32), np.zeros_like(x)]
    consts = {"R": rows, "C": cols}
    folder = tmp_path_factory.mktemp("tiles") / "project"
    manifest, model, report = _export_and_model(folder, tile_kernel, args, consts, (1,), tasklets)
    assert manifest["wram_bytes"]["total"] <= abi.WRAM_BYTES
    assert manifest["scratch_bytes"] == report.spill_bytes
    whole, _ = _model(tile_kernel, args, consts, (1,), tasklets=tasklets)
    if rows * cols * 4 > abi.WRAM_BYTES:
        assert report.spill_bytes > 0
        assert f"#define EDSL_SCRATCH_BYTES {report.spill_bytes}ull" in (folder / "kernel_args.h").read_text()
    want = [x * 3 + 1, x.sum(axis=1), x.max(axis=0), np.cumsum(x, axis=1)]
    for k, (name, ref) in enumerate(zip(["y_ptr", "rows_ptr", "cols_ptr", "scan_ptr"], want), 1):
        got = output(folder, name, args[k])
        np.testing.assert_array_equal(got, model[k])
        np.testing.assert_array_equal(got, whole[k])
        np.testing.assert_array_equal(got, ref)


def _counting_compiles(monkeypatch) -> list:
    """The budgets of the export's compiles of its kernel, as they happen."""
    budgets, compile_for_export = [], export_build.compile_for_export

    def counted(spec, wram_bytes=abi.WRAM_BYTES):
        budgets.append(wram_bytes)
        return compile_for_export(spec, wram_bytes)
    monkeypatch.setattr(export_build, "compile_for_export", counted)
    return budgets


@pytest.mark.parametrize("rows,cols,tasklets", [(64, 128, 1), (64, 256, 20), (64, 128, 24)])
def test_the_kernel_is_compiled_once_with_the_programs_reserve(tmp_path, monkeypatch, rows, cols, tasklets):
    """The WRAM the exported program keeps for its own is known before the
    kernel is compiled: one compile, with the budget the manifest states,
    whether the tiles fit the model's whole WRAM or not beside the program
    (20 and 24 tasklets: contexts and access logs of about 10 KiB)."""
    budgets = _counting_compiles(monkeypatch)
    x = np.zeros((rows, cols), np.int32)
    export(tile_kernel, tmp_path / "project", constants={"R": rows, "C": cols}, grid=(1,), num_tasklets=tasklets,
           sample_args=[x, np.zeros_like(x), np.zeros(rows, np.int32), np.zeros(cols, np.int32), np.zeros_like(x)])
    wram = json.loads((tmp_path / "project" / "manifest.json").read_text())["wram_bytes"]
    assert budgets == [wram["kernel_budget"]]
    assert wram["kernel_budget"] + wram["runtime"] <= abi.WRAM_BYTES
    assert wram["kernel"] + wram["runtime"] == wram["total"] <= abi.WRAM_BYTES


def test_tiles_that_do_not_fit_beside_the_program_name_its_share(tmp_path):
    """An EDSL function's tile operands (read in WRAM: never kept in MRAM)
    over the WRAM the program leaves: the compile's error, saying that
    budget is the DPU's less the program's own, at the user's line."""
    with pytest.raises(edsl.DpuError) as err:
        export(region_kernel, tmp_path / "project", signature={"x_ptr": "*fp32"}, constants={"BLOCK": 8192},
               grid=(1,))
    message = str(err.value)
    assert "keeping its large tiles in MRAM does not make it fit" in message
    assert re.search(r"more than the (\d+) bytes of a DPU.*; exported, the kernel has \1 of the DPU's 65536 "
                     r"bytes of WRAM: the program keeps the rest for its own \(its tasklets' contexts", message)
    assert err.value.loc.lineno == line_of(region_kernel, "x = tl.load")
    assert not (tmp_path / "project").exists()


@pytest.mark.parametrize("dpus,tasklets", [(3, 1), (2, 5)])
def test_loop_carried_accumulator_in_mram(tmp_path, dpus, tasklets):
    """The tiled matmul example with 128 x 128 blocks: its accumulator and
    dot results kept in MRAM over programs on several DPUs (each DPU's
    scratch, reused by its programs)."""
    rng = np.random.default_rng(dpus)
    a = rng.standard_normal((150, 100)).astype(np.float32)
    b = rng.standard_normal((100, 140)).astype(np.float32)
    c = np.zeros((150, 140), np.float32)
    args, consts, grid = (a, b, c, 150, 140, 100), {"BM": 128, "BN": 128, "BK": 32}, (2, 2)
    manifest = _export_run(tmp_path / "project", triton_matmul.matmul_kernel, args, consts, grid, dpus,
                           tasklets, outputs=["c_ptr"])
    assert any(t.startswith("loop-carried tensor") for t in manifest["spilled_tiles"])
    got = output(tmp_path / "project", "c_ptr", c)
    model, report = _model(triton_matmul.matmul_kernel, args, consts, grid, dpus, tasklets)
    assert report.spill_bytes == manifest["scratch_bytes"] > 0
    np.testing.assert_array_equal(got, model[2])
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


@edsl.dialect
def double_block(out: Input["memref<?xf32, MRAM>"], x: Input["memref<?xf32, MRAM>"], count: Input["i32"]):
    for i in range(edsl.tasklet_id(), count, edsl.num_tasklets()):
        out[i] = x[i] * 2.0


@pytest.mark.parametrize("tasklets", [1, 4, 16])
def test_carried_tiles_in_mram_updated_in_place(tmp_path, tasklets):
    """fp16 rows summed into carried f32 tiles updated in place (`acc += x`),
    kept in MRAM: the exported program keeps the tiles the model keeps with
    its WRAM budget, updates them in place too, and gives the model's bits."""
    x = np.random.default_rng(tasklets).standard_normal((3, 8192)).astype(np.float16)
    args, consts, grid = [x, np.zeros(6, np.float32), 8192], {"BLOCK": 8192}, (3,)
    folder = tmp_path / "project"
    _, model, report = _export_and_model(folder, mean_and_variance_kernel, args, consts, grid, tasklets)
    assert any(t.startswith("loop-carried tensor at") for t in report.spilled_tiles)
    assert not any(t.startswith("loop-carried tensor (next value)") for t in report.spilled_tiles)
    np.testing.assert_array_equal(output(folder, "out_ptr", args[1]), model[1])


@pytest.mark.parametrize("tasklets", [1, 11])
def test_an_int_tile_updated_in_place_in_mram(tmp_path, tasklets):
    """int32 (exact): the exported program, the model and NumPy agree."""
    x = np.random.default_rng(tasklets).integers(-1000, 1000, (3, 64, 256)).astype(np.int32)
    args, consts = [x, np.zeros((64, 256), np.int32)], {"R": 64, "C": 256, "STEPS": 3}
    folder = tmp_path / "project"
    _, model, report = _export_and_model(folder, carried_update_kernel, args, consts, (1,), tasklets)
    assert any(t.startswith("loop-carried tensor at") for t in report.spilled_tiles)
    want = np.ones((64, 256), np.int32)
    for step in x:
        want = want * np.int32(3) + step
    got = output(folder, "out_ptr", args[1])
    np.testing.assert_array_equal(got, model[1])
    np.testing.assert_array_equal(got, want)


@triton.jit
def region_and_spill_kernel(x_ptr, out_ptr, w_ptr, v_ptr, n, BLOCK: tl.constexpr, BIG: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    fl.call(double_block, [], [out_ptr + start, x_ptr + start, tl.minimum(n - start, BLOCK)])
    offs = tl.program_id(0) * BIG + tl.arange(0, BIG)
    tl.store(v_ptr + offs, tl.load(w_ptr + offs) * 3.0 + 1.0)


def test_scratch_with_edsl_regions(tmp_path):
    """A kernel with an EDSL region (its transfers may touch the whole image)
    and a tile kept in MRAM: the one region spans the arrays and the scratch."""
    rng = np.random.default_rng(11)
    n, big = 1000, 16384
    x = rng.standard_normal(n).astype(np.float32)
    w = rng.standard_normal(2 * big).astype(np.float32)
    args = (x, np.zeros_like(x), w, np.zeros_like(w), n)
    consts, grid = {"BLOCK": 512, "BIG": big}, (2,)
    manifest = _export_run(tmp_path / "project", region_and_spill_kernel, args, consts, grid, 1, 2,
                           outputs=["out_ptr", "v_ptr"])
    assert manifest["mram_regions"] == "whole image" and manifest["scratch_bytes"] > 0
    model, _ = _model(region_and_spill_kernel, args, consts, grid, 1, 2)
    for name, k, ref in (("out_ptr", 1, x * 2), ("v_ptr", 3, w * 3 + 1)):
        got = output(tmp_path / "project", name, args[k])
        np.testing.assert_array_equal(got, model[k])
        np.testing.assert_array_equal(got, ref)


def test_an_edsl_functions_wram_buffer_leaves_the_tiles_less_wram(tmp_path, monkeypatch):
    """An EDSL function's 48 KiB wram_alloc buffer (a global of the program)
    beside its 8 KiB of operands and a 16 KiB tile: the model and the export
    alike keep the tile in MRAM, the export after one compile."""
    budgets = _counting_compiles(monkeypatch)
    x = np.random.default_rng(5).standard_normal(1024 + 4096).astype(np.float32)
    args, consts = [x, 1024], {"BLOCK": 1024, "BIG": 4096}
    folder = tmp_path / "project"
    manifest, model, report = _export_and_model(folder, staged_kernel, args, consts, (1,), 1)
    wram = manifest["wram_bytes"]
    assert budgets == [wram["kernel_budget"]] and wram["globals"] >= 49152
    assert wram["total"] <= abi.WRAM_BYTES and manifest["scratch_bytes"] > 0
    whole, whole_report = _model(staged_kernel, args, consts, (1,))
    assert whole_report.spilled_tiles == report.spilled_tiles != []
    got = output(folder, "x_ptr", x)
    np.testing.assert_array_equal(got, model[0])
    np.testing.assert_array_equal(got, whole[0])
    np.testing.assert_array_equal(got, np.concatenate([x[:1024] * 2, x[1024:] + 1]))


PREFIX = tl.constexpr("a prefix of almost a thousand bytes, a string in the DPU's WRAM " + "." * 900)


@triton.jit
def print_and_copy_kernel(x_ptr, y_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, D: tl.constexpr):
    a = tl.arange(0, A)
    tl.store(y_ptr + a, tl.load(x_ptr + a) + 1)
    b = A + tl.arange(0, B)
    tl.store(y_ptr + b, tl.load(x_ptr + b) + 2)
    c = A + B + tl.arange(0, C)
    tl.store(y_ptr + c, tl.load(x_ptr + c) + 3)
    d = A + B + C + tl.arange(0, D)
    tl.store(y_ptr + d, tl.load(x_ptr + d) + 4)
    tl.device_print(PREFIX, tl.program_id(0))


def test_printed_strings_known_after_compiling_compile_it_once_more(tmp_path, monkeypatch):
    """tl.device_print's format string, printed as a static C array in WRAM,
    is known once the kernel is compiled: its 60 KiB of int8 tiles fit the
    budget, not beside the string, so the export compiles it once more with
    a budget less by it (the model, given that budget, keeps the same tile
    in MRAM): two compiles, never three."""
    budgets = _counting_compiles(monkeypatch)
    sizes = {"A": 32768, "B": 16384, "C": 8192, "D": 4096}
    x = np.random.default_rng(3).integers(-128, 124, sum(sizes.values())).astype(np.int8)
    args = [x, np.zeros_like(x)]
    folder = tmp_path / "project"
    export(print_and_copy_kernel, folder, sample_args=args, constants=sizes, grid=(1,))
    r = build_and_run(folder)                         # (its check against the model's outputs)
    assert r.returncode == 0 and "MISMATCH" not in r.stdout, r.stdout + r.stderr
    manifest = json.loads((folder / "manifest.json").read_text())
    wram = manifest["wram_bytes"]
    model, report = _model(print_and_copy_kernel, args, sizes, (1,), wram_bytes=wram["kernel_budget"])
    assert manifest["spilled_tiles"] == report.spilled_tiles
    assert wram["globals"] > len(PREFIX.value)
    assert budgets == [budgets[0], budgets[0] - wram["globals"]] and wram["kernel_budget"] == budgets[1]
    assert wram["total"] <= abi.WRAM_BYTES and manifest["scratch_bytes"] > 0
    want = x + np.repeat(np.arange(1, 5, dtype=np.int8), list(sizes.values()))
    got = output(folder, "y_ptr", args[1])
    np.testing.assert_array_equal(got, model[1])
    np.testing.assert_array_equal(got, want)


@triton.jit
def copy_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) + 1)


def test_arrays_and_scratch_over_the_mram_bank_are_refused_by_the_runner(tmp_path):
    """As the model refuses the launch: arrays that leave less MRAM than the
    scratch needs are an input error of the runner (exit status 2)."""
    folder = tmp_path / "project"
    export(copy_kernel, folder, signature={"x_ptr": "*fp32", "y_ptr": "*fp32"}, constants={"BLOCK": 16384},
           grid=(1,))
    scratch = json.loads((folder / "manifest.json").read_text())["scratch_bytes"]
    assert scratch == 16384 * 4
    build(folder)
    x = np.arange(16384, dtype=np.float32)
    (folder / "data" / "x_ptr.bin").write_bytes(x.tobytes())
    (folder / "data" / "y_ptr.bin").write_bytes(np.zeros_like(x).tobytes())
    r = run(folder)
    assert r.returncode == 0, r.stdout + r.stderr
    np.testing.assert_array_equal(output(folder, "y_ptr", x), x + 1)
    big = np.zeros((abi.MRAM_BYTES - scratch) // 4 - 1024, np.float32)     # with x's 64 KiB: over
    (folder / "data" / "y_ptr.bin").write_bytes(big.tobytes())
    r = run(folder)
    assert r.returncode == 2
    assert f"kernel's tiles kept in MRAM {scratch} bytes of scratch, more than a DPU's 64 MiB" in r.stderr
