"""Injector step c: lower the extract/pack placeholders to fields of memref
descriptors, `!llvm.struct<(ptr<as>, ptr<as>, i64, array<N x i64>, array<N x i64>)>`,
where `as` is the memref's memory space: WRAM (0) for tile buffers, MRAM
(255) for pointer operands.

A memref becomes its descriptor through `builtin.unrealized_conversion_cast`,
so this step may run before or after the memref-to-LLVM conversion: the casts
pair up with the ones that conversion makes and `reconcile-unrealized-casts`
removes them.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import llvm

from ..target.dpu import memory_space
from ..lowering.walk import collect

_FIELD = {"edsl.extract_allocated_ptr": 0, "edsl.extract_aligned_ptr": 1, "edsl.extract_offset": 2,
          "edsl.extract_sizes": 3, "edsl.extract_strides": 4}


def descriptor_type(memref_type: ir.Type) -> ir.Type:
    m = ir.MemRefType(memref_type)
    space = memory_space(m)
    ptr = f"!llvm.ptr<{space}>" if space else "!llvm.ptr"
    fields = [ptr, ptr, "i64"]
    if m.rank:
        fields += [f"!llvm.array<{m.rank} x i64>"] * 2
    return ir.Type.parse(f"!llvm.struct<({', '.join(fields)})>")


def _cast(value: ir.Value, to: ir.Type) -> ir.Value:
    return ir.Operation.create("builtin.unrealized_conversion_cast", results=[to], operands=[value]).result


def lower_placeholders(module: ir.Module) -> int:
    """Replace every extract/pack placeholder in `module`; returns how many."""
    ops = collect(module, lambda op: op.name.startswith("edsl.") and op.name != "edsl.region")
    descriptors: dict = {}
    for op in ops:
        with op.location, ir.InsertionPoint(op):
            _lower(op, descriptors)
        op.erase()
    return len(ops)


def _descriptor(value: ir.Value, descriptors: dict) -> ir.Value:
    key = value
    if key not in descriptors:
        descriptors[key] = _cast(value, descriptor_type(value.type))
    return descriptors[key]


def _lower(op: ir.Operation, descriptors: dict) -> None:
    name = op.name
    if name in _FIELD:
        d = _descriptor(op.operands[0], descriptors)
        field = _FIELD[name]
        if field < 3:
            op.result.replace_all_uses_with(llvm.extractvalue(op.result.type, d, [field]))
        else:
            for k, r in enumerate(op.results):
                r.replace_all_uses_with(llvm.extractvalue(r.type, d, [field, k]))
    elif name == "edsl.extract_ptr":
        src = op.operands[0]
        if isinstance(src.type, ir.MemRefType):
            v = llvm.extractvalue(op.result.type, _descriptor(src, descriptors), [1])
        elif isinstance(src.type, ir.IntegerType):
            v = llvm.inttoptr(op.result.type, src)
        elif src.type == op.result.type:
            v = src
        else:
            v = _cast(src, op.result.type)
        op.result.replace_all_uses_with(v)
    elif name == "edsl.pack":
        src = op.operands[0]
        index = ir.IntegerAttr(op.attributes["index"]).value
        want = descriptor_type(op.result.type)
        if src.type != want:  # several InOut results: a struct of descriptors
            src = llvm.extractvalue(want, src, [index])
        op.result.replace_all_uses_with(_cast(src, op.result.type))
    else:
        raise ValueError(f"unknown placeholder {name}")
