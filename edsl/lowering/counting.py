"""Executed-block counters: a pass on LLVM-dialect modules for the DPU time estimate.

`count_executed_blocks` gives every block of every counted function a counter
(an i64 in an array the runtime provides per tasklet through
`edsl_dpu_counters() -> !llvm.ptr`), incremented when the block starts, and
records in the module what each block executes, by operation class
(`edsl.dpu.timing.INSTRUCTION_COSTS`, the DPU instruction cost table, says
what each class costs and where that number comes from):

    module attributes {edsl.counters = N : i64,
                       edsl.counter_ops = {alu = array<i64: ...N counts>, load = ..., ...}}

After a launch, counter k times the block's counts, summed over blocks, is
what a tasklet executed (`edsl.dpu.timing.CounterTable`). Programs run it
before they are built, on request (a kernel's `dpu_timing=True`, an EDSL
function's `run(..., timing=True)`), so only the program's own code is
counted, not the DPU runtime library linked in afterwards. The classes model the DPU, a 32-bit
core without FPU: 64-bit arithmetic costs more only on 64-bit data (indices
and addresses are 32-bit there); a compare feeding the branch after it is
part of the branch (jcc); casts, constants and struct moves are free.

A 32-bit multiply is a routine on the DPU (UPMEM's `__mulsi3`: one
`mul_step` per bit of the smaller operand, stopping when no bits are left),
so its cost depends on the values: after each counted one the pass adds the
bit length of the smaller operand (at least 1) to one more counter, the last
(class `mul32_step`, one per step; `mul32` is the routine's fixed part, read
from the SDK's source of `__mulsi3`).

Each counted function keeps its counters in locals (stack slots LLVM keeps
in registers: a loop's counts cost a register, or are its trip count) and
adds them to the tasklet's array where it returns, so that counting costs
the model little time (`benchmarks/dpu_timing.py --overhead`); the rest of
the program is unchanged, so results are bit-identical with and without
counting.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from mlir import ir
from mlir.dialects import llvm
from mlir.passmanager import PassManager

from ..target.dpu import (BARRIER, COUNTERS, DMA, FAIL, FAILED, ME, MRAM_READ, MRAM_WRITE, NOTE, NOTE_ACCESS,
                          NR_TASKLETS, RACE_NOTE, WATCH_WAIT, YIELD)
from ..base.errors import LoweringError

COUNTERS_ATTR = "edsl.counters"      # i64: how many counters the program uses
OPS_ATTR = "edsl.counter_ops"        # class -> array<i64>: counts per counter

# Calls by callee: the runtime's DMA (EDSL's and kernels'), barrier and tasklet-register reads.
DMA_CALLEES = frozenset({MRAM_READ, MRAM_WRITE, DMA})
SYNC_CALLEES = frozenset({BARRIER})
REGISTER_CALLEES = frozenset({ME, NR_TASKLETS})
# A while loop's test that its DPU still runs: what the runtime's function executes
# (the DPU's state from the context, its flag, a compare), inlined on a DPU.
STATE_CALLEES = {FAILED: ("load", "load", "alu")}
# The model's own bookkeeping (the access log of a launch on several DPUs, the race
# log, the watch for waits that cannot end, its tasklets' turns on one host thread):
# no DPU work.
MODEL_CALLEES = frozenset({NOTE, NOTE_ACCESS, RACE_NOTE, WATCH_WAIT, YIELD})
# Functions of the runtime itself, whose blocks are not the program's work.
RUNTIME_PREFIX = "edsl_dpu_"

_FREE = frozenset({
    "llvm.mlir.constant", "llvm.mlir.zero", "llvm.mlir.undef", "llvm.mlir.poison",
    "llvm.mlir.addressof", "llvm.bitcast", "llvm.inttoptr", "llvm.ptrtoint", "llvm.addrspacecast",
    "llvm.trunc", "llvm.sext", "llvm.zext", "llvm.extractvalue", "llvm.insertvalue", "llvm.br",
    "llvm.return", "llvm.unreachable", "llvm.freeze", "llvm.fence", "llvm.intr.assume",
    "llvm.intr.lifetime.start", "llvm.intr.lifetime.end", "llvm.intr.dbg.value", "llvm.intr.dbg.declare",
})
_INT = frozenset({"llvm.add", "llvm.sub", "llvm.and", "llvm.or", "llvm.xor", "llvm.shl", "llvm.lshr",
                  "llvm.ashr", "llvm.icmp", "llvm.select", "llvm.intr.smax", "llvm.intr.smin",
                  "llvm.intr.umax", "llvm.intr.umin", "llvm.intr.abs"})
_MUL = frozenset({"llvm.mul"})
_DIV = frozenset({"llvm.sdiv", "llvm.udiv", "llvm.srem", "llvm.urem"})
_FLOAT = {"llvm.fadd": "fadd", "llvm.fsub": "fsub", "llvm.fmul": "fmul", "llvm.fdiv": "fdiv",
          "llvm.frem": "fdiv"}
_FCONV = frozenset({"llvm.sitofp", "llvm.uitofp", "llvm.fptosi", "llvm.fptoui", "llvm.fpext",
                    "llvm.fptrunc", "llvm.intr.floor", "llvm.intr.ceil", "llvm.intr.round",
                    "llvm.intr.roundeven", "llvm.intr.trunc", "llvm.intr.rint", "llvm.intr.nearbyint"})
_FBITS = frozenset({"llvm.fneg", "llvm.intr.fabs", "llvm.intr.copysign", "llvm.intr.is.fpclass"})
_FMINMAX = frozenset({"llvm.intr.minnum", "llvm.intr.maxnum", "llvm.intr.minimum", "llvm.intr.maximum"})
_FMA = frozenset({"llvm.intr.fma", "llvm.intr.fmuladd"})
_MATH_PREFIX = ("llvm.intr.exp", "llvm.intr.log", "llvm.intr.sqrt", "llvm.intr.pow", "llvm.intr.sin",
                "llvm.intr.cos", "llvm.intr.tan", "llvm.intr.powi", "llvm.intr.atan", "llvm.intr.asin",
                "llvm.intr.acos", "llvm.intr.sinh", "llvm.intr.cosh", "llvm.intr.tanh")
_ATOMIC = frozenset({"llvm.atomicrmw", "llvm.cmpxchg"})
# Integer operations whose result is 64-bit data where an operand is.
INTEGER_OPS = _INT | _MUL | _DIV


def _bits(ty: ir.Type) -> int:
    if isinstance(ty, ir.IntegerType):
        return ty.width
    return 64 if isinstance(ty, ir.F64Type) else 32


def _owner(value: ir.Value):
    """The operation defining `value`, or None for a block argument."""
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _is_constant(value: ir.Value) -> bool:
    owner = _owner(value)
    return owner is not None and owner.name == "llvm.mlir.constant"


def _callee(op: ir.Operation) -> str | None:
    attr = op.attributes["callee"] if "callee" in op.attributes else None
    return ir.FlatSymbolRefAttr(attr).value if attr is not None else None


@dataclass(frozen=True)
class OpFacts:
    """What an operation's classes depend on, read from the LLVM dialect here
    or from LLVM IR text (`edsl.lowering.counting_llvm_ir`)."""
    name: str                          # as the LLVM dialect names it: llvm.add, llvm.intr.smax, llvm.call
    result_bits: int = 32              # (integers their width; f64 64; other types 32, as on the DPU)
    operand_bits: int = 32             # of the first operand
    constant: tuple = ()               # per operand, whether it is a constant
    wide: bool = False                 # an operand is 64-bit data (not an index or address)
    callee: str | None = None
    indexed: bool = False              # a getelementptr with an index known at run time only


def _classify(op: ir.Operation, data64: set, fused: set, contexts: set) -> tuple[str, ...]:
    """The operation classes `op` executes as on the DPU (empty: free)."""
    if op.name in _FREE or op in fused:
        return ()
    if op.name == "llvm.load" and _context_read(op, contexts):
        return ("alu",)
    return op_classes(OpFacts(
        op.name, _bits(op.results[0].type) if op.results else 32,
        _bits(op.operands[0].type) if op.operands else 32, tuple(_is_constant(v) for v in op.operands),
        any(v in data64 for v in op.operands), _callee(op) if op.name == "llvm.call" else None,
        op.name == "llvm.getelementptr" and len(op.operands) > 1))


def op_classes(op: OpFacts, calls: Mapping[str, tuple] = {}) -> tuple[str, ...]:  # noqa: B006 (read only)
    """The operation classes an operation executes as on the DPU (empty:
    free); `calls`: the classes of calls to other functions, by callee."""
    name = op.name
    if name in _FREE:
        return ()
    if name == "llvm.load":
        return ("load",)
    if name == "llvm.store":
        return ("store",)
    if name == "llvm.getelementptr":
        return ("address",) if op.indexed else ()
    if name in ("llvm.cond_br", "llvm.switch"):
        return ("branch",)
    if name in _INT:
        return ("alu64",) if op.wide and op.result_bits == 64 else ("alu",)
    if name in _MUL or name in _DIV:
        constant = op.constant + (False, False)
        if op.result_bits <= 16 or constant[1] or (name in _MUL and constant[0]):
            return ("alu",)       # 8x8 multiplies, shifts, or a constant's few adds
        kind = "mul" if name in _MUL else "div"
        return (f"{kind}64",) if op.wide and op.result_bits == 64 else (f"{kind}32",)
    if name in _FLOAT:
        return (f"{_FLOAT[name]}{64 if op.result_bits == 64 else 32}",)
    if name == "llvm.fcmp" or name in _FMINMAX:
        return ("fcmp64",) if op.operand_bits == 64 else ("fcmp32",)
    if name in _FMA:
        w = 64 if op.result_bits == 64 else 32
        return (f"fmul{w}", f"fadd{w}")
    if name in _FCONV:
        return ("fconv",)
    if name in _FBITS:
        return ("alu",)
    if name.startswith(_MATH_PREFIX):
        return ("math",)
    if name in _ATOMIC:
        return ("load", "alu", "store")
    if name == "llvm.call":
        callee = op.callee
        if callee in calls:
            return calls[callee]
        if callee in MODEL_CALLEES:
            return ()
        if callee in DMA_CALLEES:
            return ("dma",)
        if callee in SYNC_CALLEES:
            return ("sync",)
        if callee in REGISTER_CALLEES:
            return ("alu",)
        if callee in STATE_CALLEES:
            return STATE_CALLEES[callee]
        if callee is not None and callee.rstrip("f") in _LIBM:
            return ("math",)
        return ("call",)
    return ("alu",)               # anything else: one instruction


_LIBM = frozenset({"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "pow", "sin",
                   "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh",
                   "atanh", "erf", "erfc", "hypot", "fmod"})


def _contexts(blocks) -> set:
    """The launch contexts a function hands the runtime (`__dpu_dma`'s last
    operand, `__dpu_fail`'s first): the model's stand-in for DPU registers."""
    found = set()
    for block in blocks:
        for op in block.operations:
            op = op.operation
            if op.name == "llvm.call" and _callee(op) in (DMA, FAIL):
                found.add(op.operands[-1] if _callee(op) == DMA else op.operands[0])
    return found


def _context_read(load: ir.Operation, contexts: set) -> bool:
    """A load of a slot of a launch context (the tasklet id, say): a register read on the DPU."""
    owner = _owner(load.operands[0])
    return (owner is not None and owner.name == "llvm.getelementptr" and len(owner.operands) == 1
            and owner.operands[0] in contexts)


def _fused_compares(block: ir.Block) -> set:
    """Compares whose only use is the conditional branch ending their block."""
    ops = list(block.operations)
    if not ops or ops[-1].operation.name != "llvm.cond_br":
        return set()
    cond = ops[-1].operation.operands[0]
    owner = _owner(cond)
    if owner is not None and owner.name == "llvm.icmp" and owner.block == block and _single_use(cond):
        return {owner}
    return set()


def _single_use(value: ir.Value) -> bool:
    return sum(1 for _ in value.uses) == 1


@dataclass(frozen=True)
class CounterTable:
    """What each executed-block counter's block executes: `ops[class][k]`
    operations of `class` (a key of edsl.dpu.timing.INSTRUCTION_COSTS) per
    execution of counter k's block. A program's metadata carries it as
    `to_json()`."""
    counters: int
    ops: Mapping[str, tuple[int, ...]]

    def executed(self, counts: Sequence[int]) -> dict[str, int]:
        """Operations executed by a tasklet whose counters read `counts`."""
        if len(counts) < self.counters:
            raise ValueError(f"{len(counts)} counters read, the program has {self.counters}")
        return {cls: sum(c * n for c, n in zip(counts, per) if n) for cls, per in self.ops.items()}

    def extended(self, per_block: Sequence[Mapping[str, int]]) -> "CounterTable":
        """The table with more counters after its own: `per_block[k]` what
        counter `self.counters + k`'s block executes, by class."""
        classes = sorted(set(self.ops) | {c for tally in per_block for c in tally})
        return CounterTable(self.counters + len(per_block),
                            {c: tuple(self.ops.get(c, (0,) * self.counters)) + tuple(t.get(c, 0) for t in per_block)
                             for c in classes})

    def to_json(self) -> dict:
        return {"counters": self.counters, "ops": {c: list(v) for c, v in self.ops.items()}}

    @staticmethod
    def from_json(data: Mapping) -> "CounterTable":
        return CounterTable(int(data["counters"]), {c: tuple(v) for c, v in data["ops"].items()})


def counter_table(module: ir.Module) -> CounterTable | None:
    """The table `count_executed_blocks` left in `module`, or None."""
    attrs = module.operation.attributes
    if COUNTERS_ATTR not in attrs:
        return None
    n = ir.IntegerAttr(attrs[COUNTERS_ATTR]).value
    table = ir.DictAttr(attrs[OPS_ATTR])
    ops = {}
    for i in range(len(table)):
        named = table[i]
        ops[named.name] = tuple(ir.DenseI64ArrayAttr(named.attr))
    return CounterTable(n, ops)


def _counted(func: ir.Operation, skip: Iterable[str]) -> bool:
    name = ir.StringAttr(func.attributes["sym_name"]).value
    return bool(func.regions[0].blocks) and not name.startswith(RUNTIME_PREFIX) and name not in skip


def count_executed_blocks(module: ir.Module, skip: Iterable[str] = ()) -> CounterTable:
    """Insert the counters into `module` (LLVM dialect), in place; functions
    named in `skip` (and the runtime's own) are not counted."""
    skip = frozenset(skip)
    if COUNTERS_ATTR in module.operation.attributes:
        raise LoweringError("the module already has executed-block counters")
    ctx = module.context
    with ctx, ir.Location.unknown(ctx):
        i64 = ir.IntegerType.get_signless(64)
        funcs = [op.operation for op in module.body.operations if op.operation.name == "llvm.func"]
        bases: dict = {}
        per_block: list[dict[str, int]] = []
        muls: list[tuple[ir.Operation, ir.Operation]] = []  # (32-bit multiply, its function)
        for func in funcs:
            if not _counted(func, skip):
                continue
            blocks = list(func.regions[0].blocks)
            first = len(per_block)
            data64: set = set()
            contexts = _contexts(blocks)
            for block in blocks:
                fused = _fused_compares(block)
                tally: dict[str, int] = {}
                for op in block.operations:
                    op = op.operation
                    if op.name == "llvm.load" and _bits(op.results[0].type) == 64 \
                            and not _context_read(op, contexts):
                        data64.add(op.results[0])
                    for cls in _classify(op, data64, fused, contexts):
                        tally[cls] = tally.get(cls, 0) + 1
                        if cls == "mul32":
                            if all(isinstance(v.type, ir.IntegerType) for v in op.operands):
                                muls.append((op, func))
                            else:             # not a scalar: every step, as for full-width operands
                                tally["mul32_step"] = tally.get("mul32_step", 0) + 32
                    if op.name in INTEGER_OPS and op.results \
                            and any(v in data64 for v in op.operands) and _bits(op.results[0].type) == 64:
                        data64.add(op.results[0])
                per_block.append(tally)
            bases[func] = _FunctionCounters(blocks, first)
        if muls:                      # the multiply-step counter, after the blocks' ones
            slot_index = len(per_block)
            per_block.append({"mul32_step": 1})
            for op, func in muls:
                _count_mul_steps(op, bases[func].local(slot_index))
        for counters in bases.values():
            counters.flush_at_returns()
        n = len(per_block)
        classes = sorted({c for tally in per_block for c in tally})
        table = {c: tuple(t.get(c, 0) for t in per_block) for c in classes}
        if COUNTERS not in ir.SymbolTable(module.operation):
            with ir.InsertionPoint(module.body):
                decl = llvm.LLVMFuncOp(COUNTERS, ir.TypeAttr.get(ir.Type.parse("!llvm.func<ptr ()>")),
                                       sym_visibility="private")
                decl.operation.move_before(module.body.operations[0])
        attrs = module.operation.attributes
        attrs[COUNTERS_ATTR] = ir.IntegerAttr.get(i64, n)
        attrs[OPS_ATTR] = ir.DictAttr.get({c: ir.DenseI64ArrayAttr.get(list(v)) for c, v in table.items()})
    return CounterTable(n, table)


class _FunctionCounters:
    """A counted function's counters: each a local i64 (a stack slot that
    LLVM keeps in a register, so that a loop's counts are a register's, or
    its trip count, not a load and a store per trip), added to the tasklet's
    counters (`edsl_dpu_counters()`) where the function returns. (A function
    that does not return, as one that fails, leaves its counts uncounted.)"""

    def __init__(self, blocks: list, first: int):
        i64 = ir.IntegerType.get_signless(64)
        self.blocks, self.locals = blocks, {}
        with ir.InsertionPoint.at_block_begin(blocks[0]):
            self.one = llvm.ConstantOp(i64, ir.IntegerAttr.get(i64, 1)).result
            self.zero = llvm.ConstantOp(i64, ir.IntegerAttr.get(i64, 0)).result
        self._last = self.zero.owner.operation      # the entry's locals come after it
        for k, block in enumerate(blocks):
            slot = self.local(first + k)
            with ir.InsertionPoint.after(self._last) if k == 0 else ir.InsertionPoint.at_block_begin(block):
                llvm.StoreOp(llvm.add(llvm.load(i64, slot), self.one, 0), slot)

    def local(self, index: int) -> ir.Value:
        """The local of counter `index` (made zero in the entry block)."""
        if index not in self.locals:
            i64 = ir.IntegerType.get_signless(64)
            with ir.InsertionPoint.after(self._last):
                slot = llvm.alloca(llvm.PointerType.get(), self.one, i64, alignment=8)
                self._last = llvm.StoreOp(self.zero, slot).operation
            self.locals[index] = slot
        return self.locals[index]

    def flush_at_returns(self) -> None:
        i64, ptr = ir.IntegerType.get_signless(64), llvm.PointerType.get()
        for block in self.blocks:
            end = list(block.operations)[-1].operation
            if end.name != "llvm.return":
                continue
            with ir.InsertionPoint(end):
                base = llvm.call(ptr, [], [], [], callee=ir.FlatSymbolRefAttr.get(COUNTERS))
                for index, local in sorted(self.locals.items()):
                    slot = llvm.getelementptr(ptr, base, [], [index], i64, 0)
                    llvm.StoreOp(llvm.add(llvm.load(i64, slot), llvm.load(i64, local), 0), slot)


def _count_mul_steps(mul: ir.Operation, local: ir.Value) -> None:
    """After `mul`, add to the multiply-step counter's `local` the
    `mul_step`s of `__mulsi3`: the bit length of the smaller operand as
    unsigned 32-bit (addresses and indices are 32-bit on the DPU), at least 1."""
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    with ir.InsertionPoint.after(mul):
        a, b = mul.operands[0], mul.operands[1]
        if _bits(a.type) > 32:
            a, b = llvm.trunc(i32, a, 0), llvm.trunc(i32, b, 0)
        elif _bits(a.type) < 32:
            a, b = llvm.zext(i32, a), llvm.zext(i32, b)
        c1 = llvm.ConstantOp(i32, ir.IntegerAttr.get(i32, 1)).result
        c32 = llvm.ConstantOp(i32, ir.IntegerAttr.get(i32, 32)).result
        small = llvm.or_(llvm.intr_umin(a, b), c1)           # | 1: zero still takes one step
        steps = llvm.sub(c32, llvm.intr_ctlz(small, False, results=[i32]), 0)
        llvm.store(llvm.add(llvm.load(i64, local), llvm.zext(i64, steps), 0), local)


def counting_pass(skip: Iterable[str] = ()):
    """`count_executed_blocks` as a pass for `PassManager.add` (on builtin.module)."""
    def count_executed_blocks_pass(op, pass_):
        try:
            count_executed_blocks(_ModuleView(op), skip)
        except LoweringError:
            pass_.signal_pass_failure()
    return count_executed_blocks_pass


class _ModuleView:
    """The parts of `ir.Module` the pass uses, over a `builtin.module` operation."""

    def __init__(self, op):
        self.operation = getattr(op, "operation", op)
        self.context = self.operation.context
        self.body = self.operation.regions[0].blocks[0]


def run_counting(module: ir.Module, skip: Iterable[str] = ()) -> CounterTable:
    """Run the counting pass on `module` through a PassManager."""
    pm = PassManager("builtin.module", context=module.context)
    pm.add(counting_pass(skip), name="count-executed-blocks")
    try:
        pm.run(module.operation)
    except ir.MLIRError as err:
        raise LoweringError(f"counting executed blocks failed: {err}") from None
    table = counter_table(module)
    assert table is not None
    return table
