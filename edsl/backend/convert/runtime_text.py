"""The DPU-side support every converted kernel links with, as MLIR text.

`__dpu_dma(mram, wram, nbytes, direction, ctx)` is the model of `mram_read`
(direction 0) / `mram_write` (1): it checks the UPMEM DMA rules and the MRAM
bounds, counts transfers and bytes, and copies. `ctx` points to the launch
context, an array of i64 slots (see `CTX_*`); a broken rule is recorded in
the context (first one only) and the transfer is skipped, so the host can
raise a `DpuError` after the program.

`__dpu_main` runs the program instances of one DPU: ids first, first+step, ...
below the grid size, one at a time.
"""
from __future__ import annotations

from ...dpu.limits import DMA_ALIGN, DMA_MAX_BYTES, DMA_MIN_BYTES

# Slots of the launch context (i64 each).
CTX_READS, CTX_READ_BYTES, CTX_WRITES, CTX_WRITE_BYTES = 0, 1, 2, 3
CTX_ERROR, CTX_ERR_MRAM, CTX_ERR_WRAM, CTX_ERR_BYTES = 4, 5, 6, 7
CTX_MRAM_LO, CTX_MRAM_HI, CTX_ERR_DIR, CTX_ASSERT = 8, 9, 10, 11
CTX_SLOTS = 16
ERR_DMA_RULE, ERR_MRAM_BOUNDS, ERR_ASSERT = 1, 2, 3


def _slot(name: str, k: int) -> str:
    return (f"    %{name}_p = llvm.getelementptr %ctx[{k}] : (!llvm.ptr) -> !llvm.ptr, i64\n")


DMA_TEXT = f"""
  func.func private @__dpu_dma(%mram: i64, %wram: i64, %n: i64, %dir: i64, %ctx: !llvm.ptr) {{
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %calign = arith.constant {DMA_ALIGN - 1} : i64
    %cmin = arith.constant {DMA_MIN_BYTES} : i64
    %cmax = arith.constant {DMA_MAX_BYTES} : i64
{_slot("lo", CTX_MRAM_LO)}{_slot("hi", CTX_MRAM_HI)}    %lo = llvm.load %lo_p : !llvm.ptr -> i64
    %hi = llvm.load %hi_p : !llvm.ptr -> i64
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
    %below = arith.cmpi ult, %mram, %lo : i64
    %above = arith.cmpi ugt, %end, %hi : i64
    %oob = arith.ori %below, %above : i1
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


def main_text(kernel: str, param_types: list[str]) -> str:
    """`__dpu_main`: the program-instance loop of one DPU around `kernel`."""
    params = "".join(f"%a{i}: {t}, " for i, t in enumerate(param_types))
    args = "".join(f"%a{i}, " for i in range(len(param_types)))
    types = "".join(f"{t}, " for t in param_types)
    return f"""
  func.func @__dpu_main({params}%gx: i32, %gy: i32, %gz: i32, %first: i32, %step: i32, %ctx: !llvm.ptr) {{
    %gxy = arith.muli %gx, %gy : i32
    %total = arith.muli %gxy, %gz : i32
    scf.for %p = %first to %total step %step : i32 {{
      %x = arith.remsi %p, %gx : i32
      %q = arith.divsi %p, %gx : i32
      %y = arith.remsi %q, %gy : i32
      %z = arith.divsi %p, %gxy : i32
      func.call @{kernel}({args}%x, %y, %z, %gx, %gy, %gz, %ctx) : ({types}i32, i32, i32, i32, i32, i32, !llvm.ptr) -> ()
    }}
    return
  }}
"""
