"""TLE-Raw's spellings on the `dpu` backend (`fl.call` is one API on both
targets): `Input[Literal[...]]`, results by `return`, the one-list
`call(fn, args, output_indices=None)` beside `call(fn, outs, ins)`,
`dialect(deferred=, extern_func_name=)` on a function made by
`types.FunctionType`, the `edsl.tle` module names; each against NumPy, and
the errors, at the kernel's or the function's line."""
import re
import types
from typing import Literal as L

import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st
from triton.compiler.errors import CompilationError

import edsl
import edsl.tle.language.raw as tle_raw
from edsl.tle.raw import Input, InOut, dialect
from edsl.base.errors import AnnotationError

FEW = settings(max_examples=10, deadline=None)


@dialect(name="mlir")
def saxpy(x: Input[L["memref<?xf32>"]], y: Input[L["memref<?xf32>"]], a: Input[L["f32"]]) -> L["memref<?xf32>"]:
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]
    return y


@dialect
def swap_scaled(p: Input[L["memref<?xi32>"]], q: Input[L["memref<?xi32>"]]):
    for i in range(p.shape[0]):
        t = p[i]
        p[i] = q[i] * 2
        q[i] = t * 3
    return q, p                          # results in this order


@dialect
def bump(y: InOut["memref<?xi32>"], c: Input["i32"]):
    for i in range(y.shape[0]):
        y[i] = y[i] + c


@triton.jit
def saxpy_kernel(x_ptr, y_ptr, n, a, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    y = tle_raw.call(saxpy, [x, y, a])
    tl.store(y_ptr + offs, y, mask=m)


@triton.jit
def swap_kernel(p_ptr, q_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = tl.load(p_ptr + offs)
    q = tl.load(q_ptr + offs)
    q2, p2 = tle_raw.call(swap_scaled, [p, q])
    tl.store(p_ptr + offs, p2)
    tl.store(q_ptr + offs, q2)


@triton.jit
def bump_kernel(y_ptr, c, BLOCK: tl.constexpr, ONE_LIST: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = tl.load(y_ptr + offs)
    if ONE_LIST:
        y = tle_raw.call(bump, [y, c])          # outputs: the InOut parameters
    else:
        y = tle_raw.call(bump, [y], [c])
    tl.store(y_ptr + offs, y)


@FEW
@given(n=st.integers(0, 600), a=st.floats(-4, 4, width=32), seed=st.integers(0, 99))
def test_one_list_call_returns_what_the_function_returns(n, a, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    want = np.float32(a) * x + y
    saxpy_kernel[(triton.cdiv(max(n, 1), 128),)](x, y, n, a, BLOCK=128)
    np.testing.assert_array_equal(y, want)


@FEW
@given(seed=st.integers(0, 99))
def test_results_come_in_the_order_of_the_return(seed):
    rng = np.random.default_rng(seed)
    p, q = rng.integers(-1000, 1000, 64, dtype=np.int32), rng.integers(-1000, 1000, 64, dtype=np.int32)
    want_p, want_q = q * 2, p * 3
    swap_kernel[(1,)](p, q, BLOCK=64)
    np.testing.assert_array_equal(p, want_p)
    np.testing.assert_array_equal(q, want_q)


@pytest.mark.parametrize("one_list", [True, False])
def test_inout_results_in_both_forms(one_list):
    y = np.arange(32, dtype=np.int32)
    bump_kernel[(1,)](y, 5, BLOCK=32, ONE_LIST=one_list)
    np.testing.assert_array_equal(y, np.arange(32) + 5)


def test_a_returned_parameter_is_updated_in_place_by_run():
    x, y = np.ones(5, np.float32), np.arange(5, dtype=np.float32)
    saxpy.run(x, y, 2.0)
    np.testing.assert_array_equal(y, np.arange(5) + 2)
    assert saxpy.returns == ["y"] and [s.inout for s in saxpy.params] == [False, True, False]


# --- pointers as outputs, deferred, a function made from another's code -------------------

def _fill_core(out: Input[L["memref<?xf32, MRAM>"]], n: Input[L["i32"]], v: Input[L["f32"]]):
    if edsl.tasklet_id() == 0:
        buf = edsl.wram_alloc([2], edsl.f32)
        buf[0] = v
        buf[1] = v
        for i in range(0, n, 2):
            edsl.mram_write(buf, out, 8, 0, i)


def _bind(name: str, deferred: bool):
    fn = types.FunctionType(_fill_core.__code__, _fill_core.__globals__, name, _fill_core.__defaults__,
                            _fill_core.__closure__)
    return dialect(name="mlir", deferred=deferred, extern_func_name=name)(fn)


fill_eager, fill_deferred = _bind("fill_eager", False), _bind("fill_deferred", True)


@triton.jit
def fill_kernel(out_ptr, n, v, DEFERRED: tl.constexpr):
    if DEFERRED:
        p = tle_raw.call(fill_deferred, [out_ptr, n, v], output_indices=[0])
        tl.store(p + n, v + 1.0)                # the output is the pointer operand itself
    else:
        tle_raw.call(fill_eager, [out_ptr, n, v])


@pytest.mark.parametrize("deferred", [False, True])
def test_a_function_made_by_function_type_with_tle_options(deferred):
    fn = fill_deferred if deferred else fill_eager
    assert (fn.deferred, fn.extern_func_name, fn.__name__) == (deferred, fn.__name__, fn.__name__)
    assert [s.name for s in fn.params] == ["out", "n", "v"]       # annotations read from the source
    out = np.zeros(18, np.float32)
    fill_kernel[(1,)](out, 16, 1.5, DEFERRED=deferred)
    np.testing.assert_array_equal(out[:16], 1.5)
    assert out[16] == (2.5 if deferred else 0.0)


# --- errors -----------------------------------------------------------------------------------

@triton.jit
def indices_with_two_lists(y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = tl.load(y_ptr + offs)
    y = tle_raw.call(bump, [y], [3], output_indices=[0])  # two lists
    tl.store(y_ptr + offs, y)


@triton.jit
def index_out_of_range(y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = tl.load(y_ptr + offs)
    y = tle_raw.call(bump, [y, 3], output_indices=[2])  # range
    tl.store(y_ptr + offs, y)


@triton.jit
def input_tile_as_output(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    x = tle_raw.call(saxpy, [x, y, 2.0], output_indices=[0])  # input
    tl.store(x_ptr + offs, x)


@triton.jit
def too_few_operands(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    x = tle_raw.call(saxpy, [x, x])  # count
    tl.store(x_ptr + offs, x)


@pytest.mark.parametrize("kernel, marker, message", [
    (indices_with_two_lists, "# two lists", r"output_indices goes with one list of operands"),
    (index_out_of_range, "# range", r"output_indices holds operand numbers 0 to 1, not 2"),
    (input_tile_as_output, "# input", r"output 0 is Input parameter 'x' \(memref<\?xf32>\), which the function "
                                      r"cannot update: make it InOut, or return it"),
    (too_few_operands, "# count", r"fl.call\(saxpy\): the function takes 3 operands \(x, y, a\); got 2"),
])
def test_call_form_errors_name_the_kernel_line(kernel, marker, message):
    x = np.zeros(64, np.float32 if kernel in (input_tile_as_output, too_few_operands) else np.int32)
    args = (x, x) if kernel is input_tile_as_output else (x,)
    with pytest.raises(CompilationError) as err:
        kernel[(1,)](*args, BLOCK=16)
    text = str(err.value)
    assert re.search(message, text), text
    assert next(line.strip() for line in kernel.src.splitlines() if marker in line) in text


def _source_line(fn, text: str) -> int:
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_returning_what_is_not_a_parameter_is_refused_at_its_line():
    def f(y: Input[L["memref<4xf32>"]]):
        z = y
        return z

    with pytest.raises(AnnotationError, match=r"returns some of its memref parameters .*not `z`") as err:
        dialect(f)
    assert err.value.loc.lineno == _source_line(f, "return z")


def test_returning_a_scalar_is_refused():
    def f(n: Input[L["i32"]]):
        return n

    with pytest.raises(AnnotationError, match=r"parameter 'n' is a i32: an edsl function returns memrefs"):
        dialect(f)


def test_a_result_annotation_that_disagrees_is_refused_at_its_line():
    def f(y: Input[L["memref<4xf32>"]], x: Input[L["memref<4xi32>"]]) -> L["memref<4xi32>"]:
        return y

    with pytest.raises(AnnotationError, match=r"the result annotation says memref<4xi32>; returned parameter 'y' "
                                              r"is a memref<4xf32>") as err:
        dialect(f)
    assert err.value.loc.lineno == _source_line(f, "-> L[")


def test_a_result_annotation_counts_the_returned_parameters():
    def f(y: Input[L["memref<4xf32>"]], x: Input[L["memref<4xf32>"]]) -> L["memref<4xf32>"]:
        return y, x

    with pytest.raises(AnnotationError, match=r"names 1 types; the function returns 2 parameters \(y, x\)"):
        dialect(f)


def test_literal_of_a_non_string_is_refused():
    with pytest.raises(TypeError, match=r'Input\[Literal\["memref<\?xf32>"\]\]'):
        Input[L[3]]
