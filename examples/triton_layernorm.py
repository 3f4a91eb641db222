"""Layer normalization (forward) with an ordinary `@triton.jit` kernel on the DPU model.

    python examples/triton_layernorm.py
"""
import numpy as np
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * n_cols + cols, diff * rstd * w + b, mask=mask)


def layernorm(x, w, b, eps=1e-5, num_dpus=4):
    rows, cols = x.shape
    y = np.empty_like(x)
    layernorm_kernel[(rows,)](x, y, w, b, cols, eps, BLOCK=triton.next_power_of_2(cols),
                              num_dpus=num_dpus)
    return y


def reference(x, w, b, eps=1e-5):
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 300)).astype(np.float32)
    w = rng.standard_normal(300).astype(np.float32)
    b = rng.standard_normal(300).astype(np.float32)
    y = layernorm(x, w, b)
    ok = np.allclose(y, reference(x, w, b), rtol=1e-4, atol=1e-4)
    print(f"layernorm of {x.shape} float32: {'OK' if ok else 'MISMATCH'} against NumPy "
          f"(max abs err {np.abs(y - reference(x, w, b)).max():.2e})")
    raise SystemExit(0 if ok else 1)
