"""The tensor-core matmul in CUDA C (`examples/gpu_matmul_cuda.py`,
`examples/gpu_matmul_tc.cu`): compiled for sm_90 anywhere (the ziglang
package's clang, Triton's ptxas), run against torch on an sm_90 GPU, shapes
that are multiples of its 128 x 256 x 64 tiles and shapes that are not."""
import re

import pytest

from gpu_helpers import compile_sm90, example


SIGNATURE = {"c_ptr": "*fp16", "a_ptr": "*fp16", "b_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
             "lda": "i32", "ldb": "i32", "ldc": "i32"}


@pytest.fixture(scope="module")
def mm():
    return example("gpu_matmul_cuda")


@pytest.fixture(scope="module")
def compiled(mm):
    return compile_sm90(mm.matmul_kernel, SIGNATURE, {"BM": mm.BM, "BN": mm.BN, "GROUP_M": mm.GROUP_M},
                        num_warps=8)


def test_the_cuda_c_compiles_for_sm90a_to_wgmma_fed_by_cp_async():
    from edsl.cuda_function import CudaFunction
    fn = example("gpu_matmul_cuda").matmul_tc
    assert isinstance(fn, CudaFunction)
    llvm = fn.llvm("sm_90a")
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16" in llvm
    assert "cp.async.cg.shared.global" in llvm and "fence.proxy.async.shared::cta" in llvm


def test_the_kernel_multiplies_on_tensor_cores_without_local_memory_or_calls(compiled):
    ptx = compiled.asm["ptx"]
    # 4 k-steps of 16 a 64-wide slice, in the aligned and the element-load variants of the loop
    assert len(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.f16\.f16", ptx)) == 8
    assert "wgmma.wait_group.sync.aligned 1" in ptx
    assert re.search(r"cp\.async\.cg\.shared\.global \[[^\]]+\], \[[^\]]+\], 16, ", ptx)
    assert "st.global.v4" in ptx                          # the epilogue writes C in 16-byte rows
    assert "ld.local" not in ptx and "st.local" not in ptx
    assert not re.search(r"\bcall(\.uni)?\b", ptx)        # a call would make ptxas serialize the wgmmas
    # the workspace tiles (4 stages of 48 KiB and 1 KiB of alignment) in dynamic shared memory
    assert compiled.metadata.shared == 4 * 48 * 1024 + 1024


def test_inputs_it_cannot_take_are_refused_with_the_reason(mm):
    torch = pytest.importorskip("torch", reason="the comparison with torch.matmul needs torch")
    a = torch.zeros(4, 8, dtype=torch.float32)
    with pytest.raises(ValueError, match="f16 matrices"):
        mm.matmul(a, torch.zeros(8, 4, dtype=torch.float32))
    with pytest.raises(ValueError, match="f16 matrices"):
        mm.matmul(a.half(), torch.zeros(7, 4, dtype=torch.float16))


# --- on a GPU ---------------------------------------------------------------------------------

def _relative_error(got, want):
    return ((got.float() - want).abs() / (want.abs() + 1)).max().item()


@pytest.mark.gpu
@pytest.mark.parametrize("M, N, K", [(128, 256, 64), (256, 512, 1024), (300, 333, 200), (257, 520, 1000),
                                     (129, 77, 37), (1, 1, 1), (1000, 3, 8), (64, 1000, 4104)])
def test_against_torch(mm, M, N, K):
    import torch
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("wgmma needs an sm_90 GPU (H100, H200)")
    gen = torch.Generator(device="cuda").manual_seed(M * 7 + N * 3 + K)
    a = torch.randn(M, K, device="cuda", generator=gen).half()
    b_nk = torch.randn(N, K, device="cuda", generator=gen).half()
    want = a.float() @ b_nk.float().t()
    # B K-major (read as is) and row-major (transposed by the wrapper first)
    for b in (b_nk.t(), b_nk.t().contiguous()):
        c = mm.matmul(a, b)
        assert c.dtype == torch.float16 and c.shape == (M, N)
        # (f16 rounding of the result: 2^-11 relative)
        assert _relative_error(c, want) < 2e-3
