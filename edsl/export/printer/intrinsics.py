"""The C of the calls a printed function makes: `llvm.call` and `llvm.intr.*`.

- The DPU runtime library linked into the kernel (edsl.dpu.support: the DMA
  routine `__dpu_dma` with its checks, `__dpu_fail`, the EDSL intrinsics) is
  printed like any other function; only the primitives that are the machine
  itself map to the SDK (`PRIMITIVES`): the copies of a transfer to
  `mram_read` / `mram_write`, `edsl_dpu_me()` to `me()`,
  `edsl_dpu_nr_tasklets()` to `NR_TASKLETS`, `edsl_dpu_barrier(site)` to
  `barrier_wait(&edsl_barrier)`, `edsl_dpu_ctx()` to the running tasklet's
  context in WRAM (`edsl_ctx[me()]`), `edsl_dpu_log_full(ctx)` (a full
  access log) to `edsl_log_flush(ctx)`, `edsl_dpu_save_pages` (the model
  keeping the pages a transfer is about to write) to nothing. The model's
  host facilities (thread-local keys, futexes) have no DPU equivalent: a
  function reaching one is refused;
- `printf` (`tl.device_print`) is the SDK's DPU `printf` (stdio.h), which
  writes to the DPU's log buffer in MRAM that the host runner reads after
  the launch (`dpu_log_read`), and `fflush` has nothing to do. That printf
  stores the format and the arguments, and the host's library formats them
  with the host's printf: it supports only the conversions `_PRINTF_CONV`
  lists, which a format is checked against; `%a` (hex floats, which the DPU
  printf does not print) becomes `%s` of the value formatted by
  `edsl_hexfloat` as C's `%a` does;
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
from pathlib import Path

from mlir import ir
from mlir.dialects import llvm

from ...dpu import support
from ...target import dpu as abi
from .common import _check_float, _err, source_line


# What the program around the printed functions defines (templates/dpu_program.c),
# for the primitives below.
CTX_ARRAY = "edsl_ctx"          # int64_t edsl_ctx[NR_TASKLETS][EDSL_CTX_SLOTS]: the tasklets' contexts
BARRIER_VAR = "edsl_barrier"    # BARRIER_INIT(edsl_barrier, NR_TASKLETS)
LOG_FLUSH = "edsl_log_flush"    # void edsl_log_flush(void *ctx): the WRAM access log to MRAM
PROGRAM_NAMES = (CTX_ARRAY, BARRIER_VAR, LOG_FLUSH, "edsl_log", "edsl_log_count", "edsl_state", "edsl_regions", "edsl_status", "edsl_wram",
                 "edsl_args_t", "edsl_copy", "edsl_move", "edsl_fill", "edsl_maximumf",
                 "edsl_minimumf", "edsl_maximum", "edsl_minimum", "edsl_hexfloat", "printf", "puts",
                 "putchar", "STDOUT_BUFFER_INIT")

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
    abi.YIELD: lambda a: "(void)0",         # (a DPU's tasklets run side by side)
    abi.SAVE_PAGES: lambda a: "(void)0",    # (a DPU writes its own MRAM's copy of the arrays)
    abi.RACE_NOTE: lambda a: "(void)0",     # (hardware has no check of races between tasklets)
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
_LIBM = {f"{n}{s}" for n in set(_MATH1.values()) | set(_MATH2.values())
         | {"fmod", "fma", "erf", "erfc", "hypot", "remainder", "lgamma", "tgamma"}
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
    if callee in fp.p.foreign:
        fp.emit(f"{lhs}{fp.p.foreign_name(callee, op)}({', '.join(args)});")
        return
    if callee in _LIBM:
        fp.p.out.needs_math = True
        fp.emit(f"{lhs}{callee}({', '.join(args)});")
        return
    if callee == "printf":
        _printf(fp, op, o, r)
        return
    if callee == "fflush":
        # (the DPU's printf writes its log buffer itself: nothing to flush)
        fp.emit(f"{r} = 0u;  /* fflush */" if r else "/* fflush */")
        return
    if callee in ("puts", "putchar"):
        raise _err(op, f"'{callee}' (stdio) is not supported by the C printer: only printf is")
    if _HOST_ONLY.fullmatch(callee):
        raise _err(op, f"'{fp.symbol}' calls '{callee}', a host facility of the DPU model's runtime "
                       "(threads, futexes) that a DPU does not have")
    raise _err(op, f"call to external function '{callee}', which the DPU program cannot link")


# Conversions the SDK's DPU printf stores and its host library prints
# (`dpu_log_read`): integers (32 bits, or 64 with `l`), `%c`, `%s` and the
# doubles of `%f`, `%e`, `%E`. Its `%g` is stored as a double but read back
# as 32 bits, and other conversions (`%a`, `%p`, ...) print as their text.
_PRINTF_CONV = {**dict.fromkeys("diuxXo", "int"), "c": "char", "s": "str",
                **dict.fromkeys("feE", "double")}
# The SDK's host library keeps a message's conversions (and the runs of text
# between them) in 64 strings of 16 bytes.
_PRINTF_MAX_ITEMS = 64
_PRINTF_MAX_SPEC = 15


def _format_text(fp, value, op) -> str | None:
    """The text of a printf format that is the address of a constant string
    global; None for another value."""
    owner = getattr(value, "owner", None)
    owner = getattr(owner, "operation", owner)
    if not isinstance(owner, ir.Operation) or owner.name != "llvm.mlir.addressof":
        return None
    g = fp.p.globals.get(ir.FlatSymbolRefAttr(owner.attributes["global_name"]).value)
    if g is None or "constant" not in g.attributes or "value" not in g.attributes:
        return None
    attr = g.attributes["value"]
    if not isinstance(attr, ir.StringAttr):
        return None
    data = attr.value_bytes if hasattr(attr, "value_bytes") else attr.value.encode("latin-1")
    return data.split(b"\0", 1)[0].decode("latin-1")


def _printf_items(fmt: str):
    """The format as the SDK's DPU printf reads it: ("text", run) and
    ("conv", spec, length, letter) items."""
    items, text, k = [], "", 0
    while k < len(fmt):
        ch = fmt[k]
        if ch != "%" or fmt[k + 1:k + 2] == "%":
            text += ch
            k += 2 if ch == "%" else 1
            continue
        if text:
            items.append(("text", text))
            text = ""
        j = k + 1
        while j < len(fmt) and not fmt[j].isalpha():
            j += 1
        spec = fmt[k + 1:j]
        m = j
        while m < len(fmt) and fmt[m] in "lLzhjtq":
            m += 1
        items.append(("conv", spec, fmt[j:m], fmt[m:m + 1]))
        k = m + 1
    if text:
        items.append(("text", text))
    return items


def _c_literal(text: str) -> str:
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif 32 <= ord(ch) < 127 and ch != "?":
            out.append(ch)
        else:
            out.append(f"\\{ord(ch) & 0xff:03o}")
    return '"' + "".join(out) + '"'


def _printf(fp, op, o, r) -> None:
    """A printf call as the SDK's DPU printf (see the module's doc); a
    conversion it cannot print is an error naming the kernel's line."""
    where = source_line(o)
    at = f" at {where}" if where else ""
    fmt = _format_text(fp, o.operands[0], op)
    if fmt is None:
        raise _err(op, "a printf whose format is not a constant string cannot be checked against "
                       "what the DPU's stdio printf (SDK) prints")
    if r and len(list(o.results[0].uses)):
        raise _err(op, "the result of printf is used: the DPU's printf returns nothing")
    items = _printf_items(fmt)
    convs = [item for item in items if item[0] == "conv"]
    args = list(o.operands)[1:]

    def refuse(what: str):
        raise _err(op, f"tl.device_print{at}: {what} (format {fmt!r}; the DPU's printf prints the "
                       "conversions d i u x X o c s f e E, with l or ll for 64-bit integers)")
    if len(convs) != len(args):
        refuse(f"{len(convs)} conversions for {len(args)} arguments")
    if len(items) > _PRINTF_MAX_ITEMS:
        refuse(f"{len(items)} conversions and runs of text, more than the {_PRINTF_MAX_ITEMS} a message of "
               "the DPU's printf may have")
    out_fmt, c_args, buffers = "", [], 0
    arg_iter = iter(args)
    for item in items:
        if item[0] == "text":
            out_fmt += item[1].replace("%", "%%")
            continue
        _, spec, length, letter = item
        a = next(arg_iter)
        t = a.type
        text = f"%{spec}{length}{letter}"
        if letter in "aA" and not spec and not length:
            if not isinstance(t, ir.F64Type):
                refuse(f"'{text}' of a {t}")
            fp.p.out.needs_hexfloat = True
            c_args.append(f"edsl_hexfloat(edsl_h{buffers}, {fp.v(a)})")
            buffers += 1
            out_fmt += "%s"
            continue
        kind = _PRINTF_CONV.get(letter)
        if kind is None or "*" in spec or length not in ("", "l", "ll") or (length and kind != "int"):
            refuse(f"the conversion '{text}' is not one the DPU's printf prints")
        if len(text) > _PRINTF_MAX_SPEC:
            refuse(f"the conversion '{text}' is longer than the {_PRINTF_MAX_SPEC} characters the SDK's "
                   "host library keeps")
        if kind == "int":
            bits = 64 if length else 32
            unsigned = "unsigned " if letter != "d" and letter != "i" else ""
            ctype = {"": "int", "l": "long", "ll": "long long"}[length]
            if isinstance(t, llvm.PointerType) and unsigned and length == "ll":
                # (a pointer's address: an MRAM or WRAM address on the DPU)
                c_args.append(f"({unsigned}{ctype})(uintptr_t){fp.v(a)}")
                out_fmt += text
                continue
            if not isinstance(t, ir.IntegerType) or t.width > bits:
                refuse(f"'{text}' of a {t}")
            c_args.append(f"({unsigned}{ctype}){fp.v(a)}")
        elif kind == "double":
            if not isinstance(t, ir.F64Type):
                refuse(f"'{text}' of a {t}")
            c_args.append(fp.v(a))
        elif kind == "str":
            if not isinstance(t, llvm.PointerType) or t.address_space != abi.WRAM_ADDRSPACE:
                refuse(f"'{text}' of a {t} (a WRAM string is needed)")
            c_args.append(f"(const char *){fp.v(a)}")
        else:
            if not isinstance(t, ir.IntegerType) or t.width > 32:
                refuse(f"'{text}' of a {t}")
            c_args.append(f"(int){fp.v(a)}")
        out_fmt += text
    fp.p.out.needs_stdio = True
    call = f"printf({', '.join([_c_literal(out_fmt), *c_args])});"
    if buffers:
        decls = " ".join(f"char edsl_h{k}[EDSL_HEXFLOAT_CHARS];" for k in range(buffers))
        call = f"{{ {decls} {call} }}"
    fp.emit(call + (f" {r} = 0u;" if r else ""))


# C's "%a" of a double, as the C library of the DPU model prints it (glibc):
# the DPU's printf has no %a (a package file, added to a program that prints one).
HEXFLOAT = (Path(__file__).with_name("hexfloat.c")).read_text()


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
