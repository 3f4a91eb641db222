"""Each seam of edsl.backend.triton_internals (Triton's undocumented names) on
the installed Triton: CI runs these on the lowest Triton and the newest."""
import re

import numpy as np
import pytest
import triton
import triton.language as tl

from edsl.backend import triton_internals
from edsl.backend.compiler import TARGET
from edsl.backend.driver import DpuDriver

VERSION = tuple(int(x) for x in triton.__version__.split(".")[:2])


@triton.jit
def copy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@triton.jit
def broken_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, 3), 1.0)              # (a range of 3: not a power of 2)


def test_libtriton_has_the_ir_and_passes_the_stages_use():
    bindings = triton_internals.libtriton()
    assert callable(bindings.ir.builder) and callable(bindings.ir.pass_manager)
    assert callable(bindings.passes.common.add_inliner)


def test_triton_reads_the_default_backend_variable_from_3_7_on():
    assert triton_internals.reads_default_backend() == (VERSION >= (3, 7))


def test_the_active_driver_is_read_and_set():
    previous = triton_internals.active_driver()
    driver = DpuDriver()
    try:
        triton_internals.set_active_driver(driver)
        assert triton_internals.active_driver() is driver and triton.runtime.driver.active is driver
    finally:
        triton_internals.set_active_driver(previous)


def test_the_argument_specializer_is_wrapped_once():
    out = np.zeros(4, np.float32)
    copy_kernel[(1,)](np.arange(4, dtype=np.float32), out, BLOCK=4)     # bare arrays: wrapped
    assert (out == np.arange(4)).all()
    import triton.runtime.jit as jit
    assert jit.native_specialize_impl._edsl_wrapped and callable(jit.native_specialize_impl.native)
    assert triton_internals.wrap_specialization(lambda native: native) is False


def test_tensor_descriptors_are_decomposed_from_3_7_on():
    expansion = triton_internals.descriptor_expansion()
    assert (expansion is not None) == (VERSION >= (3, 7))
    if expansion is not None:
        expand_signature, decompose_descriptor = expansion
        assert callable(expand_signature) and callable(decompose_descriptor)


def test_the_jit_classes():
    assert isinstance(copy_kernel, triton_internals.jit_function_class())
    callable_class = triton_internals.jit_callable_class()
    assert callable_class is None or isinstance(callable_class, type)


def test_a_kernel_compiles_without_a_launch_and_front_end_errors_are_triton_s():
    compiled = triton_internals.compile_kernel(copy_kernel,
                                               {"x_ptr": "*fp32", "out_ptr": "*fp32", "BLOCK": "constexpr"},
                                               {"BLOCK": 4}, TARGET, {"num_dpus": 1})
    assert "llmlir" in compiled.asm
    with pytest.raises(triton_internals.compilation_error_class()):
        triton_internals.compile_kernel(broken_kernel, {"x_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 4},
                                        TARGET, {"num_dpus": 1})


def test_the_stages_hook_is_read_and_set():
    previous = triton_internals.stages_hook()

    def hook(*args, **kwargs):
        return None
    try:
        triton_internals.set_stages_hook(hook)
        assert triton_internals.stages_hook() is hook
    finally:
        triton_internals.set_stages_hook(previous)


TTIR = """module {
  tt.func public @k(%p: !tt.ptr<i32>) {
    %v = arith.constant 1 : i32
    %t = arith.constant true
    %r = tt.atomic_rmw add, acq_rel, gpu, %p, %v, %t : (!tt.ptr<i32>, i32, i1) -> i32
    tt.return
  }
}
"""


def test_a_ttir_text_is_parsed_by_triton_and_printed_generically():
    mod = triton_internals.parse_ttir(TTIR)
    text = triton_internals.generic_form(mod)
    assert '"tt.func"()' in text and '"tt.atomic_rmw"(' in text and '"tt.return"()' in text
    assert triton_internals.GENERIC_MARK not in text


def test_the_enum_properties_name_the_values_triton_prints():
    enums = triton_internals.op_enums()
    text = triton_internals.generic_form(triton_internals.parse_ttir(TTIR))
    for prop, name in (("atomic_rmw_op", "ADD"), ("sem", "ACQUIRE_RELEASE"), ("scope", "GPU")):
        value = int(re.search(rf"{prop} = (\d+) : i32", text)[1])
        assert enums[prop](value).name == name
