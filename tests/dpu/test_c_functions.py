"""Raw DPU functions in UPMEM C (edsl.c_function) on the DPU model: results
against NumPy, and the same results and the same errors as the same kernel
written in the EDSL."""
import os
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import edsl
from edsl import InOut, Input


SOURCES = os.path.join(os.path.dirname(__file__), "c_sources")


def c_function(file: str, name: str, source: str | None = None):
    """Function `name` of file `file` of c_sources/ (or of the text `source`)."""
    def stub():
        """A function of a C source."""
    stub.__name__ = stub.__qualname__ = name
    if source is not None:
        return edsl.dialect(name="c", source=source)(stub)
    return edsl.dialect(name="c", file=os.path.join(SOURCES, file))(stub)


def line_of(file: str, marker: str) -> int:
    with open(os.path.join(SOURCES, file)) as f:
        hits = [n for n, text in enumerate(f, 1) if text.rstrip().endswith(f"// <{marker}>")]
    assert len(hits) == 1, marker
    return hits[0]


copy_chunks = c_function("copy_chunks.c", "copy_chunks")


@edsl.dialect
def copy_chunks_edsl(dst: InOut["memref<?xi8, MRAM>"], src: Input["memref<?xi8, MRAM>"], nbytes: Input["i64"],
                     chunk: Input["i64"], shift: Input["i64"]):
    """copy_chunks.c, written in the EDSL (a buffer per tasklet: the C one is on its stack)."""
    buffer = edsl.wram_alloc((16 * 2048,), edsl.i8)
    mine = edsl.tasklet_id() * 2048
    for at in range(edsl.tasklet_id() * chunk, nbytes, edsl.num_tasklets() * chunk):
        edsl.mram_read(src, buffer, chunk, shift + at, mine)
        edsl.mram_write(buffer, dst, chunk, mine, shift + at)
    edsl.barrier()


@settings(max_examples=25, deadline=None)
@given(words=st.integers(1, 600), chunk=st.sampled_from([8, 16, 64, 256, 2048, 12, 4, 0, 2056, 4096]),
       shift=st.sampled_from([0, 8, 4]), tasklets=st.sampled_from([1, 3, 16]), data=st.data())
def test_copy_in_c_as_in_the_edsl(words, chunk, shift, tasklets, data):
    """Same bytes copied, or the same error, whatever the chunk and the shift
    (the DMA rules: 8-byte aligned addresses, sizes a multiple of 8 from 8 to 2048)."""
    nbytes = 8 * words
    src = data.draw(st.integers(0, 2 ** 62).map(lambda s: np.random.default_rng(s).integers(
        -2 ** 62, 2 ** 62, words + 1 + chunk // 8, dtype=np.int64)))
    outcomes = []
    if chunk == 0:
        return          # (an endless loop in both: not run)
    for fn, view in ((copy_chunks, np.int64), (copy_chunks_edsl, np.int8)):
        dst = np.zeros_like(src)
        try:
            fn.run(dst.view(view), src.view(view), nbytes, chunk, shift, tasklets=tasklets)
            outcomes.append(("ok", dst.tobytes()))
        except edsl.DpuError as e:
            outcomes.append(("error", re.sub(r"0x[0-9a-f]+|^\S+\(\): ", "", str(e).splitlines()[0].split(": ", 1)[1])))
    assert outcomes[0] == outcomes[1]
    if outcomes[0][0] == "ok":
        want = np.zeros(src.nbytes, np.uint8)
        copied = -(-nbytes // chunk) * chunk       # (whole chunks)
        want[shift:shift + copied] = src.view(np.uint8)[shift:shift + copied]
        assert outcomes[0][1] == want.tobytes()


def test_a_broken_dma_rule_is_reported_at_the_c_line():
    src = np.arange(64, dtype=np.int64)
    dst = np.zeros_like(src)
    with pytest.raises(edsl.DpuError, match="mram_read breaks the DMA rules: .*not 8-byte aligned") as err:
        copy_chunks.run(dst, src, 256, 64, 4, tasklets=2)
    assert err.value.loc.filename.endswith("copy_chunks.c")
    assert err.value.loc.lineno == line_of("copy_chunks.c", "read")
    with pytest.raises(edsl.DpuError, match=r"copy_chunks\(\): mram_read breaks the DMA rules: .*4096 .*2048"
                       ) as err:
        copy_chunks.run(np.zeros(600, np.int64), np.zeros(600, np.int64), 4096, 4096, 0)
    assert err.value.loc.lineno == line_of("copy_chunks.c", "read")   # (the read comes first, as large)


def test_an_mram_write_past_the_launch_is_refused_where_the_read_was_not():
    """The f.run of a C function may reach all MRAM, as an EDSL function's: the
    rules still hold."""
    src = np.arange(32, dtype=np.int64)
    dst = np.zeros_like(src)
    copy_chunks.run(dst, src, 256, 16, 0, tasklets=4)
    assert (dst == src).all()


faults = c_function("faults.c", "faults")
lonely = c_function("faults.c", "lonely")
count_calls = c_function("faults.c", "count_calls")
tasklet_sum = c_function("faults.c", "tasklet_sum")


@pytest.mark.parametrize("tasklets", [1, 4, 16])
def test_a_failed_assert_stops_the_tasklet_at_its_line(tasklets):
    marks = np.zeros(16, np.int32)
    bad = tasklets - 1
    with pytest.raises(edsl.DpuError, match="assert") as err:
        faults.run(marks, bad, tasklets=tasklets)
    assert err.value.loc.lineno == line_of("faults.c", "assert")
    assert (marks == 0).all()          # no tasklet went past the barrier the failed one never reached
    marks[:] = 1
    faults.run(marks, bad, tasklets=tasklets)


def test_a_barrier_only_one_tasklet_reaches_is_a_deadlock_at_its_line():
    with pytest.raises(edsl.DpuError, match="deadlock") as err:
        lonely.run(np.zeros(8, np.int32), tasklets=8)
    assert err.value.loc.lineno == line_of("faults.c", "lonely")


def test_variables_start_as_the_program_loads_them():
    out = np.zeros(1, np.int32)
    for _ in range(3):
        count_calls.run(out)
        assert out[0] == 1


@settings(max_examples=10, deadline=None)
@given(n=st.integers(0, 5000), tasklets=st.integers(1, 24))
def test_tasklets_meet_at_a_barrier(n, tasklets):
    total = np.zeros(1, np.int64)
    tasklet_sum.run(total, n, tasklets=tasklets)
    assert total[0] == n * (n - 1) // 2


def test_arguments_are_checked_against_the_c_parameters():
    with pytest.raises(edsl.ArgumentError, match=r"takes 2 arguments"):
        tasklet_sum.run(np.zeros(1, np.int64))
    with pytest.raises(edsl.ArgumentError, match="expected a NumPy array"):
        tasklet_sum.run(3, 4)
    with pytest.raises(edsl.ArgumentError, match="more than the 65536 bytes"):
        tasklet_sum.run(np.zeros(9000, np.int64), 4)


def test_printf_prints_on_the_host(capfd):
    hello = c_function("faults.c", "hello")
    hello.run(7, tasklets=3)
    lines = sorted(capfd.readouterr().out.splitlines())
    assert lines == [f"tasklet {t} of 3: n = 7" for t in range(3)]


def test_a_fault_in_an_included_file_is_reported_at_its_line():
    copy_twice = c_function("copy_twice.c", "copy_twice")
    src = np.arange(64, dtype=np.int64)
    dst = np.zeros_like(src)
    copy_twice.run(dst, src, 512)
    assert (dst == src).all()
    with pytest.raises(edsl.DpuError, match="mram_read breaks the DMA rules") as err:
        copy_twice.run(dst, src, 12)
    assert err.value.loc.filename == os.path.join(SOURCES, "include", "chunks.h")
    assert err.value.loc.lineno == line_of(os.path.join("include", "chunks.h"), "helper-read")


@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 300), tasklets=st.sampled_from([1, 5, 16]), seed=st.integers(0, 2 ** 32 - 1))
def test_loads_and_stores_through_mram_pointers(n, tasklets, seed):
    direct = c_function("direct.c", "direct")
    rng = np.random.default_rng(seed)
    m = rng.integers(-1000, 1000, n, dtype=np.int32)
    c = rng.integers(-100, 100, n, dtype=np.int8)
    d = rng.standard_normal(n)
    p = np.zeros(3, dtype=[("a", np.int32), ("b", np.float32)])
    p[0] = (7, 0.25)
    want_m, want_c, want_d = m * 3 + 1, (c - 2).astype(np.int8), d * 0.5
    direct.run(m, c, d, p, n, tasklets=tasklets)
    assert (m == want_m).all() and (c == want_c).all() and (d == want_d).all()
    assert p[1]["b"] == np.float32(7.25) and p[2] == p[1]


def test_mram_beyond_the_arrays_is_refused_at_the_line():
    element = c_function("direct.c", "element")
    m = np.arange(10, dtype=np.int32)
    element.run(m, 9)
    for k in (10, -3, 10 ** 12):
        with pytest.raises(edsl.DpuError, match="outside") as err:
            element.run(m, k)
        assert err.value.loc.lineno == line_of("direct.c", "element")
    with pytest.raises(edsl.DpuError, match="outside"):
        copy_chunks.run(np.zeros(8, np.int64), np.zeros(8, np.int64), 128, 64, 0)
