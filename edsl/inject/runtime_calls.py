"""Calls to the DPU runtime interface (edsl.target.dpu: `edsl_dpu_me`, ...)
from kernel IR, declared as `llvm.func`s: EDSL functions arrive already in
the LLVM dialect with the same declarations, and a module must hold one kind."""
from __future__ import annotations

from mlir import ir
from mlir.dialects import llvm


def runtime_call(module_body: ir.Block, symbol: str, args: list[ir.Value],
                 result: ir.Type | None = None) -> ir.Value | None:
    """Call `symbol` (declared in `module_body` if it is not yet)."""
    table = ir.SymbolTable(module_body.owner)
    if symbol not in table:
        ret = str(result) if result is not None else "void"
        fn_type = ir.Type.parse(f"!llvm.func<{ret} ({', '.join(str(a.type) for a in args)})>")
        with ir.InsertionPoint.at_block_begin(module_body):
            llvm.LLVMFuncOp(symbol, ir.TypeAttr.get(fn_type), sym_visibility="private")
    call = llvm.call(result, list(args), [], [], callee=ir.FlatSymbolRefAttr.get(symbol))
    return call if result is not None else None
