"""The DPU model's runtime: compiled intrinsics, deadlocked barriers, Ctrl-C,
programs that need a host symbol, object code reused by a new process."""
import ctypes
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from mlir import ir

import edsl
from edsl import InOut, Input
from edsl.target.machines import DPU
from edsl.dpu import runtime, support
from edsl.target.dpu import Ctx, Err
from edsl.base.errors import LoweringError
from edsl.hostcall import pack_arguments

with open(__file__) as _f:
    _SOURCE_LINES = _f.read().splitlines()


def line_of(marker: str) -> int:
    hits = [n for n, text in enumerate(_SOURCE_LINES, 1) if text.rstrip().endswith(f"# <{marker}>")]
    assert len(hits) == 1, marker
    return hits[0]


@edsl.dialect
def some_reach_the_barrier(y: InOut["memref<?xi32>"]):
    if edsl.tasklet_id() == 0:
        edsl.barrier()  # <half-barrier>
    y[edsl.tasklet_id()] = 1


@pytest.mark.parametrize("tasklets", [2, 4, 16])
def test_barrier_only_some_tasklets_reach_is_a_deadlock_at_its_line(tasklets):
    y = np.zeros(16, np.int32)
    with pytest.raises(edsl.DpuError, match="deadlock") as err:
        some_reach_the_barrier.run(y, tasklets=tasklets)
    assert err.value.loc.lineno == line_of("half-barrier")


@edsl.dialect
def all_but_one_wait(y: InOut["memref<?xi32>"]):
    if edsl.tasklet_id() != 0:
        edsl.barrier()  # <all-but-one>
    y[edsl.tasklet_id()] = 1


def test_deadlock_found_when_the_last_tasklet_finishes():
    """The finishing tasklet, not a waiting one, sees that the barrier can never complete."""
    y = np.zeros(8, np.int32)
    with pytest.raises(edsl.DpuError, match="deadlock") as err:
        all_but_one_wait.run(y, tasklets=8)
    assert err.value.loc.lineno == line_of("all-but-one")


@edsl.dialect
def every_tasklet_meets(y: InOut["memref<?xi32>"]):
    """Each tasklet counts its 3 barriers in y[tid]; tasklet 0 sums them into y[-1]."""
    t = edsl.tasklet_id()
    last = y.shape[0] - 1
    for k in range(3):
        y[t] = y[t] + 1
        edsl.barrier()
    if t == 0:
        for u in range(edsl.num_tasklets()):
            y[last] = y[last] + y[u]


def test_barriers_every_tasklet_reaches_are_no_deadlock():
    y = np.zeros(17, np.int32)
    every_tasklet_meets.run(y, tasklets=16)
    assert (y[:16] == 3).all() and y[16] == 48


def run_on_one_thread(fn, *args, tasklets, check=True):
    """`fn(*args)` on `tasklets` tasklets that share one host thread (the
    runtime library's scheduler: `Launch.run_entry`), as `fn.run` would."""
    program = fn.program(False)
    packed, keep = pack_arguments(fn.params_for(DPU), args, None)
    launch = runtime.Launch(1, tasklets, [0, 2 ** 63 - 1])
    launch.run_entry(program, fn.__name__, [ctypes.addressof(packed)] * tasklets, launch.addresses(0),
                     exit=True)
    del keep                                    # (what `packed` points to, alive until here)
    if check:
        launch.raise_error(f"{fn.__name__}()", program.sites)
    return launch


needs_one_thread = pytest.mark.skipif(not support.coroutines(), reason="no ucontext on this host")


@needs_one_thread
@pytest.mark.parametrize("tasklets", [2, 5, 24])
def test_tasklets_on_one_thread_meet_at_barriers_and_find_deadlocks(tasklets, monkeypatch):
    taken = []
    take = runtime._POOL.take
    monkeypatch.setattr(runtime._POOL, "take", lambda n: taken.append(n) or take(n))
    y = np.zeros(25, np.int32)
    run_on_one_thread(every_tasklet_meets, y, tasklets=tasklets)
    assert (y[:tasklets] == 3).all() and y[24] == 3 * tasklets
    assert taken == [1]                         # one worker thread for every tasklet
    for fn, marker in ((some_reach_the_barrier, "half-barrier"), (all_but_one_wait, "all-but-one")):
        with pytest.raises(edsl.DpuError, match="deadlock") as err:
            run_on_one_thread(fn, np.zeros(25, np.int32), tasklets=tasklets)
        assert err.value.loc.lineno == line_of(marker)


@needs_one_thread
def test_a_tasklet_error_is_recorded_in_its_context_and_stops_the_others():
    @edsl.dialect
    def third_fails(y: InOut["memref<?xi32>"]):
        t = edsl.tasklet_id()
        for k in range(3):
            if t == 2 and k == 1:
                assert y[0] == 99
            y[t + 1] = y[t + 1] + 1
            edsl.barrier()
    y = np.zeros(8, np.int32)
    with pytest.raises(edsl.DpuError, match="assertion failed"):
        run_on_one_thread(third_fails, y, tasklets=4)
    launch = run_on_one_thread(third_fails, y, tasklets=4, check=False)
    assert launch.ctx[0, 2, Ctx.ERROR] == Err.ASSERT
    assert not launch.ctx[0, [0, 1, 3], Ctx.ERROR].any()


@edsl.dialect
def fails_then_others_wait(y: InOut["memref<?xi32>"]):
    t = edsl.tasklet_id()
    if t == 2:
        assert y[0] == 99  # <fails-first>
    if t != 1:
        edsl.barrier()
    y[t + 1] = 1


@needs_one_thread
def test_the_dpu_keeps_its_first_error_not_the_deadlock_that_follows():
    """Tasklets 0 and 3 wait at a barrier that tasklet 1 never reaches, after
    tasklet 2's error stopped the DPU: the runtime records the error alone (a
    deadlock once the DPU has stopped follows from it), so the host reads it."""
    launch = run_on_one_thread(fails_then_others_wait, np.zeros(8, np.int32), tasklets=4, check=False)
    assert launch.ctx[0, :, Ctx.ERROR].tolist() == [0, 0, Err.ASSERT, 0]
    with pytest.raises(edsl.DpuError, match="assertion failed") as err:
        fails_then_others_wait.run(np.zeros(8, np.int32), tasklets=4)
    assert err.value.loc.lineno == line_of("fails-first")


SPIN = textwrap.dedent('''
    import sys, numpy as np, edsl
    from edsl import InOut, Input

    @edsl.dialect
    def spin(y: InOut["memref<?xi32>"], x: Input["memref<?xi32>"]):
        while x[0] == 0:
            y[0] = y[0] + 1

    @edsl.dialect
    def wait_forever(y: InOut["memref<?xi32>"]):
        if edsl.tasklet_id() == 0:
            while y[0] == 0:
                edsl.barrier()

    import triton, triton.language as tl
    import edsl.backend
    edsl.backend.activate()

    @triton.jit
    def meet_forever(x_ptr, w_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(w_ptr + tl.program_id(0) * BLOCK + offs, offs + 1)
        while tl.sum(tl.load(x_ptr + offs), axis=0) == 0:     # (a barrier in every trip)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs))

    @triton.jit
    def count_forever(x_ptr, n):
        acc = tl.load(x_ptr + tl.program_id(0))
        for _ in range(n):                                    # (no barrier, no transfer)
            acc = acc * 3 + 1
        tl.store(x_ptr + tl.program_id(0), acc)

    which = sys.argv[1]
    y, x = np.zeros(1, np.int32), np.zeros(1, np.int32)
    z, w = np.zeros(64, np.int32), np.zeros(4 * 64, np.int32)
    spin.program(); wait_forever.program()
    if which in ("tasklets", "dpus"):
        meet_forever.warmup(z, w, BLOCK=64, num_tasklets=16, grid=(1,))
    if which == "dpus_spin":
        count_forever.warmup(w, 1 << 62, grid=(1,))
    print("started", flush=True)
    try:
        if which == "tasklets":
            meet_forever[(1,)](z, w, BLOCK=64, num_tasklets=16)
        elif which == "dpus":
            meet_forever[(4,)](z, w, BLOCK=64, num_tasklets=16, num_dpus=4)
        elif which == "dpus_spin":
            count_forever[(4,)](w, 1 << 62, num_dpus=4)
        else:
            spin.run(y, x) if which == "spin" else wait_forever.run(y, tasklets=1)
    except KeyboardInterrupt:
        print("interrupted", "arrays as transferred" if not w.any() else "arrays written", flush=True)
        sys.exit(3)
''')


@pytest.mark.parametrize("which", ["spin", "wait_forever", "tasklets", "dpus", "dpus_spin"])
def test_ctrl_c_interrupts_a_launch(tmp_path, which):
    """"tasklets": 16 tasklets that meet at barriers forever on one host
    thread; "dpus": on each of 4 DPUs, run on 4 host threads at once, after
    a store, which the interrupted launch puts back (nothing half-written);
    "dpus_spin": 4 DPUs in a loop that nothing stops, left running."""
    script = tmp_path / "spin.py"
    script.write_text(SPIN)
    env = dict(os.environ, EDSL_CACHE_DIR=str(tmp_path / "cache"), EDSL_DPU_WORKERS="4")
    # (Ctrl-C as in a terminal, also where this test runs in the background,
    # whose processes start with SIGINT ignored)
    proc = subprocess.Popen([sys.executable, str(script), which], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout.readline().strip() == "started"
        time.sleep(2)                                   # (the launch starts right after the print)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)        # (a hang guard, not a speed bound)
    finally:
        proc.kill()
    assert proc.returncode == 3 and "interrupted" in out, err[-2000:]
    if which == "dpus":
        assert "arrays as transferred" in out, out


def test_ctrl_c_while_llvm_calls_back_into_python_is_raised_once_the_call_returns(monkeypatch):
    """Linking a program calls a Python symbol filter from C: Ctrl-C there,
    raised inside the callback, would be dropped by ctypes and the launch it
    meant to stop would run on. It is raised after the link, which completed."""
    from edsl.dpu import jit
    llir = textwrap.dedent("""
        declare double @sqrt(double)
        define double @edsl_test_root(double %x) {
          %r = call double @sqrt(double %x)
          ret double %r
        }
    """)
    program = jit.ObjectProgram(jit.compile_object(llir, opt_level=0), "root")
    provided, asked = jit._provided, []

    def ctrl_c_then_provided(name):
        asked.append(name)
        signal.raise_signal(signal.SIGINT)          # (its handler runs here, in the callback)
        return provided(name)
    monkeypatch.setattr(jit, "_provided", ctrl_c_then_provided)
    with pytest.raises(KeyboardInterrupt):
        program.address("edsl_test_root")
    assert "sqrt" in asked
    root = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(program.address("edsl_test_root"))
    assert root(2.25) == 1.5


def test_a_symbol_the_host_libraries_lack_is_an_error_naming_it_and_the_line():
    text = """
    llvm.func @__truncsfbf2(f32) -> bf16
    llvm.func @f(%x: f32) -> bf16 {
      %r = llvm.call @__truncsfbf2(%x) : (f32) -> bf16 loc("user.py":7:5)
      llvm.return %r : bf16
    }"""
    with ir.Context():
        module = ir.Module.parse(text)
        with pytest.raises(LoweringError, match=r"__truncsfbf2.*C library and libm") as err:
            runtime.build(module, ["f"], "f()")
    assert (err.value.loc.filename, err.value.loc.lineno) == ("user.py", 7)


def test_a_program_keeps_of_the_library_what_it_uses_and_what_the_host_calls():
    """The runtime library's functions are internal to a program, but for
    those the host calls (`support.HOST_ENTRIES`): a program that never
    meets a barrier has no barrier code (LLVM dropped it, unused, before
    optimizing it)."""
    from edsl.target.dpu import BARRIER
    with ir.Context():
        module = ir.Module.parse("llvm.func @f() {\n  llvm.return\n}")
        program = runtime.Program(runtime.build(module, ["f"], "f()"), "f")
    assert all(program.address(name) for name in support.HOST_ENTRIES)
    with pytest.raises(LoweringError, match=BARRIER):
        program.address(BARRIER)


@edsl.dialect
def doubled(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
    for i in range(y.shape[0]):
        y[i] = 2.0 * x[i]


def test_libm_and_libc_symbols_link():
    @edsl.dialect
    def with_libm(y: InOut["memref<?xf32>"]):
        y[0] = edsl.tanh(y[0]) + edsl.erf(y[0])
    y = np.float32([0.5])
    with_libm(y)
    np.testing.assert_allclose(y, np.tanh(0.5) + 0.5204998778130465, rtol=1e-6)


NEW_PROCESS = textwrap.dedent('''
    import numpy as np, edsl
    from edsl import InOut, Input
    from edsl.dpu import jit

    if __import__("sys").argv[1] == "cached":
        def refuse(*a, **k):
            raise AssertionError("compiled again")
        jit.compile_object = refuse

    @edsl.dialect
    def doubled(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
        for i in range(y.shape[0]):
            y[i] = 2.0 * x[i]

    x = np.arange(5, dtype=np.float32); y = np.zeros(5, np.float32)
    doubled(y, x)
    assert (y == 2 * x).all()
''')


def test_a_new_process_loads_the_object_code_without_compiling(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(NEW_PROCESS)
    env = dict(os.environ, EDSL_CACHE_DIR=str(tmp_path / "cache"))
    for mode in ("first", "cached"):
        done = subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True,
                              env=env, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    assert list((tmp_path / "cache").glob("*.o"))


def test_edsl_dma_counts_in_the_launch_record():
    @edsl.dialect
    def copy_mram(dst: InOut["memref<?xi64, MRAM>"], src: Input["memref<?xi64, MRAM>"]):
        buf = edsl.wram_alloc((32,), edsl.i64)
        for k in range(0, src.shape[0], 32):
            edsl.mram_read(src, buf, 256, k, 0)
            edsl.mram_write(buf, dst, 256, 0, k)
    src = np.arange(128, dtype=np.int64)
    dst = np.zeros(128, np.int64)
    report = copy_mram.run(dst, src)
    assert (dst == src).all()
    assert (report.dma_reads, report.dma_writes, report.dma_bytes) == (4, 4, 2048)
    assert report.per_tasklet_dma == [8]


def _not_inlined(text: str, names: set[str]) -> dict[str, bool]:
    """For each function of `text` (MLIR) named in `names`: whether its
    header marks it `noinline`."""
    out = {}
    for name in names:
        start = re.search(rf"func(\.func)? (private )?@{name}\(", text).start()
        out[name] = '"noinline"' in text[start:text.index(" {\n", start)]
    return out


def test_transfers_inline_only_what_folds():
    """A kernel's transfers are inlined, so that one of a known size folds to
    a few moves; what does not fold at a transfer (its failure, the page
    saves, the search of the MRAM regions) and a spilled tile's line swap are
    calls: copied into each of a kernel's transfers and accesses, they took
    most of its compile time (docs/benchmarks.md)."""
    from edsl.backend.convert import spill
    from edsl.target.dpu import DMA, FAIL, NOTE, SAVE_PAGES
    library = _not_inlined(support.library_text(0), {DMA, NOTE, FAIL, SAVE_PAGES, "__dpu_in_regions"})
    assert library == {DMA: False, NOTE: False, FAIL: True, SAVE_PAGES: True, "__dpu_in_regions": True}
    spilled = _not_inlined(spill.support_text(), {spill.SWAP, spill.FLUSH, spill.SPILL_DMA})
    assert spilled == {spill.SWAP: True, spill.FLUSH: True, spill.SPILL_DMA: False}


def test_a_big_program_compiles_at_lower_levels_and_runs_alike(monkeypatch):
    """Above `jit.LARGEST_O3_PROGRAM` instructions a program is optimized at
    O1 (O3's value-range passes grow faster than the code), above
    `jit.LARGEST_OPTIMIZED_PROGRAM` it is neither optimized nor generated
    with optimization (O1 and the code generator grow faster too); it
    computes the same."""
    from edsl.dpu import jit
    lib = jit._llvm()
    levels, codegen = [], []

    class Spy:                       # (the library's functions, two of them watched)
        def __getattr__(self, name):
            return getattr(lib, name)

        def LLVMRunPasses(self, module, pipeline, tm, options):
            levels.append(pipeline.decode())
            return lib.LLVMRunPasses(module, pipeline, tm, options)

        def LLVMCreateTargetMachine(self, *args):
            codegen.append(args[4])
            return lib.LLVMCreateTargetMachine(*args)
    monkeypatch.setattr(jit, "_llvm", lambda: Spy())
    llir = textwrap.dedent("""
        define i64 @edsl_test_sum(i64 %n) {
        entry:
          br label %loop
        loop:
          %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
          %s = phi i64 [ 0, %entry ], [ %s1, %loop ]
          %sq = mul i64 %i, %i
          %s1 = add i64 %s, %sq
          %i1 = add i64 %i, 1
          %done = icmp sge i64 %i1, %n
          br i1 %done, label %exit, label %loop
        exit:
          ret i64 %s1
        }
    """)
    for largest, biggest, level, gen in ((10 ** 9, 10 ** 9, "default<O3>", 3), (0, 10 ** 9, "default<O1>", 3),
                                         (0, 0, "default<O0>", 0)):
        monkeypatch.setattr(jit, "LARGEST_O3_PROGRAM", largest)
        monkeypatch.setattr(jit, "LARGEST_OPTIMIZED_PROGRAM", biggest)
        program = jit.ObjectProgram(jit.compile_object(llir), "sum")
        assert (levels[-1], codegen[-1]) == (level, gen)
        fn = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(program.address("edsl_test_sum"))
        assert fn(1000) == sum(i * i for i in range(1000))


def _dirty(run: runtime.Launch) -> None:
    """Write every slot, count and log a run writes."""
    run.ctx[..., [Ctx.READS, Ctx.ERROR, Ctx.LOG_LEN, Ctx.SAVE, Ctx.WATCH_HI]] = 7
    run.state[...] = 9
    run.counters[...] = 4
    run._footprint[...] = 5
    run._log_ends[...] = 6


def test_a_launch_given_back_comes_back_as_a_new_one_of_its_shape():
    regions = [0, 4096, 8192, 12288]
    run = runtime.Launch.spare(3, 5, regions, counters=9)
    run.keep_footprints()
    new_ctx, new_state, new_footprints = run.ctx.copy(), run.state.copy(), run._footprint.copy()
    run.keep_logs()
    logs = run.ctx[..., [Ctx.LOG, Ctx.LOG_CAP]].copy()
    _dirty(run)
    run.give_back()
    again = runtime.Launch.spare(3, 5, regions, counters=9)
    assert again is run
    again.keep_footprints()
    np.testing.assert_array_equal(again.ctx, new_ctx)
    np.testing.assert_array_equal(again.state, new_state)
    np.testing.assert_array_equal(again._footprint, new_footprints)
    assert not again.counters.any()
    again.keep_logs()                     # (the logs it kept, emptied)
    np.testing.assert_array_equal(again.ctx[..., [Ctx.LOG, Ctx.LOG_CAP]], logs)
    assert not again.ctx[..., Ctx.LOG_LEN].any() and not again._log_ends.any()
    # Other bounds of the regions: the contexts say them.
    _dirty(again)
    again.give_back()
    other = runtime.Launch.spare(3, 5, [0, 4096, 8192, 16384], counters=9)
    assert other is run
    assert (other.ctx[..., Ctx.MRAM_HI] == 16384).all() and other.regions.tolist() == [0, 4096, 8192, 16384]
    # Another shape is a new launch.
    other.give_back()
    assert runtime.Launch.spare(3, 6, regions, counters=9) is not run


def test_a_launch_a_tasklet_was_left_running_in_is_not_used_again(monkeypatch):
    run = runtime.Launch.spare(3, 7, [0, 4096])
    monkeypatch.setattr(run, "abandoned", lambda: True)
    run.give_back()
    assert runtime.Launch.spare(3, 7, [0, 4096]) is not run


def test_a_launch_of_more_tasklets_than_kept_is_not_kept():
    dpus = runtime._SpareLaunches.LARGEST // 16 + 1
    run = runtime.Launch.spare(dpus, 16, [0, 4096])
    run.keep_logs()
    logs = run.ctx[..., Ctx.LOG].reshape(-1).tolist()
    run.give_back()
    assert runtime.Launch.spare(dpus, 16, [0, 4096]) is not run
    assert not run.ctx[..., Ctx.LOG].any() and run._logs is None       # (its logs went back)
    assert set(logs) & set(runtime._LOGS._ptrs.tolist())


def test_the_last_launches_given_back_are_kept_their_logs_reused_after():
    runs = [runtime.Launch.spare(2, t, [0, 4096]) for t in range(8, 8 + runtime._SPARES.KEPT + 1)]
    for run in runs:
        run.keep_logs()
    first_logs = runs[0].ctx[..., Ctx.LOG].reshape(-1).tolist()
    for run in runs:
        run.give_back()
    assert runtime.Launch.spare(2, 8, [0, 4096]) is not runs[0]       # (the oldest was dropped)
    assert set(first_logs) <= set(runtime._LOGS._ptrs.tolist())       # (its logs for any launch)
    assert runtime.Launch.spare(2, 8 + runtime._SPARES.KEPT, [0, 4096]) is runs[-1]
