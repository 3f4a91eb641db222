"""TLE-Raw's spellings on Triton's stock nvidia backend: a function in the
MLIR-builder style over `Input[Literal["!llvm.ptr<1>"]]` parameters called
in the one-list form, `nvvm.barrier` with TLE-Raw's keywords, a tile
result by `return`, `vprintf` and `vassert`; compiled for sm_90 anywhere,
run against torch on a GPU (printing and a failed assert in a process of
their own: a device-side assert ends the process's CUDA context)."""
import os
import pathlib
import re
import subprocess
import sys
from typing import Literal as L

import pytest
import triton
import triton.language as tl
from mlir import ir
from mlir.dialects import arith, llvm, nvvm, scf

import edsl.tle.language.raw as tle_raw
from edsl.tle.raw import Input, dialect
from edsl.tle.raw.mlir import vassert, vprintf
from gpu_helpers import barriers, compile_sm90


def _i32():
    return ir.IntegerType.get_signless(32)


@dialect(name="mlir")
def grid_stride_add(out: Input[L["!llvm.ptr<1>"]], x: Input[L["!llvm.ptr<1>"]], y: Input[L["!llvm.ptr<1>"]],
                    n: Input[L["i32"]]):
    index = ir.IndexType.get()
    tid = arith.index_cast(index, nvvm.read_ptx_sreg_tid_x(_i32()))
    ntid = arith.index_cast(index, nvvm.read_ptx_sreg_ntid_x(_i32()))
    ctaid = arith.index_cast(index, nvvm.read_ptx_sreg_ctaid_x(_i32()))
    nctaid = arith.index_cast(index, nvvm.read_ptx_sreg_nctaid_x(_i32()))
    step = arith.muli(ntid, nctaid)
    for i in scf.for_(arith.addi(arith.muli(ctaid, ntid), tid), arith.index_cast(index, n), step):
        k = arith.index_cast(_i32(), i)
        ptr, f32 = ir.Type.parse("!llvm.ptr<1>"), ir.F32Type.get()
        a = llvm.load(f32, llvm.getelementptr(ptr, x, [k], [-2147483648], f32, 0))
        b = llvm.load(f32, llvm.getelementptr(ptr, y, [k], [-2147483648], f32, 0))
        llvm.store(arith.addf(a, b), llvm.getelementptr(ptr, out, [k], [-2147483648], f32, 0))
        scf.yield_([])


@triton.jit
def add_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    tle_raw.call(grid_stride_add, [o_ptr, x_ptr, y_ptr, n])


@dialect(name="mlir")
def reverse_in_place(y: Input[L["memref<128xf32, 3>"]]) -> L["memref<128xf32, 3>"]:
    # (one element a thread: the kernel runs 4 warps)
    index = ir.IndexType.get()
    tid = arith.index_cast(index, nvvm.read_ptx_sreg_tid_x(_i32()))
    v = y[arith.subi(arith.constant(index, 127), tid)]
    nvvm.barrier(barrier_id=arith.constant(_i32(), 0))          # TLE-Raw's keywords
    y[tid] = v
    return y


@triton.jit
def reverse_kernel(x_ptr, o_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    y = tle_raw.call(reverse_in_place, [tl.load(x_ptr + offs)])
    tl.store(o_ptr + offs, y)


SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "o_ptr": "*fp32", "n": "i32"}


def test_builder_style_pointers_in_the_one_list_form_compile_for_sm90():
    ptx = compile_sm90(add_kernel, SIG, {"BLOCK": 128}).asm["ptx"]
    assert "ld.global" in ptx and "st.global" in ptx and "call" not in ptx


def test_nvvm_barrier_with_tle_raw_keywords_and_a_returned_tile_compile_for_sm90():
    ptx = compile_sm90(reverse_kernel, {"x_ptr": "*fp32", "o_ptr": "*fp32"}, {"B": 128}, num_warps=4).asm["ptx"]
    assert barriers(ptx) == 3 + 1                # the call's own (test_injection), and the function's


@pytest.mark.gpu
def test_one_list_forms_on_the_gpu():
    import torch
    x, y = torch.randn(5000, device="cuda"), torch.randn(5000, device="cuda")
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(5000, 128),)](x, y, out, 5000, BLOCK=128)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    o = torch.empty(128, device="cuda")
    reverse_kernel[(1,)](x, o, B=128, num_warps=4)
    torch.testing.assert_close(o, x[:128].flip(0), rtol=0, atol=0)


@dialect(name="mlir")
def hello(n: Input[L["i32"]]):
    tid = nvvm.read_ptx_sreg_tid_x(_i32())
    bid = nvvm.read_ptx_sreg_ctaid_x(_i32())
    vprintf("hello from block %d thread %d of %d\n", bid, tid, n)
    vassert(arith.cmpi(arith.CmpIPredicate.slt, tid, n), "thread %d is not below %d\n", tid, n)


@triton.jit
def hello_kernel(n):
    tle_raw.call(hello, [n])


def test_vprintf_and_vassert_compile_to_cuda_vprintf_and_assertfail():
    ptx = compile_sm90(hello_kernel, {"n": "i32"}, num_warps=1).asm["ptx"]
    assert ptx.count("call.uni (retval0), vprintf, (param0, param1);") == 2     # the print, the assert's
    assert re.search(r"\.extern \.func __assertfail", ptx) and re.search(r"call\.uni\s+__assertfail", ptx)


HELLO_SCRIPT = """
import torch, triton
import test_tle_spellings as t
t.hello_kernel[(2,)](N, num_warps=1)
torch.cuda.synchronize()
print("synchronized")
"""


@pytest.mark.gpu
@pytest.mark.parametrize("n, fails", [(32, False), (16, True)])
def test_vprintf_prints_and_a_failed_vassert_stops_the_kernel_on_the_gpu(tmp_path, n, fails):
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "triton"), EDSL_CACHE_DIR=str(tmp_path / "edsl"),
               PYTHONPATH=os.pathsep.join([str(pathlib.Path(__file__).parent), *sys.path]))
    r = subprocess.run([sys.executable, "-c", HELLO_SCRIPT.replace("N", str(n))], env=env, capture_output=True,
                       text=True, timeout=300)
    lines = r.stdout.splitlines()
    assert {f"hello from block {b} thread {t} of {n}" for b in range(2) for t in range(32)} <= set(lines)
    if fails:
        assert r.returncode != 0 and "synchronized" not in lines
        assert "device-side assert" in r.stderr and "thread 16 is not below 16" in r.stdout, r.stderr[-2000:]
    else:
        assert r.returncode == 0 and "synchronized" in lines, r.stderr[-2000:]
