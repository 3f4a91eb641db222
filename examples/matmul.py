"""Matrix multiply C = A @ B with three nested loops.

    python examples/matmul.py
"""
import sys

import numpy as np

import edsl
from edsl import InOut, Input


@edsl.dialect
def matmul(c: InOut["memref<?x?xf32>"], a: Input["memref<?x?xf32>"], b: Input["memref<?x?xf32>"]):
    for i in range(c.shape[0]):
        for j in range(c.shape[1]):
            acc = 0.0
            for k in range(a.shape[1]):
                acc += a[i, k] * b[k, j]
            c[i, j] = acc


def main() -> int:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((96, 64)).astype(np.float32)
    b = rng.standard_normal((64, 80)).astype(np.float32)
    c = np.zeros((96, 80), np.float32)

    matmul(c, a, b)

    expected = a.astype(np.float64) @ b.astype(np.float64)
    error = float(np.max(np.abs(c - expected)))
    ok = np.allclose(c, expected, rtol=1e-4, atol=1e-4)
    print(f"matmul {a.shape} @ {b.shape}: max error {error:.2e} vs NumPy -> {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
