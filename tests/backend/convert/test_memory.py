"""Loads and stores (contiguous DMA, strided element accesses, scalars), atomics across
programs, the launch report and the argument forms."""
import numpy as np
import pytest
import triton
import triton.language as tl
from launch_strategies import strategies
from hypothesis import given, settings, strategies as st

import edsl.backend
from edsl.target.dpu import DMA_MAX_BYTES, align_up, dpu_programs
from edsl.base.errors import ArgumentError, DpuError
from source_lines import line_of
import family_ir

DPUS, TASKLETS = strategies()


@triton.jit
def const_copy_kernel(x_ptr: tl.const, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x + tl.load(x_ptr), mask=offs < n)


def test_const_pointer_arguments_are_read():
    x = np.arange(1, 41, dtype=np.float32)
    out = np.zeros_like(x)
    const_copy_kernel[(3,)](x, out, 40, BLOCK=16)
    np.testing.assert_array_equal(out, x + 1)


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m, other=7), mask=m)


@settings(max_examples=16, deadline=None)
@given(dtype=st.sampled_from([np.int8, np.int16, np.float32, np.float64, np.bool_]),
       n=st.integers(0, 1200), start=st.integers(0, 7), block=st.sampled_from([16, 128, 1024]),
       dpus=DPUS, tasklets=TASKLETS)
def test_copy_unaligned_views(dtype, n, start, block, dpus, tasklets):
    """Views starting at any element offset, sizes not a multiple of 8 bytes: the bytes
    around the stored span keep their values."""
    base = (np.arange(n + 16) % 5).astype(dtype)
    out_base = np.full(n + 16, 1, dtype=dtype)
    x, out = base[start:start + n], out_base[start:start + n]
    copy_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block, num_dpus=dpus, num_tasklets=tasklets)
    expect = np.full(n + 16, 1, dtype=dtype)
    expect[start:start + n] = base[start:start + n]
    np.testing.assert_array_equal(out_base, expect)
    if n:
        r = edsl.backend.last_report()
        assert r.dma_reads and r.dma_read_bytes <= r.dma_reads * DMA_MAX_BYTES
        assert r.dma_write_bytes % 8 == 0 and r.dma_read_bytes % 8 == 0


@triton.jit
def column_kernel(x_ptr, out_ptr, R, C, BR: tl.constexpr):
    """Reads column `program_id` of a row-major matrix: a strided (element) access."""
    col = tl.program_id(0)
    r = tl.arange(0, BR)
    v = tl.load(x_ptr + r * C + col, mask=r < R, other=0.0)
    tl.store(out_ptr + col * R + r, v * 2, mask=r < R)


@settings(max_examples=8, deadline=None)
@given(rows=st.integers(1, 20), cols=st.integers(1, 9), dpus=DPUS, tasklets=TASKLETS)
def test_strided_access(rows, cols, dpus, tasklets):
    x = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    out = np.zeros((cols, rows), np.float32)
    column_kernel[(cols,)](x, out, rows, cols, BR=32, num_dpus=dpus, num_tasklets=tasklets)
    np.testing.assert_array_equal(out, 2 * x.T)
    r = edsl.backend.last_report()
    if cols > 1:      # element accesses: one 8-byte transfer each
        assert r.dma_reads >= rows * cols


@triton.jit
def scalar_kernel(x_ptr, out_ptr, flag):
    v = tl.load(x_ptr + 3)
    if flag > 0:
        v = v + 1
    tl.store(out_ptr + tl.program_id(0), v)


@pytest.mark.parametrize("tasklets", [1, 16])
def test_scalar_load_store_and_if(tasklets):
    x = np.arange(5, dtype=np.int64)
    out = np.zeros(4, np.int64)
    scalar_kernel[(4,)](x, out, 1, num_dpus=3, num_tasklets=tasklets)
    np.testing.assert_array_equal(out, [4, 4, 4, 4])
    scalar_kernel[(2,)](x, out, 0, num_dpus=3, num_tasklets=tasklets)
    np.testing.assert_array_equal(out, [3, 3, 4, 4])


@triton.jit
def atomic_kernel(x_ptr, sum_ptr, max_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    tl.atomic_add(sum_ptr, tl.sum(x, axis=0))
    tl.atomic_max(max_ptr, tl.max(tl.where(m, x, -1), axis=0))
    tl.atomic_add(hist_ptr + (x % 4), 1, mask=m)


@settings(max_examples=8, deadline=None)
@given(n=st.integers(1, 300), dpus=DPUS, tasklets=TASKLETS, seed=st.integers(0, 2**16))
def test_atomics_across_programs(n, dpus, tasklets, seed):
    x = np.random.default_rng(seed).integers(0, 1000, n).astype(np.int32)
    s, mx, hist = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(4, np.int32)
    atomic_kernel[(triton.cdiv(n, 32),)](x, s, mx, hist, n, BLOCK=32, num_dpus=dpus,
                                         num_tasklets=tasklets)
    assert s[0] == x.sum() and mx[0] == x.max()
    np.testing.assert_array_equal(hist, np.bincount(x % 4, minlength=4))


def test_view_type_and_bare_arrays_agree():
    x = np.arange(100, dtype=np.float32)
    out1, out2 = np.zeros_like(x), np.zeros_like(x)
    copy_kernel[(1,)](x, out1, 100, BLOCK=128)
    copy_kernel[(1,)](edsl.backend.array(x), edsl.backend.array(out2), 100, BLOCK=128)
    np.testing.assert_array_equal(out1, x)
    np.testing.assert_array_equal(out2, x)
    assert isinstance(edsl.backend.array(x), np.ndarray)
    assert edsl.backend.array(x).data_ptr() == x.ctypes.data


def test_report_fields():
    x = np.ones(5000, np.float32)
    out = np.zeros_like(x)
    compiled = copy_kernel[(5,)](x, out, 5000, BLOCK=1024, num_dpus=4, num_tasklets=16)
    r = compiled.run.report
    assert r is edsl.backend.last_report()
    assert (r.programs, r.dpus_used, r.num_dpus, r.num_tasklets) == (5, 4, 4, 16)
    assert r.per_dpu_programs == [2, 1, 1, 1]
    # DPU 0 runs programs 0 and 1; each DPU receives its rows of x and out
    assert r.per_dpu_part_bytes == [2 * 2 * 1024 * 4, 2 * 1024 * 4, 2 * 1024 * 4, 2 * 904 * 4]
    assert r.host_to_mram_bytes == 2 * 20000 and r.mram_to_host_bytes == 20000
    assert r.dma_read_bytes == r.dma_write_bytes == 20000
    # 16 tasklets share each block: 64 elements (256 bytes, one transfer) each;
    # the last block (904 elements) has 15 chunks.
    assert r.dma_reads == r.dma_writes == 4 * 16 + 15
    assert r.tasklets_used == 16 and len(r.per_tasklet_dma) == 16
    assert sum(r.per_tasklet_dma) == r.dma_transfers and min(r.per_tasklet_dma) > 0
    one = copy_kernel[(5,)](x, out, 5000, BLOCK=1024, num_dpus=4).run.report
    assert one.dma_reads == 5 * 2 - 1 + 1     # 4 full blocks of 2 transfers, 1 partial of 1
    assert one.tasklets_used == 1 and one.per_tasklet_dma == [one.dma_transfers]
    assert 4096 <= r.wram_bytes <= 64 * 1024
    assert {"ttir", "mlir", "llmlir", "llir", "dpubin"} <= set(compiled.asm)
    assert "__dpu_dma" in compiled.asm["mlir"] and "llvm.func" in compiled.asm["llmlir"]


def test_bad_argument_types():
    with pytest.raises(ArgumentError, match="num_tasklets must be an integer from 1 to 24") as err:
        copy_kernel[(1,)](np.zeros(4), np.zeros(4), 4, BLOCK=16, num_tasklets=25)
    assert err.value.loc is not None and err.value.loc.filename == __file__     # the launch's line
    with pytest.raises(TypeError, match="list"):
        copy_kernel[(1,)]([1.0, 2.0], np.zeros(4), 4, BLOCK=16)


def test_num_warps_is_taken_as_gpus_take_it():
    """A GPU option with no meaning on a DPU: any power of 2 up to the 1024
    threads of a GPU block runs (warps of one thread); others fail as on
    Triton's GPU backends."""
    x, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    for warps in (1, 4, 32, 128, 1024):
        copy_kernel[(1,)](x, out, 8, BLOCK=8, num_warps=warps)
        np.testing.assert_array_equal(out, x)
    with pytest.raises(AssertionError, match="num_warps must be a power of 2, not 3"):
        copy_kernel[(1,)](x, out, 8, BLOCK=8, num_warps=3)
    with pytest.raises(triton.runtime.errors.OutOfResources, match="threads, Required: 2048, Hardware limit: 1024"):
        copy_kernel[(1,)](x, out, 8, BLOCK=8, num_warps=2048)


def test_strided_view_is_a_pointer_to_its_first_element():
    """As on a GPU, a pointer argument is the view's data pointer; the kernel's
    offsets address the memory under it (here: the base array's first row)."""
    base = np.arange(16, dtype=np.float64).reshape(4, 4)
    out = np.zeros(4)
    copy_kernel[(1,)](base[:, 0], out, 4, BLOCK=16)
    np.testing.assert_array_equal(out, base[0])


def test_read_only_array_stored_through_is_refused_before_launch():
    out = np.zeros(4)
    out.flags.writeable = False
    with pytest.raises(ArgumentError, match="'out_ptr' is a read-only array") as err:
        copy_kernel[(1,)](np.ones(4), out, 4, BLOCK=16)
    assert err.value.loc is not None and err.value.loc.filename == __file__
    np.testing.assert_array_equal(out, 0)
    x = np.ones(4)
    x.flags.writeable = False                   # read only, and only read: fine
    out2 = np.zeros(4)
    copy_kernel[(1,)](x, out2, 4, BLOCK=16)
    np.testing.assert_array_equal(out2, 1)


@pytest.mark.parametrize("grid", [(2 ** 31 + 5,), (2 ** 32 + 3,), (1, 65536), (1, 1, 70000), (-1,)])
def test_grids_beyond_tritons_limits_are_refused(grid):
    with pytest.raises(ArgumentError, match="grid size") as err:
        copy_kernel[grid](np.ones(4), np.zeros(4), 4, BLOCK=16)
    assert err.value.loc is not None and err.value.loc.filename == __file__


class _Wrapper:
    """What Triton's own test helper `TensorWrapper` offers: data_ptr(), dtype, shape, stride()."""

    def __init__(self, base, dtype):
        self.base, self.dtype, self.shape = base, dtype, base.shape

    def data_ptr(self):
        return self.base.ctypes.data

    def stride(self, *args):
        return tuple(s // self.base.itemsize for s in self.base.strides)

    def element_size(self):
        return self.base.itemsize


def test_objects_with_data_ptr_are_pointers():
    x = np.arange(4, dtype=np.uint32)
    out = np.zeros(4, dtype=np.uint32)
    copy_kernel[(1,)](_Wrapper(x, triton.language.uint32), _Wrapper(out, triton.language.uint32), 4,
                      BLOCK=16)
    np.testing.assert_array_equal(out, x)


@triton.jit
def pointer_table_kernel(table_ptr, out_ptr, arrays, K, BLOCK: tl.constexpr):
    """Row g of `out` = the sum over k of array g's blocks: a pointer loaded from a table,
    walked with hints on the pointer tensor (as Triton's grouped GEMM tutorial does)."""
    g = tl.program_id(0)
    base = tl.load(table_ptr + g).to(tl.pointer_type(tl.float32))
    ptrs = base + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for k in range(K):
        tl.multiple_of(ptrs, [16])
        acc += tl.load(tl.max_contiguous(tl.multiple_of(ptrs, [16]), [BLOCK]))
        ptrs += BLOCK
    tl.store(out_ptr + g * BLOCK + tl.arange(0, BLOCK), acc)


def test_a_table_of_host_addresses_is_refused_even_into_argument_arrays():
    """Host addresses mean nothing on a DPU, whose MRAM holds the arrays at
    addresses of its own: a table of data_ptr() values is refused at the access
    through it, naming the load of the pointer, though the arrays are passed
    (a tuple of arrays here), as the exported project refuses it. Nothing is
    written."""
    arrays = tuple(np.arange(48, dtype=np.float32) * (k + 1) for k in range(3))
    table = np.array([a.ctypes.data for a in arrays], dtype=np.int64)
    out = np.zeros(3 * 16, np.float32)
    load = line_of(pointer_table_kernel, "tl.load(table_ptr")
    with pytest.raises(DpuError, match=f"its pointer was loaded from memory at line {load} and is not an "
                                       "MRAM address of theirs .*offsets into them, not addresses") as err:
        pointer_table_kernel[(3,)](table, out, arrays, 3, BLOCK=16)
    assert err.value.loc.lineno == line_of(pointer_table_kernel, "acc += tl.load(")
    assert not out.any()


@triton.jit
def offset_table_kernel(table_ptr, x_ptr, out_ptr, K, BLOCK: tl.constexpr):
    """`pointer_table_kernel` with a table of offsets into one array, as a DPU
    can run it."""
    g = tl.program_id(0)
    ptrs = x_ptr + tl.load(table_ptr + g) + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for k in range(K):
        acc += tl.load(tl.max_contiguous(tl.multiple_of(ptrs, [16]), [BLOCK]))
        ptrs += BLOCK
    tl.store(out_ptr + g * BLOCK + tl.arange(0, BLOCK), acc)


@triton.jit
def stored_pointer_kernel(table_ptr, x_ptr, out_ptr, BLOCK: tl.constexpr):
    g = tl.program_id(0)
    tl.store(table_ptr + g, (x_ptr + g * BLOCK).to(tl.int64))
    row = tl.load(table_ptr + g).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + g * BLOCK + offs, tl.load(row + offs) * 2)


@pytest.mark.parametrize("num_tasklets", [1, 4])
def test_a_pointer_the_kernel_stores_is_an_mram_address(num_tasklets):
    """A pointer a kernel computes, stores and loads back is an MRAM address:
    it reaches the array on the model as on a DPU."""
    x = np.arange(64, dtype=np.float32)
    table, out = np.zeros(4, np.int64), np.zeros(64, np.float32)
    stored_pointer_kernel[(4,)](table, x, out, BLOCK=16, num_dpus=2, num_tasklets=num_tasklets)
    np.testing.assert_array_equal(out, 2 * x)
    assert len(set(table.tolist())) == 4 and x.ctypes.data not in table


@pytest.mark.parametrize("num_dpus", [1, 3])
def test_a_table_of_offsets_into_an_argument_array_works(num_dpus):
    x = np.arange(3 * 48, dtype=np.float32)
    table = np.array([96, 0, 48], dtype=np.int64)
    out = np.zeros(3 * 16, np.float32)
    offset_table_kernel[(3,)](table, x, out, 3, BLOCK=16, num_dpus=num_dpus)
    np.testing.assert_array_equal(out.reshape(3, 16), [x[t:t + 48].reshape(3, 16).sum(0) for t in table])


@settings(max_examples=24, deadline=None)
@given(dtype=st.sampled_from([np.int8, np.int16, np.float32, np.float64]), n=st.integers(1, 3000),
       block=st.sampled_from([16, 64, 256]), dpus=st.integers(1, 12), tasklets=TASKLETS)
def test_each_dpu_receives_the_rows_of_its_block_of_programs(dtype, n, block, dpus, tasklets):
    """A DPU's part of an array: the rows its consecutive programs touch, in
    whole 8-byte words; the parts of all DPUs are every byte once."""
    x = (np.arange(n) % 100).astype(dtype)
    out = np.zeros_like(x)
    assert x.ctypes.data % 8 == 0 and out.ctypes.data % 8 == 0
    grid = triton.cdiv(n, block)
    copy_kernel[(grid,)](x, out, n, BLOCK=block, num_dpus=dpus, num_tasklets=tasklets)
    np.testing.assert_array_equal(out, x)
    r = edsl.backend.last_report()
    for d in range(min(dpus, grid)):
        mine = dpu_programs(d, grid, dpus)
        lo, hi = mine.start * block * x.itemsize, min(mine.stop * block, n) * x.itemsize
        want = (lo - lo % 8, min(align_up(hi), x.nbytes))
        assert tuple(r.array_parts["x_ptr"][d]) == tuple(r.array_parts["out_ptr"][d]) == want
    assert r.per_dpu_programs == [len(dpu_programs(d, grid, dpus)) for d in range(min(dpus, grid))]
    # (the DPUs' parts of an array, in whole words, are its words once)
    assert r.host_to_mram_bytes == 2 * r.mram_to_host_bytes == 2 * align_up(x.nbytes)


def test_arrays_over_a_dpus_mram_run_each_dpu_receiving_its_parts():
    """Each DPU receives the parts of the arrays that its block of programs
    touches: arrays over a DPU's 64 MiB run where every DPU's parts fit it; a
    DPU whose parts do not is refused at the launch's line, naming it, its
    programs and its parts, the arrays left as they were."""
    from edsl.target.dpu import MRAM_BYTES
    block = 1 << 12
    x = np.arange(MRAM_BYTES // 4 + 1024, dtype=np.float32)
    out = np.zeros_like(x)
    grid = triton.cdiv(x.size, block)                     # 4097 programs: 2049 and 2048 on 2 DPUs
    part = 2049 * block * 4
    with pytest.raises(DpuError, match=rf"kernel 'copy_kernel': DPU 0 \(programs 0 to 2048\) touches {2 * part} "
                                       rf"bytes of the arrays \({part} of '(x|out)_ptr', {part} of '(x|out)_ptr'\): "
                                       "more than the 67108864 bytes of its MRAM. Each DPU receives the parts "
                                       r".*launch on more DPUs \(num_dpus, or EDSL_NUM_DPUS for launches "
                                       r"that do not say\)") as err:
        copy_kernel[(grid,)](x, out, x.size, BLOCK=block, num_dpus=2)
    assert err.value.loc is not None and err.value.loc.filename == __file__
    assert not out.any()
    copy_kernel[(grid,)](x, out, x.size, BLOCK=block, num_dpus=4)
    np.testing.assert_array_equal(out, x)
    r = edsl.backend.last_report()
    assert r.host_to_mram_bytes == 2 * x.nbytes and r.mram_to_host_bytes == x.nbytes    # (every byte once)
    assert max(r.per_dpu_part_bytes) <= MRAM_BYTES
    for name in ("x_ptr", "out_ptr"):                     # consecutive blocks: consecutive parts
        parts = np.array(r.array_parts[name])
        assert parts[0, 0] == 0 and parts[-1, 1] == x.nbytes and (parts[1:, 0] == parts[:-1, 1]).all()
    copy_kernel[(1,)](x, out, 16, BLOCK=16)               # a few elements of a large array
    assert edsl.backend.last_report().per_dpu_part_bytes == [2 * 16 * 4]


def test_num_dpus_is_bounded_by_the_largest_upmem_system():
    """2,560 DPUs at most, the error at the launch's line; a larger machine
    only where the launch says so (`machine_dpus`)."""
    x, y = np.arange(8, dtype=np.float64), np.zeros(8)
    with pytest.raises(ArgumentError, match="num_dpus=2561 is more DPUs than the machine has: the largest "
                                            "UPMEM system has 2,560") as err:
        copy_kernel[(1,)](x, y, 8, BLOCK=16, num_dpus=2561)
    assert err.value.loc is not None and err.value.loc.filename == __file__
    copy_kernel[(1,)](x, y, 8, BLOCK=16, num_dpus=2561, machine_dpus=4096)
    assert y.tolist() == x.tolist()
    with pytest.raises(ArgumentError, match="machine_dpus=3000 says the machine has no more"):
        copy_kernel[(1,)](x, y, 8, BLOCK=16, num_dpus=4000, machine_dpus=3000)


def test_launches_that_do_not_say_take_dpus_and_tasklets_from_the_environment(monkeypatch):
    """A library's kernels pass no DPU options: EDSL_NUM_DPUS (read at each
    launch) and EDSL_NUM_TASKLETS (when a kernel compiles) give them; a
    launch's own options win."""
    x = np.arange(5 * 64, dtype=np.float32)
    out = np.zeros_like(x)
    monkeypatch.setenv("EDSL_NUM_DPUS", "3")
    monkeypatch.setenv("EDSL_NUM_TASKLETS", "4")
    copy_kernel[(5,)](x, out, x.size, BLOCK=64)
    r = edsl.backend.last_report()
    assert (r.num_dpus, r.per_dpu_programs, r.num_tasklets) == (3, [2, 2, 1], 4)
    monkeypatch.setenv("EDSL_NUM_DPUS", "5")
    copy_kernel[(5,)](x, out, x.size, BLOCK=64)
    assert edsl.backend.last_report().num_dpus == 5
    copy_kernel[(5,)](x, out, x.size, BLOCK=64, num_dpus=2, num_tasklets=2)
    assert (edsl.backend.last_report().num_dpus, edsl.backend.last_report().num_tasklets) == (2, 2)
    np.testing.assert_array_equal(out, x)
    monkeypatch.setenv("EDSL_NUM_DPUS", "0")
    with pytest.raises(ArgumentError, match="EDSL_NUM_DPUS must be an integer from 1 to 2,560, not '0'") as err:
        copy_kernel[(5,)](x, out, x.size, BLOCK=64)
    assert err.value.loc is not None and err.value.loc.filename == __file__


# --- the family's IR on the golden corpus (family_ir) ---------------------------------------

def test_corpus_memory_ir_at_1_and_4_tasklets_and_under_a_wram_limit():
    """Loads and stores are DMA between MRAM and WRAM, each noted for the
    checks across DPUs."""
    assert family_ir.check_family({"tt.load", "tt.store", "tt.atomic_rmw"},
                                  lambda names: ["llvm.call @__dpu_dma(", "llvm.call @__dpu_note("])
