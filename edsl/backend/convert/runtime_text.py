"""The DPU-side support every converted kernel links with, as MLIR text.

`__dpu_dma(mram, wram, nbytes, direction, ctx)` is the model of `mram_read`
(direction 0) / `mram_write` (1): it checks the UPMEM DMA rules and the MRAM
bounds (the span must lie in one of the launch's MRAM regions), counts
transfers and bytes, and copies. `ctx` points to the launch context of the
calling tasklet, an array of i64 slots (see `CTX_*`); a broken rule is
recorded in the context (first one only) and the transfer is skipped, so the
host can raise a `DpuError` after the program.

`__dpu_main` is what every tasklet of a DPU runs: the program instances of
that DPU, ids first, first+step, ... below the grid size, one at a time. Its
`ctx` points to the DPU's contexts, one per tasklet (`CTX_SLOTS` each); it
asks the runtime for the tasklet's id (`me()`) once and leaves it in the
tasklet's context (`CTX_TID`) for the kernel.
`__dpu_launch` runs `__dpu_main` for DPUs 0..n-1 in turn (one tasklet each),
their contexts one after the other: one host call for a whole launch.
"""
from __future__ import annotations

from ...dpu.limits import BARRIER, DMA_ALIGN, DMA_MAX_BYTES, DMA_MIN_BYTES, ME

# Slots of the launch context (i64 each).
CTX_READS, CTX_READ_BYTES, CTX_WRITES, CTX_WRITE_BYTES = 0, 1, 2, 3
CTX_ERROR, CTX_ERR_MRAM, CTX_ERR_WRAM, CTX_ERR_BYTES = 4, 5, 6, 7
CTX_MRAM_LO, CTX_MRAM_HI, CTX_ERR_DIR, CTX_ASSERT = 8, 9, 10, 11
# The MRAM regions a transfer may touch: a pointer to [lo, hi) pairs (i64), and their count.
CTX_REGIONS, CTX_NREGIONS = 12, 13
# The tasklet's id (`me()`), stored by `__dpu_main` for the kernel.
CTX_TID = 14
CTX_SLOTS = 16
ERR_DMA_RULE, ERR_MRAM_BOUNDS, ERR_ASSERT = 1, 2, 3


def _slot(name: str, k: int) -> str:
    return (f"    %{name}_p = llvm.getelementptr %ctx[{k}] : (!llvm.ptr) -> !llvm.ptr, i64\n")


DMA_TEXT = f"""
  func.func private @__dpu_dma(%mram: i64, %wram: i64, %n: i64, %dir: i64, %ctx: !llvm.ptr) {{
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %true = arith.constant true
    %calign = arith.constant {DMA_ALIGN - 1} : i64
    %cmin = arith.constant {DMA_MIN_BYTES} : i64
    %cmax = arith.constant {DMA_MAX_BYTES} : i64
{_slot("lo", CTX_MRAM_LO)}{_slot("rt", CTX_REGIONS)}{_slot("rn", CTX_NREGIONS)}    %lo = llvm.load %lo_p : !llvm.ptr -> i64
    %table = llvm.load %rt_p : !llvm.ptr -> !llvm.ptr
    %nreg = llvm.load %rn_p : !llvm.ptr -> i64
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
    %end = arith.addi %mram, %n : i64
    %false = arith.constant false
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
    %code0 = arith.select %oob, %c2, %c0 : i64
    %code = arith.select %rule, %c1, %code0 : i64
    %bad = arith.cmpi ne, %code, %c0 : i64
    scf.if %bad {{
{_slot("e", CTX_ERROR)}      %e = llvm.load %e_p : !llvm.ptr -> i64
      %first = arith.cmpi eq, %e, %c0 : i64
      scf.if %first {{
        llvm.store %code, %e_p : i64, !llvm.ptr
{_slot("em", CTX_ERR_MRAM)}{_slot("ew", CTX_ERR_WRAM)}{_slot("en", CTX_ERR_BYTES)}{_slot("ed", CTX_ERR_DIR)}        %moff = arith.subi %mram, %lo : i64
        llvm.store %moff, %em_p : i64, !llvm.ptr
        llvm.store %wram, %ew_p : i64, !llvm.ptr
        llvm.store %n, %en_p : i64, !llvm.ptr
        llvm.store %dir, %ed_p : i64, !llvm.ptr
      }}
    }} else {{
      %ci = arith.muli %dir, %c2 : i64
      %cnt_p = llvm.getelementptr %ctx[%ci] : (!llvm.ptr, i64) -> !llvm.ptr, i64
      %cnt = llvm.load %cnt_p : !llvm.ptr -> i64
      %cnt1 = arith.addi %cnt, %c1 : i64
      llvm.store %cnt1, %cnt_p : i64, !llvm.ptr
      %bytes_p = llvm.getelementptr %cnt_p[1] : (!llvm.ptr) -> !llvm.ptr, i64
      %bytes = llvm.load %bytes_p : !llvm.ptr -> i64
      %bytes1 = arith.addi %bytes, %n : i64
      llvm.store %bytes1, %bytes_p : i64, !llvm.ptr
      %mp = llvm.inttoptr %mram : i64 to !llvm.ptr
      %wp = llvm.inttoptr %wram : i64 to !llvm.ptr
      %is_write = arith.cmpi eq, %dir, %c1 : i64
      scf.if %is_write {{
        "llvm.intr.memcpy"(%mp, %wp, %n) <{{isVolatile = false}}> : (!llvm.ptr, !llvm.ptr, i64) -> ()
      }} else {{
        "llvm.intr.memcpy"(%wp, %mp, %n) <{{isVolatile = false}}> : (!llvm.ptr, !llvm.ptr, i64) -> ()
      }}
    }}
    return
  }}
"""


WRAM_T = "memref<?xi8>"


def tasklet_decls(tasklets: int) -> str:
    """Declarations of the runtime's tasklet calls (as EDSL regions declare them)."""
    if tasklets == 1:
        return ""
    return (f'\n  llvm.func @{ME}() -> i32 attributes {{sym_visibility = "private"}}'
            f'\n  llvm.func @{BARRIER}() attributes {{sym_visibility = "private"}}\n')


def main_text(kernel: str, param_types: list[str], tasklets: int = 1) -> str:
    """`__dpu_main`: the program-instance loop of one DPU around `kernel` (run by
    each of its tasklets); `__dpu_launch`: DPUs 0..n-1 in turn."""
    params = "".join(f"%a{i}: {t}, " for i, t in enumerate(param_types))
    args = "".join(f"%a{i}, " for i in range(len(param_types)))
    types = "".join(f"{t}, " for t in param_types)
    if tasklets > 1:
        mine = f"""    %tid = llvm.call @{ME}() : () -> i32
    %tid64 = arith.extsi %tid : i32 to i64
    %slots = arith.constant {CTX_SLOTS} : i64
    %off = arith.muli %tid64, %slots : i64
    %tctx = llvm.getelementptr %ctx[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i64
    %tid_p = llvm.getelementptr %tctx[{CTX_TID}] : (!llvm.ptr) -> !llvm.ptr, i64
    llvm.store %tid64, %tid_p : i64, !llvm.ptr
"""
    else:
        mine = "    %tctx = llvm.getelementptr %ctx[0] : (!llvm.ptr) -> !llvm.ptr, i64\n"
    return f"""
  func.func @__dpu_main({params}%gx: i32, %gy: i32, %gz: i32, %first: i32, %step: i32, %wram: {WRAM_T}, %ctx: !llvm.ptr) {{
{mine}    %gxy = arith.muli %gx, %gy : i32
    %total = arith.muli %gxy, %gz : i32
    scf.for %p = %first to %total step %step : i32 {{
      %x = arith.remsi %p, %gx : i32
      %q = arith.divsi %p, %gx : i32
      %y = arith.remsi %q, %gy : i32
      %z = arith.divsi %p, %gxy : i32
      func.call @{kernel}({args}%x, %y, %z, %gx, %gy, %gz, %wram, %tctx) : ({types}i32, i32, i32, i32, i32, i32, {WRAM_T}, !llvm.ptr) -> ()
    }}
    return
  }}

  func.func @__dpu_launch({params}%gx: i32, %gy: i32, %gz: i32, %dpus: i32, %step: i32, %wram: {WRAM_T}, %ctx: !llvm.ptr) {{
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %per = arith.constant {CTX_SLOTS * tasklets} : i64
    scf.for %d = %c0 to %dpus step %c1 : i32 {{
      %d64 = arith.extsi %d : i32 to i64
      %off = arith.muli %d64, %per : i64
      %dctx = llvm.getelementptr %ctx[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i64
      func.call @__dpu_main({args}%gx, %gy, %gz, %d, %step, %wram, %dctx) : ({types}i32, i32, i32, i32, i32, {WRAM_T}, !llvm.ptr) -> ()
    }}
    return
  }}
"""
