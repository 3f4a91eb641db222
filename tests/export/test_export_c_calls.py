"""Kernels calling UPMEM C functions (fl.call) exported as SDK projects: the
C sources are copied beside the DPU program, with the files they include and
their macros, and the project built against the SDK stand-ins (`make sim`)
gives the model's results (its runner checks them)."""
import os
import sys

import numpy as np
import pytest
import triton
import triton.language as tl

import edsl
from edsl import fl
from export_helpers import export_and_run, needs_cc, run

pytest.importorskip("ziglang", reason="raw functions in C are compiled by the clang of the ziglang package")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "dpu"))
from test_c_calls import SOURCES, axpy_kernel, c_function, copy_kernel, sum_kernel  # noqa: E402

pytestmark = needs_cc


def test_a_tile_function_runs_in_the_exported_project(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(100).astype(np.float32)
    y = rng.standard_normal(100).astype(np.float32)
    export_and_run(tmp_path / "axpy", axpy_kernel, (x, y, 1.5, 100), {"BLOCK": 32}, (4,), tasklets=3)
    assert (tmp_path / "axpy" / "c" / "0" / "kernel_calls.c").read_text() == \
        open(os.path.join(SOURCES, "kernel_calls.c")).read()
    assert "extern void axpy(void *, void *, float, uint32_t);" in (tmp_path / "axpy" / "dpu_program.c").read_text()
    assert "C_SOURCES = c/0/edsl.c\n" in (tmp_path / "axpy" / "Makefile").read_text()


@pytest.mark.parametrize("tasklets", [1, 4])
def test_mram_pointers_and_a_barrier_in_c_run_in_the_exported_project(tmp_path, tasklets):
    src = np.random.default_rng(2).integers(-2 ** 62, 2 ** 62, 296, dtype=np.int64)   # (chunks of 64 bytes)
    dst = np.zeros(296, np.int64)
    export_and_run(tmp_path / "copy", copy_kernel, (dst, src, 296 * 8, 64), {"BLOCK": 128}, (3,),
                   tasklets=tasklets)
    x = np.random.default_rng(3).integers(-1000, 1000, 3 * 64, dtype=np.int32)
    out = np.zeros(3, np.int64)
    export_and_run(tmp_path / "sum", sum_kernel, (x, out), {"BLOCK": 64, "TASKLETS": tasklets}, (3,),
                   tasklets=tasklets)


def test_the_c_functions_transfers_merge_across_dpus(tmp_path):
    """Their mram_read / mram_write are the program's (edsl_c_calls.h), logged
    as the kernel's own: the runner merges several DPUs' results as the model does."""
    x = np.random.default_rng(4).standard_normal(200).astype(np.float32)
    y = np.zeros(200, np.float32)
    export_and_run(tmp_path / "axpy", axpy_kernel, (x, y, 1.0, 200), {"BLOCK": 32}, (7,), dpus=3, tasklets=2)
    src = np.random.default_rng(5).integers(-2 ** 62, 2 ** 62, 296, dtype=np.int64)
    export_and_run(tmp_path / "copy", copy_kernel, (np.zeros(296, np.int64), src, 296 * 8, 64), {"BLOCK": 128},
                   (3,), dpus=3, tasklets=2)
    assert '#include "../../edsl_c_calls.h"\n#include "copy_chunks.c"\n' in \
        (tmp_path / "copy" / "c" / "0" / "edsl.c").read_text()


direct = c_function("direct.c", "element")


@triton.jit
def direct_kernel(m_ptr, out_ptr):
    fl.call(direct, [], [m_ptr, 0])
    tl.store(out_ptr + tl.arange(0, 1), tl.load(m_ptr + tl.arange(0, 1)))


def test_direct_mram_accesses_keep_the_export_on_one_dpu(tmp_path):
    """Loads and stores through __mram_ptr pointers move bytes no transfer of
    the program logs: refused on several DPUs at export, and by the runner."""
    m = np.arange(8, dtype=np.int32)
    out = np.zeros(1, np.int32)
    with pytest.raises(edsl.CompileError, match=r"calls the UPMEM C functions element, which load or store through "
                                                r"__mram_ptr pointers themselves.*num_dpus=1"):
        export_and_run(tmp_path / "two", direct_kernel, (m, out), {}, (1,), dpus=2)
    export_and_run(tmp_path / "one", direct_kernel, (m, out), {}, (1,))
    r = run(tmp_path / "one", "dpus=2")
    assert r.returncode == 2 and "calls the UPMEM C functions element" in r.stderr and "(dpus=1)" in r.stderr


def _with_macro_and_header():
    def scaled_copy():
        """Copies each element times SCALE, through a helper of an included header."""
    return edsl.dialect(name="c", file=os.path.join(os.path.dirname(__file__), "c_sources", "scaled_copy.c"),
                        defines={"SCALE": 3})(scaled_copy)


scaled_copy = _with_macro_and_header()


@triton.jit
def scaled_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    y = fl.call(scaled_copy, [tl.zeros([BLOCK], dtype=tl.int32)], [tl.load(x_ptr + offs), BLOCK])
    tl.store(y_ptr + offs, y)


def test_macros_and_included_files_go_with_the_source(tmp_path):
    x = np.arange(64, dtype=np.int32)
    y = np.zeros(64, np.int32)
    scaled_kernel[(2,)](x, y, BLOCK=32, num_tasklets=2)
    np.testing.assert_array_equal(y, 3 * x)
    y[:] = 0
    export_and_run(tmp_path / "scaled", scaled_kernel, (x, y), {"BLOCK": 32}, (2,), tasklets=2)
    folder = tmp_path / "scaled" / "c" / "0"
    assert (folder / "edsl.c").read_text().endswith('#define SCALE 3\n#include "../../edsl_c_calls.h"\n'
                                                    '#include "scaled_copy.c"\n')
    assert (folder / "helpers" / "scale.h").exists()
