"""Control flow of Triton kernels: generated nestings of if/else, early `return`
and loops, run by the `dpu` backend, against the same program evaluated in
Python and, where torch is installed, Triton's interpreter (TRITON_INTERPRET=1).

The shapes are those of Triton's `test_nested_if_else_return` and its
neighbours: a `return` inside an `if` makes Triton's TTIR branch between
blocks (`cf.cond_br`), which the backend structures before converting."""
import importlib.util
import itertools
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st
from launch_strategies import strategies
import family_ir

DPUS, TASKLETS = strategies()
B = 8                       # lanes of the tile the program accumulates
N_CONDS, N_COUNTS, N_VALUES, N_SLOTS = 4, 2, 4, 3

_counter = itertools.count()


def _block(draw, depth: int, in_loop: bool) -> list:
    stmts = []
    for _ in range(draw(st.integers(1, 3))):
        kinds = ["add", "store"] + (["if", "for"] if depth < 3 else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "add":
            stmts.append(("add", draw(st.integers(0, N_VALUES - 1))))
        elif kind == "store":
            stmts.append(("store", draw(st.integers(0, N_SLOTS - 1))))
        elif kind == "if":
            then = _block(draw, depth + 1, in_loop)
            other = _block(draw, depth + 1, in_loop) if draw(st.booleans()) else []
            stmts.append(("if", draw(st.integers(0, N_CONDS - 1)), then, other))
        else:
            stmts.append(("for", draw(st.integers(0, N_COUNTS - 1)), _block(draw, depth + 1, True)))
    if not in_loop and depth > 0 and draw(st.integers(0, 2)) == 0:
        stmts.append(("return",))           # Triton allows `return` outside loops only
    return stmts


@st.composite
def programs(draw):
    return _block(draw, 0, False)


def _source(program) -> str:
    lines = ["import triton", "import triton.language as tl", "", "",
             "@triton.jit",
             "def kernel(C, N, V, Out, B: tl.constexpr):",
             "    lanes = tl.arange(0, B)",
             "    val = tl.zeros((B,), tl.int32)"]

    def emit(stmts, pad):
        for s in stmts:
            if s[0] == "add":
                lines.append(f"{pad}val = val * 3 + tl.load(V + {s[1]} * B + lanes)")
            elif s[0] == "store":
                lines.append(f"{pad}tl.store(Out + {s[1] + 1} * B + lanes, val)")
            elif s[0] == "return":
                lines.append(f"{pad}return")
            elif s[0] == "if":
                lines.append(f"{pad}if tl.load(C + {s[1]}):")
                emit(s[2] or [("add", 0)], pad + "    ")
                if s[3]:
                    lines.append(f"{pad}else:")
                    emit(s[3], pad + "    ")
            else:
                lines.append(f"{pad}for _ in range(tl.load(N + {s[1]})):")
                emit(s[2], pad + "    ")
    emit(program, "    ")
    lines.append("    tl.store(Out + lanes, val)")
    return "\n".join(lines) + "\n"


class _Return(Exception):
    pass


def _evaluate(program, conds, counts, values) -> np.ndarray:
    out = np.full((N_SLOTS + 1, B), -1, np.int32)
    val = np.zeros(B, np.int32)

    def run(stmts):
        nonlocal val
        for s in stmts:
            if s[0] == "add":
                val = val * np.int32(3) + values[s[1]]
            elif s[0] == "store":
                out[s[1] + 1] = val
            elif s[0] == "return":
                raise _Return
            elif s[0] == "if":
                run((s[2] or [("add", 0)]) if conds[s[1]] else s[3])
            else:
                for _ in range(counts[s[1]]):
                    run(s[2])
    try:
        run(program)
        out[0] = val
    except _Return:
        pass
    return out


def _write(tmp_path, program):
    path = tmp_path / f"cf_kernel_{next(_counter)}.py"
    path.write_text(_source(program))
    return path


def _jit(path):
    """The kernel of a generated file, compiled by the `dpu` backend."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel


# Triton's interpreter is chosen when `triton.language` is imported, so it runs
# in a child process, which runs one kernel file per line of its input.
_SERVER = """
import importlib.util, sys, numpy as np, torch
import edsl.backend; edsl.backend.activate()      # (also beside a GPU driver)
for line in sys.stdin:
    path, data = line.split()
    spec = importlib.util.spec_from_file_location("k", path)
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
    inputs = np.load(data)
    args = [torch.from_numpy(inputs[f"a{i}"]) for i in range(len(inputs.files))]
    module.kernel[(1,)](*args, B=int(sys.argv[1]))
    np.save(data + ".out.npy", args[-1].numpy())
    print("done", flush=True)
"""


@pytest.fixture(scope="module")
def interpreter(tmp_path_factory):
    """run(kernel file, arrays) -> the last array after the kernel ran under
    Triton's interpreter; None without torch."""
    if importlib.util.find_spec("torch") is None:
        yield None                              # (then only the Python evaluation is compared)
        return
    from interpreter_probe import interpreter_problem
    if interpreter_problem():
        warnings.warn(pytest.PytestWarning(f"Triton's interpreter does not run here, results are compared "
                                           f"with Python's only: {interpreter_problem()}"))
        yield None
        return
    env = dict(os.environ, TRITON_INTERPRET="1")
    child = subprocess.Popen([sys.executable, "-c", _SERVER, str(B)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
    where = tmp_path_factory.mktemp("interpret")

    def run(path, args):
        data = where / f"{path.stem}.npz"
        np.savez(data, **{f"a{i}": a for i, a in enumerate(args)})
        child.stdin.write(f"{path} {data}\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "done", "the interpreter failed on " + path.read_text()
        return np.load(str(data) + ".out.npy")
    yield run
    child.stdin.close()
    child.wait(timeout=60)


@settings(max_examples=30, deadline=None)
@given(program=programs(), conds=st.lists(st.integers(0, 1), min_size=N_CONDS, max_size=N_CONDS),
       counts=st.lists(st.integers(0, 2), min_size=N_COUNTS, max_size=N_COUNTS),
       tasklets=st.sampled_from([1, 4]), seed=st.integers(0, 2**16))
def test_generated_control_flow(tmp_path_factory, interpreter, program, conds, counts, tasklets,
                                seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(-50, 50, (N_VALUES, B)).astype(np.int32)
    path = _write(tmp_path_factory.mktemp("cf"), program)
    args = [np.array(conds, np.int32), np.array(counts, np.int32), values.reshape(-1),
            np.full((N_SLOTS + 1) * B, -1, np.int32)]
    expected = _evaluate(program, conds, counts, values).reshape(-1)
    out = args[-1].copy()
    _jit(path)[(1,)](*args[:-1], out, B=B, num_tasklets=tasklets)
    np.testing.assert_array_equal(out, expected)
    if interpreter is not None:
        np.testing.assert_array_equal(interpreter(path, args), expected)


NESTED = [("if", 0, [("if", 1, [("add", 0)], [("return",)])],
           [("if", 2, [("add", 1)], [("add", 2)])])]


@pytest.mark.parametrize("conds", list(itertools.product([0, 1], repeat=3)))
def test_nested_if_else_return(tmp_path, conds):
    """The store after an if/else whose one branch returns happens on the other paths."""
    values = np.arange(N_VALUES * B, dtype=np.int32).reshape(N_VALUES, B)
    out = np.full((N_SLOTS + 1) * B, -1, np.int32)
    _jit(_write(tmp_path, NESTED))[(1,)](np.array(list(conds) + [0], np.int32), np.zeros(N_COUNTS, np.int32),
                         values.reshape(-1), out, B=B)
    np.testing.assert_array_equal(out, _evaluate(NESTED, list(conds) + [0], [0, 0], values).reshape(-1))


# ---- while loops carrying tiles ----------------------------------------------------------------

@triton.jit
def while_tiles(x_ptr, out_ptr, n, limit, BLOCK: tl.constexpr):
    """Two tiles carried by a while loop whose condition reads one of them."""
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    best = tl.full((BLOCK,), -1.0, tl.float32)
    i = 0
    while (i < n) & (tl.max(acc, axis=0) < limit):
        x = tl.load(x_ptr + i * BLOCK + offs)
        acc += x
        best = tl.maximum(best, x)
        i += 1
    tl.store(out_ptr + offs, acc)
    tl.store(out_ptr + BLOCK + offs, best)
    tl.store(out_ptr + 2 * BLOCK, i.to(tl.float32))


def _while_reference(x, n, limit):
    acc, best, i = np.zeros(x.shape[1], np.float32), np.full(x.shape[1], -1.0, np.float32), 0
    while i < n and acc.max() < limit:
        acc += x[i]
        best = np.maximum(best, x[i])
        i += 1
    return acc, best, i


@settings(max_examples=10, deadline=None)
@given(n=st.integers(0, 6), limit=st.floats(0.0, 40.0, width=32), tasklets=st.sampled_from([1, 3, 16]),
       seed=st.integers(0, 2**16))
def test_while_loops_carry_tiles(n, limit, tasklets, seed):
    block = 32
    x = np.random.default_rng(seed).uniform(0, 4, (max(n, 1), block)).astype(np.float32)
    out = np.zeros(2 * block + 1, np.float32)
    while_tiles[(1,)](x, out, n, limit, BLOCK=block, num_tasklets=tasklets)
    acc, best, i = _while_reference(x, n, limit)
    np.testing.assert_array_equal(out[:block], acc)
    np.testing.assert_array_equal(out[block:2 * block], best)
    assert out[2 * block] == i


@triton.jit
def loop_kernel(x_ptr, out_ptr, count_ptr, rows, C: tl.constexpr):
    cols = tl.arange(0, C)
    acc = tl.zeros((C,), dtype=tl.float32)
    best = tl.full((C,), -1e30, dtype=tl.float32)
    for i in range(0, rows):
        x = tl.load(x_ptr + i * C + cols)
        acc = acc + x
        best = tl.maximum(best, x)
    n = 0
    while n * n < rows:
        n += 1
    if rows > 2:
        acc = acc * 2
    tl.store(out_ptr + cols, acc + best)
    tl.store(count_ptr, n)


@settings(max_examples=8, deadline=None)
@given(rows=st.integers(0, 12), seed=st.integers(0, 2**16), dpus=DPUS, tasklets=TASKLETS)
def test_loops_with_carried_tensors(rows, seed, dpus, tasklets):
    x = np.random.default_rng(seed).standard_normal((rows, 8)).astype(np.float32)
    out, count = np.zeros(8, np.float32), np.zeros(1, np.int32)
    loop_kernel[(1,)](x, out, count, rows, C=8, num_dpus=dpus, num_tasklets=tasklets)
    acc = x.sum(axis=0) * (2 if rows > 2 else 1)
    best = x.max(axis=0) if rows else np.full(8, -1e30, np.float32)
    np.testing.assert_allclose(out, acc + best, rtol=1e-5, atol=1e-5)
    assert count[0] == int(np.ceil(np.sqrt(rows)))


# --- the family's IR on the golden corpus (family_ir) ---------------------------------------

def test_corpus_control_ir_at_1_and_4_tasklets_and_under_a_wram_limit():
    """Loops stay structured loops of the same kind."""
    assert family_ir.check_family({"scf.for", "scf.while", "scf.if", "scf.index_switch"},
                                  lambda names: sorted(names & {"scf.for", "scf.while"}))
