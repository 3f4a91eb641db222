"""LLVM-dialect MLIR -> C for the UPMEM toolchain (the DPU program of an export).

The UPMEM compiler (`dpu-upmem-dpurte-clang`) is LLVM 12: it cannot read the
opaque-pointer LLVM IR that today's MLIR emits, so the exported DPU program is
C. This printer walks a kernel's final LLVM-dialect module with the `mlir`
Python bindings and writes one C function per `llvm.func`:

- blocks become labels, branches `goto`s; block arguments are variables that
  each branch assigns (through temporaries when the assignment is a
  permutation) before its `goto`;
- one C statement per op; every SSA value is a variable declared at the top of
  its function; constants are printed inline (floats as exact hex literals);
- integers are unsigned `uintN_t` (wrapping, as LLVM's), signed ops cast to
  `intN_t`; `i1` is `bool`; an integer of 2 to 7 bits (the i4 nibble of an
  e2m1 value) is a `uint8_t` zero above its width, which only `llvm.trunc`
  makes and `llvm.zext` reads; LLVM struct types become C structs (arrays
  wrapped in a struct so that they can be values); `!llvm.ptr` is a WRAM
  `void *`, `!llvm.ptr<255>` a `__mram_ptr void *`;
- `llvm.alloca` of a constant size becomes a static WRAM buffer (one per
  tasklet when every tasklet runs the program), so the WRAM budget is checked
  by the linker rather than by a tasklet's small stack;
- atomic loads and stores (the DPU runtime's flag that stops a DPU) are
  volatile accesses: the tasklets of a DPU share one in-order core without
  caches, where an aligned load or store is atomic and seen by the others in
  program order; `volatile` keeps the C compiler from caching or dropping it
  (read-modify-write atomics are refused);
- the DPU runtime library linked into the kernel (edsl.dpu.support: the DMA
  routine `__dpu_dma` with its checks, `__dpu_fail`, the EDSL intrinsics) is
  printed like any other function; only the primitives that are the machine
  itself map to the SDK (`PRIMITIVES`): the copies of a transfer to
  `mram_read` / `mram_write`, `edsl_dpu_me()` to `me()`,
  `edsl_dpu_nr_tasklets()` to `NR_TASKLETS`, `edsl_dpu_barrier(site)` to
  `barrier_wait(&edsl_barrier)`, `edsl_dpu_ctx()` to the running tasklet's
  context in WRAM (`edsl_ctx[me()]`), `edsl_dpu_log_full(ctx)` (a full
  access log) to `edsl_log_flush(ctx)`. The model's host facilities (thread-local
  keys, futexes) have no DPU equivalent: a function reaching one is refused;
- `llvm.intr.*` math maps to `math.h`;
- 16-bit floats (f16, bf16) reach the printer as the integers of their bits
  (`uint16_t`): the export stores them so (edsl.lowering.floats.
  soft_float_storage), as the DPU model does, once the soft-float pass has
  made every conversion integer code, printed like any other. A float type
  without a C type left in the module is an error.

An op, type, intrinsic or callee the printer does not know raises a
`CompileError` naming it: the printer never writes C it is not sure of.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import llvm

from ..dpu import abi, support
from ..errors import CompileError

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

_ICMP = {0: "eq", 1: "ne", 2: "slt", 3: "sle", 4: "sgt", 5: "sge", 6: "ult", 7: "ule",
         8: "ugt", 9: "uge"}
_FCMP = {0: "false", 1: "oeq", 2: "ogt", 3: "oge", 4: "olt", 5: "ole", 6: "one", 7: "ord",
         8: "ueq", 9: "ugt", 10: "uge", 11: "ult", 12: "ule", 13: "une", 14: "uno", 15: "true"}
_C_OPS = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
          "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}

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

_RESERVED = {"main", "me", "mram_read", "mram_write", "barrier_wait", "mem_alloc", "mem_reset",
             "halt", "NR_TASKLETS", "DPU_INPUT_ARGUMENTS", *PROGRAM_NAMES,
             "auto", "break", "case", "char", "const", "continue", "default", "do", "double",
             "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
             "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
             "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool"}


@dataclass
class CProgram:
    """The printed functions of one module, and what they need."""
    types: list[str] = field(default_factory=list)        # struct typedefs
    globals: list[str] = field(default_factory=list)      # WRAM globals and buffers
    prototypes: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)   # MLIR symbol -> C name
    needs_math: bool = False
    static_wram_bytes: int = 0                            # alloca buffers (for one tasklet)
    global_wram_bytes: int = 0                            # WRAM globals (shared)


class _Unsupported(Exception):
    pass


def _err(op, what: str) -> CompileError:
    where = f" (in `{_short(op)}`)" if op is not None else ""
    return CompileError(f"cannot export the kernel as C for the DPU: {what}{where}")


def _short(op) -> str:
    text = str(op.operation if hasattr(op, "operation") else op).split("\n")[0]
    text = re.sub(r"\s+loc\(.*$", "", text)
    return text if len(text) < 160 else text[:157] + "..."


def _location(op) -> str | None:
    """'file.py:line' of an op's (innermost user) location, if it has one."""
    text = str(op.location)
    found = re.findall(r'"([^"]+)":(\d+):\d+', text)
    for filename, line in found:
        if filename != "-" and not filename.startswith("<"):
            return f"{filename.rsplit('/', 1)[-1]}:{line}"
    return None


class Printer:
    """Prints the functions reachable from `roots` of an LLVM-dialect module.
    `all_tasklets`: every tasklet runs them (as the exported program's do), so
    each alloca buffer is one per tasklet."""

    def __init__(self, module: ir.Module, *, all_tasklets: bool = True):
        self.module = module
        self.funcs: dict[str, ir.Operation] = {}
        self.globals: dict[str, ir.Operation] = {}
        for op in module.body.operations:
            name = op.operation.name
            if name == "llvm.func":
                self.funcs[ir.StringAttr(op.attributes["sym_name"]).value] = op
            elif name == "llvm.mlir.global":
                self.globals[ir.StringAttr(op.attributes["sym_name"]).value] = op
            else:
                raise _err(op, f"unsupported top-level op '{name}'")
        self.out = CProgram()
        self._structs: dict[str, str] = {}
        self._buffers = 0
        self._all_tasklets = all_tasklets
        self._printed_globals: set[str] = set()

    # -- names and types ----------------------------------------------------
    def cname(self, symbol: str) -> str:
        name = self.out.names.get(symbol)
        if name is None:
            name = re.sub(r"[^A-Za-z0-9_]", "_", symbol)
            if name.startswith("__"):
                name = "edsl_" + name.lstrip("_")
            if name in _RESERVED or not re.match(r"[A-Za-z_]", name):
                name = "k_" + name
            used = set(self.out.names.values())
            base, k = name, 1
            while name in used:
                name, k = f"{base}_{k}", k + 1
            self.out.names[symbol] = name
        return name

    def ctype(self, t: ir.Type, op=None) -> str:
        if isinstance(t, ir.IntegerType):
            w = t.width
            if w == 1:
                return "bool"
            if w in (8, 16, 32, 64):
                return f"uint{w}_t"
            if w < 8:
                return "uint8_t"
            raise _err(op, f"integer type {t} has no C type")
        if isinstance(t, ir.F32Type):
            return "float"
        if isinstance(t, ir.F64Type):
            return "double"
        if isinstance(t, llvm.PointerType):
            space = t.address_space
            if space == abi.WRAM_ADDRSPACE:
                return "void *"
            if space == abi.MRAM_ADDRSPACE:
                return "__mram_ptr void *"
            raise _err(op, f"pointer type {t} (address space {space}) has no DPU equivalent")
        if isinstance(t, llvm.StructType):
            return self._struct(t, op)
        text = str(t)
        if text.startswith("!llvm.array<"):
            return self._array(t, op)
        if isinstance(t, (ir.F16Type, ir.BF16Type)):
            raise _err(op, f"{t} values must be stored as integers before printing (no 16-bit float "
                           "type in the DPU toolchain's C): edsl.lowering.floats.soft_float_storage")
        raise _err(op, f"type {t} is not supported")

    def _struct(self, t, op) -> str:
        key = str(t)
        if key in self._structs:
            return self._structs[key]
        if t.packed:
            raise _err(op, f"packed struct type {t} is not supported")
        fields = [self.ctype(f, op) for f in t.body]
        name = f"edsl_struct{len(self._structs)}"
        self._structs[key] = name
        body = "".join(f" {_decl(c, f'f{i}')};" for i, c in enumerate(fields))
        self.out.types.append(f"typedef struct {{{body} }} {name};")
        return name

    def _array(self, t, op) -> str:
        key = str(t)
        if key in self._structs:
            return self._structs[key]
        n, elem = _array_parts(t)
        c = self.ctype(elem, op)
        name = f"edsl_array{len(self._structs)}"
        self._structs[key] = name
        self.out.types.append(f"typedef struct {{ {_decl(c, f'a[{n}]')}; }} {name};")
        return name

    # -- module -------------------------------------------------------------
    def print_from(self, roots: list[str]) -> CProgram:
        order, seen, todo = [], set(), list(roots)
        while todo:
            name = todo.pop(0)
            if name in seen:
                continue
            seen.add(name)
            fn = self.funcs.get(name)
            if fn is None:
                raise CompileError(f"cannot export the kernel: no function '{name}' in its module")
            if not fn.regions[0].blocks:
                raise CompileError(f"cannot export the kernel: function '{name}' has no body")
            order.append(name)
            for callee in _callees(fn):
                if callee in PRIMITIVES:
                    continue
                target = self.funcs.get(callee)
                if target is not None and target.regions[0].blocks:
                    todo.append(callee)
        for name in order:
            self.cname(name)
        for name in order:
            proto, body = _FunctionPrinter(self, self.funcs[name]).run()
            self.out.prototypes.append(proto + ";")
            self.out.functions.append(body)
        return self.out

    def buffer(self, ctype: str, count: int, align: int, nbytes: int) -> str:
        name = f"edsl_wram{self._buffers}"
        self._buffers += 1
        attr = "__dma_aligned" if align <= 8 else f"__attribute__((aligned({align})))"
        dims = f"[NR_TASKLETS][{count}]" if self._all_tasklets else f"[{count}]"
        self.out.globals.append(f"static {_decl(ctype, name + dims)} {attr};")
        self.out.static_wram_bytes += nbytes
        return f"{name}[me()]" if self._all_tasklets else name

    def global_ref(self, symbol: str, op) -> str:
        g = self.globals.get(symbol)
        if g is None:
            if symbol in self.funcs:
                raise _err(op, f"the address of function '{symbol}' is taken")
            raise _err(op, f"unknown symbol '{symbol}'")
        name = self.cname(symbol)
        if symbol not in self._printed_globals:
            self._printed_globals.add(symbol)
            t = ir.TypeAttr(g.attributes["global_type"]).value
            const = "constant" in g.attributes
            value = g.attributes["value"] if "value" in g.attributes else None
            if "addr_space" in g.attributes and ir.IntegerAttr(g.attributes["addr_space"]).value \
                    != abi.WRAM_ADDRSPACE:
                raise _err(g, "globals outside WRAM are not supported")
            if g.regions[0].blocks:
                # An initializer that only returns undef/poison/zero: static storage, zeroed.
                ops = [o.operation.name for o in g.regions[0].blocks[0].operations]
                if ops[:-1] not in (["llvm.mlir.undef"], ["llvm.mlir.poison"], ["llvm.mlir.zero"]) \
                        or ops[-1] != "llvm.return":
                    raise _err(g, "a global with a computed initializer is not supported")
            if value is not None and isinstance(value, ir.StringAttr):
                n, elem = _array_parts(t)
                data = value.value_bytes if hasattr(value, "value_bytes") else value.value.encode("latin-1")
                init = ", ".join(str(b) for b in data[:n])
                c = self.ctype(t, g)
                text = f"static {'const ' if const else ''}{c} {name} = {{{{ {init} }}}};"
            elif value is None or isinstance(value, ir.UnitAttr):
                text = f"static {_decl(self.ctype(t, g), name)} __dma_aligned;"
            elif isinstance(value, ir.IntegerAttr) and isinstance(t, ir.IntegerType):
                text = f"static {_decl(self.ctype(t, g), name)} = {_int_literal(value.value, t.width)};"
            elif isinstance(value, ir.FloatAttr) and isinstance(t, (ir.F32Type, ir.F64Type)):
                self.out.needs_math |= not math.isfinite(value.value)
                text = (f"static {_decl(self.ctype(t, g), name)} = "
                        f"{_float_literal(value.value, isinstance(t, ir.F32Type))};")
            else:
                raise _err(g, f"global initializer {value} is not supported")
            self.out.globals.append(text)
            self.out.global_wram_bytes += _type_bytes(t)
        return f"(void *)&{name}"


def _decl(ctype: str, name: str) -> str:
    return f"{ctype}{name}" if ctype.endswith("*") else f"{ctype} {name}"


def _array_parts(t) -> tuple[int, ir.Type]:
    m = re.fullmatch(r"!llvm\.array<(\d+) x (.+)>", str(t))
    if not m:
        raise CompileError(f"cannot export the kernel: unexpected array type {t}")
    text = m.group(2)
    try:
        return int(m.group(1)), ir.Type.parse(text, t.context)
    except ir.MLIRError:        # nested LLVM types print without their dialect prefix
        return int(m.group(1)), ir.Type.parse("!llvm." + text, t.context)


def _type_bytes(t) -> int:
    if isinstance(t, ir.IntegerType):
        return max(1, t.width // 8)
    if isinstance(t, ir.F32Type):
        return 4
    if isinstance(t, ir.F64Type):
        return 8
    if isinstance(t, llvm.PointerType):
        return 4
    if isinstance(t, llvm.StructType):
        total = 0
        for f in t.body:
            size = _type_bytes(f)
            align = min(8, size) or 1
            total = abi.align_up(total, align) + size
        return abi.align_up(total, 8)
    if str(t).startswith("!llvm.array<"):
        n, elem = _array_parts(t)
        return n * _type_bytes(elem)
    return 8


def _callees(fn) -> list[str]:
    names = []

    def visit(op):
        op = op.operation
        if op.name == "llvm.call" and "callee" in op.attributes:
            names.append(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    visit(inner)
    for block in fn.regions[0].blocks:
        for op in block.operations:
            visit(op)
    return names


def _int_literal(value: int, width: int) -> str:
    if width == 1:
        return "true" if value & 1 else "false"
    v = value & ((1 << width) - 1)
    if width == 64:
        return f"UINT64_C({v:#x})" if v > 9 else f"UINT64_C({v})"
    if width == 32:
        return f"{v:#x}u" if v > 9 else f"{v}u"
    return f"(uint{width}_t){v}u"


def _float_literal(value: float, is_f32: bool) -> str:
    if math.isnan(value):
        return "(float)NAN" if is_f32 else "(double)NAN"
    if math.isinf(value):
        sign = "-" if value < 0 else ""
        return f"({sign}(float)INFINITY)" if is_f32 else f"({sign}(double)INFINITY)"
    if value == 0.0:
        text = "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    else:
        text = value.hex()
    return f"({text}f)" if is_f32 else f"({text})"


class _FunctionPrinter:
    def __init__(self, printer: Printer, fn):
        self.p = printer
        self.fn = fn
        self.symbol = ir.StringAttr(fn.attributes["sym_name"]).value
        self.name = printer.cname(self.symbol)
        self.names: dict = {}          # ir.Value -> C expression
        self.decls: list[tuple[str, str]] = []
        self.lines: list[str] = []
        self.labels: dict = {}
        self.count = 0
        self.last_loc = None

    # values ----------------------------------------------------------------
    def var(self, value, op=None) -> str:
        name = f"v{self.count}"
        self.count += 1
        self.names[value] = name
        self.decls.append((self.p.ctype(value.type, op), name))
        return name

    def v(self, value) -> str:
        try:
            return self.names[value]
        except KeyError:
            raise CompileError(f"cannot export the kernel: a value of function '{self.symbol}' "
                               "is used before it is defined (unsupported block order)") from None

    def emit(self, text: str) -> None:
        self.lines.append("  " + text)

    # function --------------------------------------------------------------
    def run(self) -> tuple[str, str]:
        ftype = ir.TypeAttr(self.fn.attributes["function_type"]).value
        text = str(ftype)
        if "..." in text:
            raise _err(self.fn, "variadic functions are not supported")
        blocks = list(self.fn.regions[0].blocks)
        params = []
        for i, arg in enumerate(blocks[0].arguments):
            name = f"a{i}"
            self.names[arg] = name
            params.append(_decl(self.p.ctype(arg.type, self.fn), name))
        ret = self._result_type(text)
        proto = f"static {_decl(ret, self.name)}({', '.join(params) or 'void'})"
        for k, block in enumerate(blocks):
            self.labels[block] = f"L{k}"
            if k:
                for arg in block.arguments:
                    self.var(arg)
        # Name every value first (constants are inlined), so that the text
        # order of blocks does not matter.
        for block in blocks:
            for op in block.operations:
                o = op.operation
                if o.name == "llvm.mlir.constant":
                    self.names[o.results[0]] = self.constant(op)
                elif len(o.results) == 1:
                    self.var(o.results[0], op)
                elif len(o.results) > 1:
                    raise _err(op, "ops with several results are not supported")
        for k, block in enumerate(blocks):
            if k:
                self.lines.append(f" L{k}:;")
            for op in block.operations:
                self.op(op)
        decls = [f"  {_decl(c, n)};" for c, n in self.decls]
        body = "\n".join([proto + " {"] + decls + self.lines + ["}"])
        return proto, body

    def _result_type(self, ftype_text: str) -> str:
        m = re.match(r"!llvm\.func<(.*?) \(", ftype_text)
        if not m:
            raise _err(self.fn, f"unexpected function type {ftype_text}")
        if m.group(1) == "void":
            return "void"
        # (types of the LLVM dialect print without their `!llvm.` inside `!llvm.func<>`)
        text = re.sub(r"^(ptr|struct|array)\b", r"!llvm.\1", m.group(1))
        return self.p.ctype(ir.Type.parse(text), self.fn)

    # ops -------------------------------------------------------------------
    def op(self, op) -> None:
        o = op.operation
        name = o.name
        loc = _location(o)
        if loc and loc != self.last_loc:
            self.last_loc = loc
            self.emit(f"/* {loc} */")
        if name == "llvm.mlir.constant":
            return
        if _narrow_unsupported(o):
            raise _err(o, f"integers narrower than a byte are not supported by '{name}' in the C printer")
        handler = _OPS.get(name)
        if handler is None:
            if name.startswith("llvm.intr."):
                return self.intrinsic(op, name[len("llvm.intr."):])
            raise _err(o, f"the op '{name}' is not supported by the C printer")
        handler(self, op)

    def result(self, op) -> str:
        return self.names[op.operation.results[0]]

    def constant(self, op) -> str:
        attr = op.attributes["value"]
        t = op.operation.results[0].type
        if isinstance(attr, ir.BoolAttr):
            return "true" if attr.value else "false"
        if isinstance(attr, ir.IntegerAttr) and isinstance(t, ir.IntegerType):
            return _int_literal(attr.value, t.width)
        if isinstance(attr, ir.FloatAttr) and isinstance(t, (ir.F32Type, ir.F64Type)):
            self.p.out.needs_math |= not math.isfinite(attr.value)
            return _float_literal(attr.value, isinstance(t, ir.F32Type))
        raise _err(op, f"constant {attr} of type {t} is not supported")

    # helpers for integer ops
    def _width(self, value) -> int:
        t = value.type
        if not isinstance(t, ir.IntegerType):
            raise CompileError(f"cannot export the kernel: expected an integer, found {t}")
        return t.width

    def signed(self, value) -> str:
        w = self._width(value)
        if w == 1:
            return f"(-(int32_t){self.v(value)})"
        return f"(int{w}_t){self.v(value)}"

    def wide(self, value) -> str:
        """The value as an unsigned integer at least 32 bits wide (no int promotion)."""
        w = self._width(value)
        return f"(uint32_t){self.v(value)}" if w < 32 else self.v(value)


def _binary_int(c_op: str, signed: bool = False):
    def handler(fp: _FunctionPrinter, op):
        a, b = op.operation.operands
        w = fp._width(a)
        r = fp.result(op)
        if w == 1:
            table = {"+": "^", "-": "^", "*": "&", "&": "&", "|": "|", "^": "^"}
            if c_op not in table:
                raise _err(op, f"i1 operands for '{op.operation.name}' are not supported")
            fp.emit(f"{r} = {fp.v(a)} {table[c_op]} {fp.v(b)};")
        elif signed:
            fp.emit(f"{r} = (uint{w}_t)({fp.signed(a)} {c_op} {fp.signed(b)});")
        elif w < 32:
            fp.emit(f"{r} = (uint{w}_t)({fp.wide(a)} {c_op} {fp.wide(b)});")
        else:
            fp.emit(f"{r} = {fp.v(a)} {c_op} {fp.v(b)};")
    return handler


def _shift(c_op: str, signed: bool = False):
    def handler(fp: _FunctionPrinter, op):
        a, b = op.operation.operands
        w = fp._width(a)
        if w == 1:
            raise _err(op, "shifts of i1 values are not supported")
        left = fp.signed(a) if signed else fp.wide(a)
        fp.emit(f"{fp.result(op)} = (uint{w}_t)({left} {c_op} {fp.v(b)});")
    return handler


def _binary_float(c_op: str):
    def handler(fp: _FunctionPrinter, op):
        a, b = op.operation.operands
        _check_float(op, a.type)
        fp.emit(f"{fp.result(op)} = {fp.v(a)} {c_op} {fp.v(b)};")
    return handler


def _check_float(op, t) -> str:
    if isinstance(t, ir.F32Type):
        return "f"
    if isinstance(t, ir.F64Type):
        return ""
    raise _err(op, f"floating-point type {t} is not supported")


def _frem(fp, op):
    a, b = op.operation.operands
    s = _check_float(op, a.type)
    fp.p.out.needs_math = True
    fp.emit(f"{fp.result(op)} = fmod{s}({fp.v(a)}, {fp.v(b)});")


def _fneg(fp, op):
    a = op.operation.operands[0]
    _check_float(op, a.type)
    fp.emit(f"{fp.result(op)} = -{fp.v(a)};")


def _icmp(fp, op):
    a, b = op.operation.operands
    pred = _ICMP[ir.IntegerAttr(op.attributes["predicate"]).value]
    r = fp.result(op)
    if isinstance(a.type, llvm.PointerType):
        x, y = f"(uintptr_t){fp.v(a)}", f"(uintptr_t){fp.v(b)}"
    elif pred.startswith("s"):
        x, y = fp.signed(a), fp.signed(b)
    else:
        x, y = fp.v(a), fp.v(b)
    fp.emit(f"{r} = {x} {_C_OPS[pred]} {y};")


def _fcmp(fp, op):
    a, b = op.operation.operands
    _check_float(op, a.type)
    pred = _FCMP[ir.IntegerAttr(op.attributes["predicate"]).value]
    x, y = fp.v(a), fp.v(b)
    text = {
        "false": "false", "true": "true",
        "oeq": f"{x} == {y}", "ogt": f"{x} > {y}", "oge": f"{x} >= {y}", "olt": f"{x} < {y}",
        "ole": f"{x} <= {y}", "one": f"({x} < {y} || {x} > {y})",
        "ord": f"({x} == {x} && {y} == {y})", "uno": f"({x} != {x} || {y} != {y})",
        "ueq": f"!({x} < {y} || {x} > {y})", "ugt": f"!({x} <= {y})", "uge": f"!({x} < {y})",
        "ult": f"!({x} >= {y})", "ule": f"!({x} > {y})", "une": f"{x} != {y}",
    }[pred]
    fp.emit(f"{fp.result(op)} = {text};")


def _select(fp, op):
    c, a, b = op.operation.operands
    if not isinstance(c.type, ir.IntegerType):
        raise _err(op, "vector selects are not supported")
    fp.emit(f"{fp.result(op)} = {fp.v(c)} ? {fp.v(a)} : {fp.v(b)};")


def _narrow_unsupported(o) -> bool:
    """Whether `o` has an integer of 2 to 7 bits it cannot print: only
    llvm.trunc makes one (masked), only llvm.zext to a byte or more reads one
    (the byte that holds it is zero above its width: a cast)."""
    def narrow(values):
        return any(isinstance(v.type, ir.IntegerType) and 1 < v.type.width < 8 for v in values)
    if o.name == "llvm.trunc":
        return False
    return narrow(o.results) or (o.name != "llvm.zext" and narrow(o.operands))


def _trunc(fp, op):
    a = op.operation.operands[0]
    t = op.operation.results[0].type
    r = fp.result(op)
    if t.width == 1:
        fp.emit(f"{r} = ({fp.v(a)} & 1u) != 0;")
    elif t.width < 8:
        fp.emit(f"{r} = (uint8_t)({fp.v(a)} & {(1 << t.width) - 1}u);")
    else:
        fp.emit(f"{r} = (uint{t.width}_t){fp.v(a)};")


# Conversions that are one C cast: {a} the operand, {s} it as a signed
# integer, {w} the result's width, {c} the result's C type.
_CASTS = {
    "llvm.zext": "(uint{w}_t){a}",
    "llvm.sext": "(uint{w}_t)(int{w}_t){s}",
    "llvm.sitofp": "({c}){s}",
    "llvm.uitofp": "({c}){a}",
    "llvm.fptoui": "({c}){a}",
    "llvm.ptrtoint": "(uint{w}_t)(uintptr_t){a}",
    "llvm.inttoptr": "({c})(uintptr_t){a}",
}


def _cast(fp, op):
    a = op.operation.operands[0]
    t = op.operation.results[0].type
    fmt = _CASTS[op.operation.name]
    fields = {"a": fp.v(a), "w": getattr(t, "width", 0)}
    if "{s}" in fmt:
        fields["s"] = fp.signed(a)
    if "{c}" in fmt:
        fields["c"] = fp.p.ctype(t, op)
    fp.emit(f"{fp.result(op)} = {fmt.format(**fields)};")


def _fptosi(fp, op):
    a = op.operation.operands[0]
    t = op.operation.results[0].type
    if t.width == 1:
        fp.emit(f"{fp.result(op)} = {fp.v(a)} != 0;")
    else:
        fp.emit(f"{fp.result(op)} = (uint{t.width}_t)(int{t.width}_t){fp.v(a)};")


def _fpcast(fp, op):
    a = op.operation.operands[0]
    t = op.operation.results[0].type
    _check_float(op, a.type)
    fp.emit(f"{fp.result(op)} = ({fp.p.ctype(t, op)}){fp.v(a)};")


def _bitcast(fp, op):
    a = op.operation.operands[0]
    t = op.operation.results[0].type
    src, dst = fp.p.ctype(a.type, op), fp.p.ctype(t, op)
    r = fp.result(op)
    if src == dst or (isinstance(a.type, llvm.PointerType) and isinstance(t, llvm.PointerType)):
        fp.emit(f"{r} = ({dst}){fp.v(a)};")
        return
    pairs = {("float", "uint32_t"), ("uint32_t", "float"), ("double", "uint64_t"),
             ("uint64_t", "double")}
    if (src, dst) not in pairs:
        raise _err(op, f"bitcast from {a.type} to {t} is not supported")
    fp.emit(f"{{ union {{ {src} from; {dst} to; }} u; u.from = {fp.v(a)}; {r} = u.to; }}")


def _addrspacecast(fp, op):
    raise _err(op, "address space casts between WRAM and MRAM have no DPU equivalent")


def _alloca(fp, op):
    o = op.operation
    size = o.operands[0]
    owner = getattr(size.owner, "operation", size.owner)
    if not (isinstance(owner, ir.Operation) and owner.name == "llvm.mlir.constant"):
        raise _err(op, "an alloca of a dynamic size is not supported (static WRAM buffers only)")
    count = ir.IntegerAttr(owner.attributes["value"]).value
    elem = ir.TypeAttr(o.attributes["elem_type"]).value
    align = ir.IntegerAttr(o.attributes["alignment"]).value if "alignment" in o.attributes else 8
    c = fp.p.ctype(elem, op)
    ref = fp.p.buffer(c, max(count, 1), align, max(count, 1) * _type_bytes(elem))
    fp.emit(f"{fp.result(op)} = (void *){ref};")


def _mem_ptr_type(fp, ptr, ctype: str, op) -> str:
    space = ptr.type.address_space
    if space == abi.MRAM_ADDRSPACE:
        return f"__mram_ptr {ctype} *"
    if space != abi.WRAM_ADDRSPACE:
        raise _err(op, f"memory access in address space {space}")
    return f"{ctype} *"


def _volatile(op) -> str:
    """"volatile " for a volatile or atomic load / store (see the module's doc)."""
    o = op.operation
    atomic = "ordering" in o.attributes and ir.IntegerAttr(o.attributes["ordering"]).value != 0
    return "volatile " if atomic or "volatile_" in o.attributes else ""


def _load(fp, op):
    p = op.operation.operands[0]
    t = op.operation.results[0].type
    c = _volatile(op) + fp.p.ctype(t, op)
    fp.emit(f"{fp.result(op)} = *({_mem_ptr_type(fp, p, c, op)}){fp.v(p)};")


def _store(fp, op):
    v, p = op.operation.operands
    c = _volatile(op) + fp.p.ctype(v.type, op)
    fp.emit(f"*({_mem_ptr_type(fp, p, c, op)}){fp.v(p)} = {fp.v(v)};")


def _gep(fp, op):
    o = op.operation
    base = o.operands[0]
    dynamic = list(o.operands[1:])
    raw = list(ir.DenseI32ArrayAttr(o.attributes["rawConstantIndices"]))
    elem = ir.TypeAttr(o.attributes["elem_type"]).value
    if not isinstance(base.type, llvm.PointerType):
        raise _err(op, "vector getelementptr is not supported")
    terms = []
    t = None
    for k, index in enumerate(raw):
        if index == -2**31:
            value = dynamic.pop(0)
            idx, const = f"(intptr_t){fp.signed(value)}", None
        else:
            idx, const = None, index
        if k == 0:
            t = elem
            size = f"sizeof({fp.p.ctype(elem, op)})"
        elif isinstance(t, llvm.StructType):
            if const is None:
                raise _err(op, "a dynamic struct field index")
            sname = fp.p.ctype(t, op)
            terms.append(f"offsetof({sname}, f{const})")
            t = list(t.body)[const]
            continue
        elif str(t).startswith("!llvm.array<"):
            arr = fp.p.ctype(t, op)
            terms.append(f"offsetof({arr}, a)")
            t = _array_parts(t)[1]
            size = f"sizeof({fp.p.ctype(t, op)})"
        else:
            raise _err(op, f"cannot index into {t}")
        if const == 0:
            continue
        terms.append(f"{idx} * (intptr_t){size}" if const is None else f"(intptr_t){const} * (intptr_t){size}")
    space = "__mram_ptr " if base.type.address_space == abi.MRAM_ADDRSPACE else ""
    rc = fp.p.ctype(o.results[0].type, op)
    offset = " + ".join(terms) or "0"
    fp.emit(f"{fp.result(op)} = ({rc})(({space}char *){fp.v(base)} + ({offset}));")


def _path(t, position: list[int], fp, op) -> str:
    parts = []
    for k in position:
        if isinstance(t, llvm.StructType):
            fp.p.ctype(t, op)
            parts.append(f".f{k}")
            t = list(t.body)[k]
        elif str(t).startswith("!llvm.array<"):
            parts.append(f".a[{k}]")
            t = _array_parts(t)[1]
        else:
            raise _err(op, f"cannot take element {k} of {t}")
    return "".join(parts)


def _extractvalue(fp, op):
    o = op.operation
    agg = o.operands[0]
    position = list(ir.DenseI64ArrayAttr(o.attributes["position"]))
    fp.emit(f"{fp.result(op)} = {fp.v(agg)}{_path(agg.type, position, fp, op)};")


def _insertvalue(fp, op):
    o = op.operation
    agg, value = o.operands[0], o.operands[1]
    position = list(ir.DenseI64ArrayAttr(o.attributes["position"]))
    r = fp.result(op)
    fp.emit(f"{r} = {fp.v(agg)}; {r}{_path(agg.type, position, fp, op)} = {fp.v(value)};")


def _undef(fp, op):
    t = op.operation.results[0].type
    c = fp.p.ctype(t, op)
    r = fp.result(op)
    if isinstance(t, llvm.StructType) or str(t).startswith("!llvm.array<"):
        fp.emit(f"{r} = ({c}){{0}};")
    else:
        fp.emit(f"{r} = ({c})0;")


def _addressof(fp, op):
    symbol = ir.FlatSymbolRefAttr(op.attributes["global_name"]).value
    fp.emit(f"{fp.result(op)} = {fp.p.global_ref(symbol, op)};")


def _branch_to(fp, block, values, op) -> str:
    """Statements assigning `values` to `block`'s arguments, then its goto."""
    args = list(block.arguments)
    label = fp.labels[block]
    if not args:
        return f"goto {label};"
    targets = [fp.v(a) for a in args]
    sources = [fp.v(v) for v in values]
    pairs = [(t, s) for t, s in zip(targets, sources) if t != s]
    if not pairs:
        return f"goto {label};"
    written = {t for t, _ in pairs}
    if any(s in written for _, s in pairs):
        types = {fp.v(a): fp.p.ctype(a.type, op) for a in args}
        tmp = " ".join(f"{_decl(types[t], f't{k}')} = {s};" for k, (t, s) in enumerate(pairs))
        assign = " ".join(f"{t} = t{k};" for k, (t, _) in enumerate(pairs))
        return f"{{ {tmp} {assign} }} goto {label};"
    return " ".join(f"{t} = {s};" for t, s in pairs) + f" goto {label};"


def _br(fp, op):
    o = op.operation
    fp.emit(_branch_to(fp, o.successors[0], list(o.operands), op))


def _cond_br(fp, op):
    o = op.operation
    cond = o.operands[0]
    t = _branch_to(fp, o.successors[0], list(op.trueDestOperands), op)
    f = _branch_to(fp, o.successors[1], list(op.falseDestOperands), op)
    fp.emit(f"if ({fp.v(cond)}) {{ {t} }} else {{ {f} }}")


def _switch(fp, op):
    o = op.operation
    value = o.operands[0]
    segments = list(ir.DenseI32ArrayAttr(o.attributes["case_operand_segments"]))
    sizes = list(ir.DenseI32ArrayAttr(o.attributes["operandSegmentSizes"]))
    operands = list(o.operands)
    default_ops = operands[1:1 + sizes[1]]
    case_ops = operands[1 + sizes[1]:]
    cases = [int(x) for x in re.findall(r"-?\d+", str(o.attributes["case_values"]).split(":")[0])] \
        if "case_values" in o.attributes else []
    w = fp._width(value)
    lines = [f"switch ({fp.v(value)}) {{"]
    k = 0
    for n, (case, count) in enumerate(zip(cases, segments)):
        vals = case_ops[k:k + count]
        k += count
        lines.append(f"case {_int_literal(case, w)}: {_branch_to(fp, o.successors[n + 1], vals, op)}")
    lines.append(f"default: {_branch_to(fp, o.successors[0], default_ops, op)}")
    lines.append("}")
    fp.emit(" ".join(lines))


def _return(fp, op):
    o = op.operation
    if len(o.operands):
        fp.emit(f"return {fp.v(o.operands[0])};")
    else:
        fp.emit("return;")


def _unreachable(fp, op):
    fp.emit("__builtin_unreachable();")


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


def _nop(fp, op):
    pass


def _intrinsic(self: _FunctionPrinter, op, name: str) -> None:
    o = op.operation
    args = list(o.operands)
    if name in ("memcpy", "memmove"):
        dst, src, n = args[:3]
        for p in (dst, src):
            if p.type.address_space != abi.WRAM_ADDRSPACE:
                raise _err(op, f"llvm.intr.{name} on MRAM (use DMA)")
        fn = "edsl_copy" if name == "memcpy" else "edsl_move"
        self.emit(f"{fn}({self.v(dst)}, {self.v(src)}, (uint32_t){self.v(n)});")
        return
    if name == "memset":
        dst, val, n = args[:3]
        if dst.type.address_space != abi.WRAM_ADDRSPACE:
            raise _err(op, "llvm.intr.memset on MRAM")
        self.emit(f"edsl_fill({self.v(dst)}, {self.v(val)}, (uint32_t){self.v(n)});")
        return
    if name in ("lifetime.start", "lifetime.end", "assume", "stackrestore", "experimental.noalias.scope.decl"):
        return
    if name == "stacksave":
        self.emit(f"{self.result(op)} = (void *)0;")
        return
    if name == "expect":
        self.emit(f"{self.result(op)} = {self.v(args[0])};")
        return
    if name in _MATH1 or name in _MATH2 or name in ("fma", "fmuladd", "maximum", "minimum"):
        s = _check_float(op, args[0].type)
        vals = [self.v(a) for a in args]
        r = self.result(op)
        if name == "fmuladd":
            self.emit(f"{r} = {vals[0]} * {vals[1]} + {vals[2]};")
            return
        self.p.out.needs_math = True
        if name == "fma":
            self.emit(f"{r} = fma{s}({', '.join(vals)});")
        elif name in ("maximum", "minimum"):
            self.emit(f"{r} = edsl_{name}{s}({vals[0]}, {vals[1]});")
        elif name in _MATH1:
            self.emit(f"{r} = {_MATH1[name]}{s}({vals[0]});")
        else:
            self.emit(f"{r} = {_MATH2[name]}{s}({vals[0]}, {vals[1]});")
        return
    if name in ("smax", "smin", "umax", "umin"):
        a, b = args
        r = self.result(op)
        x, y = (self.signed(a), self.signed(b)) if name[0] == "s" else (self.v(a), self.v(b))
        cmp = ">" if name.endswith("max") else "<"
        self.emit(f"{r} = {x} {cmp} {y} ? {self.v(a)} : {self.v(b)};")
        return
    if name == "abs":
        a = args[0]
        w = self._width(a)
        self.emit(f"{self.result(op)} = {self.signed(a)} < 0 ? (uint{w}_t)(0u - {self.v(a)}) : {self.v(a)};")
        return
    if name in ("ctpop", "ctlz", "cttz"):
        a = args[0]
        w = self._width(a)
        if w not in (32, 64):
            raise _err(op, f"llvm.intr.{name} on i{w}")
        suffix = "" if w == 32 else "ll"
        r = self.result(op)
        if name == "ctpop":
            self.emit(f"{r} = (uint{w}_t)__builtin_popcount{suffix}({self.v(a)});")
        else:
            fn = "clz" if name == "ctlz" else "ctz"
            self.emit(f"{r} = {self.v(a)} ? (uint{w}_t)__builtin_{fn}{suffix}({self.v(a)}) : {w}u;")
        return
    raise _err(op, f"the intrinsic 'llvm.intr.{name}' is not supported by the C printer")


_FunctionPrinter.intrinsic = _intrinsic

_OPS = {
    "llvm.add": _binary_int("+"), "llvm.sub": _binary_int("-"), "llvm.mul": _binary_int("*"),
    "llvm.and": _binary_int("&"), "llvm.or": _binary_int("|"), "llvm.xor": _binary_int("^"),
    "llvm.udiv": _binary_int("/"), "llvm.urem": _binary_int("%"),
    "llvm.sdiv": _binary_int("/", signed=True), "llvm.srem": _binary_int("%", signed=True),
    "llvm.shl": _shift("<<"), "llvm.lshr": _shift(">>"), "llvm.ashr": _shift(">>", signed=True),
    "llvm.fadd": _binary_float("+"), "llvm.fsub": _binary_float("-"),
    "llvm.fmul": _binary_float("*"), "llvm.fdiv": _binary_float("/"),
    "llvm.frem": _frem, "llvm.fneg": _fneg,
    "llvm.icmp": _icmp, "llvm.fcmp": _fcmp, "llvm.select": _select,
    "llvm.trunc": _trunc, **{name: _cast for name in _CASTS}, "llvm.fptosi": _fptosi,
    "llvm.fpext": _fpcast, "llvm.fptrunc": _fpcast, "llvm.bitcast": _bitcast,
    "llvm.addrspacecast": _addrspacecast,
    "llvm.alloca": _alloca, "llvm.load": _load, "llvm.store": _store,
    "llvm.getelementptr": _gep, "llvm.extractvalue": _extractvalue,
    "llvm.insertvalue": _insertvalue, "llvm.mlir.undef": _undef, "llvm.mlir.poison": _undef,
    "llvm.mlir.zero": _undef, "llvm.mlir.addressof": _addressof,
    "llvm.br": _br, "llvm.cond_br": _cond_br, "llvm.switch": _switch,
    "llvm.return": _return, "llvm.unreachable": _unreachable, "llvm.call": _call,
}


def print_module(module: ir.Module, roots: list[str], *, all_tasklets: bool = True) -> CProgram:
    """Print the functions reachable from `roots` (in a context owning `module`)."""
    with module.context:
        return Printer(module, all_tasklets=all_tasklets).print_from(roots)
