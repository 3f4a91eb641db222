"""The kernel compiled for an export and printed as the DPU program's C:
its final LLVM-dialect module (the `llmlir` stage of the `dpu` backend)
with the DPU runtime library linked in, printed by `edsl.export.printer`,
with a WRAM budget that leaves the exported program its own WRAM."""
from __future__ import annotations

from dataclasses import dataclass

from ..backend.compiler import KernelRecord
from ..backend.convert.wram import WramFull
from ..base.errors import CompileError, DpuError, EdslError
from ..base.progress import Progress
from ..dpu import support
from ..target import dpu as abi
from . import layout
from . import printer as P
from .arguments import ExportSpec


def compile_for_export(spec: ExportSpec, wram_bytes: int = abi.WRAM_BYTES) -> tuple[KernelRecord, str]:
    """(record, LLVM-dialect text) of the kernel of `spec`, without launching:
    the `llmlir` stage, the kernel before the runtime library is linked in.
    `wram_bytes`: the WRAM the kernel's buffers may take (beyond it, tiles are
    kept in MRAM)."""
    from ..backend import triton_internals
    from ..backend.compiler import TARGET
    fn, constexprs = spec.fn, spec.constexprs
    sig = {}
    by_name = {p.name: p for p in spec.params}
    for p in fn.params:
        sig[p.name] = "constexpr" if p.name in constexprs else by_name[p.name].type
    try:
        compiled = triton_internals.compile_kernel(fn, sig, constexprs, TARGET,
                                                   {"num_dpus": spec.num_dpus, "num_tasklets": spec.num_tasklets,
                                                    "debug": spec.debug, "wram_bytes": wram_bytes,
                                                    "tasklet_loops": False, "race_check": False})
    except EdslError:
        raise
    except triton_internals.compilation_error_class() as err:
        raise CompileError(f"kernel '{fn.__name__}' does not compile for the DPU: {err}") from None
    except Exception as err:  # noqa: BLE001 - an internal failure of a compile stage
        raise CompileError(f"kernel '{fn.__name__}' does not compile for the DPU: "
                           f"{type(err).__name__}: {err}") from err
    record = KernelRecord.from_program(compiled.asm["dpubin"])[0]
    direct = direct_mram_functions(record)
    if direct and spec.num_dpus > 1:
        raise CompileError(f"kernel '{fn.__name__}' calls the UPMEM C functions {', '.join(direct)}, which load or "
                           f"store through __mram_ptr pointers themselves: a DPU moves those bytes without a "
                           f"transfer its access log holds, which the exported runner needs to merge several "
                           f"DPUs' results; export it for one DPU (num_dpus=1), or move the bytes with "
                           f"mram_read / mram_write")
    return record, compiled.asm["llmlir"]


def direct_mram_functions(record: KernelRecord) -> tuple:
    """The names of the C functions the kernel calls that reach MRAM without transfers."""
    return tuple(c.name for c in record.c_functions if c.direct_mram)


def translate(llvm_text: str, kernel_name: str, n_params: int, c_functions: tuple = ()) -> P.CProgram:
    """The DPU program's functions, printed from the kernel's LLVM-dialect text
    with the DPU runtime library linked in (edsl.dpu.support); `c_functions`:
    the names of the UPMEM C functions it calls, compiled beside it."""
    from mlir import ir

    from ..base import dialects  # noqa: F401  (the bindings find edsl's dialects before any op)
    from ..lowering.floats import soft_float_storage
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    module = ir.Module.parse(llvm_text, ctx)
    with ctx:
        _direct_c_calls(module)
        support.link(module)
        # 16-bit floats as the integers of their bits, as the model builds its
        # program (edsl.dpu.runtime.build): they only move once the soft-float
        # pass has made their conversions integer code, which is printed as is.
        soft_float_storage(module.operation)
        table = ir.SymbolTable(module.operation)
        main = table[abi.MAIN] if abi.MAIN in table else None
        if main is None or not main.regions[0].blocks:
            raise CompileError(f"kernel '{kernel_name}': its program has no '{abi.MAIN}' entry")
        # (the kernel's parameters, then `abi.ENTRY[MAIN]` lowered)
        types = [str(a.type) for a in main.regions[0].blocks[0].arguments]
        if types[n_params:] != abi.lowered_entry_types(abi.MAIN):
            raise CompileError(f"kernel '{kernel_name}': '{abi.MAIN}' has an unexpected signature "
                               f"({', '.join(types)})")
    # (the C functions' transfers go through the runtime's, which the program then keeps: generate.C_CALLS)
    roots = [abi.MAIN] + ([abi.MRAM_READ, abi.MRAM_WRITE, abi.FAIL] if c_functions else [])
    return P.print_module(module, roots, foreign=frozenset(c_functions))


def _direct_c_calls(module) -> None:
    """Each `__edsl_run(packed, args)` (the DPU model's guard, which stops a
    faulting tasklet of a C function: a DPU stops on a fault itself) as a
    call of the C function's packed entry."""
    from mlir import ir
    from mlir.dialects import llvm

    from ..codegen.upmem_c import RUN
    from ..lowering.walk import collect
    for call in collect(module, lambda op: op.name == "llvm.call" and "callee" in op.attributes
                        and ir.FlatSymbolRefAttr(op.attributes["callee"]).value == RUN):
        packed, args = call.operands
        entry = packed.owner
        with ir.InsertionPoint(call), call.location:
            llvm.call(None, [args], [], [], callee=ir.FlatSymbolRefAttr.get(
                ir.FlatSymbolRefAttr(entry.attributes["global_name"]).value))
        call.erase()
        if not list(entry.results[0].uses):
            entry.erase()


@dataclass(frozen=True)
class Build:
    """The kernel of an export compiled and printed: its record, its C, the
    WRAM budget it was compiled with, whether its transfers have a region
    per array (`layout.per_array`), and the WRAM the program takes beside
    the kernel's buffers: its own (`layout.runtime_bytes`) and the printed
    C's buffers of all tasklets and globals (`static_bytes`)."""
    record: KernelRecord
    program: P.CProgram
    budget: int
    per_array: bool
    runtime_bytes: int
    static_bytes: int

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def scratch(self) -> int:
        """The MRAM scratch of the tiles kept there (edsl.backend.convert.spill)."""
        return self.record.scratch_bytes

    @property
    def wram(self) -> int:
        """The kernel's WRAM buffers as the program allocates them."""
        return abi.align_up(max(self.record.wram_bytes, abi.DMA_ALIGN))

    @property
    def uncounted_bytes(self) -> int:
        """What of `static_bytes` the compile did not count (its EDSL
        functions' wram_alloc buffers it did): the printed code's own arrays."""
        return self.static_bytes - self.record.edsl_buffer_bytes

    @property
    def total_bytes(self) -> int:
        return self.static_bytes + self.wram + self.runtime_bytes + self.record.c_variable_bytes


def _printed(spec: ExportSpec, record: KernelRecord, llvm_text: str, budget: int) -> Build:
    prog = translate(llvm_text, record.name, len(spec.params), tuple(c.name for c in record.c_functions))
    each = layout.per_array(spec.params, record)
    return Build(record, prog, budget, each,
                 layout.runtime_bytes(spec, each, record.scratch_bytes, prog.needs_stdio),
                 prog.static_wram_bytes * spec.num_tasklets + prog.global_wram_bytes)


def compile_to_fit(spec: ExportSpec, shown: Progress) -> Build:
    """The kernel compiled and printed so that its WRAM and the exported
    program's own fit a DPU's.

    The kernel is compiled with the WRAM the program leaves it, known before
    compiling (`layout.reserve`), so that it keeps in MRAM the tiles that do
    not fit beside the program (edsl.backend.convert.spill); the compile
    counts its EDSL functions' wram_alloc buffers and its C functions'
    variables itself. Known only once it is compiled: the small arrays of
    the printed code, which the model has no WRAM for (format strings of
    prints, argument slots of C calls: `Build.uncounted_bytes`). A kernel whose
    tiles fit, but not beside those, is compiled once more with a budget
    less by them (the same code, the same arrays: no third compile)."""
    budget = abi.WRAM_BYTES - layout.reserve(spec)
    shown.stage("compiling")
    built = _compiled(spec, budget, shown)
    if built.total_bytes <= abi.WRAM_BYTES:
        return built
    error = DpuError(f"kernel '{built.name}': its WRAM buffers need {built.total_bytes} bytes with "
                     f"{spec.num_tasklets} tasklets, more than the {abi.WRAM_BYTES} bytes of a DPU")
    budget -= built.uncounted_bytes
    if budget <= 0:
        raise error
    shown.stage(f"compiling again for {budget} bytes of WRAM")
    try:
        built = _compiled(spec, budget, shown)
    except DpuError:
        raise error from None               # (keeping tiles in MRAM does not make it fit)
    if built.total_bytes > abi.WRAM_BYTES:
        raise error
    return built


def _compiled(spec: ExportSpec, budget: int, shown: Progress) -> Build:
    try:
        record, llvm_text = compile_for_export(spec, budget)
    except WramFull as err:         # (the budget it names is what the program leaves the kernel)
        raise WramFull(f"{err.message}; exported, the kernel has {budget} of the DPU's {abi.WRAM_BYTES} "
                        f"bytes of WRAM: the program keeps the rest for its own (its tasklets' contexts, "
                        f"MRAM regions, arguments, access logs, printf)", err.loc) from None
    shown.stage("printing it as C")
    return _printed(spec, record, llvm_text, budget)
