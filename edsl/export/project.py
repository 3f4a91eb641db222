"""`export(kernel, out_dir, ...)`: a compiled kernel as a self-contained UPMEM SDK project.

The folder holds the DPU program in C (printed from the kernel's final
LLVM-dialect module by `edsl.export.printer`), the argument struct shared by
host and DPU, a generated host runner, a Makefile (hardware build with the
UPMEM toolchain, and a `sim` build with the host C compiler against the
SDK stand-ins in `sim/`), a README, and -- when sample arguments are given --
the input data and the expected outputs (from a run on the DPU model).

Everything is written into a temporary folder beside `out_dir` and renamed
at the end, so a failure leaves nothing half-written.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..dpu import abi
from ..errors import ArgumentError, CompileError, DpuError, EdslError
from . import printer as P

SDK_DIR = Path(__file__).resolve().parent / "sdk"
SIM_FILES = ("defs.h", "mram.h", "barrier.h", "alloc.h", "dpu.h", "dpu_sim_rt.c", "dpu_sim_host.c")

# Triton scalar/element type -> (C type, NumPy dtype, kind) for the export.
TYPES = {
    "i1": ("uint8_t", "bool", "bool"), "u1": ("uint8_t", "bool", "bool"),
    "i8": ("int8_t", "int8", "int"), "i16": ("int16_t", "int16", "int"),
    "i32": ("int32_t", "int32", "int"), "i64": ("int64_t", "int64", "int"),
    "u8": ("uint8_t", "uint8", "uint"), "u16": ("uint16_t", "uint16", "uint"),
    "u32": ("uint32_t", "uint32", "uint"), "u64": ("uint64_t", "uint64", "uint"),
    "fp32": ("float", "float32", "float"), "fp64": ("double", "float64", "float"),
}
_NUMPY_TO_TRITON = {v[1]: k for k, v in TYPES.items() if not k.startswith("u1")}
_NUMPY_TO_TRITON["bool"] = "i1"

_C_WORDS = set(P._RESERVED) | {"data", "out", "dpus", "grid", "check", "profile", "args",
                               "set", "dpu", "i", "status"}


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
    from triton.runtime.jit import JITFunction
    fn = kernel
    while not isinstance(fn, JITFunction) and hasattr(fn, "fn"):
        fn = fn.fn                     # autotuner / heuristics wrappers
    if not isinstance(fn, JITFunction):
        raise ArgumentError(f"export() takes a @triton.jit kernel, not {type(kernel).__name__}")
    return fn, list(fn.params)


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
    if base not in TYPES:
        kind = "element type" if t.startswith("*") else "type"
        raise ArgumentError(f"argument '{name}': unknown or unsupported {kind} '{base}' "
                            f"(supported: {', '.join(TYPES)})")
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
def compile_for_export(fn, params: list[Param], constexprs: dict, num_dpus: int, num_tasklets: int):
    """(dpubin header, LLVM-dialect text) of `fn` for this signature, without launching."""
    import triton
    from triton.compiler import ASTSource
    from triton.compiler.errors import CompilationError

    from ..backend.compiler import TARGET
    sig = {}
    by_name = {p.name: p for p in params}
    for p in fn.params:
        sig[p.name] = "constexpr" if p.is_constexpr else by_name[p.name].type
    try:
        compiled = triton.compile(ASTSource(fn, sig, constexprs), target=TARGET,
                                  options={"num_dpus": num_dpus, "num_tasklets": num_tasklets})
    except EdslError:
        raise
    except CompilationError as err:
        raise CompileError(f"kernel '{fn.__name__}' does not compile for the DPU: {err}") from None
    except Exception as err:  # noqa: BLE001 - an internal failure of a compile stage
        raise CompileError(f"kernel '{fn.__name__}' does not compile for the DPU: "
                           f"{type(err).__name__}: {err}") from err
    blob = compiled.asm["dpubin"]
    text = blob.decode() if isinstance(blob, (bytes, bytearray)) else blob
    header, _, llvm_text = text.partition("\n")
    return json.loads(header), llvm_text


@dataclass
class EntryAbi:
    """How `main` calls the program-instance loop `__dpu_main`."""
    n_params: int
    wram_descriptor: bool     # a memref<?xi8> over the DPU's WRAM (5 fields) before the context


def translate(llvm_text: str, kernel_name: str, n_params: int):
    """Print the DPU program's functions from the kernel's LLVM-dialect text."""
    from mlir import ir
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    module = ir.Module.parse(llvm_text, ctx)
    with ctx:
        main = next((op for op in module.body.operations
                     if op.operation.name == "llvm.func"
                     and ir.StringAttr(op.attributes["sym_name"]).value == P.MAIN_FN), None)
        if main is None:
            raise CompileError(f"kernel '{kernel_name}': its program has no '{P.MAIN_FN}' entry")
        types = [a.type for a in main.regions[0].blocks[0].arguments]
        launch = types[n_params:n_params + 5]
        rest = [str(t) for t in types[n_params + 5:]]
        i32 = ir.IntegerType.get_signless(32)
        ok = len(launch) == 5 and all(t == i32 for t in launch) and rest and rest[-1] == "!llvm.ptr"
        descriptor = rest[:-1] == ["!llvm.ptr", "!llvm.ptr", "i64", "i64", "i64"]
        if not ok or not (descriptor or rest == ["!llvm.ptr"]):
            raise CompileError(f"kernel '{kernel_name}': '{P.MAIN_FN}' has an unexpected signature "
                               f"({', '.join(str(t) for t in types)})")
    return P.print_module(module, [P.MAIN_FN]), EntryAbi(n_params, descriptor)


# -- files ---------------------------------------------------------------------
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


def args_header(kernel: str, params: list[Param]) -> str:
    fields = []
    for p in params:
        if p.is_pointer:
            fields.append(f"    uint64_t {p.cname} EDSL_ARG;  /* {p.type}: offset of the array from "
                          "DPU_MRAM_HEAP_POINTER (8-byte aligned) */")
        else:
            fields.append(f"    {TYPES[p.type][0]} {p.cname} EDSL_ARG;  /* {p.type} */")
    launch = [
        "    uint32_t grid_x EDSL_ARG;         /* grid size (program instances per axis) */",
        "    uint32_t grid_y EDSL_ARG;",
        "    uint32_t grid_z EDSL_ARG;",
        "    uint32_t first_program EDSL_ARG;  /* this DPU runs programs first, first + step, ... */",
        "    uint32_t program_step EDSL_ARG;",
        "    uint64_t mram_bytes EDSL_ARG;     /* MRAM bytes the arrays span from DPU_MRAM_HEAP_POINTER */",
    ]
    size = 8 * (len(fields) + len(launch))
    return f"""/* Arguments of kernel '{kernel}': the struct the host runner writes to the
 * DPU program's `DPU_INPUT_ARGUMENTS` (a __host WRAM variable). Shared by the host
 * and the DPU program: every field is 8-byte aligned so that the layout is
 * the same for the host C compiler and the DPU compiler. Generated by edsl. */
#ifndef EDSL_KERNEL_ARGS_H
#define EDSL_KERNEL_ARGS_H

#include <stdint.h>

#define EDSL_ARG __attribute__((aligned(8)))

typedef struct edsl_args_t {{
{chr(10).join(fields + launch)}
}} edsl_args_t;

_Static_assert(sizeof(edsl_args_t) == {size}, "edsl_args_t must have the same layout on host and DPU");

/* The program's status (`edsl_status`, a __host array of int64_t): error code,
 * details, and the MRAM range of the arrays. */
#define EDSL_STATUS_SLOTS {P.CTX_SLOTS}
#define EDSL_STATUS_ERROR {P.CTX_ERROR}
#define EDSL_STATUS_MRAM {P.CTX_ERR_MRAM}
#define EDSL_STATUS_WRAM {P.CTX_ERR_WRAM}
#define EDSL_STATUS_BYTES {P.CTX_ERR_BYTES}
#define EDSL_STATUS_LO {P.CTX_MRAM_LO}
#define EDSL_STATUS_HI {P.CTX_MRAM_HI}
#define EDSL_STATUS_DIR {P.CTX_ERR_DIR}
#define EDSL_STATUS_ASSERT {P.CTX_ASSERT}
#define EDSL_ERR_DMA_RULE {P.ERR_DMA_RULE}
#define EDSL_ERR_MRAM_BOUNDS {P.ERR_MRAM_BOUNDS}
#define EDSL_ERR_ASSERT {P.ERR_ASSERT}
#define EDSL_ERR_REGION_DMA {P.ERR_REGION_DMA}
#define EDSL_ERR_REGION_ASSERT {P.ERR_REGION_ASSERT}

#endif
"""


_DPU_SUPPORT = """
#define EDSL_DMA_ALIGN {align}u
#define EDSL_DMA_MIN {dmin}u
#define EDSL_DMA_MAX {dmax}u
#define EDSL_CTX_REGIONS {regions}
#define EDSL_CTX_NREGIONS {nregions}

/* Arguments from the host, and the first error of the launch for the host. */
__host edsl_args_t DPU_INPUT_ARGUMENTS;
__host int64_t edsl_status[EDSL_STATUS_SLOTS];
BARRIER_INIT(edsl_barrier, NR_TASKLETS);

/* One context per tasklet (the DPU model's launch context: error record, MRAM
 * range of the arrays), and the MRAM regions DMA may touch. */
static int64_t edsl_ctx[NR_TASKLETS][EDSL_STATUS_SLOTS] __dma_aligned;
static uint64_t edsl_regions[2] __dma_aligned;

static void edsl_record(int64_t *ctx, int64_t code, uint64_t mram, uint64_t wram, uint64_t n,
                        uint64_t dir) {{
  if (ctx[EDSL_STATUS_ERROR] != 0)
    return;
  ctx[EDSL_STATUS_ERROR] = code;
  ctx[EDSL_STATUS_MRAM] = (int64_t)(mram - (uint64_t)ctx[EDSL_STATUS_LO]);
  ctx[EDSL_STATUS_WRAM] = (int64_t)wram;
  ctx[EDSL_STATUS_BYTES] = (int64_t)n;
  ctx[EDSL_STATUS_DIR] = (int64_t)dir;
}}

static bool edsl_dma_ok(uint64_t mram, uint64_t wram, uint64_t n) {{
  return n % EDSL_DMA_ALIGN == 0 && n >= EDSL_DMA_MIN && n <= EDSL_DMA_MAX
         && mram % EDSL_DMA_ALIGN == 0 && wram % EDSL_DMA_ALIGN == 0;
}}

static bool edsl_in_arrays(const int64_t *ctx, uint64_t mram, uint64_t n) {{
  return mram >= (uint64_t)ctx[EDSL_STATUS_LO] && mram + n <= (uint64_t)ctx[EDSL_STATUS_HI];
}}

/* A tile transfer between MRAM (`mram`, an address) and WRAM (`wram`) for the
 * tasklet whose context is `ctx`: a broken DMA rule or an MRAM span outside the
 * arrays is recorded and the transfer skipped, as on edsl's DPU model. */
static void edsl_dma(uint64_t mram, uint64_t wram, uint64_t n, uint64_t dir, void *context) {{
  int64_t *ctx = (int64_t *)context;
  if (!edsl_dma_ok(mram, wram, n)) {{
    edsl_record(ctx, EDSL_ERR_DMA_RULE, mram, wram, n, dir);
    return;
  }}
  if (!edsl_in_arrays(ctx, mram, n)) {{
    edsl_record(ctx, EDSL_ERR_MRAM_BOUNDS, mram, wram, n, dir);
    return;
  }}
  if (dir)
    mram_write((const void *)(uintptr_t)wram, (__mram_ptr void *)(uintptr_t)mram, (unsigned int)n);
  else
    mram_read((const __mram_ptr void *)(uintptr_t)mram, (void *)(uintptr_t)wram, (unsigned int)n);
}}

/* DMA of an EDSL region: also bounded by the ends of its buffers. */
static void edsl_region_dma(uint64_t mram, uint64_t wram, uint64_t n, uint64_t site,
                            uint64_t mram_end, uint64_t wram_end, uint64_t dir) {{
  int64_t *ctx = edsl_ctx[me()];
  if (!edsl_dma_ok(mram, wram, n) || mram + n > mram_end || wram + n > wram_end
      || !edsl_in_arrays(ctx, mram, n)) {{
    if (ctx[EDSL_STATUS_ERROR] == 0) {{
      edsl_record(ctx, EDSL_ERR_REGION_DMA, mram, wram, n, dir);
      ctx[EDSL_STATUS_ASSERT] = (int64_t)site;
    }}
    return;
  }}
  if (dir)
    mram_write((const void *)(uintptr_t)wram, (__mram_ptr void *)(uintptr_t)mram, (unsigned int)n);
  else
    mram_read((const __mram_ptr void *)(uintptr_t)mram, (void *)(uintptr_t)wram, (unsigned int)n);
}}

static inline void edsl_region_mram_read(uint64_t mram, uint64_t wram, uint64_t n, uint64_t site,
                                         uint64_t mram_end, uint64_t wram_end) {{
  edsl_region_dma(mram, wram, n, site, mram_end, wram_end, 0);
}}

static inline void edsl_region_mram_write(uint64_t mram, uint64_t wram, uint64_t n, uint64_t site,
                                          uint64_t mram_end, uint64_t wram_end) {{
  edsl_region_dma(mram, wram, n, site, mram_end, wram_end, 1);
}}

static inline void edsl_region_assert_fail(uint64_t site) {{
  int64_t *ctx = edsl_ctx[me()];
  if (ctx[EDSL_STATUS_ERROR] == 0) {{
    ctx[EDSL_STATUS_ERROR] = EDSL_ERR_REGION_ASSERT;
    ctx[EDSL_STATUS_ASSERT] = (int64_t)site;
  }}
}}

/* WRAM-to-WRAM copies (llvm.intr.memcpy / memmove / memset). */
static inline void edsl_copy(void *dst, const void *src, uint32_t n) {{
  uint8_t *d = (uint8_t *)dst;
  const uint8_t *s = (const uint8_t *)src;
  for (uint32_t i = 0; i < n; i++)
    d[i] = s[i];
}}

static inline void edsl_move(void *dst, const void *src, uint32_t n) {{
  uint8_t *d = (uint8_t *)dst;
  const uint8_t *s = (const uint8_t *)src;
  if (d < s)
    for (uint32_t i = 0; i < n; i++)
      d[i] = s[i];
  else
    for (uint32_t i = n; i > 0; i--)
      d[i - 1] = s[i - 1];
}}

static inline void edsl_fill(void *dst, uint8_t value, uint32_t n) {{
  uint8_t *d = (uint8_t *)dst;
  for (uint32_t i = 0; i < n; i++)
    d[i] = value;
}}
"""


_MATH_SUPPORT = """
/* llvm.intr.maximum / minimum: NaN-propagating, -0 < +0. */
static inline float edsl_maximumf(float a, float b) {
  if (a != a || b != b) return a + b;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}
static inline float edsl_minimumf(float a, float b) {
  if (a != a || b != b) return a + b;
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}
static inline double edsl_maximum(double a, double b) {
  if (a != a || b != b) return a + b;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}
static inline double edsl_minimum(double a, double b) {
  if (a != a || b != b) return a + b;
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}
"""


def dpu_program(kernel: str, params: list[Param], prog: P.CProgram, abi: EntryAbi, wram: int,
                num_tasklets: int) -> str:
    includes = ["<stdbool.h>", "<stddef.h>", "<stdint.h>", "<defs.h>", "<mram.h>", "<barrier.h>"]
    if prog.needs_math:
        includes.append("<math.h>")
    main_name = prog.names[P.MAIN_FN]
    call_args = []
    for p in params:
        call_args.append(f"heap + args->{p.cname}" if p.is_pointer else f"args->{p.cname}")
    call_args += ["args->grid_x", "args->grid_y", "args->grid_z", "args->first_program",
                  "args->program_step"]
    if abi.wram_descriptor:
        call_args += ["(void *)edsl_wram", "(void *)edsl_wram", "0", "sizeof edsl_wram", "1"]
    call_args.append("(void *)edsl_ctx")
    all_tasklets = prog.per_tasklet_buffers
    if all_tasklets:
        runner = ("every tasklet runs them, each taking its share of the tile loops (me()) and "
                  "meeting the others at barriers")
        guard = (f"#if NR_TASKLETS != {num_tasklets}\n#error \"this kernel was compiled for "
                 f"{num_tasklets} tasklets: build with -DNR_TASKLETS={num_tasklets}\"\n#endif")
    else:
        runner = ("tasklet 0 runs them (the kernel's tile code is single-tasklet; the other "
                  "tasklets only meet it at the start and end barriers)")
        guard = ""
    regions = "" if P.CTX_REGIONS is None else f"""
    mine[EDSL_CTX_REGIONS] = (int64_t)(uintptr_t)edsl_regions;
    mine[EDSL_CTX_NREGIONS] = 1;"""
    import textwrap

    def para(text: str) -> str:
        return textwrap.fill(text, 86, initial_indent=" * ", subsequent_indent=" * ")
    parts = [
        f"""/* DPU program of Triton kernel '{kernel}', generated by edsl.
 *
{para(ROUTE_NOTE)}
 *
{para("main() reads the arguments from DPU_INPUT_ARGUMENTS and runs this DPU's program "
      "instances (ids first_program, first_program + program_step, ...): " + runner + ". "
      "Errors the program detects are recorded in the tasklet's context and, at the end, the "
      "first one in `edsl_status`, which the host reads. Build for hardware with "
      "dpu-upmem-dpurte-clang -DNR_TASKLETS=<n> (see the Makefile).")} */
""",
        "\n".join(f"#include {h}" for h in includes),
        '#include "kernel_args.h"',
        "",
        "#ifndef NR_TASKLETS\n#define NR_TASKLETS 1\n#endif",
        guard,
        f"#define EDSL_ALL_TASKLETS {1 if all_tasklets else 0}",
        _DPU_SUPPORT.format(align=abi.DMA_ALIGN, dmin=abi.DMA_MIN_BYTES,
                            dmax=abi.DMA_MAX_BYTES, regions=P.CTX_REGIONS or 12,
                            nregions=P.CTX_NREGIONS or 13),
    ]
    if abi.wram_descriptor:
        parts.append(f"/* The kernel's WRAM: its tile buffers (shared by the tasklets) and one DMA "
                     f"staging buffer per tasklet. */\nstatic uint8_t edsl_wram[{wram}] __dma_aligned;\n")
    if prog.needs_math:
        parts.append(_MATH_SUPPORT)
    if prog.types:
        parts.append("/* LLVM struct and array types */\n" + "\n".join(prog.types))
    if prog.globals:
        parts.append("/* WRAM buffers of the kernel */\n" + "\n".join(prog.globals))
    parts.append("\n".join(prog.prototypes))
    parts.extend(f + "\n" for f in prog.functions)
    parts.append(f"""int main(void) {{
  const edsl_args_t *args = &DPU_INPUT_ARGUMENTS;
  uint64_t heap = (uint64_t)(uintptr_t)DPU_MRAM_HEAP_POINTER;
  int64_t *mine = edsl_ctx[me()];
  for (int k = 0; k < EDSL_STATUS_SLOTS; k++)
    mine[k] = 0;
  mine[EDSL_STATUS_LO] = (int64_t)heap;
  mine[EDSL_STATUS_HI] = (int64_t)(heap + args->mram_bytes);{regions}
  if (me() == 0) {{
    edsl_regions[0] = heap;
    edsl_regions[1] = heap + args->mram_bytes;
    for (int k = 0; k < EDSL_STATUS_SLOTS; k++)
      edsl_status[k] = 0;
  }}
  barrier_wait(&edsl_barrier);
  if (EDSL_ALL_TASKLETS || me() == 0)
    {main_name}({', '.join(call_args)});
  barrier_wait(&edsl_barrier);
  if (me() == 0)
    for (int t = 0; t < NR_TASKLETS; t++)
      if (edsl_ctx[t][EDSL_STATUS_ERROR] != 0) {{
        for (int k = 0; k < EDSL_STATUS_SLOTS; k++)
          edsl_status[k] = edsl_ctx[t][k];
        break;
      }}
  return 0;
}}
""")
    return "\n".join(x for x in parts if x is not None)


def launch_config(kernel: str, params: list[Param], grid, num_dpus: int, values: dict) -> str:
    g = grid or (0, 0, 0)
    lines = [f"""/* Launch defaults of the host runner for kernel '{kernel}' (generated by edsl;
 * edit, or override on the command line: dpus=N grid=X,Y,Z name=value). */
#ifndef EDSL_LAUNCH_CONFIG_H
#define EDSL_LAUNCH_CONFIG_H

#define EDSL_KERNEL_NAME {_c_string(kernel)}
#define EDSL_DEFAULT_NR_DPUS {num_dpus}u
#define EDSL_DEFAULT_GRID_X {g[0]}u   /* 0: the grid must be given (grid=X,Y,Z) */
#define EDSL_DEFAULT_GRID_Y {g[1]}u
#define EDSL_DEFAULT_GRID_Z {g[2]}u

/* Tolerances of the check against <name>.expected.bin (floats; integers must match). */
#define EDSL_RTOL_F32 1e-5
#define EDSL_ATOL_F32 1e-6
#define EDSL_RTOL_F64 1e-12
#define EDSL_ATOL_F64 1e-12
"""]
    for p in params:
        if p.is_pointer:
            continue
        if p.name in values:
            lines.append(f"#define EDSL_HAVE_DEFAULT_{p.cname} 1")
            lines.append(f"#define EDSL_DEFAULT_{p.cname} {_scalar_literal(p.type, values[p.name])}")
        else:
            lines.append(f"#define EDSL_HAVE_DEFAULT_{p.cname} 0")
            lines.append(f"#define EDSL_DEFAULT_{p.cname} 0")
    lines.append("\n#endif\n")
    return "\n".join(lines)


def _scalar_literal(t: str, value) -> str:
    kind = TYPES[t][2]
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
    if kind == "bool":
        return "1" if v else "0"
    v = int(v)
    if kind == "uint":
        return f"{v}ull"
    return f"{v}ll" if v >= 0 else f"({v + 1}ll - 1)"


def host_runner(kernel: str, params: list[Param], outputs: list[str], asserts: list) -> str:
    arrays = [p for p in params if p.is_pointer]
    scalars = [p for p in params if not p.is_pointer]
    kinds = {"int": "KIND_INT", "uint": "KIND_UINT", "float": "KIND_FLOAT", "bool": "KIND_UINT"}
    table = ",\n".join(
        f'    {{"{p.name}", {_elem_size(p.elem)}, {kinds[TYPES[p.elem][2]]}, '
        f'{1 if p.name in outputs else 0}, NULL, 0, 0}}' for p in arrays)
    defaults = "\n".join(
        f"  int have_{p.cname} = EDSL_HAVE_DEFAULT_{p.cname};\n"
        f"  args.{p.cname} = ({TYPES[p.type][0]})EDSL_DEFAULT_{p.cname};" for p in scalars)
    parse = []
    for p in scalars:
        kind = TYPES[p.type][2]
        conv = {"float": "strtod(value, &end)", "uint": "strtoull(value, &end, 0)",
                "bool": "strtoull(value, &end, 0)", "int": "strtoll(value, &end, 0)"}[kind]
        parse.append(f'    }} else if (strcmp(key, "{p.name}") == 0) {{\n'
                     f"      args.{p.cname} = ({TYPES[p.type][0]}){conv};\n"
                     f"      have_{p.cname} = 1;")
    missing = "\n".join(
        f'  if (!have_{p.cname}) {{\n    fprintf(stderr, "missing a value for scalar argument '
        f"'{p.name}' ({p.name}=...)\\n\");\n    return 2;\n  }}" for p in scalars)
    set_ptrs = "\n".join(f"  args.{p.cname} = arrays[{k}].offset;" for k, p in enumerate(arrays))
    assert_table = ",\n".join(f"    {_c_string(m + (' at ' + w if w else ''))}" for m, w in asserts) \
        or '    ""'
    scalar_names = " ".join(f"{p.name}=..." for p in scalars)
    usage = f"usage: %s [data=DIR] [out=DIR] [dpus=N] [grid=X,Y,Z] [check=0|1] [profile=...] {scalar_names}"
    n_arrays = len(arrays)
    table_decl = f"static struct array arrays[] = {{\n{table}\n}};" if arrays else \
        "static struct array arrays[1];"
    return _HOST_TEMPLATE.replace("@KERNEL@", kernel).replace("@ARRAYS@", table_decl) \
        .replace("@NARRAYS@", str(n_arrays)).replace("@DEFAULTS@", defaults) \
        .replace("@PARSE@", "\n".join(parse)).replace("@MISSING@", missing) \
        .replace("@SETPTRS@", set_ptrs).replace("@ASSERTS@", assert_table) \
        .replace("@USAGE@", usage)


def _elem_size(t: str) -> int:
    import numpy as np
    return np.dtype(TYPES[t][1]).itemsize


_HOST_TEMPLATE = r"""/* Host runner for Triton kernel '@KERNEL@' on UPMEM DPUs, generated by edsl.
 *
 * Reads every array argument from DIR/<name>.bin (raw little-endian), lays the
 * arrays out in MRAM from DPU_MRAM_HEAP_POINTER (each at an 8-byte aligned
 * offset), writes the kernel arguments to DPU_INPUT_ARGUMENTS of each DPU
 * (DPU i runs program instances i, i + nr_dpus, ...), launches, checks the
 * program's status, gathers the output arrays from every DPU, merges them (a
 * byte a DPU changed is taken from that DPU), writes OUT/<name>.bin and
 * compares with DIR/<name>.expected.bin when that file exists.
 * Exit status: 0 ok, 1 mismatch, 2 usage or input error, 3 DPU error, 4 error
 * reported by the program. */
#include <dpu.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernel_args.h"
#include "launch_config.h"

#ifndef DPU_BINARY
#define DPU_BINARY "build/hw/dpu_program"
#endif

#define EDSL_MRAM_BYTES ((uint64_t)64 << 20)

#define CHECK(call) \
  do { \
    dpu_error_t err_ = (call); \
    if (err_ != DPU_OK) { \
      char *msg_ = dpu_error_to_string(err_); \
      fprintf(stderr, "error: %s: %s\n", #call, msg_); \
      free(msg_); \
      exit(3); \
    } \
  } while (0)

enum { KIND_INT, KIND_UINT, KIND_FLOAT };

struct array {
  const char *name;
  size_t elem;
  int kind;
  int output;
  uint8_t *data;
  size_t bytes;
  uint64_t offset;
};

@ARRAYS@
#define NR_ARRAYS @NARRAYS@

static const char *assert_messages[] = {
@ASSERTS@
};

static uint8_t *read_file(const char *dir, const char *name, const char *suffix, size_t *size) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s%s", dir, name, suffix);
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *data = malloc(n > 0 ? (size_t)n : 1);
  if (!data || (n > 0 && fread(data, 1, (size_t)n, f) != (size_t)n)) {
    fprintf(stderr, "error: cannot read %s\n", path);
    exit(2);
  }
  fclose(f);
  *size = (size_t)n;
  return data;
}

static void write_file(const char *dir, const char *name, const void *data, size_t size) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.bin", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size) {
    fprintf(stderr, "error: cannot write %s\n", path);
    exit(2);
  }
  fclose(f);
}

static double element(const struct array *a, const uint8_t *p, size_t i) {
  const uint8_t *e = p + i * a->elem;
  if (a->kind == KIND_FLOAT) {
    if (a->elem == 4) { float v; memcpy(&v, e, 4); return v; }
    double v; memcpy(&v, e, 8); return v;
  }
  if (a->kind == KIND_UINT) {
    switch (a->elem) {
      case 1: return *(const uint8_t *)e;
      case 2: { uint16_t v; memcpy(&v, e, 2); return v; }
      case 4: { uint32_t v; memcpy(&v, e, 4); return v; }
      default: { uint64_t v; memcpy(&v, e, 8); return (double)v; }
    }
  }
  switch (a->elem) {
    case 1: return *(const int8_t *)e;
    case 2: { int16_t v; memcpy(&v, e, 2); return v; }
    case 4: { int32_t v; memcpy(&v, e, 4); return v; }
    default: { int64_t v; memcpy(&v, e, 8); return (double)v; }
  }
}

/* 0 if `got` matches `want` (floats within the tolerances, NaN == NaN). */
static int compare(const struct array *a, const uint8_t *got, const uint8_t *want, size_t bytes) {
  size_t n = bytes / a->elem, bad = 0, first = 0;
  double worst = 0.0;
  for (size_t i = 0; i < n; i++) {
    int ok;
    if (a->kind == KIND_FLOAT) {
      double g = element(a, got, i), w = element(a, want, i);
      double rtol = a->elem == 4 ? EDSL_RTOL_F32 : EDSL_RTOL_F64;
      double atol = a->elem == 4 ? EDSL_ATOL_F32 : EDSL_ATOL_F64;
      if (isnan(g) || isnan(w))
        ok = isnan(g) && isnan(w);
      else if (isinf(g) || isinf(w))
        ok = g == w;
      else {
        double err = fabs(g - w);
        if (err > worst)
          worst = err;
        ok = err <= atol + rtol * fabs(w);
      }
    } else {
      ok = memcmp(got + i * a->elem, want + i * a->elem, a->elem) == 0;
    }
    if (!ok && bad++ == 0)
      first = i;
  }
  if (bad) {
    printf("%s: MISMATCH in %zu of %zu elements (first at %zu: got %.9g, expected %.9g)\n", a->name,
           bad, n, first, element(a, got, first), element(a, want, first));
    return 1;
  }
  printf("%s: OK (%zu elements, max abs error %.3g)\n", a->name, n, worst);
  return 0;
}

static void report(uint32_t dpu, const int64_t *status) {
  int64_t code = status[EDSL_STATUS_ERROR];
  const char *what = status[EDSL_STATUS_DIR] ? "mram_write" : "mram_read";
  switch (code) {
    case EDSL_ERR_DMA_RULE:
      fprintf(stderr, "error: DPU %u: %s breaks the DMA rules: %lld bytes, MRAM offset %lld, WRAM address %#llx "
              "(8-byte aligned addresses, sizes a multiple of 8 from 8 to 2048)\n", dpu, what,
              (long long)status[EDSL_STATUS_BYTES], (long long)status[EDSL_STATUS_MRAM],
              (unsigned long long)status[EDSL_STATUS_WRAM]);
      break;
    case EDSL_ERR_MRAM_BOUNDS:
      fprintf(stderr, "error: DPU %u: %s of %lld bytes at MRAM offset %lld is outside the kernel's arrays "
              "(out-of-bounds pointer)\n", dpu, what, (long long)status[EDSL_STATUS_BYTES],
              (long long)status[EDSL_STATUS_MRAM]);
      break;
    case EDSL_ERR_ASSERT: {
      int64_t k = status[EDSL_STATUS_ASSERT] - 1;
      int n = (int)(sizeof assert_messages / sizeof assert_messages[0]);
      fprintf(stderr, "error: DPU %u: device assertion failed (program %lld): %s\n", dpu,
              (long long)status[EDSL_STATUS_MRAM], k >= 0 && k < n ? assert_messages[k] : "?");
      break;
    }
    case EDSL_ERR_REGION_DMA:
      fprintf(stderr, "error: DPU %u: %s of an EDSL function at line %lld breaks the DMA rules or "
              "overruns a buffer (%lld bytes)\n", dpu, what, (long long)(status[EDSL_STATUS_ASSERT] >> 16),
              (long long)status[EDSL_STATUS_BYTES]);
      break;
    case EDSL_ERR_REGION_ASSERT:
      fprintf(stderr, "error: DPU %u: assertion failed in an EDSL function at line %lld\n", dpu,
              (long long)(status[EDSL_STATUS_ASSERT] >> 16));
      break;
    default:
      fprintf(stderr, "error: DPU %u: error code %lld\n", dpu, (long long)code);
  }
}

static void usage(const char *argv0) {
  fprintf(stderr, "@USAGE@\n", argv0);
}

int main(int argc, char **argv) {
  const char *data_dir = "data", *out_dir = "out", *profile = NULL;
  int check = 1;
  uint32_t nr_dpus = EDSL_DEFAULT_NR_DPUS;
  uint32_t grid[3] = {EDSL_DEFAULT_GRID_X, EDSL_DEFAULT_GRID_Y, EDSL_DEFAULT_GRID_Z};
  edsl_args_t args;
  memset(&args, 0, sizeof args);
@DEFAULTS@

  for (int i = 1; i < argc; i++) {
    char *key = argv[i], *eq = strchr(key, '='), *end = NULL;
    if (!eq) {
      usage(argv[0]);
      return 2;
    }
    *eq = 0;
    const char *value = eq + 1;
    if (strcmp(key, "data") == 0) {
      data_dir = value;
    } else if (strcmp(key, "out") == 0) {
      out_dir = value;
    } else if (strcmp(key, "profile") == 0) {
      profile = value;
    } else if (strcmp(key, "check") == 0) {
      check = atoi(value);
    } else if (strcmp(key, "dpus") == 0) {
      nr_dpus = (uint32_t)strtoul(value, &end, 0);
    } else if (strcmp(key, "grid") == 0) {
      grid[0] = grid[1] = grid[2] = 1;
      sscanf(value, "%u,%u,%u", &grid[0], &grid[1], &grid[2]);
@PARSE@
    } else {
      fprintf(stderr, "unknown argument '%s'\n", key);
      usage(argv[0]);
      return 2;
    }
    (void)end;
  }
@MISSING@
  if ((uint64_t)grid[0] * grid[1] * grid[2] == 0) {
    fprintf(stderr, "the grid is empty or not given (grid=X,Y,Z)\n");
    return 2;
  }
  if (nr_dpus == 0) {
    fprintf(stderr, "dpus must be at least 1\n");
    return 2;
  }

  /* Arrays: one MRAM image, each array at an 8-byte aligned offset. */
  uint64_t mram_bytes = 0;
  size_t max_bytes = 8;
  for (int k = 0; k < NR_ARRAYS; k++) {
    struct array *a = &arrays[k];
    a->data = read_file(data_dir, a->name, ".bin", &a->bytes);
    if (!a->data) {
      fprintf(stderr, "error: cannot open %s/%s.bin (the array argument '%s')\n", data_dir, a->name, a->name);
      return 2;
    }
    a->offset = mram_bytes;
    size_t padded = (a->bytes + 7) / 8 * 8;
    if (padded == 0)
      padded = 8;
    if (padded > max_bytes)
      max_bytes = padded;
    mram_bytes += padded;
  }
  if (mram_bytes == 0)
    mram_bytes = 8;
  if (mram_bytes > EDSL_MRAM_BYTES) {
    fprintf(stderr, "error: the arrays need %llu bytes of MRAM, more than a DPU's 64 MiB\n",
            (unsigned long long)mram_bytes);
    return 2;
  }
  uint8_t *image = calloc(1, (size_t)mram_bytes);
  for (int k = 0; k < NR_ARRAYS; k++)
    memcpy(image + arrays[k].offset, arrays[k].data, arrays[k].bytes);
@SETPTRS@
  args.grid_x = grid[0];
  args.grid_y = grid[1];
  args.grid_z = grid[2];
  args.program_step = nr_dpus;
  args.mram_bytes = mram_bytes;

  struct dpu_set_t set, dpu;
  uint32_t i;
  CHECK(dpu_alloc(nr_dpus, profile, &set));
  CHECK(dpu_load(set, DPU_BINARY, NULL));

  edsl_args_t *per_dpu = calloc(nr_dpus, sizeof *per_dpu);
  DPU_FOREACH(set, dpu, i) {
    per_dpu[i] = args;
    per_dpu[i].first_program = i;
    CHECK(dpu_prepare_xfer(dpu, &per_dpu[i]));
  }
  CHECK(dpu_push_xfer(set, DPU_XFER_TO_DPU, "DPU_INPUT_ARGUMENTS", 0, sizeof(edsl_args_t), DPU_XFER_DEFAULT));
  DPU_FOREACH(set, dpu, i) {
    CHECK(dpu_prepare_xfer(dpu, image));
  }
  CHECK(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, (size_t)mram_bytes, DPU_XFER_DEFAULT));

  dpu_error_t launched = dpu_launch(set, DPU_SYNCHRONOUS);
  if (launched != DPU_OK) {
    char *msg = dpu_error_to_string(launched);
    fprintf(stderr, "error: dpu_launch: %s\n", msg);
    free(msg);
    return 3;
  }

  int failed = 0;
  DPU_FOREACH(set, dpu, i) {
    int64_t status[EDSL_STATUS_SLOTS];
    CHECK(dpu_copy_from(dpu, "edsl_status", 0, status, sizeof status));
    if (status[EDSL_STATUS_ERROR] != 0) {
      report(i, status);
      failed = 1;
    }
  }
  if (failed)
    return 4;

  /* Gather every output from every DPU; merge the bytes each DPU changed. */
  mkdir(out_dir, 0777);
  uint8_t *gathered = malloc((size_t)nr_dpus * max_bytes);
  int mismatch = 0;
  for (int k = 0; k < NR_ARRAYS; k++) {
    struct array *a = &arrays[k];
    if (!a->output)
      continue;
    size_t padded = (a->bytes + 7) / 8 * 8;
    if (padded == 0)
      continue;
    DPU_FOREACH(set, dpu, i) {
      CHECK(dpu_prepare_xfer(dpu, gathered + (size_t)i * padded));
    }
    CHECK(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, (uint32_t)a->offset, padded,
                        DPU_XFER_DEFAULT));
    uint8_t *result = malloc(a->bytes);
    memcpy(result, a->data, a->bytes);
    for (uint32_t d = 0; d < nr_dpus; d++) {
      const uint8_t *g = gathered + (size_t)d * padded;
      for (size_t b = 0; b < a->bytes; b++)
        if (g[b] != a->data[b])
          result[b] = g[b];
    }
    write_file(out_dir, a->name, result, a->bytes);
    size_t want_bytes = 0;
    uint8_t *want = check ? read_file(data_dir, a->name, ".expected.bin", &want_bytes) : NULL;
    if (want) {
      if (want_bytes != a->bytes) {
        printf("%s: MISMATCH (expected %zu bytes, got %zu)\n", a->name, want_bytes, a->bytes);
        mismatch = 1;
      } else {
        mismatch |= compare(a, result, want, a->bytes);
      }
      free(want);
    }
    free(result);
  }
  DPU_ASSERT(dpu_free(set));
  printf("%s: %u x %u x %u programs on %u DPUs: %s\n", EDSL_KERNEL_NAME, grid[0], grid[1], grid[2],
         nr_dpus, mismatch ? "MISMATCH" : "done");
  return mismatch ? 1 : 0;
}
"""


MAKEFILE = r"""# Build and run kernel '@KERNEL@' (generated by edsl).
#
#   make            build for UPMEM hardware (UPMEM SDK: dpu-upmem-dpurte-clang, dpu-pkg-config)
#   make run        ... and run the host runner on data/
#   make sim        build against the SDK stand-ins in sim/ (host C compiler, no SDK needed)
#   make run-sim    ... and run it on data/
#
# NR_TASKLETS is compiled into the DPU program; DPUs, grid and scalars are
# arguments of the host runner (defaults in launch_config.h).

NR_TASKLETS ?= @TASKLETS@
STACK_SIZE ?= 2048
OPT ?= -O2
CC ?= cc
DPU_CC ?= dpu-upmem-dpurte-clang
DPU_PKG_CONFIG ?= dpu-pkg-config
RUN_ARGS ?= data=data out=out

DPU_CFLAGS = $(OPT) -DNR_TASKLETS=$(NR_TASKLETS) -DSTACK_SIZE_DEFAULT=$(STACK_SIZE) -fno-strict-aliasing
HOST_CFLAGS = $(OPT) -std=gnu11

.PHONY: all hw run sim run-sim clean

all: hw

hw: build/hw/dpu_program build/hw/host_runner

build/hw/dpu_program: dpu_program.c kernel_args.h
	@mkdir -p build/hw
	$(DPU_CC) $(DPU_CFLAGS) -o $@ dpu_program.c

build/hw/host_runner: host_runner.c kernel_args.h launch_config.h
	@mkdir -p build/hw
	$(CC) $(HOST_CFLAGS) -DDPU_BINARY='"build/hw/dpu_program"' -o $@ host_runner.c \
	    `$(DPU_PKG_CONFIG) --cflags --libs dpu` -lm

run: hw
	./build/hw/host_runner $(RUN_ARGS)

sim: build/sim/dpu_program.so build/sim/host_runner

build/sim/dpu_program.so: dpu_program.c kernel_args.h sim/defs.h sim/mram.h sim/barrier.h sim/alloc.h sim/dpu_sim_rt.c
	@mkdir -p build/sim
	$(CC) $(OPT) -std=gnu11 -fPIC -shared -Wl,-Bsymbolic -fno-strict-aliasing -Isim \
	    -DNR_TASKLETS=$(NR_TASKLETS) -o $@ dpu_program.c sim/dpu_sim_rt.c -lm -lpthread

build/sim/host_runner: host_runner.c kernel_args.h launch_config.h sim/dpu.h sim/dpu_sim_host.c
	@mkdir -p build/sim
	$(CC) $(HOST_CFLAGS) -Isim -DDPU_BINARY='"build/sim/dpu_program.so"' -o $@ host_runner.c \
	    sim/dpu_sim_host.c -ldl -lpthread -lm

run-sim: sim
	./build/sim/host_runner $(RUN_ARGS)

clean:
	rm -rf build out
"""


ROUTE_NOTE = ("Route: the kernel's final LLVM-dialect MLIR printed as C (one function per "
              "llvm.func, blocks as labels). The UPMEM compiler is LLVM 12 and cannot read "
              "today's opaque-pointer LLVM IR; C built from the SDK headers compiles with "
              "it, and the same file runs on the host against edsl's SDK stand-ins.")


def readme(kernel: str, params: list[Param], grid, num_dpus: int, num_tasklets: int,
           outputs: list[str], has_data: bool, prog: P.CProgram) -> str:
    arg_lines = "\n".join(
        f"| `{p.name}` | `{p.type}` | {'array (`data/' + p.name + '.bin`)' if p.is_pointer else 'scalar'}"
        f"{', gathered and checked' if p.name in outputs else ''} |" for p in params)
    grid_text = f"`{grid[0]},{grid[1]},{grid[2]}`" if grid else "none (give `grid=X,Y,Z`)"
    data_text = ("`data/` holds the sample inputs (`<name>.bin`) and the outputs the DPU model "
                 "computed for them (`<name>.expected.bin`); the runner checks against them."
                 if has_data else
                 "No data was exported: write each array argument to `data/<name>.bin` (raw, "
                 "little-endian, C order) and give the scalars on the command line.")
    tasklets = ("every tasklet runs the program instances, dividing the work with `me()`"
                if prog.per_tasklet_buffers else
                "tasklet 0 runs the program instances; the kernel's tile code is single-tasklet")
    return f"""# `{kernel}` as an UPMEM SDK project

Generated by `edsl.dpu.export` (`edsl export`) from the Triton kernel `{kernel}`.

| argument | type | role |
|---|---|---|
{arg_lines}

Defaults: grid {grid_text}, {num_dpus} DPU(s), NR_TASKLETS={num_tasklets}.
{data_text}

## Build and run

On a machine with the UPMEM SDK (`dpu-upmem-dpurte-clang`, `dpu-pkg-config`):

    make run                      # build/hw/dpu_program + build/hw/host_runner
    make run RUN_ARGS="dpus=8 profile=backend=simulator"

Anywhere with a C compiler (the same DPU source, built with the host compiler
against the SDK stand-ins in `sim/`: one shared object per DPU, tasklets as
threads, `mram_read`/`mram_write` checking the DMA rules):

    make run-sim

Runner arguments (all `key=value`): `data=DIR` (inputs, default `data`),
`out=DIR` (outputs, default `out`), `dpus=N`, `grid=X,Y,Z`, `check=0|1`,
`profile=...` (passed to `dpu_alloc`), and one per scalar argument
(`name=value`). Exit status: 0 ok, 1 mismatch, 2 bad input, 3 DPU error,
4 error reported by the program (DMA rule, out-of-bounds pointer, assertion).

## Files

- `dpu_program.c` -- the DPU program: the kernel printed as C, plus `main`,
  which reads the arguments from `DPU_INPUT_ARGUMENTS` (a `__host` struct) and
  runs the program instances of its DPU ({tasklets}). It includes only SDK
  headers (`defs.h`, `mram.h`, `barrier.h`, standard `stdint.h`/`stddef.h`/
  `stdbool.h`{', `math.h`' if prog.needs_math else ''}).
- `kernel_args.h` -- the argument struct, shared by host and DPU (every field
  8-byte aligned, so both compilers agree on the layout).
- `host_runner.c`, `launch_config.h` -- the host program and its defaults.
- `sim/` -- edsl's stand-ins for the SDK headers and host library.
- `Makefile`, `manifest.json` (what was exported), this README.

## How it maps

- Program instances are spread over the DPUs round-robin: DPU `i` runs ids
  `i, i + nr_dpus, ...` (x fastest), one at a time, as on edsl's DPU model.
- Array arguments: the runner copies every array to every DPU's MRAM (8-byte
  aligned offsets from `DPU_MRAM_HEAP_POINTER`); pointers in the kernel are
  MRAM addresses. Tiles move between MRAM and WRAM with `mram_read` /
  `mram_write` (at most 2048 bytes, 8-byte aligned). Afterwards the runner
  reads the output arrays back from every DPU and merges them: a byte a DPU
  changed comes from that DPU (a Triton kernel's program instances write
  disjoint elements).
- WRAM: the kernel's tile buffers live in `edsl_wram` (shared by the
  tasklets, with one DMA staging buffer per tasklet); other buffers are static
  WRAM arrays and globals ({prog.static_wram_bytes + prog.global_wram_bytes} bytes), plus the
  tasklets' stacks (`STACK_SIZE`, Makefile) and the argument/status variables.
- Errors the program detects (DMA rule, out-of-bounds pointer, device
  assertion) are recorded in the `__host` array `edsl_status`; the runner
  reads it from every DPU and reports them.

## Why C

{ROUTE_NOTE}
Floating point is emulated in software on the DPU (correct but slow);
transcendental functions (`expf`, `sqrtf`, ...) come from the toolchain's
`math.h`/libm, so results may differ from the host's in the last bits (the
check uses a tolerance, see `launch_config.h`).
"""


# -- export ----------------------------------------------------------------------
def export(kernel, out_dir, *, signature=None, constants=None, sample_args=None, grid=None,
           num_dpus: int = 1, num_tasklets: int = 1, outputs: Sequence[str] | None = None,
           overwrite: bool = False) -> ExportResult:
    """Write `kernel` as a self-contained UPMEM SDK project folder `out_dir`.

    kernel        a `@triton.jit` kernel
    signature     types of the non-constexpr parameters: {'x_ptr': '*fp32', 'n': 'i32'}
                  (or a list in parameter order); not needed with `sample_args`
    constants     values of the `tl.constexpr` parameters: {'BLOCK': 1024}
    sample_args   sample arguments (NumPy arrays and numbers, in parameter order, or a
                  dict): they give the types, and are written to `data/` with the
                  outputs a run on the DPU model computes from them (`grid` needed)
    grid          1 to 3 ints, or a callable of the argument dict (as in `kernel[grid]`)
    num_dpus      default number of DPUs of the host runner
    num_tasklets  NR_TASKLETS of the DPU program (1..24)
    outputs       names of the array arguments to gather and check (default: all)
    overwrite     replace an existing `out_dir`

    Raises `ArgumentError` for bad arguments and `CompileError` for a kernel the
    export cannot print as DPU C; nothing is written then.
    """
    if not isinstance(num_dpus, int) or isinstance(num_dpus, bool) or num_dpus < 1:
        raise ArgumentError(f"num_dpus must be a positive integer, not {num_dpus!r}")
    if not isinstance(num_tasklets, int) or not 1 <= num_tasklets <= abi.MAX_TASKLETS:
        raise ArgumentError(f"num_tasklets must be an integer from 1 to {abi.MAX_TASKLETS}, "
                            f"not {num_tasklets!r}")
    out = Path(out_dir)
    if out.exists() and not overwrite:
        raise ArgumentError(f"{out} already exists (pass overwrite=True to replace it)")
    if out.exists() and not out.is_dir():
        raise ArgumentError(f"{out} exists and is not a folder")
    parent = out.resolve().parent
    if not parent.is_dir():
        raise ArgumentError(f"cannot write {out}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ArgumentError(f"cannot write {out}: folder {parent} is not writable")

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

    header, llvm_text = compile_for_export(fn, params, constexprs, num_dpus, num_tasklets)
    kernel_name = header["name"]
    prog, abi = translate(llvm_text, kernel_name, len(params))
    copies = num_tasklets if prog.per_tasklet_buffers else 1
    wram = _wram_bytes(header, abi)
    need = prog.static_wram_bytes * copies + prog.global_wram_bytes + wram
    if need > abi.WRAM_BYTES:
        raise DpuError(f"kernel '{kernel_name}': its WRAM buffers need {need} bytes with "
                       f"{num_tasklets} tasklets, more than the {abi.WRAM_BYTES} bytes of a DPU")

    data: dict[str, bytes] = {}
    if sample_args is not None:
        data = _sample_data(fn, params, constexprs, values, g, num_dpus, num_tasklets, outputs)

    files = {
        "dpu_program.c": dpu_program(kernel_name, params, prog, abi, wram, num_tasklets),
        "kernel_args.h": args_header(kernel_name, params),
        "launch_config.h": launch_config(kernel_name, params, g, num_dpus, values),
        "host_runner.c": host_runner(kernel_name, params, outputs, header.get("asserts", [])),
        "Makefile": MAKEFILE.replace("@KERNEL@", kernel_name).replace("@TASKLETS@", str(num_tasklets)),
        "README.md": readme(kernel_name, params, g, num_dpus, num_tasklets, outputs, bool(data), prog),
        "manifest.json": json.dumps({
            "kernel": kernel_name,
            "params": [{"name": p.name, "type": p.type, "c_name": p.cname} for p in params],
            "constants": {k: _jsonable(v) for k, v in constexprs.items()},
            "grid": list(g) if g else None, "num_dpus": num_dpus, "num_tasklets": num_tasklets,
            "outputs": outputs, "all_tasklets": prog.per_tasklet_buffers,
            "wram_bytes": {"kernel": wram, "globals": prog.global_wram_bytes,
                           "buffers_per_copy": prog.static_wram_bytes, "buffer_copies": copies},
            "sample_scalars": {p.name: _jsonable(values[p.name]) for p in params
                               if not p.is_pointer and p.name in values},
        }, indent=2) + "\n",
    }
    return _write(out, overwrite, files, data, ExportResult(
        path=out, kernel=kernel_name, params=params, grid=g, num_dpus=num_dpus,
        num_tasklets=num_tasklets, outputs=outputs, files=[]))


def _wram_bytes(header: dict, abi: EntryAbi) -> int:
    """Bytes of the WRAM area `main` passes to the kernel (its tile buffers)."""
    if not abi.wram_descriptor:
        return 0
    return max(8, (int(header.get("wram_bytes", 0)) + 7) // 8 * 8)


def _jsonable(v):
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    return repr(v)


def _sample_data(fn, params, constexprs, values, grid, num_dpus, num_tasklets, outputs):
    """Inputs as bytes, and the expected outputs from a run on the DPU model."""
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
        fn[grid](**run_args, num_dpus=num_dpus, num_tasklets=num_tasklets)
    except EdslError:
        raise
    except Exception as err:  # noqa: BLE001 - a failure of the reference run
        raise CompileError(f"kernel '{fn.__name__}': the reference run on the DPU model failed: "
                           f"{err}") from None
    for name in outputs:
        data[f"{name}.expected.bin"] = np.ascontiguousarray(run_args[name]).tobytes()
    return data


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


__all__ = ["export", "ExportResult", "TYPES"]
