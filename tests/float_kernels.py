"""A kernel that takes narrow floats (bf16, fp16, the 8-bit floats) through
f32 and back: for the tests of their arrays on the DPU model
(tests/codegen) and in the exported project (tests/export)."""
import triton
import triton.language as tl


@triton.jit
def halve_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, (x.to(tl.float32) * 0.5).to(y_ptr.dtype.element_ty), mask=m)
