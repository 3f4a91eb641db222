"""Triton's testing tools on the `dpu` backend (edsl.backend.bench):
`triton.testing.do_bench` with its return modes and quantiles, and a
`perf_report` benchmark, timed on the host's clock and, with
EDSL_BENCH_CLOCK=upmem, on the estimated UPMEM time of the launches."""
import numpy as np
import pytest
import triton
import triton.language as tl
import triton.testing

from edsl.backend import last_report


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


def _add(n, **options):
    x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    out = np.empty_like(x)
    return (lambda: add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256, num_dpus=2, **options), out,
            x + y)


def test_do_bench_times_launches_on_the_host_clock():
    launch, out, want = _add(4096)
    ms = triton.testing.do_bench(launch, warmup=1, rep=5)
    assert ms > 0
    np.testing.assert_array_equal(out, want)
    q = triton.testing.do_bench(launch, warmup=1, rep=5, quantiles=[0.2, 0.5, 0.8])
    assert len(q) == 3 and 0 < q[0] <= q[1] <= q[2]
    assert triton.testing.do_bench(launch, warmup=1, rep=5, return_mode="min") > 0


def test_do_bench_on_the_upmem_clock_gives_the_estimate(monkeypatch):
    """Each launch counts its estimated UPMEM time (DPU time and transfers),
    so a benchmark of one launch reads what the launch's report estimates.
    (The variable also makes dpu_timing=True the default of kernels compiled
    after it is set.)"""
    monkeypatch.setenv("EDSL_BENCH_CLOCK", "upmem")
    launch, out, want = _add(8192, dpu_timing=True)
    ms = triton.testing.do_bench(launch, warmup=1, rep=5, return_mode="median")
    estimate = last_report().timing.seconds * 1e3
    assert ms == pytest.approx(estimate, rel=1e-9)
    np.testing.assert_array_equal(out, want)


def test_the_upmem_clock_refuses_a_launch_without_an_estimate(monkeypatch):
    monkeypatch.setenv("EDSL_BENCH_CLOCK", "upmem")
    x = np.ones(256, np.float32)
    with pytest.raises(RuntimeError, match="launch it with dpu_timing=True"):
        triton.testing.do_bench(lambda: add_kernel[(1,)](x, x, x, 256, BLOCK=256, dpu_timing=False), rep=1)


def test_a_perf_report_benchmark_runs(tmp_path):
    @triton.testing.perf_report(triton.testing.Benchmark(
        x_names=["n"], x_vals=[1024, 4096], line_arg="provider", line_vals=["dpu"], line_names=["DPU model"],
        ylabel="ms", plot_name="vector-add", args={}))
    def bench(n, provider):
        launch, _, _ = _add(n)
        return triton.testing.do_bench(launch, warmup=1, rep=3, quantiles=[0.5, 0.2, 0.8])
    frame = bench.run(return_df=True, print_data=False, save_path=str(tmp_path))
    assert list(frame["n"]) == [1024, 4096] and (frame["DPU model (ms)"] > 0).all()
