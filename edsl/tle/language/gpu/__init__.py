"""`triton.experimental.tle.language.gpu`: shared memory allocated in the
kernel (edsl.gpu.shared)."""
from ....gpu.shared import alloc, copy, local_ptr, smem

__all__ = ["alloc", "copy", "local_ptr", "smem"]
