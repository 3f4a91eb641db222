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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "dpu"))
from test_c_functions import SOURCES  # noqa: E402
from test_c_calls import (axpy_kernel, c_function, copy_kernel, count_kernel,  # noqa: E402
                          keep_kernel, mem_alloc_kernel, mutex_counter_kernel, running_kernel, staged_kernel,
                          sum_kernel, unaligned_kernel, unaligned_want)

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


def test_each_dpu_has_the_c_files_variables_of_its_own_in_the_exported_project(tmp_path):
    """Each DPU's copy of the program keeps its own variable, as the model gives each DPU its own."""
    export_and_run(tmp_path / "count", count_kernel, (np.zeros(7, np.int32),), {}, (7,), dpus=3)


def test_the_c_functions_variables_in_mram_are_each_dpus_own_in_the_exported_project(tmp_path):
    """The program's regions take in the variables (c/<k>/edsl.c names them);
    their transfers are no array's, so DPUs do not merge them."""
    x = np.random.default_rng(6).integers(-1000, 1000, 7 * 8, dtype=np.int64)
    export_and_run(tmp_path / "running", running_kernel, (x, np.zeros(7, np.int64)), {}, (7,), dpus=3, tasklets=2)
    assert "regions[1][0] = (uint64_t)(uintptr_t)&staged;" in \
        (tmp_path / "running" / "c" / "0" / "edsl.c").read_text()
    # (the heap the arrays and the access logs have is what the variables leave of the MRAM)
    variables = 8 + 16 * 8 * 8 + (48 << 20) + 8                 # running_total, staged, big, kept_in_mram
    assert f"#define EDSL_C_MRAM_VARIABLE_BYTES {variables}ull" in (tmp_path / "running" / "kernel_args.h").read_text()
    x = np.random.default_rng(7).integers(-1000, 1000, 3 * 4 * 8, dtype=np.int64)
    export_and_run(tmp_path / "staged", staged_kernel, (x, np.zeros(3 * 4, np.int64)), {"TASKLETS": 4}, (3,),
                   dpus=2, tasklets=4)


def test_two_functions_of_one_source_share_its_variables_in_the_exported_project(tmp_path):
    x = np.random.default_rng(8).integers(-2 ** 62, 2 ** 62, 5 * 2, dtype=np.int64)
    export_and_run(tmp_path / "keep", keep_kernel, (x, np.zeros_like(x)), {}, (5,), dpus=2, tasklets=2)
    assert "C_SOURCES = c/0/edsl.c\n" in (tmp_path / "keep" / "Makefile").read_text()


def test_unaligned_copies_run_in_the_exported_project_over_its_transfers(tmp_path):
    """mram_unaligned.h's copies in an exported kernel's C source are the
    model's own code over the program's logged transfers (edsl_c_calls.h):
    several DPUs' writes merge."""
    rng = np.random.default_rng(10)
    m = rng.integers(0, 256, 5 * 32 + 8, dtype=np.uint8)
    v = rng.integers(0, 256, 5 * 16, dtype=np.uint8)
    out = np.zeros(5 * 16, np.uint8)
    export_and_run(tmp_path / "unaligned", unaligned_kernel, (m, v, out), {"OFF": 3, "N": 16, "S": 32}, (5,),
                   dpus=2, tasklets=2)
    folder = tmp_path / "unaligned"
    assert (folder / "edsl_mram_unaligned.h").read_text() == (folder / "sim" / "edsl_mram_unaligned.h").read_text()
    # (the runner's check holds its results to the model's, which are NumPy's)
    expected = np.fromfile(folder / "data" / "m_ptr.expected.bin", np.uint8)
    np.testing.assert_array_equal(expected, unaligned_want(m, v, 5, 3, 16, 32))


bump = c_function("sdk_mram_variables.c", "bump")


@triton.jit
def bump_kernel(out_ptr):
    o = fl.call(bump, [tl.zeros([1], dtype=tl.int64)], [])
    tl.store(out_ptr + tl.program_id(0) + tl.arange(0, 1), o)


def test_direct_accesses_of_a_functions_own_variables_in_mram_export_for_several_dpus(tmp_path):
    """`bias = bias + 1` loads and stores an MRAM variable directly: no
    transfer logs it, but its bytes are each DPU's own, so the export takes
    several DPUs (a direct access through a pointer does not: above)."""
    out = np.zeros(6, np.int64)
    export_and_run(tmp_path / "bump", bump_kernel, (out,), {}, (6,), dpus=3)
    assert "#define EDSL_C_FUNCTIONS \"\"" in (tmp_path / "bump" / "launch_config.h").read_text()
    bump_kernel[(6,)](out, num_dpus=3)
    np.testing.assert_array_equal(out, [6, 7] * 3)             # (5 + 1 on each DPU, then 7)


def test_a_variable_in_mram_of_a_function_is_refused_by_the_export(tmp_path):
    fn = c_function("", "kept_in_function", """#include <defs.h>
#include <mram.h>
void kept_in_function(int64_t *t) {
    static __mram_noinit int64_t kept[1];
    __dma_aligned int64_t w[1] = {t[0]};
    mram_write(w, kept, 8);
}
""")

    @triton.jit
    def kept_in_function_kernel(out_ptr):
        kept = fl.call(fn, [tl.zeros([1], dtype=tl.int64)], [])
        tl.store(out_ptr + tl.arange(0, 1), kept)
    with pytest.raises(edsl.CompileError, match="the variable in MRAM 'kept' of function 'kept_in_function'"):
        edsl.export(kept_in_function_kernel, tmp_path / "kept", sample_args=(np.zeros(1, np.int64),), grid=(1,))


handshake_prefix = c_function("sdk_handshake.c", "handshake_prefix")
seqread_sum = c_function("", "seqread_sum", """#include <defs.h>
#include <seqread.h>
/* total[0]: the sum of in[0 .. n - 1], read by tasklet 0 through a cache of its own. */
void seqread_sum(int64_t *total, __mram_ptr const int32_t *in, int n) {
    __dma_aligned uint8_t cache[2 * SEQREAD_CACHE_SIZE];
    seqreader_t reader;
    if (me() != 0)
        return;
    int32_t *p = seqread_init((seqreader_buffer_t)cache, (__mram_ptr void *)in, &reader);
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
        sum += *p;
        p = seqread_get(p, sizeof(int32_t), &reader);
    }
    total[0] = sum;
}
""")


@triton.jit
def handshake_kernel(x_ptr, out_ptr, TASKLETS: tl.constexpr):
    offs = tl.program_id(0) * TASKLETS + tl.arange(0, TASKLETS)
    x = tl.load(x_ptr + offs)
    out = tl.zeros([TASKLETS], dtype=tl.int32)
    out = fl.call(handshake_prefix, [out], [x])
    tl.store(out_ptr + offs, out)


@triton.jit
def seqread_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    t = tl.zeros([1], dtype=tl.int64)
    t = fl.call(seqread_sum, [t], [x_ptr + tl.program_id(0) * BLOCK, BLOCK])
    tl.store(out_ptr + tl.program_id(0) + tl.arange(0, 1), t)


@pytest.mark.parametrize("tasklets", [1, 4])
def test_mutexes_handshakes_and_seqread_run_on_the_stand_ins_as_on_the_model(tmp_path, tasklets):
    """Each DPU's mutex, counter and handshakes its own; the exported project gives the model's results."""
    export_and_run(tmp_path / "mutex", mutex_counter_kernel, (np.zeros(5, np.int32), 3), {}, (5,), dpus=2,
                   tasklets=tasklets)
    x = np.random.default_rng(tasklets).integers(-100, 100, 3 * tasklets).astype(np.int32)
    export_and_run(tmp_path / "handshake", handshake_kernel, (x, np.zeros_like(x)), {"TASKLETS": tasklets}, (3,),
                   dpus=2, tasklets=tasklets)
    # (128 elements more: a refill reads up to 2 * SEQREAD_CACHE_SIZE bytes past the last block, bytes of
    # another array the model would count as read, and written by another DPU)
    x = np.random.default_rng(7).integers(-1000, 1000, 4 * 300 + 128).astype(np.int32)
    export_and_run(tmp_path / "seqread", seqread_kernel, (x, np.zeros(4, np.int64)), {"BLOCK": 300}, (4,), dpus=3,
                   tasklets=tasklets)
    # (and the model's results are NumPy's)
    sums = np.zeros(4, np.int64)
    seqread_kernel[(4,)](x, sums, BLOCK=300, num_dpus=3, num_tasklets=tasklets)
    np.testing.assert_array_equal(sums, x[:1200].reshape(4, 300).sum(axis=1))
    x = x[:3 * tasklets]
    prefix = np.zeros_like(x)
    handshake_kernel[(3,)](x, prefix, TASKLETS=tasklets, num_dpus=2, num_tasklets=tasklets)
    np.testing.assert_array_equal(prefix, np.cumsum(x.reshape(3, tasklets), axis=1).ravel())


@pytest.mark.parametrize("tasklets", [1, 4])
def test_mem_alloc_in_a_c_function_runs_on_the_stand_ins_as_on_the_model(tmp_path, tasklets):
    x = np.random.default_rng(tasklets).integers(-1000, 1000, 3 * 4, dtype=np.int64)
    export_and_run(tmp_path / "alloc", mem_alloc_kernel, (x, np.zeros_like(x), 7, 64), {"TASKLETS": tasklets}, (3,),
                   dpus=2, tasklets=tasklets)


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
