"""The stock `nvidia` backend's stages, wrapped so that kernels with `fl.call`
get their EDSL code.

Triton lets a library wrap the stages of every backend through
`triton.knobs.runtime.add_stages_inspection_hook` (Triton 3.6 and later): the
hook gets the backend and the stage table before a kernel compiles, and, from
Triton 3.9, is asked for a string that joins the kernel's cache key. This is
used rather than a backend plug-in wrapping `nvidia`, which would have to
register under another name and be chosen by users (`TRITON_DEFAULT_BACKEND`)
and track the stock backend's options and driver; the hook leaves the stock
backend in charge and changes one stage.

The `llir` stage is replaced by the stock `make_llir` with one more extern
library, placed before libdevice: the LLVM IR that edsl.inject.gpu_library builds for
the placeholders found in the kernel's TTGIR. Triton's extern-library linker
links it before LLVM's O3, which inlines it. Before that, the order of the
placeholders is checked, since each call's barriers and pool offsets rely on
it (edsl.gpu.placeholders). After it, the calls' pool is placed after
Triton's shared memory and the kernel's `shared` grows by it: Triton's
launcher opts the kernel in to that much dynamic shared memory, and a kernel
needing more than its GPU has is Triton's `OutOfResources`, which the
autotuner skips. The kernel's own shared buffers (edsl.gpu.shared) go in
the pool after the calls' tiles. The `ptx` stage is wrapped too, to count
the static shared arrays of CUDA C raw functions in that limit, and, in a
kernel with shared buffers, to make its global-memory accesses generic
(`generic_accesses`).

A hook set before edsl installs its own is composed with it (edsl's wrapping
first, then the user's); a hook set afterwards replaces edsl's, and `fl.call`
then says so instead of compiling a kernel without its code.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import tempfile

from triton.runtime.errors import OutOfResources

from ..backend import triton_internals
from ..base import cache, collector
from ..base.errors import CompileError
from ..target import nvptx
from . import code_version
from ..inject import gpu_library as library
from .placeholders import PLANS


class StagesHook:
    """edsl's stages hook, calling `inner` (a hook set before) after its own work."""

    def __init__(self, inner=None):
        self.inner = inner

    def __call__(self, *args):
        if not args:  # Triton 3.9 asks for a part of the cache key
            key = digest = f"edsl-gpu-{code_version()}"
            if self.inner is not None:
                inner_key, inner_digest = self.inner()
                key += inner_key
                digest = hashlib.sha256(f"{digest}{inner_digest}".encode()).hexdigest()
            return key, digest
        backend, stages, options, language, capability = args
        target = getattr(backend, "target", None)
        if getattr(target, "backend", None) == "cuda" and "llir" in stages:
            stock = stages["llir"]
            compile_state = {}              # (this compile's: whether it has shared buffers)
            stages["llir"] = lambda src, metadata: make_llir(backend, options, capability, src, metadata, stock,
                                                             compile_state)
            if "ptx" in stages:
                stock_ptx = stages["ptx"]
                stages["ptx"] = lambda src, metadata: make_ptx(stock_ptx(src, metadata), metadata, capability,
                                                               compile_state)
        if self.inner is not None:
            self.inner(*args)


def install() -> StagesHook:
    """Install edsl's hook (once), composed with a hook already set."""
    current = triton_internals.stages_hook()
    if isinstance(current, StagesHook):
        return current
    hook = StagesHook(current)
    triton_internals.set_stages_hook(hook)
    return hook


def require_installed() -> None:
    if not isinstance(triton_internals.stages_hook(), StagesHook):
        raise RuntimeError(
            "fl.call on the nvidia backend needs edsl's stages hook, but "
            "triton.knobs.runtime.add_stages_inspection_hook was replaced after edsl installed it; "
            "set your hook before importing edsl.fl, or call edsl.gpu.stages.install() after setting it "
            "(edsl then runs its hook and yours)")


_PLACEHOLDER = re.compile(r'tt\.extern_elementwise\b.*\bsymbol = "(' + re.escape(library.PREFIX) +
                          r'(sync|put|get|run)\w*)"')


def placeholders(ttgir: str) -> tuple[list[str], set[str]]:
    """The run symbols and the element types of the puts and gets in a TTGIR
    text, after checking that every call's placeholders are in order: in one
    block, `sync put* run get*`, repeated. Raises CompileError otherwise."""
    runs, elems = [], set()
    if library.PREFIX not in ttgir:
        return runs, elems
    if "ttg.warp_specialize" in ttgir:
        raise CompileError("fl.call is not supported in warp-specialized kernels: its barriers need every "
                           "thread of the CTA")
    states = ["idle"]          # per open block: idle | staging | results
    has_call = [False]
    for number, line in enumerate(ttgir.splitlines(), 1):
        text = line.strip()
        m = _PLACEHOLDER.search(text)
        if m:
            _step(states, m.group(2), number)
            has_call[-1] = True
            if m.group(2) == "run":
                if m.group(1) not in runs:
                    runs.append(m.group(1))
            elif m.group(2) in ("put", "get"):
                elems.add(m.group(1).rsplit("_", 1)[1])
            continue
        if text.startswith("}"):  # a block ends (`}`, `} else {`, `}) : ...`)
            inner = has_call.pop()
            _end_block(states.pop(), number)
            if inner:
                if states[-1] == "staging":
                    raise CompileError(f"fl.call placeholders out of order at TTGIR line {number}: a region "
                                       f"with calls inside the staging of another call")
                states[-1] = "idle"   # the gets of an earlier call may not follow
                has_call[-1] = True
        elif text.startswith("^"):   # a new block of the same region
            _end_block(states[-1], number)
            states[-1] = "idle"
        if text.endswith("{"):
            states.append("idle")
            has_call.append(False)
    return runs, elems


def _end_block(state: str, number: int) -> None:
    if state == "staging":
        raise CompileError(f"fl.call placeholders out of order at TTGIR line {number}: a block ends between a "
                           f"call's barrier and its run (Triton moved an operation of an fl.call); the kernel is "
                           f"not compiled rather than compiled wrong")


def _step(states: list, kind: str, number: int) -> None:
    state = states[-1]
    allowed = {"idle": {"sync"}, "staging": {"put", "run"}, "results": {"get", "sync"}}[state]
    if kind not in allowed:
        raise CompileError(f"fl.call placeholders out of order at TTGIR line {number}: a {kind} after the "
                           f"{state} of a call (Triton moved an operation of an fl.call); the kernel is not "
                           f"compiled rather than compiled wrong")
    states[-1] = {"sync": "staging", "put": "staging", "run": "results", "get": "results"}[kind]


def _write(text: str) -> str:
    """A file holding `text` (extern libraries are linked from files)."""
    name = hashlib.sha256(text.encode()).hexdigest()[:32] + ".ll"
    for directory in (cache.cache_dir() / "gpu", None):
        try:
            if directory is None:
                directory = tempfile.mkdtemp(prefix="edsl-gpu-")
            os.makedirs(directory, exist_ok=True)
            path = os.path.join(directory, name)
            if not os.path.exists(path):
                fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
                with os.fdopen(fd, "w") as f:
                    f.write(text)
                os.replace(tmp, path)
            return path
        except OSError:
            continue
    raise OSError("no directory to write the fl.call library to")


_EMPTY_MODULE = f'target triple = "{nvptx.TRIPLE}"\n'
_MAY_CALL_LIBDEVICE = re.compile(r"__nv_|\bmath\.|\barith\.remf\b|\btt\.extern_elementwise\b[^\n]*libpath = \"[^\"]")


_BUFFER = re.compile(r'\bsymbol = "(' + re.escape(library.SMEM_PREFIX) + r'\d+_\d+)"')


def make_llir(backend, options, capability, src, metadata, stock, compile_state=None):
    """The stock `make_llir`, with the kernel's fl.call library linked."""
    ttgir = src.str()
    runs, elems = placeholders(ttgir)
    buffers = list(dict.fromkeys(_BUFFER.findall(ttgir)))
    if not runs and not buffers:
        return stock(src, metadata)
    if compile_state is not None:
        compile_state["buffers"] = bool(buffers)
    missing = [s for s in runs if s not in PLANS]
    if missing:
        raise CompileError(f"the kernel calls {missing[0]}, an fl.call compiled in another process; compile "
                           f"the kernel from its Python source")
    plans = [PLANS[s] for s in runs]
    tiles = max((p.pool_bytes for p in plans), default=0)
    offsets, pool = library.buffer_offsets(buffers, tiles)
    with collector.paused():
        text, foreign = library.build(plans, elems, nvptx.arch(capability), offsets,
                                      threads=options.num_warps * nvptx.WARP_SIZE)
    # (the library first: its declarations make the foreign modules' definitions needed)
    libs = (("edsl", _write(text)),) + tuple((f"edsl-cuda-{k}", _write(m)) for k, m in enumerate(foreign))
    # libdevice only where something may call it: parsing and linking it costs
    # a compile ~50 ms, and Triton links every library once one is needed.
    # (The kernel's math ops may become libdevice calls when lowered. Triton's
    # options put libdevice back when left out: an empty module stands in.)
    needs_libdevice = any("@__nv_" in t for t in [text, *foreign]) or _MAY_CALL_LIBDEVICE.search(ttgir)
    libs += tuple((name, path if name != "libdevice" or needs_libdevice else _write(_EMPTY_MODULE))
                  for name, path in options.extern_libs or ())
    llir = backend.make_llir(src, metadata, dataclasses.replace(options, extern_libs=libs), capability)
    llir, metadata["shared"] = library.place_pool(llir, metadata["shared"], pool)
    limit = nvptx.MAX_SHARED_BYTES.get(capability)
    if limit is not None and metadata["shared"] > limit:
        # (Triton's own error at load, raised when compiling: its autotuner skips the config)
        mine = f"fl.call's tiles take {tiles} bytes" + (f" and the kernel's shared buffers {pool - tiles}"
                                                        if buffers else "")
        raise OutOfResources(metadata["shared"], limit, f"shared memory ({mine} after Triton's "
                             f"{metadata['shared'] - pool})")
    return llir


def make_ptx(ptx: str, metadata, capability, compile_state) -> str:
    """The stock `make_ptx`'s text, checked (`check_static_shared`) and, in a
    kernel with shared buffers, with generic global-memory accesses."""
    ptx = check_static_shared(ptx, metadata, capability)
    return generic_accesses(ptx) if compile_state.get("buffers") else ptx


# Loads, stores and atomics Triton emits for global memory (`ld.global.nc` is
# a read-only one, which has no generic form).
_GLOBAL_ACCESS = re.compile(r"\b(ld|st|atom|red)\.global\.(?:nc\.)?")


def generic_accesses(ptx: str) -> str:
    """`ptx` with its global-memory loads, stores and atomics made generic
    (`ld.global.v4.b32` -> `ld.v4.b32`). Triton sees a pointer into a shared
    buffer (`local_ptr`) as a global one and accesses it with `ld.global`,
    which faults on a shared address (cudaErrorInvalidAddressSpace on an
    H200); a generic access reaches either space, the hardware telling them
    apart by the address. Written on the PTX text: no Triton stage or option
    chooses generic accesses. Asynchronous copies (`cp.async`, the tensor
    memory accelerator) have no generic form: `local_ptr` pointers must not
    reach them (edsl.gpu.shared)."""
    return _GLOBAL_ACCESS.sub(r"\1.", ptx)


_STATIC_SHARED = re.compile(r"^\s*\.shared \.align \d+ \.b8 [^\s\[]+\[(\d+)\];", re.M)


def check_static_shared(ptx: str, metadata, capability) -> str:
    """`ptx`, once its static shared arrays (a CUDA C raw function's
    `__shared__`; Triton's own shared memory is dynamic) fit beside the
    kernel's dynamic shared memory in what a block may use: beyond it,
    Triton's `OutOfResources` (the autotuner skips the config) rather than a
    launch that fails."""
    static = sum(int(n) for n in _STATIC_SHARED.findall(ptx))
    limit = nvptx.MAX_SHARED_BYTES.get(capability)
    if static and limit is not None and metadata["shared"] + static > limit:
        raise OutOfResources(metadata["shared"] + static, limit,
                             f"shared memory (static arrays of raw functions take {static} bytes beside the "
                             f"kernel's {metadata['shared']} of dynamic shared memory)")
    return ptx
