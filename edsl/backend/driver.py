"""The `dpu` Triton driver: runs compiled kernels on the host DPU model.

Active when no other Triton driver is (a machine without a GPU), or anywhere
with `TRITON_DEFAULT_BACKEND=dpu`. Importing this module is cheap: NumPy and
the MLIR bindings load on first use.

Launch options: `kernel[grid](..., num_dpus=4, num_tasklets=16, dpu_timing=True)`.
Pointer arguments are NumPy arrays. Stock Triton types a pointer argument by
its `data_ptr()` and `dtype`, which a bare `numpy.ndarray` lacks; while this
driver is active, the argument specializer Triton's launcher binds
(`triton_internals.wrap_specialization`) is wrapped so that a bare array (an item of a tuple argument
too) is typed as a zero-copy `edsl.backend.array(a)` view and a NumPy scalar
as the Python number it holds.
An array of an 8-bit float of ml_dtypes is typed by its Triton name (Triton's
specializer types every such dtype it does not know as fp8e4nv); one with no
Triton type is refused. Everything else goes to Triton's own specializer
unchanged.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING

from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase

from ..target.dpu import MAX_DPUS, MAX_TASKLETS, MRAM_BYTES
from ..base.errors import ArgumentError, EdslError, caller_location, file_of_kernel_site
from . import triton_internals
from .compiler import DPUS_ENV, MAX_NUM_WARPS, KernelRecord, default_count

# 32-bit registers of a DPU tasklet (each of the 24 hardware threads has its own).
TASKLET_REGS = 24

_state = threading.local()
if TYPE_CHECKING:
    from ..dpu.runtime import Program

_programs: dict = {}


def _other_driver_active() -> bool:
    if getattr(_state, "checking", False):      # another plug-in asking the same question
        return True
    _state.checking = True
    try:
        from triton.backends import backends
        for name, backend in backends.items():
            if name == "dpu":
                continue
            try:
                if backend.driver.is_active():
                    return True
            except Exception:
                continue
        return False
    finally:
        _state.checking = False


_OTHER_ACTIVE: list = []


_DRIVER: list = []


def activate(driver=None):
    """Make a driver Triton's active driver in this process, also where a GPU driver is active.

    Args:
        driver: The driver (default: the DPU model's).

    Returns:
        The driver it replaces (None: Triton's default, created when first asked for).
    """
    if driver is None:
        if not _DRIVER:
            _DRIVER.append(DpuDriver())
        driver = _DRIVER[0]
    previous = triton_internals.active_driver()
    triton_internals.set_active_driver(driver)
    return previous


@contextmanager
def activated(driver=None):
    """`activate(driver)` for a `with` block; the driver active before it after.

    Args:
        driver: The driver (default: the DPU model's).
    """
    previous = activate(driver)
    try:
        yield
    finally:
        triton_internals.set_active_driver(previous)


def install_array_specialization() -> None:
    """Let launches take bare NumPy arrays and scalars (see the module docstring)."""
    import numpy as np
    from .arrays import DpuArray

    def typed(arg):
        if type(arg) is np.ndarray:
            arg = arg.view(DpuArray)
        elif isinstance(arg, np.generic):
            arg = arg.item()
        elif isinstance(arg, tuple):       # Triton specializes a tuple's items in C++
            items = [typed(a) for a in arg]
            arg = type(arg)(*items) if hasattr(arg, "_fields") else tuple(items)
        if isinstance(arg, np.ndarray) and arg.dtype.kind == "V" and arg.dtype.itemsize == 1:
            arg = _typed_fp8(arg)
        return arg

    def wrap(native):
        def specialize(backend, arg, is_const, specialize_value, align):
            return native(backend, typed(arg), is_const, specialize_value, align)
        return specialize
    triton_internals.wrap_specialization(wrap)


def _typed_fp8(a):
    """An array of 8-bit floats (ml_dtypes) as Triton's typed view of its bytes."""
    import numpy as np
    import triton
    import triton.language as tl

    from ..target import dtypes
    from .arrays import DpuArray
    s = dtypes.of_numpy(a.dtype)
    if s is None or s.triton is None or s.mlir == "f8E4M3B11FNUZ":
        # (Triton's fp8e4b15 has exponent bias 15, ml_dtypes' float8_e4m3b11fnuz 11)
        raise ArgumentError(f"an array of {a.dtype} has no Triton element type; Triton's 8-bit "
                            "floats are float8_e4m3fn, float8_e5m2, float8_e4m3fnuz and "
                            "float8_e5m2fnuz, or uint8 data through triton.reinterpret(x, tl.float8e4b15)")
    return triton.reinterpret(a.view(np.uint8).view(DpuArray), tl.dtype(s.triton))


@dataclasses.dataclass(frozen=True)
class LoadedKernel:
    """A kernel loaded into this process (Triton's `function` of it): its
    program and its record."""
    program: Program
    record: KernelRecord


class DpuUtils:
    """What Triton's `CompiledKernel` asks of a driver's `utils`."""

    def load_binary(self, name, kernel, shared, device):
        loaded = _programs.get(kernel)
        if loaded is None:
            from ..dpu.runtime import Program
            record, obj = KernelRecord.from_program(kernel)
            # (the sites name the lines of the kernel's run-time checks and of the
            # EDSL functions inlined in it, so that their errors name them)
            loaded = _programs[kernel] = LoadedKernel(Program(obj, record.name, record.check_sites(),
                                                              record.counters), record)
        # Figures for occupancy code (`kernel.n_regs`, `kernel.n_spills`):
        # every tasklet has its 24 registers; spills are the words of the
        # kernel's MRAM scratch (CUDA counts local memory in 32-bit words).
        n_spills = loaded.record.scratch_bytes // 4
        return loaded, loaded, TASKLET_REGS, n_spills, MAX_NUM_WARPS     # Triton's check of num_warps

    def unload_module(self, module):
        pass

    def get_device_properties(self, device):
        # "Shared memory" is where a program's tiles live: WRAM, and for tiles
        # that do not fit there the DPU's MRAM scratch (edsl.backend.convert.
        # spill), so a kernel's tiles may take up to the MRAM bank the launch's
        # arrays leave free. The bank is the figure a device property can give;
        # the launch refuses arrays and scratch that do not fit together.
        # A "multiprocessor" is a DPU (a rank of them), a "warp" one tasklet,
        # and the register file that of the DPU's 24 hardware threads.
        from ..dpu.timing import DPUS_PER_RANK
        return {"max_shared_mem": MRAM_BYTES, "multiprocessor_count": DPUS_PER_RANK,
                "max_num_regs": MAX_TASKLETS * TASKLET_REGS, "warpSize": 1}


def _opaque_to_torch_compile(fn):
    """`fn`, which torch.compile runs as it is rather than tracing it (where
    torch is loaded): a launch hands host memory to compiled code by address,
    which Dynamo cannot trace (its NumPy calls would become torch ops on fake
    tensors). Triton's `run` already breaks the graph at a launch; this keeps
    Dynamo out of the frames below it."""
    torch = sys.modules.get("torch")
    return torch.compiler.disable(fn, recursive=True) if torch is not None else fn


class DpuLauncher:
    """Called by Triton for `kernel[grid](...)`: runs the grid on the DPU model."""

    def __init__(self, src, metadata):
        signature = getattr(src, "signature", {})
        self.signature = list(signature.items())
        self.num_dpus = getattr(metadata, "num_dpus", None)       # None: EDSL_NUM_DPUS, else 1
        self.machine_dpus = getattr(metadata, "machine_dpus", MAX_DPUS)
        self.num_tasklets = getattr(metadata, "num_tasklets", 1)
        self.report = None
        # The launched kernel's file, from which the compiled kernel's sites are
        # named (Triton's cache shares it between copies of one source, see
        # services.Sites.file_name).
        fn = getattr(src, "fn", None)
        self.file = fn.fn.__code__.co_filename if fn is not None else ""
        from .model import launch
        self._launch = _opaque_to_torch_compile(launch)

    def __call__(self, gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata,
                 launch_enter_hook, launch_exit_hook, *args):
        launch = self._launch
        if launch_enter_hook is not None:
            launch_enter_hook(launch_metadata)
        runtime, values = _runtime_arguments(self.signature, args)
        try:
            dpus = self.num_dpus or default_count(DPUS_ENV, self.machine_dpus)
            self.report = launch(function.program, function.record, (gridX, gridY, gridZ), runtime, values,
                                 dpus, self.num_tasklets)
        except EdslError as err:
            if err.loc is not None and not os.path.isabs(err.loc.filename):
                where = file_of_kernel_site(err.loc.filename, self.file)
                raise type(err)(err.message, dataclasses.replace(err.loc, filename=where)) from None
            if err.loc is not None:
                raise
            # A launch-wide error (arguments, grid) points at the launch's line.
            raise type(err)(err.message, caller_location()) from None
        if launch_exit_hook is not None:
            launch_exit_hook(launch_metadata)


def _runtime_arguments(signature, args) -> tuple[list, list]:
    """The (name, type) and value of each argument the program takes, in the
    order of its parameters: tuples flattened (as Triton's launchers flatten
    them), no constexprs, and a host-side tensor descriptor (`TensorDescriptor`)
    as the arguments Triton's descriptor-to-pointer rewrite gave the kernel,
    which Triton's own `expand_signature` / `decompose_descriptor` name."""
    runtime, values = [], []

    def visit(name, ty, value):
        if ty == "constexpr":
            return
        if isinstance(ty, tuple):          # a tuple argument (a namedtuple too)
            for k, (t, v) in enumerate(zip(ty, value)):
                visit(f"{name}[{k}]", t, v)
            return
        if isinstance(ty, str) and ty.startswith("tensordesc"):
            expansion = triton_internals.descriptor_expansion()
            if expansion is None:    # Triton before 3.7 has no host-side decomposition
                raise ArgumentError(f"argument '{name}' of type {ty}: host-side tensor descriptors "
                                    "need triton 3.7 or later on the DPU backend")
            expand_signature, decompose_descriptor = expansion
            types = expand_signature([ty], None, "tensordesc")
            parts = decompose_descriptor(value)
            runtime.extend((f"{name}[{k}]", t) for k, t in enumerate(types))
            values.extend(parts)
            return
        runtime.append((name, ty))
        values.append(value)

    for (name, ty), value in zip(signature, args):
        visit(name, ty, value)
    return runtime, values


class DpuDriver(DriverBase):

    def __init__(self):
        self.utils = DpuUtils()
        self.launcher_cls = DpuLauncher
        install_array_specialization()

    @staticmethod
    def is_active():
        if not _OTHER_ACTIVE:
            _OTHER_ACTIVE.append(_other_driver_active())
        if os.environ.get("TRITON_DEFAULT_BACKEND") == "dpu":
            if _OTHER_ACTIVE[0] and not triton_internals.reads_default_backend():
                raise RuntimeError(
                    "TRITON_DEFAULT_BACKEND=dpu: this Triton cannot choose between the GPU driver "
                    "and the DPU model (Triton 3.7 and later read the variable); choose the DPU "
                    "model in the process with edsl.backend.activate() or "
                    "`with edsl.backend.activated():`")
            return True
        return not _OTHER_ACTIVE[0]

    def get_current_target(self):
        return GPUTarget("dpu", "upmem", 1)

    def get_current_device(self):
        # torch's id of the device the arrays are on (`torch.cpu.current_device()`):
        # Triton keys a kernel's compiled variants by this id, and code written
        # for Triton looks them up by torch's (`kernel.device_caches[...]`).
        return "cpu"

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0

    def get_active_torch_device(self):
        # The model reads host memory: torch CPU tensors are its arrays.
        import torch
        return torch.device("cpu")

    def map_python_to_cpp_type(self, ty: str) -> str:
        if ty.startswith("*"):
            return "uint64_t"
        from ..target import dtypes
        s = dtypes.by_triton(ty)
        return s.c or f"uint{s.width}_t"          # (16- and 8-bit floats: their bits)

    def get_benchmarker(self):
        from .bench import benchmark
        return benchmark

    def get_device_interface(self):
        # what triton.testing.do_bench times with (edsl.backend.bench)
        from .bench import DeviceInterface
        return DeviceInterface

    def get_empty_cache_for_benchmark(self):
        return None

    def clear_cache(self, cache):
        pass
