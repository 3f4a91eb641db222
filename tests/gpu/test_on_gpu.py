"""`fl.call` kernels run on an NVIDIA GPU by Triton's stock nvidia backend,
checked against torch: tiles of each layout (1-D, 2-D, a `tl.dot`
accumulator), thread-0 and all-thread bodies, calls chained in a loop,
pointers and scalars, element types, several outs, the CTA size, the
examples, and an edited EDSL function recompiling the kernel in a new process."""
import os
import subprocess
import sys
import textwrap

import pytest
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice
from hypothesis import given, settings, strategies as st

import edsl
from edsl import InOut, Input, fl
from gpu_helpers import EXAMPLES
from gpu_kernels import prefix_sum, reverse, reverse_2d

pytestmark = pytest.mark.gpu
FEW = settings(max_examples=8, deadline=None)


def _torch():
    import torch
    return torch



def _child_env(tmp_path) -> dict:
    """A child process's environment: its own caches, and Triton's default
    driver, the GPU's (whatever TRITON_DEFAULT_BACKEND the caller has set).
    (No folder named `edsl` beside a script the child runs: Python would
    take it for the package.)"""
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "triton"), EDSL_CACHE_DIR=str(tmp_path / "edsl-cache"))
    env.pop("TRITON_DEFAULT_BACKEND", None)
    return env

@triton.jit
def chain_kernel(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, TILES: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    for t in range(TILES):
        x = tl.load(x_ptr + t * M * N + offs)
        y = fl.call(reverse_2d, [tl.zeros_like(x)], [x])
        z = fl.call(prefix_sum, [y], [y])   # the out's old value is the in
        tl.store(o_ptr + t * M * N + offs, z)


@triton.jit
def dot_kernel(a_ptr, b_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    acc = tl.dot(tl.load(a_ptr + rm[:, None] * K + rk[None, :]), tl.load(b_ptr + rk[:, None] * N + rn[None, :]))
    y = fl.call(reverse_2d, [tl.zeros_like(acc)], [acc])
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], y + 1.0)


@triton.jit
def reverse_kernel(x_ptr, o_ptr, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + offs, fl.call(reverse, [tl.zeros_like(x)], [x]))


@FEW
@given(block=st.sampled_from([32, 128, 1024]), programs=st.integers(1, 5), warps=st.sampled_from([1, 4, 8]),
       seed=st.integers(0, 99))
def test_reverse_1d_tiles(block, programs, warps, seed):
    torch = _torch()
    x = torch.randn(programs * block, device="cuda", generator=torch.Generator("cuda").manual_seed(seed))
    o = torch.full_like(x, float("nan"))
    reverse_kernel[(programs,)](x, o, B=block, num_warps=warps)
    torch.testing.assert_close(o, x.view(programs, block).flip(1).reshape(-1), rtol=0, atol=0)


@FEW
@given(m=st.sampled_from([1, 2, 16, 32]), n=st.sampled_from([16, 32, 64]), seed=st.integers(0, 99))
def test_calls_chained_in_a_loop(m, n, seed):
    torch = _torch()
    x = torch.randn(3, m, n, device="cuda", generator=torch.Generator("cuda").manual_seed(seed))
    o = torch.full_like(x, float("nan"))
    chain_kernel[(1,)](x, o, M=m, N=n, TILES=3)
    want = torch.cumsum(x.flip(1, 2).reshape(3, -1).double(), 1).float().reshape(x.shape)
    torch.testing.assert_close(o, want, rtol=1e-5, atol=1e-4)


@triton.jit
def branch_kernel(x_ptr, o_ptr, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    if tl.program_id(0) % 2 == 0:
        y = fl.call(reverse, [tl.zeros_like(x)], [x])
    else:
        y = x * 2
    tl.store(o_ptr + offs, y)


def test_a_call_in_a_branch_taken_by_some_ctas():
    torch = _torch()
    x = torch.randn(6 * 64, device="cuda", generator=torch.Generator("cuda").manual_seed(3))
    o = torch.empty_like(x)
    branch_kernel[(6,)](x, o, B=64)
    tiles = x.view(6, 64)
    want = torch.where(torch.arange(6, device="cuda")[:, None] % 2 == 0, tiles.flip(1), tiles * 2)
    torch.testing.assert_close(o.view(6, 64), want, rtol=0, atol=0)


def test_dot_accumulator_tile():
    torch = _torch()
    gen = torch.Generator("cuda").manual_seed(0)
    a = torch.randn(64, 32, device="cuda", generator=gen).half()
    b = torch.randn(32, 64, device="cuda", generator=gen).half()
    o = torch.empty(64, 64, device="cuda")
    dot_kernel[(1,)](a, b, o, M=64, N=64, K=32)
    torch.testing.assert_close(o, (a.float() @ b.float()).flip(0, 1) + 1.0, rtol=1e-3, atol=1e-2)


@edsl.dialect
def stamp(ids: InOut["memref<?xi32>"], x: Input["memref<?xf16>"], y: Input["memref<?xbf16>"],
          w: InOut["memref<?xf64>"], scale: Input["f32"]):
    t = edsl.thread_id()
    if t < ids.shape[0]:
        ids[t] = edsl.block_id() * 100000 + edsl.num_threads() * 100 + t
    for i in range(t, w.shape[0], edsl.num_threads()):
        w[i] = edsl.f64(x[i]) * scale + edsl.f64(y[i])


@triton.jit
def stamp_kernel(x_ptr, y_ptr, ids_ptr, w_ptr, scale, B: tl.constexpr, T: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    ids = tl.full([T], -1, tl.int32)
    w = tl.zeros([B], tl.float64)
    ids, w = fl.call(stamp, [ids, w], [tl.load(x_ptr + offs), tl.load(y_ptr + offs), scale])
    tl.store(ids_ptr + pid * T + tl.arange(0, T), ids)
    tl.store(w_ptr + offs, w)


@pytest.mark.parametrize("warps", [1, 2, 8])
def test_types_several_outs_block_and_thread_ids(warps):
    torch = _torch()
    gen = torch.Generator("cuda").manual_seed(warps)
    x = torch.randn(3 * 256, device="cuda", generator=gen).half()
    y = torch.randn(3 * 256, device="cuda", generator=gen).bfloat16()
    threads = 32 * warps
    ids = torch.empty(3, 512, device="cuda", dtype=torch.int32)
    w = torch.empty(3 * 256, device="cuda", dtype=torch.float64)
    stamp_kernel[(3,)](x, y, ids, w, 0.5, B=256, T=512, num_warps=warps)
    t = torch.arange(512, device="cuda", dtype=torch.int32)
    want = torch.where(t < threads, torch.arange(3, device="cuda")[:, None] * 100000 + threads * 100 + t, -1)
    torch.testing.assert_close(ids, want.int(), rtol=0, atol=0)
    torch.testing.assert_close(w, x.double() * 0.5 + y.double(), rtol=0, atol=0)


@edsl.dialect
def axpy_global(x: Input["memref<?xf32, global>"], out: Input["!llvm.ptr<global>"], a: Input["f32"],
                n: Input["i32"]):
    from mlir import ir
    from mlir.dialects import llvm
    f32 = ir.F32Type.get()
    start = edsl.block_id() * edsl.num_threads() + edsl.thread_id()
    for i in range(start, n, edsl.num_threads() * edsl.num_blocks()):
        p = llvm.getelementptr(ir.Type.parse("!llvm.ptr<1>"), out, [edsl.i32(i)], [-2147483648], f32, 0)
        llvm.store(edsl.f32(a * x[i] + llvm.load(f32, p)), p)


@triton.jit
def axpy_kernel(x_ptr, out_ptr, a, n):
    fl.call(axpy_global, [], [x_ptr, out_ptr, a, n])


def test_pointers_and_scalars_with_a_grid_stride_loop():
    torch = _torch()
    gen = torch.Generator("cuda").manual_seed(1)
    x = torch.randn(100_003, device="cuda", generator=gen)
    out = torch.randn(100_003, device="cuda", generator=gen)
    want = 2.5 * x + out
    axpy_kernel[(7,)](x, out, 2.5, x.numel())
    torch.testing.assert_close(out, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["gpu_vector_add", "gpu_softmax", "gpu_softmax_cuda", "gpu_matmul", "gpu_matmul_smem",
                                  "gpu_topk",
                                  "gpu_topk_cuda", "fl_softmax", "fl_matmul", "fl_topk"])
def test_example(name, tmp_path):
    env = _child_env(tmp_path)
    done = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py")], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "OK" in done.stdout and ("GPU" in done.stdout or "on cuda" in done.stdout)


EDIT_SCRIPT = textwrap.dedent('''
    import torch, triton, triton.language as tl
    import edsl
    from edsl import InOut, Input, fl

    @edsl.dialect
    def body(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
        for i in range(edsl.thread_id(), y.shape[0], edsl.num_threads()):
            y[i] = x[i] * FACTOR

    @triton.jit
    def kernel(x_ptr, o_ptr, B: tl.constexpr):
        offs = tl.arange(0, B)
        x = tl.load(x_ptr + offs)
        tl.store(o_ptr + offs, fl.call(body, [tl.zeros_like(x)], [x]))

    x = torch.ones(64, device="cuda")
    o = torch.empty_like(x)
    kernel[(1,)](x, o, B=64)
    print(o[0].item())
''')


def test_an_edited_edsl_function_recompiles_the_kernel_in_a_new_process(tmp_path):
    script = tmp_path / "edited.py"
    env = _child_env(tmp_path)
    results = []
    for factor in ("2.0", "3.0", "2.0"):
        script.write_text(EDIT_SCRIPT.replace("FACTOR", factor))
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        results.append(float(done.stdout.split()[-1]))
    assert results == [2.0, 3.0, 2.0]


ASSERT_SCRIPT = textwrap.dedent('''
    import torch, triton, triton.language as tl
    import edsl
    from edsl import InOut, Input, fl

    @edsl.dialect
    def shift(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], k: Input["i32"]):
        assert k >= 0, "k must not be negative"
        for i in range(edsl.thread_id(), y.shape[0] - k, edsl.num_threads()):
            y[i] = x[i + k]

    @triton.jit
    def kernel(x_ptr, o_ptr, k, B: tl.constexpr):
        offs = tl.arange(0, B)
        x = tl.load(x_ptr + offs)
        tl.store(o_ptr + offs, fl.call(shift, [tl.zeros_like(x)], [x, k]))

    x = torch.arange(64, device="cuda", dtype=torch.float32)
    o = torch.empty_like(x)
    kernel[(1,)](x, o, 3, B=64)
    print(o[:3].tolist())
    kernel[(1,)](x, o, -1, B=64)
    torch.cuda.synchronize()
''')


def test_a_failed_assert_stops_the_kernel_naming_its_line(tmp_path):
    script = tmp_path / "asserting.py"
    script.write_text(ASSERT_SCRIPT)
    env = _child_env(tmp_path)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert done.stdout.splitlines()[0] == "[3.0, 4.0, 5.0]"
    assert done.returncode != 0
    assert f"{script}:8:5: assert k >= 0 failed: k must not be negative" in done.stdout + done.stderr


@edsl.dialect
def warp_sums(y: InOut["memref<?xf32>"], k: InOut["memref<?xi32>"]):
    """Element t becomes the sum over the warp of thread t (butterfly shuffles)."""
    t = edsl.thread_id()
    v = y[t]
    w = k[t]
    lane = 16
    while lane > 0:
        v = v + edsl.shuffle_xor(v, lane)
        w = w + edsl.shuffle_xor(w, lane)
        lane = lane // 2
    y[t] = v
    k[t] = w


@triton.jit
def warp_sums_kernel(x_ptr, k_ptr, T: tl.constexpr):
    offs = tl.arange(0, T)
    y, k = fl.call(warp_sums, [tl.load(x_ptr + offs), tl.load(k_ptr + offs)], [])
    tl.store(x_ptr + offs, y)
    tl.store(k_ptr + offs, k)


@FEW
@given(warps=st.sampled_from([1, 2, 4, 8]), seed=st.integers(0, 2 ** 16))
def test_shuffle_xor_sums_each_warp(warps, seed):
    torch = _torch()
    gen = torch.Generator("cuda").manual_seed(seed)
    threads = 32 * warps
    x = torch.randn(threads, device="cuda", generator=gen)
    k = torch.randint(-2 ** 20, 2 ** 20, (threads,), device="cuda", generator=gen, dtype=torch.int32)
    want_x = x.view(warps, 32).sum(1, keepdim=True).expand(warps, 32).reshape(-1)
    want_k = k.view(warps, 32).sum(1, keepdim=True).expand(warps, 32).reshape(-1)
    warp_sums_kernel[(1,)](x, k, T=threads, num_warps=warps)
    torch.testing.assert_close(x, want_x, rtol=1e-5, atol=1e-5)
    assert torch.equal(k, want_k)


@triton.jit
def store_fp16_kernel(o_ptr, a: tl.float16):
    tl.store(o_ptr, a)


@triton.jit
def store_bf16_kernel(o_ptr, a: tl.bfloat16):
    tl.store(o_ptr, a)


@pytest.mark.parametrize("name", ["fp16", "bf16"])
@FEW
@given(value=st.sampled_from([1 + 2 ** -8 + 2 ** -40, 1 + 3 * 2 ** -9, 1 + 2 ** -11 + 2 ** -40, 2.0 ** -25,
                              -0.0, float("inf")]) | st.floats(-60000, 60000))
def test_triton_launcher_makes_16_bit_scalars_by_the_models_rule(name, value):
    """A Python float for an fp16/bf16 scalar: the GPU launcher's bits are
    `dtypes.float_bits`', the rule of the DPU model and the exported runner."""
    from edsl.target import dtypes
    torch = _torch()
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[name]
    o = torch.zeros(1, dtype=dt, device="cuda")
    {"fp16": store_fp16_kernel, "bf16": store_bf16_kernel}[name][(1,)](o, value)
    assert int(o.view(torch.int16).item()) & 0xFFFF == dtypes.float_bits(dtypes.by_triton(name), value)


# --- tiles beyond 48 KiB ------------------------------------------------------------------

@edsl.dialect
def double_all(y: InOut["memref<?x?xf32>"], x: Input["memref<?x?xf32>"]):
    cols = y.shape[1]
    for k in range(edsl.thread_id(), y.shape[0] * cols, edsl.num_threads()):
        y[k // cols, k % cols] = x[k // cols, k % cols] * 2.0


@triton.autotune(configs=[triton.Config({"BM": bm}) for bm in (256, 128, 64, 16)], key=["n"])
@triton.jit
def double_rows(x_ptr, o_ptr, n, BM: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    offs = rows * 256 + tl.arange(0, 256)[None, :]
    m = rows < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(o_ptr + offs, fl.call(double_all, [tl.zeros_like(x)], [x]), mask=m)


def test_tiles_beyond_48_kib_run_and_the_autotuner_skips_those_beyond_the_gpu():
    torch = _torch()
    x = torch.randn(1000, 256, device="cuda")
    o = torch.empty_like(x)
    double_rows[lambda meta: (triton.cdiv(1000, meta["BM"]),)](x, o, 1000)
    torch.testing.assert_close(o, x * 2, rtol=0, atol=0)
    # 256 and 128 rows (512 and 256 KiB of tiles) exceed a block's 227 KiB: skipped, not fatal
    assert double_rows.best_config.kwargs["BM"] in (64, 16)
    o.zero_()
    double_rows.fn[(triton.cdiv(1000, 64),)](x, o, 1000, BM=64)          # 128 KiB of tiles
    torch.testing.assert_close(o, x * 2, rtol=0, atol=0)


@edsl.dialect(fastmath=True)
def fast_math_rows(y: InOut["memref<8x?xf32, shared>"], x: Input["memref<?xf32, shared>"]):
    for i in range(edsl.thread_id(), x.shape[0], edsl.num_threads()):
        a = x[i]
        y[0, i] = edsl.exp(a)
        y[1, i] = edsl.log(a)
        y[2, i] = edsl.log2(a)
        y[3, i] = edsl.log10(a)
        y[4, i] = edsl.sin(a)
        y[5, i] = edsl.cos(a)
        y[6, i] = edsl.tan(a)
        y[7, i] = a ** 1.5


@triton.jit
def fast_math_kernel(x_ptr, o_ptr, ref_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    rows = tl.arange(0, 8)[:, None] * B + offs[None, :]
    tl.store(o_ptr + rows, fl.call(fast_math_rows, [tl.zeros([8, B], tl.float32)], [x]))
    tl.store(ref_ptr + 0 * B + offs, libdevice.fast_expf(x))
    tl.store(ref_ptr + 1 * B + offs, libdevice.fast_logf(x))
    tl.store(ref_ptr + 2 * B + offs, libdevice.fast_log2f(x))
    tl.store(ref_ptr + 3 * B + offs, libdevice.fast_log10f(x))
    tl.store(ref_ptr + 4 * B + offs, libdevice.fast_sinf(x))
    tl.store(ref_ptr + 5 * B + offs, libdevice.fast_cosf(x))
    tl.store(ref_ptr + 6 * B + offs, libdevice.fast_tanf(x))
    tl.store(ref_ptr + 7 * B + offs, libdevice.fast_powf(x, tl.full([B], 1.5, tl.float32)))


def test_fast_math_is_libdevices_fast_math_bit_for_bit():
    """fastmath's exp, log, sin... (defined in the function's module) give the
    bits of libdevice's __nv_fast_* as Triton calls them, subnormals included."""
    torch = _torch()
    x = torch.cat([torch.rand(960, device="cuda") * 40, torch.tensor([1e-39, 3e-42, 1.0, 88.0], device="cuda"),
                   torch.rand(60, device="cuda") * 1e-3])
    got, want = torch.zeros(8, 1024, device="cuda"), torch.zeros(8, 1024, device="cuda")
    fast_math_kernel[(1,)](x, got, want, B=1024, num_warps=4)
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))
