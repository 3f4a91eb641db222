"""The executed-block counting pass, on LLVM-dialect text."""
import pytest
from mlir import ir

import edsl
from edsl.target.dpu import COUNTERS, Ctx
from edsl.lowering.counting import COUNTERS_ATTR, CounterTable, count_executed_blocks, counter_table, run_counting

# A loop as the lowering prints it: a header comparing and branching, a body
# loading, adding and storing, an exit.
LOOP = """
module {
  llvm.func @edsl_dpu_me() -> i32 attributes {sym_visibility = "private"}
  llvm.func @f(%p: !llvm.ptr, %n: i64, %s: i32, %q: !llvm.ptr) {
    %c0 = llvm.mlir.constant(0 : i64) : i64
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %t = llvm.call @edsl_dpu_me() : () -> i32
    llvm.br ^bb1(%c0 : i64)
  ^bb1(%i: i64):
    %lt = llvm.icmp "slt" %i, %n : i64
    llvm.cond_br %lt, ^bb2, ^bb3
  ^bb2:
    %a = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i32
    %x = llvm.load %a : !llvm.ptr -> i32
    %y = llvm.add %x, %s : i32
    llvm.store %y, %a : i32, !llvm.ptr
    %b = llvm.getelementptr %q[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i64
    %w = llvm.load %b : !llvm.ptr -> i64
    %w2 = llvm.mul %w, %w : i64
    %w3 = llvm.add %w2, %n : i64
    %f = llvm.sitofp %w3 : i64 to f32
    %g = llvm.fmul %f, %f : f32
    llvm.store %w3, %b : i64, !llvm.ptr
    %i1 = llvm.add %i, %c1 : i64
    llvm.br ^bb1(%i1 : i64)
  ^bb3:
    llvm.return
  }
}
"""


def _parse(text=LOOP):
    ctx = ir.Context()
    return ir.Module.parse(text, ctx)


def test_counts_each_block_by_class():
    table = run_counting(_parse())
    assert table.counters == 4
    ops = table.ops
    # entry: the tasklet-id call is a register read; constants and br are free
    assert ops["alu"][0] == 1
    # header: the compare is fused into the conditional branch
    assert ops["branch"] == (0, 1, 0, 0) and ops["alu"][1] == 0
    # body: 64-bit data pays the 64-bit routines, the 64-bit index does not
    assert ops["mul64"] == (0, 0, 1, 0) and ops["alu64"] == (0, 0, 1, 0)
    assert ops["alu"][2] == 2                  # the i32 add and the index increment
    assert ops["load"][2] == 2 and ops["store"][2] == 2 and ops["address"][2] == 2
    assert ops["fconv"][2] == 1 and ops["fmul32"][2] == 1
    assert all(v[3] == 0 for v in ops.values())  # the return block


def test_inserts_one_increment_per_block_and_the_declaration():
    module = _parse()
    run_counting(module)
    text = str(module)
    assert f"llvm.func @{COUNTERS}() -> !llvm.ptr" in text
    assert text.count(f"llvm.call @{COUNTERS}()") == 1       # once per function, in its entry
    for k in range(4):
        assert f"[{k}] : (!llvm.ptr) -> !llvm.ptr, i64" in text
    assert f"{COUNTERS_ATTR} = 4 : i64" in text
    module.operation.verify()


def test_table_survives_printing():
    module = _parse()
    table = run_counting(module)
    again = ir.Module.parse(str(module), ir.Context())
    assert counter_table(again) == table


def test_executed_ops_from_counters():
    table = run_counting(_parse())
    # n = 3: entry once, header 4 times, body 3 times, exit once
    done = table.executed([1, 4, 3, 1])
    assert done["load"] == 6 and done["branch"] == 4 and done["mul64"] == 3
    with pytest.raises(ValueError):
        table.executed([1, 2])


def test_runtime_functions_and_skipped_functions_are_not_counted():
    text = LOOP.replace("llvm.func @f(", "llvm.func @edsl_dpu_helper(")
    table = count_executed_blocks(_parse(text))
    assert table.counters == 0
    table = count_executed_blocks(_parse(), skip=("f",))
    assert table.counters == 0


def test_a_module_is_counted_once():
    module = _parse()
    run_counting(module)
    with pytest.raises(edsl.base.errors.LoweringError, match="already"):
        count_executed_blocks(module)


def test_counter_table_executed_and_json():
    table = CounterTable(3, {"alu": (1, 2, 0), "fadd32": (0, 1, 4)})
    assert table.executed([5, 2, 1]) == {"alu": 9, "fadd32": 6}
    assert CounterTable.from_json(table.to_json()) == table
    with pytest.raises(ValueError, match="2 counters read"):
        table.executed([1, 2])


def test_table_survives_a_program_header():
    table = run_counting(_parse())
    assert CounterTable.from_json(table.to_json()) == table


# A kernel block as the dpu backend lowers it: the tasklet id read from the
# launch context, a DMA through the runtime's routine with that context, and a
# loop over 64-bit data in WRAM.
KERNEL = f"""
module {{
  llvm.func @__dpu_dma(i64, i64, i64, i64, i64, !llvm.ptr) attributes {{sym_visibility = "private"}}
  llvm.func @k(%mram: i64, %wram: !llvm.ptr, %ctx: !llvm.ptr) {{
    %c0 = llvm.mlir.constant(0 : i64) : i64
    %c8 = llvm.mlir.constant(1024 : i64) : i64
    %tp = llvm.getelementptr %ctx[{int(Ctx.TID)}] : (!llvm.ptr) -> !llvm.ptr, i64
    %tid = llvm.load %tp : !llvm.ptr -> i64
    %off = llvm.mul %tid, %c8 : i64
    %w = llvm.ptrtoint %wram : !llvm.ptr to i64
    %wa = llvm.add %w, %off : i64
    %m = llvm.add %mram, %off : i64
    llvm.call @__dpu_dma(%m, %wa, %c8, %c0, %c0, %ctx) : (i64, i64, i64, i64, i64, !llvm.ptr) -> ()
    %p = llvm.getelementptr %wram[%tid] : (!llvm.ptr, i64) -> !llvm.ptr, i64
    %x = llvm.load %p : !llvm.ptr -> i64
    %y = llvm.add %x, %x : i64
    llvm.store %y, %p : i64, !llvm.ptr
    llvm.return
  }}
}}
"""


def test_context_reads_are_registers_and_dma_calls_are_dma():
    table = run_counting(_parse(KERNEL))
    ops = {cls: v[0] for cls, v in table.ops.items()}
    # the tasklet id is a register read; the index math on it is 32-bit work
    # on the DPU (alu), the add of the loaded 64-bit element is not (alu64)
    assert ops["load"] == 1 and ops["alu64"] == 1 and ops["alu"] == 4
    assert ops["dma"] == 1 and ops["address"] == 1 and ops["store"] == 1


@edsl.dialect
def times(y: edsl.InOut["memref<?xi32>"], x: edsl.Input["memref<?xi32>"], s: edsl.Input["i32"]):
    for i in range(x.shape[0]):
        y[i] = x[i] * s


@pytest.mark.parametrize("values,scalar", [([0, 1, 3, 255], 1 << 20), ([1 << 20, 7], 5), ([-1], -1)])
def test_mul32_steps_are_the_smaller_operands_bits(values, scalar):
    # __mulsi3 runs one mul_step per bit of the smaller unsigned operand, at least one
    import numpy as np
    x = np.array(values, np.int32)
    y = np.zeros_like(x)
    est = times.run(y, x, scalar, timing=True).timing
    np.testing.assert_array_equal(y, x * np.int32(scalar))
    small = [min(v % 2**32, scalar % 2**32) for v in values]
    assert est.executed_ops["mul32"] == len(values)
    assert est.executed_ops["mul32_step"] == sum(max(1, m.bit_length()) for m in small)
