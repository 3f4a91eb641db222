"""Each example kernel exported, built with the host C compiler against the SDK
stand-ins, run by its host runner on the data the export wrote, and compared
with NumPy and with the JIT run of `kernel[grid](...)` on the DPU model."""
import numpy as np
import pytest
import triton

import fl_vector_add
import triton_layernorm
import triton_matmul
import triton_softmax
import triton_topk
import triton_vector_add

from export_helpers import export_and_run, needs_cc, output, run_on_model

pytestmark = needs_cc


def _export_run(tmp_path, kernel, args, constants, grid, dpus, tasklets=1, **kw):
    folder = tmp_path / "project"
    return folder, export_and_run(folder, kernel, args, constants, grid, dpus, tasklets, **kw)


_jit = run_on_model


@pytest.mark.parametrize("n,dpus,tasklets", [(10_007, 3, 1), (1000, 1, 1), (4099, 4, 4)])
def test_vector_add(tmp_path, n, dpus, tasklets):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, dtype=np.float32)
    args, consts, grid = (x, y, out, n), {"BLOCK": 1024}, (triton.cdiv(n, 1024),)
    folder, r = _export_run(tmp_path, triton_vector_add.add_kernel, args, consts, grid, dpus, tasklets)
    assert "out_ptr: OK" in r.stdout
    got = output(folder, "out_ptr", out)
    np.testing.assert_array_equal(got, x + y)
    np.testing.assert_array_equal(got, _jit(triton_vector_add.add_kernel, args, consts, grid, dpus,
                                            tasklets)[2])
    np.testing.assert_array_equal(output(folder, "x_ptr", x), x)     # inputs unchanged


def test_softmax(tmp_path):
    x = (np.random.default_rng(1).standard_normal((13, 300)) * 4).astype(np.float32)
    out = np.zeros_like(x)
    args, consts, grid = (out, x, 300, 300), {"BLOCK": 512}, (13,)
    folder, _ = _export_run(tmp_path, triton_softmax.softmax_kernel, args, consts, grid, 4,
                            outputs=["out_ptr"])
    got = output(folder, "out_ptr", out)
    np.testing.assert_allclose(got, triton_softmax.reference(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, _jit(triton_softmax.softmax_kernel, args, consts, grid, 4)[0],
                               rtol=1e-6, atol=1e-7)
    assert not (folder / "out" / "in_ptr.bin").exists()      # only the named outputs are gathered


def test_layernorm(tmp_path):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((9, 300)).astype(np.float32)
    w = rng.standard_normal(300).astype(np.float32)
    b = rng.standard_normal(300).astype(np.float32)
    y = np.zeros_like(x)
    args, consts, grid = (x, y, w, b, 300, 1e-5), {"BLOCK": 512}, (9,)
    folder, _ = _export_run(tmp_path, triton_layernorm.layernorm_kernel, args, consts, grid, 2,
                            outputs=["y_ptr"])
    got = output(folder, "y_ptr", y)
    np.testing.assert_allclose(got, triton_layernorm.reference(x, w, b), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, _jit(triton_layernorm.layernorm_kernel, args, consts, grid, 2)[1],
                               rtol=1e-6, atol=1e-6)


def test_matmul(tmp_path):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((37, 29)).astype(np.float32)
    b = rng.standard_normal((29, 41)).astype(np.float32)
    c = np.zeros((37, 41), dtype=np.float32)
    args, consts, grid = (a, b, c, 37, 41, 29), {"BM": 16, "BN": 16, "BK": 8}, (3, 3)
    folder, _ = _export_run(tmp_path, triton_matmul.matmul_kernel, args, consts, grid, 4,
                            outputs=["c_ptr"])
    got = output(folder, "c_ptr", c)
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got, _jit(triton_matmul.matmul_kernel, args, consts, grid, 4)[2])


def test_topk(tmp_path):
    x = np.random.default_rng(4).standard_normal((11, 200)).astype(np.float32)
    values = np.zeros((11, 5), np.float32)
    indices = np.zeros((11, 5), np.int32)
    args, consts, grid = (x, values, indices, 200), {"K": 5, "BLOCK": 256}, (11,)
    folder, _ = _export_run(tmp_path, triton_topk.topk_kernel, args, consts, grid, 3,
                            outputs=["values_ptr", "indices_ptr"])
    ref_values, ref_indices = triton_topk.reference(x, 5)
    np.testing.assert_array_equal(output(folder, "values_ptr", values), ref_values)
    np.testing.assert_array_equal(output(folder, "indices_ptr", indices), ref_indices)
    jit = _jit(triton_topk.topk_kernel, args, consts, grid, 3)
    np.testing.assert_array_equal(output(folder, "indices_ptr", indices), jit[2])


@pytest.mark.parametrize("tasklets", [1, 4])
def test_fl_call_vector_add(tmp_path, tasklets):
    """A kernel whose EDSL region works on MRAM pointers (DMA intrinsics, tasklet
    ids, barriers, WRAM globals) exports and matches the JIT."""
    n = 10_000
    rng = np.random.default_rng(5)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.zeros_like(x)
    args, consts, grid = (x, y, out, n), {"BLOCK": 4096}, (3,)
    folder, _ = _export_run(tmp_path, fl_vector_add.add_kernel, args, consts, grid, 2, tasklets,
                            outputs=["out_ptr"])
    got = output(folder, "out_ptr", out)
    np.testing.assert_array_equal(got, x + y)
    np.testing.assert_array_equal(got, _jit(fl_vector_add.add_kernel, args, consts, grid, 2, tasklets)[2])
