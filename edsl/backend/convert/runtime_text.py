"""The program around a converted kernel: its program-instance loop and the
declarations of the DPU runtime library it calls (edsl.dpu.abi; the library
itself is linked when the program is built, edsl.dpu.support).

`__dpu_main` is what every tasklet of a DPU runs: the program instances of
that DPU, ids first, first+step, ... below the grid size, one at a time,
with the tasklet's launch context `ctx`.
`__dpu_launch` runs `__dpu_main` for DPUs 0..n-1 in turn on tasklet `tid`,
each with its context (the contexts are laid out DPU by DPU, tasklet by
tasklet): one host call per tasklet for a whole launch.
"""
from __future__ import annotations

from ...dpu.abi import BARRIER, CTX_SLOTS, DMA, ENTER, EXIT, FAIL, LAUNCH, MAIN

WRAM_T = "memref<?xi8>"

DECLARATIONS = f"""
  llvm.func @{DMA}(i64, i64, i64, i64, i64, !llvm.ptr) attributes {{sym_visibility = "private"}}
  llvm.func @{FAIL}(!llvm.ptr, i64, i64, i64, i64, i64, i64) attributes {{sym_visibility = "private"}}
  llvm.func @{BARRIER}(i64) attributes {{sym_visibility = "private"}}
  llvm.func @{ENTER}(!llvm.ptr) attributes {{sym_visibility = "private"}}
  llvm.func @{EXIT}(!llvm.ptr) attributes {{sym_visibility = "private"}}
"""


def main_text(kernel: str, param_types: list[str], tasklets: int = 1) -> str:
    """`__dpu_main` and `__dpu_launch` around `kernel`."""
    params = "".join(f"%a{i}: {t}, " for i, t in enumerate(param_types))
    args = "".join(f"%a{i}, " for i in range(len(param_types)))
    types = "".join(f"{t}, " for t in param_types)
    return f"""
  func.func @{MAIN}({params}%gx: i32, %gy: i32, %gz: i32, %first: i32, %step: i32, %wram: {WRAM_T}, %ctx: !llvm.ptr) {{
    %gxy = arith.muli %gx, %gy : i32
    %total = arith.muli %gxy, %gz : i32
    scf.for %p = %first to %total step %step : i32 {{
      %x = arith.remsi %p, %gx : i32
      %q = arith.divsi %p, %gx : i32
      %y = arith.remsi %q, %gy : i32
      %z = arith.divsi %p, %gxy : i32
      func.call @{kernel}({args}%x, %y, %z, %gx, %gy, %gz, %wram, %ctx) : ({types}i32, i32, i32, i32, i32, i32, {WRAM_T}, !llvm.ptr) -> ()
    }}
    return
  }}

  func.func @{LAUNCH}({params}%gx: i32, %gy: i32, %gz: i32, %dpus: i32, %step: i32, %wram: {WRAM_T}, %ctx: !llvm.ptr, %tid: i32) {{
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %tasklets = arith.constant {tasklets} : i64
    %slots = arith.constant {CTX_SLOTS} : i64
    %tid64 = arith.extsi %tid : i32 to i64
    scf.for %d = %c0 to %dpus step %c1 : i32 {{
      %d64 = arith.extsi %d : i32 to i64
      %row = arith.muli %d64, %tasklets : i64
      %k = arith.addi %row, %tid64 : i64
      %off = arith.muli %k, %slots : i64
      %tctx = llvm.getelementptr %ctx[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i64
      llvm.call @{ENTER}(%tctx) : (!llvm.ptr) -> ()
      func.call @{MAIN}({args}%gx, %gy, %gz, %d, %step, %wram, %tctx) : ({types}i32, i32, i32, i32, i32, {WRAM_T}, !llvm.ptr) -> ()
      llvm.call @{EXIT}(%tctx) : (!llvm.ptr) -> ()
    }}
    return
  }}
"""
