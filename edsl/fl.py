"""`fl.call(fn, outs, ins)`: call an `@edsl.dialect` function from a Triton kernel.

`outs` are the tiles the function may update (its InOut parameters, in
order); their new values are returned: one tensor, or a tuple for several.
`ins` are tensors, scalars and pointers (its Input parameters, in order).
TLE-Raw's one-list form, `fl.call(fn, args, output_indices=None)`, is
taken too (`_Form`).

`fn` may also be a raw function in CUDA C (`dialect(name="cuda")`,
edsl.cuda_function), on the nvidia backend only.

On the `dpu` backend, the call is in TTIR a placeholder that stock `make_ttir`
keeps: a `tt.call` to a body-less private `tt.func` whose name identifies the
EDSL function (`__edsl_<name>_<hash>`); the backend replaces it by the
function's LLVM-dialect body (edsl.inject). On Triton's stock `nvidia`
backend, the call is a few placeholder operations that stage the tiles in
shared memory (edsl.gpu.placeholders), given their code by the stages hook
this module installs when imported (edsl.gpu.stages).
"""
from __future__ import annotations

import dataclasses
import inspect
import re

from triton.language import core as tl

from .target import dtypes, nvptx
from .target.machines import DPU, NVPTX, Target
from .function import EdslFunction
from .cuda_function import CudaFunction
from .c_function import CFunction
from .inject.callees import placeholder_symbol

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


def _check_tile(spec, v, what: str, name: str, target: Target = DPU) -> None:
    """A tensor operand must match a memref parameter: dtype, rank, static shape."""
    if not (isinstance(v, tl.tensor) and v.type.is_block()):
        raise TypeError(f"fl.call({name}): {what} for parameter {spec.name!r} ({spec.type_text}) "
                        f"must be a tensor, got {_describe(v)}")
    _check_memref_operand(spec, v.type.scalar, list(v.type.shape), what, f"fl.call({name})")


def _check_memref_operand(spec, got, shape: list, what: str, call: str) -> None:
    """An operand of element type `got` and `shape` (a tile, a shared buffer)
    must match a memref parameter: dtype, rank, static shape."""
    scalar = dtypes.of_triton_dtype(got)
    want = _memref_element(spec.type_text)
    if scalar is None or scalar.unsigned or scalar.mlir != ("i64" if want == "index" else want):
        raise TypeError(f"{call}: {what} for parameter {spec.name!r} ({spec.type_text}) "
                        f"has element type {got}")
    if len(shape) != len(spec.shape):
        raise TypeError(f"{call}: {what} for parameter {spec.name!r} ({spec.type_text}) "
                        f"has rank {len(shape)}, expected {len(spec.shape)}")
    for axis, (a, b) in enumerate(zip(spec.shape, shape)):
        if a is not None and a != b:
            raise TypeError(f"{call}: {what} for parameter {spec.name!r} ({spec.type_text}) "
                            f"has size {b} in dimension {axis}, expected {a}")


def _memref_element(type_text: str) -> str:
    """`f32` of `memref<4x?xf32, 3>`."""
    return re.match(r"memref<(?:[\d?]+x)*(\w+)", type_text).group(1)


def operand_kind(spec, target: Target) -> str:
    """How a parameter gets its value from a kernel: a `tile` (a memref in the
    target's tile memory), a `pointer` (a memref or !llvm.ptr elsewhere) or a
    `scalar`."""
    if spec.kind == "memref" and spec.memory_space == target.tile_space:
        return "tile"
    return "pointer" if spec.kind in ("ptr", "memref") else "scalar"


def _operand(spec, v, what: str, name: str, semantic, target: Target = DPU):
    kind = operand_kind(spec, target)
    if kind == "tile":
        _check_tile(spec, v, what, name, target)
        return v
    if kind == "pointer":  # an MRAM / global memref or pointer: a Triton pointer
        if not (isinstance(v, tl.tensor) and not v.type.is_block() and v.type.is_ptr()):
            raise TypeError(f"fl.call({name}): {what} for parameter {spec.name!r} ({spec.type_text}) "
                            f"must be a pointer, got {_describe(v)}")
        if target is NVPTX:
            return _global_pointer(spec, v, what, name, semantic)
        return v
    dtype = tl.dtype(dtypes.triton_dtype_name(dtypes.by_mlir(spec.scalar)))
    if isinstance(v, tl.tensor):
        if v.type.is_block() or v.type.is_ptr():
            raise TypeError(f"fl.call({name}): {what} for parameter {spec.name!r} ({spec.type_text}) "
                            f"must be a scalar, got {_describe(v)}")
    else:
        v = semantic.to_tensor(v)
    return semantic.cast(v, dtype)


class _Form:
    """How a call names its operands and what it returns. TLE-Raw has two forms:
    `call(fn, outs, ins)`, the InOut parameters' operands then the Input
    ones, returning the InOuts' new values (one tensor, or a tuple); and
    `call(fn, args, output_indices=None)`, every operand in the order of
    the parameters, returning the outputs' values (None where there are
    none): the parameters `output_indices` names, else those the function
    returns (`returned`, operand numbers), else its InOut ones. An output is
    an InOut memref's new value, or a pointer or scalar operand itself (what
    the function wrote through a pointer is in memory)."""

    def __init__(self, name: str, specs: list, returned: list[int], target: Target, args: list, ins: list | None,
                 output_indices):
        if ins is not None:
            if output_indices is not None:
                raise TypeError(f"fl.call({name}): output_indices goes with one list of operands, "
                                f"call(fn, args, output_indices=...), not with outs and ins")
            self.outs, self.ins, self.picks = args, ins, None
            return
        if len(args) != len(specs):
            raise TypeError(f"fl.call({name}): the function takes {len(specs)} operands "
                            f"({', '.join(s.name for s in specs)}); got {len(args)}")
        self.outs = [a for s, a in zip(specs, args) if s.inout]
        self.ins = [a for s, a in zip(specs, args) if not s.inout]
        inout = [k for k, s in enumerate(specs) if s.inout]
        if output_indices is not None:
            indices = output_indices_of(output_indices, len(specs), name)
        elif returned:
            indices = returned
        else:
            indices = inout
        self.picks = []
        for k in indices:
            s = specs[k]
            if s.inout:
                self.picks.append(("new", inout.index(k)))
            elif operand_kind(s, target) == "tile":
                raise TypeError(f"fl.call({name}): output {k} is Input parameter {s.name!r} ({s.type_text}), "
                                f"which the function cannot update: make it InOut, or return it")
            else:
                self.picks.append(("operand", args[k]))

    def results(self, new: list):
        """The call's value, from the InOut parameters' new values."""
        if self.picks is None:
            return new[0] if len(new) == 1 else tuple(new)
        out = [new[v] if how == "new" else v for how, v in self.picks]
        return None if not out else out[0] if len(out) == 1 else tuple(out)


def output_indices_of(output_indices, n: int, name: str) -> list[int]:
    return [_index(i, n, name) for i in _elements(output_indices)]


def _edsl_form(fn: EdslFunction, target: Target, args: list, ins: list | None, output_indices) -> _Form:
    specs = fn.params_for(target)
    returned = [next(k for k, s in enumerate(specs) if s.name == r) for r in fn.returns]
    return _Form(fn.__name__, specs, returned, target, args, ins, output_indices)


def _index(i, n: int, name: str) -> int:
    i = _unwrap(i)
    if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n:
        raise TypeError(f"fl.call({name}): output_indices holds operand numbers 0 to {n - 1}, not {i!r}")
    return i


def call(fn, args, ins=None, output_indices=None, hint="", _semantic=None, _generator=None):
    """Run a raw function inside a Triton kernel (on the `dpu` backend or a GPU).

    Two forms, TLE-Raw's: `call(fn, outs, ins)` and `call(fn, args, output_indices=None)`.

    Args:
        fn: An `@edsl.dialect` function.
        args: With `ins`, the tiles passed as its `InOut` parameters, in their order;
            else every operand, in the order of its parameters.
        ins: The values passed as its `Input` parameters (tiles, pointers, scalars).
        output_indices: In the one-list form, the operands whose values the call
            returns (default: the parameters the function returns, else its InOut ones).
        hint: TLE-Raw's scheduling hint for a foreign function; an edsl function has none to take.

    Returns:
        With `ins`: the new values of the InOut tiles, one tensor or a tuple. In the
        one-list form: the outputs' values (a tile's new value, a pointer or scalar
        operand itself), one, a tuple, or None where there are none.
    """
    fn = _unwrap(fn)
    if not isinstance(fn, (EdslFunction, CudaFunction, CFunction)):
        raise TypeError(f"fl.call: the first argument must be an @edsl.dialect function, not {type(fn).__name__}")
    args, ins = _elements(args), None if _unwrap(ins) is None else _elements(ins)
    backend = None if _semantic is None else getattr(_semantic.builder.options, "backend_name", None)
    if isinstance(fn, CudaFunction):
        if backend != "cuda":
            where = "Triton's interpreter" if _semantic is None else f"the {backend!r} backend"
            raise TypeError(f"fl.call({fn.__name__}): a CUDA C function runs in kernels for NVIDIA GPUs, not "
                            f"under {where}")
        return _call_cuda(fn, args, ins, output_indices, _semantic)
    if isinstance(fn, CFunction):
        if _semantic is not None and backend != "dpu":
            raise TypeError(f"fl.call({fn.__name__}): a UPMEM C function runs in kernels on the dpu backend, "
                            f"not on {backend!r}")
        return _call_c(fn, args, ins, output_indices, _semantic, _generator)
    if _semantic is None:  # Triton's interpreter (TRITON_INTERPRET=1) runs kernels as Python
        form = _edsl_form(fn, DPU, args, ins, output_indices)
        return form.results(_interpret(fn, form.outs, form.ins))
    if backend == "cuda":
        form = _edsl_form(fn, NVPTX, args, ins, output_indices)
        return form.results(_call_gpu(fn, form.outs, form.ins, _semantic))
    if backend != "dpu":
        raise TypeError(f"fl.call runs on the dpu and nvidia (cuda) backends, not on {backend!r}")
    form = _edsl_form(fn, DPU, args, ins, output_indices)
    return form.results(_call_dpu(fn, form.outs, form.ins, _semantic, _generator))


def _call_dpu(fn: EdslFunction, outs: list, ins: list, _semantic, _generator) -> list:
    """The `tt.call` placeholder (module docstring); the InOut tiles' new values."""
    specs = fn.params_for(DPU)
    out_specs = [s for s in specs if s.inout]
    in_specs = [s for s in specs if not s.inout]
    name = fn.__name__
    _check_counts(name, out_specs, in_specs, outs, ins)
    outs = [_operand(s, v, f"out {k}", name, _semantic) for k, (s, v) in enumerate(zip(out_specs, outs))]
    ins = [_operand(s, v, f"in {k}", name, _semantic) for k, (s, v) in enumerate(zip(in_specs, ins))]
    # Operands in the order of the function's parameters.
    by_kind = {True: iter(outs), False: iter(ins)}
    operands = [next(by_kind[s.inout]) for s in specs]
    return _placeholder(placeholder_symbol(fn), operands, outs, _semantic, _generator)


def _placeholder(symbol: str, operands: list, outs: list, _semantic, _generator) -> list:
    """A `tt.call` of the body-less function `symbol` on `operands`, returning
    the new values of the tiles `outs`."""
    builder = _semantic.builder
    module = _generator.module
    if not module.has_function(symbol):
        from .backend.triton_internals import libtriton
        detached = libtriton().ir.builder(_generator.context)  # a declaration is built with no insertion point
        fn_ty = detached.get_function_ty([v.type.to_ir(builder) for v in operands],
                                         [v.type.to_ir(builder) for v in outs])
        decl = detached.get_or_insert_function(module, symbol, fn_ty, "private", False)
        module.push_back(decl)
    call_op = builder.call(module.get_function(symbol), [v.handle for v in operands])
    return [tl.tensor(call_op.get_result(i), outs[i].type) for i in range(len(outs))]


# A Triton builtin: Triton's code generator passes `_semantic` (and
# `_generator`, for the module the placeholder is declared in). Marked by hand
# rather than with `triton.language.core.builtin`, whose wrapper refuses calls
# without `_semantic`, which is how Triton's interpreter calls functions that
# are not in `triton.language`.
setattr(call, tl.TRITON_BUILTIN, True)  # noqa: B010
call.signature = inspect.signature(call)


def call_smem(fn, outs, ins=None, _semantic=None, _generator=None):
    """Run a raw function on shared buffers of the kernel (TLE's `call_smem`;
    edsl.gpu.shared), on an NVIDIA GPU: in place, between barriers of the CTA.

    Args:
        fn: An `@edsl.dialect` function whose buffer parameters are memrefs
            in shared memory, or a CUDA C one (a buffer passed as a memref
            descriptor, as `call` passes a tile).
        outs: The buffers passed as its `InOut` parameters, in their order;
            without `ins`, every operand, in the order of its parameters
            (TLE's one-list form).
        ins: The buffers, pointers and scalars passed as its `Input` ones.

    Returns:
        The buffers of its `InOut` parameters (one, a tuple, or None where
        there are none), their contents the function's.
    """
    from .gpu import placeholders, shared, stages
    fn = _unwrap(fn)
    name = getattr(fn, "__name__", type(fn).__name__)
    if not isinstance(fn, (EdslFunction, CudaFunction)):
        raise TypeError(f"call_smem({name}): the function must be an @edsl.dialect function")
    shared._require_gpu(f"call_smem({name})", _semantic)
    stages.require_installed()
    if isinstance(fn, CudaFunction):
        specs = _cuda_smem_specs(fn, outs, ins, _semantic)
    else:
        specs = fn.params_for(NVPTX)
        fn.compile(NVPTX)  # errors in the function now, at the kernel's line
    out_specs = [s for s in specs if s.inout]
    in_specs = [s for s in specs if not s.inout]
    if _unwrap(ins) is None:                  # (one list, in parameter order)
        args = _elements(outs)
        if len(args) != len(specs):
            raise TypeError(f"call_smem({name}): the function takes {len(specs)} operands "
                            f"({', '.join(s.name for s in specs)}); got {len(args)}")
        given = iter(args)
    else:
        outs, ins = _elements(outs), _elements(ins)
        _check_counts(name, out_specs, in_specs, outs, ins)
        by_kind = {True: iter(outs), False: iter(ins)}
        given = (next(by_kind[s.inout]) for s in specs)
    operands, kinds = [], []
    for s, v in zip(specs, given):
        what = f"the {'out' if s.inout else 'in'} operand"
        if operand_kind(s, NVPTX) == "tile":
            buf = shared._buffer(v, f"call_smem({name}): {what} for parameter {s.name!r} ({s.type_text})")
            _check_memref_operand(s, buf.dtype, list(buf.shape), f"{what} (a buffer)", f"call_smem({name})")
            operands.append(buf)
            kinds.append("buffer")
        elif s.inout:
            raise TypeError(f"call_smem({name}): InOut parameter {s.name!r} ({s.type_text}) must be a memref in "
                            f"shared memory (a buffer)")
        else:
            operands.append(_operand(s, v, what, name, _semantic, NVPTX))
            kinds.append(operand_kind(s, NVPTX))
    placeholders.emit(fn, specs, operands, kinds, _semantic)
    results = [v for s, v in zip(specs, operands) if s.inout]
    if not results:
        return None
    return results[0] if len(results) == 1 else tl.tuple(results)


def _cuda_smem_specs(fn: CudaFunction, outs, ins, semantic) -> list:
    """The parameters of CUDA C function `fn` as call_smem's operands fill
    them: with `ins`, the `outs` are its InOut ones; in the one-list form,
    the buffers whose memory it returns (none for a `void` one: its buffers
    are updated in place all the same)."""
    arch = nvptx.arch(_capability(semantic))
    operands = _elements(outs) + ([] if _unwrap(ins) is None else _elements(ins))
    specs, first_param = _cuda_specs(fn, operands, arch)
    outputs = set(range(len(_elements(outs))) if _unwrap(ins) is not None else _returned_operands(
        fn, arch, first_param, f"call_smem({fn.__name__}): cannot tell which buffers the CUDA function returns; "
                               f"pass its outs and ins as two lists"))
    return [dataclasses.replace(s, inout=k in outputs) for k, s in enumerate(specs)]


setattr(call_smem, tl.TRITON_BUILTIN, True)  # noqa: B010  (as call, above)
call_smem.signature = inspect.signature(call_smem)


def _interpret(fn: EdslFunction, outs: list, ins: list) -> list:
    """Under TRITON_INTERPRET=1: run the host-compiled function on the tiles'
    NumPy data (one tasklet), so the tile code around a region can be debugged;
    the InOut tiles' new values."""
    specs = fn.params_for(DPU)
    out_specs = [s for s in specs if s.inout]
    in_specs = [s for s in specs if not s.inout]
    _check_counts(fn.__name__, out_specs, in_specs, outs, ins)
    by_kind = {True: iter(outs), False: iter(ins)}
    return _run_interpreted(fn, specs, [next(by_kind[s.inout]) for s in specs])


def _run_interpreted(fn, specs: list, operands: list) -> list:
    """`fn.run` on the NumPy data of `operands` (in the order of `specs`):
    the InOut tiles' new values."""
    import numpy as np
    args, new = [], []
    for spec, v in zip(specs, operands):
        data = v.handle.data if isinstance(v, tl.tensor) else v
        if operand_kind(spec, DPU) == "tile":
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
    return [tl.tensor(type(v.handle)(a, v.handle.dtype), v.type) for a, v in new]


# --- UPMEM C on the dpu backend ------------------------------------------------------------

def _call_c(fn: CFunction, args: list, ins: list | None, output_indices, semantic, generator):
    """fl.call of a UPMEM C function: a tile passes as a pointer to its
    elements in WRAM (row-major; an out's copy, which the function updates
    in place), a Triton pointer as a `__mram_ptr` pointer, a scalar as its
    parameter's type. In the one-list form the outputs are `output_indices`,
    else the operands whose memory the function returns."""
    name = fn.__name__
    tasklets = 1 if semantic is None else semantic.builder.options.num_tasklets
    operands = args + (ins or [])
    specs = _c_specs(fn, operands, tasklets)
    if ins is not None:
        outputs, returned = set(range(len(args))), []
        for k in outputs:
            if specs[k].kind != "memref":
                raise TypeError(f"fl.call({name}): out {k} is {_describe(_unwrap(operands[k]))}; the outs are "
                                f"tiles the function updates (what it writes through a pointer is in memory: "
                                f"pass the pointer among the ins)")
    else:
        if output_indices is not None:
            returned = output_indices_of(output_indices, len(operands), name)
        else:
            returned = fn.returned_params(tasklets)
            if returned is None:
                raise TypeError(f"fl.call({name}): cannot tell which operands the C function returns; name "
                                f"them with output_indices=[...]")
        outputs = set(returned)
    specs = [dataclasses.replace(s, inout=k in outputs and s.kind == "memref") for k, s in enumerate(specs)]
    form = _Form(name, specs, returned, DPU, args, ins, output_indices)
    if semantic is None:
        return form.results(_run_interpreted(fn, specs, operands))
    operands = [v if s.kind == "memref" else _operand(s, v, f"operand {k}", name, semantic)
                for k, (s, v) in enumerate(zip(specs, operands))]
    written = tuple(k for k, s in enumerate(specs) if s.inout)
    return form.results(_placeholder(placeholder_symbol(fn, written), operands, [operands[k] for k in written],
                                     semantic, generator))


def _c_specs(fn: CFunction, operands: list, tasklets: int) -> list:
    """The parameters of C function `fn` as `operands` fill them, one each."""
    from .codegen import llvm_ir
    from .hostcall import ArgSpec
    c_fn = fn.compiled(tasklets).function
    signature = f"{c_fn.source_name}({', '.join(c_fn.params)})"
    if len(operands) != len(c_fn.params):
        raise TypeError(f"fl.call({fn.__name__}): {len(operands)} operands for the {len(c_fn.params)} "
                        f"parameters of {signature}")
    specs = []
    for k, (t, v) in enumerate(zip(c_fn.params, map(_unwrap, operands))):
        mlir = llvm_ir.mlir_type(t)
        if isinstance(v, tl.tensor) and v.type.is_block():
            scalar = dtypes.of_triton_dtype(v.type.scalar)
            if mlir != "!llvm.ptr" or scalar is None:
                raise TypeError(f"fl.call({fn.__name__}): operand {k} ({_describe(v)}) passes as a pointer to "
                                f"its elements in WRAM; parameter {k} of {signature} is {t}")
            shape = tuple(int(d) for d in v.type.shape)
            specs.append(ArgSpec(f"operand {k}", f"memref<{'x'.join(map(str, shape))}x{scalar.mlir}>", "memref",
                                 shape=shape, memory_space=DPU.tile_space))
        elif isinstance(v, tl.tensor) and v.type.is_ptr():
            if mlir != f"!llvm.ptr<{DPU.pointer_space}>":
                raise TypeError(f"fl.call({fn.__name__}): operand {k} is a pointer to the DPU's MRAM; parameter "
                                f"{k} of {signature} is {t} (declare it a __mram_ptr pointer)")
            specs.append(ArgSpec(f"operand {k}", t, "ptr", memory_space=DPU.pointer_space))
        else:
            if not mlir or mlir.startswith("!llvm.ptr") or dtypes.by_mlir(mlir) is None:
                raise TypeError(f"fl.call({fn.__name__}): operand {k} ({_describe(v)}) is a scalar; parameter "
                                f"{k} of {signature} is {t}")
            specs.append(ArgSpec(f"operand {k}", t, "scalar", scalar=mlir))
    return specs


# --- the nvidia backend ------------------------------------------------------------------

def _global_pointer(spec, v, what: str, name: str, semantic):
    """A Triton pointer for a pointer parameter on a GPU, as the i64 address the
    adapter turns back into a pointer (edsl.inject.gpu_library)."""
    if spec.kind == "memref" and len(spec.shape) != 1 and None in spec.shape:
        raise TypeError(f"fl.call({name}): {what} for parameter {spec.name!r} ({spec.type_text}): a memref made "
                        f"from a pointer must be 1-D or have a static shape")
    return semantic.cast(v, tl.int64)


def _check_tile_layout(spec, v, what: str, name: str) -> None:
    """Tiles are staged row-major at offset 0: a parameter with a static layout must agree."""
    if spec.strides is None:
        return
    shape, want, n = list(v.type.shape), [], 1
    for d in reversed(shape):
        want.insert(0, n)
        n *= int(d)
    if any(s is not None and s != w for s, w in zip(spec.strides, want)) or spec.offset not in (0, None):
        raise TypeError(f"fl.call({name}): {what} for parameter {spec.name!r} ({spec.type_text}): a tile is passed "
                        f"row-major at offset 0 (strides {want})")


def _call_gpu(fn, outs: list, ins: list, semantic, specs: list | None = None) -> list:
    """The placeholders of a call (edsl.gpu.placeholders); the InOut tiles' new
    values. `specs`: the parameters of a CUDA C function, as this call passes them."""
    from .gpu import placeholders, stages
    stages.require_installed()
    if specs is None:
        specs = fn.params_for(NVPTX)
        fn.compile(NVPTX)  # errors in the function now, at the kernel's line
    out_specs = [s for s in specs if s.inout]
    in_specs = [s for s in specs if not s.inout]
    name = fn.__name__
    _check_counts(name, out_specs, in_specs, outs, ins)
    for s in out_specs:
        if operand_kind(s, NVPTX) != "tile":
            raise TypeError(f"fl.call({name}): InOut parameter {s.name!r} ({s.type_text}) must be a memref in "
                            f"shared memory (a tile)")
    outs = [_operand(s, v, f"out {k}", name, semantic, NVPTX) for k, (s, v) in enumerate(zip(out_specs, outs))]
    ins = [_operand(s, v, f"in {k}", name, semantic, NVPTX) for k, (s, v) in enumerate(zip(in_specs, ins))]
    for k, (s, v) in enumerate(zip(out_specs + in_specs, outs + ins)):
        if operand_kind(s, NVPTX) == "tile":
            _check_tile_layout(s, v, f"out {k}" if s.inout else f"in {k - len(outs)}", name)
    by_kind = {True: iter(outs), False: iter(ins)}
    operands = [next(by_kind[s.inout]) for s in specs]
    kinds = [operand_kind(s, NVPTX) for s in specs]
    return placeholders.emit(fn, specs, operands, kinds, semantic)


def _capability(semantic) -> int:
    arch = getattr(semantic.builder.options, "arch", None) or "sm90"   # CUDAOptions.arch: "sm90"
    return int("".join(ch for ch in str(arch) if ch.isdigit()) or 90)


def _call_cuda(fn: CudaFunction, args: list, ins: list | None, output_indices, semantic):
    """fl.call of a CUDA C function: its parameters read from the compiled
    function, as the operands fill them (edsl.cuda_function); in the one-list
    form, the outputs are `output_indices`, else the operands whose memory
    it returns."""
    arch = nvptx.arch(_capability(semantic))
    name = fn.__name__
    operands = args + (ins or [])
    specs, first_param = _cuda_specs(fn, operands, arch)
    if ins is not None:
        outputs = set(range(len(args)))
        returned = []
    else:
        returned = (output_indices_of(output_indices, len(operands), name) if output_indices is not None else
                    _returned_operands(fn, arch, first_param, f"fl.call({name}): cannot tell which operands the "
                                                              f"CUDA function returns; name them with "
                                                              f"output_indices=[...]"))
        outputs = set(returned)
    # (outs are InOut whatever they are, so that a pointer among them is refused as such)
    specs = [dataclasses.replace(s, inout=k in outputs and (ins is not None or s.kind == "memref"))
             for k, s in enumerate(specs)]
    form = _Form(name, specs, returned, NVPTX, args, ins, output_indices)
    return form.results(_call_gpu(fn, form.outs, form.ins, semantic, specs))


def _returned_operands(fn: CudaFunction, arch: str, first_param: list[int], refusal: str) -> list[int]:
    """The operands (numbers) whose memory CUDA C function `fn` returns (none
    for a `void` one), from the first LLVM parameter of each; a TypeError
    saying `refusal` where that cannot be told."""
    params = fn.returned_params(arch)
    if params is None or any(p not in first_param for p in params):
        raise TypeError(refusal)
    return [first_param.index(p) for p in params]


def _cuda_specs(fn: CudaFunction, operands: list, arch: str) -> tuple[list, list[int]]:
    """The parameters of `fn` as `operands` fill them, and the first LLVM
    parameter of each operand."""
    from .codegen import llvm_ir
    from .gpu import placeholders
    from .hostcall import ArgSpec
    llvm_fn = fn.llvm_function(arch)
    params = [(t, llvm_ir.mlir_type(t)) for t in llvm_fn.params]
    signature = f"{llvm_fn.source_name}({', '.join(llvm_fn.params)})"
    specs, first, k = [], [], 0

    def take(n: int, what: str) -> list[str]:
        nonlocal k
        if k + n > len(params):
            raise TypeError(f"fl.call({fn.__name__}): the operands need more parameters than {signature} has "
                            f"(operand {len(specs)}, {what}, needs {n} from parameter {k})")
        got = [m for _, m in params[k:k + n]]
        k += n
        return got

    from .gpu.shared import SharedBuffer
    for i, v in enumerate(_unwrap(v) for v in operands):
        first.append(k)
        if isinstance(v, SharedBuffer) or isinstance(v, tl.tensor) and v.type.is_block():
            # (a tile, or a shared buffer of the kernel: a memref descriptor either way)
            shape = [int(d) for d in v.shape] if isinstance(v, SharedBuffer) else [int(d) for d in v.type.shape]
            elem = placeholders.element(v.dtype if isinstance(v, SharedBuffer) else v.type.scalar)
            fields = take(3 + 2 * len(shape), f"a tile of rank {len(shape)}: its memref descriptor")
            if elem is None or any(not f.startswith("!llvm.ptr") for f in fields[:2]) or \
                    any(f != "i64" for f in fields[2:]):
                raise TypeError(f"fl.call({fn.__name__}): operand {i} ({_describe(v)}) is passed as a memref "
                                f"descriptor (pointer, pointer, i64 offset, {len(shape)} i64 sizes, {len(shape)} "
                                f"i64 strides); {signature} has ({', '.join(fields)}) there")
            text = f"memref<{'x'.join(map(str, shape))}x{elem}, {nvptx.SHARED_ADDRSPACE}>"
            specs.append(ArgSpec(f"operand {i}", text, "memref", shape=tuple(shape),
                                 memory_space=nvptx.SHARED_ADDRSPACE))
        elif isinstance(v, tl.tensor) and v.type.is_ptr():
            (t,) = take(1, "a pointer")
            if not t.startswith("!llvm.ptr"):
                raise TypeError(f"fl.call({fn.__name__}): operand {i} is a pointer; parameter {k - 1} of "
                                f"{signature} is {llvm_fn.params[k - 1]}")
            specs.append(ArgSpec(f"operand {i}", t, "ptr"))
        else:
            (t,) = take(1, "a scalar")
            if not t or t.startswith("!llvm.ptr") or dtypes.by_mlir(t) is None:
                raise TypeError(f"fl.call({fn.__name__}): operand {i} ({_describe(v)}) is a scalar; parameter "
                                f"{k - 1} of {signature} is {llvm_fn.params[k - 1]}")
            specs.append(ArgSpec(f"operand {i}", t, "scalar", scalar=t))
    if k != len(params):
        raise TypeError(f"fl.call({fn.__name__}): {len(operands)} operands fill {k} of the {len(params)} "
                        f"parameters of {signature}")
    return specs, first


def _install_stages_hook() -> None:
    from .gpu import stages
    stages.install()


_install_stages_hook()
