"""Row softmax of a 2-D array: max, exponentials and sum per row, then a
normalisation, in one edsl function.

    python examples/softmax.py
"""
import math
import sys

import numpy as np

import edsl
from edsl import InOut, Input


@edsl.dialect
def softmax(y: InOut["memref<?x?xf32>"], x: Input["memref<?x?xf32>"]):
    for i in range(x.shape[0]):
        row_max = -math.inf
        for j in range(x.shape[1]):
            row_max = max(row_max, x[i, j])
        total = 0.0
        for j in range(x.shape[1]):
            e = math.exp(x[i, j] - row_max)
            y[i, j] = e
            total += e
        for j in range(x.shape[1]):
            y[i, j] = y[i, j] / total


def main() -> int:
    rng = np.random.default_rng(0)
    x = (4 * rng.standard_normal((64, 1000))).astype(np.float32)
    y = np.zeros_like(x)

    softmax(y, x)

    z = np.exp(x - x.max(axis=1, keepdims=True))
    expected = z / z.sum(axis=1, keepdims=True)
    error = float(np.max(np.abs(y - expected)))
    ok = np.allclose(y, expected, rtol=1e-5, atol=1e-7)
    print(f"softmax of {x.shape[0]}x{x.shape[1]}: max error {error:.2e} vs NumPy -> {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
