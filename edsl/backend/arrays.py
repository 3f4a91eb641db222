"""`array(a)`: a zero-copy view of a NumPy array that Triton takes as a pointer.

Stock Triton types a pointer argument by its `data_ptr()` and `dtype`; a bare
`numpy.ndarray` has neither. `DpuArray` is an ndarray subclass that adds
`data_ptr()`, so it is still a NumPy array for everything else. While the DPU
driver is active, launches also accept bare arrays (see `driver.py`).
"""
from __future__ import annotations

import numpy as np


class DpuArray(np.ndarray):
    """A NumPy array usable as a Triton pointer argument (shares memory with its base)."""

    def data_ptr(self) -> int:
        return self.__array_interface__["data"][0]

    # As torch tensors have them, for Triton's `TensorWrapper` (`triton.reinterpret`).
    def element_size(self) -> int:
        return self.itemsize

    def stride(self, dim: int | None = None):
        """Strides in elements."""
        strides = tuple(s // self.itemsize for s in self.strides)
        return strides if dim is None else strides[dim]


def array(a) -> DpuArray:
    """A zero-copy view of an array that Triton kernels accept as a pointer argument.

    Args:
        a: A NumPy array, or anything `np.asarray` takes without copying.

    Returns:
        The view (a NumPy array subclass).
    """
    base = np.asarray(a)
    return base.view(DpuArray)
