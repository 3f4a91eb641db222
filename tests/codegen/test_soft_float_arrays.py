"""bf16 and 8-bit float arrays (ml_dtypes' NumPy dtypes) as arguments of EDSL
functions and Triton kernels, computed in f32 and rounded as ml_dtypes rounds."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import edsl
from edsl import InOut, Input
from float_kernels import halve_kernel


@edsl.dialect
def scale_bf16(y: InOut["memref<?xbf16>"], x: Input["memref<?xbf16>"], a: Input["f32"]):
    for i in range(y.shape[0]):
        y[i] = edsl.bf16(a * edsl.f32(x[i]))


@edsl.dialect
def widen_fp8(y: InOut["memref<?xf32>"], x: Input["memref<?xf8E4M3FN>"]):
    for i in range(y.shape[0]):
        y[i] = x[i]


finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@given(hnp.arrays(np.float32, st.integers(0, 40), elements=finite32), finite32)
def test_bf16_arrays_round_as_ml_dtypes(x32, a):
    x = x32.astype(ml_dtypes.bfloat16)
    y = np.zeros_like(x)
    scale_bf16(y, x, a)
    with np.errstate(over="ignore"):
        want = (np.float32(a) * x.astype(np.float32)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(y.view(np.uint16), want.view(np.uint16))


def test_every_fp8_e4m3fn_value_widens_exactly():
    x = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn)
    y = np.zeros(256, np.float32)
    widen_fp8(y, x)
    want = x.astype(np.float32)
    assert ((y == want) | (np.isnan(y) & np.isnan(want))).all()


def test_a_float32_array_for_a_bf16_memref_is_refused():
    with pytest.raises(edsl.ArgumentError, match="expected dtype bfloat16, got float32"):
        scale_bf16(np.zeros(4, np.float32), np.zeros(4, np.float32), 1.0)


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16])
def test_triton_kernels_take_bf16_arrays(dtype):
    x = (np.arange(300, dtype=np.float32) - 150).astype(dtype)
    y = np.zeros_like(x)
    halve_kernel[(3,)](x, y, 300, BLOCK=128)
    want = (x.astype(np.float32) * np.float32(0.5)).astype(dtype)
    np.testing.assert_array_equal(y.view(np.uint16), want.view(np.uint16))
