"""Vector add on an NVIDIA GPU whose EDSL function works on global-memory
pointers with a grid-stride loop, written in the MLIR-builder style of TLE-Raw
(FlagTree's first TLE-Raw tutorial): the Triton kernel only calls it, and every
thread of every CTA adds four elements at i = 4 * (block * threads + thread),
then every 4 * threads * blocks further, with 16-byte loads and stores
(`vector<4xf32>`); the elements after the last four, and all of them where an
array is not 16-byte aligned (a view of a tensor may not be), one at a time.
A TLE-Raw kernel ports by changing its imports.

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
    i32, i64, index, f32 = (ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64), ir.IndexType.get(),
                            ir.F32Type.get())
    f32x4, ptr = ir.VectorType.get([4], f32), ir.Type.parse("!llvm.ptr<1>")
    tid = arith.index_cast(index, nvvm.read_ptx_sreg_tid_x(i32))
    ntid = arith.index_cast(index, nvvm.read_ptx_sreg_ntid_x(i32))
    bid = arith.index_cast(index, nvvm.read_ptx_sreg_ctaid_x(i32))
    nbid = arith.index_cast(index, nvvm.read_ptx_sreg_nctaid_x(i32))
    first, step = arith.addi(arith.muli(bid, ntid), tid), arith.muli(ntid, nbid)
    count = arith.index_cast(index, n)
    four = arith.constant(index, 4)
    # groups of four, where the three arrays are 16-byte aligned
    addresses = arith.ori(arith.ori(llvm.ptrtoint(i64, x), llvm.ptrtoint(i64, y)), llvm.ptrtoint(i64, out))
    aligned = arith.cmpi(arith.CmpIPredicate.eq, arith.andi(addresses, arith.constant(i64, 15)),
                         arith.constant(i64, 0))
    groups = arith.select(aligned, arith.divui(count, four), arith.constant(index, 0))
    for g in scf.for_(first, groups, step):
        k = arith.index_cast(i32, arith.muli(g, four))
        xv = llvm.load(f32x4, llvm.getelementptr(ptr, x, [k], [DYNAMIC], f32, 0), alignment=16)
        yv = llvm.load(f32x4, llvm.getelementptr(ptr, y, [k], [DYNAMIC], f32, 0), alignment=16)
        llvm.store(arith.addf(xv, yv), llvm.getelementptr(ptr, out, [k], [DYNAMIC], f32, 0), alignment=16)
        scf.yield_([])
    # the rest, one element at a time
    for i in scf.for_(arith.addi(arith.muli(groups, four), first), count, step):
        k = arith.index_cast(i32, i)
        xv = llvm.load(f32, llvm.getelementptr(ptr, x, [k], [DYNAMIC], f32, 0))
        yv = llvm.load(f32, llvm.getelementptr(ptr, y, [k], [DYNAMIC], f32, 0))
        llvm.store(arith.addf(xv, yv), llvm.getelementptr(ptr, out, [k], [DYNAMIC], f32, 0))
        scf.yield_([])


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n):
    fl.call(add, [], [out_ptr, x_ptr, y_ptr, n])


def vector_add(x, y, blocks: int = 64, warps: int = 8):
    """x + y; 8 warps a CTA keep enough 16-byte loads in flight to near the
    memory's bandwidth on an H200 (4 warps at 528 CTAs: 1.25x torch's time)."""
    import torch
    out = torch.empty_like(x)
    add_kernel[(blocks,)](x, y, out, x.numel(), num_warps=warps)
    return out


if __name__ == "__main__":
    import torch
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(1_000_003, device="cuda", generator=gen)
    y = torch.randn(1_000_003, device="cuda", generator=gen)
    got = vector_add(x, y)
    tail = vector_add(x[1:], y[1:])          # (views 4 bytes off: one element at a time)
    ok = torch.equal(got, x + y) and torch.equal(tail, x[1:] + y[1:])
    print(f"GPU fl.call vector add of {x.numel()} floats over global pointers -> {'OK' if ok else 'MISMATCH'}")
    sys.exit(0 if ok else 1)
