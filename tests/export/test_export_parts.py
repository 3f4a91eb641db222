"""Each DPU receives its part of each array in the exported project too: the
host runner sends DPU d the bytes its programs touch (data/edsl_parts.bin,
from the DPU model's reference run) in one parallel transfer per array, so
arrays larger than a DPU's MRAM run where each DPU's parts fit; a DPU that
reaches outside its part (other data than the reference's, a gather through
new indices) stops with an MRAM-bounds error, never a wrong result."""
import pathlib

import numpy as np
import triton
import triton.language as tl

from edsl.target.dpu import MRAM_BYTES
from export_helpers import build, export_and_run, needs_cc, output, run
from source_lines import line_of


@triton.jit
def row_sums(x_ptr, out_ptr, COLS: tl.constexpr):
    row = tl.program_id(0)
    tl.store(out_ptr + row, tl.sum(tl.load(x_ptr + row * COLS + tl.arange(0, COLS)), axis=0))


@triton.jit
def gather_rows(x_ptr, idx_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + tl.load(idx_ptr + offs)))


def _parts(folder) -> np.ndarray:
    """The runner's table of parts: (header, [dpu, array, (lo, hi)])."""
    table = np.frombuffer((pathlib.Path(folder) / "data" / "edsl_parts.bin").read_bytes(), np.int64)
    dpus, arrays = int(table[0]), int(table[4])
    return table[:5], table[5:].reshape(dpus, arrays, 2)


@needs_cc
def test_arrays_larger_than_a_dpu_run_with_each_dpu_receiving_its_rows(tmp_path):
    tmp_path = tmp_path / "p"
    cols = 4096
    rows = MRAM_BYTES // (cols * 4) + 384          # 73 MiB of x: more than a DPU's MRAM
    x = (np.arange(rows * cols) % 251).astype(np.float32).reshape(rows, cols)
    out = np.zeros(rows, np.float32)
    r = export_and_run(tmp_path, row_sums, [x, out], {"COLS": cols}, (rows,), dpus=4)
    np.testing.assert_array_equal(output(tmp_path, "out_ptr", out), x.sum(axis=1, dtype=np.float32))
    head, parts = _parts(tmp_path)
    assert head.tolist() == [4, rows, 1, 1, 2]
    row_bytes = cols * 4
    assert parts[:, 0].tolist() == [[1120 * row_bytes * d, 1120 * row_bytes * (d + 1)] for d in range(4)]
    assert "done" in r.stdout
    # Other DPU counts than the export's: every DPU would receive the whole arrays.
    r = run(tmp_path, "dpus=8")
    assert r.returncode == 2
    assert "more than a DPU's 64 MiB (every DPU receives the whole arrays: data/edsl_parts.bin, which gives " \
           "each DPU its part, was not written for dpus=8 grid=4480,1,1)" in r.stderr


@needs_cc
def test_a_dpu_reaching_outside_its_part_stops_rather_than_reading_another_dpus_rows(tmp_path):
    """Parts found on the reference data bound each DPU: indices that reach
    elsewhere on other data are an MRAM-bounds error at the gather's line."""
    tmp_path = tmp_path / "p"
    block, programs = 64, 8
    n = block * programs
    x = np.arange(n, dtype=np.int32) * 3
    idx = np.arange(n, dtype=np.int32) ^ 1            # each program gathers within its own rows
    out = np.zeros(n, np.int32)
    export_and_run(tmp_path, gather_rows, [x, idx, out], {"BLOCK": block}, (programs,), dpus=4)
    np.testing.assert_array_equal(output(tmp_path, "out_ptr", out), x[idx])
    (tmp_path / "data" / "idx_ptr.bin").write_bytes(idx[::-1].copy().tobytes())   # DPU 0 now reads DPU 3's rows
    build(tmp_path)
    r = run(tmp_path, "check=0")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "outside the launch's arrays" in r.stderr and "on DPU 0" in r.stderr
    assert f"test_export_parts.py:{line_of(gather_rows, 'tl.store(out_ptr')}:" in r.stderr    # the gather's line
    assert "note: each DPU received only its part of each array" in r.stderr
