"""What one operation of each class costs on the model, against the cost table's figure.

Each microbenchmark has the shape of PrIM's Arithmetic-Throughput loop (micro.arithmetic):
every tasklet reads 1,024-byte blocks of MRAM into WRAM and updates each element, here by
applying one operation k times in a chain (unrolled when compiled) for k = 1 and k = 2.
The difference of the two estimates' issue slots, per element, is what one operation of
the class costs the model: at 16 tasklets the pipeline issues one instruction a cycle, so
these slots are cycles. It should be the class's entry in the DPU instruction cost table
(edsl/dpu/timing.py INSTRUCTION_COSTS, which names each number's source): the check is of
the counting pass's classes (that each operation lands in the class it is priced by), and
each row prints the table's source. A DMA row is one MRAM->WRAM transfer of its size by one
tasklet: its latency against PrIM's fit (alpha + beta * size).

Two kernels of the shapes the estimate must price right besides single operations:
  * `scan_unique`: PrIM's UNI and SEL (Microbenchmarks-free: UNI/dpu/task.c and
    SEL/dpu/task.c of CMU-SAFARI/prim-benchmarks), a scan of a block keeping an element
    when it differs from the one before (UNI) or fails a predicate (SEL): a compare, a
    conditional store and a running count;
  * `bit_loop`: a loop whose trip count is each element's bit length (data-dependent).
Both print their executed operations per element by class and what dominates.
(The kernels are source for `micro._compile`, which binds their names.)
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from edsl.dpu import timing

from . import calibration, micro

TASKLETS = 16
BLOCKS_PER_TASKLET = 2


@dataclass(frozen=True)
class Case:
    """One class's microbenchmark: element type, the update applied k times, its expected
    cost as cost-table classes (each once per operation), and the scalar operand."""
    ty: str
    op: str
    classes: tuple[str, ...]
    scalar: float = 3
    steps: int = 0            # a 32-bit multiply's mul_steps: the smaller operand's bits


CASES: dict[str, Case] = {
    "int32 add": Case("i32", "add", ("alu",)),
    # Python's meaning of a shift by 32 or more, kept by the EDSL: the shift, one by 31 and
    # a select (the amount's range compares, the same for both shifts, are emitted once).
    "int32 shift": Case("i32", "shr", ("alu",) * 3, scalar=1),
    "int32 compare+branch": Case("i32", "branch", ("branch", "alu"), scalar=0),
    "int64 add": Case("i64", "add", ("alu64",)),
    "int32 multiply (x3)": Case("i32", "mul", ("mul32",) + ("mul32_step",) * 2, steps=2),
    "int32 divide": Case("i32", "div", ("div32",)),
    # (the element's address is computed once for its loads and stores)
    "WRAM load+store": Case("i32", "wram", ("load", "alu", "store")),
    "float add": Case("f32", "add", ("fadd32",)),
    "float multiply": Case("f32", "mul", ("fmul32",)),
    "float divide": Case("f32", "div", ("fdiv32",)),
    "double add": Case("f64", "add", ("fadd64",)),
}
DMA_SIZES = (8, 64, 512, 2048)


@functools.lru_cache(None)
def chain(ty: str, op: str, k: int):
    """Arithmetic-Throughput's loop, the update `x = x op scalar` applied k times."""
    n = micro.BLOCK // (int(ty[1:]) // 8)

    def kernel(a: InOut["memref<?xTY, MRAM>"], size: Input["i64"], y: Input["TY"]):
        buf = edsl.wram_alloc((16 * N,), "TY")
        t = edsl.tasklet_id()
        off = t * N
        for base in range(t * N, size, edsl.num_tasklets() * N):
            edsl.mram_read(a, buf, BLOCK, src_offset=base, dst_offset=off)
            for i in range(off, off + N):
                x = buf[i]
                for _ in REPS:
                    if OP == "add":
                        x = x + y
                    elif OP == "shr":
                        x = x >> y
                    elif OP == "mul":
                        x = x * y
                    elif OP == "div" and ty[0] == "f":
                        x = x / y
                    elif OP == "div":              # C's truncating division, as PrIM's
                        x = arith.divsi(x, y)
                    elif OP == "branch":
                        if x > y:
                            x = x - y
                    else:                      # "wram": through the buffer each time
                        buf[i] = buf[i] + y
                if OP != "wram":
                    buf[i] = x
            edsl.mram_write(buf, a, BLOCK, src_offset=off, dst_offset=base)

    return micro._compile(kernel, {"TY": ty}, {"N": n, "OP": op, "BLOCK": micro.BLOCK, "ty": ty,
                                              "REPS": tuple(range(k))}, f"chain_{op}_{ty}_{k}")


def _data(ty: str, n: int) -> np.ndarray:
    """Positive values of 8-20 bits (a multiply's smaller operand is then the scalar)."""
    dtype = calibration.TYPES[ty][1]
    return np.random.default_rng(1).integers(1 << 8, 1 << 20, n).astype(dtype)


def _slots(case: Case, k: int) -> tuple[float, int]:
    n = TASKLETS * BLOCKS_PER_TASKLET * micro.BLOCK // (int(case.ty[1:]) // 8)
    a = _data(case.ty, n)
    est = chain(case.ty, case.op, k).run(a, n, case.scalar, tasklets=TASKLETS, timing=True).timing
    return sum(timing.ISSUE_SLOTS[c] * v for c, v in est.executed_ops.items()), n


@dataclass(frozen=True)
class Row:
    name: str
    estimated: float          # slots (cycles at 16 tasklets) per operation, or DMA cycles
    table: float              # the cost table's, or PrIM's DMA fit
    source: str


def rows() -> list[Row]:
    out = []
    for name, case in CASES.items():
        (one, n), (two, _) = _slots(case, 1), _slots(case, 2)
        table = sum(timing.ISSUE_SLOTS[c] for c in case.classes)
        source = "; ".join(dict.fromkeys(_tag(timing.INSTRUCTION_COSTS[c].source) for c in case.classes))
        out.append(Row(name, (two - one) / n, table, f"{' + '.join(case.classes)}: {source}"))
    for size in DMA_SIZES:
        latency, _ = calibration.mram_transfer(size, "read")
        fit = timing.ALPHA_READ + timing.BETA * size
        out.append(Row(f"mram_read {size} B", latency, fit, "alpha + beta * size: [PrIM] Fig. 7 and slide 30"))
    return out


def _tag(source: str) -> str:
    """A cost's source in a few words (`python benchmarks/dpu_timing.py --costs` prints it whole)."""
    if "PrIM's " in source and " throughput" in source:
        return source[source.index("PrIM's "):source.index(" throughput")] + " throughput"
    return source.split(" (")[0].split(":")[0]


# -- Kernels of a shape, not a class ---------------------------------------------------------
@functools.lru_cache(None)
def scan_unique():
    """UNI's DPU loop on a WRAM block: keep an element when it differs from the one
    before, at the running count (PrIM's `if (a[j] != a[j-1]) b[p++] = a[j]`)."""
    def kernel(a: InOut["memref<?xi32, MRAM>"], kept: InOut["memref<16xi32>"], size: Input["i64"]):
        buf = edsl.wram_alloc((16 * N,), "i32")
        out = edsl.wram_alloc((16 * N,), "i32")
        t = edsl.tasklet_id()
        off = t * N
        p = 0
        for base in range(t * N, size, edsl.num_tasklets() * N):
            edsl.mram_read(a, buf, BLOCK, src_offset=base, dst_offset=off)
            q = off
            for j in range(off + 1, off + N):
                if buf[j] != buf[j - 1]:
                    out[q] = buf[j]
                    q += 1
            p += q - off
            edsl.mram_write(out, a, BLOCK, src_offset=off, dst_offset=base)
        kept[t] = p

    return micro._compile(kernel, {}, {"N": micro.BLOCK // 4, "BLOCK": micro.BLOCK}, "scan_unique")


@functools.lru_cache(None)
def bit_loop():
    """A loop whose trip count is its element's bit length: `while x: x >>= 1; c += 1`."""
    def kernel(a: InOut["memref<?xi32, MRAM>"], size: Input["i64"]):
        buf = edsl.wram_alloc((16 * N,), "i32")
        t = edsl.tasklet_id()
        off = t * N
        for base in range(t * N, size, edsl.num_tasklets() * N):
            edsl.mram_read(a, buf, BLOCK, src_offset=base, dst_offset=off)
            for i in range(off, off + N):
                x = buf[i]
                c = 0
                while x > 0:
                    x = x >> 1
                    c += 1
                buf[i] = c
            edsl.mram_write(buf, a, BLOCK, src_offset=off, dst_offset=base)

    return micro._compile(kernel, {}, {"N": micro.BLOCK // 4, "BLOCK": micro.BLOCK}, "bit_loop")


@dataclass(frozen=True)
class Shape:
    """A kernel's executed operations per element, by class, and its estimated cycles."""
    name: str
    per_element: dict
    cycles_per_element: float

    def dominant(self) -> list[tuple[str, float]]:
        """Classes by their share of the issue slots, largest first."""
        slots = {c: timing.ISSUE_SLOTS[c] * v for c, v in self.per_element.items() if v}
        total = sum(slots.values())
        return sorted(((c, s / total) for c, s in slots.items()), key=lambda cs: -cs[1])


def shape(name: str, a: np.ndarray) -> Shape:
    """`name` ('scan_unique' or 'bit_loop') run on `a` (int32) at 16 tasklets."""
    n = len(a)
    if name == "scan_unique":
        rep = scan_unique().run(a, np.zeros(16, np.int32), n, tasklets=TASKLETS, timing=True)
    else:
        rep = bit_loop().run(a, n, tasklets=TASKLETS, timing=True)
    est = rep.timing
    return Shape(name, {c: v / n for c, v in est.executed_ops.items()}, est.dpu_cycles_max / n)
