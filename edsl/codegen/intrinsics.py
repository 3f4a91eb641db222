"""Registry of the functions an edsl body may call, each with the IR it emits
and its typing rule next to it. Keys are the Python objects themselves (the
markers of edsl.codegen.language, Python builtins, functions of the `math` module).

A handler is `handler(gen, *args, **kwargs) -> value`; `gen` is the code
generator, which provides `target`, `site()`, `wram_buffer()` and
`runtime_call()`. Intrinsics of one target only are registered with `only=`
and `instead=`: calling one in a function compiled for another target is a
CompileError that says what to use there.
"""
from __future__ import annotations

import ast
import builtins
import math as pymath
from functools import reduce

import numpy as np
from mlir import ir
from mlir.dialects import arith, llvm, math, memref, scf

from ..target import dtypes
from . import language as L
from ..target import dpu as abi
from ..base.errors import CompileError, DpuError, TypeMismatchError
from . import printf
from . import semantic as S
from ..target.machines import DPU, NVPTX, Target

REGISTRY: dict[object, callable] = {}
# Handlers of functions of MLIR's dialect modules, by (module, name): edsl
# does not import those modules itself (mlir.dialects.nvvm costs a compile in
# a new process ~9 ms), so such a function is found only once a body's own
# import has loaded it.
BY_NAME: dict[tuple[str, str], callable] = {}


def register(*keys, only: Target | None = None, instead: str = ""):
    """Register a handler for `keys`; `only`: the one target that has them
    (`instead`: what to use on the others, which its error says)."""
    assert only is None or instead, f"{keys[0]}: an intrinsic of one target says what to use instead"

    def deco(fn):
        handler = fn if only is None else _only_on(only, keys[0], instead, fn)
        for k in keys:
            REGISTRY[k] = handler
        return fn
    return deco


def _only_on(target: Target, key, instead: str, fn):
    def handler(gen, *args, **kwargs):
        if gen.target is not target:
            raise CompileError(f"edsl.{key.name}() is an intrinsic of {target.name} (the {target.machine}); "
                               f"this function is compiled for {gen.target.name}; {instead}")
        return fn(gen, *args, **kwargs)
    handler.only, handler.instead = target, instead
    return handler


def lookup(obj):
    try:
        found = REGISTRY.get(obj)
    except TypeError:  # unhashable
        return None
    if found is None:
        found = BY_NAME.get((getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)))
    return found


# --- conversions ---------------------------------------------------------------------

def scalar_type(spec) -> ir.Type:
    """An ir.Type from `f32`, `"f32"`, an ir.Type or a NumPy dtype."""
    if isinstance(spec, ir.Type):
        return spec
    if isinstance(spec, L.ScalarType):
        spec = spec.name
    if isinstance(spec, str):
        if dtypes.by_mlir(spec) is not None:
            return ir.Type.parse(spec)
        raise TypeMismatchError(f"unknown scalar type {spec!r}")
    try:
        return S.mlir_type_of_numpy(np.dtype(spec))
    except TypeError:
        raise TypeMismatchError(f"{spec!r} is not a scalar type") from None


def _dynamic(args) -> bool:
    return len(args) == 1 and isinstance(args[0], ir.Value)


def _cast_to(name):
    def handler(gen, x):
        return S.convert(x, scalar_type(name))
    return handler


for _t in (L.i1, L.i8, L.i16, L.i32, L.i64, L.index, L.f16, L.bf16, L.f32, L.f64):
    register(_t)(_cast_to(_t.name))

# int(), float(), bool() of a dynamic value convert it (to i64, f64, i1); of
# anything else they are Python's own.
register(builtins.int)(lambda gen, *a: S.convert(a[0], S.int_type(64)) if _dynamic(a) else int(*a))
register(builtins.float)(lambda gen, *a: S.convert(a[0], ir.F64Type.get()) if _dynamic(a) else float(*a))
register(builtins.bool)(lambda gen, *a: S.truth(a[0]) if _dynamic(a) else bool(*a))


# --- builtins --------------------------------------------------------------------------

def _fold(kind):
    def handler(gen, *args):
        if len(args) == 1:
            raise CompileError(f"{kind}() over an iterable is not supported; pass the values")
        if all(S.is_static(a) for a in args):
            return getattr(builtins, kind)(args)
        return reduce(lambda a, b: S.minmax(kind, a, b), args)
    return handler


register(builtins.min)(_fold("min"))
register(builtins.max)(_fold("max"))


@register(builtins.abs)
def _abs(gen, x):
    if S.is_static(x):
        return abs(x)
    return math.absf(x) if S.is_float(x.type) else math.absi(x)


@register(builtins.len)
def _len(gen, x):
    if isinstance(x, ir.Value) and S.is_memref(x.type):
        return S.dims(x)[0]
    if isinstance(x, (tuple, list)):
        return len(x)
    raise TypeMismatchError(f"len() of a {type_name(x)}")


# --- math -------------------------------------------------------------------------------

def _float_operand(x, t=None) -> ir.Value:
    t = t or (x.type if isinstance(x, ir.Value) and S.is_float(x.type) else ir.F32Type.get())
    return S.convert(x, t)


def _unary_math(op, static=None):
    def handler(gen, x):
        if S.is_static(x) and static is not None:
            return static(x)
        return op(_float_operand(x))
    return handler


_UNARY_MATH = {
    "exp": (math.exp, pymath.exp), "exp2": (math.exp2, lambda x: 2.0 ** x),
    "log": (math.log, pymath.log), "log2": (math.log2, pymath.log2), "log10": (math.log10, pymath.log10),
    "sqrt": (math.sqrt, pymath.sqrt), "rsqrt": (math.rsqrt, lambda x: 1 / pymath.sqrt(x)),
    "sin": (math.sin, pymath.sin), "cos": (math.cos, pymath.cos), "tan": (math.tan, pymath.tan),
    "tanh": (math.tanh, pymath.tanh), "erf": (math.erf, pymath.erf),
    "floor": (math.floor, None), "ceil": (math.ceil, None), "trunc": (math.trunc, None),
    "round": (math.round, None),
}
for _name, (_op, _static) in _UNARY_MATH.items():
    register(getattr(L, _name))(_unary_math(_op, _static))
    if hasattr(pymath, _name) and _name not in ("floor", "ceil", "trunc"):
        register(getattr(pymath, _name))(_unary_math(_op, _static))
# Python's math.floor/ceil/trunc return ints; in a body they keep the float type.
for _name in ("floor", "ceil", "trunc"):
    register(getattr(pymath, _name))(_unary_math(_UNARY_MATH[_name][0]))
register(pymath.fabs)(lambda gen, x: abs(x) if S.is_static(x) else math.absf(_float_operand(x)))
register(builtins.round)(lambda gen, x: round(x) if S.is_static(x) else math.roundeven(_float_operand(x)))


@register(L.fma)
def _fma(gen, a, b, c):
    t = S.common_type([a, b, c])
    t = t if S.is_float(t) else ir.F32Type.get()
    return math.fma(S.convert(a, t), S.convert(b, t), S.convert(c, t))


@register(L.copysign, pymath.copysign)
def _copysign(gen, a, b):
    t = S.common_type([a, b])
    t = t if S.is_float(t) else ir.F32Type.get()
    return math.copysign(S.convert(a, t), S.convert(b, t))


@register(pymath.pow)
def _pow(gen, a, b):
    t = S.common_type([a, b])
    t = t if S.is_float(t) else ir.F32Type.get()
    return math.powf(S.convert(a, t), S.convert(b, t))


@register(L.isnan, pymath.isnan)
def _isnan(gen, x):
    x = _float_operand(x)
    return arith.cmpf(arith.CmpFPredicate.UNO, x, x)


@register(L.isinf, pymath.isinf)
def _isinf(gen, x):
    x = _float_operand(x)
    return arith.cmpf(arith.CmpFPredicate.OEQ, math.absf(x), S.constant(float("inf"), x.type))


@register(L.select)
def _select(gen, c, a, b):
    t = S.common_type([a, b])
    return arith.select(S.convert(S.truth(c), S.i1()), S.convert(a, t), S.convert(b, t))


# --- threads: one meaning on every target --------------------------------------------

def _i32() -> ir.Type:
    return S.int_type(32)


def _nvvm(name: str, result: ir.Type | None = None):
    """An NVVM op without operands or attributes, in its generic form: the
    bindings import a dialect's Python module (see BY_NAME) to make an op
    through its builder, an attribute of it, or the view of an op of it
    (`value.owner`). Its result, if it has one (a register: never negative)."""
    op = ir.Operation.create(name, results=[result] if result else [])
    if result is None:
        return None
    S.NON_NEGATIVE.get().add(op.result)
    return op.result


@register(L.thread_id)
def _thread_id(gen):
    if gen.target is NVPTX:
        return _nvvm("nvvm.read.ptx.sreg.tid.x", _i32())
    return gen.runtime_call(abi.ME, [], [_i32()])


@register(L.num_threads)
def _num_threads(gen):
    if gen.target is NVPTX:
        return _nvvm("nvvm.read.ptx.sreg.ntid.x", _i32())
    return gen.runtime_call(abi.NR_TASKLETS, [], [_i32()])


@register(L.barrier)
def _barrier(gen):
    if gen.target is NVPTX:
        _nvvm("nvvm.barrier0")
    else:
        # (the site names the barrier's line if its tasklets deadlock)
        gen.runtime_call(abi.BARRIER, [S.constant(gen.site(), S.int_type(64))], [])


@register(L.vprintf)
def _vprintf(gen, fmt, *args):
    printf.emit(gen, fmt, printf.arguments(gen, fmt, args))


@register(L.vassert)
def _vassert(gen, cond, fmt, *args):
    values = printf.arguments(gen, fmt, args)   # (checked where the assertion holds too)
    c = S.truth(cond)
    if not isinstance(c, ir.Value):
        if c:
            return
        c = S.constant(False, S.int_type(1))
    op = scf.IfOp(S.unary(ast.Not, c))
    with ir.InsertionPoint(op.then_block):
        printf.emit(gen, fmt, values)
        gen.report_failure(abi.ASSERT_FAIL, f"vassert failed: {fmt.strip()}")
        scf.yield_([])


# --- GPU intrinsics -------------------------------------------------------------------

def _nvvm_barrier(gen, res=None, **kwargs):
    # `nvvm.barrier(barrier_id=..., number_of_threads=...)` as TLE-Raw writes
    # it: the bindings' builder takes the result type (set only with a
    # reduction) as a required first argument.
    from mlir.dialects import nvvm
    return nvvm.barrier(res, **kwargs)


BY_NAME["mlir.dialects._nvvm_ops_gen", "barrier"] = _nvvm_barrier


def _axis(axis) -> int:
    if not (S.is_static(axis) and int(axis) in (0, 1, 2) and not isinstance(axis, (bool, float))):
        raise TypeMismatchError(f"axis must be 0, 1 or 2, not {axis!r}")
    return int(axis)


@register(L.block_id, only=NVPTX, instead="pass the program id (tl.program_id(axis) of the "
          "kernel) as an argument")
def _block_id(gen, axis=0):
    return _nvvm(f"nvvm.read.ptx.sreg.ctaid.{'xyz'[_axis(axis)]}", _i32())


@register(L.num_blocks, only=NVPTX, instead="pass the program count (tl.num_programs(axis) of "
          "the kernel) as an argument")
def _num_blocks(gen, axis=0):
    return _nvvm(f"nvvm.read.ptx.sreg.nctaid.{'xyz'[_axis(axis)]}", _i32())


@register(L.shuffle_xor, only=NVPTX, instead="a DPU has no warps: tasklets exchange values "
          "through a WRAM buffer (edsl.wram_alloc) between edsl.barrier() calls")
def _shuffle_xor(gen, value, lane_mask):
    if not isinstance(value, ir.Value) or value.type not in (_i32(), ir.F32Type.get()):
        raise TypeMismatchError(f"shuffle_xor moves an i32 or f32 value, not {type_name(value)}")
    every_lane = S.constant(-1, _i32())             # (the member mask 0xffffffff)
    clamp = S.constant(0x1F, _i32())                # (xor lanes stay within the 32 of the warp)
    # (LLVM's intrinsic, which `nvvm.shfl.sync` becomes: that op's kind is an
    # NVVM attribute, see _nvvm)
    kind = "f32" if value.type == ir.F32Type.get() else "i32"
    return llvm.call_intrinsic(value.type, f"llvm.nvvm.shfl.sync.bfly.{kind}",
                               [every_lane, value, S.convert(lane_mask, _i32()), clamp], [], [])


# --- DPU intrinsics -------------------------------------------------------------------

@register(L.tasklet_id, only=DPU, instead="edsl.thread_id() is the thread's id on every target")
def _tasklet_id(gen):
    return gen.runtime_call(abi.ME, [], [_i32()])


@register(L.num_tasklets, only=DPU, instead="edsl.num_threads() is the thread count on every target")
def _num_tasklets(gen):
    return gen.runtime_call(abi.NR_TASKLETS, [], [_i32()])


def _dma_operand(x, want: int, role: str) -> ir.Value:
    if not (isinstance(x, ir.Value) and S.is_memref(x.type)):
        raise TypeMismatchError(f"the {role} of a DMA must be a memref, not {type_name(x)}")
    t = ir.MemRefType(x.type)
    space = abi.memory_space(t)
    if space != want:
        names = {abi.WRAM_ADDRSPACE: "WRAM", abi.MRAM_ADDRSPACE: "MRAM"}
        raise TypeMismatchError(
            f"the {role} of a DMA must be a {names[want]} memref, not {t} "
            f"(memory space {names.get(space, space)})")
    if not S.has_identity_layout(t):
        raise TypeMismatchError(f"the {role} of a DMA must be contiguous (identity layout), not {t}")
    return x


def _byte_range(x: ir.Value, elem_offset):
    """(address, end address) in bytes of element `elem_offset` of contiguous memref x."""
    i64 = S.int_type(64)
    t = ir.MemRefType(x.type)
    esize = S.bits(t.element_type) // 8
    base = S.convert(memref.extract_aligned_pointer_as_index(x), i64)
    numel = reduce(lambda a, b: S.binary(ast.Mult, a, b),
                   [S.convert(d, i64) if isinstance(d, ir.Value) else d for d in S.dims(x)], 1)
    start = S.binary(ast.Add, base, S.binary(ast.Mult, elem_offset, esize))
    end = S.binary(ast.Add, base, S.binary(ast.Mult, numel, esize))
    return S.convert(start, i64), S.convert(end, i64)


def _dma(gen, symbol, mram, wram, nbytes, mram_offset, wram_offset):
    if S.is_static(nbytes):
        why = abi.dma_violation(0, 0, int(nbytes))
        if why is not None:
            raise DpuError(why, gen.current_loc())
    i64 = S.int_type(64)
    m, m_end = _byte_range(mram, mram_offset)
    w, w_end = _byte_range(wram, wram_offset)
    args = [m, w, S.convert(nbytes, i64), S.constant(gen.site(), i64), m_end, w_end]
    gen.runtime_call(symbol, args, [])


def _dma_intrinsic(intrinsic, symbol: str, verb: str) -> None:
    """Register `intrinsic(src, dst, nbytes, src_offset=0, dst_offset=0)`, the
    EDSL's DMA of `symbol` (abi.MRAM_READ: MRAM to WRAM; MRAM_WRITE: back)."""
    reads = symbol == abi.MRAM_READ
    spaces = (abi.MRAM_ADDRSPACE, abi.WRAM_ADDRSPACE) if reads else (abi.WRAM_ADDRSPACE, abi.MRAM_ADDRSPACE)

    @register(intrinsic, only=DPU, instead=f"index the memrefs (dst[i] = src[i]): a GPU thread {verb} "
              "global memory directly")
    def lower(gen, src, dst, nbytes, src_offset=0, dst_offset=0):
        src = _dma_operand(src, spaces[0], "source")
        dst = _dma_operand(dst, spaces[1], "destination")
        gen.check_writable(dst, intrinsic.__name__)
        if reads:
            _dma(gen, symbol, src, dst, nbytes, src_offset, dst_offset)
        else:
            _dma(gen, symbol, dst, src, nbytes, dst_offset, src_offset)


_dma_intrinsic(L.mram_read, abi.MRAM_READ, "reads")
_dma_intrinsic(L.mram_write, abi.MRAM_WRITE, "writes")


@register(L.wram_alloc, only=DPU, instead="pass a tile from the kernel as an InOut "
          "operand: it lives in shared memory")
def _wram_alloc(gen, shape, dtype):
    shape = (shape,) if not isinstance(shape, (tuple, list)) else tuple(shape)
    if not all(S.is_static(d) and int(d) >= 0 for d in shape):
        raise TypeMismatchError(f"wram_alloc needs a static shape of non-negative ints, not {shape}")
    elem = scalar_type(dtype)
    if elem == S.i1():
        raise TypeMismatchError("wram_alloc of i1 is not supported; use i8 for booleans")
    t = ir.MemRefType.get([int(d) for d in shape], elem)
    nbytes = int(np.prod([int(d) for d in shape], dtype=np.int64)) * S.bits(elem) // 8
    return gen.wram_buffer(t, nbytes)


def type_name(x) -> str:
    if isinstance(x, ir.Value):
        return f"value of type {x.type}"
    return type(x).__name__
