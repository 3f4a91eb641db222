"""Functions a kernel applies: `tl.map_elementwise` bodies (with branches and
early returns, several results, `pack`) and `noinline` calls, against NumPy."""
import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st

from launch_strategies import strategies

import family_ir
from edsl.backend import triton_internals
from edsl.backend.compiler import TARGET
from edsl.inject.callees import placeholder_symbol
from test_kernel_record import calls_double, double

DPUS, TASKLETS = strategies()


@triton.jit
def compare(x, y):
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@triton.jit
def compare_kernel(x_ptr, y_ptr, z_ptr, ROWS: tl.constexpr, COLS: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * ROWS * COLS + tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :]
    z = tl.map_elementwise(compare, tl.load(x_ptr + offs), tl.load(y_ptr + offs))
    tl.store(z_ptr + offs, z)


@settings(max_examples=15, deadline=None)
@given(rows=st.sampled_from([1, 4]), cols=st.sampled_from([8, 32]), programs=st.integers(1, 5),
       seed=st.integers(0, 2 ** 16), dpus=DPUS, tasklets=TASKLETS)
def test_map_elementwise_with_branches(rows, cols, programs, seed, dpus, tasklets):
    rng = np.random.default_rng(seed)
    n = programs * rows * cols
    x, y = (rng.integers(-3, 3, n).astype(np.int32) for _ in range(2))
    z = np.full(n, 7, np.int32)
    compare_kernel[(programs,)](x, y, z, ROWS=rows, COLS=cols, num_dpus=dpus, num_tasklets=tasklets)
    np.testing.assert_array_equal(z, np.sign(x.astype(np.int64) - y))


@triton.jit
def divmod_packed(a0, a1, b0, b1):
    return a0 // b0, a1 // b1, a0 % b0, a1 % b1


@triton.jit
def divmod_one(a, b):
    return a // b, a % b


@triton.jit
def divmod_kernel(a_ptr, b_ptr, q_ptr, r_ptr, BLOCK: tl.constexpr, PACK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a, b = tl.load(a_ptr + offs), tl.load(b_ptr + offs)
    if PACK == 2:
        q, r = tl.map_elementwise(divmod_packed, a, b, pack=2)
    else:
        q, r = tl.map_elementwise(divmod_one, a, b)
    tl.store(q_ptr + offs, q)
    tl.store(r_ptr + offs, r)


@settings(max_examples=15, deadline=None)
@given(block=st.sampled_from([16, 64]), pack=st.sampled_from([1, 2]), programs=st.integers(1, 4),
       seed=st.integers(0, 2 ** 16), tasklets=TASKLETS)
def test_map_elementwise_results_and_pack(block, pack, programs, seed, tasklets):
    rng = np.random.default_rng(seed)
    n = programs * block
    a = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(1, 2 ** 12, n).astype(np.uint32)
    q, r = np.zeros(n, np.uint32), np.zeros(n, np.uint32)
    divmod_kernel[(programs,)](a, b, q, r, BLOCK=block, PACK=pack, num_tasklets=tasklets)
    np.testing.assert_array_equal(q, a // b)
    np.testing.assert_array_equal(r, a % b)


@triton.jit(noinline=True)
def stepped(x):
    if x >= 0:
        return x * 2, x + 1
    return -x, x - 1


@triton.jit(noinline=True)
def row_sum_into(x, y, row_ptr, z_ptr, COLS: tl.constexpr):
    a, b = stepped(x)
    row = tl.load(row_ptr + tl.arange(0, COLS))
    tl.store(z_ptr, a * tl.sum(row) + stepped(y)[1] + b)


@triton.jit
def call_kernel(x_ptr, y_ptr, rows_ptr, z_ptr, COLS: tl.constexpr):
    pid = tl.program_id(0)
    row_sum_into(tl.load(x_ptr + pid), tl.load(y_ptr + pid), rows_ptr + pid * COLS, z_ptr + pid, COLS)


@settings(max_examples=10, deadline=None)
@given(programs=st.integers(1, 40), cols=st.sampled_from([1, 16]), seed=st.integers(0, 2 ** 16),
       dpus=DPUS, tasklets=TASKLETS)
def test_noinline_calls_run_as_called(programs, cols, seed, dpus, tasklets):
    rng = np.random.default_rng(seed)
    x, y = (rng.integers(-100, 100, programs).astype(np.int32) for _ in range(2))
    rows = rng.integers(-100, 100, (programs, cols)).astype(np.int32)
    z = np.zeros(programs, np.int32)
    call_kernel[(programs,)](x, y, rows, z, COLS=cols, num_dpus=dpus, num_tasklets=tasklets)

    def stepped(v):
        return (v * 2, v + 1) if v >= 0 else (-v, v - 1)
    want = [stepped(a)[0] * r.sum() + stepped(b)[1] + stepped(a)[1] for a, b, r in zip(x, y, rows)]
    np.testing.assert_array_equal(z, np.array(want, np.int32))


@triton.jit
def branchy(x, row_ptr, COLS: tl.constexpr):
    if x > 0:
        return x + tl.sum(tl.load(row_ptr + tl.arange(0, COLS)))
    else:
        return x - 1


@triton.jit
def call_in_if_kernel(x_ptr, rows_ptr, z_ptr, COLS: tl.constexpr):
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    if pid % 2 == 0:
        # Triton's inliner cannot put a callee with several returns into the
        # `if`: the call stays in the TTIR, the backend lowers it in place
        v = branchy(v, rows_ptr + pid * COLS, COLS)
    tl.store(z_ptr + pid, v)


@settings(max_examples=10, deadline=None)
@given(programs=st.integers(1, 12), cols=st.sampled_from([1, 16]), seed=st.integers(0, 2 ** 16),
       tasklets=TASKLETS)
def test_a_call_triton_leaves_inside_an_if_runs_as_called(programs, cols, seed, tasklets):
    rng = np.random.default_rng(seed)
    x = rng.integers(-100, 100, programs).astype(np.int32)
    rows = rng.integers(-100, 100, (programs, cols)).astype(np.int32)
    z = np.zeros(programs, np.int32)
    call_in_if_kernel[(programs,)](x, rows, z, COLS=cols, num_tasklets=tasklets)
    want = [(v + r.sum() if v > 0 else v - 1) if p % 2 == 0 else v for p, (v, r) in enumerate(zip(x, rows))]
    np.testing.assert_array_equal(z, np.array(want, np.int32))
    ttir = call_in_if_kernel.warmup(x, rows, z, COLS=cols, grid=(1,)).asm["ttir"]
    assert "tt.call @" in ttir, "the call this test is about was inlined by Triton"


def test_a_recursive_call_is_a_compile_error_at_its_line():
    """Triton's frontend does not write recursion; a module that has it (TTIR
    from elsewhere) is refused at the call, not lowered forever."""
    from edsl.backend.convert import convert_ttir
    from edsl.base.errors import CompileError
    text = """#loc = loc("k.py":1:1)
#loc7 = loc("k.py":7:9)
module {
  tt.func public @k(%n: i32 loc(#loc)) {
    %0 = tt.call @f(%n) : (i32) -> i32 loc(#loc7)
    tt.return loc(#loc)
  } loc(#loc)
  tt.func private @f(%n: i32 loc(#loc)) -> i32 {
    %0 = tt.call @f(%n) : (i32) -> i32 loc(#loc7)
    tt.return %0 : i32 loc(#loc)
  } loc(#loc)
} loc(#loc)
"""
    with pytest.raises(CompileError, match="recursive call of 'f'") as err:
        convert_ttir(text)
    assert (err.value.loc.filename, err.value.loc.lineno) == ("k.py", 7)


# --- the family's IR (family_ir), on a kernel traced here: the corpus's fl.call
# kernels name EDSL functions of the processes that traced them ---------------------------

def test_fl_call_ir_at_1_and_4_tasklets_and_under_a_wram_limit():
    """An fl.call becomes an `edsl.region` whose extract/pack placeholders hand
    the tiles' descriptors to the function's body."""
    compiled = triton_internals.compile_kernel(calls_double, {"x_ptr": "*fp32", "o_ptr": "*fp32",
                                                              "BLOCK": "constexpr"}, {"BLOCK": 64}, TARGET, {})
    # (the function's placeholder registered as Triton's code generator does, which a
    # kernel found in Triton's on-disk cache skips)
    placeholder_symbol(double)
    family_ir.check_kernel("calls_double", compiled.asm["ttir"],
                           ["edsl.region", "edsl.extract_aligned_ptr", "edsl.pack", "llvm.call @edsl_dpu_me("])
