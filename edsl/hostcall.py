"""Calling a compiled edsl function on NumPy arrays and Python scalars.

Arguments are checked against the signature before anything runs, then passed
by MLIR's calling convention: a memref expands to (allocated ptr, aligned ptr,
offset, sizes..., strides...), a scalar is passed by value, through the packed
entry point (`void f(void **args)`) that MLIR's ExecutionEngine generates.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np
from mlir import ir

from .codegen import semantic as S
from .codegen.signature import ParamInfo
from .target import dtypes
from .target import dpu as abi
from .base.errors import ArgumentError, SourceLoc

@dataclass(frozen=True)
class ArgSpec:
    """What a parameter accepts, read once from its MLIR type."""
    name: str
    type_text: str
    kind: str                # "memref", "scalar" or "ptr"
    inout: bool = False
    dtype: np.dtype | None = None   # of a memref's elements (bf16 and fp8 through ml_dtypes)
    shape: tuple = ()        # None for dynamic sizes
    strides: tuple | None = None  # None: contiguous row-major; else element strides (None = dynamic)
    offset: int | None = 0   # static offset in elements, None if dynamic
    scalar: str = ""          # a scalar's MLIR type name
    memory_space: int = 0    # of a memref: WRAM (0), MRAM (255); on a GPU shared (3), global (1)

    @staticmethod
    def of(p: ParamInfo) -> "ArgSpec":
        t = p.mlir_type
        if S.is_memref(t):
            m = ir.MemRefType(t)
            dtype = S.numpy_dtype(m.element_type)
            shape = tuple(None if ir.ShapedType.is_dynamic_size(d) else d for d in m.shape)
            strides, offset = None, 0
            if not S.has_identity_layout(t):
                st, off = m.get_strides_and_offset()
                dyn = ir.ShapedType.get_dynamic_stride_or_offset()
                strides = tuple(None if s == dyn else s for s in st)
                offset = None if off == dyn else off
            return ArgSpec(p.name, p.type_text, "memref", p.param.is_inout, dtype, shape, strides, offset,
                           memory_space=abi.memory_space(t))
        if str(t).startswith("!llvm.ptr"):
            return ArgSpec(p.name, p.type_text, "ptr")
        return ArgSpec(p.name, p.type_text, "scalar", scalar=str(t))


def _fail(spec: ArgSpec, what: str, loc) -> ArgumentError:
    return ArgumentError(f"argument {spec.name!r} ({spec.type_text}): {what}", loc)


def _memref_fields(spec: ArgSpec, a, loc) -> list:
    if not isinstance(a, np.ndarray):
        raise _fail(spec, f"expected a NumPy array, got {type(a).__name__}", loc)
    if a.dtype != spec.dtype:
        raise _fail(spec, f"expected dtype {spec.dtype}, got {a.dtype}", loc)
    if a.ndim != len(spec.shape):
        raise _fail(spec, f"expected {len(spec.shape)} dimensions, got {a.ndim} (shape {a.shape})", loc)
    for axis, (want, got) in enumerate(zip(spec.shape, a.shape)):
        if want is not None and want != got:
            raise _fail(spec, f"dimension {axis} must be {want}, got {got} (shape {a.shape})", loc)
    if spec.inout and not a.flags.writeable:
        raise _fail(spec, "an InOut array must be writeable", loc)
    if spec.memory_space == abi.MRAM_ADDRSPACE and not a.flags.writeable:
        raise _fail(spec, "a memref in MRAM is a pointer, written through even as Input (as in C): "
                    "pass a writeable array", loc)
    item = a.itemsize
    if spec.strides is None:
        if not a.flags.c_contiguous and a.size > 1:
            raise _fail(spec, "expected a C-contiguous array; pass np.ascontiguousarray(a), or "
                        "annotate the parameter with a strided layout", loc)
        strides = [int(np.prod(a.shape[k + 1:], dtype=np.int64)) for k in range(a.ndim)]
    else:
        if any(s % item for s in a.strides):
            raise _fail(spec, f"byte strides {a.strides} are not multiples of the element size", loc)
        strides = [s // item for s in a.strides]
        for axis, (want, got) in enumerate(zip(spec.strides, strides)):
            if want is not None and want != got and a.shape[axis] > 1:
                raise _fail(spec, f"stride {axis} must be {want} elements, got {got}", loc)
    data = a.ctypes.data
    offset = spec.offset or 0  # a static offset: the aligned pointer sits that far before the data
    aligned = data - offset * item
    return [ctypes.c_void_p(aligned), ctypes.c_void_p(aligned), ctypes.c_int64(offset),
            *(ctypes.c_int64(d) for d in a.shape), *(ctypes.c_int64(s) for s in strides)]


def _scalar(spec: ArgSpec, v, loc):
    kind = spec.scalar
    s = dtypes.by_mlir(kind)
    if s is None:
        raise _fail(spec, f"{kind} scalars cannot be passed from Python", loc)
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if kind == "i1":
        if not isinstance(v, (bool, np.bool_)) and not (isinstance(v, (int, np.integer)) and v in (0, 1)):
            raise _fail(spec, f"expected a bool, got {v!r}", loc)
        return s.ctype(bool(v))
    if s.is_float:
        if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, (bool, np.bool_)):
            raise _fail(spec, f"expected a number, got {type(v).__name__}", loc)
        try:
            return dtypes.value_bits(s, float(v))
        except OverflowError:
            raise _fail(spec, f"{float(v)!r} is beyond the range of {kind}", loc) from None
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise _fail(spec, f"expected an integer, got {type(v).__name__}", loc)
    if not -(1 << (s.width - 1)) <= int(v) < (1 << (s.width - 1)):
        raise _fail(spec, f"{int(v)} does not fit in {kind}", loc)
    return s.ctype(int(v))


def _result_bytes(specs) -> int:
    return sum(8 * (3 + 2 * len(s.shape)) for s in specs if s.kind == "memref" and s.inout)


def pack_arguments(specs: list[ArgSpec], args: tuple, loc: SourceLoc | None):
    """The `void*[]` for the packed entry, and the objects it points into."""
    keep = []
    for spec, a in zip(specs, args):
        if spec.kind == "memref":
            keep.extend(_memref_fields(spec, a, loc))
        elif spec.kind == "ptr":
            if not isinstance(a, np.ndarray):
                raise _fail(spec, f"expected a NumPy array, got {type(a).__name__}", loc)
            keep.append(ctypes.c_void_p(a.ctypes.data))
        else:
            keep.append(_scalar(spec, a, loc))
    n_result = _result_bytes(specs)
    if n_result:
        keep.append((ctypes.c_byte * n_result)())
    packed = (ctypes.c_void_p * len(keep))(*(ctypes.addressof(k) for k in keep))
    return packed, keep
