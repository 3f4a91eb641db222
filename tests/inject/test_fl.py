"""`fl.call` in Triton kernels compiled by the `dpu` backend: every example
against NumPy over shapes, masked tails and tasklet counts, other dtypes, and
the errors (operand mismatches, WRAM overflow, DMA rules inside a region)."""
import importlib.util
import pathlib
import re

import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st
from triton.compiler.errors import CompilationError

import edsl
from edsl import InOut, Input, fl
from region_kernels import region_kernel

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _example(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


softmax_ex = _example("fl_softmax")
vadd_ex = _example("fl_vector_add")
matmul_ex = _example("fl_matmul")
topk_ex = _example("fl_topk")

TASKLETS = st.sampled_from([1, 16])
FEW = settings(max_examples=12, deadline=None)


@FEW
@given(rows=st.integers(1, 6), cols=st.integers(1, 300), tasklets=TASKLETS, seed=st.integers(0, 99))
def test_softmax_region(rows, cols, tasklets, seed):
    x = np.random.default_rng(seed).standard_normal((rows, cols)).astype(np.float32) * 4
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(softmax_ex.softmax(x, tasklets), e / e.sum(axis=1, keepdims=True),
                               rtol=1e-5, atol=1e-6)


@FEW
@given(n=st.integers(0, 20000), tasklets=TASKLETS, seed=st.integers(0, 99))
def test_vector_add_region_on_mram(n, tasklets, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    np.testing.assert_array_equal(vadd_ex.add(x, y, tasklets), x + y)


@FEW
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(1, 40), tasklets=TASKLETS,
       seed=st.integers(0, 99))
def test_matmul_micro_kernel(m, n, k, tasklets, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    np.testing.assert_allclose(matmul_ex.matmul(a, b, tasklets), a @ b, rtol=1e-4, atol=1e-4)


@FEW
@given(rows=st.integers(1, 5), cols=st.integers(1, 150), k=st.sampled_from([1, 4, 8]), tasklets=TASKLETS,
       seed=st.integers(0, 99))
def test_topk_region(rows, cols, k, tasklets, seed):
    x = np.random.default_rng(seed).permutation(rows * cols).reshape(rows, cols).astype(np.float32)
    vals, idx = topk_ex.topk(x, k, tasklets)
    want = np.argsort(-x, axis=1, kind="stable")[:, :k]
    have = min(k, cols)
    np.testing.assert_array_equal(idx[:, :have], want)
    np.testing.assert_array_equal(vals[:, :have], np.take_along_axis(x, want, 1))
    assert (idx[:, have:] == -1).all() and np.isneginf(vals[:, have:]).all()  # rows shorter than k


# --- other dtypes ---------------------------------------------------------------------

@edsl.dialect
def affine_i32(y: InOut["memref<?xi32>"], x: Input["memref<?xi32>"], c: Input["i32"]):
    for i in range(y.shape[0]):
        y[i] = x[i] * c + y[i]


@edsl.dialect
def half_scale(y: InOut["memref<?xf16>"], a: Input["f16"]):
    for i in range(y.shape[0]):
        y[i] = y[i] * a


@triton.jit
def int_kernel(x_ptr, y_ptr, n, c, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    y = tl.load(y_ptr + offs, mask=m, other=0)
    y = fl.call(affine_i32, [y], [x, c])
    tl.store(y_ptr + offs, y, mask=m)


@triton.jit
def half_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    y = fl.call(half_scale, [y], [0.5])
    tl.store(y_ptr + offs, y, mask=m)


@FEW
@given(n=st.integers(0, 700), c=st.integers(-1000, 1000), seed=st.integers(0, 99))
def test_int32_region_wraps_like_numpy(n, c, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-2**31, 2**31, n, dtype=np.int32)
    y = rng.integers(-2**31, 2**31, n, dtype=np.int32)
    want = x * np.int32(c) + y
    int_kernel[(triton.cdiv(max(n, 1), 128),)](x, y, n, c, BLOCK=128)
    np.testing.assert_array_equal(y, want)


def test_float16_region():
    y = np.linspace(-4, 4, 301).astype(np.float16)
    want = y * np.float16(0.5)
    half_kernel[(3,)](y, y.size, BLOCK=128)
    np.testing.assert_array_equal(y, want)


# --- errors -----------------------------------------------------------------------------

@edsl.dialect
def saxpy(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], a: Input["f32"]):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


@edsl.dialect
def fixed(y: InOut["memref<64xf32>"]):
    y[0] = 1.0


@edsl.dialect
def on_mram(p: Input["memref<?xf32, MRAM>"]):
    p[0] = 1.0


def _kernel_line(kernel, marker):
    return next(line.strip() for line in kernel.src.splitlines() if marker in line)


@triton.jit
def bad_count(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    x = fl.call(saxpy, [x], [x])  # count
    tl.store(x_ptr + offs, x)


@triton.jit
def bad_dtype(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    x = fl.call(saxpy, [x], [x, 2.0])  # dtype
    tl.store(x_ptr + offs, x)


@triton.jit
def bad_rank(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs[:, None] + offs[None, :])
    x = fl.call(saxpy, [x], [x, 2.0])  # rank
    tl.store(x_ptr + offs[:, None] + offs[None, :], x)


@triton.jit
def bad_shape(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    x = fl.call(fixed, [x], [])  # shape
    tl.store(x_ptr + offs, x)


@triton.jit
def bad_pointer(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    fl.call(on_mram, [], [x])  # pointer


@pytest.mark.parametrize("kernel, dtype, marker, message", [
    (bad_count, np.float32, "# count", r"takes 1 outs \(y\) and 2 ins \(x, a\); got 1 and 1"),
    (bad_dtype, np.int32, "# dtype", r"parameter 'y' \(memref<\?xf32>\) has element type int32"),
    (bad_rank, np.float32, "# rank", r"parameter 'y' \(memref<\?xf32>\) has rank 2, expected 1"),
    (bad_shape, np.float32, "# shape", r"parameter 'y' \(memref<64xf32>\) has size 16 in dimension 0"),
    (bad_pointer, np.float32, "# pointer", r"parameter 'p' \(memref<\?xf32, 255>\) must be a pointer"),
])
def test_operand_mismatch_names_kernel_line_and_parameter(kernel, dtype, marker, message):
    x = np.zeros(256, dtype)
    with pytest.raises(CompilationError) as err:
        kernel[(1,)](x, BLOCK=16)
    text = str(err.value)
    assert re.search(message, text), text
    assert _kernel_line(kernel, marker) in text  # Triton quotes the kernel's line


def test_region_buffers_overflow_wram():
    x = np.zeros(16384, np.float32)  # a 64 KiB tile, and its staged copy for the region
    with pytest.raises(edsl.DpuError, match=r"WRAM") as err:
        region_kernel[(1,)](x, BLOCK=16384)
    assert ("fl.call of touch: its tile operands need 131072 bytes of WRAM, more than the 65536 bytes of a DPU: "
            "'y' 131072 bytes (InOut: the tile and its updated copy)") in str(err.value)
    assert err.value.loc.filename.endswith("region_kernels.py")              # the call's line


def test_misaligned_dma_inside_a_region_names_the_edsl_line():
    x = np.ones(9000, np.float32)
    out = np.zeros_like(x)
    line = next(i for i, text in enumerate((EXAMPLES / "fl_vector_add.py").read_text().splitlines(), 1)
                if "edsl.mram_read(x, xs" in text)
    with pytest.raises(edsl.DpuError, match="not 8-byte aligned") as err:
        # a block of 4095 floats: the second program's pointers are 4 bytes off
        vadd_ex.add_kernel[(3,)](x, x, out, x.size, BLOCK=4095)
    assert err.value.loc is not None and err.value.loc.lineno == line
