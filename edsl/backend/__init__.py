"""`dpu`: a Triton backend plug-in that runs `@triton.jit` kernels on the host
model of UPMEM DPUs (registered in the `triton.backends` entry-point group).

    kernel[grid](x, y, out, n, BLOCK=1024, num_dpus=4)   # NumPy arrays in and out
    edsl.backend.last_report()                           # WRAM, DMA, host<->MRAM bytes

Triton imports this package (and its `compiler` and `driver` modules) at
`import triton`, so they import nothing heavy at module level. Imported
first, the package imports Triton before any of its modules: Triton's
discovery of backends would otherwise import `compiler` or `driver` while
that very module is half-imported (`import edsl.backend.compiler` failed).
"""
from __future__ import annotations

import triton  # noqa: F401  (at `import triton`, the half-imported Triton: its discovery runs)

__all__ = ["array", "last_report", "DpuArray", "activate", "activated"]


def __getattr__(name):
    if name in ("activate", "activated"):
        from . import driver
        return getattr(driver, name)
    if name in ("array", "DpuArray"):
        from . import arrays
        return getattr(arrays, name)
    if name in ("last_report", "LaunchReport"):
        from . import model
        return getattr(model, name)
    raise AttributeError(name)
