"""libdevice's modified Bessel functions of the first kind, `cyl_bessel_i0`
and `cyl_bessel_i1`, on f32 and f64: against NumPy's `i0` and a power series
of I1 (Hypothesis), at their special values, in an exported DPU program, and
the error for a type they do not take."""
import decimal
import pathlib
import sys

import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st
from triton.compiler.errors import CompilationError
from triton.language.extra import libdevice

from edsl.backend.convert import convert_ttir
from edsl.base.errors import CompileError
from launch_strategies import strategies

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "export"))
from export_helpers import export_and_run, needs_cc, output, run_on_model  # noqa: E402

DPUS, TASKLETS = strategies()
BLOCK = 32


@triton.jit
def bessel_kernel(x_ptr, i0_ptr, i1_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(i0_ptr + offs, libdevice.cyl_bessel_i0(x), mask=m)
    tl.store(i1_ptr + offs, libdevice.cyl_bessel_i1(x), mask=m)


def _launch(x, dpus=1, tasklets=1):
    i0, i1 = np.zeros_like(x), np.zeros_like(x)
    bessel_kernel[(triton.cdiv(len(x), BLOCK),)](x, i0, i1, len(x), BLOCK=BLOCK, num_dpus=dpus,
                                                 num_tasklets=tasklets)
    return i0, i1


def series_reference(x, order: int) -> np.ndarray:
    """I0(x) or I1(x) by its power series, the sum of (x/2)**(2k+order) /
    (k! (k+order)!), in 40-digit decimal arithmetic: in float64 the terms'
    recurrence loses about an ulp a term (3e-14 at |x| = 700, some 470
    terms), too coarse to check f64 results."""
    out = []
    with decimal.localcontext() as ctx:
        ctx.prec = 40
        for v in np.asarray(x, np.float64):
            half = decimal.Decimal(float(v)) / 2          # (exact)
            term = total = half if order else decimal.Decimal(1)
            k = 0
            while abs(term) > abs(total) * decimal.Decimal("1e-30"):
                k += 1
                term = term * half * half / (k * (k + order))
                total += term
            out.append(float(total))
    return np.array(out)


def reference(x, order: int) -> np.ndarray:
    """NumPy's I0 (Cephes' expansions in float64), the series for I1."""
    return np.i0(np.asarray(x, np.float64)) if order == 0 else series_reference(x, 1)


# The largest |x| drawn: I0 and I1 stay finite in the type (f32: up to about
# 91.9) and np.i0 does not overflow (f64: exp(x) up to 709.78).
RANGE = {np.float32: 90.0, np.float64: 700.0}
# f32 is computed in f64 and rounded: within an ulp of the rounded reference.
# f64: Cephes' expansions are good to about 2e-15 (np.i0 uses them too).
RTOL = {np.float32: np.finfo(np.float32).eps, np.float64: 16 * np.finfo(np.float64).eps}


@settings(max_examples=20, deadline=None)
@given(data=st.data(), dpus=DPUS, tasklets=TASKLETS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_bessel_i0_i1_against_references(dtype, data, dpus, tasklets):
    """I0 and I1 of any float of the type up to RANGE (subnormals too), on
    several DPUs and tasklets."""
    bound = RANGE[dtype]
    x = np.array(data.draw(st.lists(st.floats(-bound, bound, width=np.finfo(dtype).bits),
                                    min_size=1, max_size=100)), dtype)
    i0, i1 = _launch(x, dpus, tasklets)
    tiny = np.finfo(dtype).smallest_subnormal          # (I1 of a subnormal: x/2, rounded)
    for order, got in ((0, i0), (1, i1)):
        np.testing.assert_allclose(got, reference(x, order).astype(dtype), rtol=RTOL[dtype], atol=tiny,
                                   err_msg=f"I{order}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_bessel_special_values(dtype):
    """I0 is even and I1 odd (I1(-0) = -0), both infinite at +-inf, NaN at
    NaN; finite up to where the type overflows (f64: past exp's overflow)."""
    big = {np.float32: 91.5, np.float64: 713.5}[dtype]    # I0 just below the type's overflow
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, big, -big, 2 * big, -2 * big], dtype)
    i0, i1 = _launch(x)
    np.testing.assert_array_equal(i0[:5], np.array([1, 1, np.inf, np.inf, np.nan], dtype))
    np.testing.assert_array_equal(i1[:5], np.array([0, -0.0, np.inf, -np.inf, np.nan], dtype))
    assert np.signbit(i1[1]) and not np.signbit(i1[0])
    for order, got in ((0, i0), (1, i1)):
        want = series_reference(x[5:7], order).astype(dtype)
        np.testing.assert_allclose(got[5:7], want, rtol=RTOL[dtype])
    np.testing.assert_array_equal(i0[7:], [np.inf, np.inf])
    np.testing.assert_array_equal(i1[7:], [np.inf, -np.inf])


def _error_line(err) -> int:
    """The kernel-file line an error names (an edsl error's location, or the
    node of Triton's front end, counted from the `def` line)."""
    if isinstance(err, CompileError):
        return err.loc.lineno
    return bessel_f16_kernel.fn.__code__.co_firstlineno + err.node.lineno - 1


@triton.jit
def bessel_f16_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, libdevice.cyl_bessel_i1(x))


def test_bessel_of_f16_is_an_error_at_its_line():
    """libdevice has no f16 form: the call's line is named."""
    x = np.ones(8, np.float16)
    with pytest.raises((CompileError, CompilationError)) as err:
        bessel_f16_kernel[(1,)](x, x.copy(), BLOCK=8)
    assert _error_line(err.value) == bessel_f16_kernel.fn.__code__.co_firstlineno + 3


def test_bessel_of_another_type_in_ttir_is_an_edsl_error_at_its_line():
    """The conversion takes f32 and f64 only (a TTIR call on f16 names its line)."""
    ttir = """#loc = loc("k.py":1:1)
#loc7 = loc("k.py":7:5)
module {
  tt.func public @k(%x: !tt.ptr<f16> loc(#loc)) {
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32> loc(#loc)
    %p = tt.splat %x : !tt.ptr<f16> -> tensor<64x!tt.ptr<f16>> loc(#loc)
    %a = tt.addptr %p, %r : tensor<64x!tt.ptr<f16>>, tensor<64xi32> loc(#loc)
    %v = tt.load %a : tensor<64x!tt.ptr<f16>> loc(#loc)
    %b = tt.extern_elementwise %v {libname = "", libpath = "", pure = true, symbol = "__nv_cyl_bessel_i0f"} : (tensor<64xf16>) -> tensor<64xf16> loc(#loc7)
    tt.store %a, %b : tensor<64x!tt.ptr<f16>> loc(#loc)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
"""
    with pytest.raises(CompileError, match="'__nv_cyl_bessel_i0f' is supported for float32 and "
                                           "float64 only") as err:
        convert_ttir(ttir)
    assert (err.value.loc.filename, err.value.loc.lineno) == ("k.py", 7)


@triton.jit
def bessel_both_kernel(x32_ptr, x64_ptr, i0_32_ptr, i1_32_ptr, i0_64_ptr, i1_64_ptr, n,
                       BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x32 = tl.load(x32_ptr + offs, mask=m)
    x64 = tl.load(x64_ptr + offs, mask=m)
    tl.store(i0_32_ptr + offs, libdevice.cyl_bessel_i0(x32), mask=m)
    tl.store(i1_32_ptr + offs, libdevice.cyl_bessel_i1(x32), mask=m)
    tl.store(i0_64_ptr + offs, libdevice.cyl_bessel_i0(x64), mask=m)
    tl.store(i1_64_ptr + offs, libdevice.cyl_bessel_i1(x64), mask=m)


@needs_cc
def test_bessel_exports_and_gives_the_models_results(tmp_path):
    """The exported DPU program computes I0 and I1 with the functions the
    conversion defines (printed into its C): the model's results."""
    x64 = np.concatenate([np.linspace(-30, 30, 55), [0.0, -0.0, 7.999, 8.0, 8.001, 90, -650, np.inf,
                                                     np.nan]])
    x32 = x64.astype(np.float32)
    n = len(x64)
    args = [x32, x64, *(np.zeros_like(x32) for _ in range(2)), *(np.zeros_like(x64) for _ in range(2))]
    names = ["i0_32_ptr", "i1_32_ptr", "i0_64_ptr", "i1_64_ptr"]
    grid = (triton.cdiv(n, BLOCK),)
    folder = tmp_path / "project"
    export_and_run(folder, bessel_both_kernel, args + [n], {"BLOCK": BLOCK}, grid, dpus=1, tasklets=2)
    model = run_on_model(bessel_both_kernel, args + [n], {"BLOCK": BLOCK}, grid, dpus=1, tasklets=2)
    for name, want in zip(names, model[2:6]):
        np.testing.assert_array_equal(output(folder, name, want), want, err_msg=name)
    finite = np.isfinite(x64)
    for k, (x, order) in enumerate([(x32, 0), (x32, 1), (x64, 0), (x64, 1)]):
        with np.errstate(over="ignore"):                 # (f32 of I(-650): inf, as computed)
            want = reference(x[finite], order).astype(x.dtype)
        np.testing.assert_allclose(model[2 + k][finite], want, rtol=RTOL[x.dtype.type], err_msg=names[k])
