"""The scalar types every layer speaks of, in one table: their MLIR, NumPy,
Triton, ctypes and C names, their size, and for floats their bit format.

Importing this module is cheap (no MLIR, no Triton): the Triton backend's
driver reads it at `import triton`.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: sign bit (unless `kind` is "e8m0"),
    `exponent` bits biased by `bias`, `mantissa` stored fraction bits.

    `kind` says how the format spends its top exponent and its sign:
      "ieee"   infinities and NaNs as IEEE 754 (f16, bf16, f32, f64, f8E5M2)
      "fn"     no infinity; NaN only with every bit but the sign set (f8E4M3FN)
      "fnuz"   no infinity, no negative zero; NaN is the sign bit alone
      "finite" neither infinity nor NaN (f4E2M1FN, f6...): overflow and
               infinity saturate, NaN becomes a zero of its sign
      "e8m0"   unsigned powers of two 2**(e - 127); NaN is all ones
    """
    bits: int
    exponent: int
    mantissa: int
    bias: int
    kind: str = "ieee"


@dataclass(frozen=True)
class Scalar:
    """One scalar type. `mlir` is its MLIR type name (unsigned Triton types
    share the signless MLIR integer of their width)."""
    mlir: str
    triton: str | None          # Triton's name in kernel signatures ("fp32", "*fp32" for a pointer)
    numpy: str | None           # NumPy dtype name; bf16 and fp8 types come from ml_dtypes
    ctype: type | None          # the ctypes type of a value passed by value (None: not passable)
    c: str | None               # C type of the UPMEM SDK export (None: not exportable)
    nbytes: int                 # bytes in memory (i1 takes one byte)
    float_format: FloatFormat | None = None
    unsigned: bool = False

    @property
    def is_float(self) -> bool:
        return self.float_format is not None

    @property
    def is_int(self) -> bool:
        return self.float_format is None

    @property
    def width(self) -> int:
        """Bits of a value (a float format's own width; index counts as 64)."""
        if self.float_format is not None:
            return self.float_format.bits
        return {"i1": 1, "index": 64}.get(self.mlir, self.nbytes * 8)


def _ints():
    out = [Scalar("i1", "i1", "bool", ctypes.c_bool, "bool", 1)]
    for bits in (8, 16, 32, 64):
        ct = getattr(ctypes, f"c_int{bits}")
        out.append(Scalar(f"i{bits}", f"i{bits}", f"int{bits}", ct, f"int{bits}_t", bits // 8))
    for bits in (8, 16, 32, 64):
        ct = getattr(ctypes, f"c_uint{bits}")
        out.append(Scalar(f"i{bits}", f"u{bits}", f"uint{bits}", ct, f"uint{bits}_t", bits // 8,
                          unsigned=True))
    out.append(Scalar("i1", "u1", "bool", ctypes.c_bool, "bool", 1, unsigned=True))
    out.append(Scalar("index", None, "int64", ctypes.c_int64, "int64_t", 8))
    return out


SCALARS: tuple[Scalar, ...] = (
    *_ints(),
    Scalar("f16", "fp16", "float16", None, None, 2, FloatFormat(16, 5, 10, 15)),
    Scalar("bf16", "bf16", "bfloat16", None, None, 2, FloatFormat(16, 8, 7, 127)),
    Scalar("f32", "fp32", "float32", ctypes.c_float, "float", 4, FloatFormat(32, 8, 23, 127)),
    Scalar("f64", "fp64", "float64", ctypes.c_double, "double", 8, FloatFormat(64, 11, 52, 1023)),
    # 8-bit and smaller formats: storage formats, converted exactly in software
    # (edsl.lowering.floats). Triton names them fp8e4nv, fp8e5, ...
    Scalar("f8E4M3FN", "fp8e4nv", "float8_e4m3fn", None, None, 1, FloatFormat(8, 4, 3, 7, "fn")),
    Scalar("f8E5M2", "fp8e5", "float8_e5m2", None, None, 1, FloatFormat(8, 5, 2, 15)),
    Scalar("f8E4M3B11FNUZ", "fp8e4b15", "float8_e4m3b11fnuz", None, None, 1,
           FloatFormat(8, 4, 3, 11, "fnuz")),
    Scalar("f8E4M3FNUZ", "fp8e4b8", "float8_e4m3fnuz", None, None, 1, FloatFormat(8, 4, 3, 8, "fnuz")),
    Scalar("f8E5M2FNUZ", "fp8e5b16", "float8_e5m2fnuz", None, None, 1, FloatFormat(8, 5, 2, 16, "fnuz")),
    Scalar("f8E4M3", None, "float8_e4m3", None, None, 1, FloatFormat(8, 4, 3, 7)),
    Scalar("f8E3M4", None, "float8_e3m4", None, None, 1, FloatFormat(8, 3, 4, 3)),
    Scalar("f8E8M0FNU", None, "float8_e8m0fnu", None, None, 1, FloatFormat(8, 8, 0, 127, "e8m0")),
    Scalar("f6E2M3FN", None, "float6_e2m3fn", None, None, 1, FloatFormat(6, 2, 3, 1, "finite")),
    Scalar("f6E3M2FN", None, "float6_e3m2fn", None, None, 1, FloatFormat(6, 3, 2, 3, "finite")),
    Scalar("f4E2M1FN", None, "float4_e2m1fn", None, None, 1, FloatFormat(4, 2, 1, 1, "finite")),
)

# Formats the host computes on natively; the others are emulated in f32.
NATIVE_FLOATS = frozenset({"f32", "f64"})

_BY_MLIR = {}
for _s in SCALARS:
    if not _s.unsigned:
        _BY_MLIR.setdefault(_s.mlir, _s)
_BY_TRITON = {s.triton: s for s in SCALARS if s.triton}


def by_mlir(name: str) -> Scalar | None:
    """The scalar of an MLIR type name (`"f32"`, `"i8"`: signed), or None."""
    return _BY_MLIR.get(name)


def by_triton(name: str) -> Scalar | None:
    """The scalar of a Triton type name (`"fp32"`, `"u8"`, `"fp8e4nv"`), or None."""
    return _BY_TRITON.get(name)


def float_format(mlir_name: str) -> FloatFormat | None:
    s = _BY_MLIR.get(mlir_name)
    return s.float_format if s else None


@lru_cache(None)
def numpy_dtype(s: Scalar):
    """The NumPy dtype of `s` (bf16 and the 8-bit floats through ml_dtypes)."""
    import numpy as np
    if s.numpy is None:
        raise TypeError(f"{s.mlir} has no NumPy dtype")
    if hasattr(np, s.numpy) and s.numpy not in ("bfloat16",):
        return np.dtype(getattr(np, s.numpy))
    import ml_dtypes
    return np.dtype(getattr(ml_dtypes, s.numpy))


def of_numpy(dtype) -> Scalar | None:
    """The (signed, where it matters) scalar of a NumPy dtype, or None."""
    for s in SCALARS:
        if s.numpy is None:
            continue
        try:
            if numpy_dtype(s) == dtype:
                return s
        except (TypeError, AttributeError, ImportError):
            continue
    return None


def of_triton_dtype(dtype) -> Scalar | None:
    """The scalar of a `triton.language` dtype (tl.float32, tl.uint8, ...), or None."""
    if dtype.is_int():
        return by_triton(f"{'u' if dtype.is_int_unsigned() else 'i'}{dtype.primitive_bitwidth}")
    return by_triton(str(dtype))


def triton_dtype_name(s: Scalar) -> str:
    """The name `triton.language.dtype(...)` takes for `s` (`int32`, `uint8`, `fp32`)."""
    if s.is_int:
        return f"{'uint' if s.unsigned else 'int'}{s.width}"
    if s.triton is None:
        raise TypeError(f"{s.mlir} has no Triton type")
    return s.triton


def value_bits(s: Scalar, value):
    """A Python number as the ctypes value a program reads for scalar `s`;
    formats ctypes lacks (f16, bf16, fp8) as their bits (`float_bits`)."""
    if s.ctype is not None:
        return s.ctype(value.item() if hasattr(value, "item") else value)
    word = {1: ctypes.c_uint8, 2: ctypes.c_uint16}[s.nbytes]
    return word(float_bits(s, float(value)))


def float_bits(s: Scalar, x: float) -> int:
    """The bits of Python float `x` as a value of the 16- or 8-bit float type
    `s`: the one rule by which the DPU model, the exported runner
    (`edsl_scalar_half_bits` in kernel_args.h) and, on GPUs, Triton's own
    launcher (its `extractFP16`/`extractBF16`) make a scalar argument:

      f16    `x` rounded once to nearest even (CPython's PyFloat_Pack2, which
             Triton's launcher calls); a finite `x` that rounds beyond 65504
             raises OverflowError, as the launcher does;
      bf16   `x` rounded to f32 (nearest even, infinity beyond it), then the
             f32's high half: truncated, not rounded a second time;
      8-bit  `x` rounded once to nearest even; beyond the format infinity, or
             NaN where it has none (saturated where it has neither), as the
             lowering's conversions encode (Triton passes no 8-bit scalars).

    Written here rather than taken from ml_dtypes, whose conversions from
    float64 changed between releases (0.6 rounds bf16 through f32, 0.7 once)."""
    import struct
    if s.mlir == "f16":
        return struct.unpack("<H", struct.pack("<e", x))[0]
    if s.mlir == "bf16":
        import numpy as np
        with np.errstate(over="ignore"):
            f32 = np.array(x, np.float64).astype(np.float32)
        return int(f32.view(np.uint32)) >> 16
    if s.float_format is None or s.float_format.kind == "e8m0" or s.nbytes != 1:
        raise TypeError(f"{s.mlir} has no conversion from a Python float")
    return _nearest_even(s.float_format, x)


def beyond_range(name: str, triton_type: str, value: str) -> str:
    """The words that refuse scalar argument `name` = `value` when
    `float_bits` overflows, in the DPU model and the exported runner alike."""
    return f"argument '{name}' = {value} is beyond the range of {triton_type} (Triton's launcher refuses it too)"


def _nearest_even(fmt: FloatFormat, x: float) -> int:
    """`x` rounded once to nearest even in `fmt` (not e8m0), as the encoding
    of edsl.lowering.floats does in integer code."""
    import math
    n, md = fmt.bits, fmt.mantissa
    top = (1 << (n - 1)) - 1                            # every magnitude bit set
    inf_enc = None
    if fmt.kind == "ieee":
        inf_enc = ((1 << fmt.exponent) - 1) << md
        max_enc, nan_enc = inf_enc - 1, inf_enc | (1 << max(md - 1, 0))
    elif fmt.kind == "fn":
        max_enc, nan_enc = top - 1, top
    elif fmt.kind == "fnuz":
        max_enc, nan_enc = top, 1 << (n - 1)
    else:                                               # "finite"
        max_enc, nan_enc = top, 0
    over = inf_enc if inf_enc is not None else max_enc if fmt.kind == "finite" else nan_enc
    sign = int(math.copysign(1.0, x) < 0)
    if math.isnan(x):
        return nan_enc if fmt.kind == "fnuz" else sign << (n - 1) | nan_enc
    if math.isinf(x):
        mag = over
    elif x == 0:
        mag = 0
    else:
        m, e = math.frexp(abs(x))                       # |x| = sig * 2**(e - 53), exactly
        sig = int(m * (1 << 53))
        qmin = 1 - fmt.bias - md                        # the subnormals' quantum 2**qmin
        q = max(e - 1 - md, qmin)                       # the result's quantum
        drop = q - (e - 53)                             # > 0: formats of at most 16 bits
        kept, rest, half = sig >> drop, sig & ((1 << drop) - 1), 1 << (drop - 1)
        kept += rest > half or (rest == half and kept & 1)
        # Exponent field and significand in one sum: rounding up carries into it.
        mag = ((q - qmin) << md) + kept
        if mag > max_enc:
            mag = over
    if fmt.kind == "fnuz" and mag in (0, nan_enc):      # no negative zero; NaN is the sign bit alone
        return mag
    return sign << (n - 1) | mag
