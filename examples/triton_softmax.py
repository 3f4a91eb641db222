"""Row-wise softmax with an ordinary `@triton.jit` kernel on the DPU model.

    python examples/triton_softmax.py
"""
import numpy as np
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * row_stride + cols, num / den, mask=mask)


def softmax(x, num_dpus=4):
    rows, cols = x.shape
    out = np.empty_like(x)
    softmax_kernel[(rows,)](out, x, cols, x.shape[1], BLOCK=triton.next_power_of_2(cols),
                            num_dpus=num_dpus)
    return out


def reference(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


if __name__ == "__main__":
    x = np.random.default_rng(0).standard_normal((123, 781)).astype(np.float32)
    out = softmax(x)
    ok = np.allclose(out, reference(x), rtol=1e-5, atol=1e-6)
    print(f"softmax of {x.shape} float32: {'OK' if ok else 'MISMATCH'} against NumPy "
          f"(max abs err {np.abs(out - reference(x)).max():.2e})")
    raise SystemExit(0 if ok else 1)
