"""The program around a converted kernel (`program.mlir`: its program-instance
loop, its launch over DPUs and the declarations of the DPU runtime library it
calls), filled from the kernel's parameters and the entry signatures of
`abi.ENTRY`."""
from __future__ import annotations

from pathlib import Path

from ...base import templates
from ...target.dpu import (BARRIER, CTX_SLOTS, DMA, ENTER, ENTRY, EXIT, FAIL, FAILED, KERNEL, LAUNCH, MAIN, NOTE,
                           WATCH_WAIT, YIELD, entry_params, entry_types)

PROGRAM = Path(__file__).with_name("program.mlir")


def _call(callee: str, entry: str, args: str, types: str, **values) -> str:
    """A call of `callee` with the kernel's arguments `args` (of `types`) and
    the arguments of `entry`, each the SSA value `values` names, or its own."""
    names = ", ".join(values.get(a.name, f"%{a.name}") for a in ENTRY[entry])
    return (f"func.call @{callee}({args}{names}) : ({types}{', '.join(entry_types(entry))}) -> ()")


def program_text(kernel: str, param_types: list[str], tasklets: int = 1, turns: bool = False,
                 split: bool = False) -> str:
    """The declarations, `__dpu_main` and `__dpu_launch` around `kernel`
    (`turns`: its tasklets yield after each program instance; `split`: the
    kernel runs every tasklet's part itself, `fission`, so only tasklet 0
    runs it)."""
    params = "".join(f"%a{i}: {t}, " for i, t in enumerate(param_types))
    args = "".join(f"%a{i}, " for i in range(len(param_types)))
    types = "".join(f"{t}, " for t in param_types)
    after_instance = f"llvm.call @{YIELD}(%ctx) : (!llvm.ptr) -> ()" if turns else ""
    return templates.fill(PROGRAM, dma=DMA, note=NOTE, watch_wait=WATCH_WAIT, fail=FAIL, failed=FAILED,
                          barrier=BARRIER, enter=ENTER, exit=EXIT, tasklet_yield=YIELD,
                          after_instance=after_instance,
                          kernel=kernel, kernel_types=", ".join(param_types + entry_types(KERNEL)),
                          main=MAIN, launch=LAUNCH, params=params, main_params=entry_params(MAIN),
                          launch_params=entry_params(LAUNCH), tasklets=tasklets, ctx_slots=CTX_SLOTS,
                          kernel_call=_call(kernel, KERNEL, args, types),
                          main_call=_call(MAIN, MAIN, args, types, ctx="%tctx"),
                          runs_main="%zero = arith.constant 0 : i32\n    %runs = arith.cmpi eq, %tid, %zero : i32"
                          if split else "%runs = arith.constant true")
