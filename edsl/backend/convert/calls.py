"""`fl.call` placeholders: a `func.call` to `__edsl_<name>_<hash>` becomes the
EDSL function's body in an `edsl.region` (edsl.inject, steps a and b).

Tile operands are materialized as row-major WRAM buffers; each out tile is
copied into a fresh buffer that the region updates in place and that stands
for the tile's new value. Scalars pass as they are. A pointer operand (an
MRAM address) becomes an MRAM memref over the rest of the launch's MRAM
image, or an `!llvm.ptr<255>`, as the EDSL parameter asks.
"""
from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, llvm, memref

from ...target.dpu import MRAM_ADDRSPACE, WRAM_BYTES, Ctx, is_mram
from ..ttir_reader import user_location
from ...inject import ParamKind, build_region, descriptor_type, stage_operands
from ...inject.callees import PREFIX, callee, outputs_of
from .c_calls import lower_c_call
from .control import lower_body
from .core import Tile, byte_size, lowers
from .wram import WramFull



def is_edsl_declaration(fn_op) -> bool:
    name = ir.StringAttr(fn_op.attributes["sym_name"]).value
    return name.startswith(PREFIX) and not fn_op.regions[0].blocks


@lowers("func.call")
def lower_call(conv, op) -> None:
    symbol = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
    if not conv.is_region_call(op):
        _lower_in_place(conv, op, symbol)
        return
    if not symbol.startswith(PREFIX):
        raise conv.sites.error(op, f"call to '{symbol}', a function that is not in the module")
    fn = callee(symbol)
    if fn is None:
        raise conv.sites.error(op, f"fl.call to an EDSL function unknown in this process ({symbol})")
    if getattr(fn, "LANGUAGE", "") == "c":        # (a UPMEM C function: edsl.c_function)
        outputs = outputs_of(symbol)
        check_operands_fit_wram(op, fn.__name__, [(f"operand {k}", v, "the tile and the function's copy")
                                                  for k, v in enumerate(op.operands)
                                                  if isinstance(v.type, ir.RankedTensorType)])
        lower_c_call(conv, op, fn, outputs)
        return
    params = fn.info_for("upmem-dpu").params
    check_operands_fit_wram(op, fn.__name__, [
        (p.name, v, "InOut: the tile and its updated copy" if p.param.is_inout else "")
        for p, v in zip(params, op.operands)
        if isinstance(p.mlir_type, ir.MemRefType) and not is_mram(p.mlir_type)
        and isinstance(v.type, ir.RankedTensorType)])
    compiled = fn.compile("upmem-dpu")
    conv.info.edsl_buffers[symbol] = compiled.wram_bytes
    conv.info.sites += [[code, conv.sites.file_name(s.filename), s.lineno, s.col]
                        for code, s in compiled.sites.items()]
    if compiled.prints:
        conv.info.prints.append(f"fl.call of {fn.__name__}")
    operands, kinds, outs = [], [], []
    for p, v in zip(params, op.operands):
        t = p.mlir_type
        kinds.append(ParamKind.of(t))
        if isinstance(t, ir.MemRefType) and not is_mram(t):
            tile = conv.buffers.materialize(conv.values.tile(v), f"fl.call operand {p.name!r}", op)
            buf = tile.buf
            if p.param.is_inout:
                [buf], _ = stage_operands([buf], lambda t, name=p.name: conv.buffers.alloca(
                    t.shape, tile.elem, f"fl.call out {name!r}", op))
                outs.append((buf, tile))
            operands.append(buf)
        elif isinstance(t, ir.MemRefType):
            operands.append(_mram_memref(conv, conv.values.get(v), ir.MemRefType(t)))
        else:
            operands.append(conv.values.get(v))
    # All tasklets run the region, as all threads of a CTA run a TLE-Raw
    # region; barriers keep it apart from the tile code around it.
    conv.tasklets.accesses.sync()
    packs = build_region(fn.llvm, fn.__name__, kinds, operands,
                         [k for k, p in enumerate(params) if p.param.is_inout])
    conv.tasklets.accesses.sync()
    for result, value, (_, tile) in zip(op.results, packs, outs):
        conv.values.set(result, Tile(tile.shape, tile.elem, buf=value, accesses=conv.buffers.accesses))


def check_operands_fit_wram(op, name: str, tiles: list) -> None:
    """The call's tile operands, `tiles` as (parameter name, operand, copy),
    stay in WRAM (the function reads and writes them there; none is kept in
    MRAM), those with a `copy` (what it is) twice: more than a DPU's WRAM is
    an error at the call's line naming each operand."""
    sizes = [(p, byte_size(v.type.element_type) * math.prod(v.type.shape) * (2 if copy else 1), copy)
             for p, v, copy in tiles]
    total = sum(n for _, n, _ in sizes)
    if total > WRAM_BYTES:
        each = ", ".join(f"{n!r} {b} bytes" + (f" ({copy})" if copy else "") for n, b, copy in sizes)
        raise WramFull(f"fl.call of {name}: its tile operands need {total} bytes of WRAM, more than the "
                       f"{WRAM_BYTES} bytes of a DPU: {each}. They stay in WRAM, where the function reads "
                       "and writes them (tiles the kernel keeps in MRAM cannot be passed); pass "
                       "smaller tiles, or a pointer to MRAM instead of a tile", user_location(op.location))


def _lower_in_place(conv, op, symbol: str) -> None:
    """A call Triton's inliner left (a callee with several returns, called
    inside an `if`: its structured body has one block only after
    `structure_control_flow`): the callee's body, lowered here with the
    call's operands."""
    if symbol in conv.calling:
        raise conv.sites.error(op, f"recursive call of '{symbol}' is not supported by the DPU backend")
    body = conv.callees[symbol].regions[0].blocks[0]
    conv.calling.append(symbol)
    try:
        results = lower_body(conv, body, [conv.values.get(v) for v in op.operands])
    finally:
        conv.calling.pop()
    for result, value in zip(op.results, results):
        conv.values.set(result, value)


def _mram_memref(conv, address: ir.Value, t: ir.MemRefType) -> ir.Value:
    """A 1-D MRAM memref starting at `address` and ending with the launch's MRAM image."""
    if t.rank != 1:
        raise ValueError(f"a pointer can only be passed as a 1-D MRAM memref, not {t}")
    i64 = ir.IntegerType.get_signless(64)
    hi_p = llvm.getelementptr(llvm.PointerType.get(), conv.ctx_arg, [], [Ctx.MRAM_HI], i64, 0)
    hi = llvm.load(i64, hi_p)
    size = arith.divsi(arith.subi(hi, address), arith.constant(i64, byte_size(t.element_type)))
    desc_t = descriptor_type(t)
    ptr = llvm.inttoptr(llvm.PointerType.get(MRAM_ADDRSPACE), address)
    d = llvm.mlir_poison(desc_t)
    for field, value in ((0, ptr), (1, ptr), (2, arith.constant(i64, 0))):
        d = llvm.insertvalue(d, value, [field])
    d = llvm.insertvalue(d, size, [3, 0])
    d = llvm.insertvalue(d, arith.constant(i64, 1), [4, 0])
    dyn = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], t.element_type, memory_space=t.memory_space)
    cast = ir.Operation.create("builtin.unrealized_conversion_cast", results=[dyn], operands=[d]).result
    return cast if dyn == t else memref.cast(t, cast)
