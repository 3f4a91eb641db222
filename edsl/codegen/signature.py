"""What the code generator needs to know of a Python function: its AST with
the file's line and column numbers, the names it can see, and its parameters."""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import inspect
import textwrap
import typing
from dataclasses import dataclass, field
from types import FunctionType

from mlir import ir

from .annotations import Param, type_text
from ..target import dtypes
from ..target import dpu as abi
from ..base.errors import AnnotationError, CompileError, SourceLoc
from .memspace import resolve_memory_spaces
from . import semantic as S
from ..target.machines import Target


@dataclass(frozen=True)
class ParamInfo:
    name: str
    param: Param
    type_text: str  # with memory spaces resolved (for a target: checked, tile memrefs in its tile space)
    loc: SourceLoc

    @property
    def mlir_type(self) -> ir.Type:
        return ir.Type.parse(self.type_text)


@dataclass
class FunctionInfo:
    fn: FunctionType
    name: str
    filename: str
    source: str
    tree: ast.FunctionDef
    globals: dict
    closure: dict
    params: list[ParamInfo]  # memory-space names resolved, not yet checked against a target
    returns: list[str] = field(default_factory=list)  # the parameters `return` names, in its order
    _by_target: dict = field(default_factory=dict, repr=False, compare=False)

    def for_target(self, target: Target) -> "FunctionInfo":
        """This function with its parameters as `target` sees them: memory spaces
        checked, unqualified memrefs in the target's tile memory. Call in
        `codegen.context()`."""
        info = self._by_target.get(target.name)
        if info is None:
            params = [_param(p.name, p.param, p.loc, target) for p in self.params]
            info = dataclasses.replace(self, params=params, _by_target={})
            info._by_target[target.name] = info
            self._by_target[target.name] = info
        return info

    @property
    def key(self) -> str:
        """Identity of the source text, name and parameters (not of captured
        values; the name: functions made from one code object by
        `types.FunctionType` under other names are other symbols)."""
        h = hashlib.sha256(self.source.encode())
        h.update(self.filename.encode())
        h.update(self.name.encode())
        h.update(repr([(p.name, p.param.kind, p.type_text) for p in self.params]).encode())
        return h.hexdigest()


def function_info(fn) -> FunctionInfo:
    if not isinstance(fn, FunctionType):
        raise CompileError(f"@edsl.dialect applies to Python functions, not {type(fn).__name__}")
    filename = fn.__code__.co_filename
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        raise CompileError(f"cannot read the source of {fn.__qualname__}: edsl compiles functions "
                           f"defined in files", SourceLoc(filename, fn.__code__.co_firstlineno)) from None
    source = "".join(lines)
    dedented = textwrap.dedent(source)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    tree = ast.parse(dedented)
    for node in ast.walk(tree):  # back to the file's coordinates
        if hasattr(node, "lineno"):
            node.lineno += first - 1
            node.col_offset += indent
            if getattr(node, "end_lineno", None) is not None:
                node.end_lineno += first - 1
                node.end_col_offset += indent
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise CompileError("@edsl.dialect applies to `def` functions", SourceLoc(filename, first))
    closure = {}
    if fn.__closure__:
        closure = {name: cell.cell_contents for name, cell in zip(fn.__code__.co_freevars, fn.__closure__)
                   if _cell_filled(cell)}
    info = FunctionInfo(fn, fn.__name__, filename, source, fdef, fn.__globals__, closure, [])
    info.params = _params(info)
    info.returns = _returns(info)
    return info


def _cell_filled(cell) -> bool:
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


# Scalar parameter types, and memref element types: whole bytes (i1 and the
# 4- and 6-bit floats have no addressable layout).
_SCALARS = {s.mlir for s in dtypes.SCALARS if not s.unsigned and s.width >= 8 or s.mlir == "i1"}
_ELEMENTS = _SCALARS - {"i1"}


def _params(info: FunctionInfo) -> list[ParamInfo]:
    a = info.tree.args
    def loc(node):
        return SourceLoc(info.filename, node.lineno, node.col_offset)
    for extra in (a.vararg, a.kwarg):
        if extra is not None:
            raise AnnotationError("edsl functions take no *args or **kwargs", loc(extra))
    if a.defaults or a.kw_defaults and any(d is not None for d in a.kw_defaults):
        raise AnnotationError("edsl parameters have no default values", loc(info.tree))
    out = []
    for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
        ann = _annotation(info, arg.arg, arg.annotation, loc(arg))
        if not isinstance(ann, Param):
            raise AnnotationError(
                f"parameter {arg.arg!r} needs an annotation Input[\"<mlir type>\"] or InOut[\"<mlir type>\"]",
                loc(arg))
        out.append(_param(arg.arg, ann, loc(arg.annotation or arg)))
    return out


def _annotation(info: FunctionInfo, name: str, node: ast.expr | None, loc: SourceLoc):
    """The value of the annotation of `name` ("return": the result's). A
    function made by `types.FunctionType` from another's code has none in
    `__annotations__`: then the source's, evaluated where the function sees
    names (as Python would have)."""
    annotations = getattr(info.fn, "__annotations__", None) or {}
    if name in annotations:
        ann = annotations[name]
        if not isinstance(ann, str):
            return ann
        text = ann                                  # (from __future__ import annotations)
    elif node is not None:
        text = ast.unparse(node)
    else:
        return None
    try:
        return eval(text, info.globals, dict(info.closure))
    except Exception as e:
        raise AnnotationError(f"cannot evaluate the annotation of {name!r}: {e}", loc) from None


def _returns(info: FunctionInfo) -> list[str]:
    """The parameters a TLE-Raw function's last statement returns (`return y`,
    `return x, y`): memrefs it updates, its results as InOut ones are (they
    become InOut). Checked against a `-> Literal[...]` annotation."""
    body = info.tree.body
    last = body[-1] if body else None
    if not isinstance(last, ast.Return) or last.value is None or \
            isinstance(last.value, ast.Constant) and last.value.value is None:
        return []
    where = SourceLoc(info.filename, last.lineno, last.col_offset)
    values = last.value.elts if isinstance(last.value, ast.Tuple) else [last.value]
    by_name = {p.name: k for k, p in enumerate(info.params)}
    names = []
    for v in values:
        if not (isinstance(v, ast.Name) and v.id in by_name):
            raise AnnotationError(f"an edsl function returns some of its memref parameters (its results, as "
                                  f"InOut ones are), not `{ast.unparse(v)}`", where)
        if v.id in names:
            raise AnnotationError(f"parameter {v.id!r} is returned twice", where)
        p = info.params[by_name[v.id]]
        if not S.is_memref(ir.Type.parse(p.type_text)):
            raise AnnotationError(f"parameter {v.id!r} is a {p.type_text}: an edsl function returns memrefs, "
                                  f"which it updates (a pointer's memory is written through it)", where)
        names.append(v.id)
        info.params[by_name[v.id]] = dataclasses.replace(p, param=Param("InOut", p.param.type_text))
    _check_result_annotation(info, names)
    return names


def _check_result_annotation(info: FunctionInfo, names: list[str]) -> None:
    """`-> Literal["t"]` or a tuple of them, where given: one type a returned
    parameter, each its type."""
    node = info.tree.returns
    where = SourceLoc(info.filename, node.lineno, node.col_offset) if node is not None else None
    ann = _annotation(info, "return", node, where)
    if ann is None:
        return
    items = list(typing.get_args(ann)) if typing.get_origin(ann) is tuple else \
        list(ann) if isinstance(ann, tuple) else [ann]
    texts = [type_text(t) for t in items]
    if None in texts:
        raise AnnotationError(f"the result annotation {ast.unparse(node)} is not an MLIR type string "
                              f"(Literal[\"memref<...>\"]) or a tuple of them", where)
    if len(texts) != len(names):
        raise AnnotationError(f"the result annotation names {len(texts)} types; the function returns "
                              f"{len(names)} parameters ({', '.join(names) or 'none'})", where)
    params = {p.name: p for p in info.params}
    for text, name in zip(texts, names):
        try:
            same = ir.Type.parse(resolve_memory_spaces(text, None)) == ir.Type.parse(params[name].type_text)
        except (ir.MLIRError, ValueError):
            same = False
        if not same:
            raise AnnotationError(f"the result annotation says {text}; returned parameter {name!r} is a "
                                  f"{params[name].param.type_text}", where)


def _param(name: str, param: Param, loc: SourceLoc, target: Target | None = None) -> ParamInfo:
    try:
        text = resolve_memory_spaces(param.type_text, target)
    except ValueError as e:
        raise AnnotationError(f"{param!r} of {name!r}: {e}", loc) from None
    try:
        t = ir.Type.parse(text)
    except (ir.MLIRError, ValueError) as e:
        detail = str(e).splitlines()[-1].strip() if str(e) else ""
        raise AnnotationError(f"{param!r} of {name!r} is not a valid MLIR type: {detail}", loc) from None
    if S.is_memref(t):
        elem = ir.MemRefType(t).element_type
        if str(elem) not in _ELEMENTS:
            hint = "; use i8 for boolean arrays" if str(elem) == "i1" else ""
            raise AnnotationError(f"memref element type {elem} of {name!r} is not supported "
                                  f"(use {', '.join(sorted(_ELEMENTS))}){hint}", loc)
    elif str(t) in _SCALARS or str(t).startswith("!llvm.ptr"):
        if param.is_inout:
            raise AnnotationError(f"{name!r}: InOut applies to memrefs; a {t} can only be an Input", loc)
    else:
        raise AnnotationError(f"type {t} of {name!r} is not supported: use a memref, a scalar "
                              f"({', '.join(sorted(_SCALARS))}) or !llvm.ptr", loc)
    if target is not None:
        try:
            target.check_space(_address_space(t))
        except ValueError as e:
            raise AnnotationError(f"{param!r} of {name!r}: {e}", loc) from None
        if S.is_memref(t) and ir.MemRefType(t).memory_space is None and target.tile_space:
            m = ir.MemRefType(t)
            space = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), target.tile_space)
            text = str(ir.MemRefType.get(m.shape, m.element_type, m.layout, space, loc=ir.Location.unknown()))
    return ParamInfo(name, param, text, loc)


def _address_space(t: ir.Type) -> int:
    if S.is_memref(t):
        return abi.memory_space(t)
    if str(t).startswith("!llvm.ptr"):
        from mlir.dialects import llvm
        return llvm.PointerType(t).address_space
    return 0
