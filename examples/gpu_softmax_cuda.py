"""Row softmax on an NVIDIA GPU whose body is a raw function in CUDA C
(`examples/gpu_softmax_row.cu`, compiled by the ziglang package's clang):
`fl.call` hands it the row's input and output pointers, and every thread of
the block keeps its share of the row in registers, so the row is read once
and written once, as in Triton's fused softmax. Each program walks rows with
a stride. A row may have up to 32 f32 a thread (8,192 columns at 8 warps).

    pip install -e ".[cuda]" && python examples/gpu_softmax_cuda.py
"""
import pathlib
import sys

import triton
import triton.language as tl

import edsl
from edsl import fl

MAX_PER_THREAD = 32   # as in the .cu file


@edsl.dialect(name="cuda", file=pathlib.Path(__file__).with_name("gpu_softmax_row.cu"))
def row_softmax(*args, **kwargs):
    ...


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        fl.call(row_softmax, [out_ptr + row * out_stride, in_ptr + row * in_stride, n_cols])


def warps_for(cols: int) -> int:
    return 4 if cols <= 2048 else 8 if cols <= 8192 else 16


def softmax(x, programs: int = 528):
    import torch
    rows, cols = x.shape
    warps = warps_for(cols)
    if cols > MAX_PER_THREAD * 32 * warps:
        raise ValueError(f"{cols} columns: at most {MAX_PER_THREAD * 32 * warps} on {warps} warps")
    y = torch.empty_like(x)
    softmax_kernel[(min(programs, rows),)](y, x, x.stride(0), y.stride(0), rows, cols, num_warps=warps)
    return y


if __name__ == "__main__":
    import torch
    x = torch.randn(823, 781, device="cuda", generator=torch.Generator(device="cuda").manual_seed(0))
    got = softmax(x)
    want = torch.softmax(x, dim=1)
    err = (got - want).abs().max().item()
    ok = err < 1e-6
    print(f"GPU fl.call CUDA C softmax of {tuple(x.shape)}: max error {err:.2e} vs torch -> "
          f"{'OK' if ok else 'MISMATCH'}")
    sys.exit(0 if ok else 1)
