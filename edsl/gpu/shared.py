"""Shared memory allocated in a Triton kernel for the nvidia backend: buffers
the kernel fills and reads with `tl.store` / `tl.load` through `local_ptr`'s
pointers and hands to raw functions (`fl.call_smem`), as TLE's `tle.gpu`
module does in FlagTree's Triton fork, on stock Triton.

A buffer is a value of the kernel (`SharedBuffer`: one i64, the generic
address of its first element, with its shape and element type in its Triton
type, so that it may be assigned in loops). `alloc` makes it with the
placeholder `__edsl_gpu_smem_<N>_<B>` (edsl.inject.gpu_library defines it:
B bytes in the kernel's dynamic shared memory, after the calls' tiles).
Triton sees `local_ptr`'s pointers as global ones; the `ptx` stage makes the
kernel's global accesses generic (edsl.gpu.stages.generic_accesses), so each
reaches the memory its address is in.

What Triton does not know of these buffers, the kernel says: nothing orders
one thread's `tl.store` into a buffer before another thread's `tl.load` of
it but a barrier (`tl.debug_barrier()`, or an `fl.call_smem`, which runs its
function between two); and a load through `local_ptr` must not be pipelined
by Triton into an asynchronous copy (`cp.async` takes global addresses
only): load buffers outside loops that feed `tl.dot`, or with `num_stages=1`.
"""
from __future__ import annotations

import inspect
import itertools

from triton.language import core as tl

from ..inject.gpu_library import buffer_symbol
from .placeholders import axis_range, element

# The scope TLE names shared memory by (`tle.gpu.smem`): the only one here.
smem = "smem"

_NUMBERS = itertools.count()        # (each buffer's placeholder its own name in the process)


class SharedBufferType(tl.base_type):
    """A shared buffer's Triton type: its shape and element type."""

    def __init__(self, shape: tuple, element_ty: tl.dtype):
        self.shape, self.element_ty = tuple(shape), element_ty

    def __eq__(self, other) -> bool:
        return isinstance(other, SharedBufferType) and (self.shape, self.element_ty) == (other.shape,
                                                                                           other.element_ty)

    def __repr__(self) -> str:
        return f"shared<{list(self.shape)}, {self.element_ty}>"

    def mangle(self) -> str:
        return f"S{'_'.join(map(str, self.shape))}{self.element_ty.mangle()}S"

    def _flatten_ir_types(self, builder, out: list) -> None:
        out.append(builder.get_int64_ty())

    def _unflatten_ir(self, handles: list, cursor: int):
        return SharedBuffer(handles[cursor], self), cursor + 1

    @property
    def nbytes(self) -> int:
        n = self.element_ty.primitive_bitwidth // 8
        for d in self.shape:
            n *= d
        return n


class SharedBuffer(tl.base_value):
    """A buffer in the kernel's shared memory (`handle`: its generic address, i64)."""

    def __init__(self, handle, type: SharedBufferType):
        self.handle, self.type = handle, type

    @property
    def shape(self) -> tuple:
        return self.type.shape

    @property
    def dtype(self) -> tl.dtype:
        return self.type.element_ty

    def _flatten_ir(self, handles: list) -> None:
        handles.append(self.handle)

    def _set_name(self, builder, name: str) -> None:
        self.handle.set_loc(builder.create_name_loc(name, self.handle.get_loc()))

    def address(self) -> tl.tensor:
        return tl.tensor(self.handle, tl.int64)


def _builtin(fn):
    # (marked by hand, as fl.call is: see there)
    setattr(fn, tl.TRITON_BUILTIN, True)  # noqa: B010
    fn.signature = inspect.signature(fn)
    return fn


def _require_gpu(what: str, semantic) -> None:
    backend = None if semantic is None else getattr(semantic.builder.options, "backend_name", None)
    if backend != "cuda":
        where = "Triton's interpreter" if semantic is None else f"the {backend!r} backend"
        raise TypeError(f"{what}: shared memory of an NVIDIA GPU's kernel, not under {where} (fl.call's tiles "
                        f"are the raw functions' local memory on every target)")


@_builtin
def alloc(shape, dtype, layout=None, scope=smem, nv_mma_shared_layout=False, _semantic=None, _generator=None):
    """A buffer of `shape` and `dtype` in the kernel's shared memory (its
    contents undefined until written). `layout` and `nv_mma_shared_layout`
    are TLE's and must be their defaults: a buffer is row-major."""
    _require_gpu("tle.gpu.alloc", _semantic)
    shape = tuple(int(tl._unwrap_if_constexpr(d)) for d in tl._unwrap_if_constexpr(shape))
    dtype = tl._unwrap_if_constexpr(dtype)
    if tl._unwrap_if_constexpr(scope) != smem:
        raise TypeError(f"tle.gpu.alloc: scope {scope!r}: only shared memory (tle.gpu.smem) is here")
    if tl._unwrap_if_constexpr(layout) is not None or tl._unwrap_if_constexpr(nv_mma_shared_layout):
        raise TypeError("tle.gpu.alloc: a buffer is row-major here (layout=None, nv_mma_shared_layout=False)")
    if not shape or any(d <= 0 for d in shape) or not isinstance(dtype, tl.dtype) or element(dtype) is None:
        raise TypeError(f"tle.gpu.alloc: shape {list(shape)} of {dtype}: a buffer has a positive shape and an "
                        f"element type a raw function's memref may have")
    ty = SharedBufferType(shape, dtype)
    symbol = buffer_symbol(next(_NUMBERS), ty.nbytes)
    builder = _semantic.builder
    zero = _semantic.to_tensor(0)
    handle = builder.create_extern_elementwise("", "", symbol, [zero.handle], builder.get_int64_ty(), False)
    return SharedBuffer(handle, ty)


def _buffer(x, what: str) -> SharedBuffer:
    if not isinstance(x, SharedBuffer):
        raise TypeError(f"{what} must be a shared buffer (tle.gpu.alloc), not {type(x).__name__}")
    return x


@_builtin
def local_ptr(buffer, indices=None, _semantic=None, _generator=None):
    """Pointers to elements of `buffer`, for `tl.load` / `tl.store`: at
    `indices` (one integer tensor or scalar a dimension, broadcast together),
    else at every element (a tensor of the buffer's shape)."""
    buf = _buffer(buffer, "tle.gpu.local_ptr's buffer")
    indices = tl._unwrap_if_constexpr(indices)
    if indices is None:
        indices = [axis_range(_semantic, d, n, len(buf.shape)) for d, n in enumerate(buf.shape)]
    elif not isinstance(indices, (tuple, list, tl.tuple)):
        indices = [indices]
    indices = list(indices)
    if len(indices) != len(buf.shape):
        raise TypeError(f"tle.gpu.local_ptr: {len(indices)} indices for a buffer of {len(buf.shape)} dimensions")
    offset, stride = None, 1
    for d in reversed(range(len(buf.shape))):
        term = _semantic.to_tensor(indices[d])
        if stride != 1:
            term = _semantic.mul(term, stride, False)
        offset = term if offset is None else _semantic.add(term, offset, False)
        stride *= buf.shape[d]
    base = _semantic.cast(buf.address(), tl.pointer_type(buf.dtype))
    return _semantic.add(base, offset, False)


@_builtin
def copy(src, dst, shape=None, _semantic=None, _generator=None):
    """Copy a tile between global memory and a shared buffer: `src` pointers
    (a tensor of the buffer's shape) into buffer `dst`, or buffer `src` to
    `dst` pointers. `shape`, if given, is the buffer's."""
    into = isinstance(dst, SharedBuffer)
    buf = _buffer(dst if into else src, "tle.gpu.copy's source or destination")
    shape = tl._unwrap_if_constexpr(shape)
    if shape is not None and tuple(int(tl._unwrap_if_constexpr(d)) for d in shape) != buf.shape:
        raise TypeError(f"tle.gpu.copy: shape {list(shape)} is not the buffer's {list(buf.shape)}")
    inside = local_ptr(buf, _semantic=_semantic)
    if into:
        tl.store(inside, tl.load(src, _semantic=_semantic), _semantic=_semantic)
    else:
        tl.store(dst, tl.load(inside, _semantic=_semantic), _semantic=_semantic)


__all__ = ["SharedBuffer", "SharedBufferType", "alloc", "copy", "local_ptr", "smem"]
