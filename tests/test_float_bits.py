"""The one rule that turns a Python float into a 16- or 8-bit float's bits
(`edsl.target.dtypes.float_bits`): Triton's GPU launcher's for fp16 and bf16,
one rounding to nearest even for the 8-bit formats, whatever ml_dtypes is
installed (CI runs this file with the oldest and the newest it allows). The
exported runner's C twin is checked against it in tests/export/test_export_half.py."""
import math
import struct

import ml_dtypes
import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from edsl.target import dtypes

F16, BF16 = dtypes.by_mlir("f16"), dtypes.by_mlir("bf16")
EIGHT_BIT = [s for s in dtypes.SCALARS if s.nbytes == 1 and s.is_float and s.float_format.kind != "e8m0"]


# Cases where rounding twice (through f32) and rounding once differ, and
# where ml_dtypes 0.6 and 0.7 disagree: the rule's answer pinned.
@pytest.mark.parametrize("scalar, value, bits", [
    (BF16, 1 + 2 ** -8 + 2 ** -40, 0x3F80),     # f32 keeps 1 + 2**-8 (a tie of bf16), truncated
    (BF16, 1 + 3 * 2 ** -9, 0x3F80),            # truncated where rounding would go up (0x3F81)
    (BF16, -(1 + 3 * 2 ** -9), 0xBF80),         # toward zero, negative too
    (BF16, 1e300, 0x7F80),                      # beyond f32: infinity
    (BF16, math.nan, 0x7FC0),
    (F16, 1 + 2 ** -11 + 2 ** -40, 0x3C01),     # above a tie: up
    (F16, 1 + 2 ** -11, 0x3C00),                # a tie: to even
    (F16, 2.0 ** -25, 0x0000),                  # half the smallest subnormal: to even, zero
    (F16, 3 * 2.0 ** -26, 0x0001),
    (F16, 65504.0, 0x7BFF),
    (F16, -math.inf, 0xFC00),
    (dtypes.by_mlir("f8E5M2"), 1 + 2 ** -3 + 2 ** -40, 0x3D),     # through f32 it would be a tie: 0x3C
    (dtypes.by_mlir("f8E4M3FN"), 1 + 2 ** -4 + 2 ** -40, 0x39),
    (dtypes.by_mlir("f8E4M3FN"), 1e6, 0x7F),                      # no infinity: NaN
    (dtypes.by_mlir("f8E4M3FNUZ"), -0.0, 0x00),                   # no negative zero
    (dtypes.by_mlir("f8E4M3FNUZ"), -1e6, 0x80),                   # NaN is the sign bit alone
    (dtypes.by_mlir("f4E2M1FN"), 100.0, 0x7),                     # neither: saturated
])
def test_pinned_roundings(scalar, value, bits):
    assert dtypes.float_bits(scalar, value) == bits


def test_fp16_beyond_its_range_is_refused_as_triton_refuses_it():
    with pytest.raises(OverflowError):
        dtypes.float_bits(F16, 65520.0)
    assert dtypes.float_bits(F16, 65519.99) == 0x7BFF


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-65504, max_value=65504)
       | st.floats(-1e-4, 1e-4))
@example(1 + 2 ** -11 + 2 ** -40)
def test_the_hand_written_rounding_is_cpythons_for_fp16(x):
    """The 8-bit formats' rounding, written by hand, checked on fp16 against
    CPython's (the reference Triton's launcher calls)."""
    assert dtypes._nearest_even(F16.float_format, x) == struct.unpack("<H", struct.pack("<e", x))[0]


@pytest.mark.parametrize("scalar", EIGHT_BIT, ids=lambda s: s.mlir)
@given(x=st.floats(width=32))
def test_8_bit_rounding_from_f32_values_is_ml_dtypes(scalar, x):
    """On values exact in f32, where ml_dtypes rounds once in every release,
    the rule agrees with it bit for bit."""
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.array([x], np.float32).astype(getattr(ml_dtypes, scalar.numpy)).view(np.uint8)[0]
    got = dtypes.float_bits(scalar, x)
    if math.isnan(x) and scalar.float_format.kind == "finite":
        assert got & ~(1 << (scalar.float_format.bits - 1)) == 0     # no NaN: a zero
    elif math.isnan(x):      # NaN: any NaN pattern of the format
        assert np.isnan(np.array([got], np.uint8).view(getattr(ml_dtypes, scalar.numpy))[0])
    else:
        assert got == want


@given(x=st.floats(allow_nan=False))
def test_bf16_is_the_high_half_of_the_f32(x):
    with np.errstate(over="ignore"):
        f32 = np.array([x], np.float64).astype(np.float32)
    assert dtypes.float_bits(BF16, x) == int(f32.view(np.uint32)[0]) >> 16
