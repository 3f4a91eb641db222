"""Vector add on an NVIDIA GPU whose EDSL function works on global-memory
pointers with a grid-stride loop, written in the MLIR-builder style of TLE-Raw
(FlagTree's first TLE-Raw tutorial): the Triton kernel only calls it, and every
thread of every CTA adds the elements i = block * threads + thread, then every
threads * blocks further. A TLE-Raw kernel ports by changing its imports.

    python examples/gpu_vector_add.py
"""
import sys

import triton
from mlir import ir
from mlir.dialects import arith, llvm, nvvm, scf

import edsl
from edsl import Input, fl

DYNAMIC = -2147483648  # a getelementptr index given as a value, not a constant


@edsl.dialect
def add(out: Input["!llvm.ptr<1>"], x: Input["!llvm.ptr<1>"], y: Input["!llvm.ptr<1>"], n: Input["i32"]):
    i32, index, f32 = ir.IntegerType.get_signless(32), ir.IndexType.get(), ir.F32Type.get()
    ptr = ir.Type.parse("!llvm.ptr<1>")
    tid = arith.index_cast(index, nvvm.read_ptx_sreg_tid_x(i32))
    ntid = arith.index_cast(index, nvvm.read_ptx_sreg_ntid_x(i32))
    bid = arith.index_cast(index, nvvm.read_ptx_sreg_ctaid_x(i32))
    nbid = arith.index_cast(index, nvvm.read_ptx_sreg_nctaid_x(i32))
    first = arith.addi(arith.muli(bid, ntid), tid)
    for i in scf.for_(first, arith.index_cast(index, n), arith.muli(ntid, nbid)):
        k = arith.index_cast(i32, i)
        xv = llvm.load(f32, llvm.getelementptr(ptr, x, [k], [DYNAMIC], f32, 0))
        yv = llvm.load(f32, llvm.getelementptr(ptr, y, [k], [DYNAMIC], f32, 0))
        llvm.store(arith.addf(xv, yv), llvm.getelementptr(ptr, out, [k], [DYNAMIC], f32, 0))
        scf.yield_([])


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n):
    fl.call(add, [], [out_ptr, x_ptr, y_ptr, n])


def vector_add(x, y, blocks: int = 64):
    import torch
    out = torch.empty_like(x)
    add_kernel[(blocks,)](x, y, out, x.numel())
    return out


if __name__ == "__main__":
    import torch
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(1_000_003, device="cuda", generator=gen)
    y = torch.randn(1_000_003, device="cuda", generator=gen)
    got = vector_add(x, y)
    ok = torch.equal(got, x + y)
    print(f"GPU fl.call vector add of {x.numel()} floats over global pointers -> {'OK' if ok else 'MISMATCH'}")
    sys.exit(0 if ok else 1)
