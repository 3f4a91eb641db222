"""`torch.compile` over a module that launches Triton kernels on `dpu`, as
it works over GPU kernels: the launch runs as it is (Dynamo does not trace
the launcher), the rest of the module compiled around it."""
import importlib.util
import shutil

import pytest
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="torch is not installed here; NumPy arrays are tested elsewhere")


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0)
    scale = libdevice.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)      # (as Liger's RMS norm writes it)
    tl.store(y_ptr + row * n_cols + cols, x * scale * tl.load(w_ptr + cols, mask=m), mask=m)


def _module():
    import torch

    class RMSNormBlock(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, n))
            self.proj = torch.nn.Linear(n, n)

        def forward(self, x):
            h = self.proj(x)
            y = torch.empty_like(h)
            rms_norm_kernel[(h.shape[0],)](h, self.weight, y, h.shape[1], 1e-6,
                                           BLOCK=triton.next_power_of_2(h.shape[1]), num_dpus=4)
            return torch.relu(y) + x

    return RMSNormBlock


def _reference(block, x):
    import torch
    h = block.proj(x)
    y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * block.weight
    return torch.relu(y) + x


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_torch_compile_runs_a_module_that_launches_on_dpu(backend):
    import torch
    if backend == "inductor" and shutil.which("g++") is None and shutil.which("c++") is None:
        pytest.skip("inductor's CPU code needs a C++ compiler")
    torch._dynamo.reset()
    torch.manual_seed(0)
    block = _module()(48)
    x = torch.randn(10, 48)
    with torch.no_grad():
        expected = _reference(block, x)
        compiled = torch.compile(block, backend=backend)
        for _ in range(2):                       # (the second call runs what was compiled)
            torch.testing.assert_close(compiled(x), expected, rtol=1e-5, atol=1e-5)
