"""Errors: WRAM overflow, unsupported ops, out-of-bounds pointers, device assertions,
and device printing."""

import numpy as np
import pytest
import triton
import triton.language as tl

import edsl
from edsl import InOut, Input, fl
from edsl.base.errors import CompileError, DpuError
from loop_kernels import find_seven
from source_lines import line_of


@triton.jit
def big_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0))


def test_wram_overflow_fails_at_compile_time():
    x = np.zeros(16384, np.float32)
    with pytest.raises(DpuError) as err:
        big_kernel[(1,)](x, x, BLOCK=16384, wram_bytes=2048)
    message = str(err.value)
    assert "needs" in message and "bytes of WRAM, more than the 2048 bytes" in message
    assert "does not make it fit: in WRAM stay 2064 bytes for the DMA staging buffer" in message
    assert err.value.loc.lineno == line_of(big_kernel, "x = tl.load")
    # With a DPU's WRAM, the 64 KiB tiles are kept in MRAM, and it runs.
    y = np.arange(16384, dtype=np.float32) % 7
    out = np.zeros_like(y)
    big_kernel[(1,)](y, out, BLOCK=16384)
    np.testing.assert_allclose(out, np.cumsum(y))


@triton.jit
def asm_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise("mov $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(x_ptr + offs, y)


def test_unsupported_op_names_op_and_line():
    with pytest.raises(CompileError) as err:
        asm_kernel[(1,)](np.zeros(16, np.int32), BLOCK=16)
    assert "tt.elementwise_inline_asm" in str(err.value) and "not supported" in str(err.value)
    assert err.value.loc.lineno == line_of(asm_kernel, "inline_asm_elementwise")
    assert err.value.loc.filename == __file__


@triton.jit
def oob_kernel(x_ptr, offset):
    tl.store(x_ptr + offset, 1.0)


def test_out_of_bounds_pointer_is_a_dpu_error():
    x = np.zeros(4, np.float32)
    oob_kernel[(1,)](x, 3)
    assert x[3] == 1.0
    with pytest.raises(DpuError, match="outside the launch's arrays") as err:
        oob_kernel[(1,)](x, 100000)
    assert err.value.loc.lineno == line_of(oob_kernel, "tl.store")        # the kernel's line


def test_an_error_inside_a_while_loop_ends_the_loop():
    """A while loop whose condition reads what a failed transfer no longer
    brings: the error stops the DPU and its loops; the launch raises it."""
    x, out = np.zeros(16, np.int32), np.zeros(1, np.int32)
    with pytest.raises(DpuError, match="outside the launch's arrays") as err:
        find_seven[(1,)](x, out, num_tasklets=4)
    assert err.value.loc.lineno == line_of(find_seven, "# past the end")
    x[9] = 7
    find_seven[(1,)](x, out, num_tasklets=4)
    assert out[0] == 9


@triton.jit
def row_kernel(table_ptr, out_ptr, BLOCK: tl.constexpr):
    row = tl.load(table_ptr + tl.program_id(0)).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(row + offs))


def test_pointer_loaded_to_an_array_not_passed_is_a_dpu_error():
    """A DPU reaches only the MRAM the host transferred: the launch's arrays. The
    error is at the access and names the load the pointer came from."""
    row = np.arange(16, dtype=np.float32)
    table, out = np.array([row.ctypes.data], dtype=np.int64), np.zeros(16, np.float32)
    load = line_of(row_kernel, "tl.load(table_ptr")
    with pytest.raises(DpuError, match=rf"outside the launch's arrays: its pointer was loaded from memory at "
                       rf"line {load} and is not an MRAM address of theirs \(a DPU reaches only the MRAM the "
                       r"host transferred, .* pass the arrays the kernel reaches as arguments of the kernel, "
                       r"e\.g\. a tuple of arrays, and offsets into them, not addresses\)") as err:
        row_kernel[(1,)](table, out, BLOCK=16)
    assert err.value.loc.lineno == line_of(row_kernel, "tl.load(row + offs)")


COPIED_KERNEL = """\
import triton
import triton.language as tl


@triton.jit
def store_at(x_ptr, offset):
    tl.store(x_ptr + offset, 1.0)  # callee


@triton.jit
def oob_copy(x_ptr, offset, WHERE: tl.constexpr):
    if WHERE == 0:
        tl.store(x_ptr + offset, 1.0)  # kernel
    elif WHERE == 1:
        store_at(x_ptr, offset)
    else:
        shared_store(x_ptr, offset)  # noqa: F821 (a callee in another file, set below)
"""

SHARED_CALLEE = """\
import triton
import triton.language as tl


@triton.jit
def shared_store(x_ptr, offset):
    tl.store(x_ptr + offset, 1.0)  # shared
"""


def _module(path, text, name, **names):
    import importlib.util
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(names)
    spec.loader.exec_module(module)
    return module


def _marked(path, marker):
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if line.endswith(f"# {marker}"))


def test_copies_of_one_kernel_name_their_own_file(tmp_path):
    # The same source in two files compiles to one entry of Triton's cache (its
    # key ignores paths): each launch's error names the file it was launched from,
    # and a callee in another file names that file.
    shared = tmp_path / "shared" / "callee.py"
    store = _module(shared, SHARED_CALLEE, "edsl_test_shared_callee").shared_store
    files = [tmp_path / folder / "copied.py" for folder in ("a", "b")]
    kernels = [_module(f, COPIED_KERNEL, f"edsl_test_copied_{k}", shared_store=store).oob_copy
               for k, f in enumerate(files)]
    for where, marker in ((0, "kernel"), (1, "callee"), (2, "shared")):
        for file, kernel in zip(files, kernels):
            with pytest.raises(DpuError, match="outside the launch's arrays") as err:
                kernel[(1,)](np.zeros(4, np.float32), 100000, WHERE=where)
            named = shared if where == 2 else file
            assert (err.value.loc.filename, err.value.loc.lineno) == (str(named), _marked(named, marker))


@triton.jit
def oob_load_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs + 1000000))


def test_unmasked_out_of_bounds_load_names_its_line():
    with pytest.raises(DpuError, match="mram_read of .* outside the launch's arrays") as err:
        oob_load_kernel[(1,)](np.zeros(16, np.float32), np.zeros(16, np.float32), BLOCK=16)
    assert err.value.loc.lineno == line_of(oob_load_kernel, "tl.load")


@triton.jit
def assert_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.device_assert(x >= 0, "negative input")


def test_device_assert():
    ok = np.arange(8, dtype=np.int32)
    assert_kernel[(2,)](ok, 8, BLOCK=8, debug=True)
    bad = ok - 3
    with pytest.raises(DpuError, match="device assertion failed.*negative input") as err:
        assert_kernel[(2,)](bad, 8, BLOCK=8, debug=True)
    assert err.value.loc.lineno == line_of(assert_kernel, "tl.device_assert")


@triton.jit
def print_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("val ", x)


def test_device_print(capfd):
    print_kernel[(1,)](np.array([5, -6], dtype=np.int32), BLOCK=2)
    out = capfd.readouterr().out
    assert "pid (0, 0, 0) idx (0) val: 5\n" in out
    assert "pid (0, 0, 0) idx (1) val: -6\n" in out


@edsl.dialect
def first_of(t: InOut["memref<32768xf32>"], x: Input["memref<32768xf32>"]):
    t[0] = x[0]


@triton.jit
def wide_call_kernel(x_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    t = fl.call(first_of, [tl.zeros_like(x)], [x])
    tl.store(o_ptr + offs, t)


def test_an_fl_calls_tiles_over_wram_are_an_error_at_the_call():
    """The call's line, each operand and its bytes, and why they stay in WRAM."""
    x = np.zeros(32768, np.float32)
    with pytest.raises(DpuError) as err:
        wide_call_kernel[(1,)](x, x, N=32768)
    assert err.value.loc.lineno == line_of(wide_call_kernel, "t = fl.call")
    assert ("fl.call of first_of: its tile operands need 393216 bytes of WRAM, more than the 65536 bytes of a "
            "DPU: 't' 262144 bytes (InOut: the tile and its updated copy), 'x' 131072 bytes. They stay in WRAM"
            in err.value.message), err.value.message


@triton.jit
def shifted_copy(x_ptr, out_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs + shift))


def test_a_launch_after_a_failed_one_of_its_shape_starts_anew():
    # (the second launch runs on the contexts the first gave back: runtime.Launch.spare)
    x = np.arange(256, dtype=np.float32)
    reports = []
    for shift in (0, 1000, 0):
        out = np.zeros_like(x)
        if shift:
            with pytest.raises(DpuError, match="outside"):
                shifted_copy[(8,)](x, out, shift, BLOCK=32, num_dpus=4, num_tasklets=2)
            continue
        shifted_copy[(8,)](x, out, shift, BLOCK=32, num_dpus=4, num_tasklets=2)
        np.testing.assert_array_equal(out, x)
        reports.append(edsl.backend.last_report())
    assert reports[0] == reports[1] and reports[0].dma_reads > 0
