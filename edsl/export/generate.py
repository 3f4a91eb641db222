"""The files of an exported project, filled from the `string.Template`s in
`templates/`: the DPU ABI and DMA rules as C headers, the argument struct
shared by host and DPU, the DPU program around the kernel's printed C, the
launch defaults, the host runner, the Makefile, the README and the manifest."""
from __future__ import annotations

import json
import math
import string
import textwrap
from pathlib import Path

from ..base import templates
from ..base.templates import c_defines
from ..base.errors import file_of_kernel_site
from ..codegen.upmem_c import INCLUDE_DIR
from ..dpu import merge
from ..target import dpu as abi
from ..target import dtypes
from . import printer as P
from .arguments import ExportSpec, c_type, value_kind
from .build import Build, direct_mram_functions
from .layout import LOG_WRAM_ENTRIES, STDOUT_BUFFER_BYTES, args_bytes, nregions

TEMPLATES = Path(__file__).resolve().parent / "templates"


def fill(name: str, **fields) -> str:
    """Template `name` of templates/ with every placeholder filled by `fields`."""
    return templates.fill(TEMPLATES / name, **fields)


def abi_header() -> str:
    """dpu_abi.h: the DPU ABI (edsl.target.dpu) as C macros."""
    limits = ("WRAM_BYTES", "MRAM_BYTES", "MAX_TASKLETS", "DMA_ALIGN", "DMA_MIN_BYTES", "DMA_MAX_BYTES")
    return fill("dpu_abi.h",
                limits=c_defines((name, getattr(abi, name)) for name in limits),
                directions=c_defines([("READ", abi.READ), ("WRITE", abi.WRITE)]),
                ctx=c_defines([*((f"CTX_{s.name}", int(s)) for s in abi.Ctx), ("CTX_SLOTS", abi.CTX_SLOTS)]),
                dpu=c_defines([*((f"DPU_{s.name}", int(s)) for s in abi.Dpu), ("DPU_SLOTS", abi.DPU_SLOTS)]),
                errors=c_defines((f"ERR_{e.name}", int(e)) for e in abi.Err),
                messages=c_defines([("MESSAGE_OUTSIDE_ARRAYS", _c_string(abi.OUTSIDE_ARRAYS)),
                                   ("MESSAGE_OUTSIDE_KERNEL_C_MRAM", _c_string(abi.OUTSIDE_KERNEL_C_MRAM)),
                                   ("WAIT_REPEATS", abi.WAIT_REPEATS),
                                   *_split_message("MESSAGE_OUTSIDE_ARRAYS_LOADED", abi.OUTSIDE_ARRAYS_LOADED)]))


def _split_message(name: str, text: str, field: str = "where") -> list[tuple[str, str]]:
    """A message with one `{field}` as the C strings before and after it."""
    before, after = text.split("{" + field + "}")
    return [(f"{name}_BEFORE", _c_string(before)), (f"{name}_AFTER", _c_string(after))]


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


def error_messages_header() -> str:
    """error_messages.h: the wording of the run-time errors (edsl.target.dpu.ERROR_FORMATS)
    and of the sharing across DPUs that the merge refuses (SHARING_FORMATS) as C."""
    cases = [f"  case EDSL_ERR_{abi.Err(code).name}:\n{_c_format(fmt)}" for code, fmt in abi.ERROR_FORMATS.items()]
    sides = [f"  if (code == EDSL_ERR_{code.name} && write == {int(direction == abi.WRITE)})\n"
             f"    return {_c_string(side)};" for (code, direction), side in abi.OVERRUN_SIDES.items()]
    sharing = [f"  case {int(why)}:  /* EDSL_SHARED_{why.name} */\n{_c_format(fmt, operands=abi.SHARING_OPERANDS)}"
               for why, fmt in abi.SHARING_FORMATS.items()]
    verbs = [(f"VERB_{name.upper()}", _c_string(text)) for name, text in abi.USE_VERBS.items() if name != "atomic"]
    verbs += [("OLD_USED_VERB", _c_string(abi.OLD_USED_VERB)),
              *_split_message("SHARING_LINE", abi.SHARING_LINE, "line")]
    # (functions of their parameters, "" where a text is NULL)
    atomic_verb = _c_format(abi.USE_VERBS["atomic"], "  ", {"op": str, "old_used": str}, of="", otherwise="")
    element_name = _c_format(abi.ELEMENT_NAME, "  ", {"index": int, "array": str}, of="", otherwise="")
    return fill("error_messages.h", fields=_c_fields(abi.ERROR_OPERANDS), cases="\n".join(cases),
                sides="\n".join(sides), unknown=_c_format(abi.UNKNOWN_ERROR, indent="  "),
                read=_c_string(abi.TRANSFER_NAMES[abi.READ]), write=_c_string(abi.TRANSFER_NAMES[abi.WRITE]),
                sharing_fields=_c_fields(abi.SHARING_OPERANDS), sharing_cases="\n".join(sharing),
                verbs=c_defines(verbs), atomic_verb=atomic_verb, element_name=element_name)


def _c_fields(operands: dict) -> str:
    return "\n".join(f"  {'const char *' if t is str else 'int64_t '}{name};" for name, t in operands.items())


def _c_format(fmt: str, indent: str = "    ", operands: dict = abi.ERROR_OPERANDS, of: str = "o->",
              otherwise: str = "break;") -> str:
    """C that writes format `fmt` (of ERROR_FORMATS, or another table of
    `operands`) of the operands (`of`: fields of `o`, or "": parameters) to
    `out` and returns; where a text operand is NULL, it goes on with `otherwise`."""
    text, args, texts = [], [], []
    for literal, name, spec, _ in string.Formatter().parse(fmt):
        text.append(literal.replace("%", "%%"))
        if name is None:
            continue
        if operands[name] is str:
            text.append("%s")
            texts.append(f"{of}{name}")
        elif spec == "#x":
            text.append("0x%llx")
        else:
            assert not spec, (fmt, spec)
            text.append("%lld")
        cast = "" if operands[name] is str else "(unsigned long long)" if spec else "(long long)"
        args.append(f"{cast}{of}{name}")
    call = f"snprintf(out, size, {', '.join([_c_string(''.join(text)), *args])});"
    if not texts:
        return f"{indent}{call}\n{indent}return;"
    return (f"{indent}if ({' && '.join(texts)}) {{\n{indent}  {call}\n{indent}  return;\n{indent}}}"
            + (f"\n{indent}{otherwise}" if otherwise else ""))


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


def args_header(spec: ExportSpec, built: Build) -> str:
    params, per_array, scratch = spec.params, built.per_array, built.scratch
    fields = []
    for p in params:
        if p.is_pointer:
            fields.append(f"    uint64_t {p.cname} EDSL_ARG;  /* {p.type}: offset of the array from "
                          "DPU_MRAM_HEAP_POINTER (DMA-aligned) */")
        else:
            fields.append(f"    {c_type(p.type)} {p.cname} EDSL_ARG;  /* {p.type} */")
    what = ("the bytes of each array, in argument order" if per_array
            else "the whole image of the arrays")
    if scratch:
        what += ", then the scratch" if per_array else " and the scratch"
    return fill("kernel_args.h", kernel=built.name, fields="\n".join(fields),
                size=args_bytes(params, per_array, scratch), nregions=nregions(params, per_array, scratch),
                regions_what=what, scratch_bytes=scratch, tasklets=spec.num_tasklets,
                c_mram_variable_bytes=built.record.c_mram_variable_bytes,
                log=c_defines([("LOG_ENTRY", abi.LOG_ENTRY), ("LOG_WRAM_ENTRIES", LOG_WRAM_ENTRIES)]),
                half_scalars=int(any(value_kind(p.type) == "half" for p in params if not p.is_pointer)))


ROUTE_NOTE = ("Route: the kernel's final LLVM-dialect MLIR printed as C (one function per "
              "llvm.func, blocks as labels). The UPMEM compiler is LLVM 12 and cannot read "
              "today's opaque-pointer LLVM IR; C built from the SDK headers compiles with "
              "it, and the same file runs on the host against edsl's SDK stand-ins.")


# The C of each argument of `abi.ENTRY[MAIN]` in the DPU program's main
# (templates/dpu_program.c); the WRAM memref as its descriptor's fields.
MAIN_ARGS = {"grid_x": "args->grid_x", "grid_y": "args->grid_y", "grid_z": "args->grid_z",
             "first": "args->first_program", "end": "args->end_program",
             "wram": "(void *)edsl_wram, (void *)edsl_wram, 0, sizeof edsl_wram, 1", "ctx": "(void *)ctx"}


def dpu_program(spec: ExportSpec, built: Build, c_mram_regions: dict) -> str:
    """dpu_program.c; `c_mram_regions`: the functions giving the regions of the
    C functions' variables in MRAM, with their counts (`c_sources`)."""
    prog = built.program
    args = [f"heap + args->{p.cname}" if p.is_pointer else f"args->{p.cname}" for p in spec.params]
    args += [MAIN_ARGS[a.name] for a in abi.ENTRY[abi.MAIN]]
    functions = "\n\n".join(prog.functions)
    if built.record.c_functions:
        functions += "\n" + _c_transfers(prog)
    fills, at = [], 0
    for function, n in c_mram_regions.items():
        fills.append(f"    {function}(&edsl_regions[EDSL_NR_REGIONS + {at}]);")
        at += n
    return fill("dpu_program.c", kernel=built.name, tasklets=spec.num_tasklets, wram_bytes=built.wram,
                c_mram_region_count=at, c_mram_regions="\n".join(fills),
                c_mram_prototypes="\n".join(f"void {f}(uint64_t (*regions)[2]);" for f in c_mram_regions),
                stdio=_stdio(prog),
                route=textwrap.fill(ROUTE_NOTE, 86, initial_indent=" * ", subsequent_indent=" * "),
                needs_math=int(prog.needs_math), types="\n".join(prog.types),
                globals="\n".join(prog.globals), prototypes="\n".join(prog.prototypes),
                functions=functions, main=prog.names[abi.MAIN], main_args=", ".join(args))


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


def launch_config(spec: ExportSpec, kernel: str, c_functions: tuple = (), calls_c: bool = False) -> str:
    """launch_config.h; `c_functions`: the C functions that reach MRAM without
    transfers (`build.direct_mram_functions`), `calls_c`: whether it calls any."""
    g, values = spec.grid or (0, 0, 0), spec.values
    lines = []
    for p in spec.params:
        if p.is_pointer:
            continue
        have = p.name in values
        lines.append(f"#define EDSL_HAVE_DEFAULT_{p.cname} {int(have)}")
        lines.append(f"#define EDSL_DEFAULT_{p.cname} "
                     f"{_scalar_literal(p.type, values[p.name]) if have else 0}")
    return fill("launch_config.h", kernel=kernel, kernel_string=_c_string(kernel), dpus=spec.num_dpus,
                grid_x=g[0], grid_y=g[1], grid_z=g[2], scalars="\n".join(lines) or "/* (none) */",
                c_functions=_c_string(", ".join(c_functions)), calls_c=int(calls_c))


def _scalar_literal(t: str, value) -> str:
    kind = value_kind(t)
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
        return f"0x{dtypes.value_bits(dtypes.by_triton(t), float(v)).value:04x}u"
    if kind == "bool":
        return "1" if v else "0"
    v = int(v)
    if kind == "uint":
        return f"{v}ull"
    return f"{v}ll" if v >= 0 else f"({v + 1}ll - 1)"


def host_runner(spec: ExportSpec, built: Build) -> str:
    record, outputs, prints = built.record, spec.outputs, built.program.needs_stdio
    source = spec.fn.fn.__code__.co_filename
    arrays = spec.arrays
    scalars = [p for p in spec.params if not p.is_pointer]
    kinds = {"int": "KIND_INT", "uint": "KIND_UINT", "float": "KIND_FLOAT", "bool": "KIND_UINT",
             "half": "KIND_FLOAT", "bf16": "KIND_BF16", "fp8": "KIND_UINT"}   # (fp16 is KIND_FLOAT by its size)
    table = ",\n".join(
        f'    {{"{p.name}", {_elem_size(p.elem)}, {kinds.get(p.elem) or kinds[value_kind(p.elem)]}, '
        f'{1 if p.name in outputs else 0}, NULL, 0, 0}}' for p in arrays)
    defaults = "\n".join(
        f"  int have_{p.cname} = EDSL_HAVE_DEFAULT_{p.cname};\n"
        f"  args.{p.cname} = ({c_type(p.type)})EDSL_DEFAULT_{p.cname};" for p in scalars)
    parse = []
    for p in scalars:
        kind = value_kind(p.type)
        if kind == "half":              # the bits by dtypes.float_bits' rule; a value beyond fp16 refused
            set_value = (f"if (!edsl_scalar_half_bits(strtod(value, &end), {int(p.type == 'bf16')}, "
                         f"&args.{p.cname})) {{\n"
                         f'        fprintf(stderr, "{dtypes.beyond_range(p.name, p.type, "%s")}\\n", value);\n'
                         f"        return 2;\n      }}")
        else:
            conv = {"float": "strtod(value, &end)", "uint": "strtoull(value, &end, 0)",
                    "bool": "strtoull(value, &end, 0)", "int": "strtoll(value, &end, 0)"}[kind]
            set_value = f"args.{p.cname} = ({c_type(p.type)}){conv};"
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
    return fill("host_runner.c", kernel=built.name, narrays=len(arrays), defaults=defaults,
                arrays=(f"static struct array arrays[] = {{\n{table}\n}};" if arrays
                        else "static struct array arrays[1];"),
                region_per_array=int(built.per_array),
                parse="\n".join(parse), missing=missing, set_ptrs=set_ptrs,
                asserts=",\n".join(asserts) or "    {NULL, NULL}", sites=sites,
                usage=usage, atomic_names=_atomic_names(), prints=int(prints),
                stdout_bytes=STDOUT_BUFFER_BYTES if prints else 0,
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
    return dtypes.numpy_dtype(dtypes.by_triton(t)).itemsize


def readme(spec: ExportSpec, built: Build) -> str:
    prog, grid = built.program, spec.grid
    arguments = "\n".join(
        f"| `{p.name}` | `{p.type}` | {'array (`data/' + p.name + '.bin`)' if p.is_pointer else 'scalar'}"
        f"{', gathered and checked' if p.name in spec.outputs else ''} |" for p in spec.params)
    data = ("`data/` holds the sample inputs (`<name>.bin`) and the outputs the DPU model "
            "computed for them (`<name>.expected.bin`); the runner checks against them."
            if spec.sampled else
            "No data was exported: write each array argument to `data/<name>.bin` (raw, "
            "little-endian, C order) and give the scalars on the command line.")
    regions = ("the array it addresses" if built.per_array
               else "the arrays (any of them: the kernel's EDSL regions get the whole image)")
    return fill("README.md", kernel=built.name, arguments=arguments,
                grid=f"`{grid[0]},{grid[1]},{grid[2]}`" if grid else "none (give `grid=X,Y,Z`)",
                dpus=spec.num_dpus, tasklets=spec.num_tasklets, data=data,
                math=(", `math.h`" if prog.needs_math else "") + (", `stdio.h`" if prog.needs_stdio else ""),
                dma_max=abi.DMA_MAX_BYTES,
                dma_align=abi.DMA_ALIGN, regions=regions, wram_bytes=built.wram, static_bytes=built.static_bytes,
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


def manifest(spec: ExportSpec, built: Build) -> str:
    """manifest.json: what was exported, and how the program uses WRAM and MRAM."""
    prog, g = built.program, spec.grid
    fields = {
        "kernel": built.name,
        "params": [{"name": p.name, "type": p.type, "c_name": p.cname} for p in spec.params],
        "constants": {k: _jsonable(v) for k, v in spec.constexprs.items()},
        "grid": list(g) if g else None, "num_dpus": spec.num_dpus, "num_tasklets": spec.num_tasklets,
        "outputs": spec.outputs, "debug": spec.debug,
        "mram_regions": "per array" if built.per_array else "whole image",
        "scratch_bytes": built.scratch, "spilled_tiles": list(built.record.spills),
        "wram_bytes": {"kernel_budget": built.budget, "kernel": built.wram, "globals": prog.global_wram_bytes,
                       "buffers_per_tasklet": prog.static_wram_bytes, "runtime": built.runtime_bytes,
                       "c_variables": built.record.c_variable_bytes, "total": built.total_bytes},
        "sample_scalars": {p.name: _jsonable(spec.values[p.name]) for p in spec.params
                           if not p.is_pointer and p.name in spec.values},
        "stdout_buffer_bytes": STDOUT_BUFFER_BYTES if prog.needs_stdio else 0,
    }
    return json.dumps(fields, indent=2) + "\n"


def _jsonable(v):
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    return repr(v)


# The UPMEM C functions' transfers: each source is compiled with the template
# edsl_c_calls.h first, which makes its mram_read / mram_write the program's
# (`_c_transfers`), checked and logged as the kernel's own, so that a launch
# on several DPUs merges what they wrote.


def _c_transfers(prog: P.CProgram) -> str:
    """The functions edsl_c_calls.h names, over the runtime's transfers."""
    read, write, fail = prog.names[abi.MRAM_READ], prog.names[abi.MRAM_WRITE], prog.names[abi.FAIL]
    return textwrap.dedent(f"""
        /* The transfers of the UPMEM C functions the kernel calls (edsl_c_calls.h). */
        void edsl_c_mram_read(const __mram_ptr void *from, void *to, unsigned int nb_of_bytes) {{
          {read}((uint64_t)(uintptr_t)from, (uint64_t)(uintptr_t)to, nb_of_bytes, 0, INT64_MAX, INT64_MAX);
        }}
        void edsl_c_mram_write(const void *from, __mram_ptr void *to, unsigned int nb_of_bytes) {{
          {write}((uint64_t)(uintptr_t)to, (uint64_t)(uintptr_t)from, nb_of_bytes, 0, INT64_MAX, INT64_MAX);
        }}
        void edsl_c_fail(int64_t code, int64_t mram, int64_t wram, int64_t nbytes) {{
          {fail}((void *)edsl_ctx[me()], code, 0, mram, wram, nbytes, 0);
        }}""")


# The DPU model's headers the SDK stand-ins and the C sources an exported
# kernel calls include too: the unaligned copies (mram_unaligned.h), written once.
SHARED_HEADERS = (Path(INCLUDE_DIR) / "edsl_mram_unaligned.h",)


def c_sources(record) -> tuple[dict, list, dict]:
    """The UPMEM C sources the kernel calls, each in a folder `c/<k>/` of its
    own with the files it includes, named as its `#include`s name them, and
    `edsl_c_calls.h` (name -> text); the files the Makefile compiles beside
    the DPU program: for each source, `c/<k>/edsl.c`, which defines its
    macros (`dialect(defines=...)`), includes `edsl_c_calls.h`, then it;
    and, for a source with variables in MRAM, the function its `edsl.c`
    defines to give their [start, end) addresses (`_mram_regions`), with
    their count (name -> count)."""
    from ..base.errors import CompileError
    files: dict[str, str] = {}
    compiled: dict[tuple, str] = {}
    regions: dict[str, int] = {}
    for c in record.c_functions:
        name, defines, texts = c.name, c.defines, c.files
        if (defines, texts) in compiled:
            continue
        folder = f"c/{len(compiled)}"
        for relative, text in texts:
            if relative.startswith(("..", "/")):
                raise CompileError(f"the C function {name} includes '{relative}', outside its source's folder: the "
                                   f"exported project holds the source's folder only")
            files[f"{folder}/{relative}"] = text
        lines = [f"/* {texts[0][0]}, as the kernel calls it (generated by edsl). */"]
        lines += [f"#define {k}" + ("" if v is None else f" {v}") for k, v in defines]
        lines += ['#include "../../edsl_c_calls.h"', f'#include "{texts[0][0]}"']
        if c.mram_variables:
            function = f"edsl_c_mram_regions_{len(compiled)}"
            variables = _mram_variable_names(name, texts[0][0], c.mram_variables)
            lines.append(_mram_regions(function, variables))
            regions[function] = len(variables)
        files[f"{folder}/edsl.c"] = "\n".join(lines + [""])
        compiled[(defines, texts)] = f"{folder}/edsl.c"
    if compiled:
        files["edsl_c_calls.h"] = fill("edsl_c_calls.h")
        files.update((path.name, path.read_text()) for path in SHARED_HEADERS)
    return files, list(compiled.values()), regions


def _mram_variable_names(function: str, source: str, in_mram: tuple) -> list[str]:
    """The names in the source of its variables in MRAM, from their names in
    its LLVM IR (`f.v`: a static variable of function `f`, which no other
    code can name; `v.0`, `v.1`: parts of `v` clang split)."""
    from ..base.errors import CompileError
    names = []
    for llvm_name in in_mram:
        base, _, part = llvm_name.partition(".")
        if part and not part.isdigit():
            raise CompileError(f"the C function {function}: the variable in MRAM '{part}' of function '{base}' "
                               f"({source}): the exported program checks each transfer against the MRAM it may "
                               f"reach, and names the variables to find theirs; declare it outside the function")
        if base not in names:
            names.append(base)
    return names


def _mram_regions(function: str, variables: list[str]) -> str:
    """A C function writing the [start, end) MRAM addresses of `variables`
    into `regions[0 .. n - 1]`: the DPU program adds them to the MRAM its
    transfers may reach (templates/dpu_program.c)."""
    body = [f"  regions[{k}][0] = (uint64_t)(uintptr_t)&{v};\n"
            f"  regions[{k}][1] = regions[{k}][0] + sizeof {v};" for k, v in enumerate(variables)]
    return "\n".join([f"\n/* Its variables in MRAM, each DPU's own: regions of the program's transfers. */",
                      f"void {function}(uint64_t (*regions)[2]) {{", *body, "}"])


def project_files(spec: ExportSpec, built: Build) -> dict[str, str]:
    """The project's files but sim/ and data/: name -> text."""
    sources, compiled, c_mram_regions = c_sources(built.record)
    return {**sources,
        "dpu_program.c": dpu_program(spec, built, c_mram_regions),
        "dpu_abi.h": abi_header(),
        "dma_rules.h": dma_rules_header(),
        "error_messages.h": error_messages_header(),
        "kernel_args.h": args_header(spec, built),
        "launch_config.h": launch_config(spec, built.name, direct_mram_functions(built.record),
                                         bool(built.record.c_functions)),
        "host_runner.c": host_runner(spec, built),
        "merge.h": merge.header(),
        "half_bits.h": merge.HALF_BITS_H.read_text(),
        "Makefile": fill("Makefile", kernel=built.name, tasklets=spec.num_tasklets,
                         stdout_bytes=STDOUT_BUFFER_BYTES if built.program.needs_stdio else 0,
                         c_sources=" ".join(compiled)),
        "README.md": readme(spec, built),
        "manifest.json": manifest(spec, built),
    }
