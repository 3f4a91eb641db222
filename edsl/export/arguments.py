"""The kernel's arguments for an export: its parameters resolved, from a
signature or sample arguments, into `Param`s (Python name, C field, Triton
type), the C type and kind each is stored and read as, and the checked
`ExportSpec` every step of an export is handed."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..base.errors import ArgumentError, caller_location
from ..target import dpu as abi
from ..target import dtypes
from . import printer as P

# The Triton types an export takes, in the order its errors list them; their
# facts come from the one type table (edsl.target.dtypes).
EXPORTED = ("i1", "u1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "fp32", "fp64", "fp16", "bf16",
            # (fp8e4b15 arrays have no NumPy dtype Triton takes: Triton reads them as uint8 reinterpreted)
            "fp8e4nv", "fp8e5", "fp8e4b8", "fp8e5b16")


def c_type(t: str) -> str:
    """The C type an export stores a value of Triton type `t` in. 16- and
    8-bit floats are stored as their bits: the C of the DPU toolchain has no
    16-bit float type, and the program converts them as the model does
    (edsl.lowering.floats: integer code, round to nearest even); booleans
    as a byte."""
    s = dtypes.by_triton(t)
    native = s.is_int and s.width > 1 or s.mlir in dtypes.NATIVE_FLOATS
    return s.c if native else f"uint{8 * s.nbytes}_t"


def value_kind(t: str) -> str:
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


def _check_counts(num_dpus, num_tasklets) -> None:
    if not isinstance(num_dpus, int) or isinstance(num_dpus, bool) or not 1 <= num_dpus <= abi.MAX_DPUS:
        raise ArgumentError(f"num_dpus must be an integer from 1 to {abi.MAX_DPUS:,} (the largest UPMEM "
                            f"system), not {num_dpus!r}", caller_location())
    if not isinstance(num_tasklets, int) or not 1 <= num_tasklets <= abi.MAX_TASKLETS:
        raise ArgumentError(f"num_tasklets must be an integer from 1 to {abi.MAX_TASKLETS}, "
                            f"not {num_tasklets!r}")


def _outputs(outputs, fn, params: list[Param]) -> list[str]:
    """The array arguments to gather and check (default: all)."""
    arrays = [p.name for p in params if p.is_pointer]
    if outputs is None:
        return list(arrays)
    outputs = [outputs] if isinstance(outputs, str) else list(outputs)
    bad = [o for o in outputs if o not in arrays]
    if bad:
        raise ArgumentError(f"outputs {bad} are not array arguments of kernel '{fn.__name__}' "
                            f"(arrays: {arrays})")
    return outputs


@dataclass(frozen=True)
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
    def resolve(cls, kernel, options: Mapping[str, Any]) -> ExportSpec:
        """The spec of exporting `kernel` with `options`, the keyword arguments
        of `export` (signature, constants, sample_args, grid, num_dpus,
        num_tasklets, outputs, debug)."""
        _check_counts(options["num_dpus"], options["num_tasklets"])
        sample_args = options["sample_args"]
        fn, params, constexprs, values = resolve_arguments(kernel, options["signature"], options["constants"],
                                                           sample_args)
        g = _grid(options["grid"], values, constexprs)
        outputs = _outputs(options["outputs"], fn, params)
        if sample_args is not None and g is None:
            raise ArgumentError("export with sample_args needs the launch grid (grid=...) to compute "
                                "the expected outputs")
        return cls(fn, params, constexprs, values, g, options["num_dpus"], options["num_tasklets"], outputs,
                   bool(options["debug"]), sample_args is not None)

    @property
    def arrays(self) -> list[Param]:
        return [p for p in self.params if p.is_pointer]
