"""`@edsl.dialect`: the decorated function object, its compilation and its cache.

Compiling runs the layers in order: code generation (edsl.codegen) and cleanup
-> `.mlir`; the lowering pipeline (edsl.lowering) -> `.llvm`; translation ->
`.llir`; a program of the DPU model (edsl.dpu.runtime), object code compiled
once per machine, when called. One source
compiles for each target (edsl.target.machines): `upmem-dpu` (the default)
and `nvptx64` (NVIDIA GPUs, through Triton's stock `nvidia` backend).
"""
from __future__ import annotations

import ast
import hashlib
import sys
import types
from dataclasses import dataclass, field
from importlib import metadata

import numpy as np
from mlir import ir

from . import codegen
from .base import cache, collector, log
from .codegen import language
from .codegen.signature import function_info
from .dpu import races, runtime
from .target.dpu import MAX_TASKLETS, MRAM_ADDRSPACE
from .dpu.runtime import LaunchReport, Program
from .dpu.timing import launch_estimate
from .target import machines
from .target.machines import DPU, NVPTX, Target
from .base.errors import ArgumentError, CompileError, DpuError, SourceLoc
from .target import nvptx
from .hostcall import ArgSpec, pack_arguments
from .lowering import (CLEANUP_PIPELINE, PIPELINES, location_of, require_llvm_dialect, run_pipeline, to_llvm_ir,
                       use_libdevice, verify)
from .lowering.counting import run_counting
from .lowering.race_notes import strip_race_notes


@dataclass
class Compiled:
    """One function compiled for one target: `.mlir`, `.llvm`, `.llir` texts."""
    mlir: str
    llvm: str
    sites: dict  # run-time check site code -> SourceLoc
    wram_bytes: int
    module: ir.Module | None = None  # LLVM-dialect module, parsed on demand
    programs: dict = field(default_factory=dict)  # (timing, race check) -> Program
    where: tuple = ("the function", None)  # (what, SourceLoc) for errors
    _llir: str | None = None

    @property
    def prints(self) -> bool:
        """Whether the function prints (vprintf, vassert): its launches must not run twice."""
        return any(op.operation.name == "llvm.func" and
                   ir.StringAttr(op.operation.attributes["sym_name"]).value in ("printf", "vprintf")
                   for op in self.module.body.operations)

    @property
    def llir(self) -> str:
        """LLVM IR text."""
        if self._llir is None:
            with codegen.LOCK, codegen.context():
                require_llvm_dialect(self.module, *self.where)
                self._llir = to_llvm_ir(self.module)
        return self._llir


_MEMORY: dict[str, Compiled] = {}
_LOG = log.logger("codegen")


def _versions() -> str:
    out = [cache.source_fingerprint()]
    for dist in ("xtc-mlir-python-bindings",):
        try:
            out.append(metadata.version(dist))
        except metadata.PackageNotFoundError:
            out.append("?")
    return "/".join(out)


_VERSIONS = _versions()


class EdslFunction:
    """A Python function compiled by edsl. Properties `.mlir`, `.llvm`, `.llir`
    (for its `target`; `compile(target=...)` for another); calling it runs it on
    the host (DPU model), updating InOut arrays in place."""

    def __init__(self, fn, name: str = "mlir", pipeline=None, fastmath: bool = False,
                 bounds_check: bool = False, target: str | None = None, deferred: bool = False,
                 extern_func_name: str = ""):
        if name != "mlir":
            raise CompileError(f"unknown edsl dialect {name!r}: \"mlir\" (Python) or \"cuda\" (CUDA C, "
                               f"dialect(name=\"cuda\", file=...))")
        # TLE-Raw's options, kept as its programs read them. Its `deferred`
        # functions compile after the kernel's shared memory is laid out: a
        # function here is compiled when a kernel calling it is, and
        # injected after that layout anyway (edsl.gpu.stages), so both
        # behave alike. `extern_func_name` picks the function of a foreign
        # source; a Python function is the one function of its source.
        self.deferred = bool(deferred)
        self.extern_func_name = str(extern_func_name or "")
        self.target: Target = machines.get(target)
        with codegen.LOCK, codegen.context():
            # Memory-space names resolved; checked per target when compiled for it.
            self._edsl_function_info = function_info(fn)
        self.fn = fn
        self._pipeline = tuple(pipeline) if pipeline is not None else None
        self.fastmath = bool(fastmath)
        self.bounds_check = bool(bounds_check)
        self.last_stats: LaunchReport | None = None
        self._keys: dict[str, str | None] = {}
        self._specs: dict[str, list[ArgSpec]] = {}
        self._compiled: dict[str, Compiled] = {}
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        # Triton kernels name this object in `fl.call`. Triton admits a global in
        # a kernel only if it is a constexpr, a JIT function or an "aggregate",
        # and hashes an aggregate's `__annotations__` (Triton 3.9) and the JIT
        # functions among its `hash_attrs` (3.6 too) into the kernel's cache key:
        # present as one, with this function's identity in both.
        self.__triton_aggregate__ = True
        self.__annotations__ = {"edsl": self.identity}

    def __repr__(self) -> str:
        return f"<edsl function {self.__qualname__}>"

    @property
    def hash_attrs(self) -> tuple:
        from .gpu.cache_key import kernel_key_part  # imports Triton, which is hashing a kernel if it asks
        return kernel_key_part(self)

    @property
    def returns(self) -> list[str]:
        """The parameters the function returns (`return y`), by name, in its order."""
        return list(self._edsl_function_info.returns)

    def info_for(self, target: "str | Target") -> "codegen.FunctionInfo":
        """The function as `target` sees it (parameter types in its memory spaces)."""
        with codegen.LOCK, codegen.context():
            return self._edsl_function_info.for_target(machines.get(target))

    @property
    def info(self):
        return self.info_for(self.target)

    def params_for(self, target: "str | Target") -> list[ArgSpec]:
        target = machines.get(target)
        if target.name not in self._specs:
            info = self.info_for(target)
            with codegen.LOCK, codegen.context():
                self._specs[target.name] = [ArgSpec.of(p) for p in info.params]
        return list(self._specs[target.name])

    @property
    def params(self) -> list[ArgSpec]:
        return self.params_for(self.target)

    def pipeline_for(self, target: "str | Target") -> tuple:
        """The lowering pipeline: the one given to @edsl.dialect, else the target's."""
        return self._pipeline if self._pipeline is not None else PIPELINES[machines.get(target).name]

    @property
    def pipeline(self) -> tuple:
        return self.pipeline_for(self.target)

    # --- compilation ---------------------------------------------------------------------

    def key_for(self, target: "str | Target") -> str | None:
        """Hash of source, captured values, pipeline, target and versions; None if a
        captured value has no stable identity (then only this object caches)."""
        target = machines.get(target)
        if target.name not in self._keys:
            parts = [_VERSIONS, target.name, repr(self.pipeline_for(target)), f"fastmath={self.fastmath}",
                     f"bounds_check={self.bounds_check}"]
            ok = _fingerprint(self._edsl_function_info, parts, set())
            self._keys[target.name] = hashlib.sha256("\0".join(parts).encode()).hexdigest() if ok else None
        return self._keys[target.name]

    @property
    def cache_key(self) -> str | None:
        """The key of this function compiled for its target (see `key_for`)."""
        return self.key_for(self.target)

    @property
    def identity(self) -> str:
        """What identifies this function's code in the keys of kernels that call it."""
        return self.cache_key or f"{self.__qualname__}@{id(self):x}"

    def compile(self, target: "str | Target | None" = None) -> Compiled:
        """This function compiled, from the caches if there.

        Args:
            target: "upmem-dpu" or "nvptx64" (default: the function's own).

        Returns:
            The compiled function: `.mlir`, `.llvm`, `.llir` and its source sites.
        """
        target = machines.get(target) if target is not None else self.target
        if target.name in self._compiled:
            return self._compiled[target.name]
        key = self.key_for(target)
        compiled = _MEMORY.get(key) if key else None
        if compiled is None and key:
            compiled = self._from_disk(key, target)
        if compiled is None:
            with collector.paused():
                compiled = self._compile(target)
            if key:
                cache.store(key, {"mlir": compiled.mlir, "llvm": compiled.llvm, "wram_bytes": compiled.wram_bytes,
                                  "sites": [[code, s.filename, s.lineno, s.col] for code, s in compiled.sites.items()]})
        if key:
            _MEMORY[key] = compiled
        self._compiled[target.name] = compiled
        return compiled

    def _from_disk(self, key: str, target: Target) -> Compiled | None:
        entry = cache.load(key, {"mlir": str, "llvm": str, "sites": list, "wram_bytes": int})
        if entry is None:
            return None
        try:
            sites = {code: SourceLoc(f, line, col) for code, f, line, col in entry["sites"]}
            with codegen.LOCK, codegen.context():
                module = ir.Module.parse(entry["llvm"])
        except (TypeError, ValueError, ir.MLIRError):
            return None  # corrupt: compile again
        return Compiled(entry["mlir"], entry["llvm"], sites, entry["wram_bytes"], module, where=self._where())

    def _compile(self, target: Target) -> Compiled:
        info = self.info_for(target)
        with codegen.LOCK, codegen.context():
            with log.stage(_LOG, f"{self.__name__}: code generation for {target}"):
                state = codegen.generate(info, self.fastmath, self.bounds_check, target)
            module = state.module
            log.dump(f"edsl code generation ({self.__name__}, {target})", str(module))
            foreign = codegen.foreign_operation(module, target)
            if foreign is not None:
                raise CompileError(foreign[1], location_of(foreign[0].location))
            verify(module)
            run_pipeline(module, CLEANUP_PIPELINE, f"{self.__name__} (cleanup)")
            mlir_text = str(module)
            run_pipeline(module, self.pipeline_for(target), self.__name__)
            if target is NVPTX:
                use_libdevice(module, self.fastmath)
                module.operation.attributes["llvm.target_triple"] = ir.StringAttr.get(nvptx.TRIPLE)
            verify(module)
            return Compiled(mlir_text, str(module), dict(state.sites), state.wram_bytes, module,
                            where=self._where())

    def _where(self) -> tuple:
        return f"{self.__name__}()", self._def_loc()

    def _def_loc(self) -> SourceLoc:
        fdef = self._edsl_function_info.tree
        return SourceLoc(self._edsl_function_info.filename, fdef.lineno, fdef.col_offset)

    @property
    def mlir(self) -> str:
        """Builder-level MLIR (func/arith/math/scf/memref), after inlining and mem2reg."""
        return self.compile().mlir

    @property
    def llvm(self) -> str:
        """LLVM-dialect MLIR: the text injected into kernels."""
        return self.compile().llvm

    @property
    def llir(self) -> str:
        """LLVM IR text."""
        return self.compile().llir

    @property
    def wram_bytes(self) -> int:
        """Bytes of WRAM buffers (wram_alloc) the function uses."""
        return self.compile(DPU).wram_bytes

    # --- execution -----------------------------------------------------------------------

    def program(self, timing: bool = False, race_check: bool = False) -> Program:
        """The function as a program of the DPU model (compiled once per machine);
        with `timing`, with executed-block counters (edsl.lowering.counting);
        with `race_check`, with the check of races between tasklets (edsl.dpu.races)."""
        c = self.compile(DPU)
        if (timing, race_check) not in c.programs:
            with codegen.LOCK, codegen.context():
                require_llvm_dialect(c.module, f"{self.__name__}()", self._def_loc())
                module = ir.Module.parse(c.llvm)       # the program adds the runtime to its copy
                if not race_check:
                    strip_race_notes(module)
                table = run_counting(module) if timing else None
                obj = runtime.build(module, [self.__name__], f"{self.__name__}()", races=race_check)
            c.programs[timing, race_check] = Program(obj, self.__name__, c.sites, table)
        return c.programs[timing, race_check]

    def __call__(self, *args):
        self.run(*args)

    def run(self, *args, tasklets: int = 1, timing: bool = False, race_check: bool | None = None) -> LaunchReport:
        """Run on the host DPU model; InOut arrays are updated in place.

        Args:
            *args: The function's arguments: NumPy arrays for memrefs, numbers for scalars.
            tasklets: Tasklets of the DPU (1 to 24), each running the whole function.
            timing: Also estimate the run's time on UPMEM hardware (the report's `.timing`).
            race_check: Refuse two tasklets touching the same bytes with no barrier
                between them, one writing (an `edsl.DpuError` naming both lines);
                default: the environment variable EDSL_RACE_CHECK. Not with `timing`.

        Returns:
            What the launch did (also kept in `last_stats`).
        """
        loc = _caller_loc()
        specs = self.params_for(DPU)
        if len(args) != len(specs):
            names = ", ".join(s.name for s in specs)
            raise ArgumentError(f"{self.__name__}({names}) takes {len(specs)} arguments, "
                                f"{len(args)} given", loc)
        if not isinstance(tasklets, int) or not 1 <= tasklets <= MAX_TASKLETS:
            raise DpuError(f"a DPU runs 1 to {MAX_TASKLETS} tasklets, not {tasklets!r}", loc)
        if not isinstance(timing, bool):
            raise ArgumentError(f"timing must be True or False, not {timing!r}", loc)
        packed, keep = pack_arguments(specs, args, loc)
        if race_check and timing:
            raise ArgumentError("race_check and timing cannot be combined: the check's bookkeeping would "
                                "count as the DPU's work", loc)
        check_races = races.requested(race_check) and tasklets > 1 and not timing
        program = self.program(timing, check_races)
        entry = program.entry(self.__name__)
        # The function's memrefs are checked against their own ends; the MRAM
        # it may reach is the whole address space.
        table = program.counters
        launch = runtime.Launch(1, tasklets, [0, 2 ** 63 - 1], counters=table.counters if table else 0)
        arrays = [(s.name, a) for s, a in zip(specs, args) if isinstance(a, np.ndarray) and a.flags.c_contiguous]
        launch.run_alone(program, entry, packed, f"{self.__name__}()", arrays if check_races else None)
        del keep
        report = LaunchReport(self.__name__, num_tasklets=tasklets, tasklets_used=tasklets,
                              wram_bytes=self.compile(DPU).wram_bytes, **launch.totals(),
                              per_dpu_programs=[1], per_tasklet_dma=launch.per_tasklet_dma())
        if table is not None:
            # Host<->MRAM: of the MRAM arrays (all in, the InOut ones out), as
            # much as the run read and wrote.
            mram = [(s, a) for s, a in zip(specs, args) if s.kind == "memref" and s.memory_space == MRAM_ADDRSPACE]
            in_bytes = sum(a.nbytes for _, a in mram)
            need_in = min(in_bytes, report.dma_read_bytes)
            need_out = min(sum(a.nbytes for s, a in mram if s.inout), report.dma_write_bytes)
            report.timing = launch_estimate(table, launch.counters, launch.ctx, [need_in], [need_out], in_bytes)
        self.last_stats = report
        return report


def _caller_loc() -> SourceLoc:
    """Where user code called into this module (for errors about arguments)."""
    frame = sys._getframe(1)
    while frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    code = frame.f_code
    positions = list(code.co_positions())
    line, _, col, _ = positions[frame.f_lasti // 2] if frame.f_lasti // 2 < len(positions) else (None,) * 4
    return SourceLoc(code.co_filename, line or frame.f_lineno, col)


def _fingerprint(info, parts: list, seen: set) -> bool:
    """Append to `parts` what decides the code of `info`'s function; False if
    something it uses has no stable identity across processes."""
    parts.append(info.key)
    used, local = set(), {p.name for p in info.params}
    for stmt in info.tree.body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name):
                (local if isinstance(n.ctx, ast.Store) else used).add(n.id)
            elif isinstance(n, ast.alias):
                local.add((n.asname or n.name).split(".")[0])
    names = sorted(used - local)
    for name in names:
        if name in info.closure:
            value = info.closure[name]
        elif name in info.globals:
            value = info.globals[name]
        else:
            continue
        if not _stable(value, parts, seen):
            return False
    return True


def _stable(value, parts: list, seen: set) -> bool:
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        parts.append(repr(value))
    elif isinstance(value, (tuple, frozenset)):
        return all(_stable(v, parts, seen) for v in value)
    elif isinstance(value, types.ModuleType):
        parts.append(f"module {value.__name__}")
    elif isinstance(value, EdslFunction):
        if id(value) not in seen:
            seen.add(id(value))
            parts.append(f"edsl {value.__qualname__}")
            return _fingerprint(value.info, parts, seen)
    elif isinstance(value, (types.BuiltinFunctionType, types.FunctionType, type, language.Intrinsic)):
        parts.append(f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', value)}")
    else:
        return False
    return True


def dialect(fn=None, *, name: str = "mlir", pipeline=None, fastmath: bool = False,
            bounds_check: bool = False, target: str | None = None, deferred: bool = False,
            extern_func_name: str = "", file=None, source: str | None = None, defines: dict | None = None,
            compiler: str = "clang", **tle_options):
    """Compile a Python function with `Input[...]`/`InOut[...]` parameters through MLIR,
    or take a raw function in CUDA C (`name="cuda"`) or in UPMEM C (`name="c"`).

    Used bare (`@edsl.dialect`) or with options (`@edsl.dialect(name="mlir", ...)`).

    Args:
        fn: The function (given when the decorator is used bare).
        name: The raw function's language: "mlir" (Python in natural or MLIR-builder
            style), "cuda" (CUDA C, for NVIDIA GPUs: a `CudaFunction`) or "c" (UPMEM
            DPU C, run by the DPU model: a `CFunction`).
        pipeline: Upstream MLIR pass names lowering it to the LLVM dialect (default: the target's).
        fastmath: Let float arithmetic be reassociated and contracted (on a GPU, also
            take libdevice's fast f32 math functions).
        bounds_check: Check every subscript at run time (an `edsl.DpuError` at its line).
        target: "upmem-dpu" (default) or "nvptx64": what `.mlir`, `.llvm` and `.llir`
            show; `fl.call` compiles for the backend of the calling kernel.
        deferred: TLE-Raw's option, accepted and kept (`.deferred`): the function
            is always compiled with the kernel that calls it.
        extern_func_name: TLE-Raw's option: for CUDA C and C, the function of the source
            to call (its name in the source or its symbol; default for C: the stub's name);
            kept for an EDSL function.
        file: CUDA C and C: the `.cu` or `.c` file (its folder is searched for its includes).
        source: CUDA C and C: the source text, instead of a file.
        defines: CUDA C and C: preprocessor macros, `{"NAME": value}` (TLE-Raw's `defines`;
            its older `macros` is taken too).
        compiler: CUDA C: "clang" (the ziglang package's); nvcc is not used.
        **tle_options: TLE-Raw's other CUDA options: `macros` (its older `defines`) and
            `hint` are taken; `extern` and `library` (nvcc, NVSHMEM) are refused, saying why.

    Returns:
        An `EdslFunction`, `CudaFunction` or `CFunction`, or a decorator making one.
    """
    if name == "cuda":
        return _cuda_dialect(fn, file, source, defines, compiler, extern_func_name, deferred, tle_options)
    if name == "c":
        return _c_dialect(fn, file, source, defines, extern_func_name, tle_options)
    if tle_options or file is not None or source is not None or defines is not None:
        given = sorted(tle_options) + [k for k, v in (("file", file), ("source", source), ("defines", defines))
                                       if v is not None]
        raise TypeError(f"dialect(name={name!r}) takes no {', '.join(given)}: those are for name=\"cuda\" "
                        f"and name=\"c\"")
    options = dict(name=name, pipeline=pipeline, fastmath=fastmath, bounds_check=bounds_check, target=target,
                   deferred=deferred, extern_func_name=extern_func_name)
    if fn is None:
        return lambda f: EdslFunction(f, **options)
    return EdslFunction(fn, **options)


def _cuda_dialect(fn, file, source, defines, compiler, extern_func_name, deferred, tle_options):
    from .cuda_function import CudaFunction
    if "macros" in tle_options:  # TLE-Raw's earlier name for `defines`
        defines = {**tle_options.pop("macros"), **(defines or {})}
    tle_options.pop("hint", None)
    for option in ("extern", "library"):
        if tle_options.get(option):
            raise CompileError(f"dialect(name=\"cuda\", {option}=...): TLE-Raw's {option}= builds with nvcc and "
                               f"links NVSHMEM host code, which this library does not use; a CUDA function here "
                               f"is device code compiled by clang")
        tle_options.pop(option, None)
    if tle_options:
        raise TypeError(f"dialect(name=\"cuda\") takes no {', '.join(sorted(tle_options))}")
    if compiler != "clang":
        raise CompileError(f"dialect(name=\"cuda\", compiler={compiler!r}): CUDA C is compiled by the clang of the "
                           f"ziglang package (compiler=\"clang\"); nvcc and its cubins are not used")

    def make(f):
        return CudaFunction(f, file=file, source=source, defines=defines, extern_func_name=extern_func_name,
                            deferred=deferred)
    return make if fn is None else make(fn)


def _c_dialect(fn, file, source, defines, extern_func_name, options):
    from .c_function import CFunction
    if "macros" in options:  # TLE-Raw's earlier name for `defines`
        defines = {**options.pop("macros"), **(defines or {})}
    if options:
        raise TypeError(f"dialect(name=\"c\") takes no {', '.join(sorted(options))}")

    def make(f):
        return CFunction(f, file=file, source=source, defines=defines, extern_func_name=extern_func_name)
    return make if fn is None else make(fn)
