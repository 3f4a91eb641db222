"""Triton's fp8e4b15: casts to and from it, as the `convert_custom_types`
code-generation hook Triton's frontend calls (MLIR has no such type: Triton
keeps its values as i8 in TTIR, so the backend converts them in the kernel's
own integer code).

The format (`tl.float8e4b15`): sign, 4 exponent bits biased by 15, 3 mantissa
bits, subnormals, no infinity and no NaN (0x7f is 1.875). It is f16's bit
pattern with the top exponent bit and the 7 low mantissa bits dropped, so a
cast goes through f16, as Triton's NVIDIA backend does
(`triton.language.extra.cuda.convert_custom_float8`), with its semantics:

* decoding is exact (to f16, then to the destination);
* encoding takes f16 (other formats are first rounded toward zero to f16;
  bf16 through f32, exactly), clamps the magnitude to 1.75 (NaN and
  infinities too: they become +-1.75) and rounds half away from zero (`rtz`:
  toward zero), keeping the sign.
"""
from __future__ import annotations

from triton.language import core

from . import triton_internals

# |x| is clamped to this f16 (1.75) before encoding, as NVIDIA's conversion does.
MAX_F16_BITS = 0x3F00


def convert_custom_types(x, dst_ty, fp_downcast_rounding=None, _semantic=None):
    """`x` cast to `dst_ty` where one of them is fp8e4b15 (Triton's
    `codegen_fns["convert_custom_types"]`)."""
    if x.type.scalar.is_fp8e4b15():
        return _decode(x, dst_ty.scalar, _semantic)
    return _encode(x, fp_downcast_rounding, _semantic)


def _decode(x, dst, _semantic):
    b = x.to(core.uint8, bitcast=True, _semantic=_semantic).to(core.uint32, _semantic=_semantic)
    sign = b.__and__(0x80, _semantic=_semantic).__lshift__(8, _semantic=_semantic)
    mag = b.__and__(0x7F, _semantic=_semantic).__lshift__(7, _semantic=_semantic)
    h = sign.__or__(mag, _semantic=_semantic).to(core.uint16, _semantic=_semantic)
    half = h.to(core.float16, bitcast=True, _semantic=_semantic)
    return half if dst.is_fp16() else half.to(dst, _semantic=_semantic)


def _encode(x, rounding, _semantic):
    ir = triton_internals.libtriton().ir
    if x.type.scalar.is_bf16():
        x = x.to(core.float32, _semantic=_semantic)
    if not x.type.scalar.is_fp16():
        x = x.to(core.float16, fp_downcast_rounding="rtz", _semantic=_semantic)
    bits = x.to(core.uint16, bitcast=True, _semantic=_semantic).to(core.uint32, _semantic=_semantic)
    mag = core.minimum(bits.__and__(0x7FFF, _semantic=_semantic), MAX_F16_BITS, _semantic=_semantic)
    if rounding != ir.ROUNDING_MODE.RTZ:
        mag = mag.__add__(0x40, _semantic=_semantic)           # half of the dropped 7 bits
    q = mag.__rshift__(7, _semantic=_semantic)
    sign = bits.__rshift__(8, _semantic=_semantic).__and__(0x80, _semantic=_semantic)
    out = q.__or__(sign, _semantic=_semantic).to(core.uint8, _semantic=_semantic)
    return out.to(core.float8e4b15, bitcast=True, _semantic=_semantic)
