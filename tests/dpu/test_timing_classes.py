"""The DPU time estimate per operation class (benchmarks/prim/classes.py): a microbenchmark
per class on the model costs what the cost table says, and kernels of a shape (a scan
with a conditional store, a loop of data-dependent length) count what they execute."""
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))

from prim import classes  # noqa: E402

from edsl.dpu import timing  # noqa: E402


@pytest.fixture(scope="module")
def rows():
    return {r.name: r for r in classes.rows()}


def test_each_class_costs_its_table_entry(rows):
    assert set(rows) == set(classes.CASES) | {f"mram_read {s} B" for s in classes.DMA_SIZES}
    for r in rows.values():
        assert r.estimated == pytest.approx(r.table, rel=1e-3), r
    # the entries themselves: one ISA instruction, __mulsi3's 7 and a step a bit of the
    # smaller operand (3: two bits), PrIM's DMA fit
    assert rows["int32 add"].table == 1 and rows["int64 add"].table == 2
    assert rows["int32 multiply (x3)"].table == 7 + 2
    assert rows["mram_read 2048 B"].table == 77 + 0.5 * 2048
    assert rows["float add"].table == timing.ISSUE_SLOTS["fadd32"]


def test_a_scan_with_a_conditional_store_counts_what_it_executes():
    rng = np.random.default_rng(3)
    n = classes.TASKLETS * 2 * 256
    a = np.repeat(rng.integers(0, 1 << 20, n // 4), 4).astype(np.int32)
    kept = sum(int((a[b + 1:b + 256] != a[b:b + 255]).sum()) for b in range(0, n, 256))
    sh = classes.shape("scan_unique", a.copy())
    assert sh.per_element["store"] == pytest.approx((kept + classes.TASKLETS) / n, abs=1e-9)   # + kept[t]
    assert sh.per_element["branch"] == pytest.approx(2, abs=0.01)       # the loop's and the `if`'s
    # no Python-style wrap for buf[j - 1] (j counts up from its block's first + 1)
    assert sh.per_element["alu"] < 3.2
    assert [c for c, _ in sh.dominant()[:1]] == ["alu"]


def test_a_loop_of_data_dependent_length_counts_each_trip():
    """Each trip of `while x > 0: x >>= 1; c += 1` is a test, a shift and an add: against
    zeros (no trip), the data costs exactly that per bit."""
    rng = np.random.default_rng(4)
    a = rng.integers(0, 1 << 20, classes.TASKLETS * 2 * 256).astype(np.int32)
    bits = np.mean([int(x).bit_length() for x in a])
    sh, zeros = classes.shape("bit_loop", a.copy()), classes.shape("bit_loop", np.zeros_like(a))
    assert sh.per_element["branch"] - zeros.per_element["branch"] == pytest.approx(bits, abs=1e-9)
    assert sh.per_element["alu"] - zeros.per_element["alu"] == pytest.approx(2 * bits, abs=1e-9)
    assert zeros.cycles_per_element < sh.cycles_per_element / 5
