"""Each DPU its own MRAM, in the exported project: on several DPUs the host
runner merges the DPUs' results from their access logs as the DPU model does
(edsl/dpu/sharing.py): stores and atomics whose old value is unused merge,
any other sharing is the model's error, with exit status 5 and no output.

The property runs one exported project per (mode, tasklets) on random data,
grids and DPU counts (runner arguments) and compares `make sim`'s runner with
the model: the same outputs, or the same error text."""
import pathlib
import re
import tempfile

import numpy as np
import pytest
from hypothesis import event, given, settings, strategies as st

import edsl
from edsl.target import dpu as abi
from edsl.base.errors import DpuError
from sharing_kernels import BLOCK, count, flag, group_sums, read_then_count, scatter, take_tickets, wait_for
from edsl.dpu import merge
from export_helpers import build, export_and_run, export_with_data_and_run, masked, needs_cc, output, run

SHARING_EXIT = 5
# Float atomics, which Triton makes integer atomics on the floats' bits: the
# kernel's MODE for each.
FLOAT_MODES = {"fmax": "max", "fmin": "min"}
# Floats whose order Triton's lowering decides: zeros of both signs, NaNs of
# both signs, infinities, and a few values that repeat.
SPECIAL = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.5, -1.5, 2.0, -2.0], np.float32)



@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    """One exported and built project per (mode, tasklets), made on first use."""
    base, made = tmp_path_factory.mktemp("own_mram"), {}

    def get(mode, tasklets):
        if (mode, tasklets) not in made:
            folder = base / f"{mode}_{tasklets}"
            elem = "*fp32" if mode in FLOAT_MODES else "*i32"
            edsl.export(scatter, folder, signature={"x_ptr": elem, "idx_ptr": "*i32", "out_ptr": elem},
                        constants={"MODE": FLOAT_MODES.get(mode, mode), "BLOCK": BLOCK}, num_tasklets=tasklets,
                        outputs=["out_ptr"])
            build(folder)
            made[mode, tasklets] = folder
        return made[mode, tasklets]
    return get


def _message(text: str) -> str:
    """An error's words from "kernel '...'" on (the model's location prefix
    has the file's path, the runner's its base name)."""
    return text[text.index("kernel '"):].splitlines()[0]


@needs_cc
@settings(max_examples=12, deadline=None)
@given(mode=st.sampled_from(["store", "add", "max", "xor", "xchg", "gather", "fmax", "fmin"]),
       programs=st.integers(1, 6), dpus=st.integers(1, 8), tasklets=st.sampled_from([1, 3, 16]),
       size=st.integers(1, 24), seed=st.integers(0, 2**16))
def test_the_runner_gathers_as_the_model_does(projects, mode, programs, dpus, tasklets, size, seed):
    rng = np.random.default_rng(seed)
    n = programs * BLOCK
    x = rng.integers(-50, 50, n).astype(np.int32)
    if mode in ("store", "xchg", "gather"):
        # no index twice within a program (its order among lanes is not defined)
        size = n if mode == "gather" else max(size, BLOCK)
        idx = np.concatenate([rng.permutation(size)[:BLOCK] for _ in range(programs)]).astype(np.int32)
    else:
        idx = rng.integers(0, size, n).astype(np.int32)
    out = rng.integers(-50, 50, size).astype(np.int32)
    if mode in FLOAT_MODES:
        x, out = rng.choice(SPECIAL, n), rng.choice(SPECIAL, size)
    folder = projects(mode, tasklets)
    data = pathlib.Path(tempfile.mkdtemp(dir=folder))
    for name, a in (("x_ptr", x), ("idx_ptr", idx), ("out_ptr", out)):
        (data / f"{name}.bin").write_bytes(a.tobytes())
    got_dir = data / "out"
    r = run(folder, f"data={data}", f"out={got_dir}", f"dpus={dpus}", f"grid={programs}", "check=0")
    want = out.copy()
    try:
        scatter[(programs,)](x, idx, want, MODE=FLOAT_MODES.get(mode, mode), BLOCK=BLOCK, num_dpus=dpus,
                             num_tasklets=tasklets)
    except DpuError as err:
        event(f"{mode}: refused")
        assert "On UPMEM every DPU has its own MRAM" in str(err)
        assert r.returncode == SHARING_EXIT, r.stdout + r.stderr
        assert _message(r.stderr) == _message(str(err))
        assert not got_dir.exists()                      # nothing written
        return
    event(f"{mode}: merged")
    assert r.returncode == 0, r.stdout + r.stderr
    np.testing.assert_array_equal(np.frombuffer((got_dir / "out_ptr.bin").read_bytes(), np.int32),
                                  want.view(np.int32))                  # (floats: bit for bit)



@needs_cc
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_a_counter_every_program_adds_to_on_4_dpus(tmp_path, dtype):
    x = np.ones(16 * 256, dtype)
    cnt = np.zeros(1, dtype)
    folder = tmp_path / "count"
    edsl.export(count, folder, sample_args=(x, cnt), constants={"BLOCK": 256}, grid=(16,), num_dpus=4)
    build(folder)
    r = run(folder)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cnt_ptr: OK" in r.stdout
    assert output(folder, "cnt_ptr", cnt)[0] == 4096



@needs_cc
def test_a_read_of_what_another_dpu_wrote_is_the_models_error_at_its_line(tmp_path):
    x = np.zeros(8, np.int32)
    folder = tmp_path / "flag"
    edsl.export(flag, folder, signature={"x_ptr": "*i32"}, grid=(4,), num_dpus=4)
    (folder / "data" / "x_ptr.bin").write_bytes(x.tobytes())
    build(folder)
    r = run(folder)
    assert r.returncode == SHARING_EXIT
    line = flag.fn.__code__.co_firstlineno          # (the decorator's line)
    name = pathlib.Path(flag.fn.__code__.co_filename).name
    assert re.match(rf"error: {name}:{line + 6}:\d+: kernel 'flag': DPU 1 reads "
                    rf"element 0 of array 'x_ptr' \(line {line + 6}\), which DPU 0 stores to in the same "
                    rf"launch \(line {line + 4}\)\. On UPMEM every DPU has its own MRAM", r.stderr), r.stderr
    assert not (folder / "out").exists()
    with pytest.raises(DpuError) as err:                # the model's words
        flag[(4,)](x.copy(), num_dpus=4)
    assert _message(r.stderr) == _message(str(err.value))
    r = run(folder, "dpus=1")                   # one DPU: legal
    assert r.returncode == 0, r.stderr
    assert list(output(folder, "x_ptr", x)[:4]) == [5, 5, 5, 5]


@needs_cc
@pytest.mark.parametrize("setter, dpus", [(0, 2), (1, 2), (1, 1)])
def test_a_program_that_waits_for_another_programs_store_is_the_models_error(tmp_path, setter, dpus):
    """A wait that never ends on UPMEM (edsl.target.dpu.WAIT_REPEATS): the
    runner stops the DPU and says what the model says, at the same line."""
    r = export_with_data_and_run(tmp_path / "wait", wait_for,
                                 {"flag_ptr": np.zeros(1, np.int32), "out_ptr": np.zeros(2, np.int32)},
                                 signature={"flag_ptr": "*i32", "out_ptr": "*i32"},
                                 constants={"SETTER": setter}, grid=(2,), num_dpus=dpus)
    assert r.returncode != 0 and "times in a row" in r.stderr, r.stdout + r.stderr
    with pytest.raises(DpuError) as err:
        wait_for[(2,)](np.zeros(1, np.int32), np.zeros(2, np.int32), SETTER=setter, num_dpus=dpus)
    assert masked(_message(r.stderr)) == masked(_message(str(err.value)))
    name = pathlib.Path(wait_for.fn.__code__.co_filename).name
    assert r.stderr.startswith(f"error: {name}:{err.value.loc.lineno}:"), r.stderr


@needs_cc
def test_an_atomic_that_changes_its_element_each_trip_is_no_wait_in_the_runner(tmp_path):
    """Tickets taken from one counter past WAIT_REPEATS trips: the runner
    goes on to the loop's end, as the model does."""
    folder = tmp_path / "tickets"
    edsl.export(take_tickets, folder,
                signature={"counter_ptr": "*i32", "out_ptr": "*i32", "n": "i32", "at": "i64"},
                grid=(2,), num_dpus=1)
    (folder / "data" / "counter_ptr.bin").write_bytes(np.zeros(1, np.int32).tobytes())
    (folder / "data" / "out_ptr.bin").write_bytes(np.full(2, -1, np.int32).tobytes())
    build(folder)
    n = abi.WAIT_REPEATS + 3
    r = run(folder, f"n={n}", "at=0")
    assert r.returncode == 0, r.stdout + r.stderr
    counter, out = np.zeros(1, np.int32), np.full(2, -1, np.int32)
    take_tickets[(2,)](counter, out, n, 0, num_dpus=1)
    np.testing.assert_array_equal(output(folder, "out_ptr", out), out)
    np.testing.assert_array_equal(output(folder, "counter_ptr", counter), counter)
    r = run(folder, f"n={n}", f"at={1 << 40}")          # (far outside the arrays: the DMA's error)
    with pytest.raises(DpuError) as err:
        take_tickets[(2,)](counter, out, n, 1 << 40, num_dpus=1)
    assert r.returncode != 0 and masked(_message(r.stderr)) == masked(_message(str(err.value))), r.stderr


def test_a_scalar_every_tasklet_reads_is_read_before_any_tasklet_writes_in_the_runner(tmp_path):
    """16 tasklets read a count before tasklet 0's atomic changes it, in the
    exported runner as on the model: a lock's count (group sums) and a
    counter each program stores as it read it."""
    rng = np.random.default_rng(3)
    x = rng.integers(-50, 50, (12, 100)).astype(np.float32)
    export_and_run(tmp_path / "sums", group_sums, (x, np.zeros((3, 100), np.float32), np.zeros(6, np.int32), 100),
                   {"GROUPS": 3, "BLOCK": 128}, (12,), tasklets=16)
    sums = output(tmp_path / "sums", "sums_ptr", np.zeros((3, 100), np.float32))
    np.testing.assert_array_equal(sums, x.reshape(4, 3, 100).sum(0))
    export_and_run(tmp_path / "count", read_then_count, (np.zeros(1, np.int32), np.zeros((5, 64), np.int32)),
                   {"BLOCK": 64}, (5,), tasklets=16)
    seen = output(tmp_path / "count", "out_ptr", np.zeros((5, 64), np.int32))
    np.testing.assert_array_equal(seen, np.repeat(np.arange(5, dtype=np.int32)[:, None], 64, 1))


def test_the_runner_merges_with_the_models_own_file(tmp_path):
    """The merge across DPUs is written once: the exported runner includes
    the merge.h (and half_bits.h) the DPU model compiles and runs."""
    folder = tmp_path / "add"
    edsl.export(scatter, folder, signature={"x_ptr": "*i32", "idx_ptr": "*i32", "out_ptr": "*i32"},
                constants={"MODE": "add", "BLOCK": BLOCK}, outputs=["out_ptr"])
    assert (folder / "merge.h").read_text() == merge.header()
    assert (folder / "half_bits.h").read_text() == merge.HALF_BITS_H.read_text()
    assert '#include "merge.h"' in (folder / "host_runner.c").read_text()
    assert re.search(r"^static (int|void) merge_(begin|take|reads|end)\(", (folder / "host_runner.c").read_text(),
                     re.M) is None


def test_the_codes_in_c_decode_the_abis_kinds():
    codes = dict(merge.codes())
    for op in abi.AtomicOp:
        for old_used in (False, True):
            for size, float_type in ((1, None), (2, "bf16"), (4, "f32"), (8, None), (2, "f16"), (8, "f64")):
                kind = abi.atomic_kind(op, old_used, size, float_type)
                assert kind & codes["ACCESS_MASK"] == codes["ACCESS_ATOMIC"]
                assert (kind >> codes["ATOMIC_OP_SHIFT"]) & codes["ATOMIC_OP_MASK"] == codes[f"ATOMIC_{op.name}"]
                assert bool(kind & codes["ATOMIC_OLD_USED"]) == old_used
                fl = (kind >> codes["ATOMIC_FLOAT_SHIFT"]) & codes["ATOMIC_FLOAT_MASK"]
                assert fl == (codes[f"ATOMIC_FLOAT_{float_type.upper()}"] if float_type else 0)
                assert kind >> codes["ATOMIC_SIZE_SHIFT"] == size
                merged = int(codes["MERGED_ATOMICS"].rstrip("u"), 16) >> int(op) & 1
                assert (bool(merged) and not old_used) == abi.atomic_parts(kind).merged

