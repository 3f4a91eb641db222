"""fl.call of raw DPU functions in UPMEM C from Triton kernels on the `dpu`
backend (edsl.backend.convert.c_calls): results against NumPy at several
tasklets and DPUs, the same bytes as the C function run alone, faults at the
C line, races between tasklets in the C code at their lines, and clear
errors for what the model does not run yet."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st

import edsl
from edsl import fl
from edsl.backend import last_report
from edsl.target.dpu import dpu_programs
from test_c_functions import c_function, line_of


axpy = c_function("kernel_calls.c", "axpy")
tile_sum = c_function("kernel_calls.c", "tile_sum")
scribble = c_function("kernel_calls.c", "scribble")
read_words = c_function("kernel_calls.c", "read_words")
show = c_function("kernel_calls.c", "show")
copy_chunks = c_function("copy_chunks.c", "copy_chunks")
count = c_function("with_state.c", "count")


@triton.jit
def axpy_kernel(x_ptr, y_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = tl.load(y_ptr + offs, mask=offs < n, other=0.0)
    y = fl.call(axpy, [y], [x, a, BLOCK])
    tl.store(y_ptr + offs, y, mask=offs < n)


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 300), block=st.sampled_from([8, 32, 64]), tasklets=st.sampled_from([1, 3, 16]),
       dpus=st.sampled_from([1, 4]), a=st.floats(-4, 4, width=32), seed=st.integers(0, 2 ** 32 - 1))
def test_a_tile_function_against_numpy(n, block, tasklets, dpus, a, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    want = y + np.float32(a) * x
    axpy_kernel[(triton.cdiv(n, block),)](x, y, a, n, BLOCK=block, num_tasklets=tasklets, num_dpus=dpus)
    np.testing.assert_array_equal(y, want)


@triton.jit
def sum_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, TASKLETS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    total = tl.zeros([1], dtype=tl.int64)
    partial = tl.zeros([TASKLETS], dtype=tl.int64)
    total = fl.call(tile_sum, [total, partial, x, BLOCK], output_indices=[0])
    tl.store(out_ptr + tl.program_id(0) + tl.arange(0, 1), total)


@settings(max_examples=8, deadline=None)
@given(programs=st.integers(1, 6), tasklets=st.sampled_from([1, 2, 16]), seed=st.integers(0, 2 ** 32 - 1))
def test_tasklets_meet_at_a_barrier_of_the_c_function(programs, tasklets, seed):
    """The one-list form with output_indices; a barrier inside the function."""
    x = np.random.default_rng(seed).integers(-2 ** 31, 2 ** 31, programs * 64, dtype=np.int32)
    out = np.zeros(programs, np.int64)
    sum_kernel[(programs,)](x, out, BLOCK=64, TASKLETS=tasklets, num_tasklets=tasklets)
    np.testing.assert_array_equal(out, x.reshape(programs, 64).astype(np.int64).sum(axis=1))


@triton.jit
def scribble_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    fl.call(scribble, [], [x, BLOCK])
    tl.store(y_ptr + offs, x + 1)


def test_an_input_tile_the_function_writes_stays_as_it_was():
    x = np.arange(16, dtype=np.int32)
    y = np.zeros(16, np.int32)
    scribble_kernel[(1,)](x, y, BLOCK=16, num_tasklets=4)
    np.testing.assert_array_equal(y, x + 1)


@triton.jit
def copy_kernel(dst_ptr, src_ptr, nbytes, chunk, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    fl.call(copy_chunks, [dst_ptr + start, src_ptr + start, tl.minimum(nbytes - start * 8, BLOCK * 8), chunk, 0])


@settings(max_examples=10, deadline=None)
@given(eights=st.integers(1, 90), chunk=st.sampled_from([8, 64, 12, 4096]),
       tasklets=st.sampled_from([1, 3, 16]), seed=st.integers(0, 2 ** 32 - 1))
def test_mram_pointers_copy_as_the_function_run_alone(eights, chunk, tasklets, seed):
    """The same bytes, or the same DMA-rule error at the same line, as `f.run`
    (the copies stay within the arrays: blocks of 1024 bytes, ends on 64)."""
    words = 8 * eights
    src = np.random.default_rng(seed).integers(-2 ** 62, 2 ** 62, words, dtype=np.int64)
    block = 128
    outcomes = []
    for run in ("kernel", "alone"):
        dst = np.zeros(words, np.int64)
        try:
            if run == "kernel":
                copy_kernel[(triton.cdiv(words, block),)](dst, src, words * 8, chunk, BLOCK=block,
                                                          num_tasklets=tasklets, num_dpus=2)
            else:
                for start in range(0, words, block):
                    n = min(words - start, block)
                    copy_chunks.run(dst[start:start + n], src[start:start + n], n * 8, chunk, 0, tasklets=tasklets)
            outcomes.append(("ok", dst.tobytes()))
        except edsl.DpuError as err:
            outcomes.append(("error", err.loc.lineno, "breaks the DMA rules" in str(err)))
    assert outcomes[0] == outcomes[1]
    if outcomes[0][0] == "error":
        assert outcomes[0] == ("error", line_of("copy_chunks.c", "read"), True)
    else:
        assert outcomes[0][1] == src.tobytes()


@triton.jit
def two_functions_kernel(x_ptr, y_ptr, m_ptr, words, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    y = fl.call(axpy, [y], [x, 2.0, BLOCK])
    tl.store(y_ptr + offs, y)
    first = tl.zeros([1], dtype=tl.int64)
    first = fl.call(read_words, [first], [m_ptr, words])
    tl.store(m_ptr + tl.arange(0, 1), first)


def test_a_fault_is_reported_at_the_line_of_its_own_c_function():
    """Two C functions in one kernel: each has its own site codes, so the
    fault in the second names its file and line, and the first's result stands."""
    x = np.ones(16, np.float32)
    y = np.zeros(16, np.float32)
    m = np.arange(600, dtype=np.int64)
    two_functions_kernel[(1,)](x, y, m, 3, BLOCK=16, num_tasklets=2)
    np.testing.assert_array_equal(y, 2 * x)
    with pytest.raises(edsl.DpuError, match=r"mram_read breaks the DMA rules: .*4800 .*2048") as err:
        two_functions_kernel[(1,)](x, y, m, 600, BLOCK=16, num_tasklets=2)
    assert os.path.basename(err.value.loc.filename) == "kernel_calls.c"
    assert err.value.loc.lineno == line_of("kernel_calls.c", "read-words")


@triton.jit
def show_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))
    fl.call(show, [], [x])


def test_printf_of_the_c_function_prints_once_per_program(capfd):
    show_kernel[(3,)](np.arange(12, dtype=np.int32), BLOCK=4, num_tasklets=4)
    lines = sorted(line for line in capfd.readouterr().out.splitlines() if line.startswith("first element"))
    assert lines == ["first element 0", "first element 4", "first element 8"]


@triton.jit
def count_kernel(out_ptr):
    t = tl.zeros([1], dtype=tl.int32)
    t = fl.call(count, [t], [])
    tl.store(out_ptr + tl.program_id(0) + tl.arange(0, 1), t)


@pytest.mark.parametrize("grid,dpus", [(1, 1), (7, 1), (7, 3), (5, 8)])
def test_each_dpu_has_the_c_files_variables_of_its_own(grid, dpus):
    """A DPU's programs run in turn on its WRAM, the C file's variable among
    it: each DPU counts its own programs from the variable's first value, in
    every launch."""
    for _ in range(2):
        out = np.zeros(grid, np.int32)
        count_kernel[(grid,)](out, num_dpus=dpus)
        want = np.zeros(grid, np.int32)
        for d in range(dpus):
            for k, p in enumerate(dpu_programs(d, grid, dpus), 1):
                want[p] = k
        np.testing.assert_array_equal(out, want)


mutex_counter = c_function("sdk_mutex.c", "mutex_counter")


@triton.jit
def mutex_counter_kernel(out_ptr, reps):
    t = tl.zeros([1], dtype=tl.int32)
    t = fl.call(mutex_counter, [t], [reps])
    tl.store(out_ptr + tl.program_id(0) + tl.arange(0, 1), t)


@pytest.mark.parametrize("tasklets,dpus", [(1, 2), (4, 1), (16, 3)])
def test_a_mutex_and_a_counter_of_the_c_file_in_a_kernel(tasklets, dpus):
    """The tasklets of each DPU add to its own counter under its own mutex
    (mutex.h's state, a variable of the C file too), program after program."""
    grid, reps = 5, 3
    out = np.zeros(grid, np.int32)
    mutex_counter_kernel[(grid,)](out, reps, num_tasklets=tasklets, num_dpus=dpus)
    want = np.zeros(grid, np.int32)
    for d in range(dpus):
        for k, p in enumerate(dpu_programs(d, grid, dpus), 1):
            want[p] = k * reps * tasklets * (tasklets + 1) // 2
    np.testing.assert_array_equal(out, want)


def _counter_with_table(words: int):
    return c_function("", "touch", f"#include <defs.h>\nstatic int32_t table[{words}];\n"
                                   "void touch(int32_t *t) {\n    table[me()] += 1;\n    t[0] = table[me()];\n}\n")


small_table, large_table = _counter_with_table(8), _counter_with_table(14000)


@triton.jit
def table_kernel(x_ptr, out_ptr, N: tl.constexpr, LARGE: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    t = tl.zeros([1], dtype=tl.int32)
    if LARGE:
        t = fl.call(large_table, [t], [])
    else:
        t = fl.call(small_table, [t], [])
    tl.store(out_ptr + tl.arange(0, N), x + t)


def test_the_c_files_variables_take_the_dpus_wram_from_the_kernels_tiles():
    """56,000 bytes of a C table leave a 16 KiB tile no room in WRAM: it is kept in MRAM, as it would have to be
    on a DPU; beside a small table it stays in WRAM."""
    x = np.arange(4096, dtype=np.int32)
    for large, spilled in ((False, 0), (True, 4 * 4096)):
        out = np.zeros_like(x)
        table_kernel[(1,)](x, out, N=4096, LARGE=large)
        np.testing.assert_array_equal(out, x + 1)
        assert last_report().spill_bytes == spilled


MEM_ALLOC_C = """#include <alloc.h>
#include <defs.h>
#include <barrier.h>
BARRIER_INIT(all, NR_TASKLETS);
/* Each call: a buffer per tasklet from the heap the kernel leaves, reset first. */
void scaled(int64_t *t, int64_t k, int64_t each) {
    if (me() == 0)
        mem_reset();
    barrier_wait(&all);
    int64_t *w = mem_alloc((size_t)each);                       // <alloc>
    for (int i = 0; i < 4; i++)
        w[i] = t[i] * k;
    barrier_wait(&all);
    if (me() == 0)
        for (int i = 0; i < 4; i++)
            t[i] = w[i];
}
"""


scaled = c_function("", "scaled", MEM_ALLOC_C)


@triton.jit
def mem_alloc_kernel(x_ptr, out_ptr, k, each, TASKLETS: tl.constexpr):
    t = tl.load(x_ptr + tl.program_id(0) * 4 + tl.arange(0, 4))
    t = fl.call(scaled, [t], [k, each])
    tl.store(out_ptr + tl.program_id(0) * 4 + tl.arange(0, 4), t)


@settings(max_examples=6, deadline=None)
@given(programs=st.integers(1, 5), dpus=st.sampled_from([1, 2, 4]), tasklets=st.sampled_from([1, 3, 16]),
       k=st.integers(-9, 9), seed=st.integers(0, 2 ** 32 - 1))
def test_mem_alloc_in_a_kernels_c_function_against_numpy(programs, dpus, tasklets, k, seed):
    """The heap is what the kernel's buffers and the C variables leave of WRAM."""
    x = np.random.default_rng(seed).integers(-1000, 1000, programs * 4, dtype=np.int64)
    out = np.zeros_like(x)
    mem_alloc_kernel[(programs,)](x, out, k, 64, TASKLETS=tasklets, num_dpus=dpus, num_tasklets=tasklets)
    np.testing.assert_array_equal(out, x * k)


def test_mem_alloc_past_the_heap_a_kernel_leaves_is_an_error_at_its_line():
    x = np.zeros(4, np.int64)
    with pytest.raises(edsl.DpuError, match=r"mem_alloc\(40000\): the DPU's WRAM heap has \d+ of its \d+ bytes "
                                            r"left") as err:
        mem_alloc_kernel[(1,)](x, x, 1, 40000, TASKLETS=2, num_tasklets=2)
    line = next(k for k, text in enumerate(MEM_ALLOC_C.split("\n"), 1) if text.endswith("// <alloc>"))
    assert err.value.loc.lineno == line


running = c_function("kernel_mram_variables.c", "running")
staged_sum = c_function("kernel_mram_variables.c", "staged_sum")
past_the_variable = c_function("kernel_mram_variables.c", "past_the_variable")
into_the_heap = c_function("kernel_mram_variables.c", "into_the_heap")


@triton.jit
def running_kernel(x_ptr, out_ptr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * 8 + tl.arange(0, 8))
    o = tl.zeros([1], dtype=tl.int64)
    o = fl.call(running, [o], [x])
    tl.store(out_ptr + pid + tl.arange(0, 1), o)


def running_totals(x: np.ndarray, programs: int, dpus: int) -> np.ndarray:
    """What running_kernel gives: each DPU's total runs over its own programs, from 100."""
    want = np.zeros(programs, np.int64)
    for d in range(dpus):
        total = 100
        for p in dpu_programs(d, programs, dpus):
            total += int(x[p * 8:(p + 1) * 8].sum())
            want[p] = total
    return want


@settings(max_examples=8, deadline=None)
@given(programs=st.integers(1, 9), dpus=st.sampled_from([1, 2, 4]), tasklets=st.sampled_from([1, 3, 16]),
       seed=st.integers(0, 2 ** 32 - 1))
def test_each_dpu_has_the_c_functions_variables_in_mram_of_its_own(programs, dpus, tasklets, seed):
    """`__mram` starts with its first value on every DPU at each launch and
    keeps its value from one program of the DPU to the next."""
    x = np.random.default_rng(seed).integers(-1000, 1000, programs * 8, dtype=np.int64)
    out = np.zeros(programs, np.int64)
    for _ in range(2):                       # (a second launch starts again from the first values)
        running_kernel[(programs,)](x, out, num_dpus=dpus, num_tasklets=tasklets)
        np.testing.assert_array_equal(out, running_totals(x, programs, dpus))


@triton.jit
def staged_kernel(x_ptr, out_ptr, TASKLETS: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * TASKLETS * 8 + tl.arange(0, TASKLETS * 8))
    sums = tl.zeros([TASKLETS], dtype=tl.int64)
    sums = fl.call(staged_sum, [sums, x], output_indices=[0])
    tl.store(out_ptr + pid * TASKLETS + tl.arange(0, TASKLETS), sums)


@settings(max_examples=8, deadline=None)
@given(programs=st.integers(1, 5), dpus=st.sampled_from([1, 3]), tasklets=st.sampled_from([1, 2, 16]),
       seed=st.integers(0, 2 ** 32 - 1))
def test_tasklets_share_a_variable_in_mram_through_a_barrier(programs, dpus, tasklets, seed):
    x = np.random.default_rng(seed).integers(-2 ** 40, 2 ** 40, programs * tasklets * 8, dtype=np.int64)
    out = np.zeros(programs * tasklets, np.int64)
    staged_kernel[(programs,)](x, out, TASKLETS=tasklets, num_dpus=dpus, num_tasklets=tasklets)
    np.testing.assert_array_equal(out, np.repeat(x.reshape(programs, -1).sum(axis=1), tasklets))


touch_ends = c_function("kernel_mram_variables.c", "touch_ends")


@triton.jit
def touch_ends_kernel(a_ptr, out_ptr, n):
    o = tl.zeros([1], dtype=tl.int64)
    o = fl.call(touch_ends, [o], [a_ptr, n])
    tl.store(out_ptr + tl.arange(0, 1), o)


def test_the_variables_in_mram_count_with_the_arrays_parts_against_a_dpus_mram():
    """(A kernel calling C functions receives its whole arrays, one image: 16 MiB
    of `a` and `out` with guard bytes, beside 48 MiB and some bytes of variables.)"""
    a = np.arange(1 << 21, dtype=np.int64)
    out = np.zeros(1, np.int64)
    touch_ends_kernel[(1,)](a[:-256], out, a.size - 256)
    assert out[0] == a.size - 257
    with pytest.raises(edsl.DpuError, match=r"DPU 0 \(programs 0 to 0\) touches 167772\d\d bytes of the arrays "
                                            r"\(167772\d\d of 'a_ptr' and 'out_ptr'\) and 5033\d{4} bytes of its C "
                                            r"functions' variables in MRAM: more than the 67108864 bytes of its "
                                            r"MRAM. A kernel that calls EDSL or C functions receives its whole "
                                            r"arrays on every DPU"):
        touch_ends_kernel[(1,)](a, out, a.size)


keep = c_function("kernel_mram_variables.c", "keep")
kept = c_function("kernel_mram_variables.c", "kept")


@triton.jit
def keep_kernel(x_ptr, out_ptr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * 2 + tl.arange(0, 2))
    o = tl.zeros([2], dtype=tl.int64)
    fl.call(keep, [o], [x])
    o = fl.call(kept, [o], [])
    tl.store(out_ptr + pid * 2 + tl.arange(0, 2), o)


@settings(max_examples=6, deadline=None)
@given(programs=st.integers(1, 6), dpus=st.sampled_from([1, 2]), tasklets=st.sampled_from([1, 4]),
       seed=st.integers(0, 2 ** 32 - 1))
def test_two_functions_of_one_source_share_its_variables(programs, dpus, tasklets, seed):
    """One module for both (`keep` writes what `kept` reads), not a copy each."""
    x = np.random.default_rng(seed).integers(-2 ** 62, 2 ** 62, programs * 2, dtype=np.int64)
    out = np.zeros_like(x)
    keep_kernel[(programs,)](x, out, num_dpus=dpus, num_tasklets=tasklets)
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("fn, marker, message", [
    (past_the_variable, "past the variable",
     r"mram_read of 16 bytes at MRAM address 0x[0-9a-f]+ is outside the launch's arrays and its C functions' "
     r"variables in MRAM"),
    (into_the_heap, "heap", r"one into DPU_MRAM_HEAP_POINTER's heap, which holds a kernel's arrays")])
def test_a_transfer_outside_the_variables_and_arrays_is_an_error_at_its_line(fn, marker, message):
    @triton.jit
    def outside_kernel(out_ptr):
        out = fl.call(fn, [tl.zeros([1], dtype=tl.int64)], [])
        tl.store(out_ptr + tl.arange(0, 1), out)
    with pytest.raises(edsl.DpuError, match=message) as err:
        outside_kernel[(1,)](np.zeros(1, np.int64))
    assert err.value.loc.lineno == line_of("kernel_mram_variables.c", marker)

@triton.jit
def tile_for_mram_kernel(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    fl.call(copy_chunks, [], [x, x_ptr, 8, 8, 0])


@triton.jit
def pointer_for_wram_kernel(x_ptr):
    fl.call(axpy, [], [x_ptr, x_ptr, 1.0, 8])


@triton.jit
def too_few_kernel(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    fl.call(axpy, [x], [x])


@triton.jit
def pointer_out_kernel(x_ptr):
    fl.call(copy_chunks, [x_ptr], [x_ptr, 8, 8, 0])


@pytest.mark.parametrize("kernel, message", [
    (tile_for_mram_kernel, r"operand 0 \(a tensor of fp32 with shape \[8\]\) passes as a pointer to its elements "
                           r"in WRAM; parameter 0 of copy_chunks\(ptr addrspace\(255\)"),
    (pointer_for_wram_kernel, r"operand 0 is a pointer to the DPU's MRAM; parameter 0 of axpy\(ptr, ptr, float, "
                              r"i32\) is ptr \(declare it a __mram_ptr pointer\)"),
    (too_few_kernel, r"2 operands for the 4 parameters of axpy\(ptr, ptr, float, i32\)"),
    (pointer_out_kernel, r"out 0 is a scalar pointer<fp32>; the outs are tiles the function updates \(what it "
                        r"writes through a pointer is in memory"),
])
def test_operands_are_checked_against_the_c_parameters(kernel, message):
    with pytest.raises(Exception, match=message):
        kernel[(1,)](np.zeros(8, np.float32))


def test_triton_interpreter_runs_the_c_function_on_the_tiles(tmp_path):
    """Under TRITON_INTERPRET=1 the call runs the function on the tiles' data."""
    pytest.importorskip("torch", reason="Triton's interpreter (TRITON_INTERPRET=1) needs torch")
    from interpreter_probe import interpreter_problem
    if interpreter_problem():
        pytest.skip(f"Triton's interpreter does not run here: {interpreter_problem()}")
    script = tmp_path / "interpret.py"
    script.write_text(textwrap.dedent(f'''
        import sys, torch
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import edsl.backend; edsl.backend.activate()
        from test_c_calls import axpy_kernel
        x = torch.arange(20, dtype=torch.float32); y = torch.ones(20)
        axpy_kernel[(3,)](x, y, 0.5, 20, BLOCK=8)
        assert torch.equal(y, 1 + 0.5 * torch.arange(20, dtype=torch.float32)), y
        print("interpreted")
    '''))
    env = dict(os.environ, TRITON_INTERPRET="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(__file__)), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "interpreted" in done.stdout, done.stderr[-3000:]


def _other_axpy():
    def axpy():
        """Another function named axpy."""
    return edsl.dialect(name="c", source="void axpy(float *y, float a) { y[0] = a; }")(axpy)


@triton.jit
def same_names_kernel(x_ptr, y_ptr, OTHER: tl.constexpr):
    offs = tl.arange(0, 8)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    y = fl.call(axpy, [y], [x, 2.0, 8])
    y = fl.call(OTHER, [y], [1.0])
    tl.store(y_ptr + offs, y)


def test_two_c_functions_of_one_name_are_refused_at_the_second_call():
    with pytest.raises(edsl.CompileError, match="another C function named 'axpy'") as err:
        same_names_kernel[(1,)](np.zeros(8, np.float32), np.zeros(8, np.float32), OTHER=_other_axpy())
    assert err.value.loc.filename == __file__


racy_sum = c_function("kernel_calls.c", "racy_sum")


@triton.jit
def racy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    total = fl.call(racy_sum, [tl.zeros([1], dtype=tl.int64)], [x, BLOCK])
    tl.store(out_ptr + tl.arange(0, 1), total)


@pytest.mark.parametrize("alone", [True, False])
def test_a_race_in_the_c_function_is_reported_at_its_line(alone):
    """Tasklets adding into one element with no barrier: on UPMEM their
    loads and stores interleave."""
    x = np.arange(64, dtype=np.int32)
    total = np.zeros(1, np.int64)
    with pytest.raises(edsl.DpuError, match=r"tasklets \d+ and \d+ race on .*separate the accesses with "
                                            r"barrier_wait") as err:
        if alone:
            racy_sum.run(total, x, 64, tasklets=4, race_check=True)
        else:
            racy_kernel[(1,)](x, total, BLOCK=64, num_tasklets=4, race_check=True)
    assert os.path.basename(err.value.loc.filename) == "kernel_calls.c"
    assert err.value.loc.lineno == line_of("kernel_calls.c", "racy")
    total[0] = 0
    racy_sum.run(total, x, 64, tasklets=1, race_check=True)       # (one tasklet: no race)
    assert total[0] == x.sum()


mutex_peek = c_function("sdk_mutex.c", "mutex_peek")


@triton.jit
def mutex_peek_kernel(out_ptr):
    t = tl.zeros([1], dtype=tl.int32)
    t = fl.call(mutex_peek, [t], [])
    tl.store(out_ptr + tl.arange(0, 1), t)


@pytest.mark.parametrize("tasklets", [2, 16])
def test_the_race_check_of_a_kernel_knows_the_order_of_its_c_functions_mutexes(tasklets):
    """A counter under a mutex is no race; a read of it outside the mutex is,
    at both lines, as for the function run alone."""
    out = np.zeros(3, np.int32)
    mutex_counter_kernel[(3,)](out, 2, num_tasklets=tasklets, num_dpus=2, race_check=True)
    with pytest.raises(edsl.DpuError) as err:
        mutex_peek_kernel[(1,)](out, num_tasklets=tasklets, race_check=True)
    assert f"writes it at line {line_of('sdk_mutex.c', 'under lock')}" in err.value.message, err.value.message
    assert f"reads it at line {line_of('sdk_mutex.c', 'peek')}" in err.value.message, err.value.message
    mutex_peek_kernel[(1,)](out, num_tasklets=tasklets, race_check=False)


read_unaligned = c_function("sdk_mram_unaligned.c", "read_unaligned")
write_unaligned = c_function("sdk_mram_unaligned.c", "write_unaligned")


@triton.jit
def unaligned_kernel(m_ptr, v_ptr, out_ptr, OFF: tl.constexpr, N: tl.constexpr, S: tl.constexpr):
    """Each program writes N bytes of `m` from byte pid * S + OFF, unaligned, and reads them back."""
    pid = tl.program_id(0)
    v = tl.load(v_ptr + pid * N + tl.arange(0, N))
    fl.call(write_unaligned, [], [m_ptr, v, pid * S + OFF, N, 0])
    o = tl.zeros([N], dtype=tl.uint8)
    o = fl.call(read_unaligned, [o], [m_ptr, pid * S + OFF, N])
    tl.store(out_ptr + pid * N + tl.arange(0, N), o)


def unaligned_want(m: np.ndarray, v: np.ndarray, programs: int, off: int, n: int, s: int) -> np.ndarray:
    want = m.copy()
    for p in range(programs):
        want[p * s + off:p * s + off + n] = v[p * n:(p + 1) * n]
    return want


@settings(max_examples=8, deadline=None)
@given(programs=st.integers(1, 6), dpus=st.sampled_from([1, 2, 3]), off=st.integers(0, 7),
       seed=st.integers(0, 2 ** 32 - 1))
def test_unaligned_copies_in_a_kernels_c_function_against_numpy(programs, dpus, off, seed):
    """Programs' ranges in blocks of their own: the bytes each keeps around
    its range are its own, so DPUs merge."""
    rng = np.random.default_rng(seed)
    n, s = 16, 32
    m = rng.integers(0, 256, programs * s + 8, dtype=np.uint8)
    v = rng.integers(0, 256, programs * n, dtype=np.uint8)
    out = np.zeros(programs * n, np.uint8)
    want = unaligned_want(m, v, programs, off, n, s)
    unaligned_kernel[(programs,)](m, v, out, OFF=off, N=n, S=s, num_dpus=dpus, num_tasklets=2)
    np.testing.assert_array_equal(m, want)
    np.testing.assert_array_equal(out, v)


TOTAL_C = "#include <defs.h>\n#include <stdint.h>\nint64_t total;\nvoid {name}(int64_t *t) {{ total += t[0]; t[0] = total; }}\n"
add_once = c_function("", "add_once", TOTAL_C.format(name="add_once"))
add_again = c_function("", "add_again", TOTAL_C.format(name="add_again"))


@triton.jit
def two_sources_kernel(out_ptr):
    t = tl.full([1], 1, dtype=tl.int64)
    t = fl.call(add_once, [t], [])
    t = fl.call(add_again, [t], [])                  # <second source>
    tl.store(out_ptr + tl.arange(0, 1), t)


def test_a_name_two_c_sources_define_is_refused_as_their_link_would_fail():
    """Each source its own module on the model, but one program on a DPU:
    `total` defined twice does not link there."""
    with pytest.raises(edsl.CompileError, match=r"fl.call of add_again: its source .*add_again.c and .*add_once.c "
                                                r"\(another C function the kernel calls\) both define 'total'") as err:
        two_sources_kernel[(1,)](np.zeros(1, np.int64))
    line = next(k for k, text in enumerate(open(__file__).read().split("\n"), 1) if text.endswith("# <second source>"))
    assert err.value.loc.lineno == line
