"""`fl.call` of a UPMEM C function (edsl.c_function) from a kernel: its
placeholder `func.call` becomes a call of the function's packed entry
through the prelude's `__edsl_run`, so that a fault stops the tasklet at the
C line, as in `f.run`. The function is compiled with the kernel's tasklets
(its NR_TASKLETS) and a site slot of its own (`upmem_c.site_base`); its
module is linked into the kernel's program when that is built
(`KernelInfo.c_functions`).

A tile operand passes as the address of the first element of a fresh
row-major copy in WRAM (C may write through any pointer: the tile stays as
it was), an out's copy standing for the tile's new value; a Triton
pointer passes as its MRAM address, a scalar as it is. Every tasklet calls
the function, as every tasklet runs an EDSL region, and barriers keep the
call apart from the tile code around it.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm, memref

from ...codegen import llvm_ir, upmem_c
from ...inject import stage_operands
from ...inject.runtime_calls import runtime_call
from ..ttir_reader import user_location
from .builders import c64, i64
from .core import CalledC, Tile, byte_size


def lower_c_call(conv, op, fn, outputs: tuple) -> None:
    """The placeholder call `op` of C function `fn`, whose operands `outputs`
    (tiles) it returns updated."""
    compiled = _compiled(conv, op, fn)
    c_fn = compiled.function
    values, staged = [], []
    for k, v in enumerate(op.operands):
        if not isinstance(v.type, ir.RankedTensorType):
            value, param = conv.values.get(v), llvm_ir.mlir_type(c_fn.params[k])
            if param.startswith("!llvm.ptr"):      # an MRAM address
                value = llvm.inttoptr(ir.Type.parse(param), value)
            values.append(value)
            continue
        tile = conv.buffers.materialize(conv.values.tile(v), f"fl.call operand {k}", op)
        # (a copy for every tile: C may write through any pointer, and the tile stays as it was)
        [buf], _ = stage_operands([tile.buf], lambda t, k=k, tile=tile: conv.buffers.alloca(
            t.shape, tile.elem, f"fl.call operand {k}", op))
        if k in outputs:
            staged.append((buf, tile))
        values.append(_address(buf))
    packed = _declare(conv, op, c_fn)
    args = _argument_array(conv, values)
    conv.tasklets.accesses.sync()
    runtime_call(conv.sites.module_body, upmem_c.RUN,
                 [llvm.mlir_addressof(llvm.PointerType.get(), packed), args])
    conv.tasklets.accesses.sync()
    for result, (buf, tile) in zip(op.results, staged):
        conv.values.set(result, Tile(tile.shape, tile.elem, buf=buf, accesses=conv.buffers.accesses))


def _compiled(conv, op, fn) -> upmem_c.CompiledC:
    """`fn` compiled for this kernel: its tasklets, its slot (the order in
    which the kernel first calls its C functions). A function of the same
    source (and macros) as one called before is that module's: one copy of
    its variables, as one program compiled from the source has."""
    called = conv.info.c_functions
    for c in called:
        if c.identity == fn.identity:
            return c.compiled
    module = next((c for c in called if c.source == fn.source and not c.shares), None)
    compiled = fn.compiled(conv.tasklets.count, module.compiled.slot if module else len(called))
    clash = [c.compiled.function for c in called if c.compiled.function.name == compiled.function.name]
    if clash:
        raise conv.sites.error(op, f"fl.call of {fn.__name__}: the kernel calls another C function named "
                                   f"'{clash[0].source_name}'; C functions of one kernel need names of their own")
    if module is None:
        _refuse_defined_twice(conv, op, fn, compiled, [c for c in called if not c.shares])
    called.append(CalledC(fn.identity, compiled, fn.source, user_location(op.location), shares=module is not None))
    if compiled.prints:
        conv.info.prints.append(f"fl.call of {fn.__name__}")
    if module is None:
        conv.info.sites += [[code, conv.sites.file_name(s.filename), s.lineno, s.col]
                            for code, s in compiled.sites.items()]
    return compiled


def _refuse_defined_twice(conv, op, fn, compiled, modules: list) -> None:
    """One DPU program links the kernel's C sources together (the exported
    project, as the SDK builds it): a name two of them define (not `static`)
    fails that link, so the model refuses it too."""
    for other in modules:
        both = sorted(compiled.external_names & other.compiled.external_names)
        if both:
            raise conv.sites.error(op, f"fl.call of {fn.__name__}: its source {compiled.texts[0][0]} and "
                                       f"{other.compiled.texts[0][0]} (another C function the kernel calls) both "
                                       f"define '{both[0]}': one DPU program holds both, and a name defined twice "
                                       f"does not link; make it static in one of them, or put the functions in "
                                       f"one source")


def _declare(conv, op, c_fn) -> str:
    """The packed entry of `c_fn` (declared, with the function, in the
    kernel's module): its name."""
    from ...dpu.runtime import PACKED_PREFIX, packed_entry
    packed = PACKED_PREFIX + c_fn.name
    table = ir.SymbolTable(conv.sites.module_body.owner)
    if packed in table:
        return packed
    if c_fn.name in table:
        raise conv.sites.error(op, f"fl.call: the C function '{c_fn.source_name}' has the name of a function "
                                   f"of the kernel's program; rename it")
    result = None if c_fn.result == "void" else llvm_ir.mlir_type(c_fn.result)
    text = packed_entry(c_fn.name, [llvm_ir.mlir_type(t) for t in c_fn.params], result)
    with ir.Location.unknown():
        module = ir.Module.parse(text)
    for new in list(module.body.operations):
        conv.sites.module_body.append(new)
    return packed


def _argument_array(conv, values: list) -> ir.Value:
    """The packed entry's argument array: a slot per value, at the kernel's
    entry, with a slot for the function's result last (8 bytes: a scalar)."""
    ptr = llvm.PointerType.get()
    with conv.buffers.at_entry():
        one = c64(1)
        array = llvm.alloca(ptr, c64(len(values) + 1), ptr)
        slots = [llvm.alloca(ptr, one, v.type) for v in values] + [llvm.alloca(ptr, one, i64())]
        for k, slot in enumerate(slots):
            llvm.store(slot, llvm.getelementptr(ptr, array, [], [k], ptr, 0))
    for v, slot in zip(values, slots):
        llvm.store(v, slot)
    return array


def _address(buf: ir.Value) -> ir.Value:
    """The `!llvm.ptr` of the first element of a WRAM buffer."""
    t = ir.MemRefType(buf.type)
    base = arith.index_cast(i64(), memref.extract_aligned_pointer_as_index(buf))
    offset = arith.index_cast(i64(), memref.extract_strided_metadata(buf)[1])
    address = arith.addi(base, arith.muli(offset, c64(byte_size(t.element_type))))
    return llvm.inttoptr(llvm.PointerType.get(), address)


__all__ = ["lower_c_call"]
