"""The record of a compiled kernel (`edsl.backend.compiler.KernelRecord`):
what each stage writes into it, its round trip through the program's
header, and that nothing else reads the header's keys by name."""
import dataclasses
import pathlib
import re

import numpy as np
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st

import edsl
from edsl import InOut, Input, fl
from edsl.backend import triton_internals
from edsl.backend.compiler import TARGET, KernelRecord
from edsl.dpu.support import MRAM_SHIFT
from edsl.lowering.counting import CounterTable

EDSL = pathlib.Path(edsl.__file__).parent


@triton.jit
def checked_copy(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.device_assert(x >= 0, "negative input")
    tl.store(o_ptr + offs, x, mask=offs < n)


@edsl.dialect
def double(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
    for i in range(edsl.thread_id(), x.shape[0], edsl.num_threads()):
        y[i] = 2.0 * x[i]


@triton.jit
def calls_double(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + offs, fl.call(double, [tl.zeros_like(x)], [x]))


def _record(kernel, signature, constexprs, **options) -> KernelRecord:
    sig = dict(signature, **{k: "constexpr" for k in constexprs})
    compiled = triton_internals.compile_kernel(kernel, sig, constexprs, TARGET, dict(options, debug=True))
    record, obj = KernelRecord.from_program(compiled.asm["dpubin"])
    assert obj and record.name == compiled.metadata.name
    assert compiled.metadata.shared == record.wram_bytes + record.scratch_bytes
    return record


def test_each_stage_writes_its_part():
    plain = _record(checked_copy, {"x_ptr": "*fp32", "o_ptr": "*fp32", "n": "i32"}, {"BLOCK": 64},
                    num_tasklets=4, dpu_timing=True)
    assert plain.name == "checked_copy" and plain.tasklets == 4 and plain.wram_bytes > 0
    assert [m for m, _ in plain.asserts] == ["negative input"]
    assert plain.sites and all(isinstance(code, int) and line > 0 for code, _, line, _ in plain.sites)
    assert plain.stored == (1,) and not plain.regions and not plain.race_check
    assert plain.mram_shift == MRAM_SHIFT                           # make_dpubin
    assert isinstance(plain.counters, CounterTable) and plain.counters.counters > 0   # dpu_timing
    calling = _record(calls_double, {"x_ptr": "*fp32", "o_ptr": "*fp32"}, {"BLOCK": 64},
                      num_tasklets=4, race_check=True)
    assert calling.regions and calling.race_check and calling.mram_shift == 0     # make_llmlir, make_dpubin
    assert calling.counters is None


def test_a_launch_reads_the_record():
    x = np.arange(64, dtype=np.float32)
    o = np.zeros_like(x)
    kernel = calls_double[(1,)](x, o, BLOCK=64, num_tasklets=4)
    assert np.array_equal(o, 2 * x)
    assert kernel.function.record.regions and kernel.function.program.name == "calls_double"


texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
records = st.builds(
    KernelRecord, name=texts, tasklets=st.integers(1, 24), wram_bytes=st.integers(0, 65536),
    scratch_bytes=st.integers(0, 1 << 26), spills=st.lists(texts, max_size=3).map(tuple),
    asserts=st.lists(st.tuples(texts, texts), max_size=3).map(tuple),
    sites=st.lists(st.tuples(st.integers(0, 1 << 20), texts, st.integers(1, 10000), st.integers(0, 200)),
                   max_size=4).map(tuple),
    pointer_loads=st.lists(st.tuples(st.integers(0, 1 << 20), texts), max_size=2).map(tuple),
    stored=st.none() | st.lists(st.integers(0, 20), max_size=4).map(tuple),
    regions=st.booleans(), prints=st.booleans(), waits=st.booleans(), race_check=st.booleans(),
    mram_shift=st.sampled_from([0, MRAM_SHIFT]),
    counters=st.none() | st.builds(lambda n, ops: CounterTable(n, {c: tuple(v) for c, v in ops.items()}),
                                   st.integers(1, 8), st.dictionaries(st.sampled_from(["alu", "mul", "dma"]),
                                                                      st.lists(st.integers(0, 9), max_size=8))))


@settings(max_examples=60, deadline=None)
@given(records, st.binary(max_size=64))
def test_the_program_header_round_trips_every_field(record, obj):
    assert KernelRecord.from_program(record.to_program(obj)) == (record, obj)


def test_the_header_holds_exactly_the_records_fields():
    import json
    header = json.loads(KernelRecord(name="k").to_program(b"").partition(b"\n")[0])
    assert set(header) == {f.name for f in dataclasses.fields(KernelRecord)}


def test_no_module_reads_the_records_keys_by_name():
    """The header's keys are named only by `to_program`/`from_program`: a
    `meta["tasklets"]` or `metadata.get("regions")` elsewhere is a second
    reader of the hand-off."""
    fields = "|".join(f.name for f in dataclasses.fields(KernelRecord) if f.name != "name")
    by_name = re.compile(rf"""\b(?:meta|metadata|header)(?:\[|\.get\()["'](?:{fields})["']""")
    found = [f"{path.relative_to(EDSL)}:{n}" for path in EDSL.rglob("*.py")
             for n, line in enumerate(path.read_text().splitlines(), 1) if by_name.search(line)]
    assert found == []
