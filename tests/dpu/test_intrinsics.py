"""DPU intrinsics on the host DPU model: tasklets, barriers, MRAM<->WRAM DMA
and the hardware rules (DMA sizes and alignment, the 64 KiB WRAM).

Errors are checked for their class, message and the user's line, which is
found through a marker comment on that line rather than a hard-coded number.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import edsl
from edsl import InOut, Input

with open(__file__) as _f:
    _SOURCE_LINES = _f.read().splitlines()


def line_of(marker: str) -> int:
    """The line number of the one line of this file that ends with `# <marker>`."""
    hits = [n for n, text in enumerate(_SOURCE_LINES, 1) if text.rstrip().endswith(f"# <{marker}>")]
    assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times"
    return hits[0]


# --- tasklets -----------------------------------------------------------------------------

@edsl.dialect
def who_am_i(ids: InOut["memref<?xi32>"], counts: InOut["memref<?xi32>"]):
    t = edsl.tasklet_id()
    ids[t] = t
    counts[t] = edsl.num_tasklets()


@pytest.mark.parametrize("tasklets", [1, 2, 4, 11, 16, 24])
def test_tasklet_id_and_count(tasklets):
    ids = np.full(24, -1, np.int32)
    counts = np.full(24, -1, np.int32)
    stats = who_am_i.run(ids, counts, tasklets=tasklets)
    np.testing.assert_array_equal(ids[:tasklets], np.arange(tasklets))
    np.testing.assert_array_equal(counts[:tasklets], tasklets)
    assert (ids[tasklets:] == -1).all() and (counts[tasklets:] == -1).all()
    assert stats.tasklets == tasklets
    assert who_am_i.last_stats is stats


def test_calling_runs_one_tasklet():
    ids = np.full(24, -1, np.int32)
    counts = np.full(24, -1, np.int32)
    who_am_i(ids, counts)
    assert ids[0] == 0 and counts[0] == 1 and (ids[1:] == -1).all()
    assert who_am_i.last_stats.tasklets == 1


@pytest.mark.parametrize("tasklets", [0, 25])
def test_tasklet_count_out_of_range(tasklets):
    ids = np.zeros(32, np.int32)
    with pytest.raises(edsl.DpuError) as err:
        who_am_i.run(ids, ids, tasklets=tasklets)  # <bad-tasklets>
    assert "1 to 24 tasklets" in err.value.message
    assert err.value.loc is not None and err.value.loc.lineno == line_of("bad-tasklets")


# --- barrier ------------------------------------------------------------------------------

ROUNDS = 50


@edsl.dialect
def pass_the_parcel(out: InOut["memref<?xi32>"]):
    board = edsl.wram_alloc(24, edsl.i32)
    t = edsl.tasklet_id()
    n = edsl.num_tasklets()
    total = 0
    for r in range(ROUNDS):
        board[t] = r * 100 + t
        edsl.barrier()                 # every tasklet has written round r
        total += board[(t + 1) % n]    # read the neighbour's value of round r
        edsl.barrier()                 # every tasklet has read before round r + 1 writes
    out[t] = total


@pytest.mark.parametrize("tasklets", [1, 3, 8, 16])
def test_barrier_orders_phases(tasklets):
    out = np.zeros(tasklets, np.int32)
    pass_the_parcel.run(out, tasklets=tasklets)
    neighbour = (np.arange(tasklets) + 1) % tasklets
    want = sum(r * 100 for r in range(ROUNDS)) + ROUNDS * neighbour
    np.testing.assert_array_equal(out, want)


# --- DMA between MRAM and WRAM ------------------------------------------------------------

CHUNK = 256          # f32 elements per transfer: 1024 bytes
MAX_T = 16


@edsl.dialect
def scale_mram(y: InOut["memref<?xf32, MRAM>"], x: Input["memref<?xf32, MRAM>"], a: Input["f32"]):
    buf = edsl.wram_alloc(MAX_T * CHUNK, edsl.f32)   # one CHUNK-slice per tasklet
    t = edsl.tasklet_id()
    n = x.shape[0]
    mine = t * CHUNK
    for base in range(t * CHUNK, n, edsl.num_tasklets() * CHUNK):
        count = min(CHUNK, n - base)
        edsl.mram_read(x, buf, count * 4, src_offset=base, dst_offset=mine)
        for k in range(count):
            buf[mine + k] = a * buf[mine + k]
        edsl.mram_write(buf, y, count * 4, src_offset=mine, dst_offset=base)


@pytest.mark.parametrize("tasklets", [1, 4, 16])
@given(n=st.integers(0, 3 * CHUNK * 4).map(lambda v: 2 * (v // 2)),  # even: 8-byte sizes
       a=st.floats(-4, 4, width=32))
def test_mram_dma_in_chunks(tasklets, n, a):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = np.full_like(x, np.nan)
    stats = scale_mram.run(y, x, a, tasklets=tasklets)
    np.testing.assert_array_equal(y, np.float32(a) * x)
    transfers = -(-n // CHUNK)
    assert stats.dma_reads == transfers
    assert stats.dma_writes == transfers
    assert stats.dma_bytes == 2 * 4 * n
    assert scale_mram.last_stats is stats


def test_mram_dma_ir():
    assert scale_mram.wram_bytes == MAX_T * CHUNK * 4
    assert "!llvm.ptr<255>" in scale_mram.llvm


@edsl.dialect
def copy_i64(y: InOut["memref<?xi64, MRAM>"], x: Input["memref<?xi64, MRAM>"]):
    buf = edsl.wram_alloc(256, edsl.i64)     # 2048 bytes: the largest transfer
    n = x.shape[0]
    for base in range(0, n, 256):
        m = min(256, n - base)
        edsl.mram_read(x, buf, m * 8, src_offset=base)
        edsl.mram_write(buf, y, m * 8, dst_offset=base)


@given(x=hnp.arrays(np.int64, st.integers(0, 1200)))
def test_mram_dma_largest_transfers(x):
    y = np.zeros_like(x)
    copy_i64(y, x)
    np.testing.assert_array_equal(y, x)
    s = copy_i64.last_stats  # calling keeps the stats of the launch
    assert (s.dma_reads, s.dma_writes, s.dma_bytes) == (-(-x.size // 256),) * 2 + (16 * x.size,)


# --- DMA rule violations: static sizes fail at compile time --------------------------------

@edsl.dialect
def dma_size_not_multiple_of_8(x: Input["memref<?xf32, MRAM>"]):
    buf = edsl.wram_alloc(64, edsl.f32)
    edsl.mram_read(x, buf, 12)  # <static-size-12>


@edsl.dialect
def dma_size_too_large(x: Input["memref<?xf32, MRAM>"]):
    buf = edsl.wram_alloc(1024, edsl.f32)
    edsl.mram_read(x, buf, 2056)  # <static-size-2056>


@edsl.dialect
def dma_write_size_zero(y: InOut["memref<?xf32, MRAM>"]):
    buf = edsl.wram_alloc(64, edsl.f32)
    edsl.mram_write(buf, y, 0)  # <static-size-0>


@pytest.mark.parametrize("fn, marker, size", [
    (dma_size_not_multiple_of_8, "static-size-12", "12"),
    (dma_size_too_large, "static-size-2056", "2056"),
    (dma_write_size_zero, "static-size-0", "size 0"),
])
def test_static_dma_size_fails_at_compile_time(fn, marker, size):
    with pytest.raises(edsl.DpuError) as err:
        fn.mlir
    e = err.value
    assert size in e.message and "multiple of 8" in e.message and "2048" in e.message
    assert e.loc.lineno == line_of(marker)
    assert e.loc.filename == __file__
    assert f":{line_of(marker)}:" in str(e)  # the rendered error quotes the line
    assert "mram_" in str(e)


# --- DMA rule violations: dynamic sizes and offsets fail at run time ------------------------

@edsl.dialect
def dma_dynamic(y: InOut["memref<?xf32, MRAM>"], x: Input["memref<?xf32, MRAM>"], nbytes: Input["i32"],
                src_off: Input["index"], dst_off: Input["index"]):
    buf = edsl.wram_alloc(1024, edsl.f32)
    edsl.mram_read(x, buf, nbytes, src_offset=src_off, dst_offset=dst_off)  # <dyn-read>
    edsl.mram_write(buf, y, nbytes, src_offset=dst_off, dst_offset=src_off)  # <dyn-write>


def _dyn(nbytes, src_off=0, dst_off=0, n=1024, tasklets=1):
    x = np.arange(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    stats = dma_dynamic.run(y, x, nbytes, src_off, dst_off, tasklets=tasklets)
    return x, y, stats


def test_dynamic_dma_within_rules():
    x, y, stats = _dyn(64, src_off=8, dst_off=2)
    np.testing.assert_array_equal(y[8:24], x[8:24])
    assert (stats.dma_reads, stats.dma_writes, stats.dma_bytes) == (1, 1, 128)


@settings(max_examples=40, deadline=None)
@given(words=st.integers(1, 256), data=st.data())
def test_a_transfer_of_any_legal_size_moves_its_bytes_and_no_others(words, data):
    """The model copies a transfer 64 bytes a step, then 32, 16 and 8 as the
    size's bits say: every size the DMA rules allow (8 to 2,048 bytes) moves
    exactly its bytes, both ways."""
    n = 2 * words                                    # (f32 elements: 8-byte words)
    src = data.draw(st.integers(0, 512 - words))     # (within the 1024 elements of x, y and the buffer)
    dst = data.draw(st.integers(0, 512 - words))
    x, y, _ = _dyn(8 * words, src_off=2 * src, dst_off=2 * dst)
    want = np.zeros_like(y)
    want[2 * src:2 * src + n] = x[2 * src:2 * src + n]
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("nbytes, words", [(12, "multiple of 8"), (2056, "2048"), (0, "multiple of 8"),
                                           (-8, "multiple of 8")])
@pytest.mark.parametrize("tasklets", [1, 4])
def test_dynamic_dma_size_fails_at_run_time(nbytes, words, tasklets):
    dma_dynamic.mlir  # compiles: the size is not known yet
    with pytest.raises(edsl.DpuError) as err:
        _dyn(nbytes, tasklets=tasklets)
    assert words in err.value.message
    assert "mram_read" in err.value.message
    assert err.value.loc.lineno == line_of("dyn-read")


@pytest.mark.parametrize("src_off, dst_off, side", [(1, 0, "MRAM address"), (3, 0, "MRAM address"),
                                                     (0, 1, "WRAM address"), (0, 5, "WRAM address")])
def test_misaligned_dma_offset_fails_at_run_time(src_off, dst_off, side):
    with pytest.raises(edsl.DpuError) as err:
        _dyn(64, src_off=src_off, dst_off=dst_off)
    assert side in err.value.message and "aligned" in err.value.message
    assert err.value.loc.lineno == line_of("dyn-read")


def test_dma_overrunning_the_wram_buffer():
    with pytest.raises(edsl.DpuError) as err:
        _dyn(2048, src_off=0, dst_off=1024 - 256)   # 512 floats from element 768 of 1024
    assert "overrun" in err.value.message
    assert err.value.loc.lineno == line_of("dyn-read")


def test_dma_overrunning_the_mram_array():
    with pytest.raises(edsl.DpuError) as err:
        _dyn(64, src_off=0, dst_off=0, n=8)
    assert "overrun" in err.value.message and "MRAM" in err.value.message
    assert err.value.loc.lineno == line_of("dyn-read")


@edsl.dialect
def dma_bad_write_offset(y: InOut["memref<?xf32, MRAM>"], off: Input["index"]):
    buf = edsl.wram_alloc(64, edsl.f32)
    edsl.mram_write(buf, y, 16, dst_offset=off)  # <bad-write>


def test_misaligned_write_reports_the_write_line():
    y = np.zeros(64, np.float32)
    dma_bad_write_offset(y, 2)  # aligned: fine
    assert dma_bad_write_offset.last_stats.dma_writes == 1
    with pytest.raises(edsl.DpuError) as err:
        dma_bad_write_offset(y, 1)
    assert "mram_write" in err.value.message and "MRAM address" in err.value.message
    assert err.value.loc.lineno == line_of("bad-write")


# --- DMA operands must be in the right memory ----------------------------------------------

@edsl.dialect
def dma_from_wram_param(x: Input["memref<?xf32>"]):
    buf = edsl.wram_alloc(64, edsl.f32)
    edsl.mram_read(x, buf, 64)  # <wrong-space>


def test_dma_source_must_be_mram():
    with pytest.raises(edsl.CompileError) as err:
        dma_from_wram_param.mlir
    assert isinstance(err.value, edsl.TypeMismatchError)
    assert "MRAM memref" in err.value.message
    assert err.value.loc.lineno == line_of("wrong-space")


# --- the WRAM budget ----------------------------------------------------------------------

@edsl.dialect
def wram_exactly_full(out: InOut["memref<?xf32>"]):
    big = edsl.wram_alloc(16 * 1024, edsl.f32)   # 65536 bytes
    big[0] = 1.5
    out[0] = big[0]


def test_wram_exactly_64k_fits():
    assert wram_exactly_full.wram_bytes == 65536
    out = np.zeros(1, np.float32)
    wram_exactly_full(out)
    assert out[0] == 1.5


@edsl.dialect
def wram_one_buffer_too_big(out: InOut["memref<?xf32>"]):
    big = edsl.wram_alloc((128, 129), edsl.f32)  # <wram-one>
    out[0] = big[0, 0]


@edsl.dialect
def wram_two_buffers_too_big(out: InOut["memref<?xf32>"]):
    a = edsl.wram_alloc(8192, edsl.f32)          # 32768 bytes
    b = edsl.wram_alloc(8200, edsl.f32)  # <wram-two>
    out[0] = a[0] + b[0]


@pytest.mark.parametrize("fn, marker, total", [
    (wram_one_buffer_too_big, "wram-one", 128 * 129 * 4),
    (wram_two_buffers_too_big, "wram-two", 32768 + 8200 * 4),
])
def test_wram_overflow(fn, marker, total):
    with pytest.raises(edsl.DpuError) as err:
        fn.mlir
    assert str(total) in err.value.message
    assert "65536" in err.value.message or "64 KiB" in err.value.message
    assert err.value.loc.lineno == line_of(marker)
