"""`tl.where` choosing between scalar pointers (an `arith.select` of
`!tt.ptr`, which becomes a select of MRAM addresses), and `tl.assume`
(`llvm.intr.assume`, kept for LLVM)."""
import numpy as np
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st

from edsl.backend.convert import convert_ttir

from launch_strategies import strategies

DPUS, TASKLETS = strategies()


@triton.jit
def pick_kernel(cond_ptr, a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    src = tl.where(tl.load(cond_ptr) != 0, a_ptr, b_ptr)
    tl.store(out_ptr + offs, tl.load(src + offs, mask=m), mask=m)


@settings(max_examples=10)
@given(flag=st.booleans(), n=st.integers(1, 100), dpus=DPUS, tasklets=TASKLETS)
def test_where_on_pointers_reads_the_chosen_array(flag, n, dpus, tasklets):
    a = np.arange(n, dtype=np.int64)
    b = -np.arange(n, dtype=np.int64)
    out = np.zeros(n, np.int64)
    pick_kernel[(triton.cdiv(n, 32),)](np.array([flag], np.int8), a, b, out, n, BLOCK=32,
                                       num_dpus=dpus, num_tasklets=tasklets)
    np.testing.assert_array_equal(out, a if flag else b)


# As Triton 3.9 prints `tl.where(c, a_ptr, b_ptr)` on scalar pointers.
SELECT_TTIR = """#loc = loc("k.py":1:1)
module {
  tt.func public @k(%cond_ptr: !tt.ptr<i8> loc(#loc), %a_ptr: !tt.ptr<i64> loc(#loc), %b_ptr: !tt.ptr<i64> loc(#loc), %o_ptr: !tt.ptr<i64> loc(#loc)) attributes {noinline = false} {
    %c0_i8 = arith.constant 0 : i8 loc(#loc1)
    %ptr_6 = tt.load %cond_ptr : !tt.ptr<i8> loc(#loc1)
    %ptr_7 = arith.cmpi ne, %ptr_6, %c0_i8 : i8 loc(#loc1)
    %ptr_8 = arith.select %ptr_7, %a_ptr, %b_ptr : !tt.ptr<i64> loc(#loc1)
    %v = tt.load %ptr_8 : !tt.ptr<i64> loc(#loc1)
    tt.store %o_ptr, %v : !tt.ptr<i64> loc(#loc1)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc1 = loc("k.py":3:9)
"""


def test_select_of_pointers_is_a_select_of_addresses():
    text = str(convert_ttir(SELECT_TTIR)[0])
    assert "arith.select %" in text and ": i64" in text and "!tt.ptr" not in text


@triton.jit
def assume_kernel(out_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    size = N - tl.program_id(0) * BLOCK
    tl.assume(size >= BLOCK)
    if size >= 128:
        tl.store(out_ptr + tl.program_id(0), size)
    else:
        tl.store(out_ptr + tl.program_id(0), size + 101024)


def test_assume_reaches_llvm_and_the_kernel_runs():
    out = np.zeros(8, np.float32)
    k = assume_kernel[(8,)](out, N=1024, BLOCK=128)
    np.testing.assert_array_equal(out, 1024 - 128 * np.arange(8))
    assert "llvm.intr.assume" in k.asm["llmlir"] and "llvm.assume" in k.asm["llir"]
