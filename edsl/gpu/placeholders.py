"""`fl.call` in a kernel for Triton's `nvidia` backend: the placeholder operations.

Every placeholder is a non-pure `tt.extern_elementwise` (a call to a function
Triton does not know; non-pure, so no pass removes, hoists or merges it):

    __edsl_gpu_sync(0)                  barrier: readers of the pool from an
                                        earlier call are done
    __edsl_gpu_put_<T>(tile, offsets)   per tile operand: each thread stores the
                                        elements it holds at their row-major
                                        byte offsets in the pool
    __edsl_gpu_run_<F>_<L>(values...)   every thread runs the function, between
                                        barriers (scalars, pointers as i64)
    __edsl_gpu_get_<T>(offsets)         per out tile: its new value

Triton computes the offset tensors in each operand's own layout, so no layout
is assumed here; a thread that holds a copy of an element stores the same
value. `edsl.inject.gpu_library` defines the functions; `edsl.gpu.stages` links them.
"""
from __future__ import annotations

import hashlib

from triton.language import core as tl

from ..target import dtypes
from ..target import nvptx
from ..inject.gpu_library import ELEMENTS, RUN_PREFIX, SYNC, Operand, RunPlan, TileSlot, get_symbol, put_symbol

# run symbol -> plan, for the llir stage of the kernels being compiled in this process
PLANS: dict[str, RunPlan] = {}

def element(dtype) -> str | None:
    """The MLIR name of a Triton scalar type (`fp32` -> `f32`, `int8` -> `i8`);
    None for those a tile or scalar parameter cannot have (unsigned, fp8)."""
    scalar = dtypes.of_triton_dtype(dtype)
    if scalar is None or scalar.unsigned or scalar.mlir not in ELEMENTS + ("i1",):
        return None
    return scalar.mlir


def plan_call(fn, specs, operands, kinds) -> RunPlan:
    """Lay the tile operands of a call out in the pool (in parameter order, each
    aligned), and name the adapter after the function and that layout."""
    ops, offset = [], 0
    for spec, v, kind in zip(specs, operands, kinds):
        if kind == "tile":
            offset = -(-offset // nvptx.SHARED_ALIGN) * nvptx.SHARED_ALIGN
            slot = TileSlot(tuple(int(d) for d in v.type.shape), element(v.type.scalar), offset)
            offset += slot.nbytes
            ops.append(Operand("tile", spec.type_text, slot))
        elif kind == "buffer":          # (a shared buffer of the kernel: its address)
            ops.append(Operand(kind, spec.type_text, arg_type="i64", shape=v.shape))
        else:
            ops.append(Operand(kind, spec.type_text, arg_type=element(v.type.scalar)))
    layout = repr([(o.kind, o.type_text, o.tile, o.arg_type) for o in ops])
    name = hashlib.sha256(fn.identity.encode()).hexdigest()[:16]
    symbol = f"{RUN_PREFIX}{name}_{hashlib.sha256(layout.encode()).hexdigest()[:12]}"
    return RunPlan(symbol, fn, tuple(ops))


def _extern(semantic, symbol: str, args: list, dtype) -> tl.tensor:
    """A non-pure `tt.extern_elementwise` call of `symbol`."""
    args = [semantic.to_tensor(a) for a in args]
    block = next((a.type for a in args if a.type.is_block()), None)
    ret = dtype if block is None else block.with_element_ty(dtype)
    builder = semantic.builder
    handle = builder.create_extern_elementwise("", "", symbol, [a.handle for a in args], ret.to_ir(builder), False)
    return tl.tensor(handle, ret)


def _byte_offsets(semantic, slot: TileSlot) -> tl.tensor:
    """offset + row-major index * element size, for every element of a tile."""
    rank = len(slot.shape)
    total, stride = None, slot.nbytes // max(1, _count(slot.shape))
    for d in reversed(range(rank)):
        r = axis_range(semantic, d, slot.shape[d], rank)
        if stride != 1:
            r = semantic.mul(r, stride, False)
        total = r if total is None else semantic.add(total, r, False)
        stride *= slot.shape[d]
    if slot.offset:
        total = semantic.add(total, slot.offset, False)
    return total


def axis_range(semantic, d: int, n: int, rank: int) -> tl.tensor:
    """0..n-1 along dimension `d` of `rank`, broadcastable against the others."""
    r = semantic.arange(0, n)
    for _ in range(d):
        r = semantic.expand_dims(r, 0)
    for _ in range(rank - d - 1):
        r = semantic.expand_dims(r, len(r.type.shape))
    return r


def _count(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def emit(fn, specs, operands: list, kinds: list[str], semantic) -> list[tl.tensor]:
    """The placeholders of one call of `fn` (operands in parameter order; kinds
    `tile`, `buffer` (edsl.gpu.shared), `pointer` or `scalar`, pointers
    already as i64); returns the new values of the InOut tiles."""
    plan = plan_call(fn, specs, operands, kinds)
    PLANS[plan.symbol] = plan
    _extern(semantic, SYNC, [0], tl.int32)
    offsets = {}
    for k, (o, v) in enumerate(zip(plan.operands, operands)):
        if o.tile is not None:
            offsets[k] = _byte_offsets(semantic, o.tile)
            _extern(semantic, put_symbol(o.tile.elem), [v, offsets[k]], tl.int32)
    values = [v.address() if o.kind == "buffer" else v
              for o, v in zip(plan.operands, operands) if o.kind != "tile"] or [0]
    _extern(semantic, plan.symbol, values, tl.int32)
    return [_extern(semantic, get_symbol(o.tile.elem), [offsets[k]], operands[k].type.scalar)
            for k, (o, s) in enumerate(zip(plan.operands, specs)) if o.tile is not None and s.inout]


__all__ = ["PLANS", "axis_range", "element", "emit", "plan_call"]
