"""The program around a converted kernel: its program-instance loop and the
declarations of the DPU runtime library it calls (edsl.target.dpu; the library
itself is linked when the program is built, edsl.dpu.support).

`__dpu_main` is what every tasklet of a DPU runs: the program instances of
that DPU, ids first, first+step, ... below the grid size, one at a time,
with the tasklet's launch context `ctx`.
`__dpu_launch` runs `__dpu_main` for DPUs first..end-1 in turn on tasklet `tid`,
each with its context (the contexts are laid out DPU by DPU, tasklet by
tasklet): one host call per tasklet for a whole launch.
"""
from __future__ import annotations

from ...target.dpu import (BARRIER, CTX_SLOTS, DMA, ENTER, ENTRY, EXIT, FAIL, KERNEL, LAUNCH, MAIN, NOTE,
                        entry_params, entry_types)

DECLARATIONS = f"""
  llvm.func @{DMA}(i64, i64, i64, i64, i64, !llvm.ptr) attributes {{sym_visibility = "private"}}
  llvm.func @{NOTE}(i64, i64, i64, i64, !llvm.ptr) attributes {{sym_visibility = "private"}}
  llvm.func @{FAIL}(!llvm.ptr, i64, i64, i64, i64, i64, i64) attributes {{sym_visibility = "private"}}
  llvm.func @{BARRIER}(i64) attributes {{sym_visibility = "private"}}
  llvm.func @{ENTER}(!llvm.ptr) attributes {{sym_visibility = "private"}}
  llvm.func @{EXIT}(!llvm.ptr) attributes {{sym_visibility = "private"}}
"""


def kernel_declaration(kernel: str, param_types: list[str]) -> str:
    """The converted kernel's declaration (its signature: `abi.ENTRY[KERNEL]`)."""
    return f"func.func private @{kernel}({', '.join(param_types + entry_types(KERNEL))})"


def _call(callee: str, entry: str, args: str, types: str, **values) -> str:
    """A call of `callee` with the kernel's arguments `args` (of `types`) and
    the arguments of `entry`, each the SSA value `values` names, or its own."""
    names = ", ".join(values.get(a.name, f"%{a.name}") for a in ENTRY[entry])
    return (f"func.call @{callee}({args}{names}) : ({types}{', '.join(entry_types(entry))}) -> ()")


def main_text(kernel: str, param_types: list[str], tasklets: int = 1) -> str:
    """`__dpu_main` and `__dpu_launch` around `kernel`."""
    params = "".join(f"%a{i}: {t}, " for i, t in enumerate(param_types))
    args = "".join(f"%a{i}, " for i in range(len(param_types)))
    types = "".join(f"{t}, " for t in param_types)
    return f"""
  func.func @{MAIN}({params}{entry_params(MAIN)}) {{
    %gxy = arith.muli %grid_x, %grid_y : i32
    %total = arith.muli %gxy, %grid_z : i32
    scf.for %p = %first to %total step %step : i32 {{
      %pid_x = arith.remsi %p, %grid_x : i32
      %q = arith.divsi %p, %grid_x : i32
      %pid_y = arith.remsi %q, %grid_y : i32
      %pid_z = arith.divsi %p, %gxy : i32
      {_call(kernel, KERNEL, args, types)}
    }}
    return
  }}

  func.func @{LAUNCH}({params}{entry_params(LAUNCH)}) {{
    %c1 = arith.constant 1 : i32
    %tasklets = arith.constant {tasklets} : i64
    %slots = arith.constant {CTX_SLOTS} : i64
    %tid64 = arith.extsi %tid : i32 to i64
    scf.for %d = %first_dpu to %end_dpu step %c1 : i32 {{
      %d64 = arith.extsi %d : i32 to i64
      %row = arith.muli %d64, %tasklets : i64
      %k = arith.addi %row, %tid64 : i64
      %off = arith.muli %k, %slots : i64
      %tctx = llvm.getelementptr %ctx[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i64
      llvm.call @{ENTER}(%tctx) : (!llvm.ptr) -> ()
      {_call(MAIN, MAIN, args, types, first="%d", ctx="%tctx")}
      llvm.call @{EXIT}(%tctx) : (!llvm.ptr) -> ()
    }}
    return
  }}
"""
