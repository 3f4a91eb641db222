"""The `edsl` command: `edsl export KERNEL OUT_DIR ...` (see `edsl export --help`)."""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import sys
from pathlib import Path

from ..base.errors import ArgumentError, EdslError
from ..base.version import version

_EXAMPLE = """\
examples:
  edsl export edsl.export.example:add_kernel add_dpu \\
      --signature x_ptr='*fp32' y_ptr='*fp32' out_ptr='*fp32' n=i32 \\
      --constant BLOCK=1024 --grid 98 --num-dpus 4 \\
      --data x_ptr=100000 y_ptr=100000 out_ptr=100000 n=100000
  make -C add_dpu run-sim
  edsl export mypkg.kernels:softmax_kernel softmax_dpu --sample mypkg.kernels:export_sample

--data gives every non-constexpr argument a sample value: an array as a .npy
file or a length (random values of the signature's type), a scalar as its
value; they are written to OUT_DIR/data with the outputs a run on the DPU
model gives, which `make run-sim` checks. Without it, the command prints
the files and arguments a run needs. --sample names a function returning a
dict of export() keyword arguments (e.g. sample_args=(...), constants={...},
grid=(...)); options given on the command line take precedence.
"""


def _load(spec: str, what: str):
    """`path/to/file.py:name` or `package.module:name` -> the object."""
    if ":" not in spec:
        raise ArgumentError(f"{what} must be given as FILE.py:NAME or MODULE:NAME, not {spec!r}")
    where, _, name = spec.rpartition(":")
    if where.endswith(".py") or "/" in where or "\\" in where:
        path = Path(where).resolve()
        if not path.is_file():
            raise ArgumentError(f"{what}: no file {where}")
        mod_name = f"_edsl_cli_{path.stem}"
        module = sys.modules.get(mod_name)
        if module is None:
            spec_ = importlib.util.spec_from_file_location(mod_name, path)
            module = importlib.util.module_from_spec(spec_)
            sys.modules[mod_name] = module
            sys.path.insert(0, str(path.parent))
            try:
                spec_.loader.exec_module(module)
            except Exception:
                del sys.modules[mod_name]
                raise
            finally:
                sys.path.remove(str(path.parent))
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as err:
            raise ArgumentError(f"{what}: cannot import {where}: {err}") from None
    try:
        return getattr(module, name)
    except AttributeError:
        raise ArgumentError(f"{what}: {where} has no attribute {name!r}") from None


def _pairs(items, what: str, parse_value) -> dict:
    out = {}
    for item in items or []:
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise ArgumentError(f"{what} must be NAME=VALUE, not {item!r}")
        out[name.strip()] = parse_value(value.strip())
    return out


def _literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _grid(text: str):
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ArgumentError(f"--grid must be X[,Y[,Z]] integers, not {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="edsl", description="edsl command-line tools")
    parser.add_argument("--version", action="version", version=f"edsl {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="export a Triton kernel as an UPMEM SDK project",
                        description="Write a Triton kernel as a self-contained UPMEM SDK project "
                                    "(DPU program in C, host runner, Makefile, README).",
                        epilog=_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    ex.add_argument("kernel", help="the @triton.jit kernel: FILE.py:NAME or MODULE:NAME")
    ex.add_argument("out_dir", help="folder to create")
    ex.add_argument("--signature", nargs="+", metavar="NAME=TYPE",
                    help="types of the non-constexpr parameters (*fp32, i32, ...)")
    ex.add_argument("--constant", nargs="+", metavar="NAME=VALUE",
                    help="values of the tl.constexpr parameters")
    ex.add_argument("--data", nargs="+", metavar="NAME=VALUE",
                    help="sample values of the non-constexpr arguments (an array: FILE.npy, or a "
                         "length for random values; a scalar: its value), written to OUT_DIR/data "
                         "with the expected outputs")
    ex.add_argument("--sample", metavar="FUNC",
                    help="FILE.py:NAME or MODULE:NAME of a function returning export() keyword "
                         "arguments (sample_args, constants, grid, ...)")
    ex.add_argument("--grid", type=str, help="launch grid X[,Y[,Z]]")
    ex.add_argument("--num-dpus", type=int, help="default number of DPUs (default 1)")
    ex.add_argument("--num-tasklets", type=int, help="tasklets per DPU (default 1)")
    ex.add_argument("--outputs", type=str, help="comma-separated array arguments to gather "
                                                "(default: all)")
    ex.add_argument("--debug", action="store_true",
                    help="compile tl.device_assert checks (as kernel[grid](..., debug=True))")
    ex.add_argument("--overwrite", action="store_true", help="replace OUT_DIR if it exists")
    sdk = sub.add_parser("sdk", help="write the SDK stand-ins as an SDK installation",
                         description="Write the UPMEM SDK stand-ins to OUT_DIR as an SDK installation: "
                                     "bin/dpu-upmem-dpurte-clang and bin/dpu-pkg-config build a project "
                                     "written for the SDK, with its own Makefile, for the host.",
                         epilog="example:\n  edsl sdk ~/upmem-sim\n  PATH=~/upmem-sim/bin:$PATH make -C VA "
                                "NR_DPUS=4 NR_TASKLETS=16\n  (cd VA && ./bin/host_code)",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    sdk.add_argument("out_dir", help="folder to create")
    sdk.add_argument("--overwrite", action="store_true", help="replace OUT_DIR if it exists")
    mode = sdk.add_mutually_exclusive_group()
    mode.add_argument("--counting", action="store_true",
                      help="build DPU programs that count what they execute, for the time estimate "
                           "(edsl.export.counting_build; needs the ziglang package)")
    mode.add_argument("--model", action="store_true",
                      help="run DPU programs on the DPU model, which checks their transfers and races between "
                           "tasklets and reports faults at their line (edsl.sdk_model; needs the "
                           "ziglang package)")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "export":
            return _export(args)
        if args.command == "sdk":
            from .stand_ins import write_stand_ins
            out = write_stand_ins(args.out_dir, overwrite=args.overwrite, counting=args.counting,
                                  model=args.model)
            print(f"wrote the SDK stand-ins to {out}: put {out.resolve() / 'bin'} first on PATH to build with them")
            return 0
    except EdslError as err:
        print(f"edsl {args.command}: error: {err}", file=sys.stderr)
        return 2
    return 1


def _export(args) -> int:
    from .project import export
    kernel = _load(args.kernel, "kernel")
    kwargs: dict = {}
    if args.sample:
        make = _load(args.sample, "--sample")
        kwargs = dict(make())
    if args.signature:
        kwargs["signature"] = _pairs(args.signature, "--signature", str)
    if args.constant:
        kwargs["constants"] = {**kwargs.get("constants", {}),
                               **_pairs(args.constant, "--constant", _literal)}
    if args.grid:
        kwargs["grid"] = _grid(args.grid)
    if args.data:
        kwargs["sample_args"] = _sample_values(_pairs(args.data, "--data", str), kwargs.get("signature"))
    if args.num_dpus is not None:
        kwargs["num_dpus"] = args.num_dpus
    if args.num_tasklets is not None:
        kwargs["num_tasklets"] = args.num_tasklets
    if args.outputs:
        kwargs["outputs"] = [x.strip() for x in args.outputs.split(",") if x.strip()]
    if args.debug:
        kwargs["debug"] = True
    if args.overwrite:
        kwargs["overwrite"] = True
    # The command line is the caller: errors keep no Python line.
    result = export.__wrapped__(kernel, args.out_dir, **kwargs)
    print(f"exported kernel '{result.kernel}' to {result.path}")
    arrays = [p.name for p in result.params if p.is_pointer]
    if all((result.path / "data" / f"{name}.bin").is_file() for name in arrays):
        print(f"  hardware (UPMEM SDK):  make -C {result.path} run")
        print(f"  anywhere (simulated):  make -C {result.path} run-sim")
        return 0
    scalars = " ".join(f"{p.name}=VALUE" for p in result.params if not p.is_pointer)
    run_args = f' RUN_ARGS="{scalars}"' if scalars else ""
    print(f"  no sample data (--data): put each array's raw bytes in {result.path}/data/ "
          f"({', '.join(n + '.bin' for n in arrays)}), then")
    print(f"  hardware (UPMEM SDK):  make -C {result.path} run{run_args}")
    print(f"  anywhere (simulated):  make -C {result.path} run-sim{run_args}")
    return 0


def _sample_values(given: dict, signature: dict | None) -> dict:
    """--data's values: arrays from .npy files or random ones of a length (of
    their signature's type), scalars as literals."""
    import numpy as np

    from ..target import dtypes
    rng = np.random.default_rng(0)
    out = {}
    for name, text in given.items():
        if text.endswith(".npy"):
            try:
                out[name] = np.load(text, allow_pickle=False)
            except (OSError, ValueError) as err:
                raise ArgumentError(f"--data {name}: cannot read {text}: {err}") from None
            continue
        kind = (signature or {}).get(name, "")
        if not kind.startswith("*"):
            out[name] = _literal(text)
            continue
        scalar = dtypes.by_triton(kind[1:])
        if scalar is None or not text.isdigit():
            raise ArgumentError(f"--data {name}={text}: an array is a .npy file or a length (of its "
                                f"signature's type, {kind} here)")
        dtype = dtypes.numpy_dtype(scalar)
        if scalar.is_float:
            values = rng.standard_normal(int(text)).astype(dtype)
        else:
            values = rng.integers(0, 2 if scalar.width == 1 else 100, int(text)).astype(dtype)
        out[name] = values
    return out


if __name__ == "__main__":
    sys.exit(main())
