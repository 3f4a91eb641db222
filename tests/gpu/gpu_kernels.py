"""EDSL functions that the GPU tests compile (anywhere) and run (on a GPU)."""
import edsl
from edsl import InOut, Input


@edsl.dialect
def reverse(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
    n = y.shape[0]
    for i in range(edsl.thread_id(), n, edsl.num_threads()):
        y[i] = x[n - 1 - i]


@edsl.dialect
def reverse_2d(y: InOut["memref<?x?xf32>"], x: Input["memref<?x?xf32>"]):
    rows, cols = y.shape[0], y.shape[1]
    for e in range(edsl.thread_id(), rows * cols, edsl.num_threads()):
        y[e // cols, e % cols] = x[rows - 1 - e // cols, cols - 1 - e % cols]


@edsl.dialect
def prefix_sum(y: InOut["memref<?x?xf32>"], x: Input["memref<?x?xf32>"]):
    if edsl.thread_id() == 0:
        s = 0.0
        for i in range(y.shape[0]):
            for j in range(y.shape[1]):
                s += x[i, j]
                y[i, j] = s
