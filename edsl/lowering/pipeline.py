"""Pass pipelines through the upstream `mlir` bindings, with errors mapped back
to the user's Python lines (every op edsl builds carries a file:line:col location)."""
from __future__ import annotations

from typing import Sequence

from mlir import ir
from mlir.dialects import llvm
from mlir.passmanager import PassManager

from ..base import log
from ..base.errors import LoweringError, SourceLoc, VerifierError
from . import floats

_LOG = log.logger("lowering")

# Run on every builder-level module before it is shown as `.mlir`: inline calls
# to other edsl functions, promote the variable slots of the code generator to
# SSA values, and tidy up.
CLEANUP_PIPELINE = (
    "inline",
    "symbol-dce",
    "mem2reg",
    "canonicalize",
    "cse",
)

# Passes written in Python (each `fn(module_op, pass)`), named in pipelines
# like upstream ones.
PYTHON_PASSES = {
    "edsl-soft-floats": floats.soft_floats,
}

# The conversions to the LLVM dialect and the tidying after them, shared by
# the pipelines below.
_TO_LLVM = (
    "finalize-memref-to-llvm",
    "convert-arith-to-llvm",
    "convert-index-to-llvm",
    "convert-cf-to-llvm",
    "convert-ub-to-llvm",
    "convert-func-to-llvm",
)
_TIDY = ("reconcile-unrealized-casts", "canonicalize", "cse")

# Builder level (func/arith/math/scf/cf/memref/index) -> LLVM dialect.
DEFAULT_PIPELINE = (
    # f16, bf16 and the 8-bit floats: computed in f32, converted exactly by
    # integer code (no call into the host compiler's runtime library).
    "edsl-soft-floats",
    # What LLVM would fold anyway, folded before the time estimate counts
    # operations (edsl.lowering.counting): common subexpressions, loop
    # invariants, integer checks decided by value ranges (a subscript's
    # negative-index fix-up on a loop index that starts at 0). Value ranges
    # within each function: across calls the analysis revisits a callee and
    # every call site at each change, 23 s of a kernel calling its spill
    # helper 5,400 times (0.4 s thus, the estimates unchanged).
    "canonicalize",
    "cse",
    "loop-invariant-code-motion",
    "func.func(int-range-optimizations)",
    "canonicalize",
    "convert-scf-to-cf",
    "mem2reg",  # the generator's variable slots, now that scf regions are gone
    "arith-expand",
    "expand-strided-metadata",
    # math: LLVM intrinsics where they exist, generated code for integer
    # powers, libm calls for the rest (tanh, erf, ...). `math-expand-ops` is
    # not used: its ceil and tanh lose the sign of -0.0.
    "convert-math-to-funcs",
    "convert-math-to-llvm",
    "convert-math-to-libm",
    *_TO_LLVM,
    *_TIDY,
)

# Builder level -> LLVM dialect for NVIDIA GPUs (nvptx64). As DEFAULT_PIPELINE,
# except: no soft floats (GPUs compute and convert f16 and bf16 themselves);
# math functions become libm calls before anything else lowers them (NVPTX has
# no instructions for most: `llvm.exp.f32` cannot be selected), which
# `edsl.lowering.libdevice` then points at libdevice; and NVVM operations of
# the builder style that are written as PTX are lowered to inline assembly.
NVPTX_PIPELINE = (
    "convert-scf-to-cf",
    "mem2reg",
    "arith-expand",
    "expand-strided-metadata",
    "convert-math-to-funcs",
    "convert-math-to-libm",
    "convert-math-to-llvm",
    *_TO_LLVM,
    "convert-nvvm-to-llvm",
    *_TIDY,
)

PIPELINES = {"upmem-dpu": DEFAULT_PIPELINE, "nvptx64": NVPTX_PIPELINE}  # by target name

def file_locations(loc: ir.Location) -> list[SourceLoc]:
    """Every file:line:col inside an MLIR location, innermost first (a call
    site's callee before its caller), through the bindings' Location API."""
    if loc.is_a_file():
        return [SourceLoc(loc.filename, loc.start_line, max(loc.start_col - 1, 0))]
    if loc.is_a_callsite():
        return file_locations(loc.callee) + file_locations(loc.caller)
    if loc.is_a_fused():
        return [s for inner in loc.locations for s in file_locations(inner)]
    if loc.is_a_name():
        return file_locations(loc.child_loc)
    return []


def location_of(loc: ir.Location) -> SourceLoc | None:
    """The user's file:line:col inside an MLIR location (the first one), if any."""
    found = file_locations(loc)
    return found[0] if found else None


def _diagnostics(err: ir.MLIRError) -> tuple[str, SourceLoc | None]:
    diags = list(getattr(err, "error_diagnostics", []) or [])
    if not diags:
        return str(err), None
    first = diags[0]
    notes = "".join(f"\n  note: {n.message}" for n in first.notes)
    return first.message + notes, location_of(first.location)


def verify(module: ir.Module) -> None:
    """Run MLIR's verifier; a failure becomes a VerifierError at the user's line."""
    try:
        module.operation.verify()
    except ir.MLIRError as err:
        message, loc = _diagnostics(err)
        raise VerifierError(f"invalid IR: {message}", loc) from None


def run_pipeline(module: ir.Module, pipeline: Sequence[str], what: str = "module") -> None:
    """Run the passes named in `pipeline` on `module`, in place."""
    pm = PassManager("builtin.module", context=module.context)
    try:
        for name in pipeline:
            if name in PYTHON_PASSES:
                pm.add(PYTHON_PASSES[name], name=name, argument=name)
            else:
                pm.add(name)
    except (ValueError, ir.MLIRError) as err:
        raise LoweringError(f"bad pass pipeline {list(pipeline)!r} for {what}: {err}") from None
    if log.dumping():
        module.context.enable_multithreading(False)      # (MLIR prints IR only single-threaded)
        pm.enable_ir_printing(print_after_all=True, print_module_scope=True)
    try:
        with log.stage(_LOG, f"lowering {what}"):
            pm.run(module.operation)
    except ir.MLIRError as err:
        message, loc = _diagnostics(err)
        raise LoweringError(f"lowering {what} failed: {message}", loc) from None


def require_llvm_dialect(module: ir.Module, what: str, loc: SourceLoc | None = None) -> None:
    """Raise a LoweringError unless every op of `module` is in the LLVM dialect, or
    NVVM (its ops are LLVM intrinsics); translating or JIT-compiling anything else
    crashes inside MLIR."""
    others = set()

    def visit(op):
        name = op.name
        if not name.startswith(("llvm.", "nvvm.")) and name != "builtin.module":
            others.add(name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if others:
        raise LoweringError(f"{what} cannot be translated to LLVM IR: its pipeline leaves ops "
                            f"outside the LLVM dialect ({', '.join(sorted(others))})", loc)


def to_llvm_ir(module: ir.Module) -> str:
    """Translate an LLVM-dialect module to LLVM IR text."""
    require_llvm_dialect(module, "the module")
    try:
        return llvm.translate_module_to_llvmir(module.operation)
    except Exception as err:  # the binding raises a bare RuntimeError
        raise LoweringError(f"translation to LLVM IR failed: {err}") from None
