"""The ranks of a launch as Ray tasks (edsl.backend.ranks), on a local Ray
instance of 2 worker processes: each launch of 2-3 ranks gives the same
bits, the same errors and the same report as the same launch run in this
process (EDSL_DPU_RAY=0)."""
import dataclasses

import numpy as np
import pytest
import triton
import triton.language as tl

import edsl.backend
from edsl.base.errors import ArgumentError, DpuError
import triton_vector_add
from sharing_kernels import count

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'triton-edsl[ray]')")

from edsl.backend import dpu_run, ranks  # noqa: E402
from edsl.dpu import jit  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _randomized() -> bool:
    try:
        return open("/proc/sys/kernel/randomize_va_space").read().strip() != "0"
    except OSError:
        return False


@pytest.fixture
def remote_only(monkeypatch):
    """Every rank runs on a worker: none is handed back to run here. (Checked
    where processes' addresses are randomized: without it, the workers'
    own memory may lie at the arrays' addresses, and ranks come back.)"""
    if _randomized():
        monkeypatch.setattr(ranks, "run_rank", lambda *a, **k: pytest.fail("a rank ran in the driver"))


def _both(monkeypatch, launch):
    """`launch()` in this process, then with its ranks as Ray tasks."""
    got = []
    for mode in ("0", "1"):
        monkeypatch.setenv("EDSL_DPU_RAY", mode)
        got.append(launch())
    return got


def _error(launch):
    with pytest.raises(DpuError) as err:
        launch()
    return str(err.value), err.value.loc


@triton.jit
def share(x_ptr, OTHER: tl.constexpr, READ: tl.constexpr):
    pid = tl.program_id(0)
    if pid == 0:
        tl.store(x_ptr, 5)
    if pid == OTHER:
        if READ:
            tl.store(x_ptr + 1, tl.load(x_ptr))
        else:
            tl.store(x_ptr, 7)


@triton.jit
def off_the_end(x_ptr, BAD: tl.constexpr, ALSO: tl.constexpr, SHARE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs + ((pid == BAD) | (pid == ALSO)) * (1 << 20), offs)   # the line named
    if SHARE and pid == 129:
        tl.store(x_ptr, 1)


def _vector_add(timing=False):
    n = 160 * 64 - 5
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.zeros_like(x)
    triton_vector_add.add_kernel[(160,)](x, y, out, n, BLOCK=64, num_dpus=160, num_tasklets=4, dpu_timing=timing)
    return out.tobytes(), edsl.backend.last_report()


def test_vector_add_on_three_ranks_gives_the_same_bits_and_report(monkeypatch, remote_only):
    here, there = _both(monkeypatch, _vector_add)
    assert here == there
    assert there[1].dpus_used == 160 and there[1].dma_transfers > 0


def test_the_timing_report_is_the_same(monkeypatch, remote_only):
    here, there = _both(monkeypatch, lambda: _vector_add(timing=True))
    assert there[1].timing is not None and len(there[1].timing.per_dpu_cycles) == 160
    assert here == there


def test_a_counter_every_program_adds_to_merges_across_ranks(monkeypatch, remote_only):
    def launch():
        cnt = np.zeros(1, np.int32)
        count[(192,)](np.ones(192 * 16, np.int32), cnt, BLOCK=16, num_dpus=192)
        return cnt.tobytes(), edsl.backend.last_report()
    here, there = _both(monkeypatch, launch)
    assert here == there
    assert np.frombuffer(there[0], np.int32)[0] == 192 * 16           # what a GPU gives


@pytest.mark.parametrize("read", [False, True])
def test_sharing_across_ranks_is_the_same_error(monkeypatch, remote_only, read):
    x = np.zeros(4, np.int32)
    here, there = _both(monkeypatch, lambda: _error(lambda: share[(130,)](x, OTHER=129, READ=read, num_dpus=130)))
    assert here == there
    assert ("DPU 129 reads element 0 of array 'x_ptr'" if read else
            "DPUs 0 and 129 store different values to element 0 of array 'x_ptr'") in there[0]
    np.testing.assert_array_equal(x, 0)                                 # left as transferred


def test_an_out_of_bounds_store_on_a_remote_rank_names_the_line(monkeypatch, remote_only):
    x = np.zeros(150 * 8, np.int32)
    here, there = _both(monkeypatch, lambda: _error(
        lambda: off_the_end[(150,)](x, BAD=140, ALSO=-1, SHARE=False, BLOCK=8, num_dpus=150)))
    assert here == there
    message, loc = there
    assert "on DPU 140" in message and "is outside the launch's arrays" in message
    assert loc.filename == __file__ and loc.lineno == off_the_end.fn.__code__.co_firstlineno + 4
    np.testing.assert_array_equal(x, 0)


@pytest.mark.parametrize("share", [False, True])
def test_of_two_failing_ranks_the_same_dpu_is_named(monkeypatch, remote_only, share):
    # DPUs 70 and 140 fail; with `share`, DPUs 0 and 129 also store to one
    # element, and in one process the DPUs run one by one up to DPU 70.
    x = np.zeros(150 * 8, np.int32)

    def launch():
        return _error(lambda: off_the_end[(150,)](x, BAD=70, ALSO=140, SHARE=share, BLOCK=8, num_dpus=150))
    here, there = _both(monkeypatch, launch)
    assert here == there and "on DPU 70" in there[0]
    np.testing.assert_array_equal(x, 0)


def test_a_rank_a_worker_cannot_run_runs_here(monkeypatch):
    handed_back = ray.remote(lambda *args: "its process uses some of the addresses of the launch's arrays")
    monkeypatch.setattr(ranks, "_remote", lambda _: handed_back)
    with pytest.warns(RuntimeWarning) as warned:
        here, there = _both(monkeypatch, _vector_add)
    assert here == there
    assert [str(w.message).split(" ran in")[0] for w in warned] == \
        ["DPUs 0..63 of kernel 'add_kernel'", "DPUs 64..127 of kernel 'add_kernel'",
         "DPUs 128..159 of kernel 'add_kernel'"]


def test_what_a_worker_cannot_run():
    used = np.zeros(16, np.uint8)
    assert ranks._place(ranks._pages(np.array([used.ctypes.data, used.ctypes.data + 16]))) is None
    triple, cpu, features = jit.host()
    assert ranks._foreign((triple, cpu, features)) is None
    assert "lacks edsl-test" in ranks._foreign((triple, cpu, features + ",+edsl-test"))
    assert ranks._foreign(("riscv64-unknown-linux-gnu", cpu, features)).startswith("its host is")


def test_ctrl_c_cancels_the_tasks(monkeypatch):
    cancelled = []

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(ray, "wait", interrupted)
    monkeypatch.setattr(ray, "cancel", cancelled.append)
    with pytest.raises(KeyboardInterrupt):
        ranks._results(ray, ["rank 0", "rank 1"])
    assert cancelled == ["rank 0", "rank 1"]


def test_ray_is_switched_off_and_on(monkeypatch):
    monkeypatch.setattr(ranks, "run_ranks", lambda *a: pytest.fail("ranks ran on Ray"))
    monkeypatch.setenv("EDSL_DPU_RAY", "0")
    _vector_add()
    monkeypatch.setenv("EDSL_DPU_RAY", "yes")
    with pytest.raises(ArgumentError, match="EDSL_DPU_RAY must be 0 or 1, not 'yes'"):
        _vector_add()
    monkeypatch.setenv("EDSL_DPU_RAY", "1")
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    with pytest.raises(ArgumentError, match="Ray is not initialised"):
        _vector_add()
    monkeypatch.delenv("EDSL_DPU_RAY")
    _vector_add()                                                     # (in this process)


def test_what_runs_on_ray(monkeypatch):
    monkeypatch.delenv("EDSL_DPU_RAY", raising=False)
    job = dpu_run.DpuJob(grid=(130, 1, 1), num_dpus=130, dpus=130, tasklets=1, values=[], table=np.zeros(2, np.int64),
                       scratch=0, spans=[], wram_bytes=8, threads=1, once=False, counters=0)
    assert ranks.on_ray(job)
    assert not ranks.on_ray(dataclasses.replace(job, dpus=64))        # one rank
    assert not ranks.on_ray(dataclasses.replace(job, once=True))      # a kernel that prints: its output in order
    monkeypatch.setenv("EDSL_DPU_RAY", "0")
    assert not ranks.on_ray(job)


def test_each_dpu_has_the_c_files_variables_of_its_own_on_every_rank(monkeypatch, remote_only):
    """A C file's variable restarts on each DPU, here and on the workers alike."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "dpu"))
    from test_c_calls import count_kernel

    def launch():
        out = np.zeros(260, np.int32)
        count_kernel[(260,)](out, num_dpus=130)
        return out
    here, there = _both(monkeypatch, launch)
    np.testing.assert_array_equal(here, there)
    np.testing.assert_array_equal(here, np.tile([1, 2], 130))


def test_each_dpu_has_the_c_functions_variables_in_mram_of_its_own_on_every_rank(monkeypatch, remote_only):
    """A variable in MRAM of a C function: each DPU's own on the workers too
    (its transfers reach the worker's program's variables, and are not merged)."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "dpu"))
    from test_c_calls import running_kernel, running_totals

    x = np.random.default_rng(9).integers(-1000, 1000, 270 * 8, dtype=np.int64)

    def launch():
        out = np.zeros(270, np.int64)
        running_kernel[(270,)](x, out, num_dpus=135)
        return out
    here, there = _both(monkeypatch, launch)
    np.testing.assert_array_equal(here, there)
    np.testing.assert_array_equal(here, running_totals(x, 270, 135))
