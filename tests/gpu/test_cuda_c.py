"""Raw functions in CUDA C (`dialect(name="cuda")`), in the shapes of TLE-Raw's
CUDA tutorials: a grid-stride add through pointers, a row softmax on a tile
that returns its descriptor (one-list form), a tile matmul in the outs/ins
form, a template instantiated per define; compiled for sm_90 anywhere (the
ziglang package's clang), run against torch on a GPU."""
import pathlib
import re

import pytest
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice
from triton.runtime.errors import OutOfResources

import edsl.tle.language.raw as tle_raw
from edsl.base.errors import CompileError
from edsl.target import nvptx
from edsl.tle.raw import dialect
from gpu_helpers import barriers, compile_sm90, example, linked_libraries, static_shared


CU = pathlib.Path(__file__).parent / "cuda"


@dialect(name="cuda", file=CU / "grid_add.cu")
def grid_add(*args, **kwargs):
    ...


@dialect(name="cuda", file=CU / "row_softmax.cu")
def row_softmax(*args, **kwargs):
    ...


@dialect(name="cuda", file=CU / "tile_matmul.cu")
def tile_matmul(*args, **kwargs):
    ...


@dialect(name="cuda", file=CU / "load_tiles.cu")
def load_tiles(*args, **kwargs):
    ...


@dialect(name="cuda", file=CU / "typed_add.cu", extern_func_name="TypedAdd_half", defines={"ELEM": "half"})
def typed_add_f16(*args, **kwargs):
    ...


@dialect(name="cuda", file=CU / "typed_add.cu", extern_func_name="TypedAdd_float", defines={"ELEM": "float"})
def typed_add_f32(*args, **kwargs):
    ...


@dialect(name="cuda", file=CU / "fast_math.cu")
def fast_math(*args, **kwargs):
    ...


@triton.jit
def add_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    tle_raw.call(grid_add, [o_ptr, x_ptr, y_ptr, n])


@triton.jit
def two_types_kernel(x16, y16, o16, x32, y32, o32, n, BLOCK: tl.constexpr):
    tle_raw.call(typed_add_f16, [o16, x16, y16, n], output_indices=[0])
    tle_raw.call(typed_add_f32, [o32, x32, y32, n])


@triton.jit
def softmax_kernel(x_ptr, o_ptr, n_cols, B: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, B)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    y = tle_raw.call(row_softmax, [tl.zeros_like(x), x])
    tl.store(o_ptr + row * n_cols + cols, y, mask=cols < n_cols)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptr + rm[:, None] * K + (k * BK + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k * BK + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k * BK + rk)[:, None] * N + rn[None, :],
                    mask=((k * BK + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tle_raw.call(tile_matmul, [acc], [a, b])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def loaded_tiles_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                               BK: tl.constexpr):
    """FlagTree's pipeline-producer tutorial's shape: the raw function fills the
    two tiles it is handed from global memory and returns both."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a, b = tle_raw.call(load_tiles, [tl.zeros((BM, BK), dtype=tl.float16), tl.zeros((BK, BN), dtype=tl.float16),
                                         a_ptr, b_ptr, M, N, K, pid_m, pid_n, k], output_indices=[0, 1],
                            hint="pipeline")
        acc = tl.dot(a, b, acc)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


MATMUL = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
PTRS3 = {"x_ptr": "*fp32", "y_ptr": "*fp32", "o_ptr": "*fp32", "n": "i32"}


@triton.jit
def fast_math_kernel(x_ptr, o_ptr, n):
    tle_raw.call(fast_math, [o_ptr, x_ptr, n])


@triton.jit
def libdevice_fast_math_kernel(x_ptr, o_ptr, n, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(o_ptr + 0 * n + offs, libdevice.fast_expf(x), mask=offs < n)
    tl.store(o_ptr + 1 * n + offs, libdevice.fast_logf(x), mask=offs < n)
    tl.store(o_ptr + 2 * n + offs, libdevice.fast_log2f(x), mask=offs < n)
    tl.store(o_ptr + 3 * n + offs, libdevice.fast_log10f(x), mask=offs < n)
    tl.store(o_ptr + 4 * n + offs, libdevice.fast_sinf(x), mask=offs < n)
    tl.store(o_ptr + 5 * n + offs, libdevice.fast_cosf(x), mask=offs < n)
    tl.store(o_ptr + 6 * n + offs, libdevice.fast_tanf(x), mask=offs < n)
    tl.store(o_ptr + 7 * n + offs, libdevice.fast_exp10f(x), mask=offs < n)


def test_fast_intrinsics_are_defined_in_the_module_not_linked_from_libdevice(monkeypatch):
    """`__expf` and its kin compile to the approximate instructions, defined
    with the function (as EDSL functions' fastmath): the kernel links no
    libdevice, and their ftz choice is resolved."""
    linked = linked_libraries(monkeypatch)
    ptx = compile_sm90(fast_math_kernel, {"x_ptr": "*fp32", "o_ptr": "*fp32", "n": "i32"}).asm["ptx"]
    assert "libdevice" not in linked[-1]
    for op in ("ex2", "lg2", "sin", "cos", "div"):
        assert f"{op}.approx.ftz.f32" in ptx, op
    assert "__nvvm_reflect" not in ptx          # (resolved by NVPTX's NVVMReflect)


def test_pointer_function_compiles_inlined_for_sm90():
    ptx = compile_sm90(add_kernel, PTRS3, {"BLOCK": 128}).asm["ptx"]
    assert "ld.global" in ptx and "st.global" in ptx
    assert "call.uni" not in ptx and "call " not in ptx  # the CUDA function is inlined into the kernel


def test_returned_descriptor_picks_the_output_tile():
    ptx = compile_sm90(softmax_kernel, {"x_ptr": "*fp32", "o_ptr": "*fp32", "n_cols": "i32"}, {"B": 256},
                       num_warps=4).asm["ptx"]
    assert "ex2.approx" in ptx and barriers(ptx) >= 6


def test_outs_ins_form_with_half_tiles_compiles():
    compile_sm90(matmul_kernel, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32",
                                 "K": "i32"}, {"BM": 32, "BN": 32, "BK": 32})


def test_two_returned_tiles_filled_by_cp_async_feed_tl_dot():
    compiled = compile_sm90(loaded_tiles_matmul_kernel, MATMUL, {"BM": 128, "BN": 256, "BK": 64}, num_warps=8,
                            num_stages=3)
    ptx = compiled.asm["ptx"]
    assert "cp.async.cg.shared.global" in ptx and "wgmma" in ptx
    assert compiled.metadata.shared >= (128 * 64 + 64 * 256) * 2     # (both tiles staged in shared memory)


def test_template_per_define_two_in_one_kernel():
    sig = {"x16": "*fp16", "y16": "*fp16", "o16": "*fp16", "x32": "*fp32", "y32": "*fp32", "o32": "*fp32",
           "n": "i32"}
    ptx = compile_sm90(two_types_kernel, sig, {"BLOCK": 128}).asm["ptx"]
    assert "add.f16" in ptx or "add.rn.f16" in ptx
    assert "add.f32" in ptx or "add.rn.f32" in ptx


def test_the_softmax_example_reads_and_writes_each_row_once_in_16_byte_accesses():
    sig = {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32", "out_stride": "i32", "n_rows": "i32",
           "n_cols": "i32"}
    ptx = compile_sm90(example("gpu_softmax_cuda").softmax_kernel, sig, num_warps=8).asm["ptx"]
    # 1, 2, 4 or 8 float4s a thread, one instantiation each: only 16-byte global accesses
    assert len(re.findall(r"ld\.global(?:\.\w+)*\.v4\.(?:b32|f32)", ptx)) == 15
    assert len(re.findall(r"st\.global(?:\.\w+)*\.v4\.(?:b32|f32)", ptx)) == 15
    assert not re.search(r"(?:ld|st)\.global\.(?:b32|f32)\b", ptx)
    assert "shfl.sync.bfly" in ptx


def test_the_topk_example_keeps_its_keys_in_registers():
    sig = {"x_ptr": "*fp32", "vals_ptr": "*fp32", "idx_ptr": "*i32", "n_rows": "i32", "n_cols": "i32", "k": "i32"}
    cc = compile_sm90(example("gpu_topk_cuda").topk_kernel, sig, num_warps=8)
    assert cc.metadata.shared == 0 and "local" not in cc.asm["ptx"]   # no spills to local memory
    assert "shfl.sync.bfly" in cc.asm["ptx"]


@dialect(name="cuda", source="__device__ void Bad(int n) {\n  undeclared(n);\n}\n")
def broken(*args, **kwargs):
    ...


@triton.jit
def broken_kernel(n):
    tle_raw.call(broken, [n])


def test_a_clang_error_names_the_cu_line():
    with pytest.raises(Exception) as info:
        compile_sm90(broken_kernel, {"n": "i32"})
    # (a source string is named after the stub, beside its Python file)
    assert f"{pathlib.Path(__file__).with_name('broken.cu')}:2:3" in str(info.value)
    assert "undeclared" in str(info.value)



def test_an_include_of_cub_is_refused_at_its_line_saying_why():
    source = "#include <stdint.h>\n#include <cub/block/block_radix_sort.cuh>\n" \
             "extern \"C\" __device__ void Sort(float *x) {}\n"
    with pytest.raises(CompileError, match=r"cub/block/block_radix_sort.cuh: CUDA's C\+\+ libraries \(CCCL: "
                                           r"CUB, Thrust, libcu\+\+\) are not available") as err:
        dialect(name="cuda", source=source)(lambda: None).llvm(nvptx.DEFAULT_ARCH)
    assert err.value.loc.lineno == 2

@triton.jit
def short_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    tle_raw.call(grid_add, [o_ptr, x_ptr, n])


def test_operands_that_do_not_fill_the_signature_are_refused_at_the_call():
    with pytest.raises(Exception, match=r"operand 2 .* is a scalar; parameter 2 of GridAdd"):
        compile_sm90(short_kernel, PTRS3, {"BLOCK": 128})


@dialect(name="cuda", source="""
__device__ void Stage(__attribute__((address_space(3))) float *a, __attribute__((address_space(3))) float *p,
                      int64_t o, int64_t n, int64_t s, __attribute__((address_space(3))) float *qa,
                      __attribute__((address_space(3))) float *q, int64_t qo, int64_t qn, int64_t qs) {
  __shared__ float scratch[10240];   // 40 KiB of static shared memory
  for (int i = threadIdx.x; i < n; i += blockDim.x) scratch[i % 10240] = p[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) p[i] = scratch[i % 10240] * q[i % qn];
}""")
def staged(*args, **kwargs):
    ...


@triton.jit
def staged_kernel(x_ptr, B: tl.constexpr, Q: tl.constexpr):
    offs = tl.arange(0, B)
    q = tl.load(x_ptr + tl.arange(0, Q))
    tl.store(x_ptr + offs, tle_raw.call(staged, [tl.load(x_ptr + offs), q], output_indices=[0]))


def test_static_shared_arrays_count_against_the_block_limit():
    small = compile_sm90(staged_kernel, {"x_ptr": "*fp32"}, {"B": 1024, "Q": 1024})
    assert 40960 in static_shared(small.asm["ptx"]).values()   # 40 KiB static + 8 KiB of tiles: fits
    with pytest.raises(OutOfResources, match=r"static arrays of raw functions take 40960 bytes"):
        # 192 KiB of tiles fit the 227 KiB of an H100/H200 block; with the 40 KiB array, they do not
        compile_sm90(staged_kernel, {"x_ptr": "*fp32"}, {"B": 32768, "Q": 16384})


def test_nvcc_and_nvshmem_options_say_why_they_are_refused():
    with pytest.raises(CompileError, match="nvcc"):
        dialect(name="cuda", file=CU / "grid_add.cu", compiler="nvcc")(lambda: None)
    with pytest.raises(CompileError, match="NVSHMEM"):
        dialect(name="cuda", file=CU / "grid_add.cu", library={"nvshmem": "/x"})(lambda: None)


# --- on a GPU ---------------------------------------------------------------------------------

@pytest.mark.gpu
def test_cuda_functions_against_torch():
    import torch
    torch.manual_seed(0)
    n = 10_000
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    o = torch.empty_like(x)
    add_kernel[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024)
    torch.testing.assert_close(o, x + y, rtol=0, atol=0)

    x16, y16 = x.half(), y.half()
    o16, o32 = torch.empty_like(x16), torch.empty_like(x)
    two_types_kernel[(4,)](x16, y16, o16, x, y, o32, n, BLOCK=128)
    torch.testing.assert_close(o16, x16 + y16, rtol=0, atol=0)
    torch.testing.assert_close(o32, x + y, rtol=0, atol=0)

    rows = torch.randn(64, 1000, device="cuda")
    out = torch.empty_like(rows)
    softmax_kernel[(64,)](rows, out, 1000, B=1024, num_warps=8)
    torch.testing.assert_close(out, torch.softmax(rows, dim=1), rtol=1e-4, atol=1e-6)

    a = torch.randn(200, 150, device="cuda", dtype=torch.float16)
    b = torch.randn(150, 100, device="cuda", dtype=torch.float16)
    c = torch.empty(200, 100, device="cuda")
    matmul_kernel[(triton.cdiv(200, 32), triton.cdiv(100, 32))](a, b, c, 200, 100, 150, BM=32, BN=32, BK=32)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)

    for (m, n, k) in ((512, 512, 512), (300, 200, 100)):   # (cp.async, then element by element)
        a = torch.rand((m, k), device="cuda", dtype=torch.float16) - 0.5
        b = torch.rand((k, n), device="cuda", dtype=torch.float16) - 0.5
        c = torch.empty((m, n), device="cuda", dtype=torch.float16)
        loaded_tiles_matmul_kernel[(triton.cdiv(m, 128), triton.cdiv(n, 256))](a, b, c, m, n, k, BM=128, BN=256,
                                                                             BK=64, num_warps=8, num_stages=3)
        torch.testing.assert_close(c, a @ b, atol=1e-2, rtol=0)

    x = torch.cat([torch.rand(960, device="cuda") * 40, torch.tensor([1e-39, 3e-42, 1.0, 88.0], device="cuda"),
                   torch.rand(60, device="cuda") * 1e-3])
    got, want = torch.zeros(8 * 1024, device="cuda"), torch.zeros(8 * 1024, device="cuda")
    fast_math_kernel[(1,)](x, got, 1024, num_warps=4)
    libdevice_fast_math_kernel[(1,)](x, want, 1024, B=1024, num_warps=4)
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))      # libdevice's bits, subnormals included
