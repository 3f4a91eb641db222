"""The UPMEM SDK's headers the DPU model gives raw functions in C
(edsl.codegen.upmem_include): mutex.h, seqread.h, alloc.h, handshake.h
against closed forms and NumPy, what they refuse (perfcounter.h, the buddy
allocator), and the errors they report at the .c line: a deadlock through a
mutex or a handshake ends as an error, never a hang, whether the DPU's
tasklets are threads (`run`) or share one host thread (the model's
scheduler)."""
import ctypes
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import edsl
from edsl import c_function as c_function_module
from edsl.base.errors import CompileError
from edsl.dpu import runtime, support
from edsl.target import dpu


from test_c_functions import SOURCES, c_function, line_of  # noqa: E402


def run_on_one_thread(fn, *args, tasklets: int):
    """Run `fn` as `run` does, its tasklets on one host thread (the model's
    scheduler, which switches them where they wait), as a kernel's are."""
    specs = fn.specs(tasklets)
    packed, keep = c_function_module._packed(specs, args, fn.compiled(tasklets).function.result, None)
    program = fn._program(tasklets, False)
    variables = c_function_module.mram_variables(program, fn.compiled(tasklets))
    launch = runtime.Launch(1, tasklets, c_function_module.mram_regions(specs, args, variables))
    launch.run_entry(program, c_function_module._ENTRY, [ctypes.addressof(packed)] * tasklets,
                     launch.addresses(0), exit=True)
    launch.raise_error(f"{fn.__name__}()", program.sites)
    del keep


def run_threads(fn, *args, tasklets):
    fn.run(*args, tasklets=tasklets)


# Tasklet counts the properties draw from (each count is a compile of its own).
TASKLETS = st.sampled_from([1, 2, 3, 5, 11, 16, dpu.MAX_TASKLETS])

RUNS = [pytest.param(run_threads, id="threads"),
        pytest.param(run_on_one_thread, id="one-thread",
                     marks=pytest.mark.skipif(not support.coroutines(), reason="no scheduler on this host"))]


# ---- mutex.h --------------------------------------------------------------------------

mutex_counter = c_function("sdk_mutex.c", "mutex_counter")
mutex_try = c_function("sdk_mutex.c", "mutex_try")


@settings(max_examples=20, deadline=None)
@given(tasklets=TASKLETS, reps=st.integers(1, 40))
def test_a_mutex_keeps_a_shared_counter_exact(tasklets, reps):
    """Tasklet t adds t + 1, `reps` times, each a read and a later write under
    the mutex: the sum is reps * T (T + 1) / 2, none lost."""
    out = np.zeros(1, np.int32)
    mutex_counter.run(out, reps, tasklets=tasklets)
    assert out[0] == reps * tasklets * (tasklets + 1) // 2


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("tasklets", [1, 2, 7, 24])
def test_a_mutex_on_one_host_thread_too(run, tasklets):
    out = np.zeros(1, np.int32)
    run(mutex_counter, out, 25, tasklets=tasklets)
    assert out[0] == 25 * tasklets * (tasklets + 1) // 2


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("tasklets", [1, 3, 16])
def test_mutex_ids_never_set_are_one_mutex(run, tasklets):
    out = np.zeros(1, np.int32)
    run(c_function("sdk_mutex.c", "mutex_never_set"), out, 5, tasklets=tasklets)
    assert out[0] == 1000 + 5 * tasklets

@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("tasklets", [2, 5])
def test_trylock_fails_on_a_held_mutex_and_takes_a_free_one(run, tasklets):
    out = np.full(tasklets + 1, 7, np.int32)
    run(mutex_try, out, tasklets=tasklets)
    assert out[1:tasklets].tolist() == [0] * (tasklets - 1)
    assert out[tasklets] == 1


DEADLOCK = "deadlock: every tasklet that has not finished waits"


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("tasklets", [2, 3, 16])
def test_a_holder_at_a_barrier_and_a_waiter_for_its_mutex_end_as_a_deadlock(run, tasklets):
    """Whichever of them comes last sees that none can go on: the error is at
    its line (the barrier's or the mutex_lock's), never a hang."""
    fn = c_function("sdk_mutex.c", "holder_at_barrier")
    with pytest.raises(edsl.DpuError, match=DEADLOCK) as err:
        run(fn, tasklets=tasklets)
    assert err.value.loc.filename.endswith("sdk_mutex.c")
    assert err.value.loc.lineno in (line_of("sdk_mutex.c", "holder waits"), line_of("sdk_mutex.c", "others wait"))


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("tasklets", [2, 4])
def test_a_mutex_its_holder_never_unlocks_is_a_deadlock_at_the_wait(run, tasklets):
    fn = c_function("sdk_mutex.c", "holder_returns")
    with pytest.raises(edsl.DpuError, match=DEADLOCK) as err:
        run(fn, tasklets=tasklets)
    assert err.value.loc.lineno == line_of("sdk_mutex.c", "wait for the finished")


@pytest.mark.parametrize("run", RUNS)
def test_unlocking_a_mutex_one_does_not_hold_is_an_error_at_its_line(run):
    fn = c_function("sdk_mutex.c", "unlock_not_held")
    with pytest.raises(edsl.DpuError, match="mutex_unlock of a mutex this tasklet does not hold") as err:
        run(fn, tasklets=3)
    assert err.value.loc.lineno == line_of("sdk_mutex.c", "unlock not held")


@pytest.mark.parametrize("run", RUNS)
def test_locking_a_mutex_one_holds_is_an_error_at_its_line(run):
    fn = c_function("sdk_mutex.c", "lock_twice")
    with pytest.raises(edsl.DpuError, match="already holds: it would wait for itself forever") as err:
        run(fn, tasklets=2)
    assert err.value.loc.lineno == line_of("sdk_mutex.c", "lock twice")


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("tasklets", [2, 8])
def test_waiters_for_the_mutex_of_a_faulted_tasklet_give_up(run, tasklets):
    """The fault is the error reported (not the deadlock it leaves), and the
    tasklets waiting for the mutex it held stop."""
    fn = c_function("sdk_mutex.c", "holder_faults")
    with pytest.raises(edsl.DpuError, match="assertion failed") as err:
        run(fn, tasklets=tasklets)
    assert err.value.loc.lineno == line_of("sdk_mutex.c", "fault")


# ---- seqread.h ------------------------------------------------------------------------

def seqread_copy(cache: int | None):
    with open(os.path.join(SOURCES, "sdk_seqread.c")) as f:
        text = f.read()
    if cache is not None:
        text = f"#define CACHE {cache}\n" + text
    return c_function("sdk_seqread.c", "seqread_copy", source=text if cache is not None else None)


SEQREAD = {cache: seqread_copy(cache) for cache in (None, 32, 1024)}


@settings(max_examples=40, deadline=None)
@given(size=st.integers(1, 5000), data=st.data(), cache=st.sampled_from([None, 32, 1024]))
def test_seqread_reads_the_bytes_numpy_slices(size, data, cache):
    """From any offset, in any step up to SEQREAD_CACHE_SIZE, seqread gives
    the bytes of the slice, and seqread_tell the MRAM offset of each step."""
    limit = cache or 256
    offset = data.draw(st.integers(0, size - 1))
    n = data.draw(st.integers(1, size - offset))
    step = data.draw(st.integers(1, limit))
    array = np.random.default_rng(size * 7 + offset).integers(0, 256, size, dtype=np.uint8)
    out = np.zeros(n, np.uint8)
    tell = np.zeros(n // step + 2, np.uint32)
    SEQREAD[cache].run(array, out, tell, offset, n, step)
    np.testing.assert_array_equal(out, array[offset:offset + n])
    steps = -(-n // step)
    np.testing.assert_array_equal(tell[:steps], offset + step * np.arange(steps))


def test_a_seqread_step_beyond_the_cache_is_an_error_at_its_line():
    array = np.zeros(4096, np.uint8)
    with pytest.raises(edsl.DpuError, match=r"seqread_get steps 257 bytes, more than SEQREAD_CACHE_SIZE \(256\)") \
            as err:
        SEQREAD[None].run(array, np.zeros(600, np.uint8), np.zeros(8, np.uint32), 0, 600, 257)
    assert err.value.loc.lineno == line_of("sdk_seqread.c", "step")


def test_seqread_from_outside_the_arrays_is_an_error_at_its_line():
    fn = c_function("sdk_seqread.c", "seqread_far")
    with pytest.raises(edsl.DpuError, match="is outside the function's MRAM arrays and variables") as err:
        fn.run(np.zeros(64, np.uint8), 64 + 4096)
    assert err.value.loc.lineno == line_of("sdk_seqread.c", "init")


def test_a_seqread_cache_the_model_cannot_fill_in_one_transfer_is_refused():
    text = "#define SEQREAD_CACHE_SIZE 2048\n#include <seqread.h>\nvoid f(void) {}\n"
    with pytest.raises(CompileError, match="SEQREAD_CACHE_SIZE: a multiple of 8, at most half"):
        c_function("", "f", source=text).run()


# ---- alloc.h --------------------------------------------------------------------------

alloc_many = c_function("sdk_alloc.c", "alloc_many")
# What alloc_many's DPU leaves for the heap: WRAM less its variables (80
# bytes of `variables`, a byte of barrier, to 88) and its stacks.
def heap_of(tasklets: int) -> int:
    return dpu.WRAM_BYTES - 88 - tasklets * dpu.C_STACK_BYTES


@settings(max_examples=30, deadline=None)
@given(tasklets=TASKLETS, size=st.integers(1, 300), data=st.data())
def test_mem_alloc_gives_distinct_aligned_buffers_within_the_heap(tasklets, size, data):
    each = -(-size // 8) * 8
    count = data.draw(st.integers(1, max(1, min(20, heap_of(tasklets) // (each * tasklets)))))
    addresses = np.zeros(tasklets * count, np.uint64)
    bad = np.zeros(tasklets, np.uint64)
    alloc_many.run(addresses, bad, size, count, tasklets=tasklets)
    assert not bad.any()                                   # (no buffer overlaps another)
    p = np.sort(addresses.astype(np.int64))
    assert len(set(p.tolist())) == len(p)
    assert (p % 8 == 0).all()
    assert (np.diff(p) >= each).all()
    assert p[-1] + each - p[0] <= heap_of(tasklets)


@pytest.mark.parametrize("tasklets, size", [(1, 8), (1, 1000), (4, 13)])
def test_an_exhausted_heap_is_an_error_at_the_mem_alloc(tasklets, size):
    each = -(-size // 8) * 8
    fits = heap_of(tasklets) // (each * tasklets)
    alloc_many.run(np.zeros(tasklets * fits, np.uint64), np.zeros(tasklets, np.uint64), size, fits,
                   tasklets=tasklets)
    more = fits + 1 if tasklets == 1 else fits + 2
    with pytest.raises(edsl.DpuError, match=rf"mem_alloc\({size}\): the DPU's WRAM heap has \d+ of its "
                                            rf"{heap_of(tasklets)} bytes left") as err:
        alloc_many.run(np.zeros(tasklets * more, np.uint64), np.zeros(tasklets, np.uint64), size, more,
                       tasklets=tasklets)
    assert err.value.loc.filename.endswith("sdk_alloc.c")
    assert err.value.loc.lineno == line_of("sdk_alloc.c", "alloc")


def test_wram_arrays_take_from_the_heap():
    source = "#include <alloc.h>\nvoid f(uint8_t *w, int n) { mem_alloc(n); }\n"
    fn = c_function("", "f", source=source)
    w = np.zeros(40_000, np.uint8)
    left = dpu.WRAM_BYTES - 40_000 - dpu.C_STACK_BYTES
    fn.run(w, left)
    with pytest.raises(edsl.DpuError, match=f"heap has {left} of its {left} bytes left"):
        fn.run(w, left + 1)


def test_mem_reset_empties_the_heap():
    addresses = np.zeros(3, np.uint64)
    c_function("sdk_alloc.c", "alloc_reset").run(addresses)
    assert addresses[1] == addresses[0] + 24
    assert addresses[2] == addresses[0]


def test_the_buddy_allocator_is_refused_at_its_line():
    source = "#include <alloc.h>\nvoid f(void) {\n    buddy_alloc(64);\n}\n"
    with pytest.raises(CompileError, match="'buddy_alloc' is unavailable: the DPU model does not provide") as err:
        c_function("", "f", source=source).run()
    assert err.value.loc.lineno == 3


# ---- MRAM variables (defs.h: __mram, __mram_noinit) ----------------------------------

sum_through_mram = c_function("sdk_mram_variables.c", "sum_through_mram")


@settings(max_examples=10, deadline=None)
@given(tasklets=TASKLETS, seed=st.integers(0, 2 ** 32 - 1))
def test_mram_variables_carry_values_between_tasklets(tasklets, seed):
    values = np.random.default_rng(seed).integers(-1000, 1000, tasklets * 8, dtype=np.int64)
    sums = np.zeros(tasklets, np.int64)
    sum_through_mram.run(values, sums, tasklets=tasklets)
    np.testing.assert_array_equal(sums, np.full(tasklets, 5 + values.sum()))


@settings(max_examples=10, deadline=None)
@given(tasklets=TASKLETS, seed=st.integers(0, 2 ** 32 - 1))
def test_the_mram_heap_carries_values_between_tasklets(tasklets, seed):
    values = np.random.default_rng(seed).integers(-1000, 1000, tasklets * 8, dtype=np.int64)
    sums = np.zeros(tasklets, np.int64)
    c_function("sdk_mram_variables.c", "sum_through_heap").run(values, sums, tasklets=tasklets)
    np.testing.assert_array_equal(sums, np.full(tasklets, values.sum()))


def test_a_transfer_past_the_mram_heap_is_an_error_at_its_line():
    with pytest.raises(edsl.DpuError, match="mram_read of 16 bytes at MRAM address 0x[0-9a-f]+ is outside") as err:
        c_function("sdk_mram_variables.c", "past_the_heap").run(np.zeros(2, np.int64))
    assert err.value.loc.lineno == line_of("sdk_mram_variables.c", "heap end")


def test_the_mram_heap_is_mapped_only_for_a_function_that_names_it(tmp_path):
    # (named in a header of the user's: its texts hold it; the project's mram.h
    # defines it for every function and does not count)
    header = tmp_path / "heap.h"
    header.write_text("#include <mram.h>\n#define BUFFERS ((__mram_ptr int64_t *)DPU_MRAM_HEAP_POINTER)\n")
    source = tmp_path / "through.c"
    source.write_text('#include "heap.h"\nvoid through(int64_t *w) { mram_write(w, BUFFERS, 8); '
                      'w[0] = 0; mram_read(BUFFERS, w, 8); }\n')
    def through():
        """A function of a C source."""
    named = edsl.dialect(name="c", file=str(source))(through)
    out = np.full(1, 7, np.int64)
    named.run(out)
    assert named.compiled().uses_mram_heap and out[0] == 7
    plain = c_function("", "plain", source="#include <mram.h>\nvoid plain(int64_t *w) { w[0] = 7; }\n")
    assert not plain.compiled().uses_mram_heap
    plain.run(out)


def test_each_run_starts_with_the_mram_variables_first_values():
    bump, out = c_function("sdk_mram_variables.c", "bump"), np.zeros(2, np.int64)
    for k in range(2):
        bump.run(out[k:])
    np.testing.assert_array_equal(out, [6, 6])


def test_a_transfer_past_an_mram_variable_is_an_error_at_its_line():
    with pytest.raises(edsl.DpuError, match=r"mram_read of 16 bytes at MRAM address 0x[0-9a-f]+ is outside the "
                                            "function's MRAM arrays and variables in MRAM") as err:
        c_function("sdk_mram_variables.c", "past_the_end").run(np.zeros(2, np.int64), tasklets=2)
    assert err.value.loc.lineno == line_of("sdk_mram_variables.c", "past")


# ---- perfcounter.h --------------------------------------------------------------------

PERFCOUNTER_C = """#include <perfcounter.h>
uint64_t f(int calls) {
    if (calls == 1)
        perfcounter_config(COUNT_CYCLES, true);
    if (calls == 2)
        return perfcounter_get();
    return 0;
}
"""


@pytest.mark.parametrize("calls, name, line", [(1, "perfcounter_config", 4), (2, "perfcounter_get", 6)])
def test_perfcounter_stops_the_dpu_where_it_runs_at_its_line(calls, name, line):
    f = c_function("", "f", source=PERFCOUNTER_C)
    f.run(0)                                        # (the calls on paths not taken: it runs)
    with pytest.raises(edsl.DpuError, match=rf"{name}: the DPU model and the SDK stand-ins run DPU code "
                                            r"compiled for the host, which counts no DPU cycles") as err:
        f.run(calls)
    assert err.value.loc.lineno == line


# ---- handshake.h ----------------------------------------------------------------------

handshake_prefix = c_function("sdk_handshake.c", "handshake_prefix")


@settings(max_examples=20, deadline=None)
@given(tasklets=TASKLETS, seed=st.integers(0, 2 ** 32 - 1))
def test_handshakes_pass_a_prefix_sum_along(tasklets, seed):
    values = np.random.default_rng(seed).integers(-1000, 1000, dpu.MAX_TASKLETS, dtype=np.int32)
    out = np.zeros(dpu.MAX_TASKLETS, np.int32)
    handshake_prefix.run(out, values, tasklets=tasklets)
    np.testing.assert_array_equal(out[:tasklets], np.cumsum(values[:tasklets]))


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("tasklets", [1, 3, 24])
def test_handshakes_on_one_host_thread_too(run, tasklets):
    values = np.arange(1, dpu.MAX_TASKLETS + 1, dtype=np.int32)
    out = np.zeros(dpu.MAX_TASKLETS, np.int32)
    run(handshake_prefix, out, values, tasklets=tasklets)
    np.testing.assert_array_equal(out[:tasklets], np.cumsum(values[:tasklets]))


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("tasklets", [1, 4])
def test_a_notification_no_one_waits_for_is_a_deadlock_at_its_line(run, tasklets):
    with pytest.raises(edsl.DpuError, match=DEADLOCK) as err:
        run(c_function("sdk_handshake.c", "handshake_unanswered"), tasklets=tasklets)
    assert err.value.loc.lineno == line_of("sdk_handshake.c", "unanswered")


@pytest.mark.parametrize("run", RUNS)
def test_two_tasklets_waiting_for_one_notifier_is_an_error_at_the_line(run):
    with pytest.raises(edsl.DpuError, match="handshake_wait_for of a tasklet that another tasklet already waits") \
            as err:
        run(c_function("sdk_handshake.c", "handshake_twice"), tasklets=3)
    assert err.value.loc.lineno == line_of("sdk_handshake.c", "twice")


@pytest.mark.parametrize("tasklets", [1, 3])
def test_waiting_for_oneself_is_an_error_at_the_line(tasklets):
    with pytest.raises(edsl.DpuError, match=rf"handshake_wait_for\(\d\): a tasklet waits for another tasklet of "
                                            r"its DPU, never for itself") as err:
        c_function("sdk_handshake.c", "handshake_self").run(tasklets=tasklets)
    assert err.value.loc.lineno == line_of("sdk_handshake.c", "self")


# ---- barrier.h ------------------------------------------------------------------------

group_sums = c_function("sdk_barrier.c", "group_sums")


@settings(max_examples=25, deadline=None)
@given(tasklets=TASKLETS, size=st.integers(1, dpu.MAX_TASKLETS), rounds=st.integers(1, 4),
       seed=st.integers(0, 2 ** 32 - 1))
def test_barriers_of_groups_of_tasklets_order_their_members(tasklets, size, rounds, seed):
    """Barriers of fewer tasklets than the DPU runs (filled in by the program,
    PrIM's HST-L's way), against NumPy."""
    values = np.random.default_rng(seed).integers(-1000, 1000, dpu.MAX_TASKLETS, dtype=np.int32)
    out = np.zeros(dpu.MAX_TASKLETS, np.int32)
    group_sums.run(out, values, size, rounds, tasklets=tasklets)
    groups = [values[g:min(g + size, tasklets)].sum() for g in range(0, tasklets, size)]
    np.testing.assert_array_equal(out[:tasklets], [rounds * groups[t // size] for t in range(tasklets)])


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("tasklets", [3, 5])
def test_groups_on_one_host_thread_too_and_a_barrier_never_full_is_a_deadlock_at_its_line(run, tasklets):
    values = np.arange(1, dpu.MAX_TASKLETS + 1, dtype=np.int32)
    out = np.zeros(dpu.MAX_TASKLETS, np.int32)
    run(group_sums, out, values, 2, 3, tasklets=tasklets)
    np.testing.assert_array_equal(out[:tasklets], [3 * values[t // 2 * 2:min(t // 2 * 2 + 2, tasklets)].sum()
                                                   for t in range(tasklets)])
    with pytest.raises(edsl.DpuError, match=DEADLOCK) as err:
        run(c_function("sdk_barrier.c", "group_never_full"), tasklets=tasklets)
    assert err.value.loc.lineno == line_of("sdk_barrier.c", "never full")


@pytest.mark.parametrize("tasklets", [2, 5, 16])
def test_the_race_check_knows_the_order_of_mutexes_and_handshakes(tasklets):
    """Accesses ordered by a mutex handed on or by a handshake are not races;
    one outside them is, named at both lines (PrIM's SEL's shared total)."""
    out = np.zeros(1, np.int32)
    c_function("sdk_mutex.c", "mutex_counter").run(out, 3, tasklets=tasklets, race_check=True)
    values = np.arange(1, tasklets + 1, dtype=np.int32)
    prefix = np.zeros(tasklets, np.int32)
    c_function("sdk_handshake.c", "handshake_prefix").run(prefix, values, tasklets=tasklets, race_check=True)
    np.testing.assert_array_equal(prefix, np.cumsum(values))
    with pytest.raises(edsl.DpuError) as err:
        c_function("sdk_mutex.c", "mutex_peek").run(out, tasklets=tasklets, race_check=True)
    assert f"writes it at line {line_of('sdk_mutex.c', 'under lock')}" in err.value.message, err.value.message
    assert f"reads it at line {line_of('sdk_mutex.c', 'peek')}" in err.value.message, err.value.message
    with pytest.raises(edsl.DpuError) as err:
        c_function("sdk_handshake.c", "handshake_then_total").run(prefix, values, tasklets=tasklets,
                                                                   race_check=True)
    assert f"writes it at line {line_of('sdk_handshake.c', 'total moved')}" in err.value.message, err.value.message
    assert f"reads it at line {line_of('sdk_handshake.c', 'total read')}" in err.value.message, err.value.message
    c_function("sdk_handshake.c", "handshake_then_total").run(prefix, values, tasklets=tasklets, race_check=False)


def test_only_a_barrier_of_fewer_tasklets_turns_the_race_check_off():
    """A barrier of every tasklet is the model's, which the race check knows."""
    racy = "void f(int *w) { w[0] = (int)me(); barrier_wait(&b); }\n"
    full = c_function("", "f", source="#include <defs.h>\n#include <barrier.h>\nBARRIER_INIT(b, NR_TASKLETS);\n"
                                     + racy)
    some = c_function("", "f", source="#include <defs.h>\n#include <barrier.h>\nBARRIER_INIT(b, 2);\n"
                                     + racy)
    w = np.zeros(1, np.int32)
    with pytest.raises(edsl.DpuError, match=r"tasklets \d+ and \d+ race on"):
        full.run(w, tasklets=4, race_check=True)
    some.run(w, tasklets=4, race_check=True)         # (the same race, not checked)


# ---- mram_unaligned.h ------------------------------------------------------------------

read_unaligned = c_function("sdk_mram_unaligned.c", "read_unaligned")
write_unaligned = c_function("sdk_mram_unaligned.c", "write_unaligned")


@settings(max_examples=40, deadline=None)
@given(data=st.data(), size=st.integers(1, 3000), tasklets=st.sampled_from([1, 3]))
def test_unaligned_copies_against_numpy(data, size, tasklets):
    """Any MRAM address, any size to 2048 bytes: the bytes NumPy gives, and
    the bytes around a write as they were."""
    at = data.draw(st.integers(0, size - 1))
    n = data.draw(st.integers(0, min(2048, size - at)))
    m = np.frombuffer(data.draw(st.binary(min_size=size, max_size=size)), np.uint8).copy()
    out = np.zeros(max(n, 1), np.uint8)
    read_unaligned.run(out, m, at, n, tasklets=tasklets)
    np.testing.assert_array_equal(out[:n], m[at:at + n])
    values = np.frombuffer(data.draw(st.binary(min_size=n, max_size=n)), np.uint8).copy()
    want = m.copy()
    want[at:at + n] = values
    write_unaligned.run(m, np.concatenate([values, [0]]).astype(np.uint8), at, n, 0, tasklets=tasklets)
    np.testing.assert_array_equal(m, want)


def test_what_unaligned_copies_refuse_is_an_error_at_the_line():
    m = np.zeros(4096, np.uint8)
    with pytest.raises(edsl.DpuError, match=r"an unaligned MRAM copy \(mram_unaligned.h\) of 2049 bytes: at most "
                                            r"2048") as err:
        read_unaligned.run(np.zeros(2049, np.uint8), m, 3, 2049)
    assert err.value.loc.lineno == line_of("sdk_mram_unaligned.c", "read")
    with pytest.raises(edsl.DpuError, match=r"mram_write_unaligned from WRAM address 0x[0-9a-f]+ to MRAM address "
                                            r"0x[0-9a-f]+: the two must be equal modulo 8") as err:
        write_unaligned.run(m, np.ones(16, np.uint8), 5, 16, 1)
    assert err.value.loc.lineno == line_of("sdk_mram_unaligned.c", "write")
    with pytest.raises(edsl.DpuError, match=r"is outside the function's MRAM arrays") as err:
        read_unaligned.run(np.zeros(16, np.uint8), m, 4090, 16)          # (past the array's last block)
    assert err.value.loc.lineno == line_of("sdk_mram_unaligned.c", "read")
