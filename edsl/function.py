"""`@edsl.dialect`: the decorated function object, its compilation and its cache.

Compiling runs the layers in order: code generation (edsl.codegen) and cleanup
-> `.mlir`; the lowering pipeline (edsl.lowering) -> `.llvm`; translation ->
`.llir`; a program of the DPU model (edsl.dpu.runtime), object code compiled
once per machine, when called.
"""
from __future__ import annotations

import ast
import hashlib
import sys
import types
from dataclasses import dataclass
from importlib import metadata

from mlir import ir

from . import cache, codegen, language
from .codegen.signature import function_info
from .dpu import runtime
from .dpu.abi import MAX_TASKLETS
from .dpu.runtime import LaunchReport, Program
from .errors import ArgumentError, CompileError, DpuError, SourceLoc
from .hostcall import ArgSpec, pack_arguments
from .lowering import (CLEANUP_PIPELINE, DEFAULT_PIPELINE, require_llvm_dialect, run_pipeline, to_llvm_ir,
                       verify)

TARGET = "upmem-dpu"  # what the lowering produces (address spaces of UPMEM's LLVM)


@dataclass
class Compiled:
    mlir: str
    llvm: str
    sites: dict  # run-time check site code -> SourceLoc
    wram_bytes: int
    module: ir.Module | None = None  # LLVM-dialect module, parsed on demand
    program: Program | None = None
    llir: str | None = None


_MEMORY: dict[str, Compiled] = {}


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
    """A Python function compiled by edsl. Properties `.mlir`, `.llvm`, `.llir`;
    calling it runs it on the host (DPU model), updating InOut arrays in place."""

    def __init__(self, fn, name: str = "mlir", pipeline=None, fastmath: bool = False,
                 bounds_check: bool = False):
        if name != "mlir":
            raise CompileError(f"unknown edsl dialect {name!r}: only \"mlir\" is supported")
        with codegen.LOCK, codegen.context():
            self._edsl_function_info = function_info(fn)
            self._specs = [ArgSpec.of(p) for p in self._edsl_function_info.params]
        self.fn = fn
        self.pipeline = tuple(pipeline) if pipeline is not None else DEFAULT_PIPELINE
        self.fastmath = bool(fastmath)
        self.bounds_check = bool(bounds_check)
        self.last_stats: LaunchReport | None = None
        self._key: str | None = None
        self._compiled: Compiled | None = None
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        # Triton kernels name this object in `fl.call`. Triton admits a global in
        # a kernel only if it is a constexpr, a JIT function or an "aggregate",
        # and hashes an aggregate's `__annotations__` into the kernel's cache key:
        # present as one, with this function's identity as the annotation.
        self.__triton_aggregate__ = True
        self.hash_attrs = ()
        self.__annotations__ = {"edsl": self.cache_key or f"{self.__qualname__}@{id(self):x}"}

    def __repr__(self) -> str:
        return f"<edsl function {self.__qualname__}>"

    @property
    def info(self):
        return self._edsl_function_info

    @property
    def params(self) -> list[ArgSpec]:
        return list(self._specs)

    # --- compilation ---------------------------------------------------------------------

    @property
    def cache_key(self) -> str | None:
        """Hash of source, captured values, pipeline, target and versions; None if a
        captured value has no stable identity (then only this object caches)."""
        if self._key is None:
            parts = [_VERSIONS, TARGET, repr(self.pipeline), f"fastmath={self.fastmath}",
                     f"bounds_check={self.bounds_check}"]
            if not _fingerprint(self.info, parts, set()):
                return None
            self._key = hashlib.sha256("\0".join(parts).encode()).hexdigest()
        return self._key

    def compile(self) -> Compiled:
        if self._compiled is not None:
            return self._compiled
        key = self.cache_key
        compiled = _MEMORY.get(key) if key else None
        if compiled is None and key:
            compiled = self._from_disk(key)
        if compiled is None:
            compiled = self._compile()
            if key:
                cache.store(key, {"mlir": compiled.mlir, "llvm": compiled.llvm, "wram_bytes": compiled.wram_bytes,
                                  "sites": [[code, s.filename, s.lineno, s.col] for code, s in compiled.sites.items()]})
        if key:
            _MEMORY[key] = compiled
        self._compiled = compiled
        return compiled

    def _from_disk(self, key: str) -> Compiled | None:
        entry = cache.load(key, {"mlir": str, "llvm": str, "sites": list, "wram_bytes": int})
        if entry is None:
            return None
        try:
            sites = {code: SourceLoc(f, line, col) for code, f, line, col in entry["sites"]}
            with codegen.LOCK, codegen.context():
                module = ir.Module.parse(entry["llvm"])
        except (TypeError, ValueError, ir.MLIRError):
            return None  # corrupt: compile again
        return Compiled(entry["mlir"], entry["llvm"], sites, entry["wram_bytes"], module)

    def _compile(self) -> Compiled:
        with codegen.LOCK, codegen.context():
            state = codegen.generate(self.info, self.fastmath, self.bounds_check)
            module = state.module
            verify(module)
            run_pipeline(module, CLEANUP_PIPELINE, f"{self.__name__} (cleanup)")
            mlir_text = str(module)
            run_pipeline(module, self.pipeline, self.__name__)
            verify(module)
            return Compiled(mlir_text, str(module), dict(state.sites), state.wram_bytes, module)

    def _def_loc(self) -> SourceLoc:
        fdef = self.info.tree
        return SourceLoc(self.info.filename, fdef.lineno, fdef.col_offset)

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
        c = self.compile()
        if c.llir is None:
            with codegen.LOCK, codegen.context():
                require_llvm_dialect(c.module, f"{self.__name__}()", self._def_loc())
                c.llir = to_llvm_ir(c.module)
        return c.llir

    @property
    def wram_bytes(self) -> int:
        """Bytes of WRAM buffers (wram_alloc) the function uses."""
        return self.compile().wram_bytes

    # --- execution -----------------------------------------------------------------------

    def program(self) -> Program:
        """The function as a program of the DPU model (compiled once per machine)."""
        c = self.compile()
        if c.program is None:
            with codegen.LOCK, codegen.context():
                require_llvm_dialect(c.module, f"{self.__name__}()", self._def_loc())
                module = ir.Module.parse(c.llvm)       # the program adds the runtime to its copy
                obj = runtime.build(module, [self.__name__], f"{self.__name__}()")
            c.program = Program(obj, self.__name__, c.sites)
        return c.program

    def __call__(self, *args):
        self.run(*args)

    def run(self, *args, tasklets: int = 1) -> LaunchReport:
        """Run on the host DPU model with `tasklets` tasklets; InOut arrays are
        updated in place. Returns (and keeps in `last_stats`) what the launch did."""
        loc = _caller_loc()
        if len(args) != len(self._specs):
            names = ", ".join(s.name for s in self._specs)
            raise ArgumentError(f"{self.__name__}({names}) takes {len(self._specs)} arguments, "
                                f"{len(args)} given", loc)
        if not isinstance(tasklets, int) or not 1 <= tasklets <= MAX_TASKLETS:
            raise DpuError(f"a DPU runs 1 to {MAX_TASKLETS} tasklets, not {tasklets!r}", loc)
        packed, keep = pack_arguments(self._specs, args, loc)
        program = self.program()
        entry = program.entry(self.__name__)
        # The function's memrefs are checked against their own ends; the MRAM
        # it may reach is the whole address space.
        launch = runtime.Launch(1, tasklets, [0, 2 ** 63 - 1])

        def tasklet(tid: int) -> None:
            ctx = launch.address(0, tid)
            program.enter(ctx)
            entry(packed)
            program.exit(ctx)
        launch.run(tasklet)
        del keep
        launch.raise_error(f"{self.__name__}()", program.sites)
        report = LaunchReport(self.__name__, num_tasklets=tasklets, tasklets_used=tasklets,
                              wram_bytes=self.compile().wram_bytes, **launch.totals(),
                              per_dpu_programs=[1], per_tasklet_dma=launch.per_tasklet_dma())
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
            bounds_check: bool = False):
    """Compile a Python function with `Input[...]`/`InOut[...]` parameters through MLIR.

    `@edsl.dialect` or `@edsl.dialect(name="mlir", pipeline=[pass, ...], fastmath=False,
    bounds_check=False)`.
    """
    options = dict(name=name, pipeline=pipeline, fastmath=fastmath, bounds_check=bounds_check)
    if fn is None:
        return lambda f: EdslFunction(f, **options)
    return EdslFunction(fn, **options)
