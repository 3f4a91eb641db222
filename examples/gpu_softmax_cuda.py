"""Row softmax on an NVIDIA GPU whose body is a raw function in CUDA C
(`examples/gpu_softmax_row.cu`, compiled by the ziglang package's clang):
`fl.call` hands it the input and output pointers, the block walks its rows,
and every thread keeps its share of a row in registers (16-byte loads and
stores), so each row is read once and written once, as in Triton's fused
softmax. A row may have up to 32 f32 a thread (16,384 columns at 16 warps),
a multiple of 4 columns, rows 16-byte aligned.

    python examples/gpu_softmax_cuda.py
"""
import pathlib
import sys

import triton

import edsl
from edsl import fl

MAX_PER_THREAD = 32   # f32 a thread, as in the .cu file


@edsl.dialect(name="cuda", file=pathlib.Path(__file__).with_name("gpu_softmax_row.cu"))
def row_softmax(*args, **kwargs):
    ...


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols):
    fl.call(row_softmax, [out_ptr, in_ptr, n_rows, n_cols, in_stride, out_stride])


def warps_for(cols: int) -> int:
    """The fewest warps whose registers hold the row (an H200 sweep: fewer warps,
    more programs were faster)."""
    return 2 if cols <= 2048 else 4 if cols <= 4096 else 8 if cols <= 8192 else 16


def softmax(x, programs: int = 2112):
    import torch
    rows, cols = x.shape
    warps = warps_for(cols)
    y = torch.empty_like(x)
    if cols > MAX_PER_THREAD * 32 * warps:
        raise ValueError(f"{cols} columns: at most {MAX_PER_THREAD * 32 * warps} on {warps} warps")
    if cols % 4 or any(t.stride(0) % 4 or t.stride(1) != 1 or t.data_ptr() % 16 for t in (x, y)):
        raise ValueError("rows of a multiple of 4 contiguous f32, 16-byte aligned")
    softmax_kernel[(min(programs, rows),)](y, x, x.stride(0), y.stride(0), rows, cols, num_warps=warps)
    return y


if __name__ == "__main__":
    import torch
    x = torch.randn(823, 780, device="cuda", generator=torch.Generator(device="cuda").manual_seed(0))
    got = softmax(x)
    want = torch.softmax(x, dim=1)
    err = (got - want).abs().max().item()
    ok = err < 1e-6
    print(f"GPU fl.call CUDA C softmax of {tuple(x.shape)}: max error {err:.2e} vs torch -> "
          f"{'OK' if ok else 'MISMATCH'}")
    sys.exit(0 if ok else 1)
