"""A CUDA C raw function's LLVM IR (edsl.codegen.cuda), made ready to be
linked into a kernel beside the `fl.call` library (edsl.inject.gpu_library).

The module is linked as LLVM IR, after the library, by Triton's extern-library
linker; so that several CUDA functions, and several kernels' worth of them,
never meet under one name, every symbol it defines gets its function symbol
as a prefix, and the called function is reached through `@<symbol>`, a
`void` wrapper whose parameters are the function's (the adapter needs no
result: what a call returns is the memory of its operands). The attributes
that pin a target CPU are dropped, since LLVM inlines a function only into
callers with the same ones and Triton's kernels have none; so are the module
flags, which Triton sets for the kernel. Calls of libm's functions, which
the project's CUDA header declares, go to libdevice's (linked after); the
fast ones (`__expf`, `__logf`, ...) are defined in the module, as for EDSL
functions compiled with fastmath (edsl.lowering.libdevice).
"""
from __future__ import annotations

import re

from ..codegen import llvm_ir
from ..lowering.libdevice import FAST, FAST_PREFIX, fast_functions_llvm, libdevice_name

_IDENT = r"[-\w$.]+"


def _rename(text: str, old: str, new: str) -> str:
    return re.sub(r"@" + re.escape(old) + r"(?![-\w$.])", "@" + new, text)


def link_ready(llvm: str, fn: llvm_ir.LlvmFunction, symbol: str) -> str:
    """`llvm` with its definitions under `symbol`'s prefix, `fn` reachable as `@symbol`."""
    defined = set(llvm_ir.functions(llvm)) | set(re.findall(r"^@(" + _IDENT + r") = ", llvm, re.M))
    declared = set(re.findall(r"^declare [^@]*@(" + _IDENT + r")\(", llvm, re.M))
    text = llvm
    for name in sorted(defined, key=len, reverse=True):
        text = _rename(text, name, f"{symbol}.{name}")
    fast = sorted(n[len(FAST_PREFIX):] for n in declared - defined
                  if n.startswith(FAST_PREFIX) and n[len(FAST_PREFIX):] in FAST)
    for name in declared - defined:
        target = libdevice_name(name)
        if target is not None:
            text = _rename(text, name, target)
    for name in fast:     # (defined here, as for EDSL functions: no libdevice to link for them)
        text = re.sub(r"^declare [^@]*@" + re.escape(FAST_PREFIX + name) + r"\(.*\n", "", text, flags=re.M)
        text = _rename(text, FAST_PREFIX + name, f"{symbol}.edsl.fast_{name}")
    if fast:
        if not re.search(r"^declare i32 @__nvvm_reflect\(", text, re.M):
            text += "\ndeclare i32 @__nvvm_reflect(ptr)\n"
        text += "\n" + fast_functions_llvm(fast, f"{symbol}.") + "\n"
    text = re.sub(r"^(attributes #\d+ = \{)(.*)\}$", lambda m: f"{m[1]} {_portable(m[2])} }}", text, flags=re.M)
    text = re.sub(r"^!llvm\.(?:module\.flags|ident) = .*$", "", text, flags=re.M)
    params = ", ".join(f"{t} %a{k}" for k, t in enumerate(fn.params))
    call = f"call {fn.result} @{symbol}.{fn.name}({params})"
    return text + f"""
define void @{symbol}({params}) #{_ALWAYS_INLINE} {{
  {'' if fn.result == 'void' else '%r = '}{call}
  ret void
}}

attributes #{_ALWAYS_INLINE} = {{ alwaysinline nounwind }}
"""


# Function attributes every LLVM that Triton 3.6 and later bundle reads; a
# newer one (clang's LLVM may be newer than Triton's) would fail the parse,
# and each is only a hint to the optimizer.
_PORTABLE = {"alwaysinline", "cold", "convergent", "hot", "inlinehint", "mustprogress", "nocallback", "nofree",
             "noinline", "nomerge", "noreturn", "norecurse", "nosync", "nounwind", "speculatable", "willreturn"}
_DROPPED_STRINGS = ("target-cpu", "target-features", "frame-pointer", "stack-protector-buffer-size")


def _portable(group: str) -> str:
    """An attribute group's attributes, less those not every LLVM reads and those
    that pin a target CPU (string attributes other LLVMs ignore are kept)."""
    kept = []
    for m in re.finditer(r'"([^"]*)"(?:="[^"]*")?|memory\([^)]*\)|[\w.]+(?:\([^)]*\))?', group):
        token = m.group(0)
        if m.group(1) is not None:
            if m.group(1) not in _DROPPED_STRINGS:
                kept.append(token)
        elif token in _PORTABLE or token.startswith("memory("):
            kept.append(token)
    return " ".join(kept)


# An attribute group number clang does not use.
_ALWAYS_INLINE = 9999


__all__ = ["link_ready"]
