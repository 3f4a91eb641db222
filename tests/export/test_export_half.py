"""16-bit floats (fp16, bf16) in an exported project: arrays stored as their
bits, arithmetic in f32 with the DPU model's integer conversions printed as C.
Each kernel is exported, built with the host C compiler against the SDK
stand-ins (`make run-sim`), and its outputs compared bit for bit with the DPU
model's and with NumPy's (Hypothesis: every bit pattern as input, NaNs,
infinities and subnormals included); the host runner's reading of 2-byte
floats and its rounding of 16-bit scalars are checked on every pattern."""
import math
import re
import subprocess

import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import HealthCheck, example, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from edsl.target import dtypes
from edsl.base.errors import ArgumentError
from edsl.export import export

from export_helpers import assert_sdk_only, build, export_and_run, needs_cc, output, run, run_on_model
from float_kernels import halve_kernel

pytestmark = needs_cc

HALF = {"fp16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16)}
BLOCK = 64
LIMIT = 16384.0          # exact in both formats


@triton.jit
def half_kernel(x_ptr, y_ptr, f_ptr, arith_ptr, wide_ptr, narrow_ptr, from_int_ptr, to_int_ptr,
                sum_ptr, max_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    f = tl.load(f_ptr + offs, mask=m, other=0.0)
    # * + on 16 bits (each rounded); / promotes to f32 (Triton's semantics), - too
    tl.store(arith_ptr + offs, (x * y + x) / y - y, mask=m)
    tl.store(wide_ptr + offs, x.to(tl.float32) + f, mask=m)              # 16 -> 32 bits
    tl.store(narrow_ptr + offs, f.to(x_ptr.dtype.element_ty), mask=m)    # 32 -> 16 bits
    tl.store(from_int_ptr + offs, (offs * 37 - 5000).to(x_ptr.dtype.element_ty), mask=m)
    inside = (x > -16384.0) & (x < 16384.0)
    tl.store(to_int_ptr + offs, tl.where(inside, x, 0.0).to(tl.int32), mask=m)
    tl.store(sum_ptr + pid, tl.sum(x, axis=0))
    tl.store(max_ptr + pid, tl.max(tl.where(m, x, -float("inf")), axis=0))


def _arrays(dt, x, y, f):
    n = x.size
    blocks = triton.cdiv(n, BLOCK)
    outs = [np.zeros(n, dt), np.zeros(n, np.float32), np.zeros(n, dt), np.zeros(n, dt),
            np.zeros(n, np.int32), np.zeros(blocks, dt), np.zeros(blocks, dt)]
    return [x, y, f, *outs]


OUT_NAMES = ["arith_ptr", "wide_ptr", "narrow_ptr", "from_int_ptr", "to_int_ptr", "sum_ptr", "max_ptr"]
DPUS, TASKLETS = 2, 3


@pytest.fixture(scope="module", params=["fp16", "bf16"])
def half_project(request, tmp_path_factory):
    """(type name, folder) of `half_kernel` exported for one 16-bit float type,
    built, and run on the sample data it was exported with."""
    name = request.param
    dt = HALF[name]
    rng = np.random.default_rng(7)
    n = 300
    x = (rng.standard_normal(n) * 40).astype(dt)
    y = (rng.standard_normal(n) * 4).astype(dt)
    f = (rng.standard_normal(n) * 100).astype(np.float32)
    folder = tmp_path_factory.mktemp(name) / "project"
    export(half_kernel, folder, sample_args=(*_arrays(dt, x, y, f), n), constants={"BLOCK": BLOCK},
           grid=(triton.cdiv(n, BLOCK),), num_dpus=DPUS, num_tasklets=TASKLETS)
    assert_sdk_only(folder)
    build(folder)
    r = run(folder)
    assert r.returncode == 0, r.stdout + r.stderr
    for out in OUT_NAMES:                    # the runner's own check, on 2-byte floats too
        assert re.search(rf"^{out}: OK .* max abs error 0\)$", r.stdout, re.M), r.stdout
    return name, folder


def _bits(a):
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


def _same_bits(got, want):
    np.testing.assert_array_equal(_bits(got), _bits(want))


def _nan(a):
    """Where `a` (of any float type; an integer array: nowhere) holds a NaN."""
    if np.issubdtype(a.dtype, np.integer):
        return np.zeros(a.shape, bool)
    return np.isnan(a.astype(np.float64))


def _same_bits_or_nan(got, want):
    """The same bits, but for NaNs: which NaN an f32 operation on NaNs or
    infinities gives (sign, payload) IEEE 754 leaves open, and the model's
    compiler and the C compiler order operands as they like."""
    nan = _nan(want)
    np.testing.assert_array_equal(_nan(got), nan)
    _same_bits(got[~nan], want[~nan])


def _run_exported(folder, tmp_path, args):
    """The exported runner on `args` (written as data), its outputs by name."""
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir(exist_ok=True)
    for name, a in zip(["x_ptr", "y_ptr", "f_ptr", *OUT_NAMES], args):
        (data / f"{name}.bin").write_bytes(np.ascontiguousarray(a).tobytes())
    n = args[0].size
    r = run(folder, f"data={data}", f"out={out}", f"n={n}", f"grid={triton.cdiv(n, BLOCK)},1,1")
    assert r.returncode == 0, r.stdout + r.stderr
    return {name: np.frombuffer((out / f"{name}.bin").read_bytes(), like.dtype)
            for name, like in zip(OUT_NAMES, args[3:])}


def _model(args):
    copies = [a.copy() for a in args]
    n = args[0].size
    half_kernel[(triton.cdiv(n, BLOCK),)](*copies, n, BLOCK=BLOCK, num_dpus=DPUS, num_tasklets=TASKLETS)
    return dict(zip(OUT_NAMES, copies[3:]))


@settings(max_examples=50, deadline=None)
@example(bits=np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x7C00, 0xFC00, 0x7E00, 0x7BFF, 0x3C00, 0x03FF,
                        0x7F80, 0xFF80, 0x7FC0, 0x0080, 0x007F, 0x3F80], np.uint16),
         f_seed=0)
@given(bits=st.integers(1, 300).flatmap(lambda n: arrays(np.uint16, 2 * n)), f_seed=st.integers(0, 2**16))
def test_half_kernel_is_the_models_bit_for_bit(half_project, tmp_path_factory, bits, f_seed):
    """Any 16-bit patterns as x and y: every output of the exported program
    has the model's bits, and NumPy's values (ml_dtypes for bf16)."""
    name, folder = half_project
    dt = HALF[name]
    n = bits.size // 2
    x, y = bits[:n].view(dt), bits[n:].view(dt)
    rng = np.random.default_rng(f_seed)
    f = (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)).astype(np.float32)
    args = _arrays(dt, x, y, f)
    got = _run_exported(folder, tmp_path_factory.mktemp("run"), args)
    model = _model(args)
    for out in OUT_NAMES:
        _same_bits_or_nan(got[out], model[out])
    # NumPy (ml_dtypes for bf16): each 16-bit op computed in f32 and rounded.
    with np.errstate(all="ignore"):
        x32, y32, x64 = x.astype(np.float32), y.astype(np.float32), x.astype(np.float64)
        _same_bits_or_nan(got["arith_ptr"], ((x * y + x).astype(np.float32) / y32 - y32).astype(dt))
        _same_bits_or_nan(got["wide_ptr"], x32 + f)
        _same_bits_or_nan(got["narrow_ptr"], f.astype(dt))
        ints = np.arange(n, dtype=np.int32) * 37 - 5000          # (exact in f32)
        _same_bits_or_nan(got["from_int_ptr"], ints.astype(np.float32).astype(dt))
        inside = (x64 > -LIMIT) & (x64 < LIMIT)
        np.testing.assert_array_equal(got["to_int_ptr"], np.where(inside, x64, 0).astype(np.int32))
        for b in range(triton.cdiv(n, BLOCK)):
            block = x[b * BLOCK:(b + 1) * BLOCK].astype(np.float64)
            top = got["max_ptr"][b].astype(np.float64)
            if np.isnan(block).any():
                continue                   # (a NaN's place in the order decides; the model's bits above)
            assert top == block.max()
            total = got["sum_ptr"][b].astype(np.float64)
            if np.isfinite(block).all() and np.isfinite(total) and np.abs(block).max() < 1000:
                eps = 2.0 ** -(11 if name == "fp16" else 8)
                assert abs(total - block.sum()) <= 4 * BLOCK * eps * (np.abs(block).sum() + 1)


# -- the host runner's 2-byte floats --------------------------------------------
def _c_function(text, name):
    """The text of C function `name` in `text` (from its line to its closing brace)."""
    start = re.search(rf"^static [^\n]*\b{name}\(", text, re.M).start()
    end = text.index("\n}\n", start) + 3
    return text[start:end]


def test_runner_reads_every_16_bit_pattern_exactly(half_project, tmp_path):
    """The runner's `half_value` (merge.h; used by the merge's combine, and by
    element() and compare()) gives every pattern's value exactly, without a
    16-bit float type."""
    name, folder = half_project
    dt = HALF[name]
    man, bias = (10, 15) if name == "fp16" else (7, 127)
    source = _c_function((folder / "merge.h").read_text(), "half_value")
    (tmp_path / "t.c").write_text("#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n" + source + f"""
int main(void) {{
  for (uint32_t b = 0; b < 65536; b++) printf("%a\\n", half_value((uint16_t)b, {man}, {bias}));
  return 0;
}}""")
    r = subprocess.run(["cc", "-O1", "-std=gnu11", "-o", "t", "t.c", "-lm"], cwd=tmp_path, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    got = np.array([float.fromhex(s) for s in subprocess.run(["./t"], cwd=tmp_path, capture_output=True,
                                                             text=True).stdout.split()])
    with np.errstate(invalid="ignore"):
        want = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(dt).astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    keep = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[keep]), np.signbit(want[keep]))
    np.testing.assert_array_equal(got[keep], want[keep])


def test_runner_checks_2_byte_floats_to_their_precision(half_project, tmp_path):
    """compare(): a unit in the last place passes, two do not; NaN matches
    NaN only; the mismatch names the values."""
    name, folder = half_project
    dt = HALF[name]
    expected = (folder / "data" / "arith_ptr.expected.bin").read_bytes()
    want = np.frombuffer(expected, dt).copy()
    data = tmp_path / "data"
    data.mkdir()
    for f in (folder / "data").iterdir():
        (data / f.name).write_bytes(f.read_bytes())
    k = int(np.flatnonzero(np.isfinite(want.astype(np.float64)) & (want.astype(np.float64) != 0))[0])

    def check(value_bits):
        edited = want.copy()
        edited.view(np.uint16)[k] = value_bits
        (data / "arith_ptr.expected.bin").write_bytes(edited.tobytes())
        return run(folder, f"data={data}", f"out={tmp_path / 'out'}")

    w = int(want.view(np.uint16)[k])
    assert check(w + 1).returncode == 0
    r = check(w + 2)
    two_units = np.array([w + 2], np.uint16).view(dt)[0]
    assert r.returncode == 1 and "arith_ptr: MISMATCH in 1 of 300 elements" in r.stdout
    assert f"(first at {k}: got {float(want[k]):.9g}, expected {float(two_units):.9g})" in r.stdout
    nan = 0x7E00 if name == "fp16" else 0x7FC0
    assert check(nan).returncode == 1


# -- 16-bit float scalars --------------------------------------------------------
@triton.jit
def scale_kernel(x_ptr, out_ptr, a_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * a, mask=m)
    tl.store(a_ptr, a)


# The same with the scalar's type annotated: a Python float for `a` then
# becomes a 16-bit scalar, as on Triton's GPU launcher.
@triton.jit
def scale_fp16_kernel(x_ptr, out_ptr, a_ptr, a: tl.float16, n, BLOCK: tl.constexpr):
    scale_kernel(x_ptr, out_ptr, a_ptr, a, n, BLOCK)


@triton.jit
def scale_bf16_kernel(x_ptr, out_ptr, a_ptr, a: tl.bfloat16, n, BLOCK: tl.constexpr):
    scale_kernel(x_ptr, out_ptr, a_ptr, a, n, BLOCK)


SCALE = {"fp16": scale_fp16_kernel, "bf16": scale_bf16_kernel}


@pytest.fixture(scope="module", params=["fp16", "bf16"])
def scale_project(request, tmp_path_factory):
    name = request.param
    dt = HALF[name]
    x = np.linspace(-3, 3, 100).astype(dt)
    folder = tmp_path_factory.mktemp(name) / "project"
    a = dt.type(1.5)                           # a 16-bit scalar: its type from the sample
    export(scale_kernel, folder, sample_args=(x, np.zeros_like(x), np.zeros(1, dt), a, 100),
           constants={"BLOCK": 128}, grid=(1,))
    assert "uint16_t a EDSL_ARG;  /* " + name + " */" in (folder / "kernel_args.h").read_text()
    build(folder)
    r = run(folder)                            # the sample's value, as the default
    assert r.returncode == 0 and "MISMATCH" not in r.stdout, r.stdout + r.stderr
    return name, folder, x


@settings(max_examples=200, deadline=None)
@example(value=1 + 2 ** -11 + 2 ** -40)     # above a tie of fp16: up
@example(value=1 + 2 ** -8 + 2 ** -40)      # bf16: a tie once rounded to f32, then truncated
@example(value=1 + 3 * 2 ** -9)             # bf16: truncated, where rounding would go up
@example(value=65504.0)                     # fp16's largest finite value
@example(value=65520.0)                     # fp16: rounds beyond its range, refused
@example(value=2.0 ** -25)                  # half of fp16's smallest subnormal: to even, zero
@example(value=3 * 2.0 ** -26)              # ... above it: the smallest subnormal
@example(value=-0.0)
@example(value=math.nan)
@example(value=-math.inf)
@given(value=st.floats(allow_nan=False) | st.floats(-70000, 70000) | st.floats(-1e-4, 1e-4))
def test_half_scalar_from_the_command_line_is_rounded_as_the_model_rounds(scale_project, tmp_path_factory,
                                                                          value):
    """`a=value` on the runner's command line: the scalar's bits are those of
    `dtypes.float_bits` (Triton's launcher's rule), and so is the kernel's
    result; a value beyond fp16 is refused by both in the same words."""
    name, folder, x = scale_project
    dt = HALF[name]
    out = tmp_path_factory.mktemp("out")
    r = run(folder, f"a={value!r}", f"out={out}", "check=0")
    model = [x.copy(), np.zeros_like(x), np.zeros(1, dt)]
    try:
        bits = dtypes.float_bits(dtypes.by_triton(name), value)
    except OverflowError:
        assert name == "fp16" and abs(value) >= 65520
        assert r.returncode == 2 and dtypes.beyond_range("a", name, repr(value)) in r.stderr, r.stderr
        with pytest.raises(ArgumentError, match=re.escape(dtypes.beyond_range("a", name, repr(value)))):
            SCALE[name][(1,)](*model, value, 100, BLOCK=128)
        return
    assert r.returncode == 0, r.stdout + r.stderr
    got_a = np.frombuffer((out / "a_ptr.bin").read_bytes(), np.uint16)
    assert int(got_a[0]) == bits
    SCALE[name][(1,)](*model, value, 100, BLOCK=128)      # a Python float, as Triton's launcher takes it
    _same_bits(np.frombuffer((out / "out_ptr.bin").read_bytes(), dt), model[1])
    _same_bits(np.frombuffer((out / "a_ptr.bin").read_bytes(), dt), model[2])


# -- 8-bit floats -------------------------------------------------------------------
@needs_cc
@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"])
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(bits=st.lists(st.integers(0, 255), min_size=1, max_size=80))
def test_8_bit_float_arrays_export_bit_for_bit(tmp_path_factory, dtype, bits):
    """8-bit float arrays are stored as their bits and converted as the model
    converts them: the exported run's outputs are the model's, bit for bit."""
    dt = np.dtype(getattr(ml_dtypes, dtype))
    x = np.array(bits, np.uint8).view(dt)
    args = (x, np.zeros(len(x), dt), len(x))
    want = run_on_model(halve_kernel, args, {"BLOCK": 32}, (-(-len(x) // 32),))[1]
    folder = tmp_path_factory.mktemp("fp8") / "p"
    export_and_run(folder, halve_kernel, args, {"BLOCK": 32}, (-(-len(x) // 32),))
    np.testing.assert_array_equal(output(folder, "y_ptr", want).view(np.uint8), want.view(np.uint8))


def test_fp8e4b15_arrays_are_refused_at_the_callers_line(tmp_path):
    """fp8e4b15 has no NumPy dtype that Triton takes as it (Triton reads uint8
    data reinterpreted): an `ArgumentError` at the line calling `edsl.export`."""
    with pytest.raises(ArgumentError, match="unsupported element type 'fp8e4b15'") as err:
        export(scale_kernel, tmp_path / "p", constants={"BLOCK": 4},
               signature={"x_ptr": "*fp8e4b15", "out_ptr": "*fp16", "a_ptr": "*fp16", "a": "fp16", "n": "i32"})
    assert (err.value.loc.filename, err.value.loc.lineno) == (__file__, err.tb.tb_lineno)
    assert not (tmp_path / "p").exists()
