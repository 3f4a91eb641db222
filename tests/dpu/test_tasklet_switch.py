"""Tasklets that share a host thread switch straight from one to the next at a
barrier: every phase sees the writes of the one before, whatever the number
of tasklets; tasklets that end in any order, deadlocks found at any phase, the
same results and transfers launch after launch."""
import ctypes

import numpy as np
import pytest
import triton
import triton.language as tl

import edsl
import edsl.backend
from edsl import InOut
from edsl.dpu import runtime, support
from edsl.hostcall import pack_arguments
from edsl.target.machines import DPU

with open(__file__) as _f:
    _SOURCE_LINES = _f.read().splitlines()

PHASES = 6
needs_one_thread = pytest.mark.skipif(not support.coroutines(), reason="no ucontext on this host")


def line_of(marker: str) -> int:
    hits = [n for n, text in enumerate(_SOURCE_LINES, 1) if text.rstrip().endswith(f"# <{marker}>")]
    assert len(hits) == 1, marker
    return hits[0]


def run_on_one_thread(fn, *args, tasklets):
    """`fn(*args)` on `tasklets` tasklets sharing one host thread (the scheduler)."""
    program = fn.program(False)
    packed, keep = pack_arguments(fn.params_for(DPU), args, None)
    launch = runtime.Launch(1, tasklets, [0, 2 ** 63 - 1])
    launch.run_entry(program, fn.__name__, [ctypes.addressof(packed)] * tasklets, launch.addresses(0),
                     exit=True)
    del keep
    launch.raise_error(f"{fn.__name__}()", program.sites)
    return launch


@edsl.dialect
def phases(y: InOut["memref<?xi32>"]):
    """y[0]: every tasklet adds 1 in each of 6 phases (no atomics: one runs at a
    time); y[1 + t]: tasklet t's phase; y[32 + t]: the phases in which t saw its
    neighbour behind; then tasklet t counts to 50 * t, so that they end apart."""
    t = edsl.tasklet_id()
    n = edsl.num_tasklets()
    u = (t + 1) % n
    for k in range(6):
        y[1 + t] = k
        edsl.barrier()
        if y[1 + u] != k:
            y[32 + t] = y[32 + t] + 1
        edsl.barrier()
    if t < 8:
        y[0] = y[0] + 1
    for j in range(50 * t):
        y[64 + t] = y[64 + t] + 1


@needs_one_thread
@pytest.mark.parametrize("tasklets", [1, 2, 3, 16, 24])
def test_every_phase_sees_the_last_on_one_thread(tasklets):
    y = np.zeros(96, np.int32)
    run_on_one_thread(phases, y, tasklets=tasklets)
    assert (y[1:1 + tasklets] == PHASES - 1).all()
    assert not y[32:64].any()
    assert y[0] == min(tasklets, 8)
    np.testing.assert_array_equal(y[64:64 + tasklets], 50 * np.arange(tasklets))


@needs_one_thread
@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_each_way_to_switch_runs_every_phase(machine, monkeypatch):
    """LLVM's setjmp/longjmp (x86-64) and the C library's (elsewhere, run here
    too) switch alike."""
    if machine == "x86_64" and support.platform.machine() != "x86_64":
        pytest.skip("LLVM lowers its setjmp for x86-64 hosts only")
    monkeypatch.setattr(support.platform, "machine", lambda: machine)
    support.library_text.cache_clear()
    phases.compile(DPU).programs.clear()
    try:
        assert ("llvm.eh.sjlj" in support.library_text()) == (machine == "x86_64")
        y = np.zeros(96, np.int32)
        run_on_one_thread(phases, y, tasklets=16)
        assert (y[1:17] == PHASES - 1).all() and not y[32:64].any() and y[0] == 8
        np.testing.assert_array_equal(y[64:80], 50 * np.arange(16))
    finally:
        support.library_text.cache_clear()
        phases.compile(DPU).programs.clear()


@pytest.mark.parametrize("tasklets", [2, 5])
def test_every_phase_sees_the_last_on_threads(tasklets):
    # (`phases` adds to y[0] from several tasklets on purpose, with no barrier
    # between: a race the check would refuse, and not what is checked here)
    y = np.zeros(96, np.int32)
    phases.run(y, tasklets=tasklets, race_check=False)
    assert (y[1:1 + tasklets] == PHASES - 1).all() and not y[32:64].any()


@edsl.dialect
def last_skips_a_late_barrier(y: InOut["memref<?xi32>"]):
    t = edsl.tasklet_id()
    for k in range(5):
        y[t] = y[t] + 1
        edsl.barrier()
    if t != edsl.num_tasklets() - 1:
        edsl.barrier()  # <late-barrier>
    y[t] = y[t] + 1


@pytest.mark.parametrize("one_thread", [True, False])
@pytest.mark.parametrize("tasklets", [2, 16])
def test_a_deadlock_after_many_switches_names_its_barrier(tasklets, one_thread):
    if one_thread and not support.coroutines():
        pytest.skip("no ucontext on this host")
    y = np.zeros(16, np.int32)
    with pytest.raises(edsl.DpuError, match="deadlock") as err:
        if one_thread:
            run_on_one_thread(last_skips_a_late_barrier, y, tasklets=tasklets)
        else:
            last_skips_a_late_barrier.run(y, tasklets=tasklets)
    assert err.value.loc.lineno == line_of("late-barrier")
    assert (y[:tasklets] >= 5).all()


@triton.jit
def _rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=m, other=0.0)
    a = x - tl.max(tl.where(m, x, -float("inf")), axis=0)
    b = a / (tl.sum(tl.where(m, a * a, 0.0), axis=0) + 1.0)
    c = b - tl.sum(tl.where(m, b, 0.0), axis=0) / n
    tl.store(out_ptr + row * n + offs, c * tl.max(tl.where(m, c, -float("inf")), axis=0), mask=m)


def test_a_barrier_heavy_kernel_gives_the_same_bits_and_transfers_each_launch():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((7, 300)).astype(np.float32)
    results = {}
    with edsl.backend.activated():
        for t in (1, 2, 3, 8, 16):
            runs = []
            for _ in range(2):
                out = np.zeros_like(x)
                _rows[(7,)](x, out, 300, BLOCK=512, num_tasklets=t)
                report = edsl.backend.last_report()
                runs.append((out, report.per_tasklet_dma))
            (first, dma), (again, dma_again) = runs
            np.testing.assert_array_equal(first.view(np.uint32), again.view(np.uint32))
            assert dma == dma_again and len(dma) == t and sum(dma) == report.dma_transfers
            results[t] = first
    for t, out in results.items():
        np.testing.assert_array_equal(out.view(np.uint32), results[1].view(np.uint32), err_msg=f"{t}")
