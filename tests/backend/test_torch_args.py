"""Torch CPU tensors are kernel arguments too, where torch is installed."""
import importlib.util
import pathlib

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="torch is not installed here; NumPy arrays are tested elsewhere")


def test_torch_cpu_tensors_as_pointers():
    import torch
    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "triton_vector_add.py"
    spec = importlib.util.spec_from_file_location("vector_add_example", path)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    x = torch.arange(3001, dtype=torch.float32)
    y = torch.full((3001,), 0.5)
    out = torch.empty(3001)
    ex.add_kernel[(3,)](x, y, out, 3001, BLOCK=1024, num_tasklets=16)
    assert torch.equal(out, x + y)
