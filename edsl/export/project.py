"""`export(kernel, out_dir, ...)`: a compiled kernel as a self-contained UPMEM SDK project.

The folder holds the DPU program in C (the kernel's final LLVM-dialect
module with the DPU runtime library linked in, printed by
`edsl.export.printer`), the DPU ABI as a C header (from edsl.target.dpu), the
argument struct shared by host and DPU, a generated host runner, a Makefile
(hardware build with the UPMEM toolchain, and a `sim` build with the host C
compiler against the SDK stand-ins in `sim/`), a README, and -- when sample
arguments are given -- the input data and the expected outputs (from a run on
the DPU model). The files are `string.Template`s in `templates/`, filled here.

Everything is written into a temporary folder beside `out_dir` and renamed
at the end, so a failure leaves nothing half-written.
"""
from __future__ import annotations

import functools
import json
import math
import os
import shutil
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..target import dtypes
from ..base import templates
from ..base.progress import Progress
from ..backend.compiler import KernelRecord
from ..backend.model import last_report
from ..dpu import sharing, support
from ..target import dpu as abi
from ..base.errors import ArgumentError, CompileError, DpuError, EdslError, caller_location, file_of_kernel_site
from . import printer as P

SDK_DIR = Path(__file__).resolve().parent / "sdk"
TEMPLATES = Path(__file__).resolve().parent / "templates"
SIM_FILES = ("defs.h", "mram.h", "barrier.h", "alloc.h", "stdio.h", "dpu.h", "dpu_sim_rt.c", "dpu_sim_host.c")

# Triton scalar/element type -> (C type, NumPy dtype, kind) for the export.
# The Triton types an export takes, in the order its errors list them; their
# facts come from the one type table (edsl.target.dtypes).
EXPORTED = ("i1", "u1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "fp32", "fp64", "fp16", "bf16",
            # (fp8e4b15 arrays have no NumPy dtype Triton takes: Triton reads them as uint8 reinterpreted)
            "fp8e4nv", "fp8e5", "fp8e4b8", "fp8e5b16")


def _c_type(t: str) -> str:
    """The C type an export stores a value of Triton type `t` in. 16- and
    8-bit floats are stored as their bits: the C of the DPU toolchain has no
    16-bit float type, and the program converts them as the model does
    (edsl.lowering.floats: integer code, round to nearest even); booleans
    as a byte."""
    s = dtypes.by_triton(t)
    native = s.is_int and s.width > 1 or s.mlir in dtypes.NATIVE_FLOATS
    return s.c if native else f"uint{8 * s.nbytes}_t"


def _kind(t: str) -> str:
    """How the host runner reads and checks a value of Triton type `t`:
    bool, int, uint, float, half (16-bit floats) or fp8 (their outputs are
    checked bit for bit)."""
    s = dtypes.by_triton(t)
    if s.is_int:
        return "bool" if s.width == 1 else "uint" if s.unsigned else "int"
    return {1: "fp8", 2: "half"}.get(s.nbytes, "float")


_NUMPY_TO_TRITON = {dtypes.by_triton(t).numpy: t for t in EXPORTED if t != "u1"}

# Names a parameter's C field may not take: C's, the SDK's, the runner's and the
# argument struct's own fields.
_C_WORDS = set(P._RESERVED) | {"data", "out", "dpus", "grid", "check", "profile", "args",
                               "set", "dpu", "i", "status", "grid_x", "grid_y", "grid_z",
                               "dpu_id", "first_program", "end_program", "mram_bytes", "scratch", "regions",
                               "log_offset", "log_cap"}

# Entries of a tasklet's access log kept in WRAM (abi.LOG_ENTRY i64 each; a
# launch on several DPUs logs what each load, store and atomic used): few, as
# WRAM is the kernel's; a full one is flushed to the tasklet's log in MRAM.
LOG_WRAM_ENTRIES = 4

# A kernel that prints (tl.device_print): each DPU's printf log buffer in MRAM,
# by default the SDK's default size (the Makefile's STDOUT_BUFFER_SIZE), and
# the WRAM of the SDK's printf: its globals in the SDK's dpu-rt
# src/stdlib/stdio.c are 32 bytes (an 8-byte DMA-aligned cache, the buffer's
# size, write pointer and wrap state, the cache index, the wrap count; its
# lock is an atomic bit, not WRAM), 40 with alignment; 64 leaves a margin.
# (The hex-float digits are on the tasklet's stack.)
STDOUT_BUFFER_BYTES = 1 << 20
PRINTF_WRAM_BYTES = 64


@dataclass
class Param:
    name: str          # Python name
    cname: str         # C field name
    type: str          # Triton type ("*fp32", "i32", ...)

    @property
    def is_pointer(self) -> bool:
        return self.type.startswith("*")

    @property
    def elem(self) -> str:
        return self.type[1:] if self.is_pointer else self.type


@dataclass
class ExportResult:
    """What `export` wrote."""
    path: Path
    kernel: str
    params: list
    grid: tuple | None
    num_dpus: int
    num_tasklets: int
    outputs: list
    files: list

    def __fspath__(self) -> str:
        return str(self.path)


# -- arguments -----------------------------------------------------------------
def _kernel_params(kernel):
    from ..backend.triton_internals import jit_function_class
    JITFunction = jit_function_class()
    fn = kernel
    while not isinstance(fn, JITFunction) and hasattr(fn, "fn"):
        fn = fn.fn                     # autotuner / heuristics wrappers
    if not isinstance(fn, JITFunction):
        raise ArgumentError(f"export() takes a @triton.jit kernel, not {type(kernel).__name__}")
    return fn, list(fn.params)


def _as_numpy(name: str, value):
    """A torch CPU tensor, or Triton's view of one as another dtype
    (`triton.reinterpret`), as a NumPy array of its elements (a copy; NumPy's
    or ml_dtypes' dtype); any other value as it is."""
    import ctypes

    import numpy as np
    if isinstance(value, np.ndarray) or not callable(getattr(value, "data_ptr", None)):
        return value
    dtype, tensor = value.dtype, getattr(value, "base", value)     # (a TensorWrapper's tensor)
    if not (hasattr(tensor, "detach") and hasattr(tensor, "numel")):
        return value
    scalar = (dtypes.of_triton_dtype(dtype) if hasattr(dtype, "primitive_bitwidth") else
              next((s for s in dtypes.SCALARS if s.numpy == str(dtype).removeprefix("torch.")), None))
    if scalar is None or scalar.numpy is None:
        raise ArgumentError(f"argument '{name}': arrays of dtype {dtype} cannot be exported")
    if getattr(tensor.device, "type", "cpu") != "cpu":
        raise ArgumentError(f"argument '{name}' is on device {tensor.device}: export takes CPU tensors")
    t = tensor.detach().contiguous()
    raw = (ctypes.c_uint8 * (t.numel() * t.element_size())).from_address(t.data_ptr())
    return np.frombuffer(raw, dtype=dtypes.numpy_dtype(scalar)).reshape(tuple(value.shape)).copy()


def _type_of_value(name: str, value) -> str:
    import numpy as np
    if isinstance(value, np.ndarray) or (hasattr(value, "dtype") and hasattr(value, "shape")
                                         and not np.isscalar(value)):
        dt = np.dtype(getattr(value, "dtype"))
        t = _NUMPY_TO_TRITON.get(dt.name)
        if t is None:
            raise ArgumentError(f"argument '{name}': arrays of dtype {dt.name} cannot be exported "
                                f"(supported: {', '.join(sorted(_NUMPY_TO_TRITON))})")
        return "*" + t
    if isinstance(value, (bool, np.bool_)):
        return "i1"
    if isinstance(value, np.generic):
        t = _NUMPY_TO_TRITON.get(np.dtype(type(value)).name)
        if t is None:
            raise ArgumentError(f"argument '{name}': scalars of type {type(value).__name__} "
                                "cannot be exported")
        return t
    if isinstance(value, int):
        if -2**31 <= value < 2**31:
            return "i32"
        if 2**63 <= value < 2**64:
            return "u64"
        if -2**63 <= value < 2**63:
            return "i64"
        raise ArgumentError(f"argument '{name}': integer {value} does not fit 64 bits")
    if isinstance(value, float):
        return "fp32"
    raise ArgumentError(f"argument '{name}': cannot export a value of type {type(value).__name__} "
                        "(NumPy arrays, numbers and booleans only)")


def _check_type(name: str, t) -> str:
    if not isinstance(t, str):
        raise ArgumentError(f"signature of '{name}' must be a type string such as '*fp32' or "
                            f"'i32', not {t!r}")
    t = t.strip()
    base = t[1:] if t.startswith("*") else t
    if base not in EXPORTED:
        kind = "element type" if t.startswith("*") else "type"
        raise ArgumentError(f"argument '{name}': unknown or unsupported {kind} '{base}' "
                            f"(supported: {', '.join(EXPORTED)})")
    return t


def resolve_arguments(kernel, signature, constants, sample_args):
    """(params, constexprs, sample values by name) from what the caller gave."""
    fn, params = _kernel_params(kernel)
    constants = dict(constants or {})
    names = [p.name for p in params]
    unknown = [k for k in constants if k not in names]
    if unknown:
        raise ArgumentError(f"constants {unknown} are not parameters of kernel '{fn.__name__}' "
                            f"(parameters: {names})")
    values: dict[str, Any] = {}
    if sample_args is not None:
        if isinstance(sample_args, Mapping):
            values = dict(sample_args)
        else:
            sample_args = list(sample_args)
            if len(sample_args) > len(params):
                raise ArgumentError(f"kernel '{fn.__name__}' takes {len(params)} arguments, "
                                    f"{len(sample_args)} sample arguments were given")
            values = {p.name: v for p, v in zip(params, sample_args)}
        values = {k: _as_numpy(k, v) for k, v in values.items()}
        extra = [k for k in values if k not in names]
        if extra:
            raise ArgumentError(f"sample arguments {extra} are not parameters of kernel '{fn.__name__}'")
    if signature is not None and not isinstance(signature, Mapping):
        runtime = [p.name for p in params if not p.is_constexpr]
        signature = list(signature)
        if len(signature) != len(runtime):
            raise ArgumentError(f"signature lists {len(signature)} types; kernel '{fn.__name__}' "
                                f"has {len(runtime)} non-constexpr parameters {runtime}")
        signature = dict(zip(runtime, signature))
    if signature is None and sample_args is None:
        raise ArgumentError(f"export of kernel '{fn.__name__}' needs its argument types: give "
                            "signature={'x_ptr': '*fp32', 'n': 'i32', ...} or sample_args=(...)")
    out_params, constexprs = [], {}
    for p in params:
        if p.is_constexpr:
            if p.name in constants:
                constexprs[p.name] = constants[p.name]
            elif p.name in values:
                constexprs[p.name] = values.pop(p.name)
            elif p.has_default:
                constexprs[p.name] = p.default
            else:
                raise ArgumentError(f"constexpr parameter '{p.name}' of kernel '{fn.__name__}' "
                                    "needs a value (constants={...})")
            continue
        if p.name in constants:
            raise ArgumentError(f"parameter '{p.name}' is not a tl.constexpr; give its type in the "
                                "signature (or a sample value) instead of a constant")
        if p.name not in values and p.has_default and sample_args is not None:
            values[p.name] = p.default             # (as a launch that leaves it out)
        if p.name in values and values[p.name] is None:
            constexprs[p.name] = values.pop(p.name)        # Triton specializes None as a constant
            continue
        if signature is not None and p.name in signature:
            t = _check_type(p.name, signature[p.name])
            if p.name in values:
                seen = _type_of_value(p.name, values[p.name])
                if seen != t:
                    raise ArgumentError(f"sample argument '{p.name}' has type {seen}, the "
                                        f"signature says {t}")
        elif p.name in values:
            t = _type_of_value(p.name, values[p.name])
        else:
            if sample_args is not None:
                raise ArgumentError(f"missing sample argument '{p.name}' of kernel '{fn.__name__}'")
            raise ArgumentError(f"the signature gives no type for parameter '{p.name}' of "
                                f"kernel '{fn.__name__}'")
        cname = p.name if p.name not in _C_WORDS else f"arg_{p.name}"
        out_params.append(Param(p.name, cname, t))
    if signature is not None:
        extra = [k for k in signature if k not in names]
        if extra:
            raise ArgumentError(f"signature names {extra} are not parameters of kernel '{fn.__name__}'")
    return fn, out_params, constexprs, values


def _grid(grid, values, constexprs) -> tuple[int, int, int] | None:
    if grid is None:
        return None
    if callable(grid):
        grid = grid({**values, **constexprs})
    if isinstance(grid, int):
        grid = (grid,)
    try:
        g = tuple(int(x) for x in grid)
    except (TypeError, ValueError):
        raise ArgumentError(f"grid must be 1 to 3 integers, not {grid!r}") from None
    if not 1 <= len(g) <= 3 or any(x < 0 for x in g):
        raise ArgumentError(f"grid must be 1 to 3 non-negative integers, not {grid!r}")
    return g + (1,) * (3 - len(g))


# -- compile -------------------------------------------------------------------
def compile_for_export(fn, params: list[Param], constexprs: dict, num_dpus: int, num_tasklets: int,
                       debug: bool = False, wram_bytes: int = abi.WRAM_BYTES):
    """(metadata, LLVM-dialect text) of `fn` for this signature, without launching:
    the `llmlir` stage, the kernel before the runtime library is linked in.
    `wram_bytes`: the WRAM the kernel's buffers may take (beyond it, tiles are
    kept in MRAM)."""
    from ..backend import triton_internals
    from ..backend.compiler import TARGET
    sig = {}
    by_name = {p.name: p for p in params}
    for p in fn.params:
        sig[p.name] = "constexpr" if p.name in constexprs else by_name[p.name].type
    try:
        compiled = triton_internals.compile_kernel(fn, sig, constexprs, TARGET,
                                                   {"num_dpus": num_dpus, "num_tasklets": num_tasklets,
                                                    "debug": debug, "wram_bytes": wram_bytes,
                                                    "tasklet_loops": False, "race_check": False})
    except EdslError:
        raise
    except triton_internals.compilation_error_class() as err:
        raise CompileError(f"kernel '{fn.__name__}' does not compile for the DPU: {err}") from None
    except Exception as err:  # noqa: BLE001 - an internal failure of a compile stage
        raise CompileError(f"kernel '{fn.__name__}' does not compile for the DPU: "
                           f"{type(err).__name__}: {err}") from err
    return KernelRecord.from_program(compiled.asm["dpubin"])[0], compiled.asm["llmlir"]


def translate(llvm_text: str, kernel_name: str, n_params: int) -> P.CProgram:
    """The DPU program's functions, printed from the kernel's LLVM-dialect text
    with the DPU runtime library linked in (edsl.dpu.support)."""
    from mlir import ir

    from ..base import dialects  # noqa: F401  (the bindings find edsl's dialects before any op)
    from ..lowering.floats import soft_float_storage
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    module = ir.Module.parse(llvm_text, ctx)
    with ctx:
        support.link(module)
        # 16-bit floats as the integers of their bits, as the model builds its
        # program (edsl.dpu.runtime.build): they only move once the soft-float
        # pass has made their conversions integer code, which is printed as is.
        soft_float_storage(module.operation)
        table = ir.SymbolTable(module.operation)
        main = table[abi.MAIN] if abi.MAIN in table else None
        if main is None or not main.regions[0].blocks:
            raise CompileError(f"kernel '{kernel_name}': its program has no '{abi.MAIN}' entry")
        # (the kernel's parameters, then `abi.ENTRY[MAIN]` lowered)
        types = [str(a.type) for a in main.regions[0].blocks[0].arguments]
        if types[n_params:] != abi.lowered_entry_types(abi.MAIN):
            raise CompileError(f"kernel '{kernel_name}': '{abi.MAIN}' has an unexpected signature "
                               f"({', '.join(types)})")
    return P.print_module(module, [abi.MAIN])


# -- files ---------------------------------------------------------------------
def fill(name: str, **fields) -> str:
    """Template `name` of templates/ with every placeholder filled by `fields`."""
    return templates.fill(TEMPLATES / name, **fields)


def _defines(pairs) -> str:
    return "\n".join(f"#define EDSL_{name} {value}" for name, value in pairs)


def abi_header() -> str:
    """dpu_abi.h: the DPU ABI (edsl.target.dpu) as C macros."""
    limits = ("WRAM_BYTES", "MRAM_BYTES", "MAX_TASKLETS", "DMA_ALIGN", "DMA_MIN_BYTES", "DMA_MAX_BYTES")
    return fill("dpu_abi.h",
                limits=_defines((name, getattr(abi, name)) for name in limits),
                directions=_defines([("READ", abi.READ), ("WRITE", abi.WRITE)]),
                ctx=_defines([*((f"CTX_{s.name}", int(s)) for s in abi.Ctx), ("CTX_SLOTS", abi.CTX_SLOTS)]),
                dpu=_defines([*((f"DPU_{s.name}", int(s)) for s in abi.Dpu), ("DPU_SLOTS", abi.DPU_SLOTS)]),
                errors=_defines((f"ERR_{e.name}", int(e)) for e in abi.Err),
                messages=_defines([*((f"MESSAGE_{e.name}", _c_string(text)) for e, text in abi.MESSAGES.items()),
                                   ("FIXED_MESSAGES", ", ".join(f"{{EDSL_ERR_{e.name}, EDSL_MESSAGE_{e.name}}}"
                                                                for e in abi.MESSAGES)),
                                   ("MESSAGE_OUTSIDE_ARRAYS", _c_string(abi.OUTSIDE_ARRAYS)),
                                   ("WAIT_REPEATS", abi.WAIT_REPEATS),
                                   ("MESSAGE_WAITS_FOREVER", _c_string(abi.WAITS_FOREVER)),
                                   *_split_message("MESSAGE_OUTSIDE_ARRAYS_LOADED", abi.OUTSIDE_ARRAYS_LOADED)]))


def _split_message(name: str, text: str) -> list[tuple[str, str]]:
    """A message with one `{where}` as the C strings before and after it."""
    before, after = text.split("{where}")
    return [(f"{name}_BEFORE", _c_string(before)), (f"{name}_AFTER", _c_string(after))]


def _log_codes() -> list[tuple[str, Any]]:
    """The access log's codes (abi.Access, abi.AtomicOp, the fields of an
    atomic's kind) as (name, value) pairs for C."""
    merged = sum(1 << int(op) for op in abi.MERGED_ATOMICS)
    return [*((f"ACCESS_{a.name}", int(a)) for a in abi.Access),
            *((name, getattr(abi, name)) for name in ("ACCESS_MASK", "ATOMIC_OP_SHIFT", "ATOMIC_OP_MASK",
                                                       "ATOMIC_OLD_USED", "ATOMIC_FLOAT_SHIFT",
                                                       "ATOMIC_FLOAT_MASK", "ATOMIC_SIZE_SHIFT")),
            *((f"ATOMIC_{op.name}", int(op)) for op in abi.AtomicOp),
            *((f"ATOMIC_FLOAT_{t.upper()}", v) for t, v in abi.ATOMIC_FLOAT.items()),
            ("MERGED_ATOMICS", f"{merged:#x}u"),
            ("MIXED", f"({sharing.MIXED})"), ("MIXED_ATOMICS", f"({sharing.MIXED_ATOMICS})")]


def dma_rules_header() -> str:
    """dma_rules.h: the DMA rules (edsl.target.dpu.DMA_RULES) as C."""
    checks, messages = [], []
    for check in abi.DMA_RULES:
        v = check.operand                  # (the C functions' parameters have the same names)
        cond = f"{v} % EDSL_DMA_ALIGN"
        if check.bounds:
            cond += f" || {v} < {check.bounds[0]} || {v} > {check.bounds[1]}"
        checks.append(f"  if ({cond})\n    broken |= {int(check.rule)};")
        fmt, arg = ("0x%llx", f"(unsigned long long){v}") if check.hex else ("%lld", f"(long long){v}")
        text = _c_string(check.message.replace("%", "%%")).replace("{}", fmt)
        messages.append(f"  if (broken & {int(check.rule)}) {{\n    snprintf(out, size, {text}, {arg});\n"
                        f"    return;\n  }}")
    return fill("dma_rules.h", checks="\n".join(checks), messages="\n".join(messages))


def _c_string(text: str) -> str:
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= ord(ch) < 127:
            out.append(ch)
        else:
            out.append("?")
    return '"' + "".join(out) + '"'


def _per_array(params: list[Param], record: KernelRecord) -> bool:
    """Whether a transfer may touch only the array it addresses (one MRAM region
    per array, as on the DPU model), or any byte of the arrays (one region, the
    whole image: the model's choice for a kernel with EDSL regions)."""
    return any(p.is_pointer for p in params) and not record.regions


def _nregions(params: list[Param], per_array: bool, scratch: int) -> int:
    """The MRAM regions of a transfer: each array and the scratch (as the model
    has them), or the one region of the whole image, scratch included."""
    return sum(p.is_pointer for p in params) + (scratch > 0) if per_array else 1


def _args_bytes(params: list[Param], per_array: bool, scratch: int) -> int:
    """sizeof(edsl_args_t): a field per parameter, 10 launch fields, the regions."""
    return 8 * (len(params) + 10 + 2 * _nregions(params, per_array, scratch))


def _log_bytes(tasklets: int) -> int:
    """WRAM of the access logs (templates/dpu_program.c): each tasklet's
    entries and its count of entries."""
    return 8 * tasklets * (LOG_WRAM_ENTRIES * abi.LOG_ENTRY + 1)


def args_header(kernel: str, params: list[Param], per_array: bool, scratch: int, tasklets: int) -> str:
    fields = []
    for p in params:
        if p.is_pointer:
            fields.append(f"    uint64_t {p.cname} EDSL_ARG;  /* {p.type}: offset of the array from "
                          "DPU_MRAM_HEAP_POINTER (DMA-aligned) */")
        else:
            fields.append(f"    {_c_type(p.type)} {p.cname} EDSL_ARG;  /* {p.type} */")
    what = ("the bytes of each array, in argument order" if per_array
            else "the whole image of the arrays")
    if scratch:
        what += ", then the scratch" if per_array else " and the scratch"
    return fill("kernel_args.h", kernel=kernel, fields="\n".join(fields),
                size=_args_bytes(params, per_array, scratch), nregions=_nregions(params, per_array, scratch),
                regions_what=what, scratch_bytes=scratch, tasklets=tasklets,
                log=_defines([("LOG_ENTRY", abi.LOG_ENTRY), ("LOG_WRAM_ENTRIES", LOG_WRAM_ENTRIES)]),
                half_scalars=int(any(_kind(p.type) == "half" for p in params if not p.is_pointer)))


ROUTE_NOTE = ("Route: the kernel's final LLVM-dialect MLIR printed as C (one function per "
              "llvm.func, blocks as labels). The UPMEM compiler is LLVM 12 and cannot read "
              "today's opaque-pointer LLVM IR; C built from the SDK headers compiles with "
              "it, and the same file runs on the host against edsl's SDK stand-ins.")


# The C of each argument of `abi.ENTRY[MAIN]` in the DPU program's main
# (templates/dpu_program.c); the WRAM memref as its descriptor's fields.
MAIN_ARGS = {"grid_x": "args->grid_x", "grid_y": "args->grid_y", "grid_z": "args->grid_z",
             "first": "args->first_program", "end": "args->end_program",
             "wram": "(void *)edsl_wram, (void *)edsl_wram, 0, sizeof edsl_wram, 1", "ctx": "(void *)ctx"}


def dpu_program(kernel: str, params: list[Param], prog: P.CProgram, wram: int, tasklets: int) -> str:
    args = [f"heap + args->{p.cname}" if p.is_pointer else f"args->{p.cname}" for p in params]
    args += [MAIN_ARGS[a.name] for a in abi.ENTRY[abi.MAIN]]
    return fill("dpu_program.c", kernel=kernel, tasklets=tasklets, wram_bytes=wram, stdio=_stdio(prog),
                route=textwrap.fill(ROUTE_NOTE, 86, initial_indent=" * ", subsequent_indent=" * "),
                needs_math=int(prog.needs_math), types="\n".join(prog.types),
                globals="\n".join(prog.globals), prototypes="\n".join(prog.prototypes),
                functions="\n\n".join(prog.functions), main=prog.names[abi.MAIN],
                main_args=", ".join(args))


def _stdio(prog: P.CProgram) -> str:
    """The DPU program's stdio (a kernel that prints): the SDK's printf and
    its log buffer in MRAM, which the host runner reads after the launch."""
    if not prog.needs_stdio:
        return ""
    return textwrap.dedent(f"""\
        /* tl.device_print: the SDK's printf writes this DPU's log, a buffer of
         * EDSL_STDOUT_BUFFER_BYTES in MRAM (the Makefile's STDOUT_BUFFER_SIZE),
         * which the host runner prints after the launch (dpu_log_read). */
        #include <stdio.h>
        #ifndef EDSL_STDOUT_BUFFER_BYTES
        #define EDSL_STDOUT_BUFFER_BYTES {STDOUT_BUFFER_BYTES}
        #endif
        STDOUT_BUFFER_INIT(EDSL_STDOUT_BUFFER_BYTES);
        """)


def launch_config(kernel: str, params: list[Param], grid, num_dpus: int, values: dict) -> str:
    g = grid or (0, 0, 0)
    lines = []
    for p in params:
        if p.is_pointer:
            continue
        have = p.name in values
        lines.append(f"#define EDSL_HAVE_DEFAULT_{p.cname} {int(have)}")
        lines.append(f"#define EDSL_DEFAULT_{p.cname} "
                     f"{_scalar_literal(p.type, values[p.name]) if have else 0}")
    return fill("launch_config.h", kernel=kernel, kernel_string=_c_string(kernel), dpus=num_dpus,
                grid_x=g[0], grid_y=g[1], grid_z=g[2], scalars="\n".join(lines) or "/* (none) */")


def _scalar_literal(t: str, value) -> str:
    kind = _kind(t)
    v = value.item() if hasattr(value, "item") else value
    if kind == "float":
        v = float(v)
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INFINITY" if v > 0 else "(-INFINITY)"
        if t == "fp32":
            import numpy as np
            v = float(np.float32(v))
        return v.hex()
    if kind == "half":                 # the bits, rounded as the model rounds the value
        from ..target import dtypes
        return f"0x{dtypes.value_bits(dtypes.by_triton(t), float(v)).value:04x}u"
    if kind == "bool":
        return "1" if v else "0"
    v = int(v)
    if kind == "uint":
        return f"{v}ull"
    return f"{v}ll" if v >= 0 else f"({v + 1}ll - 1)"


def host_runner(kernel: str, params: list[Param], outputs: list[str], record: KernelRecord, per_array: bool,
                source: str, prints: bool = False) -> str:
    arrays = [p for p in params if p.is_pointer]
    scalars = [p for p in params if not p.is_pointer]
    kinds = {"int": "KIND_INT", "uint": "KIND_UINT", "float": "KIND_FLOAT", "bool": "KIND_UINT",
             "half": "KIND_FLOAT", "bf16": "KIND_BF16", "fp8": "KIND_UINT"}   # (fp16 is KIND_FLOAT by its size)
    table = ",\n".join(
        f'    {{"{p.name}", {_elem_size(p.elem)}, {kinds.get(p.elem) or kinds[_kind(p.elem)]}, '
        f'{1 if p.name in outputs else 0}, NULL, 0, 0}}' for p in arrays)
    defaults = "\n".join(
        f"  int have_{p.cname} = EDSL_HAVE_DEFAULT_{p.cname};\n"
        f"  args.{p.cname} = ({_c_type(p.type)})EDSL_DEFAULT_{p.cname};" for p in scalars)
    parse = []
    for p in scalars:
        kind = _kind(p.type)
        if kind == "half":              # the bits by dtypes.float_bits' rule; a value beyond fp16 refused
            set_value = (f"if (!edsl_scalar_half_bits(strtod(value, &end), {int(p.type == 'bf16')}, "
                         f"&args.{p.cname})) {{\n"
                         f'        fprintf(stderr, "{dtypes.beyond_range(p.name, p.type, "%s")}\\n", value);\n'
                         f"        return 2;\n      }}")
        else:
            conv = {"float": "strtod(value, &end)", "uint": "strtoull(value, &end, 0)",
                    "bool": "strtoull(value, &end, 0)", "int": "strtoll(value, &end, 0)"}[kind]
            set_value = f"args.{p.cname} = ({_c_type(p.type)}){conv};"
        parse.append(f'    }} else if (strcmp(key, "{p.name}") == 0) {{\n'
                     f"      {set_value}\n"
                     f"      have_{p.cname} = 1;")
    missing = "\n".join(
        f'  if (!have_{p.cname}) {{\n    fprintf(stderr, "missing a value for scalar argument '
        f"'{p.name}' ({p.name}=...)\\n\");\n    return 2;\n  }}" for p in scalars)
    set_ptrs = "\n".join(f"    per_dpu[i].{p.cname} = arrays[{k}].slot - arrays[{k}].lo[i];"
                         for k, p in enumerate(arrays))
    asserts = []
    # Positions as the model keeps them, file "" being the kernel's own (`source`).
    for text, where in record.asserts:        # where: "file:line", or "" if unknown
        filename, _, line = where.rpartition(":")
        place = _place(file_of_kernel_site(filename, source), line) if where else ""
        asserts.append(f"    {{{_c_string(text)}, {_c_string(place)}}}")
    loads = dict(record.pointer_loads)
    sites = ",\n".join(f"    {{INT64_C({code}), {_c_string(_place(file_of_kernel_site(name, source), line, col))}, "
                       f"{_c_string(loads[code]) if code in loads else 'NULL'}}}"
                       for code, name, line, col in record.sites) or "    {0, NULL, NULL}"
    usage = ("usage: %s [data=DIR] [out=DIR] [dpus=N] [grid=X,Y,Z] [check=0|1] [profile=...] "
             + " ".join(f"{p.name}=..." for p in scalars)).rstrip()
    return fill("host_runner.c", kernel=kernel, narrays=len(arrays), defaults=defaults,
                arrays=(f"static struct array arrays[] = {{\n{table}\n}};" if arrays
                        else "static struct array arrays[1];"),
                region_per_array=int(per_array),
                parse="\n".join(parse), missing=missing, set_ptrs=set_ptrs,
                asserts=",\n".join(asserts) or "    {NULL, NULL}", sites=sites,
                usage=usage, log_codes=_defines(_log_codes()), atomic_names=_atomic_names(),
                prints=int(prints), stdout_bytes=STDOUT_BUFFER_BYTES if prints else 0,
                sharing_advice=_c_string(abi.SHARING_ADVICE))


def _atomic_names() -> str:
    """The C table of the atomics' names (abi.AtomicOp), by code."""
    names = {int(op): op.name.lower() for op in abi.AtomicOp}
    return ",\n".join(f"    {_c_string(names[k]) if k in names else 'NULL'}" for k in range(max(names) + 1))


def _place(filename: str, line, col=0) -> str:
    """A source position as the runner names it: as the model's errors do
    (`edsl.base.errors.SourceLoc`), but with the file's base name (the project is
    built and run on another machine); "" if unknown."""
    if not filename:
        return ""
    return f"{filename.replace(chr(92), '/').rsplit('/', 1)[-1]}:{line}:{(col or 0) + 1}"


def _elem_size(t: str) -> int:
    from ..target import dtypes
    return dtypes.numpy_dtype(dtypes.by_triton(t)).itemsize


def readme(kernel: str, params: list[Param], grid, num_dpus: int, num_tasklets: int,
           outputs: list[str], has_data: bool, prog: P.CProgram, wram: int, per_array: bool) -> str:
    arguments = "\n".join(
        f"| `{p.name}` | `{p.type}` | {'array (`data/' + p.name + '.bin`)' if p.is_pointer else 'scalar'}"
        f"{', gathered and checked' if p.name in outputs else ''} |" for p in params)
    data = ("`data/` holds the sample inputs (`<name>.bin`) and the outputs the DPU model "
            "computed for them (`<name>.expected.bin`); the runner checks against them."
            if has_data else
            "No data was exported: write each array argument to `data/<name>.bin` (raw, "
            "little-endian, C order) and give the scalars on the command line.")
    regions = ("the array it addresses" if per_array
               else "the arrays (any of them: the kernel's EDSL regions get the whole image)")
    return fill("README.md", kernel=kernel, arguments=arguments,
                grid=f"`{grid[0]},{grid[1]},{grid[2]}`" if grid else "none (give `grid=X,Y,Z`)",
                dpus=num_dpus, tasklets=num_tasklets, data=data,
                math=(", `math.h`" if prog.needs_math else "") + (", `stdio.h`" if prog.needs_stdio else ""),
                dma_max=abi.DMA_MAX_BYTES,
                dma_align=abi.DMA_ALIGN, regions=regions, wram_bytes=wram,
                static_bytes=prog.static_wram_bytes * num_tasklets + prog.global_wram_bytes,
                route=ROUTE_NOTE, prints=PRINTS_NOTE if prog.needs_stdio else "")


PRINTS_NOTE = f"""\
- Prints (`tl.device_print`): the kernel's `printf` is the SDK's DPU `printf`
  (`stdio.h`), which stores each line in the DPU's log buffer in MRAM
  (`STDOUT_BUFFER_INIT`, {STDOUT_BUFFER_BYTES} bytes by default: `make ...
  STDOUT_BUFFER_SIZE=<bytes>` after `make clean`); after the launch the runner
  prints each DPU's log with `dpu_log_read` (after a `=== DPU#... ===` line),
  DPU by DPU: the lines edsl's DPU model prints, in its order. A log its
  buffer cannot hold is an error (exit status 3). The DPU's `printf` has no
  `%a`: hex floats are formatted by the program (`edsl_hexfloat`) and
  printed with `%s`.
"""


# -- export ----------------------------------------------------------------------
def _at_callers_line(fn):
    """A bad argument to `fn` is an error at the user's line that called it
    (`fn.__wrapped__` leaves it without a line, for the `edsl` command)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ArgumentError as err:
            if err.loc is not None:
                raise
            raise ArgumentError(err.message, caller_location()) from None
    return wrapper


@dataclass
class ExportSpec:
    """What an export writes, resolved and checked: the kernel's function, its
    parameters and constexpr values, sample values, the grid, the DPU and
    tasklet counts of the project, the arrays it gathers, `debug`."""
    fn: Any
    params: list[Param]
    constexprs: dict
    values: dict
    grid: tuple | None
    num_dpus: int
    num_tasklets: int
    outputs: list[str]
    debug: bool
    sampled: bool                       # sample arguments given: data/ is written

    @classmethod
    def resolve(cls, kernel, signature, constants, sample_args, grid, num_dpus, num_tasklets,
                outputs, debug) -> "ExportSpec":
        if not isinstance(num_dpus, int) or isinstance(num_dpus, bool) or not 1 <= num_dpus <= abi.MAX_DPUS:
            raise ArgumentError(f"num_dpus must be an integer from 1 to {abi.MAX_DPUS:,} (the largest UPMEM "
                                f"system), not {num_dpus!r}", caller_location())
        if not isinstance(num_tasklets, int) or not 1 <= num_tasklets <= abi.MAX_TASKLETS:
            raise ArgumentError(f"num_tasklets must be an integer from 1 to {abi.MAX_TASKLETS}, "
                                f"not {num_tasklets!r}")
        fn, params, constexprs, values = resolve_arguments(kernel, signature, constants, sample_args)
        g = _grid(grid, values, constexprs)
        arrays = [p.name for p in params if p.is_pointer]
        if outputs is None:
            outputs = list(arrays)
        else:
            outputs = [outputs] if isinstance(outputs, str) else list(outputs)
            bad = [o for o in outputs if o not in arrays]
            if bad:
                raise ArgumentError(f"outputs {bad} are not array arguments of kernel '{fn.__name__}' "
                                    f"(arrays: {arrays})")
        if sample_args is not None and g is None:
            raise ArgumentError("export with sample_args needs the launch grid (grid=...) to compute "
                                "the expected outputs")
        return cls(fn, params, constexprs, values, g, num_dpus, num_tasklets, outputs, bool(debug),
                   sample_args is not None)


def _check_out_dir(out: Path, overwrite: bool) -> None:
    if out.exists() and not overwrite:
        raise ArgumentError(f"{out} already exists (pass overwrite=True to replace it)")
    if out.exists() and not out.is_dir():
        raise ArgumentError(f"{out} exists and is not a folder")
    parent = out.resolve().parent
    if not parent.is_dir():
        raise ArgumentError(f"cannot write {out}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ArgumentError(f"cannot write {out}: folder {parent} is not writable")


@_at_callers_line
def export(kernel, out_dir, *, signature=None, constants=None, sample_args=None, grid=None,
           num_dpus: int = 1, num_tasklets: int = 1, outputs: Sequence[str] | None = None,
           debug: bool = False, overwrite: bool = False) -> ExportResult:
    """Write a Triton kernel as a self-contained UPMEM SDK project folder.

    Args:
        kernel: A `@triton.jit` kernel.
        out_dir: The folder to create.
        signature: Types of the non-constexpr parameters: {'x_ptr': '*fp32', 'n': 'i32'}
            (or a list in parameter order); not needed with `sample_args`.
        constants: Values of the `tl.constexpr` parameters: {'BLOCK': 1024}.
        sample_args: Sample arguments (NumPy arrays and numbers, in parameter order, or a
            dict): they give the types, and are written to `data/` with the outputs a run
            on the DPU model computes from them (`grid` needed).
        grid: 1 to 3 ints, or a callable of the argument dict (as in `kernel[grid]`).
        num_dpus: Default number of DPUs of the host runner (1 to 2,560).
        num_tasklets: NR_TASKLETS of the DPU program (1 to 24).
        outputs: Names of the array arguments to gather and check (default: all).
        debug: Compile the kernel's `tl.device_assert` checks (as `kernel[grid](..., debug=True)`).
        overwrite: Replace an existing `out_dir`.

    Returns:
        What was written: the folder, the kernel's parameters, grid, DPUs and tasklets.

    Raises:
        ArgumentError: Bad arguments; nothing is written.
        CompileError: A kernel the export cannot print as DPU C; nothing is written.
    """
    out = Path(out_dir)
    spec = ExportSpec.resolve(kernel, signature, constants, sample_args, grid, num_dpus, num_tasklets,
                              outputs, debug)
    _check_out_dir(out, overwrite)
    with Progress(f"export of '{spec.fn.__name__}' to {out}") as shown:
        files, kernel_name, budget = _project_files(spec, shown)
        data = {}
        if spec.sampled:
            shown.stage("the reference run on the DPU model")
            data = _sample_data(spec.fn, spec.params, spec.constexprs, spec.values, spec.grid, spec.num_dpus,
                                spec.num_tasklets, spec.outputs, spec.debug, budget)
        shown.stage("writing the files")
        return _write(out, overwrite, files, data, ExportResult(
            path=out, kernel=kernel_name, params=spec.params, grid=spec.grid, num_dpus=spec.num_dpus,
            num_tasklets=spec.num_tasklets, outputs=spec.outputs, files=[]))


def _compile_to_fit(spec: ExportSpec, shown: Progress):
    """The kernel compiled and printed so that its WRAM and the exported
    program's own (contexts, status, shared state, regions, arguments, printed
    buffers) fit a DPU's: (metadata, program, WRAM budget, own bytes, total).
    The model's WRAM budget is the kernel's alone (its contexts live on the
    host), so a kernel that fills it is compiled again with less, which keeps
    more of its tiles in MRAM (edsl.backend.convert.spill)."""
    params, tasklets = spec.params, spec.num_tasklets
    budget, error = abi.WRAM_BYTES, None
    for attempt in range(3):
        shown.stage("compiling" if attempt == 0 else f"compiling again for {budget} bytes of WRAM")
        try:
            record, llvm_text = compile_for_export(spec.fn, params, spec.constexprs, spec.num_dpus, tasklets,
                                                 spec.debug, budget)
        except DpuError:
            if error is None:
                raise
            raise error from None               # (keeping tiles in MRAM does not make it fit)
        shown.stage("printing it as C")
        prog = translate(llvm_text, record.name, len(params))
        per_array, scratch = _per_array(params, record), record.scratch_bytes
        wram = abi.align_up(max(record.wram_bytes, abi.DMA_ALIGN))
        own = (8 * (abi.CTX_SLOTS * (tasklets + 1) + abi.DPU_SLOTS + 2 * _nregions(params, per_array, scratch))
               + _args_bytes(params, per_array, scratch) + _log_bytes(tasklets)
               + (PRINTF_WRAM_BYTES if prog.needs_stdio else 0))
        need = prog.static_wram_bytes * tasklets + prog.global_wram_bytes + wram + own
        if need <= abi.WRAM_BYTES:
            return record, prog, budget, own, need
        error = DpuError(f"kernel '{record.name}': its WRAM buffers need {need} bytes with "
                         f"{tasklets} tasklets, more than the {abi.WRAM_BYTES} bytes of a DPU")
        budget = min(budget, wram) - (need - abi.WRAM_BYTES)
        if budget <= 0:
            break
    raise error


def _project_files(spec: ExportSpec, shown: Progress) -> tuple[dict[str, str], str, int]:
    """The project's files (name -> text), the kernel's name and its WRAM
    budget: the kernel compiled and printed as DPU C, fitted to the DPU's WRAM."""
    params, num_tasklets = spec.params, spec.num_tasklets
    record, prog, budget, own, need = _compile_to_fit(spec, shown)
    kernel_name = record.name
    scratch = record.scratch_bytes       # tiles kept in MRAM (edsl.backend.convert.spill)
    per_array = _per_array(params, record)
    wram = abi.align_up(max(record.wram_bytes, abi.DMA_ALIGN))
    g = spec.grid
    manifest = {
        "kernel": kernel_name,
        "params": [{"name": p.name, "type": p.type, "c_name": p.cname} for p in params],
        "constants": {k: _jsonable(v) for k, v in spec.constexprs.items()},
        "grid": list(g) if g else None, "num_dpus": spec.num_dpus, "num_tasklets": num_tasklets,
        "outputs": spec.outputs, "debug": spec.debug,
        "mram_regions": "per array" if per_array else "whole image",
        "scratch_bytes": scratch, "spilled_tiles": list(record.spills),
        "wram_bytes": {"kernel_budget": budget, "kernel": wram, "globals": prog.global_wram_bytes,
                       "buffers_per_tasklet": prog.static_wram_bytes, "runtime": own, "total": need},
        "sample_scalars": {p.name: _jsonable(spec.values[p.name]) for p in params
                           if not p.is_pointer and p.name in spec.values},
        "stdout_buffer_bytes": STDOUT_BUFFER_BYTES if prog.needs_stdio else 0,
    }
    files = {
        "dpu_program.c": dpu_program(kernel_name, params, prog, wram, num_tasklets),
        "dpu_abi.h": abi_header(),
        "dma_rules.h": dma_rules_header(),
        "kernel_args.h": args_header(kernel_name, params, per_array, scratch, num_tasklets),
        "launch_config.h": launch_config(kernel_name, params, g, spec.num_dpus, spec.values),
        "host_runner.c": host_runner(kernel_name, params, spec.outputs, record, per_array,
                                     spec.fn.fn.__code__.co_filename, prog.needs_stdio),
        "Makefile": fill("Makefile", kernel=kernel_name, tasklets=num_tasklets,
                         stdout_bytes=STDOUT_BUFFER_BYTES if prog.needs_stdio else 0),
        "README.md": readme(kernel_name, params, g, spec.num_dpus, num_tasklets, spec.outputs,
                            spec.sampled, prog, wram, per_array),
        "manifest.json": json.dumps(manifest, indent=2) + "\n",
    }
    return files, kernel_name, budget


def _jsonable(v):
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    return repr(v)


def _sample_data(fn, params, constexprs, values, grid, num_dpus, num_tasklets, outputs, debug, wram_bytes):
    """Inputs as bytes, and the expected outputs from a run on the DPU model
    (of the program exported: compiled with the same WRAM budget)."""
    import numpy as np
    data, run_args = {}, {}
    for p in params:
        v = values[p.name]
        if p.is_pointer:
            a = np.ascontiguousarray(v)
            data[f"{p.name}.bin"] = a.tobytes()
            run_args[p.name] = a.copy()
        else:
            run_args[p.name] = v
    run_args.update(constexprs)
    try:
        fn[grid](**run_args, num_dpus=num_dpus, num_tasklets=num_tasklets, debug=debug, wram_bytes=wram_bytes)
    except EdslError:
        raise
    except Exception as err:  # noqa: BLE001 - a failure of the reference run
        raise CompileError(f"kernel '{fn.__name__}': the reference run on the DPU model failed: "
                           f"{err}") from None
    for name in outputs:
        data[f"{name}.expected.bin"] = np.ascontiguousarray(run_args[name]).tobytes()
    data[PARTS_FILE] = _parts_table(last_report(), [p.name for p in params if p.is_pointer], grid, num_dpus)
    return data


# Each DPU's part of each array, as the reference run found it (templates/host_runner.c: read_parts).
PARTS_FILE = "edsl_parts.bin"


def _parts_table(report, arrays: list[str], grid, num_dpus: int) -> bytes:
    """The host runner's table of parts: int64 DPUs, grid, arrays, then per
    DPU and array the bytes [lo, hi) it receives, in whole 8-byte words
    (the runner places each array at an 8-byte aligned slot)."""
    import numpy as np
    table = np.zeros((num_dpus, len(arrays), 2), np.int64)
    for k, name in enumerate(arrays):
        parts = np.array(report.array_parts[name], np.int64).reshape(-1, 2)
        table[:len(parts), k, 0] = parts[:, 0] // abi.DMA_ALIGN * abi.DMA_ALIGN
        table[:len(parts), k, 1] = -(-parts[:, 1] // abi.DMA_ALIGN) * abi.DMA_ALIGN
    head = np.array([num_dpus, *grid, len(arrays)], np.int64)
    return head.tobytes() + table.tobytes()


def _write(out: Path, overwrite: bool, files: dict, data: dict, result: ExportResult) -> ExportResult:
    parent = out.resolve().parent
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))
    except OSError as err:
        raise ArgumentError(f"cannot write {out}: {err.strerror or err}") from None
    try:
        for name, text in files.items():
            (tmp / name).write_text(text)
        (tmp / "sim").mkdir()
        for name in SIM_FILES:
            shutil.copyfile(SDK_DIR / name, tmp / "sim" / name)
        (tmp / "data").mkdir()
        for name, blob in data.items():
            (tmp / "data" / name).write_bytes(blob)
        os.chmod(tmp, 0o755)
        result.files = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file())
        if out.exists():
            trash = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=parent))
            os.rename(out, trash / "old")
            os.rename(tmp, out)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.rename(tmp, out)
    except OSError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ArgumentError(f"cannot write {out}: {err.strerror or err}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return result


__all__ = ["export", "ExportResult", "EXPORTED"]
