"""What Triton's own host code asks of the `dpu` driver: the torch device,
figures for occupancy, tuple arguments, and options and ops of GPU targets
that only tune or order."""
import importlib.util
import subprocess
import sys

import numpy as np
import pytest
import triton
import triton.language as tl

from edsl.backend.compiler import DpuBackend, TARGET
from edsl.backend.driver import TASKLET_REGS
from edsl.target.dpu import MAX_TASKLETS, MRAM_BYTES

from edsl.backend.driver import DpuDriver
import edsl.backend.driver as dpu_driver
from edsl.backend import triton_internals


def active():
    """Triton's active driver (the DPU model's in this package: tests/conftest.py)."""
    return triton.runtime.driver.active


@pytest.mark.parametrize("module", ["edsl.backend.compiler", "edsl.backend.driver"])
def test_the_modules_triton_discovers_import_first_in_a_process(module):
    """Triton's discovery of backends imports these two at `import triton`;
    imported first, neither may be half-imported when it does."""
    run = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]


# ---- the torch device ------------------------------------------------------------------------

@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed here")
def test_the_active_torch_device_is_the_cpu():
    import torch
    device = active().get_active_torch_device()
    assert device == torch.device("cpu")
    x = torch.arange(8, dtype=torch.float32, device=device)
    out = torch.empty_like(x)
    copy_kernel[(1,)](x, out, BLOCK=8)
    assert torch.equal(out, x)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed here")
def test_compiled_variants_are_kept_under_torchs_id_of_the_device():
    """Code written for Triton finds a kernel's compiled variants under the
    id torch gives the device its tensors are on (Triton's own tests clear
    them so, to see the compile hook called)."""
    import torch
    assert active().get_current_device() == torch.cpu.current_device()
    x = torch.arange(8, dtype=torch.float32)
    copy_kernel[(1,)](x, torch.empty_like(x), BLOCK=8)
    cache = copy_kernel.device_caches[torch.cpu.current_device()][0]
    assert cache
    cache.clear()
    called, hook = [], triton.knobs.runtime.jit_cache_hook
    triton.knobs.runtime.jit_cache_hook = lambda *args, **kwargs: called.append(kwargs["compile"]["device"])
    try:
        copy_kernel[(1,)](x, torch.empty_like(x), BLOCK=8)          # (compiled again: the hook is called)
    finally:
        triton.knobs.runtime.jit_cache_hook = hook
    assert called == [torch.cpu.current_device()]


# ---- figures for occupancy -------------------------------------------------------------------

@triton.jit
def copy_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


def test_device_properties_describe_a_rank_of_dpus():
    p = active().utils.get_device_properties(active().get_current_device())
    assert p["multiprocessor_count"] == 64                  # a rank: 8 chips of 8 DPUs
    assert p["max_num_regs"] == MAX_TASKLETS * TASKLET_REGS == 24 * 24
    assert p["warpSize"] == 1                               # a "thread" is a tasklet
    assert p["max_shared_mem"] == MRAM_BYTES


def test_a_compiled_kernel_reports_registers_spills_and_shared_memory():
    x = np.zeros(256, np.float32)
    kernel = copy_kernel.warmup(x, x.copy(), BLOCK=256, grid=(1,))
    kernel._init_handles()
    assert kernel.n_regs == TASKLET_REGS
    assert kernel.n_spills == 0
    assert kernel.metadata.shared == kernel.function.record.wram_bytes > 0


def test_spilled_tiles_count_as_spills():
    x = np.zeros(32768, np.float32)                          # 128 KiB: more than WRAM
    kernel = copy_kernel.warmup(x, x.copy(), BLOCK=32768, grid=(1,))
    kernel._init_handles()
    record = kernel.function.record
    assert record.scratch_bytes > 0 and record.spills
    assert kernel.n_spills == record.scratch_bytes // 4
    assert kernel.metadata.shared == record.wram_bytes + record.scratch_bytes


def test_occupancy_as_the_fused_softmax_tutorial_computes_it():
    # The figures Triton's tutorial 02 reads, and its NVIDIA formula, with its num_warps = 8.
    p = active().utils.get_device_properties(0)
    x = np.zeros((4, 781), np.float32)
    kernel = copy_kernel.warmup(x, x.copy(), BLOCK=1024, grid=(1,), num_warps=8)
    kernel._init_handles()
    occupancy = p["max_num_regs"] // (kernel.n_regs * p["warpSize"] * 8)
    occupancy = min(occupancy, p["max_shared_mem"] // kernel.metadata.shared)
    assert occupancy == 3
    assert p["multiprocessor_count"] * occupancy == 192


# ---- tuple arguments -------------------------------------------------------------------------

@triton.jit
def tuple_kernel(ptrs, n, scale: tl.constexpr, pair, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(ptrs[0] + offs, mask=m)
    b = tl.load(ptrs[1][0] + offs, mask=m)
    tl.store(ptrs[1][1] + offs, (a + b) * scale + pair[0] * pair[1], mask=m)


def test_tuple_arguments_are_flattened_as_triton_launchers_flatten_them():
    a = np.arange(10, dtype=np.float32)
    b = np.full(10, 0.5, np.float32)
    out = np.zeros(10, np.float32)
    tuple_kernel[(1,)]((a, (b, out)), 10, 2.0, (3, tl.constexpr(4)), BLOCK=16)
    np.testing.assert_array_equal(out, (a + b) * 2 + 12)


def test_a_read_only_array_in_a_tuple_is_refused_where_it_is_stored_through():
    a = np.arange(10, dtype=np.float32)
    out = np.zeros(10, np.float32)
    out.flags.writeable = False
    with pytest.raises(Exception, match=r"ptrs\[1\]\[1\]"):
        tuple_kernel[(1,)]((a, (a, out)), 10, 1.0, (0, tl.constexpr(0)), BLOCK=16)


# ---- options and ops that only tune or order -------------------------------------------------

@pytest.mark.parametrize("option", [{"clc": True}, {"maxnreg": 128}, {"sched4reg": True},
                                    {"min_shared_mem": 1024}, {"waves_per_eu": 2},
                                    {"matrix_instr_nonkdim": 16}, {"kpack": 2},
                                    {"schedule_hint": "attention"}, {"launch_pdl": True}])
def test_tuning_options_of_gpu_targets_are_accepted_and_ignored(option):
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    copy_kernel[(1,)](x, out, BLOCK=64, **option)
    np.testing.assert_array_equal(out, x)


def test_an_unknown_option_is_still_refused():
    x = np.zeros(64, np.float32)
    with pytest.raises(KeyError, match="not_an_option"):
        copy_kernel[(1,)](x, x.copy(), BLOCK=64, not_an_option=1)


def test_parsed_options_keep_the_dpu_settings():
    options = DpuBackend(TARGET).parse_options({"clc": True, "num_tasklets": 4, "maxnreg": 64})
    assert options.num_tasklets == 4 and options.clc is True


@triton.jit
def pdl_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr, USE_GDC: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if USE_GDC:
        tl.extra.cuda.gdc_wait()
    v = tl.load(x_ptr + offs)
    if USE_GDC:
        tl.extra.cuda.gdc_launch_dependents()
    tl.store(y_ptr + offs, v * 2)


def test_programmatic_dependent_launch_ops_are_no_ops():
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    compiled = pdl_kernel[(1,)](x, out, BLOCK=32, USE_GDC=True, launch_pdl=True)
    np.testing.assert_array_equal(out, x * 2)
    # Triton's TTIR keeps them (3.6: as PTX inline asm); the converted kernel has none.
    ttir = compiled.asm["ttir"]
    assert "tt.grid_dependency_wait" in ttir or "griddepcontrol.wait;" in ttir
    assert "tt.grid_dependency_launch_dependents" in ttir or "griddepcontrol.launch_dependents;" in ttir
    assert "grid_dependency" not in compiled.asm["mlir"] and "griddepcontrol" not in compiled.asm["mlir"]


# ---- the backend beside a GPU ----------------------------------------------------------------

def test_activated_makes_the_dpu_model_the_active_driver_for_a_block():
    other = object()
    previous = triton_internals.active_driver()
    triton_internals.set_active_driver(other)
    try:
        with dpu_driver.activated():
            assert isinstance(triton.runtime.driver.active, DpuDriver)
            out = np.zeros(8, np.float32)
            copy_kernel[(1,)](np.arange(8, dtype=np.float32), out, BLOCK=8)
            assert (out == np.arange(8)).all()
        assert triton_internals.active_driver() is other
    finally:
        triton_internals.set_active_driver(previous)


def test_the_variable_cannot_choose_on_a_triton_that_does_not_read_it(monkeypatch):
    """Beside an active GPU driver, Triton 3.6 refuses two active drivers: the
    DPU driver says what to do instead."""
    monkeypatch.setenv("TRITON_DEFAULT_BACKEND", "dpu")
    monkeypatch.setattr(dpu_driver, "_OTHER_ACTIVE", [True])
    monkeypatch.setattr(triton_internals, "reads_default_backend", lambda: False)
    with pytest.raises(RuntimeError, match=r"edsl\.backend\.activate\(\)"):
        DpuDriver.is_active()
    monkeypatch.setattr(triton_internals, "reads_default_backend", lambda: True)
    assert DpuDriver.is_active()
    monkeypatch.delenv("TRITON_DEFAULT_BACKEND")
    assert not DpuDriver.is_active()                 # (the GPU's is Triton's default)
