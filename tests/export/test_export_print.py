"""`tl.device_print` in an exported project: the DPU program prints with the
SDK's DPU `printf` (its log buffer in MRAM) and the host runner prints each
DPU's log after the launch (`dpu_log_read`), DPU by DPU. `make sim`'s runner
prints the lines the DPU model prints, in the model's order (a kernel that
prints runs its DPUs one by one, in DPU order), and computes the same arrays.
A conversion the DPU's printf cannot print is a `CompileError` naming the
kernel's line; hex floats (`%a`, which it has not) are formatted by the
program."""
import pathlib
import re
import subprocess

import numpy as np
import pytest
import triton
import triton.language as tl
from mlir import ir

import edsl
from edsl.base.errors import CompileError
from edsl.target.dpu import dpu_programs
from edsl.export.printer import print_module
from export_helpers import NOT_ON_THE_DPU, SDK_HEADERS, build, build_and_run, needs_cc, output, run


@triton.jit
def scaled(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.device_print("x", x)                        # a float tensor
    tl.device_print("offs", offs)                  # an int tensor
    tl.device_print("sum", tl.sum(x, 0))           # a float scalar
    tl.device_print("pid", pid)                    # an int scalar
    tl.store(out_ptr + offs, x * 2.0 + 1.0, mask=m)


@triton.jit
def tiles(x_ptr, y_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * M + tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)           # int16
    y = tl.load(y_ptr + rows * N + cols)           # float16
    tl.device_print("x ", x, hex=True)             # zero-padded hex of a narrow int
    tl.device_print("y ", y, hex=True)             # %a of a half
    tl.device_print("50% ", x, y)                  # several operands, a '%' in the prefix
    tl.store(out_ptr + rows * N + cols, x.to(tl.float32) * y.to(tl.float32))


@triton.jit
def unsigned_and_wide(u_ptr, w_ptr, out_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    u = tl.load(u_ptr + offs)                      # uint32
    w = tl.load(w_ptr + offs)                      # int64 / float64
    tl.device_print("u", u)
    tl.device_print("w", w)
    tl.device_print("wh", w, hex=True)
    tl.store(out_ptr + offs, w + u.to(w.dtype))


@triton.jit
def pointers(x_ptr, N: tl.constexpr):
    tl.device_print("ptr ", x_ptr + tl.arange(0, N))


def assert_sdk_and_stdio_only(folder):
    """The DPU program includes only the SDK's headers, its stdio.h among them,
    and uses nothing else of the C library than its printf."""
    text = (pathlib.Path(folder) / "dpu_program.c").read_text()
    includes = set(re.findall(r'#\s*include\s*[<"]([^>"]+)[>"]', text))
    assert includes <= SDK_HEADERS | {"stdio.h", "kernel_args.h", "dpu_abi.h"}, includes
    code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    code = re.sub(r'"(\\.|[^"\\])*"', '""', code)             # (the format strings)
    code = re.sub(r"#\s*include\s*<stdio\.h>|\bprintf\(", "", code)
    found = re.search(NOT_ON_THE_DPU, code)
    assert found is None, found and found.group(0)
    assert "STDOUT_BUFFER_INIT(EDSL_STDOUT_BUFFER_BYTES);" in text


def model_and_export(capfd, tmp_path, kernel, args, constants, grid, dpus, tasklets, outputs=None):
    """(the lines the model prints, the arguments after its run, the runner's
    CompletedProcess) for a launch on the model and the exported project."""
    ran = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    capfd.readouterr()
    kernel[grid](*ran, **constants, num_dpus=dpus, num_tasklets=tasklets)
    model = capfd.readouterr().out.splitlines()
    folder = tmp_path / "p"
    edsl.export(kernel, folder, sample_args=args, constants=constants, grid=grid, num_dpus=dpus,
                num_tasklets=tasklets, outputs=outputs)
    capfd.readouterr()                     # (the export's own run on the model)
    assert_sdk_and_stdio_only(folder)
    r = build_and_run(folder)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "MISMATCH" not in r.stdout
    return model, ran, r


def printed(stdout: str) -> list[str]:
    """The kernel's lines in the runner's output (without its DPU headers and its own lines)."""
    return [line for line in stdout.splitlines() if line.startswith("pid (")]


def by_dpu(lines: list[str], dpus: int, grid_x: int) -> list[str]:
    """`lines` in the order of the DPUs, each running its block of programs in turn."""
    def dpu_of(line):
        x, y, z = map(int, re.match(r"pid \((\d+), (\d+), (\d+)\)", line).groups())
        p = x + grid_x * y + 0 * z
        return next(d for d in range(dpus) if p in dpu_programs(d, grid_x, dpus))
    return sorted(lines, key=dpu_of)


@needs_cc
@pytest.mark.parametrize("programs, dpus, tasklets", [(1, 1, 1), (3, 1, 1), (4, 2, 1), (5, 2, 3), (4, 1, 4)])
def test_scalars_and_tensors_print_as_on_the_model(capfd, tmp_path, programs, dpus, tasklets):
    rng = np.random.default_rng(programs * 10 + dpus)
    block, n = 8, programs * 8 - 3
    x = (rng.standard_normal(n) * 100).astype(np.float32)
    out = np.zeros(n, np.float32)
    model, ran, r = model_and_export(capfd, tmp_path, scaled, (x, out, n), {"BLOCK": block}, (programs,),
                                     dpus, tasklets, outputs=["out_ptr"])
    lines = printed(r.stdout)
    assert all(line.startswith("pid (") for line in model)
    assert sum(" x: " in line for line in model) == sum(" offs: " in line for line in model) == programs * block
    assert lines == model                                  # the same lines, in the same order
    assert lines == by_dpu(model, dpus, programs)
    assert r.stdout.count("=== DPU#") == min(dpus, programs)
    assert "pid (0, 0, 0) idx (0) x: " + f"{float(x[0]):f}" in lines
    np.testing.assert_array_equal(output(tmp_path / "p", "out_ptr", out), ran[1])


@needs_cc
@pytest.mark.parametrize("programs, dpus, tasklets", [(1, 1, 1), (3, 2, 2)])
def test_hex_2d_and_several_operands(capfd, tmp_path, programs, dpus, tasklets):
    rng = np.random.default_rng(7)
    m, n = 2, 4
    x = rng.integers(-300, 300, (programs * m, n)).astype(np.int16)
    y = (rng.standard_normal((programs * m, n)) * 10).astype(np.float16)
    y.flat[0], y.flat[1] = np.float16(-0.0), np.float16(np.inf)
    out = np.zeros((programs * m, n), np.float32)
    model, ran, r = model_and_export(capfd, tmp_path, tiles, (x, y, out), {"M": m, "N": n}, (programs,),
                                     dpus, tasklets, outputs=["out_ptr"])
    lines = printed(r.stdout)
    assert lines == model and len(lines) == programs * m * n * 4
    assert "pid (0, 0, 0) idx (0, 0) y: -0x0p+0" in lines and "pid (0, 0, 0) idx (0, 1) y: inf" in lines
    assert any(re.fullmatch(r"pid \(0, 0, 0\) idx \(0, 0\) x: 0x[0-9a-f]{4,8}", line) for line in lines)
    assert any(line.startswith("pid (0, 0, 0) idx (0, 0) 50%: (operand 1) ") for line in lines)
    np.testing.assert_array_equal(output(tmp_path / "p", "out_ptr", out), ran[2])


@needs_cc
@pytest.mark.parametrize("wide", [np.int64, np.float64])
def test_unsigned_and_64_bit_values(capfd, tmp_path, wide):
    n = 4
    u = np.array([0, 1, 2**31, 2**32 - 1, 5, 6, 7, 8], np.uint32)
    if wide == np.int64:
        w = np.array([-2**63, 2**63 - 1, -1, 0, 1, 2, 3, 4], np.int64)
    else:
        w = np.array([1e300, -1e-310, np.nan, 0.1, -2.5, 3.0, 1e-5, 7.0], np.float64)
    out = np.zeros(8, wide)
    model, ran, r = model_and_export(capfd, tmp_path, unsigned_and_wide, (u, w, out), {"N": n}, (2,), 2, 2,
                                     outputs=["out_ptr"])
    lines = printed(r.stdout)
    assert lines == model
    assert f"pid (0, 0, 0) idx (3) u: {2**32 - 1}" in lines
    np.testing.assert_array_equal(output(tmp_path / "p", "out_ptr", out), ran[2])


@needs_cc
def test_pointers_print_their_addresses(capfd, tmp_path):
    """(MRAM addresses on the DPU, host addresses on the model: the same steps)"""
    x = np.zeros(8, np.int32)
    model, _, r = model_and_export(capfd, tmp_path, pointers, (x,), {"N": 8}, (1,), 1, 1)

    def addresses(lines):
        found = [re.fullmatch(r"pid \(0, 0, 0\) idx \((\d)\) ptr: 0x([0-9a-f]+)", line) for line in lines]
        assert all(found), lines
        return {int(f[1]): int(f[2], 16) for f in found}
    for got in (addresses(model), addresses(printed(r.stdout))):
        assert sorted(got) == list(range(8)) and all(got[i] - got[0] == 4 * i for i in range(8))


@needs_cc
def test_a_log_larger_than_its_buffer_is_an_error(capfd, tmp_path):
    """As with the SDK: a log that wrapped around the DPU's buffer is not
    printed (exit status 3, saying how to build with a larger one); a message
    longer than the buffer stops the DPU. A larger buffer prints it all."""
    x = np.arange(16, dtype=np.float32)
    out = np.zeros_like(x)
    folder = tmp_path / "p"
    capfd.readouterr()
    edsl.export(scaled, folder, sample_args=(x, out, 16), constants={"BLOCK": 8}, grid=(2,))

    def make_and_run(size):
        subprocess.run(["make", "-s", "clean"], cwd=folder, check=True)
        r = subprocess.run(["make", "-s", "sim", "OPT=-O1", f"STDOUT_BUFFER_SIZE={size}"], cwd=folder,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return run(folder)
    model = printed(capfd.readouterr().out)                # (the export's run on the model)
    r = make_and_run(512)
    assert r.returncode == 3 and "do not fit its printf buffer of 512 bytes" in r.stderr
    assert "STDOUT_BUFFER_SIZE=" in r.stderr and not printed(r.stdout)
    r = make_and_run(64)
    assert r.returncode == 3 and "printf" in r.stderr and "fault" in r.stderr
    r = make_and_run(8192)
    assert r.returncode == 0 and printed(r.stdout) == model and len(model) > 32


@needs_cc
def test_the_printf_buffer_comes_out_of_the_heap(capfd, tmp_path):
    """The log buffer is an MRAM variable: the runner's heap is that much
    smaller (arrays that fill the MRAM without it no longer fit)."""
    x = np.zeros(8, np.float32)
    folder = tmp_path / "p"
    edsl.export(scaled, folder, sample_args=(x, np.zeros_like(x), 8), constants={"BLOCK": 8}, grid=(1,))
    build(folder)
    big = np.zeros((64 << 20) // 4 - (1 << 20) // 4 + 2, np.float32)        # 8 bytes more than the heap
    data = folder / "big"
    data.mkdir()
    (data / "x_ptr.bin").write_bytes(big.tobytes())
    (data / "out_ptr.bin").write_bytes(np.zeros(0, np.float32).tobytes())
    r = run(folder, f"data={data}", "out=out2", "n=8", "check=0")
    assert r.returncode == 2 and "less its printf buffer of 1048576 bytes" in r.stderr


# -- what the DPU's printf cannot print -------------------------------------------------
def _module(fmt: str, types: list[str]) -> ir.Module:
    """A function `k` of the arguments `types` that printf's them with `fmt`
    (at kernel.py:12)."""
    params = ", ".join(f"%a{k}: {t}" for k, t in enumerate(types))
    values = "".join(f", %a{k}" for k in range(len(types)))
    escaped = fmt.replace("\n", "\\0A")
    signature = "".join(", " + t for t in types)
    text = f"""
module {{
  llvm.mlir.global internal constant @fmt("{escaped}\\00") {{addr_space = 0 : i32}}
  llvm.func @printf(!llvm.ptr, ...) -> i32
  llvm.func @k({params}) {{
    %f = llvm.mlir.addressof @fmt : !llvm.ptr
    %r = llvm.call @printf(%f{values}) vararg(!llvm.func<i32 (ptr, ...)>) : (!llvm.ptr{signature}) -> i32 loc("kernel.py":12:5)
    llvm.return
  }}
}}"""
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    return ir.Module.parse(text, ctx)


@pytest.mark.parametrize("fmt, types, what", [
    ("v %g\n", ["f64"], "'%g'"),
    ("v %p\n", ["!llvm.ptr"], "'%p'"),
    ("v %*d\n", ["i32"], "'%*d'"),
    ("v %hd\n", ["i32"], "'%hd'"),
    ("v %lld\n", ["f64"], "'%lld' of a f64"),
    ("v %5a\n", ["f64"], "'%5a'"),
    ("v %0123456789012345lld\n", ["i64"], "longer than the 15 characters"),
    ("v %d %d\n", ["i32"], "2 conversions for 1 arguments"),
])
def test_conversions_the_dpu_printf_cannot_print_are_errors(fmt, types, what):
    module = _module(fmt, types)
    with pytest.raises(CompileError) as err:
        print_module(module, ["k"])
    assert what in str(err.value) and "kernel.py:12" in str(err.value), str(err.value)


def test_printable_conversions_print_as_the_sdk_printf():
    module = _module("v %d %5u %llx %c %s %e %f %a\n", ["i32", "i32", "i64", "i8", "!llvm.ptr", "f64", "f64", "f64"])
    prog = print_module(module, ["k"])
    body = "\n".join(prog.functions)
    assert prog.needs_stdio and prog.needs_hexfloat
    assert ('printf("v %d %5u %llx %c %s %e %f %s\\n", (int)a0, (unsigned int)a1, (unsigned long long)a2, '
            '(int)a3, (const char *)a4, a5, a6, edsl_hexfloat(edsl_h0, a7));') in body
    assert 'static const edsl_array0 fmt = {{ "v %d %5u %llx %c %s %e %f %a\\n" }};' in "\n".join(prog.globals)


@edsl.dialect
def report_tile(y: edsl.InOut["memref<?xi32>"], c: edsl.Input["i32"]):
    if edsl.tasklet_id() == 0:
        edsl.vprintf("pid (edsl) first %d last %d c %d\n", y[0], y[y.shape[0] - 1], c)
    for i in range(edsl.tasklet_id(), y.shape[0], edsl.num_tasklets()):
        y[i] = y[i] * c


@triton.jit
def calls_a_printing_function(y_ptr, c, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    y = tl.load(y_ptr + offs)
    y = edsl.fl.call(report_tile, [y], [c])
    tl.store(y_ptr + offs, y)


@needs_cc
@pytest.mark.parametrize("dpus, tasklets", [(1, 1), (2, 3)])
def test_vprintf_in_an_edsl_function_prints_as_on_the_model(capfd, tmp_path, dpus, tasklets):
    y = np.arange(64, dtype=np.int32)
    model, ran, r = model_and_export(capfd, tmp_path, calls_a_printing_function, (y, 3), {"BLOCK": 16}, (4,),
                                     dpus, tasklets, outputs=["y_ptr"])
    assert model == [f"pid (edsl) first {16 * p} last {16 * p + 15} c 3" for p in range(4)]
    assert printed(r.stdout) == model
    np.testing.assert_array_equal(output(tmp_path / "p", "y_ptr", y), ran[0])
