"""Raw DPU functions in UPMEM C: compiled by the clang of the `ziglang`
package (edsl.codegen.clang) to LLVM IR for this host, where the DPU model
runs them.

No UPMEM SDK is used: the SDK's DPU headers the model honours (`defs.h`,
`mram.h`, `barrier.h`, `assert.h`, `stdio.h`, `mutex.h`, `handshake.h`,
`alloc.h`, `seqread.h`, `atomic_bit.h`, `perfcounter.h`, whose calls fault) are the project's own, in
`upmem_include/`, `edsl_dpu.h` included before the source. They call the
model's runtime (edsl.target.dpu: its symbols are defined for the compile
from there), so a transfer is checked against the DMA rules and the launch's
MRAM, and a fault stops the tasklet and is reported at the source's line:
each such call passes `EDSL_SITE`: its base (`site_base`), plus its file's index
(`EDSL_FILE_INDEX`: 0 for the source, then the files it includes) times
`FILE_SITES`, plus its line.

A load or store of a scalar through a `__mram_ptr` pointer becomes a call
of the prelude's `__edsl_mram_load`/`__edsl_mram_store`, which move the
8-byte blocks holding it by the same checked DMA, at the access's line in
clang's line table (`checked_mram_accesses`). Variables in MRAM (`__mram`,
`__mram_noinit`) are kept in the host's memory, where a function run alone
has its MRAM: their addresses are their MRAM addresses, each a region of
its MRAM (`host_mram_variables`). What the model cannot check yet is
refused when the function compiles, at that line: other accesses through
`__mram_ptr` pointers (atomics, block copies, vectors, pointers kept in
MRAM).
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field

from ..base.errors import CompileError, SourceLoc
from ..target import dpu
from . import clang, llvm_ir
from .clang import Source

INCLUDE_DIR = os.path.join(os.path.dirname(__file__), "upmem_include")
PRELUDE = "edsl_dpu.h"
LANGUAGE = "DPU C"
# Site codes of a C source's lines: its base + file index * FILE_SITES + line
# (an EDSL function's sites count from 0). The base is SITE_BASE times one
# plus the function's slot: a kernel calling several C functions compiles
# each in a slot of its own, so their codes never meet.
SITE_BASE = 1 << 32
FILE_SITES = 1 << 24
# The runtime's entry points the headers call, as the compile names them.
_RUNTIME = {"EDSL_ME": dpu.ME, "EDSL_BARRIER": dpu.BARRIER, "EDSL_MRAM_READ": dpu.MRAM_READ,
            "EDSL_MRAM_WRITE": dpu.MRAM_WRITE, "EDSL_ASSERT_FAIL": dpu.ASSERT_FAIL, "EDSL_CTX": dpu.CTX,
            "EDSL_FAIL": dpu.FAIL, "EDSL_YIELD": dpu.YIELD, "EDSL_WAIT_WORD": dpu.WAIT_WORD,
            "EDSL_WAKE_WORD": dpu.WAKE_WORD, "EDSL_RACE_NOTE": dpu.RACE_NOTE}
RUNTIME_SYMBOLS = frozenset(_RUNTIME.values())
# What the headers (mutex.h, handshake.h, alloc.h, seqread.h) need of the ABI (EDSL_<name>).
_FACTS = {"CTX_C_HEAP": int(dpu.Ctx.C_HEAP), "CTX_C_MRAM_HEAP": int(dpu.Ctx.C_MRAM_HEAP),
          "CTX_C_MRAM_BASE": int(dpu.Ctx.C_MRAM_BASE), "MRAM_BYTES": dpu.MRAM_BYTES, "CTX_REGIONS": int(dpu.Ctx.REGIONS),
          "CTX_NREGIONS": int(dpu.Ctx.NREGIONS), "DPU_COUNT": int(dpu.Dpu.COUNT),
          "DPU_TASKLETS": int(dpu.Dpu.TASKLETS), "DPU_WAIT_SITE": int(dpu.Dpu.WAIT_SITE),
          "DPU_SCHEDULER": int(dpu.Dpu.SCHEDULER), "COUNT_FIELD_MASK": dpu.COUNT_FIELD_MASK,
          "COUNT_BLOCKED_SHIFT": dpu.COUNT_BLOCKED_SHIFT, "COUNT_FINISHED_SHIFT": dpu.COUNT_FINISHED_SHIFT,
          "WRAM_BYTES": dpu.WRAM_BYTES, "HEAP_ALIGN": dpu.HEAP_ALIGN, "DMA_ALIGN": dpu.DMA_ALIGN,
          "DMA_MAX_BYTES": dpu.DMA_MAX_BYTES, "MAX_TASKLETS": dpu.MAX_TASKLETS,
          "RACE_RELEASE": dpu.RACE_RELEASE, "RACE_ACQUIRE": dpu.RACE_ACQUIRE,
          "RACE_UNORDERED": dpu.RACE_UNORDERED,
          **{f"ERR_{e.name}": int(e) for e in (dpu.Err.MUTEX_UNLOCK, dpu.Err.MUTEX_RELOCK, dpu.Err.SYNC_DEADLOCK,
                                                dpu.Err.HEAP_FULL, dpu.Err.SEQREAD_STEP,
                                                dpu.Err.HANDSHAKE_BUSY, dpu.Err.HANDSHAKE_WHOM,
                                                dpu.Err.PERFCOUNTER_CONFIG, dpu.Err.PERFCOUNTER_GET,
                                                dpu.Err.UNALIGNED_SIZE, dpu.Err.UNALIGNED_MISMATCH)}}
RUN = "__edsl_run"      # (packed entry, args): runs a packed entry until it returns or a fault stops it
# (address, size, site) -> bits, (address, size, bits, site) -> (): a load, a store through a __mram_ptr
MRAM_LOAD, MRAM_STORE = "__edsl_mram_load", "__edsl_mram_store"
_PRELUDE_FUNCTIONS = (RUN, MRAM_LOAD, MRAM_STORE)
# The variables alloc.h keeps mem_alloc's heap in (by their names' start).
HEAP_VARIABLES = "__edsl_heap"
# The functions giving a module's variables their first values (`CompiledC.reset_function`), which
# the model calls from the host between DPUs: no DPU's code.
RESET_PREFIX = "__edsl_reset_variables_"
# The functions of the model's mutex.h, handshake.h and barrier.h (a barrier of fewer
# tasklets than the DPU's): the model's code, not counted; a call of one counts as its class.
SYNC_CALLS = {"__edsl_mutex_lock": dpu.MUTEX_LOCK, "__edsl_mutex_unlock": dpu.MUTEX_UNLOCK,
              "__edsl_mutex_trylock": dpu.MUTEX_TRYLOCK, "__edsl_handshake_wait_for": "sync",
              "__edsl_handshake_notify": "sync", "__edsl_barrier_some": "sync"}


# The host's clang made to shape loops as the DPU's does: no vector code (the
# DPU has no vector unit; and accesses through __mram_ptr pointers stay scalars,
# as checked_mram_accesses reads them), and no partial or run-time unrolling
# (UPMEM's DPU backend, upmem/llvm-project llvm/lib/Target/DPU: a processor
# without a scheduling model, DPU.td, and no unrolling preferences of its own,
# DPUTargetTransformInfo.h, so LLVM's default: those unrollings only where the
# scheduling model gives a loop buffer; the host's has one). Full unrolling of
# constant trip counts stays, as on the DPU.
AS_ON_A_DPU = ("-fno-vectorize", "-fno-slp-vectorize", "-mllvm", "-unroll-allow-partial=false",
               "-mllvm", "-unroll-runtime=false")


def site_base(slot: int) -> int:
    """Where the site codes of a C function compiled in `slot` start."""
    return SITE_BASE * (1 + slot)


def flags(source: Source, tasklets: int, files: tuple = (), slot: int = 0) -> list[str]:
    """clang's flags; `files`: the files the source includes, as `__FILE__` names them there."""
    index = "".join(f'__builtin_strcmp(__FILE__, "{f}") == 0 ? {k} : ' for k, f in enumerate(files, 1)) + "0"
    defines = [f"-D{k}={v}" for k, v in _RUNTIME.items()]
    defines += [f"-DEDSL_SITE_BASE={site_base(slot)}", f"-DEDSL_FILE_SITES={FILE_SITES}",
                f"-DEDSL_FILE_INDEX=({index})", f"-DEDSL_CTX_C_STOP={int(dpu.Ctx.C_STOP)}",
                f"-DEDSL_CTX_DPU={int(dpu.Ctx.DPU)}", f"-DEDSL_DPU_FAILED={int(dpu.Dpu.FAILED)}",
                f"-DNR_TASKLETS={tasklets}"]
    defines += [f"-DEDSL_{k}={v}" for k, v in _FACTS.items()]
    return ["-x", "c", "-std=gnu11", "-ffreestanding", "-nostdlibinc", "-fno-stack-protector", *AS_ON_A_DPU,
            "-isystem", clang.builtin_headers(), "-I", INCLUDE_DIR, "-include", PRELUDE, *defines] + source.flags()


def preprocessed(source: Source) -> str:
    """The source after the preprocessor (its #includes in)."""
    return clang.run(source, flags(source, 1) + ["-E", "-P"], LANGUAGE)


def digest(source: Source) -> str:
    return clang.digest(preprocessed(source), source)


_MARKER = re.compile(r'^# \d+ "((?:[^"\\]|\\.)*)"', re.M)


def included_files(source: Source) -> tuple:
    """The user's files the source includes, as `__FILE__` names them
    (not the project's headers nor clang's)."""
    text = clang.run(source, flags(source, 1) + ["-E"], LANGUAGE)
    ours = (os.path.join(INCLUDE_DIR, ""), os.path.join(clang.builtin_headers(), ""))
    found = []
    for name in _MARKER.findall(text):
        if name.startswith("<") or name == source.filename or name in found:
            continue
        if not os.path.abspath(os.path.join(os.path.dirname(source.filename), name)).startswith(ours):
            found.append(name)
    return tuple(found)


@dataclass(frozen=True)
class CompiledC:
    """A C source compiled for the DPU model with a number of tasklets."""
    llvm: str                           # the module's LLVM IR (with line tables)
    function: llvm_ir.LlvmFunction      # the function run or called
    sites: dict = field(hash=False)     # site code -> SourceLoc
    globals: tuple = ()                 # the module's variables written at run time (a DPU's WRAM)
    included: tuple = ()                # the files the source includes, as `__FILE__` names them
    texts: tuple = ()                   # (path, text) of the source, then of those files
    slot: int = 0                       # where its site codes are (`site_base`)
    mram_variables: tuple = ()          # its variables in MRAM (`host_mram_variables`)

    @functools.cached_property
    def direct_mram(self) -> bool:
        """Whether it loads or stores through `__mram_ptr` pointers itself (a
        DPU moves those bytes without its program's transfers), other than
        at constant addresses in its own variables in MRAM (each DPU's own:
        nothing to merge)."""
        # (`checked_mram_accesses` names each access's address `%edsl.mram<k>.a`)
        addresses = dict(re.findall(r"^\s*(%edsl\.mram\d+\.a) = ptrtoint ptr addrspace\(255\) (.*) to i64$",
                                    self.llvm, re.M))
        for address in re.findall(rf"\bcall\b[^\n]*@(?:{MRAM_LOAD}|{MRAM_STORE})\(i64 (%[-\w.]+)", self.llvm):
            expr = addresses.get(address, "%")
            named = re.findall(r"@([-\w$.]+)", expr)
            if "%" in expr or not named or not set(named) <= set(self.mram_variables):
                return True
        return False

    @functools.cached_property
    def external_names(self) -> frozenset:
        """The functions and variables it defines that another source's
        definitions of the same names would clash with, once linked into one
        DPU program (not `static`; not the model's own, `__edsl_...`)."""
        functions = {m[2] for m in re.finditer(r"^define ([^@\n]*)@([-\w$.]+)\(", self.llvm, re.M)
                     if not re.search(r"\b(internal|private|weak|linkonce\w*|available_externally)\b", m[1])}
        variables = {m[1] for m in re.finditer(r"^@([-\w$.]+) = ([^\n]*?)\b(?:global|constant)\b", self.llvm, re.M)
                     if not re.search(r"\b(internal|private|weak|linkonce\w*|external|extern_weak|appending)\b", m[2])}
        return frozenset(name for name in functions | variables if not name.startswith(("__edsl_", "llvm.")))

    @property
    def wram_variable_bytes(self) -> int:
        """The WRAM its variables take (`variable_bytes`; not those in MRAM)."""
        return variable_bytes(self.llvm, skip=self.mram_variables)

    @property
    def mram_variable_bytes(self) -> int:
        """The MRAM its variables in MRAM take, each in whole 8-byte blocks (as compiled for the host)."""
        return sum(dpu.align_up(n) for n in variable_sizes(self.llvm, self.mram_variables).values())

    @property
    def mram_variables_table(self) -> str | None:
        """The table (`linked` defines it) of the [start, end) host addresses of
        its MRAM variables, i64 pairs (None: it has none)."""
        return mram_variables_table(self.slot) if self.mram_variables else None

    @property
    def reset_function(self) -> str | None:
        """The function (`linked` defines it) that gives its variables their
        first values again, as a DPU's WRAM holds them once its program is
        loaded (None: it has none)."""
        return f"{RESET_PREFIX}{self.slot}" if self.globals else None

    def linked(self, races: bool = False, also: tuple = ()) -> tuple[str, tuple]:
        """(LLVM IR, the names of the functions it exports: its function's, then
        `also`, more functions of the source a program calls) to link into a
        program, with its `reset_function`; `races`: its WRAM accesses logged
        for the check of races between tasklets. (Its MRAM addresses are the
        host's: a program it is linked into has no MRAM shift.)"""
        text = self.llvm if not races else with_race_notes(self.llvm, (self.texts[0][0], *self.included), self.slot)
        if self.globals:
            text = with_variables_reset(text, self.globals, self.reset_function)
        if self.mram_variables:
            text = with_address_table(text, self.mram_variables, self.mram_variables_table)
        return text, (self.function.name, *also)

    @functools.cached_property
    def uses_mram_heap(self) -> bool:
        """Whether its source or a file of the user's that it includes
        (`texts`) names `DPU_MRAM_HEAP_POINTER` (mram.h): a run alone maps the
        heap only then.
        (A name pasted from pieces is missed: its transfers then fail at their
        line, outside the run's MRAM.)"""
        return any(re.search(r"\bDPU_MRAM_HEAP_POINTER\b", text) for _, text in self.texts)

    @property
    def prints(self) -> bool:
        """Whether it prints (stdio.h's printf calls the host's vprintf)."""
        return re.search(r"\bcall\b[^\n]*@vprintf\(", self.llvm) is not None


def compile_c(source: Source, tasklets: int, extern_func_name: str, name: str, slot: int = 0) -> CompiledC:
    """The source's LLVM IR for the DPU model (-O2), its function `extern_func_name`
    (else the one named `name`, else the one it makes visible), checked for what the
    model cannot run; its site codes from `site_base(slot)`."""
    files = included_files(source)
    llvm = clang.run(source, flags(source, tasklets, files, slot) + ["-O2", "-gline-tables-only", "-S", "-emit-llvm",
                                                               "-o", "-"], LANGUAGE)
    defined = llvm_ir.functions(llvm)
    wanted = extern_func_name or (name if name in defined else "")
    function = llvm_ir.pick(llvm, wanted, source.filename, kind="non-static", ignore=_PRELUDE_FUNCTIONS)
    llvm = checked_mram_accesses(llvm, (source.filename, *files), slot)
    _refuse_unchecked(llvm, source)
    llvm, in_mram = host_mram_variables(llvm)
    texts = _texts(source, files)
    return CompiledC(llvm, function, _sites(texts, slot), _written_globals(llvm), files, texts, slot, in_mram)


def _texts(source: Source, files: tuple) -> tuple:
    """(path, text) of the source, then of each file it includes (`files`, as
    `__FILE__` names them; "" where one cannot be read)."""
    texts = [(source.filename, source.text)]
    for name in files:
        path = os.path.normpath(os.path.join(os.path.dirname(source.filename), name))
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                texts.append((path, f.read()))
        except OSError:
            texts.append((path, ""))
    return tuple(texts)


def _sites(texts: tuple, slot: int) -> dict:
    """The SourceLoc of each site code: every line of the source and of the files it includes."""
    sites = {}
    for k, (path, text) in enumerate(texts):
        base = site_base(slot) + k * FILE_SITES
        sites |= {base + line: SourceLoc(path, line, 0) for line in range(1, text.count("\n") + 2)}
    return sites


_MRAM_ACCESS = re.compile(r"^\s*(?:%\S+ = )?(?:load|store|atomicrmw|cmpxchg)\b[^\n]*ptr addrspace\(255\).*$|"
                          r"^\s*(?:%\S+ = )?(?:tail )?call [^\n]*@llvm\.mem(?:cpy|move|set)\.[^\n(]*p255.*$", re.M)
# A variable in MRAM, as clang defines it: its name, its linkage and other words, its kind and the rest.
_MRAM_VARIABLE = re.compile(r"^@(?P<name>[-\w$.]+) = (?P<words>(?:[a-z_]+(?:\([^)]*\))? )*?)addrspace\(255\) "
                            r"(?P<kind>(?:externally_initialized )?(?:global|constant) )(?P<rest>.*)$", re.M)
MRAM_VARIABLES_PREFIX = "__edsl_mram_variables_"
_LOCATION = re.compile(r"^(!\d+) = (?:distinct )?!DILocation\(line: (\d+), column: (\d+)", re.M)


_SCALAR_ACCESS = re.compile(
    r"^(?P<indent>\s*)(?:(?P<result>%[-\w.]+) = load (?P<ltype>i8|i16|i32|i64|half|bfloat|float|double), |"
    r"store (?P<stype>i8|i16|i32|i64|half|bfloat|float|double) (?P<value>[^,]+), )"
    r"ptr addrspace\(255\) (?P<ptr>%[-\w.]+|@[-\w$.]+|getelementptr [^(\n]*\((?:[^()\n]|\([^()\n]*\))*\)), "
    r"align \d+(?P<rest>.*)$", re.M)
_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "half": 16, "bfloat": 16, "float": 32, "double": 64}
_DBG = re.compile(r"!dbg (!\d+)")


def checked_mram_accesses(llvm: str, files: tuple, slot: int = 0) -> str:
    """`llvm` with each load and store of a scalar through an MRAM pointer
    made a call of `__edsl_mram_load` / `__edsl_mram_store` (edsl_dpu.h), its
    site the access's line in the line table; `files`: the source, then the
    files it includes, as __FILE__ names them (their site indices)."""
    places = _line_table(llvm, files, site_base(slot))
    count = 0

    def rewrite(m: re.Match) -> str:
        nonlocal count
        count += 1
        t = m["ltype"] or m["stype"]
        bits, tmp, ind = _BITS[t], f"%edsl.mram{count}", m["indent"]
        dbg = _DBG.search(m["rest"])
        site = places.get(dbg[1], site_base(slot)) if dbg else site_base(slot)
        tail = f", !dbg {dbg[1]}" if dbg else ""
        lines = [f"{ind}{tmp}.a = ptrtoint ptr addrspace(255) {m['ptr']} to i64"]
        integer = f"i{bits}"
        if m["ltype"]:
            call = f"call i64 @{MRAM_LOAD}(i64 {tmp}.a, i64 {bits // 8}, i64 {site}){tail}"
            lines.append(f"{ind}{tmp}.b = {call}")
            if t == "i64":
                lines.append(f"{ind}{m['result']} = bitcast i64 {tmp}.b to i64")
            elif t == "double":
                lines.append(f"{ind}{m['result']} = bitcast i64 {tmp}.b to double")
            elif t == integer:
                lines.append(f"{ind}{m['result']} = trunc i64 {tmp}.b to {t}")
            else:
                lines += [f"{ind}{tmp}.c = trunc i64 {tmp}.b to {integer}",
                          f"{ind}{m['result']} = bitcast {integer} {tmp}.c to {t}"]
        else:
            value = m["value"]
            if t != integer:
                lines.append(f"{ind}{tmp}.c = bitcast {t} {value} to {integer}")
                t, value = integer, f"{tmp}.c"
            lines.append(f"{ind}{tmp}.b = " + (f"zext {t} {value} to i64" if bits < 64 else
                                               f"bitcast i64 {value} to i64"))
            lines.append(f"{ind}call void @{MRAM_STORE}(i64 {tmp}.a, i64 {bits // 8}, i64 {tmp}.b, "
                         f"i64 {site}){tail}")
        return "\n".join(lines)
    return _SCALAR_ACCESS.sub(rewrite, llvm)


_WRAM_ACCESS = re.compile(r"^(?P<indent>\s*)(?:%[-\w.$]+ = )?(?:tail )?(?P<op>load|store|atomicrmw|cmpxchg|"
                          r"call void @llvm\.mem(?:cpy|move|set)\.p0)\b(?P<rest>.*)$", re.M)
_ORDERING = re.compile(r"\s+(?:syncscope\(\"[^\"]*\"\)\s+)?(?:unordered|monotonic|acquire|release|acq_rel|seq_cst)"
                       r"(?:\s+(?:unordered|monotonic|acquire|release|acq_rel|seq_cst))?\s*$")
_CALL_POINTER = re.compile(r"ptr (?:(?:noundef|nonnull|noalias|readonly|writeonly|align \d+|"
                           r"(?:dereferenceable|captures)\([^)]*\)) )*(%[-\w.$]+|@[-\w.$]+)")


def with_race_notes(llvm: str, files: tuple, slot: int = 0) -> str:
    """`llvm` (a compiled function's module) with each access of WRAM, a load,
    store, atomic or block copy through a pointer of address space 0, logged
    for the check of races between tasklets (`dpu.RACE_NOTE`, at the access's
    line): the WRAM side of its transfers is logged by the runtime. The
    model's own accesses, in the SDK headers (`upmem_include/`: the words of
    mutexes, handshakes and barriers), are not: they order the tasklets
    (`dpu.RACE_RELEASE`), which the headers log themselves."""
    places = _line_table(llvm, files, site_base(slot))
    ours = os.path.join(INCLUDE_DIR, "")
    in_headers = {k for k, (_, _, path) in llvm_ir.debug_locations(llvm).items() if path.startswith(ours)}
    count = 0

    def note(indent: str, kind: int, pointer: str, size: str, site: int) -> list[str]:
        nonlocal count
        count += 1
        return [f"{indent}%edsl.race{count} = ptrtoint ptr {pointer} to i64",
                f"{indent}call void @{dpu.RACE_NOTE}(i64 {kind}, i64 %edsl.race{count}, i64 {size}, i64 {site})"]

    def rewrite(m: re.Match) -> str:
        op, rest, indent = m["op"], m["rest"], m["indent"]
        dbg = _DBG.search(rest)
        if dbg and dbg[1] in in_headers:
            return m.group(0)
        site = places.get(dbg[1], site_base(slot)) if dbg else site_base(slot)
        lines = [m.group(0)]
        if op.startswith("call"):
            pointers = _CALL_POINTER.findall(rest)
            size = re.search(r", i64 ([-\w.%]+), i1 ", rest)
            if not pointers or size is None or "addrspace" in rest:
                return m.group(0)
            size = size[1]
            lines += note(indent, int(dpu.Access.WRITE), pointers[0], size, site)
            if "memset" not in op:
                lines += note(indent, int(dpu.Access.READ), pointers[1], size, site)
            return "\n".join(lines)
        atomic = op in ("atomicrmw", "cmpxchg") or re.match(r"\s+atomic\b", rest) is not None
        parts = llvm_ir.split_top(re.sub(r"^\s+(?:atomic |volatile |weak )*", "", rest))
        if op == "load":
            kind, t, pointer = dpu.Access.READ, parts[0], parts[1]
        elif op == "store":
            kind, t, pointer = dpu.Access.WRITE, llvm_ir.leading_type(parts[0]), parts[1]
        elif op == "atomicrmw":
            kind, t, pointer = dpu.Access.ATOMIC, llvm_ir.leading_type(parts[1]), parts[0].split(" ", 1)[1]
        else:
            kind, t, pointer = dpu.Access.ATOMIC, llvm_ir.leading_type(parts[1]), parts[0]
        if not pointer.startswith("ptr ") or t is None:     # (MRAM's: its transfers are logged by the runtime)
            return m.group(0)
        kind = dpu.Access.ATOMIC if atomic else kind
        pointer = _ORDERING.sub("", pointer[len("ptr "):])
        size = f"ptrtoint (ptr getelementptr ({t}, ptr null, i32 1) to i64)"
        return "\n".join(lines + note(indent, int(kind), pointer, size, site))
    text = _WRAM_ACCESS.sub(rewrite, llvm)
    if count and f"@{dpu.RACE_NOTE}(" not in llvm:
        text += f"\ndeclare void @{dpu.RACE_NOTE}(i64, i64, i64, i64)\n"
    return text


def _line_table(llvm: str, files: tuple, base: int) -> dict:
    """The site of each DILocation of `llvm` (by metadata id): `base`, its file's
    index in `files` (0 if not found) and its line."""
    return {k: base + (files.index(name) if name in files else 0) * FILE_SITES + line
            for k, (name, line, _) in llvm_ir.debug_locations(llvm).items() if line is not None}


def host_mram_variables(llvm: str) -> tuple[str, tuple]:
    """`llvm` with its variables in MRAM (address space 255: `__mram`,
    `__mram_noinit`) defined in the host's writable memory, at least 8-byte
    aligned (an MRAM variable's transfers are the DMA's), each use of one a cast of
    its host address to an MRAM pointer: a function run alone has the host's
    addresses for MRAM addresses (`c_function`), so its transfers of a
    variable are checked as of an MRAM array of the variable's bytes. And
    the variables' names."""
    names = tuple(m["name"] for m in _MRAM_VARIABLE.finditer(llvm))
    if not names:
        return llvm, names

    def host(m: re.Match) -> str:
        # (a `const __mram` one writable too, as MRAM is: a transfer into it would fault the host)
        rest = re.sub(r", align (\d+)", lambda a: f", align {max(int(a[1]), dpu.DMA_ALIGN)}", m["rest"], count=1)
        return f"@{m['name']} = {m['words']}{m['kind'].replace('constant', 'global')}{rest}"
    text = _MRAM_VARIABLE.sub(host, llvm)
    # (a use: the typed operand, with a call's parameter attributes, `noundef`, `align 8`...)
    uses = re.compile(r"ptr addrspace\(255\) ((?:(?:[a-z_]+(?:\([^)]*\))?|\d+) )*)@("
                      + "|".join(re.escape(n) for n in names) + r")(?![-\w$.])")
    return uses.sub(r"ptr addrspace(255) \1addrspacecast (ptr @\2 to ptr addrspace(255))", text), names


def mram_variables_table(slot: int) -> str:
    """The name of the table of MRAM variables of the C function in `slot`
    (`CompiledC.mram_variables_table`)."""
    return f"{MRAM_VARIABLES_PREFIX}{slot}"


def with_address_table(llvm: str, variables: tuple, name: str) -> str:
    """`llvm` with a table `name` (weak: its name stays visible once linked)
    of the [start, end) addresses of each of `variables`, i64 pairs."""
    pairs = []
    for var in variables:
        m = re.search(rf"^@{re.escape(var)} = (?:[a-z_]+(?:\([^)]*\))? )*?global (?P<rest>.*)$", llvm, re.M)
        t = llvm_ir.leading_type(llvm_ir.split_top(m["rest"])[0])
        pairs += [f"i64 ptrtoint (ptr @{var} to i64)",
                  f"i64 ptrtoint (ptr getelementptr ({t}, ptr @{var}, i32 1) to i64)"]
    return llvm + f"\n@{name} = weak global [{len(pairs)} x i64] [{', '.join(pairs)}]\n"


def _refuse_unchecked(llvm: str, source: Source) -> None:
    m = _MRAM_ACCESS.search(llvm)
    if m:
        dbg = re.search(r"!dbg (!\d+)", m.group(0))
        line, col = {k: (int(n), int(c)) for k, n, c in _LOCATION.findall(llvm)}.get(dbg and dbg[1], (0, 1))
        raise CompileError("an access through a __mram_ptr pointer that is not a load or store of one number "
                           "(an atomic, a block copy, a pointer kept in MRAM): the DPU model checks MRAM "
                           "where it can move the bytes by DMA; copy them to WRAM with mram_read (and back "
                           "with mram_write)", SourceLoc(source.filename, line, col - 1))


def declared_at(source: Source, name: str) -> SourceLoc:
    """The line declaring variable `name`: where the name is followed by its
    array sizes, an initializer or the declaration's end, outside comments
    (else its first line)."""
    lines = source.text.splitlines()
    declaring = re.compile(rf"\b{re.escape(name)}\b\s*(?:\[[^\]]*\]\s*)*[=;,]")
    for pattern in (declaring, re.compile(rf"\b{re.escape(name)}\b")):
        for k, line in enumerate(lines, 1):
            if pattern.search(line.split("//")[0]):
                return SourceLoc(source.filename, k, 0)
    return SourceLoc(source.filename, 0, 0)


_VARIABLE = re.compile(r"^@([-\w$.]+) = (?:[a-z_]+(?:\([^)]*\))? )*?(?:global|constant) (.*)$", re.M)
_NAMED_TYPE = re.compile(r"^(%[-\w$.]+) = type (.*)$", re.M)
_SCALAR_BYTES = {"half": 2, "bfloat": 2, "float": 4, "double": 8, "ptr": 8, "x86_fp80": 16, "fp128": 16}


def variable_bytes(llvm: str, skip: tuple = ()) -> int:
    """The WRAM bytes the module's variables and constants take, as compiled
    for this host (its pointers take 8 bytes, a DPU's 4), but the model's own
    (`__edsl_`: the heap of alloc.h, the words of mutexes, which a DPU keeps
    in its atomic bits) and those of `skip` (its variables in MRAM)."""
    named = {m[1]: m[2] for m in _NAMED_TYPE.finditer(llvm)}
    total = 0
    for name, rest in _VARIABLE.findall(llvm):
        if name.startswith(("__edsl_", "llvm.")) or name in skip:
            continue
        size, align, _ = _type_layout(rest, 0, named)     # (not the host's larger `align` of arrays)
        total = align_to(total, align) + size
    return total


def variable_sizes(llvm: str, names: tuple) -> dict:
    """The bytes each of the module's variables `names` takes, as compiled for this host."""
    named = {m[1]: m[2] for m in _NAMED_TYPE.finditer(llvm)}
    return {name: _type_layout(rest, 0, named)[0] for name, rest in _VARIABLE.findall(llvm) if name in names}


def with_visible_variables(llvm: str, names: tuple) -> tuple[str, tuple]:
    """`llvm` with each of its variables `names` made weak: its name stays
    visible once linked and its value is never assumed, so that the host can
    keep a DPU's values of them; and the names of those that were internal
    (`static`: a DPU's state too, but not the host's to name)."""
    if not names:
        return llvm, ()
    visible = re.compile(r"^@(" + "|".join(re.escape(n) for n in names)
                         + r") = (internal )?((?:dso_local |(?:local_)?unnamed_addr )*(?:global|constant) )", re.M)
    hidden = tuple(m[1] for m in visible.finditer(llvm) if m[2])
    return visible.sub(r"@\1 = weak \3", llvm), hidden


def align_to(n: int, to: int) -> int:
    return -(-n // max(1, to)) * max(1, to)


def _type_layout(text: str, pos: int, named: dict) -> tuple[int, int, int]:
    """(size, alignment, end) of the LLVM type at text[pos:] (natural alignment, at most 16)."""
    m = re.compile(r"\s*").match(text, pos)
    pos = m.end()
    if text.startswith("<{", pos) or text.startswith("{", pos):
        packed = text.startswith("<{", pos)
        pos += 2 if packed else 1
        size, align = 0, 1
        while True:
            pos = re.compile(r"\s*").match(text, pos).end()
            if text.startswith("}>" if packed else "}", pos):
                pos += 2 if packed else 1
                break
            s, a, pos = _type_layout(text, pos, named)
            a = 1 if packed else a
            size, align = align_to(size, a) + s, max(align, a)
            pos = re.compile(r"\s*,?").match(text, pos).end()
        return align_to(size, align), align, pos
    m = re.compile(r"([\[<])(\d+) x ").match(text, pos)
    if m:
        s, a, pos = _type_layout(text, m.end(), named)
        pos = re.compile(r"\s*[\]>]").match(text, pos).end()
        count = int(m[2])
        if m[1] == "<":                             # (a vector: aligned to its size, a power of 2)
            size = s * count
            a = min(16, 1 << max(0, (size - 1).bit_length()))
            return align_to(size, a), a, pos
        return s * count, a, pos
    m = re.compile(r"i(\d+)\b").match(text, pos)
    if m:
        size = max(1, 1 << max(0, (int(m[1]) - 1).bit_length() - 3))
        return size, min(size, 16), m.end()
    m = re.compile(r"ptr(?: addrspace\(\d+\))?\b").match(text, pos)
    if m:
        return 8, 8, m.end()
    m = re.compile(r"(%[-\w$.]+|\w+)").match(text, pos)
    if m and m[1] in named:
        size, align, _ = _type_layout(named[m[1]], 0, named)
        return size, align, m.end()
    if m and m[1] in _SCALAR_BYTES:
        size = _SCALAR_BYTES[m[1]]
        return size, size, m.end()
    raise CompileError(f"the DPU model cannot size the LLVM type at {text[pos:pos + 40]!r}")


_GLOBAL = re.compile(r"^@([-\w$.]+) = (?:[a-z_]+ )*?global ", re.M)
_MEMCPY, _MEMSET = "llvm.memcpy.p0.p0.i64", "llvm.memset.p0.i64"


def with_variables_reset(llvm: str, variables: tuple, name: str) -> str:
    """`llvm` with a function `name` (weak: its name stays visible once
    linked) that gives each of `variables` its first value again, from a
    constant copy of its initializer (zeros written as such: an MRAM
    variable may take megabytes)."""
    firsts, copies = [], []
    for var in variables:
        m = re.search(rf"^@{re.escape(var)} = (?:[a-z_]+ )*?global (?P<rest>.*)$", llvm, re.M)
        typed = llvm_ir.split_top(m["rest"])[0]             # (then its alignment, its metadata)
        t = llvm_ir.leading_type(typed)
        size = f"i64 ptrtoint (ptr getelementptr ({t}, ptr null, i32 1) to i64)"
        if typed.endswith(" zeroinitializer"):
            copies.append(f"  call void @{_MEMSET}(ptr @{var}, i8 0, {size}, i1 false)")
            continue
        firsts.append(f"@{var}.edsl.first = private unnamed_addr constant {typed}")
        copies.append(f"  call void @{_MEMCPY}(ptr @{var}, ptr @{var}.edsl.first, {size}, i1 false)")
    text = "\n".join([llvm, *firsts, f"define weak void @{name}() {{", *copies, "  ret void", "}"])
    for intrinsic, params in ((_MEMCPY, "ptr, ptr, i64, i1 immarg"), (_MEMSET, "ptr, i8, i64, i1 immarg")):
        if any(f"@{intrinsic}(" in c for c in copies) and not re.search(rf"^declare [^\n]*@{re.escape(intrinsic)}\(",
                                                                          llvm, re.M):
            text += f"\ndeclare void @{intrinsic}({params})"
    return text + "\n"


def _written_globals(llvm: str) -> tuple:
    """The module's variables that are not constants (clang's `global`, not
    `constant`), defined in it."""
    return tuple(m[1] for m in _GLOBAL.finditer(llvm)
                 if not m[1].startswith("llvm.") and " external " not in m[0] and " extern_weak " not in m[0])


__all__ = ["CompiledC", "checked_mram_accesses", "HEAP_VARIABLES", "INCLUDE_DIR", "LANGUAGE", "MRAM_VARIABLES_PREFIX",
           "PRELUDE", "RESET_PREFIX", "RUN", "RUNTIME_SYMBOLS", "SITE_BASE", "compile_c", "declared_at", "digest", "flags",
           "host_mram_variables", "mram_variables_table", "preprocessed", "site_base",
           "variable_bytes", "variable_sizes", "with_address_table",
           "with_race_notes", "with_variables_reset", "with_visible_variables"]
