"""A kernel every installation has, for `edsl export --help`'s example:

    edsl export edsl.export.example:add_kernel add_dpu \\
        --signature x_ptr='*fp32' y_ptr='*fp32' out_ptr='*fp32' n=i32 \\
        --constant BLOCK=1024 --grid 98 --data x_ptr=100000 y_ptr=100000 out_ptr=100000 n=100000
    make -C add_dpu run-sim
"""
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
