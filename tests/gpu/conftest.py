"""Tests of the nvptx64 target and of `fl.call` on Triton's stock nvidia backend.

Most run anywhere: code generation and lowering for nvptx64, each injection
step on IR text, and whole kernels compiled by the stock backend down to PTX
and a cubin (`triton.compile` with a CUDA target needs no GPU; Triton ships
ptxas). Those that run kernels need an NVIDIA GPU and torch (`gpu` marker);
they skip with the reason where there is none.
"""
from __future__ import annotations

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU with CUDA, and torch")


def _cuda_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "needs torch with CUDA (torch is not installed here)"
    if not torch.cuda.is_available():
        return "needs an NVIDIA GPU with CUDA (none visible here)"
    return None


def pytest_collection_modifyitems(config, items):
    reason = None
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            reason = reason or _cuda_reason() or ""
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(autouse=True)
def triton_cache(tmp_path_factory, monkeypatch):
    """Kernels compile into a cache of the test session, not the user's."""
    path = tmp_path_factory.getbasetemp() / "triton-cache"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(path))
    return path
