"""Executed-block counters in LLVM IR text: the counting of
`edsl.lowering.counting` for modules that never were MLIR, the raw
functions in UPMEM C that clang compiles for the DPU model.

The same classes, by the same rules (`counting.op_classes`), read from the
text: each block of each counted function gets a counter, kept in a local
array and added to the tasklet's counters (`edsl_dpu_counters()`) where the
function returns; a 32-bit multiply adds its `mul_step`s to one more
counter. The bindings cannot read LLVM IR into MLIR, so the reading is by
hand, of what clang prints (one instruction a line). What a function runs
between a call of class MUTEX_LOCK and one of MUTEX_UNLOCK, on every path
through its blocks, counts as HELD + its class (UPMEM C has mutexes, the
EDSL not: `counting` has no such rule).

Code of `model_file` (the header by which the DPU model runs C, inlined or
in functions of its own) is the model's, not the DPU's: not counted. The
host's IR differs from the DPU's where the ABIs do (x86-64 is LP64: a
`long` is 64-bit data here and 32-bit on the DPU).
"""
from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping

from ..codegen import llvm_ir, upmem_c
from ..target.dpu import COUNTERS, HELD, MUTEX_LOCK, MUTEX_UNLOCK
from .counting import INTEGER_OPS, RUNTIME_PREFIX, OpFacts, op_classes

_LABEL = re.compile(r'^(?:[-\w.$]+|"[^"]*"):')
_INSTRUCTION = re.compile(r"^  (?:(?P<result>%[-\w.$]+) = )?(?:(?:tail|musttail|notail) )?(?P<opcode>[a-z]\w*)"
                          r"(?P<rest>.*)$")
_FLAGS = frozenset({"nuw", "nsw", "exact", "disjoint", "samesign", "nneg", "fast", "nnan", "ninf", "nsz", "arcp",
                    "contract", "afn", "reassoc", "inbounds", "nusw", "volatile", "atomic", "inrange"})
_CAST = {"trunc", "zext", "sext", "bitcast", "ptrtoint", "inttoptr", "addrspacecast", "fptosi", "fptoui",
         "sitofp", "uitofp", "fpext", "fptrunc"}
_VALUE = re.compile(r"%[-\w.$]+")
_TYPE_SUFFIX = re.compile(r"^(?:i\d+|f\d+|p\d+|v\d+\w+|bf16|f80|f128|ppcf128)$")
_DBG = re.compile(r"!dbg (!\d+)")


def _bits(t: str) -> int:
    """A type's width as `counting` takes it: integers theirs, double 64, others 32."""
    if re.fullmatch(r"i\d+", t):
        return int(t[1:])
    return 64 if t == "double" else 32


def _operands(rest: str) -> list[str]:
    """The comma-separated parts of an instruction, its metadata left out."""
    return [p for p in llvm_ir.split_top(rest) if p and not p.startswith("!") and not p.startswith("align ")]


def _unflagged(part: str) -> list[str]:
    words = part.split()
    while words and words[0] in _FLAGS:
        words.pop(0)
    return words


def _intrinsic(callee: str) -> str:
    """`llvm.smax.i32` -> `llvm.intr.smax`, as the LLVM dialect names it."""
    parts = callee.split(".")[1:]
    while len(parts) > 1 and _TYPE_SUFFIX.match(parts[-1]):
        parts.pop()
    return "llvm.intr." + ".".join(parts)


def _facts(opcode: str, rest: str, data64: set) -> OpFacts | None:
    """The instruction as `counting.op_classes` reads it; None where it is free."""
    parts = _operands(rest)
    if opcode in ("phi", "br", "ret", "unreachable", "extractvalue", "insertvalue", "freeze", "fence") \
            and not (opcode == "br" and rest.lstrip().startswith("i1 ")):
        return None
    if opcode == "br":
        return OpFacts("llvm.cond_br")
    if opcode in _CAST:
        return OpFacts(f"llvm.{opcode}")
    values = [p.split()[-1] for p in parts]
    wide = any(v in data64 for v in values)
    if opcode == "load":
        return OpFacts("llvm.load", _bits(_unflagged(parts[0])[0]))
    if opcode == "getelementptr":
        return OpFacts("llvm.getelementptr", indexed=any(v.startswith("%") for v in values[2:]))
    if opcode in ("icmp", "fcmp"):
        predicate, *typed = _unflagged(parts[0])
        return OpFacts(f"llvm.{opcode}", 1, _bits(_unflagged(" ".join(typed))[0]))
    if opcode == "select":
        return OpFacts("llvm.select", _bits(_unflagged(parts[1])[0]), wide=wide)
    if opcode == "call":
        return _call_facts(rest, data64)
    if len(parts) >= 2 and opcode not in ("store", "atomicrmw", "cmpxchg", "alloca"):   # a binary operation
        t = _unflagged(parts[0])[0]
        return OpFacts(f"llvm.{opcode}", _bits(t), _bits(t), tuple(not v.startswith("%") for v in values), wide)
    if opcode == "fneg":
        t = _unflagged(parts[0])[0]
        return OpFacts("llvm.fneg", _bits(t), _bits(t))
    return OpFacts(f"llvm.{opcode}")


_CALLEE = re.compile(r"(?P<type>\S+)(?: \([^()]*\))? (?P<callee>@[-\w.$]+|%[-\w.$]+)\((?P<args>.*)\)")


def _call_facts(rest: str, data64: set) -> OpFacts:
    m = _CALLEE.search(rest)
    if m is None or m["callee"].startswith("%"):          # (a call through a pointer)
        return OpFacts("llvm.call")
    callee, args = m["callee"][1:], llvm_ir.split_top(m["args"])
    first = _unflagged(args[0])[0] if args else "i32"
    if callee.startswith("llvm."):
        wide = any(a.split()[-1] in data64 for a in args)
        return OpFacts(_intrinsic(callee), _bits(m["type"]), _bits(first), wide=wide)
    return OpFacts("llvm.call", _bits(m["type"]), _bits(first), callee=callee)


@dataclass
class _Counted:
    """A function to count: its blocks (label line or None, lines), what
    each executes, and its counted 32-bit multiplies (block, line index)."""
    define: str
    blocks: list
    tallies: list = field(default_factory=list)
    muls: list = field(default_factory=list)

    @property
    def slots(self) -> int:
        """Its local counters: one a block, and one of multiply steps."""
        return len(self.blocks) + (1 if self.muls else 0)


def count_llvm_ir(text: str, first: int, model_file: str = "", calls: Mapping[str, tuple] = {},  # noqa: B006
                  skip: tuple = ()) -> tuple[str, list[dict]]:
    """(`text` with executed-block counters, what each counter's block
    executes by class): counters numbered from `first`, in order of the
    functions' blocks, then one of `mul_step`s if a multiply is counted;
    `calls`: the classes of calls by callee, beside `counting`'s own;
    functions whose names start with one of `skip` are not counted."""
    where = llvm_ir.debug_locations(text)
    lines = text.split("\n")
    parts: list = []                       # lines kept, or a _Counted
    i = 0
    while i < len(lines):
        m = llvm_ir.DEFINE.match(lines[i])
        if m is None:
            parts.append(lines[i])
            i += 1
            continue
        end = lines.index("}", i)
        scope = _DBG.search(lines[i])
        own = model_file and scope and where.get(scope[1], ("", 0, ""))[2] == model_file
        if m["name"].startswith((RUNTIME_PREFIX, *skip)) or own:
            parts += lines[i:end + 1]
        else:
            parts.append(_read(lines[i], lines[i + 1:end], where, model_file, calls))
        i = end + 1
    functions = [p for p in parts if isinstance(p, _Counted)]
    per_block = [t for f in functions for t in f.tallies]
    step = first + len(per_block) if any(f.muls for f in functions) else None
    if step is not None:
        per_block.append({"mul32_step": 1})
    out, base = [], first
    for part in parts:
        if isinstance(part, _Counted):
            out += _instrumented(part, base, step) + ["}"]
            base += len(part.blocks)
        else:
            out.append(part)
    result = "\n".join(out)
    needed = [(COUNTERS, f"declare ptr @{COUNTERS}()")] if functions else []
    if step is not None:
        needed += [("llvm.umin.i32", "declare i32 @llvm.umin.i32(i32, i32)"),
                   ("llvm.ctlz.i32", "declare i32 @llvm.ctlz.i32(i32, i1 immarg)")]
    for name, decl in needed:
        if not re.search(rf"^declare [^\n]*@{re.escape(name)}\(", result, re.M):
            result += "\n" + decl + "\n"
    return result, per_block


def _read(define: str, body: list[str], where: dict, model_file: str, calls: Mapping[str, tuple]) -> _Counted:
    """A function's blocks and what each executes."""
    f = _Counted(define, [(None, [])])
    for line in body:
        if _LABEL.match(line):
            f.blocks.append((line, []))
        else:
            f.blocks[-1][1].append(line)
    data64: set = set()
    uses = Counter(_VALUE.findall("\n".join(body)))          # (each value's definition and uses)
    held_at = _held_at_entry(f.blocks, calls)
    for b, (_, block) in enumerate(f.blocks):
        tally: dict = {}
        held = held_at[b]
        fused = _fused_compare(block, uses)
        for k, line in enumerate(block):
            m = _INSTRUCTION.match(line)
            if m is None:
                continue
            dbg = _DBG.search(line)
            if model_file and dbg and where.get(dbg[1], ("", 0, ""))[2] == model_file:
                continue                   # (the model's own code)
            facts = _facts(m["opcode"], m["rest"], data64)
            if facts is None or (fused is not None and m["result"] == fused):
                continue
            if m["result"] and facts.result_bits == 64 and (m["opcode"] == "load" or
                                                              (facts.wide and facts.name in INTEGER_OPS)):
                data64.add(m["result"])
            for cls in op_classes(facts, calls):
                held = held or cls == MUTEX_LOCK
                # (a multiply's steps, counted apart, count as not held)
                key = HELD + cls if held else cls
                tally[key] = tally.get(key, 0) + 1
                held = held and cls != MUTEX_UNLOCK
                if cls == "mul32":
                    f.muls.append((b, k))
        f.tallies.append(tally)
    return f


_TARGET = re.compile(r"\blabel %([-\w.$]+|\"[^\"]*\")")


def _mutex_call(line: str, calls: Mapping[str, tuple]) -> bool | None:
    """True for a call that locks a mutex, False for one that unlocks it
    (their classes in `calls`), None for any other line."""
    m = _INSTRUCTION.match(line)
    c = _CALLEE.search(m["rest"]) if m is not None and m["opcode"] == "call" else None
    classes = calls.get(c["callee"][1:], ()) if c is not None else ()
    return True if MUTEX_LOCK in classes else False if MUTEX_UNLOCK in classes else None


def _held_at_entry(blocks: list, calls: Mapping[str, tuple]) -> list[bool]:
    """Per block (label line or None, lines): whether its tasklet holds a
    mutex where it starts, on every path from the function's entry (a
    block no branch reaches holds none)."""
    if not any(MUTEX_LOCK in classes for classes in calls.values()):
        return [False] * len(blocks)          # (no call locks: no line need be read)
    index = {_LABEL.match(label)[0][:-1].strip('"'): b for b, (label, _) in enumerate(blocks) if label}
    preds: list[list[int]] = [[] for _ in blocks]
    last: list[bool | None] = []           # the block's last lock (True) or unlock (False)
    for b, (_, lines) in enumerate(blocks):
        for name in _TARGET.findall("\n".join(lines)):
            if name.strip('"') in index:
                preds[index[name.strip('"')]].append(b)
        changes = [c for c in (_mutex_call(line, calls) for line in lines) if c is not None]
        last.append(changes[-1] if changes else None)
    if not any(c is not None for c in last):
        return [False] * len(blocks)
    held = [bool(preds[b]) for b in range(len(blocks))]       # (from all held, down to what holds)
    changed = True
    while changed:
        changed = False
        for b in range(len(blocks)):
            now = bool(preds[b]) and all(held[p] if last[p] is None else last[p] for p in preds[b])
            changed, held[b] = changed or now != held[b], now
    return held


def _instrumented(f: _Counted, base: int, step: int | None) -> list[str]:
    """The function's lines with its counters (its blocks' numbered from
    `base`; `step`: the multiply-step counter's number)."""
    array = f"[{f.slots} x i64]"
    out = [f.define, f"  %edsl.count = alloca {array}, align 8",
           f"  store {array} zeroinitializer, ptr %edsl.count, align 8"]
    targets = [base + k for k in range(len(f.blocks))] + ([step] if f.muls else [])
    for b, (label, block) in enumerate(f.blocks):
        if label is not None:
            out.append(label)
        phis = 0
        while phis < len(block) and re.match(r"^\s+%[-\w.$]+ = phi ", block[phis]):
            phis += 1
        out += block[:phis] + _increment(array, f"%edsl.count{b}", b, "1")
        for k in range(phis, len(block)):
            line = block[k]
            if re.match(r"^\s+ret\b", line):
                out += _flush(array, f"%edsl.flush{b}", targets)
            out.append(line)
            if (b, k) in f.muls:
                out += _mul_steps(array, f"%edsl.mul{b}.{k}", _INSTRUCTION.match(line)["rest"], f.slots - 1)
    return out


def _fused_compare(block: list[str], uses: Counter) -> str | None:
    """An icmp's result used only by the conditional branch ending `block`
    (part of the branch); `uses`: how often each value's name occurs in the
    function."""
    ends = [line for line in block if line.strip() and not line.lstrip().startswith(("#dbg_", ";"))]
    if not ends:
        return None
    m = re.match(r"^\s+br i1 (%[-\w.$]+),", ends[-1])
    if m is None:
        return None
    name = m[1]
    defined = any(re.match(rf"^\s+{re.escape(name)} = icmp ", line) for line in block)
    return name if defined and uses[name] == 2 else None          # (its definition and the branch)


def _increment(array: str, name: str, slot: int, by: str) -> list[str]:
    return [f"  {name} = getelementptr inbounds {array}, ptr %edsl.count, i64 0, i64 {slot}",
            f"  {name}.v = load i64, ptr {name}, align 8",
            f"  {name}.w = add i64 {name}.v, {by}",
            f"  store i64 {name}.w, ptr {name}, align 8"]


def _flush(array: str, name: str, targets: list[int]) -> list[str]:
    """Add the function's local counts to the tasklet's counters `targets` (before a return)."""
    out = [f"  {name} = call ptr @{COUNTERS}()"]
    for j, index in enumerate(targets):
        out += [f"  {name}.a{j} = getelementptr inbounds {array}, ptr %edsl.count, i64 0, i64 {j}",
                f"  {name}.v{j} = load i64, ptr {name}.a{j}, align 8",
                f"  {name}.p{j} = getelementptr inbounds i64, ptr {name}, i64 {index}",
                f"  {name}.q{j} = load i64, ptr {name}.p{j}, align 8",
                f"  {name}.s{j} = add i64 {name}.q{j}, {name}.v{j}",
                f"  store i64 {name}.s{j}, ptr {name}.p{j}, align 8"]
    return out


def _mul_steps(array: str, name: str, rest: str, slot: int) -> list[str]:
    """After a counted multiply, its `mul_step`s on the DPU (`__mulsi3`): the
    bit length of the smaller operand as unsigned 32-bit, at least 1 (as
    `counting._count_mul_steps`)."""
    parts = _operands(rest)
    words = _unflagged(parts[0])
    t, a, b = words[0], words[-1], parts[1].split()[-1]
    out = []
    if t != "i32":
        op = "trunc" if _bits(t) > 32 else "zext"
        out += [f"  {name}.a = {op} {t} {a} to i32", f"  {name}.b = {op} {t} {b} to i32"]
        a, b = f"{name}.a", f"{name}.b"
    out += [f"  {name}.s = call i32 @llvm.umin.i32(i32 {a}, i32 {b})",
            f"  {name}.o = or i32 {name}.s, 1",
            f"  {name}.z = call i32 @llvm.ctlz.i32(i32 {name}.o, i1 false)",
            f"  {name}.n = sub i32 32, {name}.z",
            f"  {name}.e = zext i32 {name}.n to i64"]
    return out + _increment(array, f"{name}.c", slot, f"{name}.e")


def count_dpu_c(llvm: str, first: int) -> tuple[str, list[dict]]:
    """`count_llvm_ir` of a module of UPMEM C (`upmem_c.compile_c`): its
    prelude's code is the model's, as are the function that resets its
    variables and the functions of its mutexes, handshakes and barriers
    (a call of one is its class: `upmem_c.SYNC_CALLS`), and a load or store
    through a `__mram_ptr` pointer, the prelude's call, is a DMA, as
    `mram_read` is."""
    calls = {upmem_c.MRAM_LOAD: ("dma",), upmem_c.MRAM_STORE: ("dma",),
             **{name: (cls,) for name, cls in upmem_c.SYNC_CALLS.items()}}
    return count_llvm_ir(llvm, first, os.path.normpath(os.path.join(upmem_c.INCLUDE_DIR, upmem_c.PRELUDE)),
                         calls, (upmem_c.RESET_PREFIX, *upmem_c.SYNC_CALLS))
