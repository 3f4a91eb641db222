"""saxpy: y = a*x + y, written as a plain Python loop and run on the DPU model.

    python examples/saxpy.py
"""
import sys

import numpy as np

import edsl
from edsl import InOut, Input


@edsl.dialect
def saxpy(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], a: Input["f32"]):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


def main() -> int:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(10_000).astype(np.float32)
    y = rng.standard_normal(10_000).astype(np.float32)
    expected = 2.0 * x + y

    saxpy(y, x, 2.0)  # y is updated in place

    error = float(np.max(np.abs(y - expected)))
    ok = np.allclose(y, expected, rtol=1e-6, atol=1e-6)
    print(f"saxpy on {y.size} elements: max error {error:.2e} vs NumPy -> {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
