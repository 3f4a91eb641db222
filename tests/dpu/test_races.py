"""Races between the tasklets of a DPU (edsl.dpu.races): two tasklets that
touch the same bytes with no barrier between them, one writing, are a
DpuError naming the element, the two tasklets and both lines; code whose
accesses barriers order runs. Generated plans of reads, writes and barriers
are checked against a reference that finds their races from the plan alone."""
import re

import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st

import edsl
from edsl import InOut, Input, fl

NONE, READ, WRITE = -1, 0, 1


@edsl.dialect
def phases(buf: InOut["memref<?xi32>"], plan: Input["memref<?x?xi32>"], fence: Input["memref<?xi32>"]):
    t = edsl.thread_id()
    for p in range(plan.shape[0]):
        k = plan[p, 2 * t]
        what = plan[p, 2 * t + 1]
        if what == 1:
            buf[k] = t                       # the write
        if what == 0:
            seen = buf[k]                    # the read
        if fence[p] == 1:
            edsl.barrier()


def _line(marker: str) -> int:
    with open(__file__) as f:
        return next(i for i, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}"))


def reference_race(plan: np.ndarray, fence: np.ndarray, tasklets: int):
    """(element, writer, other) of the first race in epoch order, lowest
    element first, tasklets in id order; None if the plan has none."""
    epoch = []
    for p in range(plan.shape[0]):
        epoch.append(p)
        if fence[p] or p == plan.shape[0] - 1:
            touched = {}
            for q in epoch:
                for t in range(tasklets):
                    what = plan[q, 2 * t + 1]
                    if what != NONE:
                        touched.setdefault(int(plan[q, 2 * t]), []).append((t, what))
            for k in sorted(touched):
                acc = touched[k]
                writers = sorted(t for t, w in acc if w == WRITE)
                if writers and len({t for t, _ in acc}) > 1:
                    w = writers[0]
                    other = min(t for t, _ in acc if t != w)
                    return k, w, other
            epoch = []
    return None


@st.composite
def plans(draw):
    tasklets = draw(st.integers(2, 6))
    size = draw(st.integers(1, 6))
    steps = draw(st.integers(1, 5))
    plan = np.empty((steps, 2 * tasklets), np.int32)
    for p in range(steps):
        for t in range(tasklets):
            plan[p, 2 * t] = draw(st.integers(0, size - 1))
            plan[p, 2 * t + 1] = draw(st.sampled_from([NONE, READ, WRITE]))
    fence = np.array(draw(st.lists(st.sampled_from([0, 1]), min_size=steps, max_size=steps)), np.int32)
    return tasklets, size, plan, fence


@settings(max_examples=60, deadline=None)
@given(plans())
def test_every_racy_plan_is_refused_and_no_ordered_one(case):
    tasklets, size, plan, fence = case
    want = reference_race(plan, fence, tasklets)
    buf = np.full(size, -1, np.int32)
    if want is None:
        phases.run(buf, plan, fence, tasklets=tasklets, race_check=True)
        return
    k, writer, other = want
    with pytest.raises(edsl.DpuError) as err:
        phases.run(buf, plan, fence, tasklets=tasklets, race_check=True)
    text = err.value.message
    assert f"tasklets {writer} and {other} race on element {k} of 'buf'" in text, text
    assert f"tasklet {writer} writes it" in text, text
    assert err.value.loc is not None and err.value.loc.filename == __file__


def test_the_error_names_both_lines():
    @edsl.dialect
    def total(t: InOut["memref<1xf32>"], x: Input["memref<?xf32>"]):
        i = edsl.thread_id()
        t[0] = t[0] + x[i]  # racy-sum
    x = np.arange(16, dtype=np.float32)
    with pytest.raises(edsl.DpuError) as err:
        total.run(np.zeros(1, np.float32), x, tasklets=16, race_check=True)
    line = _line("racy-sum")
    assert err.value.loc.lineno == line
    assert re.search(rf"tasklets 0 and 1 race on element 0 of 't': tasklet 0 writes it at line {line} "
                     rf"\(column 9\) and tasklet 1 reads it at line {line} \(column 16\), with no barrier",
                     err.value.message), err.value.message
    assert "separate the accesses with edsl.barrier()" in err.value.message     # (not C's barrier_wait)
    # Without the check it runs (and on hardware would lose updates).
    total.run(np.zeros(1, np.float32), x, tasklets=16, race_check=False)


@edsl.dialect
def dma_twice(out: InOut["memref<?xi64, MRAM>"], src: Input["memref<?xi64, MRAM>"]):
    buf = edsl.wram_alloc(4, edsl.i64)
    edsl.mram_read(src, buf, 32)  # dma-into-shared
    edsl.barrier()
    if edsl.thread_id() == 0:
        edsl.mram_write(buf, out, 32)


def test_a_dma_into_a_shared_buffer_races():
    """Every tasklet DMAs into the one wram_alloc buffer with no barrier: the
    transfers race on its WRAM bytes."""
    src, out = np.arange(4, dtype=np.int64), np.zeros(4, np.int64)
    with pytest.raises(edsl.DpuError, match="tasklets 0 and 1 race on a byte of WRAM") as err:
        dma_twice.run(out, src, tasklets=2, race_check=True)
    assert err.value.loc.lineno == _line("dma-into-shared")
    dma_twice.run(out, src, tasklets=1, race_check=True)      # one tasklet races with none
    assert out.tolist() == [0, 1, 2, 3]


@edsl.dialect
def racy_sum(t: InOut["memref<16xf32>"], x: Input["memref<16xf32>"]):
    i = edsl.thread_id()
    t[0] = t[0] + x[i]


@edsl.dialect
def ordered_sum(t: InOut["memref<16xf32>"], x: Input["memref<16xf32>"]):
    i = edsl.thread_id()
    t[i] = x[i]
    edsl.barrier()
    if i == 0:
        s = 0.0
        for k in range(16):
            s = s + t[k]
        t[0] = s


@triton.jit
def sum_kernel(x_ptr, o_ptr, RACY: tl.constexpr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    if RACY:
        t = fl.call(racy_sum, [tl.zeros_like(x)], [x])
    else:
        t = fl.call(ordered_sum, [tl.zeros_like(x)], [x])
    tl.store(o_ptr + offs, t)


@pytest.mark.parametrize("dpus", [1, 3])
def test_races_in_a_triton_kernels_fl_call(dpus):
    x, o = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    sum_kernel[(3,)](x, o, RACY=False, num_tasklets=16, num_dpus=dpus, race_check=True)
    assert o[0] == 120.0
    with pytest.raises(edsl.DpuError, match="kernel 'sum_kernel'.*tasklets 0 and 1 race on a byte of WRAM"):
        sum_kernel[(3,)](x, o, RACY=True, num_tasklets=16, num_dpus=dpus, race_check=True)


def test_a_race_log_past_its_limit_is_a_clear_error_not_the_hosts_memory():
    """Each access is logged; a tasklet that makes more than RACE_LOG_MAX_ENTRIES
    of them stops the check with words saying so (its log stays bounded)."""
    from edsl.target.dpu import RACE_LOG_MAX_ENTRIES

    @edsl.dialect
    def busy(out: InOut["memref<?xi32>"], n: Input["i32"]):
        t = edsl.thread_id()
        for i in range(n):
            out[t] = out[t] + 1
    out = np.zeros(2, np.int32)
    with pytest.raises(edsl.DpuError, match=rf"tasklet 0 made more than {RACE_LOG_MAX_ENTRIES} of them: check a "
                                            r"smaller input, or run without the check \(EDSL_RACE_CHECK=0\)"):
        busy.run(out, RACE_LOG_MAX_ENTRIES // 2 + 1, tasklets=2, race_check=True)
    busy.run(out, 1000, tasklets=2, race_check=True)             # (below it: checked, no race)


def test_releases_and_acquires_order_accesses_as_vector_clocks():
    """Race log entries (kind, address, end, site, generation): tasklet 0
    writes a byte then releases (object 900, number 1); tasklet 1 acquires it
    and writes the byte: ordered. Without the acquire, or acquiring another
    number, the two writes race; a mark of an unknown order skips the check."""
    from edsl.dpu.races import first_race
    from edsl.target.dpu import RACE_ACQUIRE, RACE_RELEASE, RACE_UNORDERED, Access
    write = [int(Access.WRITE), 64, 68, 7, 0]
    t0 = [write, [RACE_RELEASE, 900, 901, 0, 0]]
    assert first_race([np.array(t0), np.array([[RACE_ACQUIRE, 900, 901, 1, 0], write])]) is None
    race = first_race([np.array(t0), np.array([write])])
    assert race is not None and (race.first.tasklet, race.second.tasklet, race.address) == (0, 1, 64)
    assert first_race([np.array(t0), np.array([[RACE_ACQUIRE, 900, 902, 1, 0], write])]) is not None
    # (an acquire logged before the release it joins, in log order, is replayed after it)
    assert first_race([np.array([[RACE_ACQUIRE, 900, 901, 1, 0], write]), np.array(t0)]) is None
    assert first_race([np.array(t0), np.array([write, [RACE_UNORDERED, 0, 0, 3, 0]])]) is None
