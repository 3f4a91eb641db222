"""Reading clang's LLVM IR of a raw function (CUDA C or DPU C): each defined
function's signature and, for TLE-Raw's one-list `call`, which parameters a
function returns. The module's text is read (the MLIR bindings have no LLVM
IR importer).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..base.errors import CompileError


DEFINE = re.compile(r"^define (?P<head>[^@]*?)@(?P<name>[-\w$.]+|\"[^\"]+\")\((?P<params>.*)\)(?P<tail>[^(]*)\{$",
                    re.M)
_LINKAGES = ("private", "internal", "available_externally", "linkonce", "linkonce_odr", "weak", "weak_odr",
             "common", "appending", "extern_weak")
# The LLVM types a parameter may have, as the LLVM dialect spells them.
_SCALARS = {"half": "f16", "bfloat": "bf16", "float": "f32", "double": "f64"}


@dataclass(frozen=True)
class LlvmFunction:
    name: str              # the symbol (mangled for C++)
    params: tuple          # LLVM type of each parameter
    result: str            # LLVM type of the result ("void" if none)
    external: bool         # visible outside its module (a candidate for fl.call)

    @property
    def source_name(self) -> str:
        """The name the source gives it (a C++ symbol's unqualified name)."""
        m = re.match(r"_Z(\d+)", self.name)
        return self.name[m.end():m.end() + int(m[1])] if m else self.name


def split_top(text: str) -> list[str]:
    """`text` split at commas outside brackets, each part stripped."""
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:k].strip())
            start = k + 1
    if text.strip():
        parts.append(text[start:].strip())
    return parts


_METADATA = re.compile(r"^(!\d+) = (?:distinct )?!(\w+)\((.*)\)$", re.M)


def _field(body: str, name: str) -> str | None:
    m = re.search(rf"\b{name}: (!\d+|\d+|\"(?:[^\"\\]|\\.)*\")", body)
    return m[1] if m else None


def debug_locations(llvm: str) -> dict:
    """Each debug location and scope of the module (by metadata id: a
    DILocation, the DISubprogram of a function) as (its file as the line table
    names it, its line or None for a scope, the file's path)."""
    nodes = {k: (kind, body) for k, kind, body in _METADATA.findall(llvm)}

    def file_of(scope: str | None) -> tuple[str, str]:
        for _ in range(64):
            kind, body = nodes.get(scope or "", ("", ""))
            if kind == "DIFile":
                name = (_field(body, "filename") or '""')[1:-1]
                return name, os.path.normpath(os.path.join((_field(body, "directory") or '""')[1:-1], name))
            scope = _field(body, "file") or _field(body, "scope")
        return "", ""
    found = {}
    for k, (kind, body) in nodes.items():
        if kind == "DILocation":
            name, path = file_of(_field(body, "scope"))
            found[k] = (name, int(_field(body, "line") or 0), path)
        elif kind in ("DISubprogram", "DILexicalBlock", "DILexicalBlockFile"):
            name, path = file_of(k)
            found[k] = (name, None, path)
    return found


_TYPE = re.compile(r"ptr(?: addrspace\(\d+\))?|i\d+|half|bfloat|float|double|<\d+ x [^>]+>|"
                   r"%[-\w$.]+|%\"[^\"]+\"|\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}|\[[^\]]*\]|void")


def leading_type(text: str) -> str | None:
    """The LLVM type `text` starts with (`i32 %v`, `{ i32, i8 } %s`, `[4 x [8 x i64]] %a`), or None."""
    if text[:1] in "[{" or text.startswith("<{"):       # (an aggregate: to its closing bracket, nested ones within)
        depth = 0
        for k, ch in enumerate(text):
            depth += ch in "[{<(" and 1 or -(ch in "]}>)")
            if depth == 0:
                return text[:k + 1]
        return None
    m = _TYPE.match(text)
    return m.group(0) if m else None


def _leading_type(param: str) -> str:
    t = leading_type(param)
    if t is None:
        raise CompileError(f"unexpected LLVM parameter {param!r}")
    return t


def _result_type(head: str) -> str:
    """The result type at the end of a `define` line's head (after linkage and attributes)."""
    head = head.strip()
    for m in _TYPE.finditer(head):
        if m.end() == len(head):
            return m.group(0)
    raise CompileError(f"unexpected LLVM function head {head!r}")


def functions(llvm: str) -> dict[str, LlvmFunction]:
    """The functions a module defines, by symbol."""
    found = {}
    for m in DEFINE.finditer(llvm):
        name = m["name"].strip('"')
        words = m["head"].split()
        params = tuple(_leading_type(p) for p in split_top(m["params"]) if p != "...")
        found[name] = LlvmFunction(name, params, _result_type(m["head"]), not any(w in _LINKAGES for w in words))
    return found


def pick(llvm: str, extern_func_name: str, what: str, kind: str = "__device__", ignore: tuple = ()) -> LlvmFunction:
    """The function `fl.call` calls: the one named `extern_func_name` (its
    symbol, or its name in the source), else the one function the module
    makes visible."""
    defined = {name: f for name, f in functions(llvm).items() if name not in ignore}
    visible = [f for f in defined.values() if f.external]
    if extern_func_name:
        named = [f for f in defined.values() if extern_func_name in (f.name, f.source_name)]
        if len(named) != 1:
            have = ", ".join(f.source_name for f in visible) or "none"
            raise CompileError(f"{what}: {'no' if not named else 'more than one'} function named "
                               f"{extern_func_name!r} (functions it defines: {have})")
        return named[0]
    if len(visible) != 1:
        have = ", ".join(f.source_name for f in visible) or "none"
        raise CompileError(f"{what}: defines {len(visible)} {kind} functions ({have}); name the one to call "
                           f"with extern_func_name=")
    return visible[0]


def mlir_type(llvm_type: str) -> str:
    """A parameter's LLVM type as the LLVM dialect spells it, or "" if `fl.call`
    cannot pass it (aggregates)."""
    m = re.fullmatch(r"ptr(?: addrspace\((\d+)\))?", llvm_type)
    if m:
        return f"!llvm.ptr<{m[1]}>" if m[1] and m[1] != "0" else "!llvm.ptr"
    if re.fullmatch(r"i\d+", llvm_type):
        return llvm_type
    return _SCALARS.get(llvm_type, "")


def returned_params(llvm: str, fn: LlvmFunction) -> list[int] | None:
    """The parameters whose memory the function returns, in order: a returned
    pointer, or the base pointer (field 0) of each memref descriptor in a
    returned struct, traced back to a parameter; None if one cannot be, or
    if its returns do not agree."""
    if fn.result == "void":
        return []
    body = _body(llvm, fn.name)
    defs = {m[1]: m[2] for m in re.finditer(r"^\s*(%[-\w$.]+) = (.*)$", body, re.M)}
    params = [(p.split()[-1] if p.split()[-1].startswith("%") else f"%{k}")
              for k, p in enumerate(split_top(DEFINE.match(_define_line(llvm, fn.name))["params"]))]
    found = {_returned(value, fn.result, defs, params)
             for value in re.findall(r"^\s*ret \S.* (%[-\w$.]+)\s*$", body, re.M)}
    return list(found.pop()) if len(found) == 1 and None not in found else None


def _origin(value: str, defs: dict, params: list[str]) -> int | None:
    """The parameter a pointer value is (through casts and address arithmetic)."""
    for _ in range(64):
        if value in params:
            return params.index(value)
        m = re.match(r"(?:addrspacecast|bitcast) \S.*? (%[-\w$.]+) to ", defs.get(value, "")) or \
            re.match(r"getelementptr (?:inbounds )?(?:nuw )?\S+, \S.*? (%[-\w$.]+)(?:, |$)", defs.get(value, ""))
        if m is None:
            return None
        value = m[1]
    return None


def _returned(value: str, result: str, defs: dict, params: list[str]) -> tuple | None:
    if result.startswith("ptr"):
        k = _origin(value, defs, params)
        return None if k is None else (k,)
    # an aggregate: follow the insertvalue chain, keeping the pointers put in
    # field 0 of the struct (one descriptor) or of each of its structs (several)
    bases: dict[tuple, str] = {}
    while value in defs:
        m = re.match(r"insertvalue \S.*? (%[-\w$.]+|poison|undef), (\S.*?) (%[-\w$.]+|[-\w.]+), ([\d, ]+)$",
                     defs[value])
        if m is None:
            return None
        index = tuple(int(i) for i in m[4].split(","))
        if m[2].startswith("ptr") and index[-1] == 0 and len(index) <= 2 and index not in bases:
            bases[index] = m[3]
        value = m[1]
    picks = sorted(i for i in bases if len(i) == 2) or [i for i in bases if i == (0,)]
    found = tuple(_origin(bases[i], defs, params) for i in picks)
    return None if not found or None in found else found


def _define_line(llvm: str, name: str) -> str:
    for m in DEFINE.finditer(llvm):
        if m["name"].strip('"') == name:
            return m.group(0)
    raise KeyError(name)


def _body(llvm: str, name: str) -> str:
    start = llvm.index(_define_line(llvm, name))
    end = llvm.find("\n}\n", start)
    return llvm[start:end]


__all__ = ["LlvmFunction", "functions", "mlir_type", "pick", "returned_params"]
