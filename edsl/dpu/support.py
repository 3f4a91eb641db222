"""The DPU runtime library: the compiled code behind every runtime symbol of
the ABI (edsl.target.dpu), linked into each program the DPU model runs.

Written once, in MLIR (`runtime_library.mlir` beside this file, its
placeholders filled from the ABI), lowered with the project's pipeline and
appended to programs as LLVM-dialect functions, internal to the model's
programs but for those the host calls (`HOST_ENTRIES`). Nothing in it is a
Python callback: a program runs from its first to its last instruction
without the interpreter.

- `__dpu_dma(mram, wram, nbytes, direction, site, ctx)` is the model of
  `mram_read` (direction 0) / `mram_write` (1): it checks the DMA rules
  (`__dpu_dma_rules`, generated from `abi.DMA_RULES`) and
  that the transfer stays inside the launch's MRAM regions (the context's
  table), counts transfers and bytes, and copies. A broken rule records the
  first error in the tasklet's context and stops the DPU (its barriers and
  transfers give up), so the host raises it as a `DpuError` after the launch.
  The copy itself goes through `edsl_dpu_copy_from_mram` / `_to_mram`, which
  the exporter maps to the SDK's `mram_read` / `mram_write`.
- The context of the running tasklet is a thread-local (`pthread_getspecific`
  on a key the loader sets in `__edsl_ctx_key`): EDSL code reaches it through
  `edsl_dpu_ctx()`, kernels also receive it as an argument.
- `edsl_dpu_barrier(site)`: a generation-counting barrier over the DPU's
  shared state. One 64-bit word counts arrivals (low half) and finished
  tasklets (high half), so that the tasklet whose arrival or exit makes
  `arrived + finished == tasklets` with both non-zero knows, alone, that the
  barrier can never complete: a deadlock, recorded with the barrier's site.
  Waiters sleep on a futex (Linux) with a timeout, and give up once the DPU
  has failed or the host has interrupted the launch.
- `edsl_dpu_run_tasklets(block)`: the scheduler that runs a DPU's tasklets
  on one host thread (`runtime_tasklets.mlir`): each tasklet runs on a
  stack of its own (started with libc's ucontext, switched as
  `switch_file` says), and a waiting tasklet switches straight to the next
  one instead of sleeping, so a barrier costs no OS thread switch.
  The host fills the scheduler's block (`SCHED_*`, `ROW_*` slots) and sets
  it in the DPU's state (`Dpu.SCHEDULER`); with none set, the tasklets are
  threads and sleep. Where the host's `ucontext_t` layout is not known
  (`coroutines()` false), there is no scheduler and tasklets are threads.
"""
from __future__ import annotations

import functools
import hashlib
import platform
import sys
from pathlib import Path

from ..base import templates
from ..target import dpu as abi

CTX_KEY = "__edsl_ctx_key"          # the thread-local key, written by the loader
COPY_FROM_MRAM = "edsl_dpu_copy_from_mram"   # (wram, mram, nbytes) -> ()
COPY_TO_MRAM = "edsl_dpu_copy_to_mram"       # (mram, wram, nbytes) -> ()
# The MRAM addresses of a Triton kernel's launch on the model (without EDSL
# functions, whose code may reach MRAM without a transfer) are the host
# addresses of its bytes plus MRAM_SHIFT: never a host address, as on a DPU,
# where a host address (a data_ptr() in a table) reaches nothing. A multiple
# of every alignment; user-space addresses stay below it, so MRAM addresses
# stay below 2**48 (edsl.dpu.sharing ranks access kinds above 2**50).
MRAM_SHIFT = 1 << 47

HERE = Path(__file__).resolve().parent
_FUTEX = {"x86_64": 202, "aarch64": 98}.get(platform.machine()) if sys.platform == "linux" else None
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
_WAIT_NS = 20_000_000               # a waiter re-checks the DPU's state every 20 ms
# pthread_key_t: unsigned int on Linux, unsigned long elsewhere.
KEY_BITS = 32 if sys.platform == "linux" else 64

# The scheduler (runtime_tasklets.mlir) and its block: header slots, then a
# row of ROW_SLOTS per tasklet (all i64; addresses as integers).
RUN_TASKLETS = "edsl_dpu_run_tasklets"       # (block) -> (): run the tasklets to their end
TASKLET_START = "edsl_dpu_tasklet_start"     # () -> (): where each tasklet's context starts
# The library's functions the host calls in a loaded program (by address).
HOST_ENTRIES = frozenset({abi.ENTER, abi.EXIT, RUN_TASKLETS, TASKLET_START})
SCHED_CURRENT, SCHED_TASKLETS, SCHED_ENTRY, SCHED_START, SCHED_EXIT, SCHED_MAIN = range(6)
SCHED_HEADER = 8
ROW_UC, ROW_JB, ROW_STACK, ROW_STACK_BYTES, ROW_ARGS, ROW_CTX, ROW_DONE, ROW_STARTED = range(8)
ROW_SLOTS = 8
# glibc and musl on 64-bit Linux: ucontext_t starts with uc_flags, uc_link,
# then uc_stack (ss_sp, ss_flags, ss_size). Its size differs by architecture
# (968 bytes on x86-64, about 4.5 KiB on AArch64): the host allocates
# UCONTEXT_BYTES per context, more than any of them; and JMP_BUF_BYTES per
# jump buffer (jmp_buf: 200 bytes on x86-64, 312 on AArch64).
_UC_LINK, _UC_STACK_SP, _UC_STACK_SIZE = 8, 16, 32
UCONTEXT_BYTES = 16 * 1024
JMP_BUF_BYTES = 1024


@functools.lru_cache(None)
def coroutines() -> bool:
    """Whether a DPU's tasklets can share one host thread: 64-bit Linux (a
    known `ucontext_t` layout) whose C library has the context calls."""
    if sys.platform != "linux" or sys.maxsize < 2 ** 63 - 1:
        return False
    from . import jit
    return all(jit._provided(f) for f in ("getcontext", "makecontext", "setcontext", "_setjmp", "_longjmp"))


def switch_file() -> Path:
    """How tasklets on one thread switch: LLVM's lightweight setjmp/longjmp
    where LLVM lowers it for the host (x86-64), else the C library's."""
    return HERE / ("runtime_switch_llvm.mlir" if platform.machine() == "x86_64" else "runtime_switch_libc.mlir")


def dma_rules_function() -> str:
    """`__dpu_dma_rules(mram, wram, nbytes) -> i64`: the `abi.DmaRule` bits of
    the rules a transfer breaks, generated from `abi.DMA_RULES`."""
    lines = ["%c0 = arith.constant 0 : i64",
             f"%align = arith.constant {abi.DMA_ALIGN - 1} : i64",
             "%broken0 = arith.constant 0 : i64"]
    for k, check in enumerate(abi.DMA_RULES, 1):
        v = f"%{check.operand}"
        lines += [f"%rest{k} = arith.andi {v}, %align : i64",
                  f"%bad{k}_0 = arith.cmpi ne, %rest{k}, %c0 : i64"]
        bad = f"%bad{k}_0"
        if check.bounds:
            lo, hi = check.bounds
            lines += [f"%lo{k} = arith.constant {lo} : i64",
                      f"%hi{k} = arith.constant {hi} : i64",
                      f"%below{k} = arith.cmpi slt, {v}, %lo{k} : i64",
                      f"%above{k} = arith.cmpi sgt, {v}, %hi{k} : i64",
                      f"%out{k} = arith.ori %below{k}, %above{k} : i1",
                      f"%bad{k} = arith.ori {bad}, %out{k} : i1"]
            bad = f"%bad{k}"
        lines += [f"%bit{k} = arith.constant {int(check.rule)} : i64",
                  f"%flag{k} = arith.select {bad}, %bit{k}, %c0 : i64",
                  f"%broken{k} = arith.ori %broken{k - 1}, %flag{k} : i64"]
    lines.append(f"return %broken{len(abi.DMA_RULES)} : i64")
    body = "".join(f"    {line}\n" for line in lines)
    return ("  func.func private @__dpu_dma_rules(%mram: i64, %wram: i64, %nbytes: i64) -> i64 {\n"
            + body + "  }")


def _fields(path: Path, **given) -> dict:
    """The values of the placeholders of the library file `path`: `given`, the
    ABI's symbols by their lower-case names, its context (`ctx_*`) and
    DPU-state (`dpu_*`) slots and error codes (`err_*`)."""
    known = {name.lower(): getattr(abi, name) for name in
             ("ME", "NR_TASKLETS", "BARRIER", "MRAM_READ", "MRAM_WRITE", "ASSERT_FAIL",
              "BOUNDS_FAIL", "STEP_FAIL", "COUNTERS", "DMA", "FAIL", "FAILED", "CTX", "ENTER", "EXIT", "YIELD", "WAIT_WORD", "WAKE_WORD",
              "COUNT_TRANSFER", "READ", "WRITE", "NOTE", "WATCH_WAIT", "NOTE_ACCESS", "LOG_FULL", "LOG_ENTRY",
              "LOG_ENDS", "CTX_SLOTS", "ACCESS_MASK", "WAIT_REPEATS", "SAVE_PAGES", "PAGE_BYTES", "PAGE_SHIFT",
              "PAGE_OWNER_SHIFT", "PAGE_STATE_MASK", "PAGE_EPOCH_SHIFT", "SAVE_COUNT", "SAVE_MIXED", "SAVE_EPOCH",
              "SAVE_SPANS", "SAVE_ROW", "RACE_NOTE", "RACE_ENTRY", "RACE_MRAM")}
    known |= {f"ctx_{s.name.lower()}": int(s) for s in abi.Ctx}
    known |= {f"dpu_{s.name.lower()}": int(s) for s in abi.Dpu}
    known |= {f"err_{e.name.lower()}": int(e) for e in abi.Err}
    known |= {"log_entry_bytes": abi.LOG_ENTRY * 8, "log_ends_shift": 64 - (abi.LOG_ENDS.bit_length() - 1)}
    known |= {f"access_{a.name.lower()}": int(a) for a in abi.Access}
    known |= {f"page_{p.name.lower()}": int(p) for p in abi.Page}
    known |= {f"race_{r.name.lower()}": int(r) for r in abi.RaceLog}
    known |= {"race_entry_bytes": abi.RACE_ENTRY * 8, "race_log_max_entries": abi.RACE_LOG_MAX_ENTRIES}
    known |= {"count_field_mask": abi.COUNT_FIELD_MASK, "count_blocked_shift": abi.COUNT_BLOCKED_SHIFT,
              "count_finished_shift": abi.COUNT_FINISHED_SHIFT}
    known |= {"ctx_key": CTX_KEY, "copy_from_mram": COPY_FROM_MRAM, "copy_to_mram": COPY_TO_MRAM}
    known |= given
    return {name: known[name] for name in templates.placeholders(path)}


def _source(mram_shift: int, races: bool) -> str:
    """The runtime library's MLIR (func/scf/arith with llvm pointers and atomics);
    `races`: with the check of races between tasklets (`abi.RACE_NOTE`)."""
    if _FUTEX is None:
        wait = templates.fill(HERE / "runtime_wait_yield.mlir")
    else:
        wait = templates.fill(HERE / "runtime_wait_futex.mlir", wait_ns=_WAIT_NS, futex=_FUTEX,
                              futex_wait_private=_FUTEX_WAIT_PRIVATE,
                              futex_wake_private=_FUTEX_WAKE_PRIVATE)
    if coroutines():
        path = HERE / "runtime_tasklets.mlir"
        tasklets = templates.fill(path, **_fields(
            path, switch_functions=templates.fill(switch_file()), start=TASKLET_START,
            run_tasklets=RUN_TASKLETS, s_header=SCHED_HEADER, s_row=ROW_SLOTS, s_current=SCHED_CURRENT, s_tasklets=SCHED_TASKLETS, s_entry=SCHED_ENTRY,
            s_start=SCHED_START, s_exit=SCHED_EXIT, s_main=SCHED_MAIN, r_uc=ROW_UC, r_stack=ROW_STACK,
            r_stack_bytes=ROW_STACK_BYTES, r_args=ROW_ARGS, r_ctx=ROW_CTX, r_done=ROW_DONE,
            r_jb=ROW_JB, r_started=ROW_STARTED,
            uc_link=_UC_LINK, uc_stack_sp=_UC_STACK_SP, uc_stack_size=_UC_STACK_SIZE))
    else:
        tasklets = templates.fill(HERE / "runtime_tasklets_none.mlir")
    race_path = HERE / ("runtime_race.mlir" if races else "runtime_race_none.mlir")
    race = templates.fill(race_path, **_fields(race_path))
    path = HERE / "runtime_library.mlir"
    return templates.fill(path, **_fields(path, key_t=f"i{KEY_BITS}", dma_rules=dma_rules_function(),
                                          wait_functions=wait, tasklet_functions=tasklets,
                                          race_functions=race, mram_shift=mram_shift))


@functools.lru_cache(None)
def library_text(mram_shift: int = 0, races: bool = False) -> str:
    """The runtime library as LLVM-dialect MLIR text, its MRAM addresses the
    host's plus `mram_shift` (0 or MRAM_SHIFT); `races`: with the check of
    races between tasklets. Lowered once per machine (the on-disk cache, keyed
    by its source and the bindings' version), read once per process."""
    from importlib import metadata

    from ..base import cache
    source = _source(mram_shift, races)
    try:
        bindings = metadata.version("xtc-mlir-python-bindings")
    except metadata.PackageNotFoundError:
        bindings = "?"
    key = hashlib.sha256(f"runtime library\0{bindings}\0{source}".encode()).hexdigest()
    text = cache.load_bytes(key, "mlir")
    if text is not None:
        return text.decode()
    text = _lowered(source)
    cache.store_bytes(key, "mlir", text.encode())
    return text


def _lowered(source: str) -> str:
    from mlir import ir

    from ..base import dialects  # noqa: F401  (the bindings find edsl's dialects before any op)
    from ..lowering import DEFAULT_PIPELINE, run_pipeline
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(source)
        run_pipeline(module, DEFAULT_PIPELINE, "the DPU runtime library")
        return str(module)


def link(module, mram_shift: int = 0, internal: bool = False, races: bool = False,
         exported: frozenset = frozenset()) -> None:
    """Define in `module` (LLVM dialect) every runtime symbol it declares or
    may call: the library's functions replace its declarations of them. Its
    MRAM addresses are the host's plus `mram_shift` (0 or MRAM_SHIFT).
    `internal`: the library's functions but those the host calls
    (`HOST_ENTRIES`) get internal linkage, so that LLVM drops those the
    program does not use before optimizing them (a third of a small kernel's
    compile time: docs/benchmarks.md); those named in `exported` too keep
    theirs (raw functions in C call them). `races`: with the check of races
    between tasklets (edsl.dpu.races), where the launch asks for it."""
    from mlir import ir
    library = ir.Module.parse(library_text(mram_shift, races), module.context)
    table = ir.SymbolTable(module.operation)
    hidden = ir.Attribute.parse("#llvm.linkage<internal>", module.context)
    for op in list(library.body.operations):
        op = op.operation
        name = ir.StringAttr(op.attributes["sym_name"]).value
        if name in table:
            existing = table[name]
            defined = existing.operation.name == "llvm.mlir.global" or bool(existing.regions[0].blocks)
            if defined:
                continue              # (a program may define `syscall` & co itself: keep it)
            existing.operation.erase()
        if internal and op.name == "llvm.func" and op.regions[0].blocks and name not in HOST_ENTRIES | exported:
            op.attributes["linkage"] = hidden
        op.detach_from_parent()
        module.body.append(op)


__all__ = ["CTX_KEY", "HOST_ENTRIES", "MRAM_SHIFT", "library_text", "link"]
