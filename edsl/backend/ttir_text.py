"""TTIR -> an upstream `mlir` module: the reader of the `dpu` backend.

Triton prints its ops in their custom assembly forms, which only Triton's own
parser knows. Each `tt.*` op line (and `ttg.barrier`) is rewritten here into
MLIR's generic form (`%r = "tt.op"(%a, %b) {attrs} : (A, B) -> R loc(...)`),
with every attribute in the `{...}` dictionary so that it stays readable on an
unregistered op; `tt.func`/`tt.return`/`tt.call` become their `func`
counterparts (`RENAMED`). `!tt.ptr<T>` stays as an opaque type. Ops of the
arith/math/scf/cf/ub/gpu dialects are left as they are: the upstream parser
knows them. One line in gives one line out, so a parse error's line is the
TTIR's.

An attribute dictionary may sit on any of these ops: besides Triton's own
attributes, `tl.multiple_of`, `tl.max_contiguous` and `tl.max_constancy` put
their hints (`tt.divisibility`, `tt.contiguity`, `tt.constancy`) on whatever
op defines the value. It is taken out of the line before the op's form is
read, and kept. An op or a form this module does not know is a `CompileError`
at the kernel's line. Operand types that a custom form leaves implicit (a load's
mask and `other`) follow from the op's definition; `read_ttir` checks the
whole parsed module against Triton's own view of it (`triton_view`, from
Triton's `module.walk`): every op's name, operand types and result types, in
order. A difference is a `CompileError` naming the op and its line, so a form
read wrongly can never become a wrong program.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import CompileError, SourceLoc
from ..lowering.pipeline import file_locations

_LOC_ALIAS = re.compile(r"^(#loc\d*)\s*=\s*(loc\(.*\))\s*$")
_FILE_LOC = re.compile(r'"(?P<file>[^"]+)":(?P<line>\d+):(?P<col>\d+)')
_VALUE = r"%[\w.$-]+(?::\d+)?"
# `%r = op ...`, `%a, %b = op ...`, `%r:2 = op ...` or `op ...`, for the ops rewritten here.
_OP_LINE = re.compile(rf"^(?P<indent>\s*)(?:(?P<res>{_VALUE}(?:\s*,\s*{_VALUE})*)\s*=\s*)?"
                      r"(?P<op>tt\.[\w.]+|ttg\.barrier)(?P<rest>.*)$")
# Triton's ops that become upstream ones of another name.
RENAMED = {"tt.func": "func.func", "tt.return": "func.return", "tt.call": "func.call"}
_PROGRAM_AXES = {"x": 0, "y": 1, "z": 2}
# Ops of programmatic dependent launch (`tl.extra.cuda.gdc_wait`,
# `gdc_launch_dependents`): they only order a launch after the one before it,
# and a launch on the DPU model starts when the one before has ended. The
# reader drops them (an empty line keeps the line numbers).
DROPPED = frozenset({"tt.grid_dependency_wait", "tt.grid_dependency_launch_dependents"})
# ... which Triton 3.6 writes as PTX in an inline-asm op with a dummy result.
_ORDERING_ASM = ("griddepcontrol.wait;", "griddepcontrol.launch_dependents;")


def _ordering_asm(asm: str) -> bool:
    return asm.startswith(_ORDERING_ASM)


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split `text` at `sep` outside brackets and string literals."""
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


def _split_loc(line: str) -> tuple[str, str]:
    """(body, ' loc(...)') of an op line; the location is its last top-level item."""
    idx = line.rfind(" loc(")
    while idx >= 0:
        tail = line[idx + 1:]
        if _balanced(tail):
            return line[:idx], " " + tail
        idx = line.rfind(" loc(", 0, idx)
    return line, ""


def _outside_strings(text: str):
    """(i, ch) for the characters of `text` outside its string literals."""
    in_str = False
    for i, ch in enumerate(text):
        if in_str:
            if ch == '"' and text[i - 1] != "\\":
                in_str = False
        elif ch == '"':
            in_str = True
        else:
            yield i, ch


def _balanced(text: str) -> bool:
    depth = 0
    for i, ch in _outside_strings(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and i != len(text) - 1:
                return False
    return depth == 0


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


class LocTable:
    """Resolves `#locN` aliases of a TTIR text to the user's file:line:col."""

    def __init__(self, text: str):
        self.aliases: dict[str, str] = {}
        for line in text.splitlines():
            m = _LOC_ALIAS.match(line.strip())
            if m:
                self.aliases[m.group(1)] = m.group(2)

    def resolve(self, loc_text: str) -> SourceLoc | None:
        """The kernel's line: as `user_location`, the first file position outside
        Triton's library (an op inlined from `tl.cdiv` has the call's line too)."""
        found, text = [], loc_text
        for _ in range(50):
            found += [SourceLoc(m["file"], int(m["line"]), max(int(m["col"]) - 1, 0))
                      for m in _FILE_LOC.finditer(text)]
            refs = re.findall(r"#loc\d*", text)
            if not refs:
                break
            text = " ".join(self.aliases.get(r, "") for r in refs)
        return _kernel_position(found)


def _strip_attr_dict(text: str) -> tuple[str, str]:
    """Take the top-level `{...}` attribute dictionary out of an op's text (a
    custom form prints at most one): (the text without it, its contents)."""
    depth, start = 0, -1
    for i, ch in _outside_strings(text):
        if ch == "{":
            start = i if depth == 0 and start < 0 else start
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and start >= 0:
                return text[:start] + text[i + 1:], text[start + 1:i].strip()
        elif ch in "<([" and start < 0:
            depth += 1
        elif ch in ">)]" and start < 0 and not (ch == ">" and text[i - 1] == "-"):
            depth -= 1
    return text, ""


def _operands(text: str) -> list[str]:
    return [p for p in split_top(text) if p]


def _ptr_pointee(ptr_type: str) -> str:
    """`tensor<4x!tt.ptr<f32>>` -> `tensor<4xf32>`; `!tt.ptr<f32>` -> `f32`. What
    follows the pointee (`!tt.ptr<f32, 1>`, a `tl.const` pointer's
    `!tt.ptr<f32, "constant">`) says where it points, not what."""
    m = re.fullmatch(r"tensor<(?P<shape>(?:\d+x)*)!tt\.ptr<(?P<elt>.+)>>", ptr_type)
    if m:
        return f"tensor<{m['shape']}{split_top(m['elt'])[0]}>"
    m = re.fullmatch(r"!tt\.ptr<(?P<elt>.+)>", ptr_type)
    if m:
        return split_top(m["elt"])[0]
    raise ValueError(ptr_type)


def _mask_type(ptr_type: str) -> str:
    m = re.fullmatch(r"tensor<(?P<shape>(?:\d+x)*).*>", ptr_type)
    if m:
        return f"tensor<{m['shape']}i1>"
    return "i1"


class _Rewrite:
    """The parts of one generic op: operands, their types, result types, attributes."""

    def __init__(self, operands, operand_types, result_types, attrs=()):
        self.operands = list(operands)
        self.operand_types = list(operand_types)
        self.result_types = list(result_types)
        self.attrs = [a for a in attrs if a]


# Each form reads an op's text without its attribute dictionary (`rewrite_ttir`
# takes it out and keeps it); the comments show where Triton prints it.
def _unary_arrow(rest):           # %x {attrs}? : T -> R
    ops, types = rest.split(" : ", 1)
    src_t, res_t = [t.strip() for t in split_top(types, "->")]
    return _Rewrite(_operands(ops), [src_t], [res_t])


def _binary_arrow(rest):          # %a, %b {attrs}? : T -> R (both operands of type T)
    ops, types = rest.split(" : ", 1)
    src_t, res_t = [t.strip() for t in split_top(types, "->")]
    operands = _operands(ops)
    return _Rewrite(operands, [src_t] * len(operands), [res_t])


def _same_type(rest):             # %a (, %b)* {attrs}? : T   (result T)
    ops, t = rest.rsplit(" : ", 1)
    operands = _operands(ops)
    return _Rewrite(operands, [t.strip()] * len(operands), [t.strip()])


def _functional(rest):            # operands {attrs}? : (A, B) -> R
    ops, types = rest.split(" : ", 1)
    ins, outs = split_top(types, "->")
    in_types = _operands(ins.strip()[1:-1])
    outs = outs.strip()
    out_types = _operands(outs[1:-1]) if outs.startswith("(") else [outs]
    return _Rewrite(_operands(ops), in_types, out_types)


def _program_id(rest):            # x {attrs}? : i32
    axis, t = rest.split(":")
    return _Rewrite([], [], [t.strip()], [f"axis = {_PROGRAM_AXES[axis.strip()]} : i32"])


def _make_range(rest):            # {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
    return _Rewrite([], [], [rest.split(":", 1)[1].strip()])


def _addptr(rest):                # %p, %o {attrs}? : P, O
    ops, types = rest.split(" : ", 1)
    p_t, o_t = _operands(types)
    return _Rewrite(_operands(ops), [p_t, o_t], [p_t])


def _keyword_operands(ops_text: str) -> tuple[list[str], list[str]]:
    """Operands of `%a, %b kw = v kw2 = v2`: the %-names, and `kw = v` attributes."""
    operands, attrs = [], []
    for part in _operands(ops_text):
        words = part.split()
        operands.append(words[0])
        for kv in re.findall(r"(\w+)\s*=\s*(\w+)", " ".join(words[1:])):
            attrs.append(f'{kv[0]} = "{kv[1]}"')
    return operands, attrs


def _load(rest):                  # %p (, %m (, %o)?)? kw* {attrs}? : P
    ops, p_t = rest.rsplit(" : ", 1)
    p_t = p_t.strip()
    operands, kw = _keyword_operands(ops)
    types = [p_t, _mask_type(p_t), _ptr_pointee(p_t)][:len(operands)]
    return _Rewrite(operands, types, [_ptr_pointee(p_t)], kw)


def _store(rest):                 # %p, %v (, %m)? kw* {attrs}? : P
    ops, p_t = rest.rsplit(" : ", 1)
    p_t = p_t.strip()
    operands, kw = _keyword_operands(ops)
    types = [p_t, _ptr_pointee(p_t), _mask_type(p_t)][:len(operands)]
    return _Rewrite(operands, types, [], kw)


def _dot(rest):                   # %a, %b, %c (, inputPrecision = tf32)? {attrs}? : A * B -> C
    ops, types = rest.rsplit(" : ", 1)
    parts = _operands(ops)
    operands = [p for p in parts if p.startswith("%")]
    extra = [f'{k.strip()} = "{v.strip()}"' for p in parts if "=" in p for k, v in [p.split("=", 1)]]
    ab, c_t = split_top(types, "->")
    a_t, b_t = [t.strip() for t in ab.split(" * ")]
    return _Rewrite(operands, [a_t, b_t, c_t.strip()], [c_t.strip()], extra)


def _dot_scaled(rest):            # %a (scale %as)?, %b (scale %bs)?, %c lhs = F rhs = G {attrs}? : A(, AS)? * B(, BS)? -> C
    ops, types = rest.rsplit(" : ", 1)
    m = re.fullmatch(r"(?P<ops>.*?)\s+lhs\s*=\s*(?P<lhs>\w+)\s+rhs\s*=\s*(?P<rhs>\w+)\s*", ops)
    (a, b, c), (ab_t, c_t) = _operands(m["ops"]), split_top(types, "->")
    (a_t, *as_t), (b_t, *bs_t) = [_operands(t) for t in split_top(ab_t, " * ")]
    # The op's operands: a, b, c, then the scales given (`%x scale %s`).
    scales = [p.split()[2] for p in (a, b) if len(p.split()) == 3]
    sizes = f"operandSegmentSizes = array<i32: 1, 1, 1, {len(as_t)}, {len(bs_t)}>"
    return _Rewrite([a.split()[0], b.split()[0], c, *scales], [a_t, b_t, c_t.strip(), *as_t, *bs_t],
                    [c_t.strip()], [f'lhs = "{m["lhs"]}"', f'rhs = "{m["rhs"]}"', sizes])


def _atomic_rmw(rest):            # fadd, acq_rel, gpu, %p, %v (, %m)? {attrs}? : (P, V, M) -> R
    head, types = rest.rsplit(" : ", 1)
    parts = _operands(head)
    kind, sem, scope = parts[:3]
    r = _functional(", ".join(parts[3:]) + " : " + types)
    r.attrs += [f'atomic_rmw_op = "{kind}"', f'sem = "{sem}"', f'scope = "{scope}"']
    return r


def _atomic_cas(rest):            # acq_rel, gpu, %p, %c, %v {attrs}? : (P, C, V) -> R
    head, types = rest.rsplit(" : ", 1)
    parts = _operands(head)
    sem, scope = parts[:2]
    r = _functional(", ".join(parts[2:]) + " : " + types)
    r.attrs += [f'sem = "{sem}"', f'scope = "{scope}"']
    return r


def _atomic_poll(rest):           # acquire, gpu, %p, %v (timeout %t)? {attrs}? : P, V -> R   (the timeout: i64)
    head, types = rest.rsplit(" : ", 1)
    sem, scope, ptr, value = _operands(head)
    value, *timeout = value.split()[::2]
    ins, res_t = split_top(types, "->")
    p_t, v_t = _operands(ins)
    return _Rewrite([ptr, value, *timeout], [p_t, v_t] + ["i64"] * len(timeout), [res_t.strip()],
                    [f'sem = "{sem}"', f'scope = "{scope}"'])


def _print(rest):                 # "prefix" {attrs} (: %a, %b : A, B)?
    rest = rest.strip()
    m = re.match(r'("(?:[^"\\]|\\.)*")', rest)
    prefix = m.group(1)
    operands, types = [], []
    tail = rest[m.end():].strip()
    if tail.startswith(":"):
        ops, ts = tail[1:].rsplit(" : ", 1)
        operands, types = _operands(ops), _operands(ts)
    return _Rewrite(operands, types, [], [f"prefix = {prefix}"])


def _assert(rest):                # %cond, "message" {attrs}? : T
    ops, t = rest.rsplit(" : ", 1)
    cond, message = _operands(ops)
    return _Rewrite([cond], [t.strip()], [], [f"message = {message}"])


def _terminator(rest):            # (%a, %b {attrs}? : A, B)?
    rest = rest.strip()
    if not rest:
        return _Rewrite([], [], [])
    ops, types = rest.rsplit(" : ", 1)
    return _Rewrite(_operands(ops), _operands(types), [])


def _split(rest):                 # %x : T -> R  (two results of type R)
    r = _unary_arrow(rest)
    r.result_types = r.result_types * 2
    return r


def _unsplat(rest):               # %x {attrs}? : tensor<1x..xT>  (result T)
    ops, t = rest.rsplit(" : ", 1)
    t = t.strip()
    elem = re.fullmatch(r"tensor<(?:1x)+(?P<elt>.+)>", t)["elt"]
    return _Rewrite(_operands(ops), [t], [elem])


def _barrier(rest):               # local|global_read  (the address spaces it orders)
    spaces = rest.strip()
    return _Rewrite([], [], [], [f'addrSpace = "{spaces}"' if spaces else ""])


def _clampf(rest):                # %x, %lo, %hi, propagateNan = none {attrs}? : T
    ops, t = rest.rsplit(" : ", 1)
    parts = _operands(ops)
    operands = [p for p in parts if p.startswith("%")]
    extra = [f'{k.strip()} = "{v.strip()}"' for p in parts if "=" in p for k, v in [p.split("=", 1)]]
    return _Rewrite(operands, [t.strip()] * len(operands), [t.strip()], extra)


def _gather(rest):                # %src[%idx] {axis = 0 : i32} : (S, I) -> R
    m = re.match(r"\s*(%[\w.$-]+)\[(%[\w.$-]+)\](.*)$", rest)
    return _functional(f"{m.group(1)}, {m.group(2)}{m.group(3)}")


def _histogram(rest):             # %src (, %mask)? {attrs}? : T -> R
    ops, types = rest.rsplit(" : ", 1)
    src_t, res_t = [t.strip() for t in split_top(types, "->")]
    operands = _operands(ops)
    return _Rewrite(operands, [src_t, _mask_type(src_t)][:len(operands)], [res_t])


_FORMS = {
    "tt.get_program_id": _program_id,
    "tt.get_num_programs": _program_id,
    "tt.make_range": _make_range,
    "tt.splat": _unary_arrow,
    "tt.unsplat": _unsplat,
    "tt.broadcast": _unary_arrow,
    "tt.expand_dims": _unary_arrow,
    "tt.reshape": lambda rest: _reshape(rest),
    "tt.trans": _unary_arrow,
    "tt.bitcast": _unary_arrow,
    "tt.int_to_ptr": _unary_arrow,
    "tt.ptr_to_int": _unary_arrow,
    "tt.fp_to_fp": lambda rest: _fp_to_fp(rest),
    "tt.addptr": _addptr,
    "tt.load": _load,
    "tt.store": _store,
    "tt.dot": _dot,
    "tt.dot_scaled": _dot_scaled,
    "tt.atomic_rmw": _atomic_rmw,
    "tt.atomic_cas": _atomic_cas,
    "tt.atomic_poll": _atomic_poll,
    "tt.print": _print,
    "tt.assert": _assert,
    "tt.reduce.return": _terminator,
    "tt.scan.return": _terminator,
    "tt.map_elementwise.return": _terminator,
    "tt.join": _binary_arrow,
    "tt.cat": _binary_arrow,
    "tt.split": _split,
    "tt.clampf": _clampf,
    "tt.precise_sqrt": _same_type,
    "tt.precise_divf": _same_type,
    "tt.mulhiui": _same_type,
    "tt.extern_elementwise": _functional,
    "tt.gather": _gather,
    "tt.histogram": _histogram,
    # `tl.debug_barrier()` from Triton 3.7 on (before: `gpu.barrier`, read as it is).
    "ttg.barrier": _barrier,
}


def _reshape(rest):               # %x (allow_reorder)? (efficient_layout)? {attrs}? : T -> R
    ops, types = rest.split(" : ", 1)
    words = ops.split()
    attrs = [f"{w} = true" for w in words[1:] if re.fullmatch(r"\w+", w)]
    src_t, res_t = [t.strip() for t in split_top(types, "->")]
    return _Rewrite([words[0]], [src_t], [res_t], attrs)


def _fp_to_fp(rest):              # %x {attrs}? (, rounding = rtne)? : T -> R
    ops, types = rest.split(" : ", 1)
    parts = _operands(ops)
    attrs = [f'{k.strip()} = "{v.strip()}"' for p in parts[1:] for k, v in [p.split("=", 1)]]
    src_t, res_t = [t.strip() for t in split_top(types, "->")]
    return _Rewrite([parts[0]], [src_t], [res_t], attrs)


def _generic(res: str | None, name: str, r: _Rewrite) -> str:
    results = ", ".join(r.result_types)
    if len(r.result_types) != 1:
        results = f"({results})"
    attrs = ", ".join(r.attrs)
    text = f'"{name}"({", ".join(r.operands)})'
    if attrs:
        text += f" {{{attrs}}}"
    text += f" : ({', '.join(r.operand_types)}) -> {results}"
    return f"{res} = {text}" if res else text


def rewrite_ttir(text: str) -> str:
    """Rewrite the custom-form `tt.*` ops of a TTIR module text into generic
    form, line for line."""
    locs = LocTable(text)
    out = []
    for line in text.splitlines():
        m = _OP_LINE.match(line)
        if m is None:
            out.append(line)
            continue
        indent, res, op, rest = m["indent"], m["res"], m["op"], m["rest"]
        assign = f"{res} = " if res else ""
        if (op in DROPPED and not res) or (op == "tt.elementwise_inline_asm"
                                           and _ordering_asm(rest.strip().lstrip('"'))):
            out.append("")
            continue
        if op == "tt.func":
            out.append(indent + RENAMED[op] + rest)
            continue
        body, loc = _split_loc(rest)
        if op in RENAMED:                   # tt.return, tt.call: the func forms are the same
            out.append(f"{indent}{assign}{RENAMED[op]}{body}{loc}")
            continue
        form = _FORMS.get(op)
        if form is None:
            raise CompileError(f"operation '{op}' is not supported by the DPU backend",
                               locs.resolve(loc))
        text, attrs = _strip_attr_dict(body)
        try:
            r = form(text)
        except (ValueError, AttributeError, KeyError, IndexError, TypeError) as err:
            raise CompileError(f"operation '{op}' in this form is not supported by the DPU backend: "
                               f"{assign}{op}{body}", locs.resolve(loc)) from err
        r.attrs = [attrs, *r.attrs] if attrs else r.attrs
        out.append(indent + _generic(res, op, r) + loc)
    return "\n".join(out) + "\n"


def parse_ttir(text: str, ctx):
    """Parse TTIR text with the upstream bindings (after `rewrite_ttir`); a
    parse error names the kernel's line of the TTIR line it is on."""
    from mlir import ir
    generic = rewrite_ttir(text)
    try:
        return ir.Module.parse(generic, ctx)
    except ir.MLIRError as err:
        diags = getattr(err, "error_diagnostics", None) or []
        where = re.search(r":(\d+):\d+", str(diags[0].location)) if diags else None
        loc, line = None, ""
        if where:
            lines = text.splitlines()
            line = lines[int(where[1]) - 1].strip() if int(where[1]) <= len(lines) else ""
            loc = LocTable(text).resolve(_split_loc(line)[1])
            line = f" (TTIR line {where[1]}: {line})"
        message = diags[0].message if diags else str(err)
        raise CompileError(f"cannot read the kernel's TTIR: {message}{line}", loc) from None


@dataclass(frozen=True)
class OpView:
    """One op as a reader of the module sees it: its name and the types of its
    operands and results, as printed."""
    name: str
    operands: tuple[str, ...]
    results: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.name} : ({', '.join(self.operands)}) -> ({', '.join(self.results)})"


def triton_view(mod) -> list[OpView]:
    """Triton's view of a TTIR module (`triton._C.libtriton.ir.module`): its ops
    in post-order, under the names they are read as."""
    ops = []

    def visit(op):
        name = op.get_name()
        if name in DROPPED or (name == "tt.elementwise_inline_asm"
                               and _ordering_asm(op.get_str_attr("asm_string") or "")):
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


def read_ttir(text: str, ctx, expected: list[OpView] | None = None):
    """The upstream module of a TTIR text, checked against Triton's view of it
    when given (`triton_view` of the module the text was printed from)."""
    module = parse_ttir(text, ctx)
    if expected is not None:
        check_view(module, expected)
    return module
