"""TTIR -> upstream MLIR (func/arith/math/scf/memref + a few llvm ops).

`convert_ttir(text)` runs the steps of the conversion, each a unit of its own:
reading the TTIR (`ttir_reader`, checked against Triton's view of it),
structuring its control flow (`control.structure_control_flow`, upstream
`lift-cf-to-scf`), lowering the kernel function op by op (`converter`: a
lowering pattern per op, through the conversion's `services`; one family per
module: `elementwise`, `shape`, `memory`, `reduce`, `dot`, `control`, `calls`,
`debug`; the fields of the TTIR ops it reads through their typed views,
`ops`; the accesses of a kernel shared among tasklets stated as markers),
then the memory plan: where the buffers exceed the DPU's WRAM, the tiles to
keep in its MRAM, picked from the buffers the walk asked for, and the rewrite
of their code (`spill`); barrier placement, a pass over the converted kernel
that reads the markers (`barriers`), the watch of the accesses in `while`
loops for waits that cannot end (`waits`), then the WRAM layout and its
budget check (`wram`). Each op is lowered once.
For the DPU model, a kernel's tasklets then run as loops between its
barriers (`fission`).
It adds the DPU support functions and the program-instance loop
`__dpu_main`, and returns the new module with a `KernelInfo` (WRAM buffers,
print formats).

Converted kernel signature: the TTIR parameters (a `!tt.ptr<T>` as an i64
MRAM address), then the arguments `abi.ENTRY[KERNEL]` lists: program ids,
grid sizes, the DPU's WRAM and the tasklet's launch context.
"""
from __future__ import annotations

import os

from mlir import ir
from mlir.dialects import func

from ...base import dialects  # noqa: F401  (the bindings find edsl's and Triton's dialects before any op)

from ...target.dpu import ENTRY, KERNEL, entry_types
from ...base.errors import CompileError, EdslError
from ...lowering.pipeline import location_of, verify
from ..stores import ACCESSES, pointer_load, stored_params
from ..ttir_reader import read_ttir, user_location
from . import calls, control, debug, dot, elementwise, memory, reduce, shape, spill, wram  # noqa: F401  (register lowerings)
from .barriers import meet_in_every_instance, place_barriers, unmarked_accesses
from .converter import Converter
from .core import KernelInfo, scalar_type
from .fission import split_tasklets
from .runtime_text import program_text
from .waits import watch_waits

__all__ = ["convert_ttir", "KernelInfo"]


def new_context() -> ir.Context:
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    return ctx


def _kernel_funcs(module: ir.Module):
    """The kernel function and the functions it calls that Triton's inliner
    left (by name): a callee with several returns called inside an `if`."""
    funcs = [op for op in module.body.operations if op.operation.name == "func.func"
             and not calls.is_edsl_declaration(op.operation)]
    public = [f for f in funcs if "sym_visibility" not in f.attributes
              or ir.StringAttr(f.attributes["sym_visibility"]).value == "public"]
    if len(public) > 1:
        raise CompileError("a module with several public functions is not a Triton kernel",
                           location_of(public[1].location))
    kernel = public[0] if public else funcs[0]
    return kernel, {ir.StringAttr(f.attributes["sym_name"]).value: f for f in funcs if f != kernel}


def convert_ttir(source, ctx: ir.Context | None = None, *, debug: bool = False,
                 wram_limit: int | None = None, tasklets: int = 1,
                 fission: bool = False) -> tuple[ir.Module, KernelInfo]:
    """Convert a TTIR module (Triton's, as a stage receives it, or its text) to
    an upstream-MLIR module for the DPU model, its tile code shared out among
    `tasklets` tasklets per DPU (`ttir_reader.read_ttir` reads it). A kernel
    whose tiles do not fit in WRAM keeps some in MRAM (`spill.plan`).
    `fission`: the tasklets run as loops between the barriers, for the DPU
    model (`fission`)."""
    ctx = ctx or new_context()
    src = read_ttir(source, ctx)
    regions = any(op.operation.name == "func.func" and calls.is_edsl_declaration(op.operation)
                  for op in src.body.operations)
    limit = wram.wram_limit(wram_limit)
    with ctx, ir.Location.unknown():
        kernel, callees = _kernel_funcs(src)
        for fn in [kernel, *callees.values()]:
            control.structure_control_flow(fn)

        def fitted(count: int, split: bool):
            out, info = _convert(kernel, callees, regions, debug, count, limit, fission=split)
            wram.check(info.name, info.wram + info.functions_wram(), limit)
            return out, info
        try:
            out, info = fitted(tasklets, fission)
        except wram.WramFull as err:
            raise _fewer_tasklets(err, tasklets, fitted) from None
    verify(out)
    return out, info


def _fewer_tasklets(err, tasklets: int, fitted) -> wram.WramFull:
    """`err` (the kernel's tiles do not fit in WRAM with `tasklets` tasklets),
    saying how many tasklets they fit with (each tasklet's buffers need
    WRAM of their own; `fitted(count, False)` converts for `count`)."""
    if tasklets == 1:
        return err

    def fits(count: int) -> bool:
        try:
            fitted(count, False)
        except EdslError:                 # (over WRAM, or not compiling with `count` for another reason)
            return False
        return True
    low, high = 0, tasklets           # (fits with `low`, or low == 0; not with `high`)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    hint = (f"; it fits with num_tasklets={low}" if low
            else "; it does not fit with num_tasklets=1 either")
    return wram.WramFull(err.message + hint, err.loc)


def _pointer_loads(kernel, conv) -> list:
    """[site code, where the load is] of each access of `kernel` whose pointer
    was loaded from memory, so that its error names that load too."""
    found = []

    def visit(op):
        load = pointer_load(kernel, op) if op.name in ACCESSES else None
        access, source = (user_location(op.location), user_location(load.location)) if load else (None, None)
        if access is not None and source is not None:
            where = (f"line {source.lineno}" if source.filename == access.filename else
                     f"{conv.sites.file_name(source.filename) or os.path.basename(conv.sites.kernel_file or '')}"
                     f":{source.lineno}")
            found.append([access.site, where])
        return ir.WalkResult.ADVANCE
    kernel.walk(visit)
    return found


def _check_marked(entry, conv, tasklets: int) -> None:
    """Every access of a tile shared among tasklets is stated to barrier
    placement (a lowering that forgot one would race)."""
    missing = unmarked_accesses(entry, conv.buffers.wram.by_view) if tasklets > 1 else []
    if missing:
        raise CompileError(f"the DPU backend left an access of a shared WRAM tile ({missing[0].name}) "
                           "unstated to its barrier placement, a defect of the backend; "
                           "num_tasklets=1 compiles it", user_location(missing[0].location))


def _convert(kernel, callees: dict, regions: bool, debug: bool, tasklets: int, limit: int,
             fission: bool = False):
    """The conversion of the kernel function (tiles kept in MRAM where its
    buffers exceed `limit` bytes of WRAM, its tasklets as loops when
    `fission`), calls to `callees` lowered in place."""
    name = ir.StringAttr(kernel.attributes["sym_name"]).value
    info = KernelInfo(name=name, regions=regions, stored=stored_params(kernel))
    ftype = ir.FunctionType(ir.TypeAttr(kernel.attributes["function_type"]).value)
    params = [scalar_type(t) for t in ftype.inputs]
    out = ir.Module.create()
    with ir.InsertionPoint(out.body), kernel.location:
        extra = [ir.Type.parse(t) for t in entry_types(KERNEL)]
        fn = func.FuncOp(name, ir.FunctionType.get(params + extra, []))
        entry = fn.add_entry_block()
    args = list(entry.arguments)
    named = {a.name: v for a, v in zip(ENTRY[KERNEL], args[len(params):])}
    conv = Converter(info, entry, named["ctx"], [named[f"pid_{d}"] for d in "xyz"],
                     [named[f"grid_{d}"] for d in "xyz"], debug, wram=named["wram"],
                     tasklets=tasklets, module_body=out.body)
    body = kernel.regions[0].blocks[0]
    conv.callees = callees
    for fn in [kernel, *callees.values()]:
        conv.values.count_uses(fn)
    for arg, new in zip(body.arguments, args):
        conv.values.bind(arg, new)
    with ir.InsertionPoint(entry), conv.tasklets.accesses.tile_scopes(conv.buffers.spill):
        for op in list(body.operations)[:-1]:
            conv.lower_op(op)
        func.ReturnOp([])
        conv.buffers.plan_memory(name, limit, info.functions_wram())
    _check_marked(entry, conv, tasklets)
    place_barriers(entry, tasklets, out.body, info, conv.sites)
    watch_waits(entry)
    conv.finish()
    info.pointer_loads = _pointer_loads(kernel, conv)
    # The support text declares the kernel so that it verifies on its own;
    # declarations `out` already holds are dropped when the support moves in.
    param_types = [str(t) for t in params]
    ctx_arg = len(params) + [a.name for a in ENTRY[KERNEL]].index("ctx")
    split = (fission and tasklets > 1 and not regions
             and split_tasklets(entry.owner, ctx_arg, tasklets) is not None)
    # (a kernel left unsplit is left as it was)
    turns = tasklets > 1 and not split and not meet_in_every_instance(entry)
    support = ir.Module.parse("module {" + program_text(name, param_types, tasklets, turns, split)
                              + (spill.support_text() if info.spills else "") + "}")
    table = ir.SymbolTable(out.operation)
    for op in list(support.body.operations):
        sym = ir.StringAttr(op.attributes["sym_name"]).value if "sym_name" in op.attributes else None
        if sym is not None and sym in table:
            continue
        out.body.append(op)
    return out, info
