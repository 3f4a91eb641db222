"""The AST code generator: a Python function -> a `func.func` in an MLIR module.

It walks syntax only; typing and promotion live in `semantic`, callable
functions in `intrinsics`. Values are static (Python objects, evaluated by
Python at compile time, as in TLE-Raw's builder style) or dynamic (`ir.Value`).
Calls to anything else run in Python at compile time, so MLIR-builder code
(`arith.addf(a, b)`, `for i in scf.for_(...)`, `with ir.InsertionPoint(b)`)
works unchanged.

Python control flow on dynamic values becomes structured `scf` ops. Scalar
variables that live across such control flow are kept in slots (0-d
`memref.alloca`s) that `mem2reg` turns back into SSA values once `scf` is
lowered to `cf` (upstream mem2reg does not cross `scf` regions). A slot's type
is found by compiling the construct once into a scratch region and looking at
what is assigned (Triton types loop-carried values the same way). `break` and
`continue` set flags that guard the rest of the loop body.
"""
from __future__ import annotations

import ast
import builtins
import operator
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, func, llvm, memref, scf

from ..target import dpu as abi
from ..base.errors import CompileError, DpuError, EdslError, SourceLoc, TypeMismatchError
from . import intrinsics
from . import semantic as S
from .signature import FunctionInfo
from ..target.machines import DPU, NVPTX, Target


@dataclass
class Slot:
    """A mutable scalar variable of `type`: a 0-d alloca (of i8 for i1: memref
    lowering does not handle sub-byte element types)."""
    ref: ir.Value
    type: ir.Type

    def load(self) -> ir.Value:
        v = memref.load(self.ref, [])
        return S.convert(v, self.type) if v.type != self.type else v

    def store(self, value) -> None:
        stored = ir.MemRefType(self.ref.type).element_type
        memref.store(S.convert(S.convert(value, self.type), stored), self.ref, [])


@dataclass
class ModuleState:
    """What the functions of one module share: source sites, WRAM budget,
    runtime declarations, emitted callees."""
    module: ir.Module
    sites: dict = field(default_factory=dict)         # site code -> SourceLoc
    wram_bytes: int = 0
    wram_buffers: list = field(default_factory=list)  # (symbol, bytes, SourceLoc)
    declared: set = field(default_factory=set)
    callees: dict = field(default_factory=dict)       # FunctionInfo.key -> symbol
    symbols: set = field(default_factory=set)
    bounds_check: bool = False                          # check every subscript at run time
    target: Target = DPU
    strings: dict = field(default_factory=dict)         # text -> symbol of a constant string
    generating: list = field(default_factory=list)      # (key, name) of the functions being compiled

    def unique(self, name: str) -> str:
        n, k = name, 0
        while n in self.symbols:
            k += 1
            n = f"{name}_{k}"
        self.symbols.add(n)
        return n


# Python's syntax as its users name it, for errors (the rest by their `ast` names).
_SYNTAX_NAMES = {
    "JoinedStr": "an f-string", "FormattedValue": "an f-string", "Lambda": "a lambda",
    "ListComp": "a list comprehension", "SetComp": "a set comprehension", "DictComp": "a dict comprehension",
    "GeneratorExp": "a generator expression", "Dict": "a dict display", "Set": "a set display",
    "Try": "try", "TryStar": "try", "With": "with", "AsyncWith": "async with", "Raise": "raise",
    "ClassDef": "a class definition", "FunctionDef": "a nested function definition",
    "AsyncFunctionDef": "a nested function definition", "Yield": "yield", "YieldFrom": "yield from",
    "Await": "await", "Global": "global", "Nonlocal": "nonlocal", "Delete": "del", "Import": "import",
    "ImportFrom": "import", "Match": "match", "NamedExpr": "an assignment expression (:=)",
    "Starred": "a starred expression", "Slice": "a slice",
}

# Ops whose result views their first operand's memory.
_VIEW_OPS = frozenset({"memref.cast", "memref.subview", "memref.reinterpret_cast", "memref.expand_shape",
                       "memref.collapse_shape", "memref.view", "memref.memory_space_cast", "memref.transpose",
                       "memref.assume_alignment"})
# Ops that write memory, with the operand that is written.
_WRITTEN_OPERAND = {"memref.store": 1, "memref.atomic_rmw": 1, "memref.generic_atomic_rmw": 0,
                    "memref.copy": 1, "vector.store": 1, "vector.maskedstore": 0, "vector.transfer_write": 1,
                    "vector.scatter": 0, "vector.compressstore": 0}


class _LoopCtx:
    def __init__(self, broke: Slot | None, continued: Slot | None):
        self.broke, self.continued = broke, continued
        self.exits: list[set] = []  # the unassigned variables at each `break`


class _StaticLoop:
    """A loop over a Python iterable, unrolled at compile time."""


class _StaticBreak(Exception):
    pass


class _StaticContinue(Exception):
    pass


_PY_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.MatMult: operator.matmul,
}
_PY_CMPOPS = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
_PY_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Invert: operator.invert,
             ast.Not: operator.not_}


def _assigned_names(nodes) -> set[str]:
    out = set()
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                out.add(sub.id)
    return out


def _jumps(stmt) -> bool:
    """Does `stmt` contain a break/continue of the enclosing loop?"""
    if isinstance(stmt, (ast.Break, ast.Continue)):
        return True
    if isinstance(stmt, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return False
    return any(_jumps(c) for c in ast.iter_child_nodes(stmt) if isinstance(c, ast.stmt))


def _loop_jumps(body) -> tuple[bool, bool]:
    brk = cont = False
    stack = list(body)
    while stack:
        s = stack.pop()
        if isinstance(s, ast.Break):
            brk = True
        elif isinstance(s, ast.Continue):
            cont = True
        elif not isinstance(s, (ast.For, ast.While, ast.FunctionDef, ast.ClassDef)):
            stack.extend(c for c in ast.iter_child_nodes(s) if isinstance(c, ast.stmt))
    return brk, cont


class CodeGenerator(ast.NodeVisitor):
    """Compiles one Python function into a func.func of `state.module`."""

    def __init__(self, info: FunctionInfo, state: ModuleState, symbol: str, private: bool = False):
        self.info = info
        self.state = state
        self.target = state.target
        self.symbol = symbol
        self.private = private
        self.env: dict[str, object] = {}
        self.inputs: dict[int, str] = {}     # entry-block argument number -> name of a never-written Input
        self.loops: list = []
        self.observed: dict | None = None
        self.dry_slots: list | None = None
        # Variables with a slot that some path to here has not assigned: reading
        # one is a compile error (its slot would hold garbage), as in Triton.
        self.unset: set[str] = set()
        self._locs: list[SourceLoc] = []
        # names read at each source position, for "is this variable used later?"
        self._reads = [((n.lineno, n.col_offset), n.id) for n in ast.walk(info.tree)
                       if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]

    # --- entry ------------------------------------------------------------------------

    def generate(self) -> func.FuncOp:
        self.state.generating.append((self.info.key, self.info.name))
        try:
            return self._generate()
        finally:
            self.state.generating.pop()

    def _generate(self) -> func.FuncOp:
        info = self.info
        fdef = info.tree
        with self._at(fdef):
            types = [p.mlir_type for p in info.params]
            results = [p.mlir_type for p in info.params if p.param.is_inout]
            ftype = ir.FunctionType.get(types, results)
            with ir.InsertionPoint(self.state.module.body):
                fn = func.FuncOp(self.symbol, ftype, visibility="private" if self.private else None)
            self.entry = fn.add_entry_block()
            for k, (p, arg) in enumerate(zip(info.params, self.entry.arguments)):
                self.env[p.name] = arg
                # Input tiles are values; a memref in the memory that pointers
                # point to (MRAM, global memory) is written through, as in C.
                if not p.param.is_inout and S.is_memref(arg.type) and \
                        abi.memory_space(arg.type) != self.target.pointer_space:
                    self.inputs[k] = p.name
            body = fdef.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                body = body[1:]  # docstring
            if body and isinstance(body[-1], ast.Return):
                self._check_return(body[-1])
                body = body[:-1]
            with ir.InsertionPoint(self.entry):
                self.compile_block(body)
        end = SourceLoc(info.filename, fdef.end_lineno or fdef.lineno, 0)
        with ir.Location.file(end.filename, end.lineno, 1), ir.InsertionPoint(self.entry):
            func.ReturnOp([a for p, a in zip(info.params, self.entry.arguments) if p.param.is_inout])
        self._check_inputs_unwritten(fn)
        return fn

    def _check_return(self, node: ast.Return) -> None:
        # (`return y` of a parameter: checked with the signature, which made it InOut)
        if node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None) \
                and not self.info.returns:
            raise CompileError("an edsl function returns its InOut parameters; `return` takes no value",
                               self.loc(node))

    # --- locations and errors -----------------------------------------------------------

    def loc(self, node) -> SourceLoc:
        return SourceLoc(self.info.filename, node.lineno, node.col_offset)

    def current_loc(self) -> SourceLoc | None:
        return self._locs[-1] if self._locs else None

    class _At:
        def __init__(self, gen, node):
            self.gen, self.loc = gen, gen.loc(node)

        def __enter__(self):
            self.gen._locs.append(self.loc)
            self.mlir_loc = ir.Location.file(self.loc.filename, self.loc.lineno, self.loc.col + 1)
            self.mlir_loc.__enter__()

        def __exit__(self, et, ev, tb):
            self.mlir_loc.__exit__(et, ev, tb)
            self.gen._locs.pop()
            if ev is None or isinstance(ev, (_StaticBreak, _StaticContinue)):
                return False
            if isinstance(ev, EdslError):
                if ev.loc is None:
                    raise type(ev)(ev.message, self.loc) from None
                return False
            raise CompileError(f"{type(ev).__name__}: {ev}", self.loc) from ev

    def _at(self, node):
        return self._At(self, node)

    def visit(self, node):
        if hasattr(node, "lineno"):
            with self._at(node):
                return super().visit(node)
        return super().visit(node)

    def generic_visit(self, node):
        what = _SYNTAX_NAMES.get(type(node).__name__, type(node).__name__)
        raise CompileError(f"unsupported Python syntax in an edsl function: {what}", self.current_loc())

    # --- Input parameters are never written ------------------------------------------

    def input_written(self, memref_value) -> str | None:
        """The name of the Input parameter that `memref_value` is (or views), or None."""
        v = memref_value
        while isinstance(v.owner, ir.OpView) and v.owner.operation.name in _VIEW_OPS:
            v = v.owner.operands[0]
        if isinstance(v, ir.BlockArgument) and v.owner == self.entry:
            return self.inputs.get(v.arg_number)
        return None

    def check_writable(self, memref_value, writer: str, loc: SourceLoc | None = None) -> None:
        """A CompileError at `loc` (the current line) if `writer` would write an Input parameter."""
        name = self.input_written(memref_value)
        if name is not None:
            raise CompileError(f"{name} is Input; {writer} writes it (declare it InOut)", loc or self.current_loc())

    def _check_inputs_unwritten(self, fn: func.FuncOp) -> None:
        """Every memory write of the function's body, subscripts and
        builder-style ops alike, checked against the Input parameters (calls
        and DMAs are checked where they are made)."""
        writes = []

        def visit(op):
            if op.name in _WRITTEN_OPERAND:
                writes.append(op)
            return ir.WalkResult.ADVANCE
        fn.operation.walk(visit)
        for op in writes:
            loc = op.location
            at = SourceLoc(loc.filename, loc.start_line, loc.start_col - 1) if loc.is_a_file() else None
            what = "this assignment" if op.name == "memref.store" else op.name
            self.check_writable(op.operands[_WRITTEN_OPERAND[op.name]], what, at)

    # --- services for intrinsics ------------------------------------------------------

    def site(self) -> int:
        """The check-site code of the current source line (`SourceLoc.site`),
        passed to run-time checks so that their errors name it."""
        loc = self.current_loc()
        self.state.sites[loc.site] = loc
        return loc.site

    def runtime_call(self, symbol: str, args: list, results: list):
        if symbol not in self.state.declared:
            self.state.declared.add(symbol)
            with ir.InsertionPoint.at_block_begin(self.state.module.body):
                func.FuncOp(symbol, ir.FunctionType.get([a.type for a in args], results),
                            visibility="private")
        call = func.CallOp(results, ir.FlatSymbolRefAttr.get(symbol), args)
        return call.results[0] if results else None

    def report_failure(self, dpu_symbol: str, what: str) -> None:
        """Stop with an error naming the current line: on the DPU, the runtime's
        check-failure call `dpu_symbol` (the launch raises at that line); on a
        GPU, CUDA's `__assertfail`, as `assert` in CUDA C++ (the kernel stops and
        prints `what` with the file and line; the host sees a device-side assert)."""
        if self.target is not NVPTX:
            self.runtime_call(dpu_symbol, [S.constant(self.site(), S.int_type(64))], [])
            return
        loc = self.current_loc()
        args = [self.string_constant(f"{loc}: {what}"), self.string_constant(loc.filename),
                S.constant(loc.lineno, S.int_type(32)), self.string_constant(self.info.name),
                S.constant(1, S.int_type(64))]
        self.runtime_call("__assertfail", args, [])

    def string_constant(self, text: str) -> ir.Value:
        """The address of a constant NUL-terminated string (one global per text)."""
        st = self.state
        name = st.strings.get(text)
        data = text.encode() + b"\0"
        if name is None:
            name = st.strings[text] = st.unique("__edsl_str")
            with ir.InsertionPoint.at_block_begin(st.module.body):
                llvm.GlobalOp(ir.Type.parse(f"!llvm.array<{len(data)} x i8>"), name,
                              ir.Attribute.parse("#llvm.linkage<internal>"), constant=True,
                              value=ir.StringAttr.get(data))
        return llvm.AddressOfOp(ir.Type.parse("!llvm.ptr"), name).result

    def wram_buffer(self, t: ir.MemRefType, nbytes: int) -> ir.Value:
        st = self.state
        st.wram_bytes += nbytes
        name = st.unique(f"__wram_{self.symbol}")
        st.wram_buffers.append((name, nbytes, self.current_loc()))
        if st.wram_bytes > abi.WRAM_BYTES:
            largest = sorted(st.wram_buffers, key=lambda b: -b[1])[:3]
            detail = ", ".join(f"{b} bytes at line {loc.lineno}" for _, b, loc in largest)
            raise DpuError(f"WRAM overflow: {st.wram_bytes} bytes of buffers exceed the "
                           f"{abi.WRAM_BYTES} bytes of a DPU (largest: {detail})", self.current_loc())
        with ir.InsertionPoint(st.module.body):
            memref.GlobalOp(name, ir.TypeAttr.get(t), sym_visibility="private",
                            initial_value=ir.UnitAttr.get(), alignment=abi.DMA_ALIGN)
        if self.dry_slots is not None:
            self.dry_slots.append(("global", name))
        return memref.get_global(t, name)

    # --- variables ------------------------------------------------------------------------

    def lookup(self, name: str, node):
        if name in self.env:
            v = self.env[name]
            if name in self.unset:
                raise CompileError(f"variable {name!r} is not assigned on every path to this use: "
                                   f"give it a value before the `if` or loop that assigns it", self.loc(node))
            return v.load() if isinstance(v, Slot) else v
        info = self.info
        if name in info.closure:
            return info.closure[name]
        if name in info.globals:
            return info.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        if name == info.name:  # a nested function naming itself: its cell was empty when decorated
            raise CompileError(f"recursion is not supported: {name}() calls itself", self.loc(node))
        raise CompileError(f"name {name!r} is not defined", self.loc(node))

    def assign(self, name: str, value) -> None:
        if self.observed is not None and name in self.observed:
            self.observed[name].append(value.type if isinstance(value, ir.Value) else value)
        cur = self.env.get(name)
        self.unset.discard(name)
        if isinstance(cur, Slot):
            value = S.val(value)
            if not (S.is_static(value) or (isinstance(value, ir.Value) and S.is_scalar(value.type))):
                raise TypeMismatchError(
                    f"variable {name!r} holds a {cur.type} across control flow and cannot become "
                    f"a {intrinsics.type_name(value)}")
            cur.store(value)
            return
        self.env[name] = value

    def _new_slot(self, t: ir.Type) -> Slot:
        storage = S.int_type(8) if t == S.i1() else t
        with ir.InsertionPoint.at_block_begin(self.entry):
            ref = memref.alloca(ir.MemRefType.get([], storage), [], [])
        if self.dry_slots is not None:
            self.dry_slots.append(("slot", ref))
        return Slot(ref, t)

    def _read_later(self, node) -> set[str]:
        end = (node.end_lineno, node.end_col_offset)
        return {name for pos, name in self._reads if pos > end}

    def _slots_for(self, node, body_nodes, emit) -> None:
        """Give a slot to every scalar variable that a dynamic construct assigns
        and that outlives one pass through it."""
        assigned = _assigned_names(body_nodes)
        if isinstance(node, ast.For):
            assigned -= _assigned_names([node.target])
        later = self._read_later(node)
        need = []
        for name in sorted(assigned):
            cur = self.env.get(name)
            if isinstance(cur, Slot):
                continue
            if name in self.env:
                if S.is_static(cur) or (isinstance(cur, ir.Value) and S.is_scalar(cur.type)):
                    need.append(name)
            elif name in later:
                need.append(name)
        if not need:
            return
        seen = self._dry_run(emit, need)
        for name in need:
            kinds = list(seen[name])
            if name in self.env:
                kinds.insert(0, self.env[name])
            scalar = [k for k in kinds if S.is_static(k) or (isinstance(k, ir.Type) and S.is_scalar(k))
                      or (isinstance(k, ir.Value) and S.is_scalar(k.type))]
            if len(scalar) != len(kinds):
                if name in self.env:
                    raise TypeMismatchError(
                        f"variable {name!r} is assigned a non-scalar value inside dynamic control "
                        f"flow; only scalars may change there", self.loc(node))
                continue  # e.g. a memref bound in a branch: stays a compile-time name
            if not kinds:
                continue
            slot = self._new_slot(S.common_type(kinds))
            if name in self.env:
                slot.store(self.env[name])
            else:
                self.unset.add(name)
            self.env[name] = slot

    def _dry_run(self, emit, names) -> dict:
        """Compile `emit()` into a scratch region to see what it assigns to `names`."""
        saved = (dict(self.env), self.observed, self.dry_slots,
                 dict(self.state.sites), self.state.wram_bytes, len(self.state.wram_buffers), set(self.unset))
        self.observed = {n: [] for n in names}
        if saved[1] is not None:  # nested dry run: the outer one watches its names too
            for n in saved[1]:
                self.observed.setdefault(n, [])
        self.dry_slots = []
        scratch = ir.Operation.create("edsl.scratch", regions=1)
        block = scratch.regions[0].blocks.append()
        try:
            with ir.InsertionPoint(block):
                emit()
            seen = self.observed
        finally:
            created = self.dry_slots
            self.env, self.observed, self.dry_slots = saved[0], saved[1], saved[2]
            self.unset = saved[6]
            self.state.sites = saved[3]
            self.state.wram_bytes = saved[4]
            del self.state.wram_buffers[saved[5]:]
            scratch.erase()
            for kind, what in reversed(created):
                if kind == "slot":
                    what.owner.erase()
                else:
                    self._erase_global(what)
        if self.observed is not None:
            for n, kinds in seen.items():
                if n in self.observed:
                    self.observed[n].extend(kinds)
        return seen

    def _erase_global(self, name: str) -> None:
        for op in self.state.module.body.operations:
            if op.operation.name == "memref.global" and \
                    ir.StringAttr(op.operation.attributes["sym_name"]).value == name:
                op.operation.erase()
                self.state.symbols.discard(name)
                return

    def _scoped(self, emit_body) -> set[str]:
        """Run `emit_body` with the variable bindings restored afterwards, except
        slots; as it may not run, the slots it assigns stay unassigned. Returns
        the unassigned ones at its end."""
        before, unset = dict(self.env), set(self.unset)
        emit_body()
        after = self.env
        self.env = before
        for name, v in after.items():
            if isinstance(v, Slot):
                self.env[name] = v
        left, self.unset = self.unset, unset
        return left

    # --- statements --------------------------------------------------------------------

    def compile_block(self, stmts) -> None:
        for k, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Return):
                raise CompileError("`return` is only supported as the last statement of the function",
                                   self.loc(stmt))
            self.visit(stmt)
            if isinstance(stmt, (ast.Break, ast.Continue)):
                return  # the rest is unreachable
            loop = self.loops[-1] if self.loops else None
            rest = stmts[k + 1:]
            if rest and isinstance(loop, _LoopCtx) and _jumps(stmt):
                with self._at(rest[0]):
                    go_on = self._not_jumped(loop)
                    op = scf.IfOp(go_on)
                    with ir.InsertionPoint(op.then_block):
                        self._scoped(lambda: self.compile_block(rest))
                        scf.yield_([])
                return

    def _not_jumped(self, loop: _LoopCtx) -> ir.Value:
        flags = [s.load() for s in (loop.broke, loop.continued) if s is not None]
        jumped = flags[0] if len(flags) == 1 else arith.ori(*flags)
        return S.unary(ast.Not, jumped)

    def visit_Expr(self, node):
        self.visit(node.value)

    def visit_Pass(self, node):
        pass

    def visit_Import(self, node):
        for alias in node.names:
            mod = __import__(alias.name)
            if alias.asname:
                for part in alias.name.split(".")[1:]:
                    mod = getattr(mod, part)
                self.env[alias.asname] = mod
            else:
                self.env[alias.name.split(".")[0]] = mod

    def visit_ImportFrom(self, node):
        import importlib
        mod = importlib.import_module("." * node.level + (node.module or ""), self.info.globals.get("__package__"))
        for alias in node.names:
            self.env[alias.asname or alias.name] = getattr(mod, alias.name)

    def visit_Assign(self, node):
        value = self.visit(node.value)
        for target in node.targets:
            self._store(target, value)

    def visit_AnnAssign(self, node):
        if node.value is None:
            raise CompileError("a variable annotation needs a value", self.loc(node))
        value = self.visit(node.value)
        t = intrinsics.scalar_type(self._annotation_type(node.annotation))
        self._store(node.target, S.convert(value, t))

    def _annotation_type(self, ann):
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            return ann.value
        return self.visit(ann)

    def visit_AugAssign(self, node):
        target = node.target
        if isinstance(target, ast.Name):
            cur = self.lookup(target.id, target)
            self.assign(target.id, self._binop(node.op, cur, self.visit(node.value)))
        elif isinstance(target, ast.Subscript):
            base, idx = self._subscript_parts(target)
            cur = self._load(base, idx)
            new = self._binop(node.op, cur, self.visit(node.value))
            self._memref_store(base, idx, new, target)
        else:
            raise CompileError("unsupported augmented assignment target", self.loc(node))

    def _store(self, target, value) -> None:
        if isinstance(target, ast.Name):
            self.assign(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ir.OpResultList, ir.OpView)):
                value = list(value.results if isinstance(value, ir.OpView) else value)
            try:
                items = list(value)
            except TypeError:
                raise CompileError(f"cannot unpack a {intrinsics.type_name(value)}", self.loc(target)) from None
            if len(items) != len(target.elts):
                raise CompileError(f"cannot unpack {len(items)} values into {len(target.elts)} names",
                                   self.loc(target))
            for t, v in zip(target.elts, items):
                self._store(t, v)
        elif isinstance(target, ast.Subscript):
            with self._at(target):
                base, idx = self._subscript_parts(target)
                self._memref_store(base, idx, value, target)
        else:
            raise CompileError(f"cannot assign to {type(target).__name__}", self.loc(target))

    def _memref_store(self, base, idx, value, target) -> None:
        elem = ir.MemRefType(base.type).element_type
        value = S.val(value)
        if isinstance(value, ir.Value) and not S.is_scalar(value.type):
            raise TypeMismatchError(f"cannot store a value of type {value.type} into {base.type}")
        value = S.convert(value, elem)

        def store():
            memref.store(value, base, idx)
            self._note_access(base, idx, abi.Access.WRITE)
        if self.state.bounds_check:
            op = scf.IfOp(self._in_bounds(base, idx))
            with ir.InsertionPoint(op.then_block):
                store()
                scf.yield_([])
        else:
            store()

    def _load(self, base, idx):
        def load():
            self._note_access(base, idx, abi.Access.READ)
            return memref.load(base, idx)
        if not self.state.bounds_check:
            return load()
        elem = ir.MemRefType(base.type).element_type
        return S.if_value(self._in_bounds(base, idx), load, lambda: S.constant(0, elem))

    def _note_access(self, base, idx, kind: int) -> None:
        """Log an element access of a memref on a DPU: every one for the check
        of races between tasklets (abi.RACE_NOTE), an MRAM one also for the
        checks across DPUs (abi.NOTE_ACCESS)."""
        if self.target is not DPU:
            return
        i64, index = S.int_type(64), ir.IndexType.get()
        meta = memref.ExtractStridedMetadataOp(base)
        offset = meta.offset
        for i, stride in zip(idx, meta.strides):
            offset = arith.addi(offset, arith.muli(S.convert(i, index), stride))
        esize = S.bits(ir.MemRefType(base.type).element_type) // 8
        start = arith.addi(memref.extract_aligned_pointer_as_index(base), arith.muli(offset, S.convert(esize, index)))
        operands = [S.convert(start, i64), S.constant(esize, i64), S.constant(self.site(), i64)]
        mram = abi.is_mram(base.type)
        if mram:
            self.runtime_call(abi.NOTE_ACCESS, [S.constant(int(kind), i64), *operands], [])
        self.runtime_call(abi.RACE_NOTE, [S.constant(int(kind) | (abi.RACE_MRAM if mram else 0), i64),
                                          *operands], [])

    def _in_bounds(self, base, idx) -> ir.Value:
        """All indices within the sizes; if not, a run-time error at this line
        (the access is then skipped)."""
        ok = None
        for i, d in zip(idx, S.dims(base)):
            c = arith.cmpi(arith.CmpIPredicate.ult, i, S.convert(d, ir.IndexType.get()))
            ok = c if ok is None else arith.andi(ok, c)
        if ok is None:  # a 0-d memref
            return S.constant(1, S.i1())
        op = scf.IfOp(S.unary(ast.Not, ok))
        with ir.InsertionPoint(op.then_block):
            self.report_failure(abi.BOUNDS_FAIL, "index out of bounds")
            scf.yield_([])
        return ok

    def visit_If(self, node):
        cond = S.truth(self.visit(node.test))
        if not isinstance(cond, ir.Value):  # static: compile the taken branch only
            self.compile_block(node.body if cond else node.orelse)
            return

        def emit():
            op = scf.IfOp(cond, [], has_else=bool(node.orelse))
            with ir.InsertionPoint(op.then_block):
                unset = self._scoped(lambda: self.compile_block(node.body))
                scf.yield_([])
            if node.orelse:
                with ir.InsertionPoint(op.else_block):
                    unset |= self._scoped(lambda: self.compile_block(node.orelse))
                    scf.yield_([])
            else:
                unset |= self.unset
            self.unset = unset  # assigned after the `if` if assigned on both branches

        self._slots_for(node, node.body + node.orelse, emit)
        self.unset = self._scoped(emit)

    def visit_While(self, node):
        if node.orelse:
            raise CompileError("`while ... else` is not supported", self.loc(node))
        brk, cont = _loop_jumps(node.body)

        def emit():
            loop = _LoopCtx(self._flag(False) if brk else None, None)
            op = scf.WhileOp([], [])
            before = op.before.blocks.append()
            after = op.after.blocks.append()
            with ir.InsertionPoint(before):
                with self._at(node.test):
                    if brk:
                        c = S.if_value(self._not_jumped(loop), lambda: S.truth(self.visit(node.test)),
                                       lambda: False)
                    else:
                        c = S.truth(self.visit(node.test))
                    scf.condition(S.convert(c, S.i1()), [])
            with ir.InsertionPoint(after):
                self._loop_body(loop, node.body, cont)
                scf.yield_([])
            if forever:  # left by a `break` only
                self.unset = set().union(*loop.exits)

        if isinstance(node.test, ast.Constant) and not node.test.value:
            return
        forever = isinstance(node.test, ast.Constant) and bool(node.test.value)
        self._slots_for(node, node.body + [node.test], emit)
        self.unset = self._scoped(emit)

    def _flag(self, value: bool) -> Slot:
        slot = self._new_slot(S.i1())
        slot.store(int(value))
        return slot

    def _loop_body(self, loop: _LoopCtx, body, has_continue: bool, bind=None) -> set[str]:
        """Compiles one pass of a loop; returns the variables unassigned at its end."""
        if has_continue:
            loop.continued = self._flag(False)
        self.loops.append(loop)
        try:
            def run():
                if bind:
                    bind()
                self.compile_block(body)
            return self._scoped(run)
        finally:
            self.loops.pop()

    def visit_For(self, node):
        if node.orelse:
            raise CompileError("`for ... else` is not supported", self.loc(node))
        it = node.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and \
                self.lookup(it.func.id, it.func) is builtins.range:
            return self._range_loop(node)
        iterable = self.visit(it)
        if isinstance(iterable, range) or not hasattr(iterable, "__iter__"):
            raise CompileError(f"cannot iterate over a {intrinsics.type_name(iterable)}", self.loc(it))
        # A Python iterable (a tuple, or a builder generator such as scf.for_):
        # iterate at compile time, as TLE-Raw does.
        self.loops.append(_StaticLoop())
        try:
            for item in iterable:
                self._store(node.target, item)
                try:
                    self.compile_block(node.body)
                except _StaticContinue:
                    continue
                except _StaticBreak:
                    break
        finally:
            self.loops.pop()

    def visit_Break(self, node):
        self._jump(node, "broke", _StaticBreak)

    def visit_Continue(self, node):
        self._jump(node, "continued", _StaticContinue)

    def _jump(self, node, flag, signal):
        if not self.loops:
            raise CompileError(f"`{type(node).__name__.lower()}` outside a loop", self.loc(node))
        loop = self.loops[-1]
        if isinstance(loop, _StaticLoop):
            raise signal()
        getattr(loop, flag).store(1)
        if flag == "broke":
            loop.exits.append(set(self.unset))

    def _trip_count(self, call, lo, hi, st, step, t) -> ir.Value:
        """The trips of `range(lo, hi, st)` (of type `t`; `step`: the step as
        given, an int when static), never negative."""
        zero = S.constant(0, t)
        if S.is_static(step):
            span = arith.subi(hi, lo) if step > 0 else arith.subi(lo, hi)
            return arith.maxsi(arith.ceildivsi(span, S.constant(abs(step), t)), zero)
        # A zero step fails at run time at the step (Python raises ValueError);
        # the loop then runs no trip, and the division below is by 1, not 0.
        stopped = arith.cmpi(arith.CmpIPredicate.eq, st, zero)
        with self._at(call.args[2]):
            op = scf.IfOp(stopped)
            with ir.InsertionPoint(op.then_block):
                self.report_failure(abi.STEP_FAIL, abi.MESSAGES[abi.Err.ZERO_STEP])
                scf.yield_([])
        up = arith.cmpi(arith.CmpIPredicate.sgt, st, zero)
        span = arith.select(up, arith.subi(hi, lo), arith.subi(lo, hi))
        size = arith.select(stopped, S.constant(1, t), arith.select(up, st, arith.subi(zero, st)))
        span = arith.select(stopped, zero, span)
        return arith.maxsi(arith.ceildivsi(span, size), zero)

    def _range_loop(self, node):
        call = node.iter
        if call.keywords or not 1 <= len(call.args) <= 3:
            raise CompileError("range() takes 1 to 3 positional arguments", self.loc(call))
        args = [self.visit(a) for a in call.args]
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args + [1])[:3]
        bounds = [start, stop, step]
        for b in bounds:
            if isinstance(b, ir.Value) and not S.is_integral(b.type) or \
                    not isinstance(b, ir.Value) and not isinstance(b, int):
                raise TypeMismatchError(f"range() bounds must be integers, not {intrinsics.type_name(b)}",
                                        self.loc(call))
        if S.is_static(step) and step == 0:
            raise CompileError("range() step must not be zero", self.loc(call))
        dyn = [b for b in bounds if isinstance(b, ir.Value)]
        t = S.common_type(dyn) if dyn else ir.IndexType.get()
        brk, cont = _loop_jumps(node.body)
        target = node.target
        if not isinstance(target, ast.Name):
            raise CompileError("a range() loop variable must be a name", self.loc(target))
        # With static bounds and a trip, what the body assigns is assigned after the loop.
        runs = not dyn and len(range(start, stop, step)) > 0

        def emit():
            lo, hi, st = (S.convert(b, t) for b in bounds)
            if S.is_static(step) and step > 0 and not brk:
                op = scf.ForOp(lo, hi, st)
                with ir.InsertionPoint(op.body):
                    iv = op.induction_variable
                    left = self._loop_body(_LoopCtx(None, None), node.body, cont,
                                           lambda: self.assign(target.id, iv))
                    scf.yield_([])
                self.unset = left if runs else self.unset
                return
            # General case: iterate k over the trip count and set i = start + k*step,
            # which works for any sign of step; a `break` turns it into a while loop.
            zero = S.constant(0, t)
            trips = self._trip_count(call, lo, hi, st, step, t)

            def bind(k):
                return lambda: self.assign(target.id, arith.addi(lo, arith.muli(k, st)))

            if not brk:
                op = scf.ForOp(zero, trips, S.constant(1, t))
                with ir.InsertionPoint(op.body):
                    left = self._loop_body(_LoopCtx(None, None), node.body, cont, bind(op.induction_variable))
                    scf.yield_([])
                self.unset = left if runs else self.unset
                return
            loop = _LoopCtx(self._flag(False), None)
            op = scf.WhileOp([t], [zero])
            before = op.before.blocks.append(t)
            after = op.after.blocks.append(t)
            with ir.InsertionPoint(before):
                k = before.arguments[0]
                go = arith.andi(arith.cmpi(arith.CmpIPredicate.slt, k, trips), self._not_jumped(loop))
                scf.condition(go, [k])
            with ir.InsertionPoint(after):
                k = after.arguments[0]
                left = self._loop_body(loop, node.body, cont, bind(k))
                scf.yield_([arith.addi(k, S.constant(1, t))])
            self.unset = left.union(*loop.exits) if runs else self.unset

        self._slots_for(node, node.body, emit)
        self.unset = self._scoped(emit)
        self.env.pop(target.id, None)  # the loop variable does not outlive a dynamic loop

    def visit_With(self, node):
        managers = []
        try:
            for item in node.items:
                cm = self.visit(item.context_expr)
                value = cm.__enter__()
                managers.append(cm)
                if item.optional_vars is not None:
                    self._store(item.optional_vars, value)
            self.compile_block(node.body)
        finally:
            for cm in reversed(managers):
                cm.__exit__(None, None, None)

    def visit_Assert(self, node):
        cond = S.truth(self.visit(node.test))
        if not isinstance(cond, ir.Value):
            if not cond:
                msg = self.visit(node.msg) if node.msg else "assertion failed"
                raise CompileError(f"assertion failed at compile time: {msg}", self.loc(node))
            return
        op = scf.IfOp(S.unary(ast.Not, cond))
        with ir.InsertionPoint(op.then_block):
            message = node.msg.value if isinstance(node.msg, ast.Constant) else \
                ast.unparse(node.msg) if node.msg else None
            self.report_failure(abi.ASSERT_FAIL, f"assert {ast.unparse(node.test)} failed" +
                                (f": {message}" if message else ""))
            scf.yield_([])

    def visit_Return(self, node):
        raise CompileError("`return` is only supported as the last statement of the function", self.loc(node))

    # --- expressions -------------------------------------------------------------------

    def visit_Constant(self, node):
        return node.value

    def visit_Name(self, node):
        return self.lookup(node.id, node)

    def visit_Tuple(self, node):
        return tuple(self._elements(node.elts))

    def visit_List(self, node):
        return list(self._elements(node.elts))

    def _elements(self, elts):
        for e in elts:
            if isinstance(e, ast.Starred):
                yield from self.visit(e.value)
            else:
                yield self.visit(e)

    def visit_Attribute(self, node):
        base = self.visit(node.value)
        if isinstance(base, ir.OpView) and node.attr == "shape":
            base = S.val(base)
        if isinstance(base, ir.Value) and S.is_memref(base.type) and node.attr == "shape":
            return S.dims(base)
        try:
            return getattr(base, node.attr)
        except AttributeError:
            raise CompileError(f"{intrinsics.type_name(base)} has no attribute {node.attr!r}",
                               self.loc(node)) from None

    def _subscript_parts(self, node):
        base = self.visit(node.value)
        if not (isinstance(base, ir.Value) and S.is_memref(base.type)):
            raise TypeMismatchError(f"cannot index a {intrinsics.type_name(base)} with dynamic indices")
        keys = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        t = ir.MemRefType(base.type)
        if len(keys) != t.rank:
            raise TypeMismatchError(f"{t} has rank {t.rank} but is indexed with {len(keys)} indices")
        idx = []
        for axis, k in enumerate(keys):
            if isinstance(k, ast.Slice):
                raise CompileError("slices of memrefs are not supported; index elements", self.loc(k))
            v = S.val(self.visit(k))
            if S.is_static(v):
                if isinstance(v, (float, bool)) or not isinstance(v, int) and not hasattr(v, "__index__"):
                    raise TypeMismatchError(f"index {v!r} is not an integer")
                v = int(v)
                if v < 0:  # Python-style negative index, relative to the end
                    v = S.binary(ast.Add, S.dims(base)[axis], v)
            elif not S.is_integral(v.type):
                raise TypeMismatchError(f"index of type {v.type} is not an integer")
            elif v.type != S.i1() and not S.known_non_negative(v):
                # Python's meaning of a negative index, at run time
                i = S.convert(v, ir.IndexType.get())
                negative = arith.cmpi(arith.CmpIPredicate.slt, i, S.constant(0, i.type))
                v = arith.select(negative, arith.addi(i, S.convert(S.dims(base)[axis], i.type)), i)
            idx.append(S.convert(v, ir.IndexType.get()))
        return base, idx

    def visit_Subscript(self, node):
        if not isinstance(node.ctx, ast.Load):
            raise CompileError("unsupported subscript", self.loc(node))
        base = self.visit(node.value)
        if isinstance(base, ir.Value) and S.is_memref(base.type):
            base, idx = self._subscript_parts(node)
            return self._load(base, idx)
        key = self.visit(node.slice)
        if isinstance(key, ir.Value):
            raise TypeMismatchError(f"cannot index a {intrinsics.type_name(base)} with a dynamic value")
        return base[key]

    def _binop(self, op, a, b):
        a, b = S.val(a), S.val(b)
        if not isinstance(a, ir.Value) and not isinstance(b, ir.Value):
            return _PY_BINOPS[type(op)](a, b)
        return S.binary(type(op), a, b)

    def visit_BinOp(self, node):
        return self._binop(node.op, self.visit(node.left), self.visit(node.right))

    def visit_UnaryOp(self, node):
        x = S.val(self.visit(node.operand))
        if not isinstance(x, ir.Value):
            return _PY_UNARY[type(node.op)](x)
        return S.unary(type(node.op), x)

    def visit_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)

        def chain(values):
            first = self.visit(values[0])
            if len(values) == 1:
                return first if not isinstance(first, ir.Value) else S.truth(first)
            c = S.truth(first)
            if not isinstance(c, ir.Value):  # Python short-circuit at compile time
                if c != is_and:
                    return first
                return chain(values[1:])
            rest = lambda: S.truth(chain(values[1:]))  # noqa: E731
            if is_and:
                return S.if_value(c, rest, lambda: False)
            return S.if_value(c, lambda: True, rest)

        return chain(node.values)

    def visit_Compare(self, node):
        left = S.val(self.visit(node.left))
        result = True
        for op, comp in zip(node.ops, node.comparators):
            right = S.val(self.visit(comp))
            if not isinstance(left, ir.Value) and not isinstance(right, ir.Value):
                r = _PY_CMPOPS[type(op)](left, right)
            elif type(op) in (ast.Is, ast.IsNot, ast.In, ast.NotIn):
                raise CompileError(f"`{type(op).__name__}` does not apply to dynamic values", self.loc(node))
            else:
                r = S.compare(type(op), left, right)
            result = r if result is True else (
                S.binary(ast.BitAnd, S.truth(result), S.truth(r)) if isinstance(r, ir.Value)
                or isinstance(result, ir.Value) else (result and r))
            left = right
        return result

    def visit_IfExp(self, node):
        c = S.truth(self.visit(node.test))
        if not isinstance(c, ir.Value):
            return self.visit(node.body if c else node.orelse)
        return S.if_value(c, lambda: self.visit(node.body), lambda: self.visit(node.orelse))

    def visit_Call(self, node):
        fn = self.visit(node.func)
        args = list(self._elements(node.args))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self.visit(kw.value))
            else:
                kwargs[kw.arg] = self.visit(kw.value)
        if fn is builtins.range:
            raise CompileError("range() is only supported as the iterable of a for loop", self.loc(node))
        if fn is builtins.print:
            raise CompileError("print() in an edsl function would run once, when it compiles, not when it "
                               "runs: return the values through an InOut memref, or print them with "
                               "tl.device_print in the calling Triton kernel", self.loc(node))
        handler = intrinsics.lookup(fn)
        if handler is not None:
            args = [S.val(a) for a in args]
            return handler(self, *args, **kwargs)
        info = getattr(fn, "_edsl_function_info", None)
        if info is not None:
            return self._call_edsl(info, args, kwargs, node)
        return fn(*args, **kwargs)  # MLIR-builder style: runs now, building IR

    def _call_edsl(self, info: FunctionInfo, args, kwargs, node):
        info = info.for_target(self.target)
        if kwargs:
            raise CompileError("calls to edsl functions take positional arguments only", self.loc(node))
        if len(args) != len(info.params):
            raise CompileError(f"{info.name}() takes {len(info.params)} arguments, {len(args)} given",
                               self.loc(node))
        keys = [key for key, _ in self.state.generating]
        if info.key in keys:
            through = [name for _, name in self.state.generating[keys.index(info.key) + 1:]]
            via = f" through {', '.join(n + '()' for n in through)}" if through else ""
            raise CompileError(f"recursion is not supported: {info.name}() calls itself{via}", self.loc(node))
        symbol = self.state.callees.get(info.key)
        if symbol is None:
            symbol = self.state.unique(info.name)
            self.state.callees[info.key] = symbol
            with ir.InsertionPoint(self.state.module.body):
                CodeGenerator(info, self.state, symbol, private=True).generate()
        operands = []
        for p, a in zip(info.params, args):
            t = p.mlir_type
            if isinstance(a, ir.Value) and S.is_memref(a.type):
                if not S.is_memref(t):
                    raise TypeMismatchError(f"argument {p.name!r} of {info.name}() is a {t}, not a memref")
                operands.append(a if a.type == t else memref.cast(t, a))
            else:
                if S.is_memref(t):
                    raise TypeMismatchError(
                        f"argument {p.name!r} of {info.name}() is a memref, not a {intrinsics.type_name(a)}")
                operands.append(S.convert(a, t))
            if p.param.is_inout and isinstance(a, ir.Value) and S.is_memref(a.type):
                self.check_writable(a, f"{info.name}({p.name}: InOut)", self.loc(node))
        results = [p.mlir_type for p in info.params if p.param.is_inout]
        func.CallOp(results, ir.FlatSymbolRefAttr.get(symbol), operands)
        return None
