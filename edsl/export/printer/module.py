"""The module walk of the C printer: the functions reachable from the roots
(`print_module`), each printed as one C function (`_FunctionPrinter`), with
the C names, types, WRAM globals and buffers they need (`Printer`, which
fills a `CProgram`).

- every SSA value is a variable declared at the top of its function, named
  before any op is printed so that the text order of blocks does not
  matter; constants are printed inline (floats as exact hex literals);
  blocks become labels; the source line of an op (its innermost user
  location) is a comment before its statement when it changes;
- MLIR symbols become C names that keep clear of the SDK's, the program's
  (`PROGRAM_NAMES`) and C's keywords (`_RESERVED`);
- LLVM struct types become C structs (arrays wrapped in a struct so that
  they can be values); globals are static WRAM variables.

Separate from the op handlers (`ops`) and the calls (`intrinsics`): this
part holds the printer's state and decides what is printed in which order;
they write one statement each through it.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import llvm

from ...target import dpu as abi
from ...base.errors import CompileError
from .common import _array_parts, _decl, _err, _float_literal, _int_literal, _type_bytes, source_line
from .intrinsics import HEXFLOAT, PRIMITIVES, PROGRAM_NAMES, _c_literal, intrinsic
from .ops import _OPS, _narrow_unsupported


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
    needs_stdio: bool = False                             # printf (stdio.h and its log buffer)
    needs_hexfloat: bool = False                          # edsl_hexfloat (printf's %a)
    static_wram_bytes: int = 0                            # alloca buffers (for one tasklet)
    global_wram_bytes: int = 0                            # WRAM globals (shared)


class Printer:
    """Prints the functions reachable from `roots` of an LLVM-dialect module.
    `all_tasklets`: every tasklet runs them (as the exported program's do), so
    each alloca buffer is one per tasklet."""

    def __init__(self, module: ir.Module, *, all_tasklets: bool = True, foreign: frozenset = frozenset()):
        self.module = module
        self.foreign = foreign         # functions of C sources compiled beside the program (by their C names)
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
        if self.out.needs_hexfloat:
            self.out.functions.insert(0, HEXFLOAT)
        return self.out

    def buffer(self, ctype: str, count: int, align: int, nbytes: int) -> str:
        name = f"edsl_wram{self._buffers}"
        self._buffers += 1
        attr = "__dma_aligned" if align <= 8 else f"__attribute__((aligned({align})))"
        dims = f"[NR_TASKLETS][{count}]" if self._all_tasklets else f"[{count}]"
        self.out.globals.append(f"static {_decl(ctype, name + dims)} {attr};")
        self.out.static_wram_bytes += nbytes
        return f"{name}[me()]" if self._all_tasklets else name

    def foreign_name(self, symbol: str, op) -> str:
        """The C name of `symbol`, a function of a C source compiled beside
        the program, declared by a prototype from its declaration here."""
        if symbol not in self.out.names:
            if symbol in _RESERVED or symbol in self.out.names.values():
                raise _err(op, f"the C function '{symbol}' has the name of one of the DPU program's; rename it")
            self.out.names[symbol] = symbol
            # (its parameters are numbers and pointers: the type's text splits at its commas)
            text = str(ir.TypeAttr(self.funcs[symbol].attributes["function_type"]).value)
            m = re.match(r"!llvm\.func<(.*?) \((.*)\)>$", text)
            ret = "void" if m[1] == "void" else self.ctype(_llvm_type(m[1]), op)
            params = [self.ctype(_llvm_type(t), op) for t in m[2].split(", ") if t] or ["void"]
            self.out.prototypes.insert(0, f"extern {_decl(ret, symbol)}({', '.join(params)});")
        return symbol

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
                c = self.ctype(t, g)
                if isinstance(elem, ir.IntegerType) and elem.width == 8:
                    # bytes as a C string (the format strings and prefixes of tl.device_print)
                    init = _c_literal(data[:n].rstrip(b"\0").decode("latin-1"))
                else:
                    init = ", ".join(str(b) for b in data[:n])
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


def _llvm_type(text: str) -> ir.Type:
    """A type as `!llvm.func<>` prints it (LLVM's own without their `!llvm.`)."""
    return ir.Type.parse(re.sub(r"^(ptr|struct|array)\b", r"!llvm.\1", text))


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
        return self.p.ctype(_llvm_type(m.group(1)), self.fn)

    # ops -------------------------------------------------------------------
    def op(self, op) -> None:
        o = op.operation
        name = o.name
        loc = source_line(o)
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
                return intrinsic(self, op, name[len("llvm.intr."):])
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
    def width(self, value) -> int:
        t = value.type
        if not isinstance(t, ir.IntegerType):
            raise CompileError(f"cannot export the kernel: expected an integer, found {t}")
        return t.width

    def signed(self, value) -> str:
        w = self.width(value)
        if w == 1:
            return f"(-(int32_t){self.v(value)})"
        return f"(int{w}_t){self.v(value)}"

    def wide(self, value) -> str:
        """The value as an unsigned integer at least 32 bits wide (no int promotion)."""
        w = self.width(value)
        return f"(uint32_t){self.v(value)}" if w < 32 else self.v(value)


def print_module(module: ir.Module, roots: list[str], *, all_tasklets: bool = True,
                 foreign: frozenset = frozenset()) -> CProgram:
    """Print the functions reachable from `roots` (in a context owning `module`);
    `foreign`: the functions of C sources compiled beside the program, which
    they may call."""
    with module.context:
        return Printer(module, all_tasklets=all_tasklets, foreign=foreign).print_from(roots)
