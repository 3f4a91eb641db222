"""The C of the calls a printed function makes: `llvm.call` and `llvm.intr.*`.

- The DPU runtime library linked into the kernel (edsl.dpu.support: the DMA
  routine `__dpu_dma` with its checks, `__dpu_fail`, the EDSL intrinsics) is
  printed like any other function; only the primitives that are the machine
  itself map to the SDK (`PRIMITIVES`): the copies of a transfer to
  `mram_read` / `mram_write`, `edsl_dpu_me()` to `me()`,
  `edsl_dpu_nr_tasklets()` to `NR_TASKLETS`, `edsl_dpu_barrier(site)` to
  `barrier_wait(&edsl_barrier)`, `edsl_dpu_ctx()` to the running tasklet's
  context in WRAM (`edsl_ctx[me()]`), `edsl_dpu_log_full(ctx)` (a full
  access log) to `edsl_log_flush(ctx)`. The model's host facilities
  (thread-local keys, futexes) have no DPU equivalent: a function reaching
  one is refused, and so is stdio;
- external functions that are `math.h` functions are called as such;
- `llvm.intr.*` math maps to `math.h`, memory intrinsics to the program's
  WRAM helpers (`edsl_copy`, `edsl_move`, `edsl_fill`), integer ones to C
  expressions or the compiler's builtins.

Separate from the op handlers (`ops`) because what these print is decided by
the name of the callee or intrinsic, against the program around the printed
functions (templates/dpu_program.c) and the SDK, not by the op's types.
"""
from __future__ import annotations

import re

from mlir import ir

from ...dpu import support
from ...target import dpu as abi
from .common import _check_float, _err


# What the program around the printed functions defines (templates/dpu_program.c),
# for the primitives below.
CTX_ARRAY = "edsl_ctx"          # int64_t edsl_ctx[NR_TASKLETS][EDSL_CTX_SLOTS]: the tasklets' contexts
BARRIER_VAR = "edsl_barrier"    # BARRIER_INIT(edsl_barrier, NR_TASKLETS)
LOG_FLUSH = "edsl_log_flush"    # void edsl_log_flush(void *ctx): the WRAM access log to MRAM
PROGRAM_NAMES = (CTX_ARRAY, BARRIER_VAR, LOG_FLUSH, "edsl_log", "edsl_log_count", "edsl_state", "edsl_regions", "edsl_status", "edsl_wram",
                 "edsl_args_t", "edsl_copy", "edsl_move", "edsl_fill", "edsl_maximumf",
                 "edsl_minimumf", "edsl_maximum", "edsl_minimum")

# The machine itself: calls printed as the SDK's own (C expressions of the
# call's printed arguments). Everything else reachable is printed from its IR.
PRIMITIVES = {
    support.COPY_FROM_MRAM: lambda a: (f"mram_read((const __mram_ptr void *)(uintptr_t){a[1]}, {a[0]}, "
                                       f"(unsigned int){a[2]})"),
    support.COPY_TO_MRAM: lambda a: (f"mram_write({a[1]}, (__mram_ptr void *)(uintptr_t){a[0]}, "
                                     f"(unsigned int){a[2]})"),
    abi.ME: lambda a: "(uint32_t)me()",
    abi.NR_TASKLETS: lambda a: "(uint32_t)NR_TASKLETS",
    abi.BARRIER: lambda a: f"barrier_wait(&{BARRIER_VAR})",
    abi.CTX: lambda a: f"(void *){CTX_ARRAY}[me()]",
    # A tasklet's full WRAM access log goes to its log in MRAM (a launch on
    # several DPUs; templates/dpu_program.c), where the host runner reads it.
    abi.LOG_FULL: lambda a: f"{LOG_FLUSH}({a[0]})",
}

# Host facilities of the DPU model's runtime, which a DPU does not have.
_HOST_ONLY = re.compile(r"pthread_\w+|syscall|sched_yield|futex\w*")

# math.h functions for `llvm.intr.<name>` on f32 / f64 (unary unless listed).
_MATH1 = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "log10": "log10",
          "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "fabs": "fabs",
          "floor": "floor", "ceil": "ceil", "trunc": "trunc", "round": "round",
          "roundeven": "rint", "rint": "rint", "nearbyint": "nearbyint", "tanh": "tanh",
          "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh",
          "expm1": "expm1", "log1p": "log1p", "cbrt": "cbrt", "erf": "erf"}
_MATH2 = {"pow": "pow", "maxnum": "fmax", "minnum": "fmin", "copysign": "copysign",
          "atan2": "atan2"}
# External functions a module may call that are math.h functions themselves.
_LIBM = {f"{n}{s}" for n in set(_MATH1.values()) | set(_MATH2.values()) | {"fmod", "fma", "erf"}
         for s in ("", "f")}


def _call(fp, op):
    o = op.operation
    if "callee" not in o.attributes:
        raise _err(op, "indirect calls are not supported")
    callee = ir.FlatSymbolRefAttr(o.attributes["callee"]).value
    args = [fp.v(a) for a in o.operands]
    r = fp.result(op) if len(o.results) else None
    lhs = f"{r} = " if r else ""
    primitive = PRIMITIVES.get(callee)
    if primitive is not None:
        fp.emit(f"{lhs}{primitive(args)};")
        return
    target = fp.p.funcs.get(callee)
    if target is not None and target.regions[0].blocks:
        fp.emit(f"{lhs}{fp.p.cname(callee)}({', '.join(args)});")
        return
    if callee in _LIBM:
        fp.p.out.needs_math = True
        fp.emit(f"{lhs}{callee}({', '.join(args)});")
        return
    if callee in ("printf", "puts", "fflush", "putchar"):
        raise _err(op, "device printing (tl.device_print) is not supported in an exported DPU "
                       "program: the DPU program may not use stdio")
    if _HOST_ONLY.fullmatch(callee):
        raise _err(op, f"'{fp.symbol}' calls '{callee}', a host facility of the DPU model's runtime "
                       "(threads, futexes) that a DPU does not have")
    raise _err(op, f"call to external function '{callee}', which the DPU program cannot link")


def intrinsic(fp, op, name: str) -> None:
    """Print `llvm.intr.<name>` for the function printer `fp`."""
    handler = _INTRINSICS.get(name)
    if handler is None:
        raise _err(op, f"the intrinsic 'llvm.intr.{name}' is not supported by the C printer")
    handler(fp, op, name, list(op.operation.operands))


def _copy(fp, op, name, args):
    dst, src, n = args[:3]
    for p in (dst, src):
        if p.type.address_space != abi.WRAM_ADDRSPACE:
            raise _err(op, f"llvm.intr.{name} on MRAM (use DMA)")
    fn = "edsl_copy" if name == "memcpy" else "edsl_move"
    fp.emit(f"{fn}({fp.v(dst)}, {fp.v(src)}, (uint32_t){fp.v(n)});")


def _memset(fp, op, name, args):
    dst, val, n = args[:3]
    if dst.type.address_space != abi.WRAM_ADDRSPACE:
        raise _err(op, "llvm.intr.memset on MRAM")
    fp.emit(f"edsl_fill({fp.v(dst)}, {fp.v(val)}, (uint32_t){fp.v(n)});")


def _ignored(fp, op, name, args):
    pass


def _stacksave(fp, op, name, args):
    fp.emit(f"{fp.result(op)} = (void *)0;")


def _expect(fp, op, name, args):
    fp.emit(f"{fp.result(op)} = {fp.v(args[0])};")


def _float_math(fp, op, name, args):
    s = _check_float(op, args[0].type)
    vals = [fp.v(a) for a in args]
    r = fp.result(op)
    if name == "fmuladd":
        fp.emit(f"{r} = {vals[0]} * {vals[1]} + {vals[2]};")
        return
    fp.p.out.needs_math = True
    if name == "fma":
        fp.emit(f"{r} = fma{s}({', '.join(vals)});")
    elif name in ("maximum", "minimum"):
        fp.emit(f"{r} = edsl_{name}{s}({vals[0]}, {vals[1]});")
    elif name in _MATH1:
        fp.emit(f"{r} = {_MATH1[name]}{s}({vals[0]});")
    else:
        fp.emit(f"{r} = {_MATH2[name]}{s}({vals[0]}, {vals[1]});")


def _min_max(fp, op, name, args):
    a, b = args
    r = fp.result(op)
    x, y = (fp.signed(a), fp.signed(b)) if name[0] == "s" else (fp.v(a), fp.v(b))
    cmp = ">" if name.endswith("max") else "<"
    fp.emit(f"{r} = {x} {cmp} {y} ? {fp.v(a)} : {fp.v(b)};")


def _abs(fp, op, name, args):
    a = args[0]
    w = fp.width(a)
    fp.emit(f"{fp.result(op)} = {fp.signed(a)} < 0 ? (uint{w}_t)(0u - {fp.v(a)}) : {fp.v(a)};")


def _bit_count(fp, op, name, args):
    a = args[0]
    w = fp.width(a)
    if w not in (32, 64):
        raise _err(op, f"llvm.intr.{name} on i{w}")
    suffix = "" if w == 32 else "ll"
    r = fp.result(op)
    if name == "ctpop":
        fp.emit(f"{r} = (uint{w}_t)__builtin_popcount{suffix}({fp.v(a)});")
    else:
        fn = "clz" if name == "ctlz" else "ctz"
        fp.emit(f"{r} = {fp.v(a)} ? (uint{w}_t)__builtin_{fn}{suffix}({fp.v(a)}) : {w}u;")


# The intrinsics the printer knows: handler(fp, op, name, operands).
_INTRINSICS = {
    "memcpy": _copy, "memmove": _copy, "memset": _memset,
    **dict.fromkeys(("lifetime.start", "lifetime.end", "assume", "stackrestore",
                     "experimental.noalias.scope.decl"), _ignored),
    "stacksave": _stacksave, "expect": _expect,
    **dict.fromkeys((*_MATH1, *_MATH2, "fma", "fmuladd", "maximum", "minimum"), _float_math),
    **dict.fromkeys(("smax", "smin", "umax", "umin"), _min_max),
    "abs": _abs, **dict.fromkeys(("ctpop", "ctlz", "cttz"), _bit_count),
}
