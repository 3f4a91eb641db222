"""The same `fl.call` kernels under Triton's interpreter (TRITON_INTERPRET=1),
which calls the host-compiled EDSL function, against the `dpu` backend. The
interpreter takes torch tensors: without torch these tests are skipped."""
import importlib.util
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="Triton's interpreter (TRITON_INTERPRET=1) needs torch, not installed here")

# Runs in a child process: the interpreter is chosen when @triton.jit runs.
SCRIPT = textwrap.dedent('''
    import importlib.util, sys, numpy as np, torch, triton
    import edsl.backend; edsl.backend.activate()      # (also beside a GPU driver)
    def example(name):
        spec = importlib.util.spec_from_file_location(name, sys.argv[1] + "/" + name + ".py")
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m
    out = sys.argv[2]
    x = torch.from_numpy(np.load(out + "/x.npy"))
    sm = example("fl_softmax")
    y = torch.empty_like(x)
    sm.softmax_kernel[(x.shape[0],)](y, x, x.shape[1], x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    np.save(out + "/softmax.npy", y.numpy())
    mm = example("fl_matmul")
    a, b = x[:, :40].contiguous(), torch.from_numpy(np.load(out + "/b.npy"))
    c = torch.empty((a.shape[0], b.shape[1]))
    mm.matmul_kernel[(triton.cdiv(a.shape[0], 16), triton.cdiv(24, 16))](a, b, c, a.shape[0], 24, 40,
                                                                       BM=16, BN=16, BK=16)
    np.save(out + "/matmul.npy", c.numpy())
    tk = example("fl_topk")
    vals = torch.empty((x.shape[0], 4)); idx = torch.empty((x.shape[0], 4), dtype=torch.int32)
    tk.topk_kernel[(x.shape[0],)](x, vals, idx, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]), K=4)
    np.save(out + "/topk_vals.npy", vals.numpy()); np.save(out + "/topk_idx.npy", idx.numpy())
''')


def _example(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_interpreter_and_dpu_backend_agree(tmp_path):
    from interpreter_probe import interpreter_problem
    if interpreter_problem():
        pytest.skip(f"Triton's interpreter does not run here: {interpreter_problem()}")
    x = np.random.default_rng(3).standard_normal((5, 70)).astype(np.float32)
    b = np.random.default_rng(4).standard_normal((40, 24)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "b.npy", b)
    script = tmp_path / "interpret.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, TRITON_INTERPRET="1", EDSL_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(script), str(EXAMPLES), str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]

    softmax = _example("fl_softmax").softmax(x, 16)
    np.testing.assert_allclose(np.load(tmp_path / "softmax.npy"), softmax, rtol=1e-6, atol=1e-7)
    a = np.ascontiguousarray(x[:, :40])
    np.testing.assert_allclose(np.load(tmp_path / "matmul.npy"), _example("fl_matmul").matmul(a, b, 16),
                               rtol=1e-5, atol=1e-5)
    vals, idx = _example("fl_topk").topk(x, 4, 16)
    np.testing.assert_array_equal(np.load(tmp_path / "topk_idx.npy"), idx)
    np.testing.assert_array_equal(np.load(tmp_path / "topk_vals.npy"), vals)


FORMS_SCRIPT = textwrap.dedent('''
    import sys, numpy as np, torch
    sys.path.insert(0, sys.argv[1])
    import edsl.backend; edsl.backend.activate()
    import test_tle_forms as t
    x, y = torch.arange(100, dtype=torch.float32), torch.ones(100)
    t.saxpy_kernel[(1,)](x, y, 100, 2.0, BLOCK=128)              # one list, the result returned
    p, q = torch.arange(64, dtype=torch.int32), torch.arange(64, dtype=torch.int32) + 100
    t.swap_kernel[(1,)](p, q, BLOCK=64)                           # two results, in the return's order
    np.save(sys.argv[2] + "/forms.npy", np.concatenate([y.numpy(), p.numpy(), q.numpy()]))
''')


def test_interpreter_runs_tle_raws_one_list_form(tmp_path):
    from interpreter_probe import interpreter_problem
    if interpreter_problem():
        pytest.skip(f"Triton's interpreter does not run here: {interpreter_problem()}")
    script = tmp_path / "forms.py"
    script.write_text(FORMS_SCRIPT)
    env = dict(os.environ, TRITON_INTERPRET="1", EDSL_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(script), str(pathlib.Path(__file__).parent), str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = np.load(tmp_path / "forms.npy")
    np.testing.assert_array_equal(got[:100], np.arange(100) * 2.0 + 1)
    np.testing.assert_array_equal(got[100:164], (np.arange(64) + 100) * 2)
    np.testing.assert_array_equal(got[164:], np.arange(64) * 3)
