"""Host-side tensor descriptors (`TensorDescriptor.from_tensor`) as kernel
arguments: blocks loaded and stored through them, partly out of bounds
included (loads read zeros there, stores leave the memory alone), against torch."""
import pytest
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st

from edsl.base.errors import ArgumentError

torch = pytest.importorskip("torch", reason="TensorDescriptor.from_tensor takes torch tensors")
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

try:
    from triton.backends.driver import decompose_descriptor  # noqa: F401
    DECOMPOSES = True
except ImportError:                 # Triton before 3.7
    DECOMPOSES = False


@triton.jit
def scale_blocks(x_desc, z_desc, BM: tl.constexpr, BN: tl.constexpr):
    m, n = tl.program_id(0) * BM, tl.program_id(1) * BN
    z_desc.store([m, n], x_desc.load([m, n]) * 2 + 1)


@pytest.mark.skipif(not DECOMPOSES, reason="host-side tensor descriptors need triton 3.7 or later")
@settings(max_examples=15, deadline=None)
@given(rows=st.integers(1, 40), cols=st.integers(1, 24), bm=st.sampled_from([1, 4, 16]),
       bn=st.sampled_from([4, 8, 16]), seed=st.integers(0, 2 ** 16), tasklets=st.sampled_from([1, 16]))
def test_blocks_through_descriptors(rows, cols, bm, bn, seed, tasklets):
    # Row strides must be multiples of 16 bytes, as Triton checks.
    width = -(-cols // 4) * 4
    g = torch.Generator().manual_seed(seed)
    x = torch.rand((rows, width), generator=g)[:, :cols]
    zbuf = torch.full((rows, width), -7.0)
    z = zbuf[:, :cols]
    grid = (triton.cdiv(rows, bm), triton.cdiv(cols, bn))
    scale_blocks[grid](TensorDescriptor.from_tensor(x, [bm, bn]), TensorDescriptor.from_tensor(z, [bm, bn]),
                       BM=bm, BN=bn, num_tasklets=tasklets)
    torch.testing.assert_close(z, x * 2 + 1, atol=0, rtol=0)
    assert (zbuf[:, cols:] == -7).all()          # outside the descriptor's shape: untouched


@pytest.mark.skipif(DECOMPOSES, reason="Triton 3.7 and later decompose host-side descriptors")
def test_descriptors_need_a_newer_triton():
    x = torch.zeros((4, 4))
    with pytest.raises(ArgumentError, match="need triton 3.7 or later"):
        scale_blocks[(1, 1)](TensorDescriptor.from_tensor(x, [4, 4]), TensorDescriptor.from_tensor(x, [4, 4]),
                             BM=4, BN=4)
