"""Shared test configuration.

* The on-disk compile cache goes to a temporary directory of the test session,
  never to the user's home directory.
* Every launch checks races between a DPU's tasklets in EDSL code
  (EDSL_RACE_CHECK=1, edsl.dpu.races) unless a test says otherwise.
* Hypothesis runs without a deadline (the first example of a test pays for a
  JIT compilation) and with few examples, so that the suite stays fast on a
  small machine. `HYPOTHESIS_PROFILE=thorough` runs 300 examples of each
  property that does not set its own count (most set one, for the time they
  take).
"""
from __future__ import annotations

import os
import pathlib
import tempfile

import pytest
from hypothesis import HealthCheck, settings

# Set at import time as well as in the fixture below: kernels are decorated
# when test modules are imported, before any fixture runs. The fixture then
# moves the cache under pytest's own temporary directory for the session.
_IMPORT_CACHE = tempfile.TemporaryDirectory(prefix="edsl-test-cache-")
os.environ["EDSL_CACHE_DIR"] = _IMPORT_CACHE.name
os.environ.setdefault("EDSL_RACE_CHECK", "1")

_COMMON = dict(
    deadline=None,
    database=None,  # keep the working tree clean; failing examples are printed
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("edsl", max_examples=50, **_COMMON)
settings.register_profile("thorough", max_examples=300, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "edsl"))


@pytest.fixture(scope="session", autouse=True)
def edsl_cache_dir(tmp_path_factory):
    """The compile cache directory used by the whole session."""
    path = tmp_path_factory.mktemp("edsl-cache")
    previous = os.environ.get("EDSL_CACHE_DIR")
    os.environ["EDSL_CACHE_DIR"] = str(path)
    yield path
    if previous is None:
        os.environ.pop("EDSL_CACHE_DIR", None)
    else:
        os.environ["EDSL_CACHE_DIR"] = previous


@pytest.fixture(scope="module", autouse=True)
def triton_driver(request):
    """Triton's driver for each test module: the DPU model's, except in
    tests/gpu (Triton's own default: CUDA where a GPU is). Chosen in the
    process, so that the suite runs on a machine whose GPU driver is active
    too, on any Triton (Triton 3.6 does not read TRITON_DEFAULT_BACKEND); the
    tests' child processes that run DPU kernels call `edsl.backend.activate()`."""
    if request.path.parent == pathlib.Path(__file__).parent / "gpu":
        from triton.backends import backends
        gpu = [b.driver for name, b in backends.items() if name != "dpu" and b.driver.is_active()]
        if not gpu:
            yield
            return
        driver = gpu[0]()
    else:
        driver = None                      # (the DPU model's)
    from edsl.backend import activated
    with activated(driver):
        yield
