"""TTIR -> an upstream `mlir` module: the reader of the `dpu` backend.

Triton prints its ops in their custom assembly forms, which only Triton's own
parser knows. MLIR's printer writes every op in the generic form instead
(`%r = "tt.load"(%p, %m) <{...}> {...} : (A, B) -> R`) when the module fails
to verify, so that what it prints can be read back;
`triton_internals.generic_form` prints Triton's module that way, and the
upstream bindings parse the text with Triton's dialects unregistered. No op
has a rule of its own here. What follows the parse is the same for every op:
  * `tt.func` / `tt.return` / `tt.call` become their `func` counterparts
    (`RENAMED`; the properties have the same names), so that upstream passes
    see functions;
  * Triton's enum properties, which the generic form prints as integers,
    become strings named as Triton's own Python enums name them
    (`atomic_rmw_op = "add"`, `rounding = "rtne"`; `triton_internals.op_enums`);
  * ops that only order a launch after the one before it are dropped
    (`DROPPED`): a launch on the DPU model starts when the one before ended.
The parsed module is then checked against Triton's own walk of its module
(`triton_view`): every op's name, operand types and result types, in order.
A difference is a `CompileError` naming the op and its line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..base.errors import CompileError, SourceLoc
from ..lowering.pipeline import file_locations
from . import triton_internals

# Triton's ops that become upstream ones of another name.
RENAMED = {"tt.func": "func.func", "tt.return": "func.return", "tt.call": "func.call"}
_RENAME = re.compile(r'^(\s*(?:%[^"=]*=\s*)?)"(tt\.func|tt\.return|tt\.call)"\(', re.M)
# Ops of programmatic dependent launch (`tl.extra.cuda.gdc_wait`,
# `gdc_launch_dependents`) ...
DROPPED = frozenset({"tt.grid_dependency_wait", "tt.grid_dependency_launch_dependents"})
# ... which Triton 3.6 writes as PTX in an inline-asm op with an unused result.
_ORDERING_ASM = ("griddepcontrol.wait;", "griddepcontrol.launch_dependents;")
_FILE_LOC = re.compile(r'"(?P<file>[^"]+)":(?P<line>\d+):(?P<col>\d+)')
_LOC_ALIAS = re.compile(r"^(#loc\d*)\s*=\s*(loc\(.*\))\s*$")


def _ordering_asm(asm: str) -> bool:
    return asm.startswith(_ORDERING_ASM)


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split `text` at `sep` outside brackets and string literals (a type's
    parameters, e.g. `!tt.ptr<f32, 1>`)."""
    parts, depth, cur, in_str, i = [], 0, [], False, 0
    while i < len(text):
        ch = text[i]
        if in_str:
            cur.append(ch)
            if ch == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
            cur.append(ch)
        elif ch in "<([{":
            depth += 1
            cur.append(ch)
        elif ch in ">)]}" and not (ch == ">" and i > 0 and text[i - 1] == "-"):
            depth -= 1
            cur.append(ch)
        elif depth == 0 and text.startswith(sep, i):
            parts.append("".join(cur).strip())
            cur = []
            i += len(sep)
            continue
        else:
            cur.append(ch)
        i += 1
    tail = "".join(cur).strip()
    if tail or parts:
        parts.append(tail)
    return parts


def user_location(loc) -> SourceLoc | None:
    """The kernel's line in an MLIR location: the first file position outside
    Triton's own library (a call site into `triton.language` names the caller)."""
    return _kernel_position(file_locations(loc))


def _kernel_position(found: list[SourceLoc]) -> SourceLoc | None:
    """Of the file positions of a location, the first outside Triton's library."""
    for sl in found:
        if "/triton/language/" not in sl.filename.replace("\\", "/"):
            return sl
    return found[0] if found else None


def _text_location(text: str, line: int) -> SourceLoc | None:
    """The kernel's line of line `line` of a printed module (its `loc(...)`,
    aliases `#locN` followed), for an error the parser reports there."""
    lines = text.splitlines()
    if not 0 < line <= len(lines):
        return None
    aliases = dict(m.groups() for m in map(_LOC_ALIAS.match, lines) if m)
    found, here = [], lines[line - 1]
    for _ in range(50):
        found += [SourceLoc(m["file"], int(m["line"]), max(int(m["col"]) - 1, 0))
                  for m in _FILE_LOC.finditer(here)]
        refs = re.findall(r"#loc\d*", here)
        if not refs:
            break
        here = " ".join(aliases.get(r, "") for r in refs)
    return _kernel_position(found)


@dataclass(frozen=True)
class OpView:
    """One op as a reader of the module sees it: its name and the types of its
    operands and results, as printed."""
    name: str
    operands: tuple[str, ...]
    results: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.name} : ({', '.join(self.operands)}) -> ({', '.join(self.results)})"


def _dropped(name: str, asm: str | None) -> bool:
    return name in DROPPED or (name == "tt.elementwise_inline_asm" and _ordering_asm(asm or ""))


def triton_view(mod) -> list[OpView]:
    """Triton's view of a TTIR module (`triton._C.libtriton.ir.module`): its ops
    in post-order, under the names they are read as."""
    ops = []

    def visit(op):
        name = op.get_name()
        if _dropped(name, op.get_str_attr("asm_string") if name == "tt.elementwise_inline_asm" else None):
            return
        ops.append(OpView(RENAMED.get(name, name),
                          tuple(str(op.get_operand(i).get_type()) for i in range(op.get_num_operands())),
                          tuple(str(op.get_result(i).get_type()) for i in range(op.get_num_results()))))
    mod.walk(visit)
    return ops


def parsed_view(module) -> list[tuple[OpView, object]]:
    """The same view of a parsed upstream module, with each op's location."""
    from mlir import ir
    ops = []

    def visit(op):
        ops.append((OpView(op.name, tuple(str(v.type) for v in op.operands),
                           tuple(str(r.type) for r in op.results)), op.location))
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit, ir.WalkOrder.POST_ORDER)
    return ops


def check_view(module, expected: list[OpView]) -> None:
    """A `CompileError` at the first op whose name or types the reader got
    other than Triton (`expected`, from `triton_view`)."""
    got = parsed_view(module)
    for k, (mine, loc) in enumerate(got):
        theirs = expected[k] if k < len(expected) else None
        if mine != theirs:
            raise CompileError(f"the TTIR reader read operation '{mine.name}' as {mine}, where "
                               f"Triton has {theirs if theirs else 'no further operation'}",
                               user_location(loc))
    if len(expected) > len(got):
        raise CompileError(f"the TTIR reader did not read operation {expected[len(got)]}")


def _parse_generic(text: str, ctx):
    """The upstream module of a generic-form text; a parse error names the
    kernel's line of the op it is on."""
    from mlir import ir
    try:
        return ir.Module.parse(_RENAME.sub(lambda m: f'{m[1]}"{RENAMED[m[2]]}"(', text), ctx)
    except ir.MLIRError as err:
        diags = getattr(err, "error_diagnostics", None) or []
        where = re.search(r":(\d+):\d+", str(diags[0].location)) if diags else None
        loc = _text_location(text, int(where[1])) if where else None
        message = diags[0].message if diags else str(err)
        raise CompileError(f"cannot read the kernel's TTIR: {message}", loc) from None


def _normalise(module) -> None:
    """Name Triton's enum properties and drop the launch-ordering ops (see the
    module's docstring)."""
    from mlir import ir
    enums, dropped = triton_internals.op_enums(), []

    def visit(op):
        name = op.name
        if not name.startswith(("tt.", "ttg.")):
            return ir.WalkResult.ADVANCE
        asm = op.attributes["asm_string"] if name == "tt.elementwise_inline_asm" else None
        if _dropped(name, ir.StringAttr(asm).value if asm is not None else None):
            dropped.append(op)
            return ir.WalkResult.ADVANCE
        for prop, enum in enums.items():
            if prop in op.attributes and isinstance(op.attributes[prop], ir.IntegerAttr):
                value = ir.IntegerAttr(op.attributes[prop]).value
                op.attributes[prop] = ir.StringAttr.get(enum(value).name.lower())
        return ir.WalkResult.ADVANCE
    with module.context:
        module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    for op in dropped:
        op.erase()


def read_ttir(source, ctx):
    """The upstream module of a TTIR module (`triton._C.libtriton.ir.module`, as
    a stage receives it) or of a TTIR text (read by Triton's parser first),
    checked against Triton's view of it. The Triton module is left marked as
    not verifying (`triton_internals.generic_form`): read it once."""
    if isinstance(source, str):
        try:
            source = triton_internals.parse_ttir(source)
        except RuntimeError as err:
            raise CompileError(f"cannot read the kernel's TTIR: Triton's parser refused it ({err})") from None
    expected = triton_view(source)
    module = _parse_generic(triton_internals.generic_form(source), ctx)
    _normalise(module)
    check_view(module, expected)
    return module
