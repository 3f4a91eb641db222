"""PrIM's microbenchmarks (Microbenchmarks/ of CMU-SAFARI/prim-benchmarks) as EDSL kernels.

Each kernel does what PrIM's DPU code does, in the same shape: every tasklet
reads 1,024-byte blocks from MRAM into its part of a WRAM buffer, works on
them in place, and writes them back.

  arithmetic(ty, op)  Arithmetic-Throughput: `a[i] = a[i] op scalar`
  stream(op)          STREAM on WRAM (copyw/add/scale/triad), 64-bit integers
  mram(size)          MRAM-Latency: mram_read then mram_write of `size` bytes
"""
from __future__ import annotations

import functools

import edsl
from edsl import InOut, Input

BLOCK = 1024            # bytes per transfer, as PrIM's BLOCK_SIZE (BL=10)
WRAM_PER_TASKLET = 3 * BLOCK


@functools.lru_cache(None)
def arithmetic(ty: str, op: str):
    """Arithmetic-Throughput/dpu/task.c: the update loop over one WRAM block."""
    width = int(ty[1:]) // 8
    n = BLOCK // width
    OP = op

    def kernel(a: InOut["memref<?xTY, MRAM>"], size: Input["i64"], scalar: Input["TY"]):
        buf = edsl.wram_alloc((16 * N,), "TY")
        t = edsl.tasklet_id()
        off = t * N
        for base in range(t * N, size, edsl.num_tasklets() * N):
            edsl.mram_read(a, buf, BLOCK, src_offset=base, dst_offset=off)
            for i in range(off, off + N):
                if OP == "add":
                    buf[i] = buf[i] + scalar
                elif OP == "sub":
                    buf[i] = buf[i] - scalar
                elif OP == "mul":
                    buf[i] = buf[i] * scalar
                elif ty[0] == "f":
                    buf[i] = buf[i] / scalar
                else:           # C's truncating division, as PrIM's `temp /= scalar`
                    buf[i] = arith.divsi(buf[i], scalar)
            edsl.mram_write(buf, a, BLOCK, src_offset=off, dst_offset=base)

    return _compile(kernel, {"TY": ty}, {"N": n, "OP": OP, "BLOCK": BLOCK, "ty": ty},
                    f"arith_{op}_{ty}")


@functools.lru_cache(None)
def stream(op: str):
    """STREAM/dpu/{copyw,add,scale,triad}.c on WRAM: 64-bit elements, one block each."""
    n = BLOCK // 8
    OP = op

    def kernel(a: InOut["memref<?xi64, MRAM>"], b: Input["memref<?xi64, MRAM>"],
               c: InOut["memref<?xi64, MRAM>"], size: Input["i64"], scalar: Input["i64"]):
        bufa = edsl.wram_alloc((16 * N,), "i64")
        bufb = edsl.wram_alloc((16 * N,), "i64")
        bufc = edsl.wram_alloc((16 * N,), "i64")
        t = edsl.tasklet_id()
        off = t * N
        for base in range(t * N, size, edsl.num_tasklets() * N):
            edsl.mram_read(a, bufa, BLOCK, src_offset=base, dst_offset=off)
            edsl.mram_read(b, bufb, BLOCK, src_offset=base, dst_offset=off)
            for i in range(off, off + N):
                if OP == "copy":
                    bufc[i] = bufa[i]
                elif OP == "add":
                    bufc[i] = bufa[i] + bufb[i]
                elif OP == "scale":
                    bufc[i] = scalar * bufa[i]
                else:
                    bufc[i] = bufa[i] + scalar * bufb[i]
            edsl.mram_write(bufc, c, BLOCK, src_offset=off, dst_offset=base)

    return _compile(kernel, {}, {"N": n, "OP": OP, "BLOCK": BLOCK}, f"stream_{op}")


@functools.lru_cache(None)
def mram(size: int):
    """MRAM-Latency/dpu/copy.c: one mram_read and one mram_write of `size` bytes per block."""
    def kernel(a: InOut["memref<?xi64, MRAM>"], count: Input["i64"]):
        buf = edsl.wram_alloc((16 * N,), "i64")
        t = edsl.tasklet_id()
        for k in range(t, count, edsl.num_tasklets()):
            edsl.mram_read(a, buf, SIZE, src_offset=k * N, dst_offset=t * N)
            edsl.mram_write(buf, a, SIZE, src_offset=t * N, dst_offset=k * N)

    return _compile(kernel, {}, {"N": size // 8, "SIZE": size}, f"mram_{size}")


def _compile(kernel, types: dict, constants: dict, name: str):
    """`kernel` with its type names replaced and its constants bound, as an EDSL function."""
    import inspect
    import textwrap
    source = textwrap.dedent(inspect.getsource(kernel))
    for k, v in types.items():
        source = source.replace(k, v)
    source = source.replace("def kernel(", f"def {name}(", 1)
    from mlir.dialects import arith
    namespace = {"edsl": edsl, "InOut": InOut, "Input": Input, "arith": arith, **constants}
    filename = f"<prim:{name}>"
    import linecache
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return edsl.dialect(namespace[name])
