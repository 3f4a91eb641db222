"""Row-wise top-k (values and indices, largest first) on the DPU model: k rounds of
`tl.argmax`, each masking out the element it found.

    python examples/triton_topk.py
"""
import numpy as np
import triton
import triton.language as tl


@triton.jit
def topk_kernel(x_ptr, values_ptr, indices_ptr, n_cols, K: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    for i in tl.static_range(K):
        best = tl.argmax(x, axis=0)
        value = tl.max(x, axis=0)
        tl.store(values_ptr + row * K + i, value)
        tl.store(indices_ptr + row * K + i, best)
        x = tl.where(cols == best, -float("inf"), x)


def topk(x, k, num_dpus=4):
    rows, cols = x.shape
    values = np.empty((rows, k), dtype=x.dtype)
    indices = np.empty((rows, k), dtype=np.int32)
    topk_kernel[(rows,)](x, values, indices, cols, K=k, BLOCK=triton.next_power_of_2(cols),
                         num_dpus=num_dpus)
    return values, indices


def reference(x, k):
    indices = np.argsort(-x, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(x, indices, axis=1), indices


if __name__ == "__main__":
    x = np.random.default_rng(0).standard_normal((37, 200)).astype(np.float32)
    values, indices = topk(x, 5)
    ref_values, ref_indices = reference(x, 5)
    ok = np.array_equal(values, ref_values) and np.array_equal(indices, ref_indices)
    print(f"top-5 of {x.shape} float32 rows: {'OK' if ok else 'MISMATCH'} against NumPy")
    raise SystemExit(0 if ok else 1)
