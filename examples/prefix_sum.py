"""Inclusive prefix sum (scan), y[i] = x[0] + ... + x[i], on int32 and float32.

    python examples/prefix_sum.py
"""
import sys

import numpy as np

import edsl
from edsl import InOut, Input


@edsl.dialect
def prefix_sum(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
        y[i] = acc


@edsl.dialect
def prefix_sum_i32(y: InOut["memref<?xi32>"], x: Input["memref<?xi32>"]):
    acc = edsl.i32(0)  # i32 arithmetic wraps, as NumPy's
    for i in range(x.shape[0]):
        acc += x[i]
        y[i] = acc


def main() -> int:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(100_000).astype(np.float32)
    y = np.zeros_like(x)
    prefix_sum(y, x)
    expected = np.cumsum(x, dtype=np.float32)  # NumPy's cumsum is sequential too
    error = float(np.max(np.abs(y - expected)))
    ok = error == 0.0

    xi = rng.integers(-1000, 1000, 100_000, dtype=np.int32)
    yi = np.zeros_like(xi)
    prefix_sum_i32(yi, xi)
    ok_i = np.array_equal(yi, np.cumsum(xi, dtype=np.int32))

    print(f"prefix sum of {x.size} float32: max error {error:.2e} vs NumPy -> {'OK' if ok else 'MISMATCH'}")
    print(f"prefix sum of {xi.size} int32: {'OK' if ok_i else 'MISMATCH'}")
    return 0 if ok and ok_i else 1


if __name__ == "__main__":
    sys.exit(main())
