"""The LLVM IR that gives the `fl.call` placeholders of a kernel their meaning.

A kernel compiled by Triton's `nvidia` backend declares, for its `fl.call`s
(edsl.gpu.placeholders), functions it does not define:

  `__edsl_gpu_sync(i32) -> i32`          a barrier of the CTA
  `__edsl_gpu_put_<T>(T, i32) -> i32`    store one element at a byte offset of the pool
  `__edsl_gpu_get_<T>(i32) -> T`         load one element from the pool
  `__edsl_gpu_run_<F>_<L>(...) -> i32`   run EDSL function F on the tiles laid
                                         out by L in the pool, between barriers
  `__edsl_gpu_smem_<N>_<B>(i32) -> i64`  the generic address of a shared buffer
                                         of B bytes the kernel allocated
                                         (edsl.gpu.shared), in the pool after
                                         the calls' tiles

This module builds one LLVM module defining them all, which Triton's extern
library linker links into the kernel before LLVM's O3 (which inlines it): the
pool, the shared memory (address space 3) that every call's tiles live in,
row-major, while the call runs, declared here and placed after Triton's own
in the kernel's dynamic shared memory (`place_pool`), so that tiles may take
what a block opts in to (227 KiB on an H100) rather than the 48 KiB of
static shared arrays; the helpers; one adapter per run
symbol, calling its EDSL function with the memref descriptors of its tiles
(pointer into the pool, offset 0, sizes, row-major strides), its pointers
(global memory, address space 1) and its scalars; and the EDSL functions
themselves, compiled for `nvptx64`. It is built in the LLVM dialect of the
upstream `mlir` bindings and translated to LLVM IR text. A function in CUDA C
is declared there and defined by its own module (edsl.inject.cuda_module),
linked after this one.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from mlir import ir

from .. import codegen
from ..codegen import llvm_ir
from . import cuda_module
from ..target import dtypes
from ..base.errors import CompileError
from ..lowering import to_llvm_ir, verify
from ..target import nvptx

PREFIX = "__edsl_gpu_"
SYNC = PREFIX + "sync"
POOL = PREFIX + "pool"
RUN_PREFIX = PREFIX + "run_"
SMEM_PREFIX = PREFIX + "smem_"
FUNCTION_PREFIX = PREFIX + "fn_"

# Element types a tile may have (MLIR names, which are also the LLVM dialect's).
ELEMENTS = ("f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64")


def put_symbol(elem: str) -> str:
    return f"{PREFIX}put_{elem}"


def get_symbol(elem: str) -> str:
    return f"{PREFIX}get_{elem}"


@dataclass(frozen=True)
class TileSlot:
    """Where a tile operand lives while a call runs."""
    shape: tuple
    elem: str
    offset: int  # bytes from the start of the pool

    @property
    def nbytes(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n * elem_bytes(self.elem)


@dataclass(frozen=True)
class Operand:
    """How one parameter of the EDSL function gets its value in the adapter:
    kind `tile` (a TileSlot), `pointer` (an i64 argument of the adapter: a
    global address), `buffer` (an i64 argument: the generic address of a
    shared buffer of the kernel, of `shape`, row-major) or `scalar` (an
    argument, as is)."""
    kind: str
    type_text: str               # the parameter's MLIR type, for nvptx64
    tile: TileSlot | None = None
    arg_type: str = ""           # the adapter argument's type (pointer, buffer, scalar)
    shape: tuple = ()            # a buffer's


@dataclass(frozen=True)
class RunPlan:
    """One `__edsl_gpu_run_*` symbol: which function, how its operands are laid out."""
    symbol: str
    function: object             # the EdslFunction
    operands: tuple              # Operand per parameter, in order

    @property
    def pool_bytes(self) -> int:
        return max((o.tile.offset + o.tile.nbytes for o in self.operands if o.tile), default=0)

    @property
    def arg_types(self) -> list[str]:
        """The adapter's arguments: the pointers and scalars, in parameter order (an
        unused i32 if there are none: a placeholder needs an operand)."""
        return [o.arg_type for o in self.operands if o.kind != "tile"] or ["i32"]


def elem_bytes(elem: str) -> int:
    return dtypes.by_mlir(elem).nbytes


def buffer_symbol(number: int, nbytes: int) -> str:
    """The placeholder of a kernel's shared buffer (`number`: unique in the process)."""
    return f"{SMEM_PREFIX}{number}_{nbytes}"


def buffer_offsets(symbols, start: int) -> tuple[dict[str, int], int]:
    """The pool offsets of a kernel's shared buffers (their symbols, in the
    order the kernel allocates them), laid out from byte `start` (after the
    calls' tiles); and the pool's size with them."""
    offsets, at = {}, start
    for symbol in symbols:
        at = -(-at // nvptx.SHARED_ALIGN) * nvptx.SHARED_ALIGN
        offsets[symbol] = at
        at += int(symbol.rsplit("_", 1)[1])
    return offsets, at


def _buffer_function(symbol: str, offset: int) -> str:
    ptr = f"!llvm.ptr<{nvptx.SHARED_ADDRSPACE}>"
    return f"""llvm.func @{symbol}(%unused: i32) -> i64 attributes {{always_inline}} {{
  %pool = llvm.mlir.addressof @{POOL} : {ptr}
  %p = llvm.getelementptr %pool[{offset}] : ({ptr}) -> {ptr}, i8
  %g = llvm.addrspacecast %p : {ptr} to !llvm.ptr
  %a = llvm.ptrtoint %g : !llvm.ptr to i64
  llvm.return %a : i64
}}"""


def _helpers(elems) -> str:
    # The pool is declared only: `place_pool` puts it after Triton's shared
    # memory once the kernel's LLVM IR is made.
    lines = [f"llvm.mlir.global external @{POOL}() {{addr_space = {nvptx.SHARED_ADDRSPACE} : i32, "
             f"alignment = {nvptx.SHARED_ALIGN} : i64}} : !llvm.array<0 x i8>",
             f"""llvm.func @{SYNC}(%unused: i32) -> i32 attributes {{always_inline}} {{
  nvvm.barrier0
  %zero = llvm.mlir.constant(0 : i32) : i32
  llvm.return %zero : i32
}}"""]
    ptr = f"!llvm.ptr<{nvptx.SHARED_ADDRSPACE}>"
    for t in sorted(elems):
        lines.append(f"""llvm.func @{put_symbol(t)}(%value: {t}, %offset: i32) -> i32 attributes {{always_inline}} {{
  %pool = llvm.mlir.addressof @{POOL} : {ptr}
  %p = llvm.getelementptr %pool[%offset] : ({ptr}, i32) -> {ptr}, i8
  llvm.store %value, %p : {t}, {ptr}
  %zero = llvm.mlir.constant(0 : i32) : i32
  llvm.return %zero : i32
}}
llvm.func @{get_symbol(t)}(%offset: i32) -> {t} attributes {{always_inline}} {{
  %pool = llvm.mlir.addressof @{POOL} : {ptr}
  %p = llvm.getelementptr %pool[%offset] : ({ptr}, i32) -> {ptr}, i8
  %v = llvm.load %p : {ptr} -> {t}
  llvm.return %v : {t}
}}""")
    return "\n".join(lines)


class _Adapter:
    """Writes the body of one run adapter, value by value."""

    def __init__(self):
        self.lines: list[str] = []
        self.n = 0

    def emit(self, text: str) -> str:
        name = f"%v{self.n}"
        self.n += 1
        self.lines.append(f"  {name} = {text}")
        return name

    def const(self, value: int, t: str = "i64") -> str:
        return self.emit(f"llvm.mlir.constant({value} : {t}) : {t}")


def _descriptor_fields(a: _Adapter, ptr: str, ptr_type: str, sizes, strides) -> list[tuple[str, str]]:
    fields = [(ptr, ptr_type), (ptr, ptr_type), (a.const(0), "i64")]
    fields += [(a.const(s), "i64") for s in sizes]
    fields += [(a.const(s), "i64") for s in strides]
    return fields


def _row_major(shape) -> list[int]:
    strides, n = [], 1
    for d in reversed(shape):
        strides.insert(0, n)
        n *= d
    return strides


# The extent of global memory behind a pointer is not known: a memref made
# from one gets this many elements (pass counts as scalars).
UNKNOWN_EXTENT = 2 ** 62


def _adapter(plan: RunPlan, callee: str, signature: tuple[list[str], str]) -> str:
    """The adapter of `plan`, calling `callee` of `signature` (parameter types, result type)."""
    a = _Adapter()
    args = [f"%arg{i}" for i in range(len(plan.arg_types))]
    shared = f"!llvm.ptr<{nvptx.SHARED_ADDRSPACE}>"
    glob = f"!llvm.ptr<{nvptx.GLOBAL_ADDRSPACE}>"
    pool = a.emit(f"llvm.mlir.addressof @{POOL} : {shared}")
    values: list[tuple[str, str]] = []
    next_arg = iter(zip(args, plan.arg_types))
    for o in plan.operands:
        if o.kind == "tile":
            base = a.emit(f"llvm.getelementptr {pool}[{o.tile.offset}] : ({shared}) -> {shared}, i8")
            values += _descriptor_fields(a, base, shared, o.tile.shape, _row_major(o.tile.shape))
            continue
        arg, arg_type = next(next_arg)
        if o.kind == "scalar":
            values.append((arg, arg_type))
            continue
        if o.kind == "buffer":
            g = a.emit(f"llvm.inttoptr {arg} : i64 to !llvm.ptr")
            p = a.emit(f"llvm.addrspacecast {g} : !llvm.ptr to {shared}")
            values += _descriptor_fields(a, p, shared, o.shape, _row_major(o.shape))
            continue
        t = ir.Type.parse(o.type_text)
        p = a.emit(f"llvm.inttoptr {arg} : i64 to {glob}")
        if isinstance(t, ir.MemRefType):
            m = ir.MemRefType(t)
            sizes = [UNKNOWN_EXTENT if ir.ShapedType.is_dynamic_size(d) else d for d in m.shape]
            values += _descriptor_fields(a, p, glob, sizes, _row_major(sizes))
        else:
            if str(t) != glob:
                p = a.emit(f"llvm.addrspacecast {p} : {glob} to {t}")
            values.append((p, str(t)))
    want, ret = signature
    if len(want) == len(values):  # (a pointer for a parameter of another address space, generic: cast)
        values = [(a.emit(f"llvm.addrspacecast {v} : {have} to {w}"), w)
                  if have != w and have.startswith("!llvm.ptr") and w.startswith("!llvm.ptr") else (v, have)
                  for (v, have), w in zip(values, want)]
    got = [ty for _, ty in values]
    if want != got:
        raise CompileError(f"{plan.function.__name__}: its LLVM signature ({', '.join(want)}) does not take the "
                           f"memref descriptors, pointers and scalars fl.call passes ({', '.join(got)}); "
                           f"was it lowered with the default nvptx64 pipeline?")
    call = f"llvm.call @{callee}({', '.join(v for v, _ in values)}) : ({', '.join(got)}) -> " \
           f"{ret if ret != 'void' else '()'}"
    params = ", ".join(f"{n}: {ty}" for n, ty in zip(args, plan.arg_types))
    body = "\n".join(a.lines)
    result = "%ignored = " if ret != "void" else ""
    return f"""llvm.func @{plan.symbol}({params}) -> i32 {{
  nvvm.barrier0
{body}
  {result}{call}
  nvvm.barrier0
  %done = llvm.mlir.constant(0 : i32) : i32
  llvm.return %done : i32
}}"""


def _signature(fn_op: ir.Operation) -> tuple[list[str], str]:
    """Parameter types and result type ("void" if none) of a defined llvm.func."""
    entry = fn_op.regions[0].blocks[0]
    params = [str(a.type) for a in entry.arguments]
    for block in fn_op.regions[0].blocks:
        # (the last op alone: a view of each op would import its dialect's
        # Python module, NVVM's ~9 ms in a new process)
        term = block.operations[len(block.operations) - 1].operation
        if term.name == "llvm.return":
            return params, str(term.operands[0].type) if len(term.operands) else "void"
    return params, "void"


def _pin_block_size(module: ir.Module, threads: int) -> None:
    """The CTA's size made a fact of `module`: `ntid.x` the constant `threads`
    and `tid.x` below it. Triton launches a kernel in one dimension of
    num_warps * 32 threads (warp-specialized kernels, the exception, refuse
    fl.call), so this holds; with it LLVM's O3 knows the trip count of a
    loop over a tile by thread (`range(thread_id(), n, num_threads())`) and
    unrolls it, as it does Triton's own code, whose thread count is a constant."""
    found = []
    module.operation.walk(lambda op: (found.append(op) if op.name in _BLOCK_SIZE_OPS else None,
                                      ir.WalkResult.ADVANCE)[1])
    i32 = ir.IntegerType.get_signless(32)
    for op in found:
        if op.name == "nvvm.read.ptx.sreg.ntid.x":
            constant = ir.Operation.create("llvm.mlir.constant", results=[i32],
                                           attributes={"value": ir.IntegerAttr.get(i32, threads)},
                                           loc=op.location, ip=ir.InsertionPoint(op))
            op.results[0].replace_all_uses_with(constant.result)
            op.erase()
        else:
            op.attributes["range"] = ir.Attribute.parse(f"#llvm.constant_range<i32, 0, {threads}>")


_BLOCK_SIZE_OPS = ("nvvm.read.ptx.sreg.ntid.x", "nvvm.read.ptx.sreg.tid.x")


def _function_module(fn, symbol: str, threads: int | None = None) -> ir.Module:
    """`fn` compiled for nvptx64 (LLVM dialect), its function renamed `symbol`
    and its other definitions given names of their own; with the CTA's size
    pinned to `threads` if given."""
    module = ir.Module.parse(fn.compile(codegen.NVPTX).llvm)
    if threads is not None:
        _pin_block_size(module, threads)
    for op in list(module.body.operations):
        op = op.operation
        if "sym_name" not in op.attributes or (op.name == "llvm.func" and not op.regions[0].blocks):
            continue  # declarations keep their names (__nv_expf ...)
        name = ir.StringAttr(op.attributes["sym_name"]).value
        new = symbol if name == fn.__name__ else f"{symbol}_{name}"
        ir.SymbolTable.replace_all_symbol_uses(name, new, module.operation)
        ir.SymbolTable.set_symbol_name(op, new)
    return module


def function_symbol(fn) -> str:
    """The name of `fn`'s code in a kernel: its identity, hashed."""
    return FUNCTION_PREFIX + hashlib.sha256(fn.identity.encode()).hexdigest()[:16] + "_" + fn.__name__


def build(plans: list[RunPlan], elems, arch: str = nvptx.DEFAULT_ARCH,
          buffers: dict[str, int] | None = None, threads: int | None = None) -> tuple[str, list[str]]:
    """LLVM IR text declaring the pool, defining the helpers for element types
    `elems`, the functions of the kernel's shared `buffers` (symbol -> pool
    offset), the adapters of `plans` and their EDSL functions (for a CTA of
    `threads` threads, if given: `_pin_block_size`); and the LLVM IR of each
    CUDA C function they call (compiled for `arch`), to be linked after it."""
    with codegen.LOCK, codegen.context(), ir.Location.unknown():
        functions: dict[str, ir.Module] = {}
        foreign: dict[str, str] = {}
        signatures: dict[str, tuple[list[str], str]] = {}
        for plan in plans:
            callee = function_symbol(plan.function)
            if callee in signatures:
                continue
            if getattr(plan.function, "LANGUAGE", None) == "cuda":   # CUDA C (edsl.cuda_function)
                llvm = plan.function.llvm(arch)
                fn = plan.function.llvm_function(arch)
                foreign[callee] = cuda_module.link_ready(llvm, fn, callee)
                signatures[callee] = ([llvm_ir.mlir_type(t) for t in fn.params], "void")
            else:
                functions[callee] = _function_module(plan.function, callee, threads)
                signatures[callee] = _signature(ir.SymbolTable(functions[callee].operation)[callee])
        parts = [_helpers(elems)] + [_buffer_function(s, at) for s, at in (buffers or {}).items()]
        for callee, (params, ret) in signatures.items():  # declared here, defined below or in `foreign`
            parts.append(f"llvm.func @{callee}({', '.join(params)})" + (f" -> {ret}" if ret != "void" else ""))
        done = set()
        for plan in plans:
            if plan.symbol not in done:
                done.add(plan.symbol)
                callee = function_symbol(plan.function)
                parts.append(_adapter(plan, callee, signatures[callee]))
        module = ir.Module.parse("\n".join(parts))
        module.operation.attributes["llvm.target_triple"] = ir.StringAttr.get(nvptx.TRIPLE)
        table = ir.SymbolTable(module.operation)
        for source in functions.values():
            for op in list(source.body.operations):
                op = op.operation
                name = ir.StringAttr(op.attributes["sym_name"]).value if "sym_name" in op.attributes else None
                if name is not None and name in table:
                    existing = table[name]
                    if existing.name == "llvm.func" and not existing.regions[0].blocks and op.regions[0].blocks:
                        table.erase(existing)  # declared above: the definition replaces it
                    else:
                        continue  # a declaration another function brought too (__nv_expf ...)
                op.detach_from_parent()
                module.body.append(op)
                if name is not None:
                    table.insert(op)
        verify(module)
        return to_llvm_ir(module), list(foreign.values())


# Triton's dynamic shared memory, in the LLVM IR of its kernels.
TRITON_SHARED = "global_smem"
_POOL_USE = re.compile(r"@" + re.escape(POOL) + r"\b")


def place_pool(llir: str, triton_bytes: int, pool_bytes: int) -> tuple[str, int]:
    """The kernel's LLVM IR with the pool at the first aligned byte after
    Triton's `triton_bytes` of dynamic shared memory, and the dynamic shared
    memory the kernel then needs. (Text: the pool's uses become constant
    expressions of Triton's base, so that its declaration, opaque to LLVM's
    O3, never aliased Triton's buffers in the optimizer's eyes.)"""
    offset = -(-triton_bytes // nvptx.SHARED_ALIGN) * nvptx.SHARED_ALIGN
    lines = [line for line in llir.splitlines() if not line.startswith(f"@{POOL} = ")]
    if not any(line.startswith(f"@{TRITON_SHARED} = ") for line in lines):
        # (declared before the first global or function: after the module's header)
        at = next(k for k, line in enumerate(lines) if line.startswith(("@", "define ", "declare ")))
        lines.insert(at, f"@{TRITON_SHARED} = external addrspace(3) global [0 x i8], align {nvptx.SHARED_ALIGN}")
    text = "\n".join(lines)
    base = f"getelementptr (i8, ptr addrspace(3) @{TRITON_SHARED}, i64 {offset})"
    return _POOL_USE.sub(lambda _: base, text) + "\n", offset + pool_bytes
