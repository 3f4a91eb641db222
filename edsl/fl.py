"""`fl.call(fn, outs, ins)`: call an `@edsl.dialect` function from a Triton kernel.

In TTIR the call is a placeholder that stock `make_ttir` keeps: a `tt.call` to
a body-less private `tt.func` whose name identifies the EDSL function
(`__edsl_<name>_<hash>`). The `dpu` backend replaces it by the function's
LLVM-dialect body (edsl.inject). `outs` are the tiles the function may update
(its InOut parameters, in order); their new values are returned: one tensor,
or a tuple for several. `ins` are tensors, scalars and pointers (its Input
parameters, in order).
"""
from __future__ import annotations

import inspect

from triton.language import core as tl

from .dpu.abi import MRAM_ADDRSPACE
from .function import EdslFunction

PREFIX = "__edsl_"
_CALLEES: dict[str, EdslFunction] = {}  # placeholder name -> function, for the backend


def callee(symbol: str) -> EdslFunction | None:
    """The EDSL function a placeholder symbol stands for."""
    return _CALLEES.get(symbol)


def placeholder_symbol(fn: EdslFunction) -> str:
    key = fn.cache_key or f"{id(fn):x}"
    return f"{PREFIX}{fn.__name__}_{key[:16]}"


def _check_counts(name, out_specs, in_specs, outs, ins) -> None:
    if len(outs) != len(out_specs) or len(ins) != len(in_specs):
        raise TypeError(f"fl.call({name}): the function takes {len(out_specs)} outs "
                        f"({', '.join(s.name for s in out_specs)}) and {len(in_specs)} ins "
                        f"({', '.join(s.name for s in in_specs)}); got {len(outs)} and {len(ins)}")


def _unwrap(x):
    return x.value if isinstance(x, tl.constexpr) else x


def _elements(x) -> list:
    x = _unwrap(x)
    if isinstance(x, (list, tuple)):
        return [_unwrap(v) if isinstance(v, tl.constexpr) else v for v in x]
    if isinstance(x, tl.tuple):
        return list(x.values)
    return [x]


def _describe(v) -> str:
    if isinstance(v, tl.tensor):
        if v.type.is_block():
            return f"a tensor of {v.type.scalar} with shape {list(v.type.shape)}"
        return f"a scalar {v.type}"
    return f"a Python {type(v).__name__}"


def _check_tile(spec, v, what: str, name: str) -> None:
    """A tensor operand must match a memref parameter: dtype, rank, static shape."""
    if not (isinstance(v, tl.tensor) and v.type.is_block()):
        raise TypeError(f"fl.call({name}): {what} for parameter {spec.name!r} ({spec.type_text}) "
                        f"must be a tensor, got {_describe(v)}")
    want = spec.dtype
    got = v.type.scalar
    if want is None or str(got) != _TRITON_DTYPE.get(want.str[1:], "?"):
        raise TypeError(f"fl.call({name}): {what} for parameter {spec.name!r} ({spec.type_text}) "
                        f"has element type {got}")
    shape = list(v.type.shape)
    if len(shape) != len(spec.shape):
        raise TypeError(f"fl.call({name}): {what} for parameter {spec.name!r} ({spec.type_text}) "
                        f"has rank {len(shape)}, expected {len(spec.shape)}")
    for axis, (a, b) in enumerate(zip(spec.shape, shape)):
        if a is not None and a != b:
            raise TypeError(f"fl.call({name}): {what} for parameter {spec.name!r} ({spec.type_text}) "
                            f"has size {b} in dimension {axis}, expected {a}")


# NumPy dtype codes -> Triton scalar type names
_TRITON_DTYPE = {"f2": "fp16", "f4": "fp32", "f8": "fp64", "i1": "int8", "i2": "int16", "i4": "int32",
                 "i8": "int64", "b1": "int1"}
_SCALAR_TO_TRITON = {"i1": tl.int1, "i8": tl.int8, "i16": tl.int16, "i32": tl.int32, "i64": tl.int64,
                     "index": tl.int64, "f16": tl.float16, "bf16": tl.bfloat16, "f32": tl.float32,
                     "f64": tl.float64}


def _operand(spec, v, what: str, name: str, semantic):
    if spec.kind == "memref" and spec.memory_space != MRAM_ADDRSPACE:
        _check_tile(spec, v, what, name)
        return v
    if spec.kind in ("ptr", "memref"):  # an MRAM memref or pointer: a Triton pointer
        if not (isinstance(v, tl.tensor) and not v.type.is_block() and v.type.is_ptr()):
            raise TypeError(f"fl.call({name}): {what} for parameter {spec.name!r} ({spec.type_text}) "
                            f"must be a pointer, got {_describe(v)}")
        return v
    dtype = _SCALAR_TO_TRITON[spec.scalar]
    if isinstance(v, tl.tensor):
        if v.type.is_block() or v.type.is_ptr():
            raise TypeError(f"fl.call({name}): {what} for parameter {spec.name!r} ({spec.type_text}) "
                            f"must be a scalar, got {_describe(v)}")
    else:
        v = semantic.to_tensor(v)
    return semantic.cast(v, dtype)


def call(fn, outs, ins, _semantic=None, _generator=None):
    """New values of `outs` after running the EDSL function `fn` on `outs` and `ins`."""
    fn = _unwrap(fn)
    if not isinstance(fn, EdslFunction):
        raise TypeError(f"fl.call: the first argument must be an @edsl.dialect function, not {type(fn).__name__}")
    outs, ins = _elements(outs), _elements(ins)
    if _semantic is None:  # Triton's interpreter (TRITON_INTERPRET=1) runs kernels as Python
        return _interpret(fn, outs, ins)
    specs = fn.params
    out_specs = [s for s in specs if s.inout]
    in_specs = [s for s in specs if not s.inout]
    name = fn.__name__
    _check_counts(name, out_specs, in_specs, outs, ins)
    outs = [_operand(s, v, f"out {k}", name, _semantic) for k, (s, v) in enumerate(zip(out_specs, outs))]
    ins = [_operand(s, v, f"in {k}", name, _semantic) for k, (s, v) in enumerate(zip(in_specs, ins))]
    # Operands in the order of the function's parameters.
    by_kind = {True: iter(outs), False: iter(ins)}
    operands = [next(by_kind[s.inout]) for s in specs]
    builder = _semantic.builder
    module = _generator.module
    symbol = placeholder_symbol(fn)
    _CALLEES[symbol] = fn
    if not module.has_function(symbol):
        from triton._C.libtriton import ir
        detached = ir.builder(_generator.context)  # a declaration is built with no insertion point
        fn_ty = detached.get_function_ty([v.type.to_ir(builder) for v in operands],
                                         [v.type.to_ir(builder) for v in outs])
        decl = detached.get_or_insert_function(module, symbol, fn_ty, "private", False)
        module.push_back(decl)
    call_op = builder.call(module.get_function(symbol), [v.handle for v in operands])
    results = [tl.tensor(call_op.get_result(i), outs[i].type) for i in range(len(outs))]
    return results[0] if len(results) == 1 else tuple(results)


# A Triton builtin: Triton's code generator passes `_semantic` (and
# `_generator`, for the module the placeholder is declared in). Marked by hand
# rather than with `triton.language.core.builtin`, whose wrapper refuses calls
# without `_semantic`, which is how Triton's interpreter calls functions that
# are not in `triton.language`.
setattr(call, tl.TRITON_BUILTIN, True)  # noqa: B010
call.signature = inspect.signature(call)


def _interpret(fn: EdslFunction, outs: list, ins: list):
    """Under TRITON_INTERPRET=1: run the host-compiled function on the tiles'
    NumPy data (one tasklet), so the tile code around a region can be debugged."""
    import numpy as np
    out_specs = [s for s in fn.params if s.inout]
    in_specs = [s for s in fn.params if not s.inout]
    _check_counts(fn.__name__, out_specs, in_specs, outs, ins)
    by_kind = {True: iter(outs), False: iter(ins)}
    args, new = [], []
    for spec in fn.params:
        v = next(by_kind[spec.inout])
        data = v.handle.data if isinstance(v, tl.tensor) else v
        if spec.kind == "memref" and spec.memory_space != MRAM_ADDRSPACE:
            a = np.array(data, dtype=spec.dtype, order="C", copy=True)
            if spec.inout:
                new.append((a, v))
            args.append(a)
        elif spec.kind == "scalar":
            args.append(data.item() if isinstance(data, np.ndarray) else data)
        else:
            raise TypeError(f"fl.call({fn.__name__}): pointer operands ({spec.name!r}) are not "
                            f"supported under TRITON_INTERPRET=1")
    fn.run(*args)
    results = [tl.tensor(type(v.handle)(a, v.handle.dtype), v.type) for a, v in new]
    return results[0] if len(results) == 1 else tuple(results)
