"""Whether Triton's interpreter runs kernels here: the tests that compare the
`dpu` backend with it skip that part where it cannot (a Triton whose
interpreter fails in its own code with the NumPy installed)."""
from __future__ import annotations

import functools
import os
import subprocess
import sys

# A loop over a kernel argument: Triton 3.6's interpreter cannot run it with
# NumPy 2.5 (its scalar's __index__ converts a 1-element array to an int).
_PROBE = """
import torch, triton, triton.language as tl
@triton.jit
def k(x_ptr, n):
    for i in range(0, n):
        tl.store(x_ptr + i, i)
x = torch.zeros(3, dtype=torch.int32)
k[(1,)](x, 3)
assert x.tolist() == [0, 1, 2], x
"""


@functools.lru_cache(None)
def interpreter_problem() -> str | None:
    """Why Triton's interpreter cannot run kernels here (the last line of its
    error), or None when it can."""
    env = dict(os.environ, TRITON_INTERPRET="1")
    env.pop("TRITON_DEFAULT_BACKEND", None)
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=300)
    if done.returncode == 0:
        return None
    return (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
