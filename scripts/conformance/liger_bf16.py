"""pytest plugin for Liger-Kernel's tests on the `dpu` backend (or Triton's
interpreter): its bf16 cases run. Its tests skip them unless the device is a
GPU of compute capability 8.0 or more (`test.utils.supports_bfloat16()`,
evaluated as a test module is imported); the backend computes bf16 (as
Triton's GPU backends do: in f32, rounded to bf16 where stored), so the
function answers yes before any test module imports it. Nothing else of the
tests changes.

    python scripts/triton_conformance.py run LIGER --mode dpu --plugin scripts/conformance/liger_bf16.py ...
"""
import sys


def pytest_configure(config):
    sys.path.insert(0, str(config.rootpath))
    import test.utils
    test.utils.supports_bfloat16 = lambda: True
