"""The DPU runtime library: the compiled code behind every runtime symbol of
the ABI (edsl.dpu.abi), linked into each program the DPU model runs.

Written here once, in MLIR (func/scf/arith with llvm pointers and atomics),
lowered with the project's pipeline and appended to programs as LLVM-dialect
functions. Nothing in it is a Python callback: a program runs from its first
to its last instruction without the interpreter.

- `__dpu_dma(mram, wram, nbytes, direction, site, ctx)` is the model of
  `mram_read` (direction 0) / `mram_write` (1): it checks the DMA rules and
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

from .abi import (ASSERT_FAIL, BARRIER, BOUNDS_FAIL, COUNTERS, CTX, CTX_SLOTS, DMA, DMA_ALIGN,
                  DMA_MAX_BYTES, DMA_MIN_BYTES, ENTER, EXIT, FAIL, ME, MRAM_READ, MRAM_WRITE,
                  NR_TASKLETS, STEP_FAIL, Ctx, Dpu, Err)

CTX_KEY = "__edsl_ctx_key"          # the thread-local key, written by the loader
COPY_FROM_MRAM = "edsl_dpu_copy_from_mram"   # (wram, mram, nbytes) -> ()
COPY_TO_MRAM = "edsl_dpu_copy_to_mram"       # (mram, wram, nbytes) -> ()

_FUTEX = {"x86_64": 202, "aarch64": 98}.get(platform.machine()) if sys.platform == "linux" else None
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
_WAIT_NS = 20_000_000               # a waiter re-checks the DPU's state every 20 ms
# pthread_key_t: unsigned int on Linux, unsigned long elsewhere.
KEY_BITS = 32 if sys.platform == "linux" else 64


def _slot(ptr: str, k: int, name: str) -> str:
    return f"    %{name} = llvm.getelementptr %{ptr}[{k}] : (!llvm.ptr) -> !llvm.ptr, i64\n"


def _get(ptr: str, k: int, name: str) -> str:
    return _slot(ptr, k, name + "_p") + f"    %{name} = llvm.load %{name}_p : !llvm.ptr -> i64\n"


def _state(name: str = "st") -> str:
    """`%st`: the DPU state of `%ctx`."""
    return (_slot("ctx", Ctx.DPU, f"{name}_pp")
            + f"    %{name} = llvm.load %{name}_pp : !llvm.ptr -> !llvm.ptr\n")


def count_transfer(pair: str, n: str, indent: str = "    ") -> str:
    """MLIR lines adding a transfer of `%n` bytes to the (transfers, bytes)
    counter pair of context slots that `%pair` points to (names `%pair_*`)."""
    lines = [f"%{pair}_one = arith.constant 1 : i64",
             f"%{pair}_count = llvm.load %{pair} : !llvm.ptr -> i64",
             f"%{pair}_count1 = arith.addi %{pair}_count, %{pair}_one : i64",
             f"llvm.store %{pair}_count1, %{pair} : i64, !llvm.ptr",
             f"%{pair}_bp = llvm.getelementptr %{pair}[1] : (!llvm.ptr) -> !llvm.ptr, i64",
             f"%{pair}_bytes = llvm.load %{pair}_bp : !llvm.ptr -> i64",
             f"%{pair}_bytes1 = arith.addi %{pair}_bytes, %{n} : i64",
             f"llvm.store %{pair}_bytes1, %{pair}_bp : i64, !llvm.ptr"]
    return "".join(f"{indent}{line}\n" for line in lines)


def _wait() -> str:
    """Sleep until the word at %gen_p may differ from %gen32 (or 20 ms pass);
    `%ts` is a timespec allocated at the function's entry."""
    if _FUTEX is None:
        return "    %y = llvm.call @sched_yield() : () -> i32\n"
    return f"""    %ts_s = llvm.getelementptr %ts[0] : (!llvm.ptr) -> !llvm.ptr, i64
    llvm.store %c0, %ts_s : i64, !llvm.ptr
    %ts_n = llvm.getelementptr %ts[1] : (!llvm.ptr) -> !llvm.ptr, i64
    %wait_ns = arith.constant {_WAIT_NS} : i64
    llvm.store %wait_ns, %ts_n : i64, !llvm.ptr
    %nr = arith.constant {_FUTEX} : i64
    %wop = arith.constant {_FUTEX_WAIT_PRIVATE} : i32
    %w = llvm.call @syscall(%nr, %gen_p, %wop, %gen32, %ts) vararg(!llvm.func<i64 (i64, ...)>) : (i64, !llvm.ptr, i32, i32, !llvm.ptr) -> i64
"""


def _wake() -> str:
    if _FUTEX is None:
        return ""
    return f"""    %nr_w = arith.constant {_FUTEX} : i64
    %wake = arith.constant {_FUTEX_WAKE_PRIVATE} : i32
    %all = arith.constant 2147483647 : i32
    %woken = llvm.call @syscall(%nr_w, %gen_p, %wake, %all) vararg(!llvm.func<i64 (i64, ...)>) : (i64, !llvm.ptr, i32, i32) -> i64
"""


def _source() -> str:
    key_t = f"i{KEY_BITS}"
    sys_decl = ("llvm.func @syscall(i64, ...) -> i64" if _FUTEX is not None
                else "llvm.func @sched_yield() -> i32")
    return f"""
module {{
  llvm.mlir.global external @{CTX_KEY}(0 : {key_t}) {{alignment = 8 : i64}} : {key_t}
  llvm.func @pthread_getspecific({key_t}) -> !llvm.ptr
  llvm.func @pthread_setspecific({key_t}, !llvm.ptr) -> i32
  {sys_decl}

  func.func @{CTX}() -> !llvm.ptr {{
    %kp = llvm.mlir.addressof @{CTX_KEY} : !llvm.ptr
    %k = llvm.load %kp : !llvm.ptr -> {key_t}
    %ctx = llvm.call @pthread_getspecific(%k) : ({key_t}) -> !llvm.ptr
    return %ctx : !llvm.ptr
  }}

  func.func @{ENTER}(%ctx: !llvm.ptr) {{
    %kp = llvm.mlir.addressof @{CTX_KEY} : !llvm.ptr
    %k = llvm.load %kp : !llvm.ptr -> {key_t}
    %r = llvm.call @pthread_setspecific(%k, %ctx) : ({key_t}, !llvm.ptr) -> i32
    return
  }}

  // The first error of a tasklet, with what it was doing; the DPU stops.
  func.func @{FAIL}(%ctx: !llvm.ptr, %code: i64, %site: i64, %mram: i64, %wram: i64,
                                %n: i64, %dir: i64) {{
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
{_get("ctx", Ctx.ERROR, "e")}    %first = arith.cmpi eq, %e, %c0 : i64
    scf.if %first {{
      llvm.store %code, %e_p : i64, !llvm.ptr
{_slot("ctx", Ctx.ERR_SITE, "es")}      llvm.store %site, %es : i64, !llvm.ptr
{_slot("ctx", Ctx.ERR_MRAM, "em")}      llvm.store %mram, %em : i64, !llvm.ptr
{_slot("ctx", Ctx.ERR_WRAM, "ew")}      llvm.store %wram, %ew : i64, !llvm.ptr
{_slot("ctx", Ctx.ERR_BYTES, "en")}      llvm.store %n, %en : i64, !llvm.ptr
{_slot("ctx", Ctx.ERR_DIR, "ed")}      llvm.store %dir, %ed : i64, !llvm.ptr
    }}
{_state()}    %null = llvm.mlir.zero : !llvm.ptr
    %has = llvm.icmp "ne" %st, %null : !llvm.ptr
    scf.if %has {{
{_slot("st", Dpu.FAILED, "f")}      llvm.store %c1, %f atomic release {{alignment = 8 : i64}} : i64, !llvm.ptr
    }}
    return
  }}

  func.func private @__dpu_failed(%ctx: !llvm.ptr) -> i1 {{
    %c0 = arith.constant 0 : i64
{_state()}{_slot("st", Dpu.FAILED, "f")}    %v = llvm.load %f atomic acquire {{alignment = 8 : i64}} : !llvm.ptr -> i64
    %failed = arith.cmpi ne, %v, %c0 : i64
    return %failed : i1
  }}

  func.func @{COPY_FROM_MRAM}(%wram: !llvm.ptr, %mram: !llvm.ptr, %n: i64) {{
    "llvm.intr.memcpy"(%wram, %mram, %n) <{{isVolatile = false}}> : (!llvm.ptr, !llvm.ptr, i64) -> ()
    return
  }}

  func.func @{COPY_TO_MRAM}(%mram: !llvm.ptr, %wram: !llvm.ptr, %n: i64) {{
    "llvm.intr.memcpy"(%mram, %wram, %n) <{{isVolatile = false}}> : (!llvm.ptr, !llvm.ptr, i64) -> ()
    return
  }}

  func.func @{DMA}(%mram: i64, %wram: i64, %n: i64, %dir: i64, %site: i64, %ctx: !llvm.ptr) {{
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %true = arith.constant true
    %false = arith.constant false
    %stopped = func.call @__dpu_failed(%ctx) : (!llvm.ptr) -> i1
    %go = arith.xori %stopped, %true : i1
    scf.if %go {{
      %calign = arith.constant {DMA_ALIGN - 1} : i64
      %cmin = arith.constant {DMA_MIN_BYTES} : i64
      %cmax = arith.constant {DMA_MAX_BYTES} : i64
      %na = arith.andi %n, %calign : i64
      %bad_na = arith.cmpi ne, %na, %c0 : i64
      %bad_small = arith.cmpi slt, %n, %cmin : i64
      %bad_big = arith.cmpi sgt, %n, %cmax : i64
      %ma = arith.andi %mram, %calign : i64
      %bad_ma = arith.cmpi ne, %ma, %c0 : i64
      %wa = arith.andi %wram, %calign : i64
      %bad_wa = arith.cmpi ne, %wa, %c0 : i64
      %r1 = arith.ori %bad_na, %bad_small : i1
      %r2 = arith.ori %r1, %bad_big : i1
      %r3 = arith.ori %r2, %bad_ma : i1
      %rule = arith.ori %r3, %bad_wa : i1
{_get("ctx", Ctx.REGIONS, "table_i")}      %table = llvm.inttoptr %table_i : i64 to !llvm.ptr
{_get("ctx", Ctx.NREGIONS, "nreg")}      %end = arith.addi %mram, %n : i64
      %inside = scf.for %k = %c0 to %nreg step %c1 iter_args(%in = %false) -> (i1) : i64 {{
        %k2 = arith.muli %k, %c2 : i64
        %rlo_p = llvm.getelementptr %table[%k2] : (!llvm.ptr, i64) -> !llvm.ptr, i64
        %rlo = llvm.load %rlo_p : !llvm.ptr -> i64
        %rhi_p = llvm.getelementptr %rlo_p[1] : (!llvm.ptr) -> !llvm.ptr, i64
        %rhi = llvm.load %rhi_p : !llvm.ptr -> i64
        %ge = arith.cmpi uge, %mram, %rlo : i64
        %le = arith.cmpi ule, %end, %rhi : i64
        %here = arith.andi %ge, %le : i1
        %in1 = arith.ori %in, %here : i1
        scf.yield %in1 : i1
      }}
      %oob = arith.xori %inside, %true : i1
      %c_rule = arith.constant {Err.DMA_RULE} : i64
      %c_oob = arith.constant {Err.MRAM_BOUNDS} : i64
      %code0 = arith.select %oob, %c_oob, %c0 : i64
      %code = arith.select %rule, %c_rule, %code0 : i64
      %bad = arith.cmpi ne, %code, %c0 : i64
      scf.if %bad {{
        func.call @{FAIL}(%ctx, %code, %site, %mram, %wram, %n, %dir)
            : (!llvm.ptr, i64, i64, i64, i64, i64, i64) -> ()
      }} else {{
        %ci = arith.muli %dir, %c2 : i64
        %cnt_p = llvm.getelementptr %ctx[%ci] : (!llvm.ptr, i64) -> !llvm.ptr, i64
{count_transfer("cnt_p", "n", "        ")}        %mp = llvm.inttoptr %mram : i64 to !llvm.ptr
        %wp = llvm.inttoptr %wram : i64 to !llvm.ptr
        %is_write = arith.cmpi eq, %dir, %c1 : i64
        scf.if %is_write {{
          func.call @{COPY_TO_MRAM}(%mp, %wp, %n) : (!llvm.ptr, !llvm.ptr, i64) -> ()
        }} else {{
          func.call @{COPY_FROM_MRAM}(%wp, %mp, %n) : (!llvm.ptr, !llvm.ptr, i64) -> ()
        }}
      }}
    }}
    return
  }}

{_edsl_dma(MRAM_READ, 0)}
{_edsl_dma(MRAM_WRITE, 1)}
{_fail(ASSERT_FAIL, Err.ASSERT)}
{_fail(BOUNDS_FAIL, Err.INDEX)}
{_fail(STEP_FAIL, Err.ZERO_STEP)}

  func.func @{ME}() -> i32 {{
    %ctx = func.call @{CTX}() : () -> !llvm.ptr
{_get("ctx", Ctx.TID, "tid")}    %r = arith.trunci %tid : i64 to i32
    return %r : i32
  }}

  func.func @{NR_TASKLETS}() -> i32 {{
    %ctx = func.call @{CTX}() : () -> !llvm.ptr
{_get("ctx", Ctx.NTASKLETS, "n")}    %r = arith.trunci %n : i64 to i32
    return %r : i32
  }}

  func.func @{COUNTERS}() -> !llvm.ptr {{
    %ctx = func.call @{CTX}() : () -> !llvm.ptr
{_get("ctx", Ctx.COUNTERS, "c")}    %p = llvm.inttoptr %c : i64 to !llvm.ptr
    return %p : !llvm.ptr
  }}

  func.func @{BARRIER}(%site: i64) {{
    %ctx = func.call @{CTX}() : () -> !llvm.ptr
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %one32 = arith.constant 1 : i32
    %mask = arith.constant 4294967295 : i64
    %c32 = arith.constant 32 : i64
    %true = arith.constant true
    %ts = llvm.alloca %one32 x !llvm.array<2 x i64> : (i32) -> !llvm.ptr
    %stopped = func.call @__dpu_failed(%ctx) : (!llvm.ptr) -> i1
    %go = arith.xori %stopped, %true : i1
    scf.if %go {{
{_state()}{_slot("st", Dpu.COUNT, "count_p")}{_slot("st", Dpu.GENERATION, "gen_p")}{_get("st", Dpu.TASKLETS, "n")}{_slot("st", Dpu.WAIT_SITE, "ws")}      llvm.store %site, %ws : i64, !llvm.ptr
      %gen = llvm.load %gen_p atomic acquire {{alignment = 8 : i64}} : !llvm.ptr -> i64
      %gen32 = arith.trunci %gen : i64 to i32
      %old = llvm.atomicrmw add %count_p, %c1 acq_rel : !llvm.ptr, i64
      %arrived0 = arith.andi %old, %mask : i64
      %arrived = arith.addi %arrived0, %c1 : i64
      %finished = arith.shrui %old, %c32 : i64
      %last = arith.cmpi eq, %arrived, %n : i64
      scf.if %last {{
        %back = llvm.atomicrmw sub %count_p, %n acq_rel : !llvm.ptr, i64
        %next = llvm.atomicrmw add %gen_p, %c1 acq_rel : !llvm.ptr, i64
{_wake()}      }} else {{
        %sum = arith.addi %arrived, %finished : i64
        %all_in = arith.cmpi eq, %sum, %n : i64
        %some_done = arith.cmpi ne, %finished, %c0 : i64
        %dead = arith.andi %all_in, %some_done : i1
        scf.if %dead {{
          %code = arith.constant {Err.DEADLOCK} : i64
          func.call @{FAIL}(%ctx, %code, %site, %c0, %c0, %c0, %c0)
              : (!llvm.ptr, i64, i64, i64, i64, i64, i64) -> ()
        }} else {{
          scf.while : () -> () {{
{_wait()}            %now = llvm.load %gen_p atomic acquire {{alignment = 8 : i64}} : !llvm.ptr -> i64
            %same = arith.cmpi eq, %now, %gen : i64
            %failed = func.call @__dpu_failed(%ctx) : (!llvm.ptr) -> i1
            %ok = arith.xori %failed, %true : i1
            %again = arith.andi %same, %ok : i1
            scf.condition(%again)
          }} do {{
            scf.yield
          }}
        }}
      }}
    }}
    return
  }}

  func.func @{EXIT}(%ctx: !llvm.ptr) {{
    %c0 = arith.constant 0 : i64
    %mask = arith.constant 4294967295 : i64
    %c32 = arith.constant 32 : i64
    %inc = arith.constant 4294967296 : i64
{_state()}    %null = llvm.mlir.zero : !llvm.ptr
    %has = llvm.icmp "ne" %st, %null : !llvm.ptr
    scf.if %has {{
{_slot("st", Dpu.COUNT, "count_p")}{_get("st", Dpu.TASKLETS, "n")}      %old = llvm.atomicrmw add %count_p, %inc acq_rel : !llvm.ptr, i64
      %arrived = arith.andi %old, %mask : i64
      %fin0 = arith.shrui %old, %c32 : i64
      %c1 = arith.constant 1 : i64
      %finished = arith.addi %fin0, %c1 : i64
      %sum = arith.addi %arrived, %finished : i64
      %all_in = arith.cmpi eq, %sum, %n : i64
      %waiting = arith.cmpi ne, %arrived, %c0 : i64
      %dead = arith.andi %all_in, %waiting : i1
      scf.if %dead {{
{_get("st", Dpu.WAIT_SITE, "site")}        %code = arith.constant {Err.DEADLOCK} : i64
        func.call @{FAIL}(%ctx, %code, %site, %c0, %c0, %c0, %c0)
            : (!llvm.ptr, i64, i64, i64, i64, i64, i64) -> ()
      }}
    }}
    return
  }}
}}
"""


def _edsl_dma(symbol: str, direction: int) -> str:
    """An EDSL transfer: the buffers' ends checked, then the one DMA routine."""
    return f"""
  func.func @{symbol}(%mram: i64, %wram: i64, %n: i64, %site: i64, %mram_end: i64, %wram_end: i64) {{
    %ctx = func.call @{CTX}() : () -> !llvm.ptr
    %c0 = arith.constant 0 : i64
    %dir = arith.constant {direction} : i64
    %m_end = arith.addi %mram, %n : i64
    %w_end = arith.addi %wram, %n : i64
    %over_m = arith.cmpi sgt, %m_end, %mram_end : i64
    %over_w = arith.cmpi sgt, %w_end, %wram_end : i64
    %c_m = arith.constant {Err.MRAM_OVERRUN} : i64
    %c_w = arith.constant {Err.WRAM_OVERRUN} : i64
    %code0 = arith.select %over_w, %c_w, %c0 : i64
    %code = arith.select %over_m, %c_m, %code0 : i64
    // the DMA rules come first, as on hardware; an overrun is checked when they hold
    %calign = arith.constant {DMA_ALIGN - 1} : i64
    %cmin = arith.constant {DMA_MIN_BYTES} : i64
    %cmax = arith.constant {DMA_MAX_BYTES} : i64
    %bits = arith.ori %mram, %wram : i64
    %bits2 = arith.ori %bits, %n : i64
    %mis = arith.andi %bits2, %calign : i64
    %aligned = arith.cmpi eq, %mis, %c0 : i64
    %big_enough = arith.cmpi sge, %n, %cmin : i64
    %small_enough = arith.cmpi sle, %n, %cmax : i64
    %r1 = arith.andi %aligned, %big_enough : i1
    %rules = arith.andi %r1, %small_enough : i1
    %overrun = arith.cmpi ne, %code, %c0 : i64
    %fail = arith.andi %rules, %overrun : i1
    scf.if %fail {{
      func.call @{FAIL}(%ctx, %code, %site, %mram, %wram, %n, %dir)
          : (!llvm.ptr, i64, i64, i64, i64, i64, i64) -> ()
    }} else {{
      func.call @{DMA}(%mram, %wram, %n, %dir, %site, %ctx) : (i64, i64, i64, i64, i64, !llvm.ptr) -> ()
    }}
    return
  }}"""


def _fail(symbol: str, code: int) -> str:
    return f"""
  func.func @{symbol}(%site: i64) {{
    %ctx = func.call @{CTX}() : () -> !llvm.ptr
    %c0 = arith.constant 0 : i64
    %code = arith.constant {code} : i64
    func.call @{FAIL}(%ctx, %code, %site, %c0, %c0, %c0, %c0) : (!llvm.ptr, i64, i64, i64, i64, i64, i64) -> ()
    return
  }}"""


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
