"""The DPU runtime library: the compiled code behind every runtime symbol of
the ABI (edsl.dpu.abi), linked into each program the DPU model runs.

Written once, in MLIR (`runtime_library.mlir` beside this file, its
placeholders filled from the ABI), lowered with the project's pipeline and
appended to programs as LLVM-dialect functions. Nothing in it is a Python callback: a program runs from its first
to its last instruction without the interpreter.

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
"""
from __future__ import annotations

import functools
import platform
import sys
from pathlib import Path

from .. import templates
from . import abi

CTX_KEY = "__edsl_ctx_key"          # the thread-local key, written by the loader
COPY_FROM_MRAM = "edsl_dpu_copy_from_mram"   # (wram, mram, nbytes) -> ()
COPY_TO_MRAM = "edsl_dpu_copy_to_mram"       # (mram, wram, nbytes) -> ()

HERE = Path(__file__).resolve().parent
_FUTEX = {"x86_64": 202, "aarch64": 98}.get(platform.machine()) if sys.platform == "linux" else None
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
_WAIT_NS = 20_000_000               # a waiter re-checks the DPU's state every 20 ms
# pthread_key_t: unsigned int on Linux, unsigned long elsewhere.
KEY_BITS = 32 if sys.platform == "linux" else 64


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
              "BOUNDS_FAIL", "STEP_FAIL", "COUNTERS", "DMA", "FAIL", "CTX", "ENTER", "EXIT",
              "COUNT_TRANSFER", "READ", "WRITE", "NOTE", "LOG_FULL", "LOG_ENTRY")}
    known |= {f"ctx_{s.name.lower()}": int(s) for s in abi.Ctx}
    known |= {f"dpu_{s.name.lower()}": int(s) for s in abi.Dpu}
    known |= {f"err_{e.name.lower()}": int(e) for e in abi.Err}
    known |= {"log_entry_bytes": abi.LOG_ENTRY * 8}
    known |= {f"access_{a.name.lower()}": int(a) for a in abi.Access}
    known |= {"ctx_key": CTX_KEY, "copy_from_mram": COPY_FROM_MRAM, "copy_to_mram": COPY_TO_MRAM}
    known |= given
    return {name: known[name] for name in templates.placeholders(path)}


def _source() -> str:
    """The runtime library's MLIR (func/scf/arith with llvm pointers and atomics)."""
    if _FUTEX is None:
        wait = templates.fill(HERE / "runtime_wait_yield.mlir")
    else:
        wait = templates.fill(HERE / "runtime_wait_futex.mlir", wait_ns=_WAIT_NS, futex=_FUTEX,
                              futex_wait_private=_FUTEX_WAIT_PRIVATE,
                              futex_wake_private=_FUTEX_WAKE_PRIVATE)
    path = HERE / "runtime_library.mlir"
    return templates.fill(path, **_fields(path, key_t=f"i{KEY_BITS}", dma_rules=dma_rules_function(),
                                          wait_functions=wait))


@functools.lru_cache(None)
def library_text() -> str:
    """The runtime library as LLVM-dialect MLIR text (lowered once per process)."""
    from mlir import ir

    from ..lowering import DEFAULT_PIPELINE, run_pipeline
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(_source())
        run_pipeline(module, DEFAULT_PIPELINE, "the DPU runtime library")
        return str(module)


def link(module) -> None:
    """Define in `module` (LLVM dialect) every runtime symbol it declares or
    may call: the library's functions replace its declarations of them."""
    from mlir import ir
    library = ir.Module.parse(library_text(), module.context)
    table = ir.SymbolTable(module.operation)
    for op in list(library.body.operations):
        op = op.operation
        name = ir.StringAttr(op.attributes["sym_name"]).value
        if name in table:
            existing = table[name]
            defined = existing.operation.name == "llvm.mlir.global" or bool(existing.regions[0].blocks)
            if defined:
                continue              # (a program may define `syscall` & co itself: keep it)
            existing.operation.erase()
        op.detach_from_parent()
        module.body.append(op)


__all__ = ["CTX_KEY", "CTX_SLOTS", "library_text", "link"]
