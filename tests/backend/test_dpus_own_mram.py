"""Each DPU its own MRAM: programs on different DPUs see the arrays as
transferred, atomics whose old value is unused merge across DPUs, and any
other sharing across DPUs is a DpuError naming the array, an element, both
DPUs and both lines; within one DPU everything stays legal.

The property runs kernels that store or apply atomics through random index
maps and compares them with a NumPy model of a UPMEM system: each DPU runs
its programs in order on its own copy of the arrays, then the host gathers."""
import re
import weakref

import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import event, given, settings, strategies as st

from edsl.target.dpu import Access, AtomicOp, Shared, atomic_kind, dpu_programs
from edsl.dpu.runtime import Launch
from edsl.dpu.sharing import Gather, SharingError
from edsl.base.errors import DpuError
from sharing_kernels import BLOCK, count, flag, scatter, take_tickets, wait_for
from source_lines import line_of




def _upmem(mode, x, idx, out, dpus):
    """What a UPMEM system gives (the merged array), or the kind of error."""
    programs = len(x) // BLOCK
    used = min(dpus, programs)
    finals, touched, wrote = [], [], []
    for d in range(used):
        mine = out.copy()
        seen, stored = set(), set()
        for p in dpu_programs(d, programs, dpus):
            lanes = range(p * BLOCK, (p + 1) * BLOCK)
            if mode == "gather":
                vals = [mine[idx[k]] + x[k] for k in lanes]      # loads first, then the stores
                seen |= {int(idx[k]) for k in lanes}
                for k, v in zip(lanes, vals):
                    mine[k] = v
                    stored.add(k)
                continue
            for k in lanes:
                i = int(idx[k])
                mine[i] = {"store": x[k], "add": mine[i] + x[k], "max": max(mine[i], x[k]),
                           "xor": mine[i] ^ x[k], "xchg": x[k]}[mode]
                stored.add(i)
        finals.append(mine)
        touched.append(seen)
        wrote.append(stored)
    result = out.copy()
    owner = {}
    for d in range(used):
        for i in sorted(wrote[d]):
            if i in owner:
                if mode in ("store", "gather") and finals[d][i] != result[i]:
                    return "different values stored"
                if mode == "xchg":
                    return "xchg"
            if i not in owner:
                result[i] = finals[d][i]
            elif mode == "add":
                result[i] = result[i] + finals[d][i] - out[i]
            elif mode == "max":
                result[i] = max(result[i], finals[d][i])
            elif mode == "xor":
                result[i] = result[i] ^ finals[d][i] ^ out[i]
            owner.setdefault(i, d)
    for d in range(used):
        for i in touched[d]:
            if any(i in wrote[e] for e in range(used) if e != d):
                return "read"
    return result


@settings(max_examples=60, deadline=None)
@given(mode=st.sampled_from(["store", "add", "max", "xor", "xchg", "gather"]),
       programs=st.integers(1, 6), dpus=st.integers(1, 8), tasklets=st.sampled_from([1, 3, 16]),
       size=st.integers(1, 24), seed=st.integers(0, 2**16))
def test_dpus_gather_as_upmem_does(mode, programs, dpus, tasklets, size, seed):
    rng = np.random.default_rng(seed)
    n = programs * BLOCK
    x = rng.integers(-50, 50, n).astype(np.int32)
    if mode == "gather":
        size = n
    if mode in ("store", "xchg", "gather"):
        # no index twice within a program (its order among lanes is not defined)
        idx = np.concatenate([rng.permutation(max(size, BLOCK))[:BLOCK] % max(size, BLOCK)
                              for _ in range(programs)]).astype(np.int32)
        size = max(size, BLOCK)
    else:
        idx = rng.integers(0, size, n).astype(np.int32)
    out = rng.integers(-50, 50, size if mode != "gather" else n).astype(np.int32)
    want = _upmem(mode, x, idx, out, dpus)
    event(f"{mode}: {want if isinstance(want, str) else 'merged'}")
    got = out.copy()
    if isinstance(want, str):
        with pytest.raises(DpuError, match="On UPMEM every DPU has its own MRAM") as err:
            scatter[(programs,)](x, idx, got, MODE=mode, BLOCK=BLOCK, num_dpus=dpus, num_tasklets=tasklets)
        assert "'out_ptr'" in str(err.value)
        np.testing.assert_array_equal(got, out)           # nothing half-written
    else:
        scatter[(programs,)](x, idx, got, MODE=mode, BLOCK=BLOCK, num_dpus=dpus, num_tasklets=tasklets)
        np.testing.assert_array_equal(got, want)



@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.int64])
def test_a_counter_that_every_program_adds_to_gives_what_a_gpu_gives(dtype):
    x = np.ones(16 * 256, dtype)
    cnt = np.zeros(1, dtype)
    count[(16,)](x, cnt, BLOCK=256, num_dpus=4)
    assert cnt[0] == 4096



def test_a_read_of_what_another_dpu_wrote_names_both():
    x = np.zeros(8, np.int32)
    with pytest.raises(DpuError) as err:
        flag[(4,)](x, num_dpus=4)
    message = str(err.value)
    assert re.search(r"DPU 1 reads element 0 of array 'x_ptr' \(line \d+\), which DPU 0 stores to in "
                     r"the same launch \(line \d+\)", message), message
    assert err.value.loc.lineno == flag.fn.__code__.co_firstlineno + 6   # the load's line
    np.testing.assert_array_equal(x, 0)
    flag[(4,)](x, num_dpus=1)                      # one DPU: legal
    assert list(x[:4]) == [5, 5, 5, 5]


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("setter, dpus", [(0, 2), (1, 2), (1, 1)])
def test_a_program_that_waits_for_another_programs_store_is_an_error(monkeypatch, setter, dpus, workers):
    """A program that waits for a flag another program stores: on a GPU both
    may run at once, on UPMEM the wait never ends (a DPU runs its programs one
    after another and sees only its own MRAM). A DpuError at the wait's line,
    on the waiter's DPU, whichever program or DPU runs first; not a hang."""
    from edsl.target.dpu import WAIT_REPEATS, WAITS_FOREVER
    monkeypatch.setenv("EDSL_DPU_WORKERS", workers)
    flag_, out = np.zeros(1, np.int32), np.zeros(2, np.int32)
    with pytest.raises(DpuError) as err:
        wait_for[(2,)](flag_, out, SETTER=setter, num_dpus=dpus)
    on = f" on DPU {1 - setter}" if dpus > 1 else ""
    message = err.value.message
    assert message.startswith(f"kernel 'wait_for'{on}: the same access of 4 bytes at MRAM address "), message
    assert message.endswith(f", {WAIT_REPEATS} times in a row: {WAITS_FOREVER}"), message
    assert err.value.loc.lineno == line_of(wait_for, "# <wait>")
    if dpus > 1:
        np.testing.assert_array_equal(flag_, 0)
        np.testing.assert_array_equal(out, 0)


def _calls_by_loop_depth(mlir: str, callee: str) -> list[int]:
    """For each call of `callee` in the converted kernel (`mlir`: its module's
    text), how many `scf.while` loops hold it."""
    from mlir import ir
    from edsl.backend.convert import new_context
    depths = []

    def visit(op):
        if op.name == "llvm.call" and ir.FlatSymbolRefAttr(op.attributes["callee"]).value == callee:
            depth, parent = 0, op.parent
            while parent.name != "func.func":
                depth, parent = depth + (parent.name == "scf.while"), parent.parent
            if ir.StringAttr(parent.attributes["sym_name"]).value not in ("__dpu_main", "__dpu_launch"):
                depths.append(depth)
        return ir.WalkResult.ADVANCE
    ir.Module.parse(mlir, new_context()).operation.walk(visit)
    return sorted(depths)


def test_only_accesses_in_while_loops_are_watched_for_waits():
    """A wait that cannot end needs a loop that runs until a value changes:
    the accesses in a `while` loop are watched, after a reset of the watch
    before the loop; other accesses cost no watch (on the model and on a DPU)."""
    from edsl.target.dpu import NOTE, WATCH_WAIT
    flag_, out = np.zeros(1, np.int32), np.zeros(2, np.int32)
    waits = wait_for.warmup(flag_, out, SETTER=0, grid=(2,), num_dpus=1).asm["mlir"]
    assert _calls_by_loop_depth(waits, NOTE) == [0, 0, 1]            # two stores, the loop's load
    assert _calls_by_loop_depth(waits, WATCH_WAIT) == [0, 1]         # the reset before the loop, the load
    nested = waits_in_turn.warmup(np.zeros(3, np.int32), out, grid=(1,), num_dpus=1).asm["mlir"]
    assert _calls_by_loop_depth(nested, WATCH_WAIT) == [0, 0, 1, 1, 2]   # a reset before each outer loop
    plain = count.warmup(np.zeros(4 * BLOCK, np.int32), np.zeros(1, np.int32), BLOCK=BLOCK, grid=(4,),
                         num_dpus=1).asm["mlir"]
    assert _calls_by_loop_depth(plain, NOTE) and not _calls_by_loop_depth(plain, WATCH_WAIT)


@triton.jit
def waits_in_turn(flag_ptr, out_ptr):
    n = 0
    while tl.load(flag_ptr, volatile=True) == 0:
        while tl.load(flag_ptr + 1, volatile=True) == 0:
            n += 1
    while tl.load(flag_ptr + 2, volatile=True) == 0:
        n += 1
    tl.store(out_ptr, n)


def test_the_same_load_repeated_in_a_for_loop_is_no_wait():
    """A `for` loop ends by itself: the same load made more than WAIT_REPEATS
    times in a row is no wait that cannot end."""
    from edsl.target.dpu import WAIT_REPEATS
    x, out = np.ones(1, np.int32), np.zeros(1, np.int32)
    load_repeatedly[(1,)](x, out, WAIT_REPEATS + 2, num_dpus=1)
    assert out[0] == WAIT_REPEATS + 2


@triton.jit
def load_repeatedly(x_ptr, out_ptr, n):
    total = 0
    for _ in range(n):
        total += tl.load(x_ptr)
    tl.store(out_ptr, total)


def test_an_atomic_that_changes_its_element_each_trip_is_no_wait():
    """Tickets taken from one counter in a `while` loop: the same atomic of
    the same bytes each trip, but each changes the counter, so the loop goes
    on to its end past WAIT_REPEATS trips. A spin on a lock that no program
    releases leaves the lock as it is: that one is a wait."""
    from edsl.target.dpu import WAIT_REPEATS, WAITS_FOREVER
    counter, out = np.zeros(1, np.int32), np.full(2, -1, np.int32)
    take_tickets[(2,)](counter, out, WAIT_REPEATS + 3, 0, num_dpus=1)
    assert list(out) == [WAIT_REPEATS + 3, 0] and counter[0] == WAIT_REPEATS + 5
    # (the watch reads no element that its transfer could not reach)
    with pytest.raises(DpuError, match="is outside the launch's arrays") as err:
        take_tickets[(1,)](counter, out, 10, 1 << 40, num_dpus=1)
    assert err.value.loc.lineno == line_of(take_tickets, "# <take>")
    with pytest.raises(DpuError, match=re.escape(f"{WAIT_REPEATS} times in a row: {WAITS_FOREVER}")) as err:
        locked_add[(1,)](np.ones(1, np.int32), np.ones(1, np.int32), np.zeros(1, np.int32), num_dpus=1)
    assert err.value.loc.lineno == locked_add.fn.__code__.co_firstlineno + 2


def test_a_program_that_waits_for_an_earlier_programs_store_on_its_dpu_goes_on():
    flag_, out = np.zeros(1, np.int32), np.full(2, 7, np.int32)
    wait_for[(2,)](flag_, out, SETTER=0, num_dpus=1)
    assert list(flag_) == [1] and list(out) == [7, 0]


@triton.jit
def locked_add(x_ptr, lock_ptr, acc_ptr):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(acc_ptr, tl.load(acc_ptr) + tl.load(x_ptr + tl.program_id(0)))
    tl.atomic_xchg(lock_ptr, 0)


def test_a_lock_across_dpus_is_refused_and_legal_on_one():
    x = np.arange(1, 9, dtype=np.int32)
    lock, acc = np.zeros(1, np.int32), np.zeros(1, np.int32)
    # (either sharing may be named first: the lock, or the sum it guards)
    with pytest.raises(DpuError, match=r"DPU 0 applies different atomics to element 0 of array 'lock_ptr'"
                                       r"|store different values to element 0 of array 'acc_ptr'"):
        locked_add[(8,)](x, lock, acc, num_dpus=2)
    assert acc[0] == 0 and lock[0] == 0
    locked_add[(8,)](x, lock, acc, num_dpus=1)
    assert acc[0] == 36


def test_dpus_that_may_wait_on_each_other_run_on_one_thread(monkeypatch):
    """A spin lock between DPUs running at once on host threads could wait for
    ever (an atomic's read-modify-write is atomic within a DPU only): a kernel
    that uses an atomic's old value runs its DPUs one after another."""
    seen = []
    real = Launch.run_each
    monkeypatch.setattr(Launch, "run_each", lambda run, jobs: (seen.append(len(jobs)), real(run, jobs))[1])
    monkeypatch.setenv("EDSL_DPU_WORKERS", "2")
    x = np.arange(1, 9, dtype=np.int32)
    with pytest.raises(DpuError):
        locked_add[(8,)](x, np.zeros(1, np.int32), np.zeros(1, np.int32), num_dpus=2)
    assert seen == []
    count[(16,)](np.ones(16 * 256, np.int32), np.zeros(1, np.int32), BLOCK=256, num_dpus=2)   # (old value unused)
    assert seen and seen[-1] == 2


# ---- the gathering itself, on logs written by hand ---------------------------------------

class _Memory:
    def __init__(self, data: bytes):
        self.data = bytearray(data)

    def read(self, address, n):
        return bytes(self.data[address:address + n])

    def write(self, address, data):
        self.data[address:address + len(data)] = data


def _run(memory, gather, dpu, writes, log):
    for address, data in writes:
        memory.write(address, data)
    gather.take(dpu, np.array(log, dtype=np.int64).reshape(-1, 4))


def test_float_adds_merge_dpu_by_dpu():
    memory = _Memory(np.array([0.5, 0.0], np.float32).tobytes())
    gather = Gather([(0, 8)], memory.read, memory.write)
    add = atomic_kind(AtomicOp.FADD, False, 4, "f32")
    for d, v in enumerate([0.25, 1e-8, 3.0]):
        _run(memory, gather, d, [(0, np.float32(0.5 + v).tobytes())], [(add, 0, 4, 7)])
    assert gather.restored()
    gather.merge()
    got = np.frombuffer(memory.read(0, 4), np.float32)[0]
    want = np.float32(0.75)
    for v in [1e-8, 3.0]:
        want = np.float32(want + (np.float32(0.5 + v) - np.float32(0.5)))
    assert got == want


def test_a_dpu_that_stores_and_applies_an_atomic_to_one_element_shares_it_with_no_other():
    memory = _Memory(bytes(8))
    gather = Gather([(0, 8)], memory.read, memory.write)
    add = atomic_kind(AtomicOp.ADD, False, 4, None)
    _run(memory, gather, 0, [(0, b"\x02\0\0\0")], [(Access.WRITE, 0, 4, 1), (add, 0, 4, 2)])
    _run(memory, gather, 1, [(0, b"\x01\0\0\0")], [(add, 0, 4, 3)])
    with pytest.raises(SharingError) as err:
        gather.merge()
    assert (err.value.first.dpu, err.value.second.dpu, err.value.address) == (0, 1, 0)
    assert err.value.first.verb() == "stores to and atomically updates"


def test_equal_stores_from_two_dpus_agree_and_reads_of_own_writes_pass():
    memory = _Memory(bytes(16))
    gather = Gather([(0, 16)], memory.read, memory.write)
    for d in range(2):
        _run(memory, gather, d, [(0, b"\x07" * 4), (8 + 4 * d, b"\x01" * 4)],
             [(Access.WRITE, 0, 4, 1), (Access.WRITE, 8 + 4 * d, 12 + 4 * d, 1), (Access.READ, 8 + 4 * d, 12 + 4 * d, 2)])
    gather.merge()
    assert memory.read(0, 16) == b"\x07" * 4 + bytes(4) + b"\x01" * 8


def test_a_dpus_claims_coalesce_within_one_kind_only():
    from edsl.dpu.sharing import _coalesced
    add = atomic_kind(AtomicOp.ADD, False, 4, None)
    claims = np.array([[Access.WRITE, 0, 1000, 1], [add, 10, 20, 2], [add, 500, 504, 3], [add, 20, 24, 4],
                       [Access.WRITE, 1000, 1008, 5]], dtype=np.int64)
    got = sorted(map(tuple, _coalesced(claims).tolist()))
    assert got == sorted([(Access.WRITE, 0, 1008, 1), (add, 10, 24, 2), (add, 500, 504, 3)])


def test_pages_saved_by_writes_are_put_back_and_the_others_copied_as_they_are():
    """A Gather whose pages the DPUs' first writes save (here: by hand, as
    the runtime library's SAVE_PAGES does): pages run from the array's first
    byte; restoring puts back the saved pages only, the last clipped to the
    array; `save` copies the pages no DPU wrote."""
    from edsl.target.dpu import PAGE_BYTES, PAGE_EPOCH_SHIFT, PAGE_OWNER_SHIFT, SAVE_EPOCH, SAVE_MIXED, SAVE_SPANS, Page
    before = bytes(range(256)) * (4 * PAGE_BYTES // 256)
    memory = _Memory(before)
    lo, hi = PAGE_BYTES // 2, 3 * PAGE_BYTES + 8              # (three pages from lo, the last in part)
    gather = Gather([(lo, hi)], memory.read, memory.write, saved_by_writes=True)
    assert list(gather.page_states(0)[0]) == [Page.CLEAN] * 3
    assert (gather.table[0], gather.table[SAVE_MIXED], gather.table[SAVE_EPOCH]) == (1, 0, gather.epoch)
    assert list(gather.table[SAVE_SPANS:SAVE_SPANS + 2]) == [lo, hi]
    gather.pages[0][1] = (gather.epoch - 1) << PAGE_EPOCH_SHIFT | Page.SAVED   # (an earlier launch's: clean)
    for dpu, page in enumerate((0, 2)):                       # DPUs 0 and 1 save, then write, pages 0 and 2
        a, b = lo + page * PAGE_BYTES, min(hi, lo + (page + 1) * PAGE_BYTES)
        gather.pristine[0][a - lo:b - lo] = np.frombuffer(memory.read(a, b - a), np.uint8)
        gather.pages[0][page] = gather.epoch << PAGE_EPOCH_SHIFT | (dpu + 1) << PAGE_OWNER_SHIFT | Page.SAVED
        memory.write(a, b"\xff" * (b - a))
    assert [list(x) for x in gather.page_states(0)] == [[Page.SAVED, Page.CLEAN, Page.SAVED], [1, 0, 2]]
    memory.write(0, b"\xee" * 8)                               # (outside the array: not its)
    memory.write(hi, b"\xdd" * 8)
    gather.restore()
    assert memory.read(8, hi - 8) == before[8:hi] and memory.read(0, 8) == b"\xee" * 8
    assert memory.read(hi, 8) == b"\xdd" * 8
    memory.write(lo + PAGE_BYTES + 8, b"\x01")                # (as transferred, for `save`)
    gather.save()
    assert [list(x) for x in gather.page_states(0)] == [[Page.SAVED] * 3, [0] * 3]     # (by the host)
    want = bytearray(before[lo:hi])
    want[PAGE_BYTES + 8] = 1
    assert gather.pristine[0].tobytes() == bytes(want)


@pytest.fixture
def made_gathers(monkeypatch) -> list:
    """The `Gather`s the launches make, in order; each keeps the addresses of
    its page states and saved copies (`buffers`) and, once released, its
    page states and their owners (`released_pages`: per span, `page_states`).
    The kept buffers start empty: those earlier tests in the process left
    (of the same sizes) would be taken first."""
    from edsl.backend import dpu_run
    from edsl.dpu import sharing
    monkeypatch.setattr(sharing, "_SPARE", sharing._Spare())
    made = []

    class Recorded(Gather):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.buffers = [a.ctypes.data for a in self.pages + self.pristine]
            made.append(self)

        def release(self):
            self.released_pages = [self.page_states(k) for k in range(len(self.pages))]
            super().release()
    monkeypatch.setattr(dpu_run, "Gather", Recorded)
    return made


@pytest.fixture
def taken_logs(monkeypatch) -> list:
    """Per `Launch.take_logs` call, the entries of each DPU's log."""
    taken = []
    original = Launch.take_logs

    def counting(self, lo, hi):
        logs = original(self, lo, hi)
        taken.append([len(log) for log in logs])
        return logs
    monkeypatch.setattr(Launch, "take_logs", counting)
    return taken


@triton.jit
def _add_one_to_even_blocks(x_ptr, fail_at, BLOCK: tl.constexpr, ODD: tl.constexpr = 0):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if pid % 2 == ODD:
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)
    if pid == fail_at:
        tl.store(x_ptr + offs + (1 << 26), 0)                  # (far outside the array: an error)


@pytest.mark.parametrize("workers", ["1", "3"])
def test_a_launch_saves_the_pages_its_dpus_write_and_puts_them_back_when_one_fails(monkeypatch, made_gathers,
                                                                                   workers):
    """The arrays as transferred are kept page by page as the DPUs first write
    them: programs that write every other page leave the others'
    pages unsaved; a DPU that fails leaves the arrays as they were."""
    from edsl.target.dpu import PAGE_BYTES, SAVE_MIXED, Page
    monkeypatch.setenv("EDSL_DPU_WORKERS", workers)
    block = PAGE_BYTES // 4
    x = np.arange(16 * block, dtype=np.int32)
    even = np.arange(16 * block) // block % 2 == 0
    got = x.copy()
    _add_one_to_even_blocks[(16,)](got, -1, BLOCK=block, num_dpus=6, num_tasklets=4)
    np.testing.assert_array_equal(got, x + even)
    # Pages run from x's first byte: program k writes page k, on the DPU whose
    # block holds k, which keeps it; the programs read what they write, so
    # the logs were checked (`mixed`).
    states, owners = made_gathers[-1].released_pages[0]
    assert list(states) == [Page.SAVED, Page.CLEAN] * 8
    dpu_of = [d for d in range(6) for _ in dpu_programs(d, 16, 6)]
    assert list(owners[::2]) == [dpu_of[k] + 1 for k in range(0, 16, 2)]
    assert made_gathers[-1].table[SAVE_MIXED] == 1
    after = got.copy()
    with pytest.raises(DpuError, match="outside the launch's arrays"):
        _add_one_to_even_blocks[(16,)](got, 13, BLOCK=block, num_dpus=6, num_tasklets=4, ODD=1)
    # Nothing half-written; the pages the first launch saved are clean in this
    # one (saved into the same buffers, in a later epoch), so none of them is
    # put back as it was before the first.
    np.testing.assert_array_equal(got, after)
    assert made_gathers[-1].buffers == made_gathers[-2].buffers
    assert made_gathers[-1].epoch == made_gathers[-2].epoch + 1
    _add_one_to_even_blocks[(16,)](got, -1, BLOCK=block, num_dpus=6, num_tasklets=4, ODD=1)
    np.testing.assert_array_equal(got, x + 1)
    assert list(made_gathers[-1].released_pages[0][0]) == [Page.CLEAN, Page.SAVED] * 8


def test_spare_buffers_are_matched_by_size_and_type_kept_as_left_and_capped(monkeypatch):
    from edsl.dpu import sharing
    spare = sharing._Spare()
    monkeypatch.setattr(sharing._Spare, "KEPT_BYTES", 1000)
    a = spare.take(100, np.int64, np.zeros)
    assert not a.any()
    a[:] = 7
    spare.give_back([a])
    assert spare.take(100, np.int32, np.zeros).ctypes.data != a.ctypes.data     # (another type)
    b = spare.take(100, np.int64, np.zeros)
    assert b.ctypes.data == a.ctypes.data and (b == 7).all()                    # (kept as it was)
    b[:] = 5
    spare.give_back([b, np.ones(200, np.uint8), np.ones(2000, np.uint8)])       # (the largest is over the cap)
    assert spare.take(800, np.uint8, np.empty) is not None and len(spare._kept) == 2
    c = spare.take(100, np.int64, np.empty)
    assert c.ctypes.data == a.ctypes.data and (c == 5).all()
    spare.give_back([c, np.zeros(100, np.uint8)])                                   # 200 + 800 + 100: the oldest goes
    assert [x.nbytes for x in spare._kept] == [800, 100]


@triton.jit
def _copy_blocks(src_ptr, dst_ptr, SKIP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + SKIP + offs, tl.load(src_ptr + offs))


@pytest.mark.parametrize("workers", ["1", "3"])
@pytest.mark.parametrize("skip, mixed", [(0, 0), (8, 1)])
def test_dpus_that_write_pages_of_their_own_skip_the_check_of_their_logs(monkeypatch, made_gathers, taken_logs,
                                                                         workers, skip, mixed):
    """Programs on 4 DPUs copy blocks of a page into an array (aligned to 8
    bytes, not to a page): from its first byte, each DPU writes pages of its
    own (abi.PAGE_BYTES, from the array's first byte) and reads nothing they
    write, so the save table shows them apart and their logs are not read.
    From 32 bytes on, neighbouring DPUs write one page, and the logs are
    read (and show them apart). Both copy as NumPy does."""
    from edsl.target.dpu import PAGE_BYTES, SAVE_MIXED
    monkeypatch.setenv("EDSL_DPU_WORKERS", workers)
    block, programs = PAGE_BYTES // 4, 12
    src = np.arange(programs * block, dtype=np.int32)
    room = np.zeros((programs + 2) * block, dtype=np.int32)
    start = (-room.ctypes.data % PAGE_BYTES + 24) // 4         # (8-byte aligned)
    dst = room[start:start + programs * block + skip]
    _copy_blocks[(programs,)](src, dst, SKIP=skip, BLOCK=block, num_dpus=4, num_tasklets=2)
    np.testing.assert_array_equal(dst[skip:], src)
    assert made_gathers[-1].table[SAVE_MIXED] == mixed
    assert bool(taken_logs) == bool(mixed)


@triton.jit
def _fill_blocks(c_ptr, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    value = (rm[:, None] * N + rn[None, :]).to(tl.float32)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], value, mask=(rm[:, None] < N) & (rn[None, :] < N))


@pytest.mark.parametrize("workers", ["1", "3"])
def test_dpus_that_write_blocks_of_a_matrix_skip_the_check_of_their_logs(monkeypatch, made_gathers, taken_logs,
                                                                           workers):
    """Programs each store an 8 x 16 f32 block of a 64 x 64 matrix, as a
    matmul stores its result: each row of a block is 64 bytes, a page
    (abi.PAGE_BYTES) of its own, so DPUs whose blocks share rows of the
    matrix keep apart on the save table, and their logs are not read."""
    from edsl.target.dpu import PAGE_BYTES, SAVE_MIXED
    assert PAGE_BYTES <= 16 * 4
    monkeypatch.setenv("EDSL_DPU_WORKERS", workers)
    n = 64
    c = np.zeros((n, n), dtype=np.float32)
    _fill_blocks[(n // 8, n // 16)](c, n, BM=8, BN=16, num_dpus=4, num_tasklets=4)
    np.testing.assert_array_equal(c, np.arange(n * n, dtype=np.float32).reshape(n, n))
    assert made_gathers[-1].table[SAVE_MIXED] == 0
    assert not taken_logs


def test_dpus_that_keep_apart_need_not_run_one_by_one():
    from edsl.dpu.sharing import apart
    W, R = int(Access.WRITE), int(Access.READ)
    add = atomic_kind(AtomicOp.ADD, False, 4, None)

    def logs(*per_dpu):
        return [np.array(rows, dtype=np.int64).reshape(-1, 4) for rows in per_dpu]
    assert apart(logs([(W, 0, 8, 1), (R, 0, 8, 2), (R, 100, 200, 2)], [(W, 8, 16, 1), (R, 100, 200, 2)]))
    assert apart(logs([(W, 0, 100, 1), (add, 40, 44, 3)], [(W, 100, 104, 1)], []))
    assert not apart(logs([(W, 0, 100, 1)], [(W, 96, 104, 1)]))              # a byte written by two
    assert not apart(logs([(add, 0, 4, 1)], [(add, 0, 4, 1)]))               # even merged atomics
    assert not apart(logs([(W, 0, 100, 1), (W, 10, 20, 1)], [(W, 150, 160, 1)], [(W, 15, 16, 1)]))
    assert not apart(logs([(W, 0, 8, 1)], [(R, 4, 12, 2)]))                  # a read of another's write
    assert not apart(logs([(R, 0, 4, 2)], [(W, 0, 8, 1)]))                   # ... whichever runs first


@pytest.mark.parametrize("dpus", [1, 3])
def test_the_tasklets_of_a_dpu_log_a_row_they_share_out_as_one_tasklet_logs_it(monkeypatch, taken_logs, dpus):
    """Each tasklet of an in-place vector add reads and writes its chunk of
    each program's rows: the log of its DPU grows the entry of its kind that
    ends where a chunk starts (not only the last one), so 16 tasklets log as
    many entries as one (and the host checks no more)."""
    import triton_vector_add
    monkeypatch.setenv("EDSL_DPU_WORKERS", "1")
    x = np.arange(12 * 1024, dtype=np.float32)
    entries, outs = {}, {}
    for tasklets in (1, 16):
        taken_logs.clear()
        out = x.copy()
        triton_vector_add.add_kernel[(12,)](out, x, out, x.size, BLOCK=1024, num_dpus=dpus, num_tasklets=tasklets)
        entries[tasklets], outs[tasklets] = list(taken_logs), out
    np.testing.assert_array_equal(outs[16], 2 * x)
    np.testing.assert_array_equal(outs[1], outs[16])
    if dpus > 1:
        assert entries[16] == entries[1] and sum(map(sum, entries[1])) > 0
    else:
        assert entries[16] == entries[1] == []          # (one DPU shares with none: no log)


@pytest.mark.parametrize("tasklets, loops", [(1, True), (4, True), (4, False)])
def test_dpus_on_several_host_threads_give_the_same_bits(monkeypatch, tasklets, loops):
    """Tasklets as loops or switched at barriers: every DPU runs once (the
    atomic adds count each program once) and the bits are those of one
    thread."""
    import triton_softmax
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((48, 300)) * 3).astype(np.float32)
    ints, idx = rng.integers(-50, 50, 64).astype(np.int32), rng.integers(0, 5, 64).astype(np.int32)
    results = []
    for workers in ("1", "2", "5"):
        monkeypatch.setenv("EDSL_DPU_WORKERS", workers)
        out = np.zeros_like(x)
        triton_softmax.softmax_kernel[(48,)](out, x, 300, 300, BLOCK=512, num_dpus=7, num_tasklets=tasklets,
                                             tasklet_loops=loops)
        added = np.zeros(5, np.int32)
        scatter[(8,)](ints, idx, added, MODE="add", BLOCK=BLOCK, num_dpus=8, num_tasklets=tasklets,
                      tasklet_loops=loops)
        flags = np.zeros(8, np.int32)
        with pytest.raises(DpuError) as err:
            flag[(4,)](flags, num_dpus=4, num_tasklets=tasklets, tasklet_loops=loops)
        results.append((out.tobytes(), added.tobytes(), str(err.value)))
    assert results[0] == results[1] == results[2]
    np.testing.assert_array_equal(np.frombuffer(results[0][1], np.int32), np.bincount(idx, ints, 5).astype(np.int32))


def test_a_launch_runs_on_as_many_threads_as_its_last_one_had_work_for(monkeypatch):
    """Without EDSL_DPU_WORKERS a launch's DPUs run on the machine's cores,
    then on fewer where the last launch of the program on the grid gave each
    thread less than PARALLEL_GRAIN of DPU work; EDSL_DPU_WORKERS is obeyed."""
    from edsl.backend import dpu_run
    seen = []
    real = Launch.run_each
    monkeypatch.setattr(Launch, "run_each", lambda run, jobs: (seen.append(len(jobs)), real(run, jobs))[1])
    monkeypatch.setattr(dpu_run.os, "cpu_count", lambda: 8)
    monkeypatch.delenv("EDSL_DPU_WORKERS", raising=False)
    monkeypatch.setattr(dpu_run, "_BUSY", weakref.WeakKeyDictionary())   # (no launch measured yet)
    monkeypatch.setattr(dpu_run, "PARALLEL_GRAIN", 1e6)          # (no launch has that much work)
    x, idx = np.arange(64, dtype=np.int32), np.arange(64, dtype=np.int32)
    results = []
    for _ in range(2):
        out = np.zeros(64, np.int32)
        scatter[(8,)](x, idx, out, MODE="store", BLOCK=BLOCK, num_dpus=8)
        results.append(out)
    assert seen == [8]                         # the second launch: on one thread
    np.testing.assert_array_equal(results[0], x)
    np.testing.assert_array_equal(results[1], x)
    monkeypatch.setattr(dpu_run, "PARALLEL_GRAIN", 1e-12)
    scatter[(8,)](x, idx, np.zeros(64, np.int32), MODE="store", BLOCK=BLOCK, num_dpus=8)
    scatter[(8,)](x, idx, np.zeros(64, np.int32), MODE="store", BLOCK=BLOCK, num_dpus=8)
    assert seen == [8, 8, 8]
    monkeypatch.setenv("EDSL_DPU_WORKERS", "3")
    monkeypatch.setattr(dpu_run, "PARALLEL_GRAIN", 1e6)
    scatter[(8,)](x, idx, np.zeros(64, np.int32), MODE="store", BLOCK=BLOCK, num_dpus=8)
    assert seen == [8, 8, 8, 3]


def test_the_worker_count_is_checked(monkeypatch):
    monkeypatch.setenv("EDSL_DPU_WORKERS", "0")
    with pytest.raises(Exception, match="EDSL_DPU_WORKERS must be a positive integer, not '0'"):
        count[(4,)](np.ones(4 * 256, np.int32), np.zeros(1, np.int32), BLOCK=256, num_dpus=2)


def _shared_bytes(logs, word: int) -> bool:
    """Whether some byte one DPU wrote (its words, with `word`) another DPU
    reads or writes, byte by byte."""
    writers, readers = {}, {}
    for d, log in enumerate(logs):
        for kind, lo, hi, _ in log.tolist():
            if kind == Access.READ:
                for b in range(lo, hi):
                    readers.setdefault(b, set()).add(d)
            elif hi > lo:
                for b in range(lo & -word, (hi + word - 1) & -word):
                    writers.setdefault(b, set()).add(d)
    return any(len(w) > 1 or readers.get(b, set()) - w for b, w in writers.items())


_ROW = st.tuples(st.sampled_from([int(Access.READ), int(Access.WRITE), atomic_kind(AtomicOp.ADD, False, 4, None)]),
                 st.integers(0, 64), st.integers(0, 12), st.integers(1, 3))


@settings(max_examples=300, deadline=None)
@given(per_dpu=st.lists(st.lists(_ROW, max_size=6), min_size=1, max_size=4), word=st.sampled_from([1, 8]))
def test_dpus_kept_apart_only_where_no_byte_they_wrote_is_shared(per_dpu, word):
    """`apart` against a byte-by-byte model of the logs: exact on writes; a
    read near another DPU's write may count as shared (the DPUs then run
    again one by one), a read of it always does."""
    from edsl.dpu.sharing import apart
    logs = [np.array([(k, lo, lo + n, site) for k, lo, n, site in rows], np.int64).reshape(-1, 4)
            for rows in per_dpu]
    shared = _shared_bytes(logs, word)
    if shared:
        assert not apart(logs, word)
    elif not any(k == Access.READ for rows in per_dpu for k, *_ in rows):
        assert apart(logs, word)


def test_dpus_that_ran_at_once_must_not_share_a_word_they_wrote():
    from edsl.dpu.sharing import apart
    W = int(Access.WRITE)
    logs = [np.array([(W, 0, 4, 1)], np.int64), np.array([(W, 4, 8, 1)], np.int64)]
    assert apart(logs) and not apart(logs, word=8)


@triton.jit
def block_sums(x_ptr, sum_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(sum_ptr + pid, tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0))


# 4098 programs on 4 DPUs: blocks of 1025, 1025, 1024, 1024 programs, whose
# 2-byte sums put the ends of neighbouring DPUs' blocks in one 8-byte word.
SUMS = 4098


def test_dpus_on_several_threads_that_store_parts_of_one_word_run_again_one_by_one(monkeypatch):
    # One 2-byte sum per program: programs on neighbouring DPUs store into
    # one 8-byte word, each by reading and writing it whole, which DPUs
    # running at once could lose (what the rule above catches).
    monkeypatch.setenv("EDSL_DPU_WORKERS", "4")
    x = (np.arange(SUMS * 8) % 7 + 1).astype(np.int16)
    want = x.reshape(SUMS, 8).sum(axis=1).astype(np.int16)
    for _ in range(5):
        sums = np.zeros(SUMS, np.int16)
        block_sums[(SUMS,)](x, sums, BLOCK=8, num_dpus=4, num_tasklets=1)
        np.testing.assert_array_equal(sums, want)


def test_a_launch_whose_dpus_shared_words_on_several_threads_runs_on_one_from_then_on(monkeypatch):
    """Their pass on several threads ran again one by one, each DPU's writes
    taken apart (slow where they are many); on one thread the pass is kept."""
    from edsl.backend import dpu_run
    seen, taken = [], []
    run_each, take = Launch.run_each, Gather.take
    monkeypatch.setattr(Launch, "run_each", lambda run, jobs: (seen.append(len(jobs)), run_each(run, jobs))[1])
    monkeypatch.setattr(Gather, "take", lambda gather, dpu, log: (taken.append(dpu), take(gather, dpu, log))[1])
    monkeypatch.setattr(dpu_run.os, "cpu_count", lambda: 4)
    monkeypatch.delenv("EDSL_DPU_WORKERS", raising=False)
    monkeypatch.setattr(dpu_run, "_BUSY", weakref.WeakKeyDictionary())
    monkeypatch.setattr(dpu_run, "PARALLEL_GRAIN", 1e-12)    # (every launch has work for every thread)
    x = (np.arange(SUMS * 8) % 7 + 1).astype(np.int16)
    for _ in range(3):
        sums = np.zeros(SUMS, np.int16)
        block_sums[(SUMS,)](x, sums, BLOCK=8, num_dpus=4, num_tasklets=1)
        np.testing.assert_array_equal(sums, x.reshape(SUMS, 8).sum(axis=1).astype(np.int16))
    assert seen == [4] and taken == [0, 1, 2, 3]


def test_dpus_of_a_kernel_with_edsl_functions_share_their_wram_globals_on_one_thread(monkeypatch):
    # The EDSL function's WRAM buffers are globals of the program: DPUs
    # running at once would use them together.
    import fl_vector_add

    monkeypatch.setenv("EDSL_DPU_WORKERS", "4")
    monkeypatch.setattr(Launch, "run_each", lambda run, jobs: pytest.fail("DPUs ran at once"))
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(40_000).astype(np.float32), rng.standard_normal(40_000).astype(np.float32)
    for _ in range(3):
        out = np.zeros_like(x)
        fl_vector_add.add_kernel[(10,)](x, y, out, x.size, BLOCK=4096, num_dpus=4, num_tasklets=4)
        np.testing.assert_array_equal(out, x + y)


_LOG_ROW = st.tuples(st.sampled_from([int(Access.WRITE), int(Access.READ),
                                      atomic_kind(AtomicOp.ADD, False, 4, None)]),
                     st.integers(0, 64), st.integers(0, 12), st.integers(1, 3))


@settings(max_examples=200, deadline=None)
@given(owners=st.lists(st.integers(0, 3), min_size=160, max_size=160),
       reads=st.lists(st.lists(st.tuples(st.integers(0, 159), st.integers(1, 100)), max_size=6), min_size=4,
                      max_size=4))
def test_a_read_of_bytes_another_dpu_wrote_is_found_lowest_first(owners, reads):
    """The results of 4 DPUs, each of which stored the bytes `owners` gives
    it (every fifth byte none) and read `reads` ([start, start + n) a row),
    merged: the error names the first DPU, in order, with a read of a byte
    another DPU wrote, and the lowest such byte it read (whatever the order
    of its reads: a log's entries merge); no error where there is none (long
    and short reads alike)."""
    from edsl.dpu.sharing import uses
    memory = bytearray(256)
    gather = Gather([(0, 256)], lambda a, n: bytes(memory[a:a + n]),
                    lambda a, data: memory.__setitem__(slice(a, a + len(data)), data))
    owners = [o if b % 5 else -1 for b, o in enumerate(owners)]           # (some bytes nobody wrote)
    for dpu in range(4):
        rows = [(int(Access.WRITE), b, b + 1, 1) for b, o in enumerate(owners) if o == dpu]
        rows += [(int(Access.READ), lo, min(lo + n, 256), 2) for lo, n in reads[dpu]]
        claims, read_rows = uses(np.array(rows, dtype=np.int64).reshape(-1, 4))
        gather.add(dpu, claims, [bytes([dpu]) * (hi - lo) for _, lo, hi, _ in claims.tolist()], read_rows)
    foreign = [[b for lo, n in reads[dpu] for b in range(lo, min(lo + n, 256))
                if b < 160 and owners[b] not in (-1, dpu)] for dpu in range(4)]
    want = next(((dpu, min(bytes_)) for dpu, bytes_ in enumerate(foreign) if bytes_), None)
    if want is None:
        gather.merge()
        return
    with pytest.raises(SharingError) as err:
        gather.merge()
    assert err.value.why == Shared.READ and (err.value.second.dpu, err.value.address) == want


@settings(max_examples=300, deadline=None)
@given(per_dpu=st.lists(st.lists(_LOG_ROW, max_size=6), min_size=1, max_size=5), word=st.sampled_from([1, 8]))
def test_dpus_said_to_keep_apart_kept_apart(per_dpu, word):
    """`apart` never says yes wrongly: then no byte (word, with `word` 8) one
    DPU wrote is written by another, and no byte one wrote is read by another
    (checked byte by byte); and DPUs that write nothing keep apart."""
    from edsl.dpu.sharing import apart
    logs = [np.array([(k, lo, lo + n, site) for k, lo, n, site in rows], dtype=np.int64).reshape(-1, 4)
            for rows in per_dpu]
    writes = [{b // word for k, lo, n, _ in rows if k != Access.READ for b in range(lo, lo + n)}
              for rows in per_dpu]
    reads = [{b for k, lo, n, _ in rows if k == Access.READ for b in range(lo, lo + n)} for rows in per_dpu]
    written = [{b for k, lo, n, _ in rows if k != Access.READ for b in range(lo, lo + n)} for rows in per_dpu]
    truly = all(not (writes[d] & writes[e]) and not (written[d] & reads[e])
                for d in range(len(logs)) for e in range(len(logs)) if d != e)
    if apart(logs, word):
        assert truly
    if not any(writes):
        assert apart(logs, word)


SPECIAL_FLOATS = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.5, -1.5, 2.0, -2.0, 1e-40, -1e-40]


def _triton_float_atomics(out: np.ndarray, idx: np.ndarray, x: np.ndarray, maximum: bool) -> np.ndarray:
    """Triton's float atomic max (min) applied element by element in program
    order, as its lowering makes them: on the bits, a signed max (min) where
    the value's sign bit is clear, an unsigned min (max) where it is set."""
    bits = out.view(np.uint32).copy()
    for k, v in zip(idx.tolist(), x.view(np.uint32).tolist()):
        old = int(bits[k])
        s_old, s_v = np.int32(np.uint32(old)), np.int32(np.uint32(v))
        if v >> 31 == 0:
            bits[k] = np.int32(max(s_old, s_v) if maximum else min(s_old, s_v)).view(np.uint32)
        else:
            bits[k] = min(old, v) if maximum else max(old, v)
    return bits.view(np.float32)


@settings(max_examples=40, deadline=None)
@given(mode=st.sampled_from(["max", "min"]), programs=st.integers(1, 6), dpus=st.integers(1, 8),
       size=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_float_atomic_max_and_min_merge_across_dpus_as_on_one(mode, programs, dpus, size, seed):
    """Float `tl.atomic_max`/`atomic_min` (integer atomics on the bits) from
    programs on different DPUs merge: the result is, bit for bit, that of all
    of them on one element in program order (-0.0 below +0.0, NaNs as Triton
    orders them), whatever the DPU count."""
    rng = np.random.default_rng(seed)
    x = rng.choice(np.array(SPECIAL_FLOATS, np.float32), programs * BLOCK)
    idx = rng.integers(0, size, programs * BLOCK).astype(np.int32)
    out = rng.choice(np.array(SPECIAL_FLOATS, np.float32), size)
    want = _triton_float_atomics(out, idx, x, mode == "max")
    got = out.copy()
    scatter[(programs,)](x, idx, got, MODE=mode, BLOCK=BLOCK, num_dpus=dpus)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
