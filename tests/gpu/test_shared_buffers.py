"""Shared buffers allocated in the Triton kernel (edsl.gpu.shared, TLE's
`tle.gpu` under `edsl.tle.language.gpu`): compiled for sm_90 anywhere (the
PTX's accesses, the kernel's shared memory, the errors), and run against
torch on a GPU."""
import pathlib
import re

import pytest
import triton
import triton.language as tl

import edsl
from edsl import InOut, Input
import edsl.tle.language.gpu as tle_gpu
import edsl.tle.language.raw as tle_raw
from gpu_helpers import compile_sm90, example


@edsl.dialect
def scale_rows(y: InOut["memref<?x?xf32, shared>"], w: Input["memref<?xf32, shared>"]):
    t = edsl.thread_id()
    nt = edsl.num_threads()
    for e in range(t, y.shape[0] * y.shape[1], nt):
        y[e // y.shape[1], e % y.shape[1]] = y[e // y.shape[1], e % y.shape[1]] * w[e // y.shape[1]]


@triton.jit
def transpose_scale_kernel(x_ptr, w_ptr, o_ptr, R: tl.constexpr, C: tl.constexpr, ONE_LIST: tl.constexpr):
    """o = (x * w[:, None]).T: x stored into a buffer, scaled in place by a raw
    function on two buffers (`call_smem` in either of its forms), read back
    transposed through local_ptr's indices."""
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    buf = tle_gpu.alloc([R, C], tl.float32, scope=tle_gpu.smem)
    weights = tle_gpu.alloc([R], tl.float32, scope=tle_gpu.smem)
    tle_gpu.copy(x_ptr + r[:, None] * C + c[None, :], buf, shape=[R, C])
    tl.store(tle_gpu.local_ptr(weights, indices=(r,)), tl.load(w_ptr + r))
    if ONE_LIST:
        buf = tle_raw.call_smem(scale_rows, [buf, weights])
    else:
        buf = tle_raw.call_smem(scale_rows, [buf], [weights])
    rows = r[None, :] + tl.zeros([C, R], dtype=tl.int32)           # o[j, i] = buffer[i, j]
    cols = c[:, None] + tl.zeros([C, R], dtype=tl.int32)
    tl.store(o_ptr + c[:, None] * R + r[None, :], tl.load(tle_gpu.local_ptr(buf, indices=(rows, cols))))


SIG = {"x_ptr": "*fp32", "w_ptr": "*fp32", "o_ptr": "*fp32"}

@edsl.dialect(name="cuda", file=pathlib.Path(__file__).parent / "cuda" / "tile_matmul.cu")
def tile_matmul(*args, **kwargs):
    ...


@triton.jit
def cuda_matmul_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                       ONE_LIST: tl.constexpr):
    """c = a @ b by a CUDA C function on three buffers; c copied out of its buffer."""
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    acc = tle_gpu.alloc([M, N], tl.float32, scope=tle_gpu.smem)
    a = tle_gpu.alloc([M, K], tl.float16, scope=tle_gpu.smem)
    b = tle_gpu.alloc([K, N], tl.float16, scope=tle_gpu.smem)
    tl.store(tle_gpu.local_ptr(acc), tl.zeros([M, N], dtype=tl.float32))
    tle_gpu.copy(a_ptr + m[:, None] * K + k[None, :], a)
    tle_gpu.copy(b_ptr + k[:, None] * N + n[None, :], b)
    if ONE_LIST:
        tle_raw.call_smem(tile_matmul, [acc, a, b])        # (void: it returns no buffer; acc is updated)
    else:
        acc = tle_raw.call_smem(tile_matmul, [acc], [a, b])
    tle_gpu.copy(acc, c_ptr + m[:, None] * N + n[None, :])


CUDA_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}


@triton.jit
def plain_copy_kernel(x_ptr, o_ptr, N: tl.constexpr):
    n = tl.arange(0, N)
    tl.store(o_ptr + n, tl.load(x_ptr + n))


def _accesses(ptx: str) -> set:
    return set(re.findall(r"\b(?:ld|st|atom|red)(?:\.[a-z]+\d*)?(?=[.\s])", ptx))


def test_a_kernel_with_buffers_accesses_memory_generically_and_holds_them_in_its_shared_memory():
    compiled = compile_sm90(transpose_scale_kernel, SIG, {"R": 32, "C": 64, "ONE_LIST": False}, num_warps=4)
    ptx = compiled.asm["ptx"]
    assert not re.search(r"\b(?:ld|st|atom|red)\.global\b", ptx)          # generic: either space
    assert re.search(r"\bst\.b32\b", ptx) and re.search(r"\bld\.b32\b", ptx)
    assert re.search(r"\bld\.shared\.b32\b", ptx)                          # the raw function's own
    assert compiled.metadata.shared >= 32 * 64 * 4 + 32 * 4                # the two buffers, after Triton's


def test_a_kernel_without_buffers_keeps_its_global_accesses():
    ptx = compile_sm90(plain_copy_kernel, {"x_ptr": "*fp32", "o_ptr": "*fp32"}, {"N": 128}).asm["ptx"]
    assert re.search(r"\bld\.global\b", ptx) and re.search(r"\bst\.global\b", ptx)


def test_the_example_compiles_with_its_buffers_after_the_calls_tiles():
    m = example("gpu_matmul_smem")
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"}
    compiled = compile_sm90(m.matmul_kernel, sig, {"BM": 64, "BN": 64, "BK": 32}, num_stages=1)
    assert compiled.metadata.shared == 64 * 64 * 4 + 2 * 64 * 32 * 2       # no tiles of calls: the buffers alone


@triton.jit
def wrong_shape_kernel(x_ptr):
    buf = tle_gpu.alloc([16, 8], tl.float32, scope=tle_gpu.smem)
    weights = tle_gpu.alloc([8], tl.float16, scope=tle_gpu.smem)
    tle_raw.call_smem(scale_rows, [buf], [weights])


@triton.jit
def tile_for_buffer_kernel(x_ptr):
    weights = tle_gpu.alloc([8], tl.float32, scope=tle_gpu.smem)
    tle_raw.call_smem(scale_rows, [tl.zeros([16, 8], dtype=tl.float32)], [weights])


@triton.jit
def one_list_count_kernel(x_ptr):
    weights = tle_gpu.alloc([8], tl.float32, scope=tle_gpu.smem)
    tle_raw.call_smem(scale_rows, [weights])


@triton.jit
def other_layout_kernel(x_ptr):
    tle_gpu.alloc([16, 8], tl.float32, scope=tle_gpu.smem, nv_mma_shared_layout=True)


@pytest.mark.parametrize("kernel, message", [
    (wrong_shape_kernel, "the in operand (a buffer) for parameter 'w' (memref<?xf32, 3>) has element type fp16"),
    (tile_for_buffer_kernel, "must be a shared buffer (tle.gpu.alloc), not tensor"),
    (other_layout_kernel, "a buffer is row-major here"),
    (one_list_count_kernel, "the function takes 2 operands (y, w); got 1"),
])
def test_errors_name_the_operand_and_what_is_wrong(kernel, message):
    with pytest.raises(triton.CompilationError) as err:
        compile_sm90(kernel, {"x_ptr": "*fp32"})
    assert message in str(err.value)


@triton.jit
def too_large_kernel(x_ptr):
    buf = tle_gpu.alloc([256, 256], tl.float32, scope=tle_gpu.smem)
    tl.store(tle_gpu.local_ptr(buf), tl.zeros([256, 256], dtype=tl.float32))


def test_buffers_beyond_what_a_block_may_opt_in_to_are_out_of_resources():
    # (the autotuner skips such a config)
    from triton.runtime.errors import OutOfResources
    with pytest.raises(OutOfResources) as err:
        compile_sm90(too_large_kernel, {"x_ptr": "*fp32"})
    assert "the kernel's shared buffers 262144" in str(err.value) and "Hardware limit: 232448" in str(err.value)


def test_a_cuda_c_function_takes_buffers_as_memref_descriptors():
    for one_list in (False, True):
        compiled = compile_sm90(cuda_matmul_kernel, CUDA_SIG, {"M": 32, "N": 16, "K": 64, "ONE_LIST": one_list})
        assert compiled.metadata.shared >= 32 * 16 * 4 + 32 * 64 * 2 + 64 * 16 * 2
        assert not re.search(r"\b(?:ld|st)\.global\b", compiled.asm["ptx"])


def test_buffers_outside_a_gpu_kernel_are_an_error():
    with pytest.raises(TypeError, match="shared memory of an NVIDIA GPU's kernel, not under Triton's interpreter"):
        tle_gpu.alloc([4], tl.float32)


@pytest.mark.gpu
@pytest.mark.parametrize("rows, cols, one_list", [(32, 64, False), (16, 16, True), (64, 8, False), (8, 64, True)])
def test_buffers_round_trip_on_the_gpu(rows, cols, one_list):
    import torch
    gen = torch.Generator("cuda").manual_seed(rows * cols)
    x = torch.randn(rows, cols, device="cuda", generator=gen)
    w = torch.randn(rows, device="cuda", generator=gen)
    o = torch.empty(cols, rows, device="cuda")
    transpose_scale_kernel[(1,)](x, w, o, R=rows, C=cols, ONE_LIST=one_list, num_warps=4)
    torch.testing.assert_close(o, (x * w[:, None]).T.contiguous(), rtol=0, atol=0)


@pytest.mark.gpu
@pytest.mark.parametrize("one_list", [False, True])
def test_a_cuda_c_function_on_buffers_on_the_gpu(one_list):
    import torch
    gen = torch.Generator("cuda").manual_seed(3)
    a = torch.randn(32, 64, device="cuda", generator=gen).half()
    b = torch.randn(64, 16, device="cuda", generator=gen).half()
    c = torch.empty(32, 16, device="cuda")
    cuda_matmul_kernel[(1,)](a, b, c, M=32, N=16, K=64, ONE_LIST=one_list, num_warps=4)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-4, atol=1e-4)
