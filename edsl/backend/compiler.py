"""The `dpu` Triton backend: compile stages from TTIR to a program for the DPU model.

Stages (each one's text is in `compiled.asm[name]`):
  ttir    stock Triton TTIR passes (those `make_ttir` runs for GPUs)
  mlir    this project's conversion to upstream MLIR (func/arith/math/scf/memref)
  llmlir  the LLVM dialect, through `edsl.lowering.run_pipeline(DEFAULT_PIPELINE)`
  llir    LLVM IR text (for reading; the program is built from `llmlir`)
  dpubin  the program: its `KernelRecord` as a line of JSON (kernel name, WRAM use,
          MRAM scratch of spilled tiles, assertion texts, check sites, tasklets)
          followed by the host object code of the
          kernel with the DPU runtime library linked in (edsl.dpu.runtime),
          which the driver links into the process at load: a kernel in
          Triton's cache costs a new process milliseconds

`num_tasklets` is a compile option: the converted kernel shares its tile
loops out among that many tasklets (see `convert.core`). So is `dpu_timing`:
the LLVM dialect gets executed-block counters (edsl.lowering.counting), the
program's header says what they count, and each launch reports its
estimated time on UPMEM hardware (`LaunchReport.timing`).

Importing this module is cheap (Triton imports every registered backend at
`import triton`): the MLIR bindings load only when a stage runs.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Dict, NamedTuple, Optional, Tuple

from triton.backends.compiler import BaseBackend, GPUTarget, Language

from ..target.dpu import MAX_DPUS, MAX_TASKLETS, WRAM_BYTES
from ..base.errors import ArgumentError, caller_location
from . import triton_internals

TARGET = GPUTarget("dpu", "upmem", 1)
# `num_warps` is a GPU option that a DPU has no use for (its tasklets are
# `num_tasklets`); it is taken as GPUs take it: a power of 2, at most the 1024
# threads of a GPU block, a warp being one thread here (warp_size 1). Triton
# checks the launch against it. Only `tl.device_print` reads it (see make_ttir).
MAX_NUM_WARPS = 1024


# The defaults of the launch options a library's kernels do not pass (a
# PIM study runs a library's ops on many DPUs without editing it): the DPUs
# at each launch (they do not change the program), the tasklets when a
# kernel compiles (the program is built for them; Triton keeps a compiled
# kernel per launch options, not per environment).
DPUS_ENV, TASKLETS_ENV = "EDSL_NUM_DPUS", "EDSL_NUM_TASKLETS"


def default_count(env: str, largest: int) -> int:
    """The count the environment variable `env` gives (1 .. `largest`), or 1."""
    value = os.environ.get(env, "")
    if not value:
        return 1
    if not value.isdigit() or not 1 <= int(value) <= largest:
        raise ArgumentError(f"{env} must be an integer from 1 to {largest:,}, not {value!r}", caller_location())
    return int(value)


@dataclass(frozen=True)
class DpuOptions:
    num_dpus: Optional[int] = None   # None: not given, `default_count(DPUS_ENV, machine_dpus)` at each launch
    num_tasklets: int = 1
    wram_bytes: int = WRAM_BYTES
    dpu_timing: bool = False
    # The model's way to run a DPU's tasklets: as loops between the kernel's
    # barriers (convert.fission), or switched at them (False: as an exported
    # program's tasklets run, each a thread of the DPU; the exporter's).
    tasklet_loops: bool = True
    # The model checks races between the tasklets of a DPU in the EDSL
    # functions a kernel calls (edsl.dpu.races; default: EDSL_RACE_CHECK).
    race_check: bool = False
    # The DPUs of the machine modelled: `num_dpus` may not exceed it (the
    # largest UPMEM system unless the user models a larger one).
    machine_dpus: int = MAX_DPUS
    # Fields Triton's frontend and launcher read on every backend.
    num_warps: int = 1
    num_ctas: int = 1
    num_stages: int = 1
    warp_size: int = 1
    enable_fp_fusion: bool = False
    launch_cooperative_grid: bool = False
    launch_pdl: bool = False
    debug: bool = False
    sanitize_overflow: bool = False
    arch: str = "upmem"
    backend_name: str = "dpu"
    supported_fp8_dtypes: Tuple[str, ...] = ("fp8e5", "fp8e5b16", "fp8e4nv", "fp8e4b8", "fp8e4b15")
    deprecated_fp8_dot_operand_dtypes: Tuple[str, ...] = ()
    default_dot_input_precision: str = "ieee"
    allowed_dot_input_precisions: Tuple[str, ...] = ("ieee", "tf32", "tf32x3", "bf16x3", "bf16x6")
    max_num_imprecise_acc_default: int = 0
    extern_libs: Optional[tuple] = None
    instrumentation_mode: str = ""
    fpsan_homomorphic_casts: bool = False
    ir_override: Optional[str] = None
    # Options of Triton's CUDA and AMD backends that only tune the code or its
    # launch (CUDA: cluster launch control, register cap, scheduling for
    # registers, a shared-memory floor; AMD: occupancy, matrix instruction
    # shape and packing, a scheduling hint): accepted, so that kernels and
    # autotuning configs written for GPUs run unchanged, and ignored.
    clc: bool = False
    maxnreg: Optional[int] = None
    sched4reg: bool = False
    min_shared_mem: Optional[int] = None
    waves_per_eu: int = 0
    matrix_instr_nonkdim: int = 0
    kpack: int = 1
    schedule_hint: str = ""

    def hash(self) -> str:
        key = "_".join(f"{k}-{v}" for k, v in sorted(self.__dict__.items()))
        return hashlib.sha256(key.encode()).hexdigest()


class CFunctionRecord(NamedTuple):
    """A UPMEM C function a kernel calls, as its record keeps it (`KernelRecord.c_functions`)."""
    name: str
    defines: tuple                     # its source's macros, (name, value)
    files: tuple                       # (file, text): its source, then the files it includes
    direct_mram: bool                  # loads or stores through __mram_ptr pointers itself
    # its variables in MRAM (`CompiledC.mram_variables`: each DPU's own); () for a
    # function linked with an earlier one of its source, which names them
    mram_variables: tuple


@dataclass(frozen=True)
class KernelRecord:
    """What compiling a kernel decided that running or exporting it needs:
    written by the stages (`make_mlir`, `make_llmlir`, `make_dpubin`), carried
    in the program's header (`to_program` / `from_program`, the only code that
    names its keys) and read by attribute by the driver, the model and the
    exporter. Triton's own metadata keeps only its keys (`name`, `shared`)."""
    name: str
    tasklets: int = 1                  # each DPU's, which the program is built for
    wram_bytes: int = 0                # the kernel's WRAM buffers
    scratch_bytes: int = 0             # the MRAM scratch of tiles kept there (convert.spill)
    spills: tuple = ()                 # those tiles, described
    asserts: tuple = ()                # (message, "file:line"), by assertion code
    # run-time check sites of the kernel and its EDSL functions: (code, file, line, col)
    # (file "": the kernel's own, see `convert.services.Sites.file_name`)
    sites: tuple = ()
    pointer_loads: tuple = ()          # (site code, where): accesses through a pointer loaded from memory
    stored: tuple | None = None        # pointer parameters stores may go through (None: unknown)
    regions: bool = False              # calls EDSL functions (fl.call)
    c_functions: tuple = ()            # the UPMEM C functions it calls (fl.call), in their slots: CFunctionRecord
    # their functions giving the C files' variables their first values (`CompiledC.reset_function`)
    variable_resets: tuple = ()
    c_variable_bytes: int = 0          # the WRAM those variables take, beside `wram_bytes`
    edsl_buffer_bytes: int = 0         # the WRAM of its EDSL functions' wram_alloc buffers, beside it too
    c_mram_variable_bytes: int = 0     # the MRAM their variables in MRAM take (8-byte blocks), beside the arrays
    prints: bool = False               # prints: its launches must not run twice
    waits: bool = False                # uses an atomic's old value (its programs may wait on others)
    race_check: bool = False           # the program checks races between tasklets (edsl.dpu.races)
    mram_shift: int = 0                # how far MRAM addresses are shifted (edsl.dpu.support.MRAM_SHIFT)
    counters: Any = None               # edsl.lowering.counting.CounterTable, built with dpu_timing

    @staticmethod
    def from_info(info) -> "KernelRecord":
        """The record of a kernel as the conversion left it (`convert.core.KernelInfo`)."""
        return KernelRecord(name=info.name, tasklets=info.tasklets, wram_bytes=info.wram_bytes,
                            scratch_bytes=info.scratch_bytes, spills=tuple(r.describe() for r in info.spills),
                            asserts=_frozen(info.asserts), sites=_frozen(info.sites),
                            pointer_loads=_frozen(info.pointer_loads), stored=_frozen(info.stored),
                            regions=info.regions, prints=bool(info.prints), waits=info.waits,
                            c_functions=tuple(CFunctionRecord(c.compiled.function.name, c.defines, c.files(),
                                                              c.compiled.direct_mram,
                                                              () if c.shares else c.compiled.mram_variables)
                                              for c in info.c_functions),
                            variable_resets=tuple(c.compiled.reset_function for c in info.c_functions
                                                  if c.compiled.reset_function and not c.shares),
                            c_variable_bytes=info.c_variable_bytes, edsl_buffer_bytes=info.edsl_buffer_bytes,
                            c_mram_variable_bytes=sum(c.compiled.mram_variable_bytes for c in info.c_functions
                                                      if not c.shares))

    def to_program(self, obj: bytes) -> bytes:
        """The program: this record as a line of JSON, then the object code `obj`."""
        fields = dict(self.__dict__, counters=self.counters.to_json() if self.counters is not None else None)
        return json.dumps(fields).encode() + b"\n" + obj

    @staticmethod
    def from_program(program: bytes) -> "tuple[KernelRecord, bytes]":
        """The record and the object code of a program `to_program` wrote."""
        header, _, obj = program.partition(b"\n")
        data = json.loads(header)
        fields = {k: _frozen(v) for k, v in data.items() if k != "counters"}
        fields["c_functions"] = tuple(CFunctionRecord(*c) for c in fields["c_functions"])
        counters = None
        if data["counters"] is not None:
            from ..lowering.counting import CounterTable
            counters = CounterTable.from_json(data["counters"])
        return KernelRecord(**fields, counters=counters), obj

    def check_sites(self) -> dict:
        """Run-time check sites by code (`base.errors.SourceLoc`; an
        `AccessSite` where the access's pointer was loaded from memory)."""
        from ..base.errors import AccessSite, SourceLoc
        loaded = dict(self.pointer_loads)
        return {code: AccessSite(f, line, col, pointer_load=loaded[code]) if code in loaded
                else SourceLoc(f, line, col) for code, f, line, col in self.sites}


def _frozen(value):
    """`value` with its lists (JSON's, or the conversion's) as tuples, at every depth."""
    return tuple(_frozen(v) for v in value) if isinstance(value, (list, tuple)) else value


def _min_dot_size(lhs_type, rhs_type):
    return (1, 1, 1)


def _logged(name: str, make):
    """A stage that logs its time (edsl.base.log) and, with EDSL_DUMP_IR, prints its IR."""
    from ..base import log
    logger = log.logger("backend")

    def run(src, metadata):
        # (the kernel's name is in the metadata once the first stage ran)
        with log.stage(logger, lambda: f"kernel '{metadata.get('name', '?')}': stage {name}"):
            out = make(src, metadata)
        if isinstance(out, str):
            log.dump(f"edsl stage {name} (kernel '{metadata.get('name', '?')}')", out)
        return out
    return run


class DpuBackend(BaseBackend):
    binary_ext = "dpubin"

    @staticmethod
    def supports_target(target: GPUTarget):
        return target.backend == "dpu"

    def __init__(self, target: GPUTarget) -> None:
        super().__init__(target)
        self.binary_ext = "dpubin"

    def hash(self) -> str:
        # The compiler's sources and the host the object code is built for.
        from ..base.cache import source_fingerprint
        from ..dpu.jit import host_key
        return f"edsl-dpu-{source_fingerprint()}-{host_key()}"

    def parse_options(self, opts) -> Any:
        args = {k: opts[k] for k in DpuOptions.__dataclass_fields__ if k in opts and opts[k] is not None}
        for k in ("supported_fp8_dtypes", "deprecated_fp8_dot_operand_dtypes",
                  "allowed_dot_input_precisions"):
            if k in args:
                args[k] = tuple(args[k])
        if "extern_libs" in args:
            args["extern_libs"] = tuple(dict(args["extern_libs"]).items())
        w = args.get("num_warps", 1)
        if not isinstance(w, int) or w < 1 or w & (w - 1):
            # AssertionError, as Triton's GPU backends raise it for the same option.
            raise AssertionError(f"num_warps must be a power of 2, not {w!r}")
        if "num_tasklets" not in args:
            args["num_tasklets"] = default_count(TASKLETS_ENV, MAX_TASKLETS)
        n = args["num_tasklets"]
        if not isinstance(n, int) or not 1 <= n <= MAX_TASKLETS:
            raise ArgumentError(f"num_tasklets must be an integer from 1 to {MAX_TASKLETS} (a DPU's hardware "
                                f"threads), not {n!r}", caller_location())
        if args.get("dpu_timing") is None:
            # (benchmarks timed by the estimated UPMEM clock need the estimate)
            from .bench import clock
            args["dpu_timing"] = clock() == "upmem"
        if args.get("race_check") is None:
            # (the check's bookkeeping would count as DPU work in a time estimate)
            from ..dpu.races import requested
            args["race_check"] = requested(None) and not args.get("dpu_timing")
        elif args["race_check"] and args.get("dpu_timing"):
            raise ArgumentError("race_check and dpu_timing cannot be combined: the check's bookkeeping "
                                "would count as the DPU's work", caller_location())
        for flag in ("dpu_timing", "tasklet_loops", "race_check"):
            if not isinstance(args.get(flag, False), bool):
                raise ArgumentError(f"{flag} must be True or False, not {args[flag]!r}", caller_location())
        machine = args.get("machine_dpus", MAX_DPUS)
        if not isinstance(machine, int) or machine < 1:
            raise ArgumentError(f"machine_dpus must be a positive integer, not {machine!r}", caller_location())
        d = args.get("num_dpus", 1)
        if not isinstance(d, int) or d < 1:
            raise ArgumentError(f"num_dpus must be a positive integer, not {d!r}", caller_location())
        if d > machine:
            largest = (f"the largest UPMEM system has {MAX_DPUS:,}; machine_dpus=N models a larger "
                       "machine" if machine == MAX_DPUS else f"machine_dpus={machine} says the machine has no more")
            raise ArgumentError(f"num_dpus={d} is more DPUs than the machine has: {largest}", caller_location())
        args["sanitize_overflow"] = False
        return DpuOptions(**args)

    def pack_metadata(self, metadata):
        return (metadata.num_warps, metadata.num_ctas, metadata.shared)

    def get_codegen_implementation(self, options):
        from .fp8e4b15 import convert_custom_types
        return {"min_dot_size": _min_dot_size, "convert_custom_types": convert_custom_types}

    def get_module_map(self) -> Dict[str, Any]:
        # `tl.extra.libdevice` as on NVIDIA GPUs: calls of `__nv_` functions,
        # of which the conversion computes the C math library's.
        from triton.language.extra.cuda import libdevice
        return {"triton.language.extra.libdevice": libdevice}

    def load_dialects(self, ctx):
        pass

    # -- stages --------------------------------------------------------------
    @staticmethod
    def make_ttir(mod, metadata, options):
        ir, passes = triton_internals.libtriton().ir, triton_internals.libtriton().passes
        # A DPU program is one function: `noinline` is a code-size hint the
        # model has no use for, so every call is inlined.
        names = []
        mod.walk(lambda op: names.append(op.get_str_attr("sym_name")) if op.get_name() == "tt.func" else None)
        false = ir.builder(mod.context).get_bool_attr(False)
        for name in names:
            mod.get_function(name).set_attr("noinline", false)
        pm = ir.pass_manager(mod.context)
        pm.enable_debug()
        passes.common.add_inliner(pm)
        passes.ttir.add_rewrite_tensor_descriptor_to_pointer(pm)
        passes.common.add_canonicalizer(pm)
        passes.ttir.add_combine(pm)
        passes.ttir.add_reorder_broadcast(pm)
        passes.common.add_cse(pm)
        passes.common.add_symbol_dce(pm)
        passes.ttir.add_loop_unroll(pm)
        pm.run(mod, "make_ttir")
        # The threads of a GPU program, as Triton's TTGIR records them: a
        # scalar `tl.device_print` prints once per thread (convert.debug).
        b = ir.builder(mod.context)
        mod.set_attr("ttg.num-warps", b.get_int32_attr(options.num_warps))
        mod.set_attr("ttg.threads-per-warp", b.get_int32_attr(options.warp_size))
        return mod

    @staticmethod
    def make_mlir(mod, metadata, options, state):
        from .convert import convert_ttir
        # (counted blocks are each tasklet's: no loops over tasklets)
        module, info = convert_ttir(mod, debug=options.debug, wram_limit=options.wram_bytes,
                                    tasklets=options.num_tasklets,
                                    fission=options.tasklet_loops and not options.dpu_timing)
        state["record"] = KernelRecord.from_info(info)
        # (linked into the program: each module once, with the names of the functions it exports)
        state["c_functions"] = [(c.compiled, tuple(o.compiled.function.name for o in info.c_functions
                                                   if o.shares and o.compiled.slot == c.compiled.slot))
                                for c in info.c_functions if not c.shares]
        metadata["name"] = info.name
        # Triton's figure of a kernel's shared memory: here WRAM, and the MRAM scratch of tiles kept there.
        metadata["shared"] = info.wram_bytes + info.scratch_bytes
        state["context"] = module.context
        return module.operation.get_asm(enable_debug_info=True)

    @staticmethod
    def make_llmlir(src, metadata, options, state):
        from mlir import ir
        from ..inject import run_pipeline_with_regions
        from ..lowering import DEFAULT_PIPELINE
        module = ir.Module.parse(src, state["context"])
        record = state["record"]
        run_pipeline_with_regions(module, DEFAULT_PIPELINE, f"kernel '{record.name}'")
        # (races between tasklets are checked in EDSL and C functions' code, where a DPU runs several;
        # the order C functions' mutexes and handshakes give is logged by their headers: edsl.dpu.races)
        race_check = options.race_check and record.regions and options.num_tasklets > 1
        state["record"] = dataclasses.replace(record, race_check=race_check)
        if not race_check:
            from ..lowering import strip_race_notes
            strip_race_notes(module)
        if options.dpu_timing:
            from ..target.dpu import LAUNCH
            from ..lowering.counting import run_counting
            run_counting(module, skip=(LAUNCH,))      # (the model's loop over DPUs)
        state["llmlir"] = module.operation.get_asm(enable_debug_info=True)
        state["module"] = module
        return state["llmlir"]

    @staticmethod
    def make_llir(src, metadata, options, state):
        from ..lowering import to_llvm_ir
        return to_llvm_ir(state["module"])

    @staticmethod
    def make_dpubin(src, metadata, options, state):
        from ..target.dpu import COUNTERS, LAUNCH
        from ..dpu.runtime import build
        from ..dpu.support import MRAM_SHIFT
        from ..lowering.counting import counter_table
        from ..lowering.counting_llvm_ir import count_dpu_c
        from ..codegen.upmem_c import RUNTIME_SYMBOLS
        record = state["record"]
        # (EDSL and C functions may reach MRAM without a transfer: their launches keep host addresses)
        mram_shift = 0 if record.regions else MRAM_SHIFT
        assert not (mram_shift and state.get("c_functions")), "a kernel calling C functions has regions"
        counters, linked = counter_table(state["module"]), []
        for c, also in state.get("c_functions", ()):
            text, names = c.linked(record.race_check, also)
            if counters is not None:              # (the C functions' counters after the kernel's)
                text, per_block = count_dpu_c(text, counters.counters)
                counters = counters.extended(per_block)
            linked.append((text, names))
        record = dataclasses.replace(record, mram_shift=mram_shift, counters=counters)
        exported = RUNTIME_SYMBOLS | {COUNTERS} if linked else frozenset()
        obj = build(state["module"], [LAUNCH], f"kernel '{record.name}'", mram_shift=record.mram_shift,
                    races=record.race_check, linked=tuple(linked), exported=exported)
        return record.to_program(obj)

    def add_stages(self, stages, options, language):
        if language != Language.TRITON:
            raise NotImplementedError("the DPU backend compiles Triton kernels (not Gluon)")
        state: dict = {}
        stages["ttir"] = lambda src, metadata: self.make_ttir(src, metadata, options)
        stages["mlir"] = _logged("mlir", lambda src, metadata: self.make_mlir(src, metadata, options, state))
        stages["llmlir"] = _logged("llmlir", lambda src, metadata: self.make_llmlir(src, metadata, options, state))
        stages["llir"] = _logged("llir", lambda src, metadata: self.make_llir(src, metadata, options, state))
        stages["dpubin"] = _logged("dpubin", lambda src, metadata: self.make_dpubin(src, metadata, options, state))
