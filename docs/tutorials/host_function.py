"""An EDSL function on the host: compiled through MLIR, run on the DPU model,
checked against NumPy.

    python docs/tutorials/host_function.py
"""
import numpy as np

import edsl
from edsl import InOut, Input


# --8<-- [start:saxpy]
@edsl.dialect
def saxpy(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], a: Input["f32"]):
    # every tasklet takes every num_tasklets()-th element
    for i in range(edsl.tasklet_id(), y.shape[0], edsl.num_tasklets()):
        y[i] = a * x[i] + y[i]
# --8<-- [end:saxpy]


# --8<-- [start:total]
@edsl.dialect
def total(out: InOut["memref<1xf32>"], x: Input["memref<?xf32>"]):
    acc = edsl.f32(0)               # a typed start: the sum is in f32
    for i in range(len(x)):
        acc += x[i]
    out[0] = acc
# --8<-- [end:total]


# --8<-- [start:run]
rng = np.random.default_rng(0)
x = rng.standard_normal(10_000).astype(np.float32)
y = rng.standard_normal(10_000).astype(np.float32)
want = 2.0 * x + y

saxpy(y, x, 2.0)                    # one tasklet; y is updated in place
assert np.allclose(y, want, rtol=1e-6, atol=1e-6)

y2 = want.copy()
report = saxpy.run(y2, x, -2.0, tasklets=4)     # four tasklets (host threads)
assert np.allclose(y2, want - 2.0 * x, rtol=1e-5, atol=1e-5)
print(f"4 tasklets: {report.tasklets} tasklets ran")
# --8<-- [end:run]

# --8<-- [start:sum]
out = np.zeros(1, dtype=np.float32)
total(out, x)
assert np.isclose(out[0], x.sum(dtype=np.float64), rtol=1e-3, atol=1e-2)

print(f"LLVM-dialect MLIR: {len(saxpy.llvm.splitlines())} lines")   # the text kernels inject
# --8<-- [end:sum]
print("OK: host function matches NumPy")
