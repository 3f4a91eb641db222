"""libdevice's functions with their own DPU lowering (rounding-mode
arithmetic, special functions computed in f64, bit-level integer
functions), exported as C: the runner agrees with the model bit for bit."""
import numpy as np
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice

from export_helpers import export_and_run, needs_cc

N = 32


@triton.jit
def spread_kernel(x_ptr, y_ptr, i_ptr, f_ptr, g_ptr, j_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x, y, k = tl.load(x_ptr + i), tl.load(y_ptr + i), tl.load(i_ptr + i)
    tl.store(f_ptr + i, libdevice.add_rz(x, y) + libdevice.div_ru(x, y) + libdevice.fma_rd(x, y, x))
    tl.store(g_ptr + i, libdevice.erfinv(x * 0.01) + libdevice.sinpi(x) + libdevice.rsqrt(y * y + 1.0)
             + libdevice.hypot(x, y) + libdevice.ldexp(x, k % 40))
    tl.store(j_ptr + i, libdevice.byte_perm(k, k * 7, 0x3210 + k) + libdevice.float2int_rd(x)
             + libdevice.ilogb(y) + libdevice.mulhi(k, k * 13))


@needs_cc
def test_an_exported_project_computes_what_the_model_does(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.uniform(-50, 50, N).astype(np.float32)
    y = rng.uniform(-50, 50, N).astype(np.float32)
    k = rng.integers(-1000, 1000, N).astype(np.int32)
    outs = [np.zeros(N, np.float32), np.zeros(N, np.float32), np.zeros(N, np.int32)]
    export_and_run(tmp_path / "spread", spread_kernel, (x, y, k, *outs), {"N": N}, (1,))
