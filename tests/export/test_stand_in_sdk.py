"""`edsl sdk FOLDER`: the SDK stand-ins as an SDK installation, building a
project written for the UPMEM SDK with its own Makefile (the SDK's compiler
names, `dpu-pkg-config`), in the style of PrIM's benchmarks: a handshake
chain, a value read right after a barrier that a slower tasklet changes after
its DMA, a barrier filled in field by field, a mutex id never set, MRAM
addresses as the host's offsets. The run checks itself, as PrIM's do."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from edsl.export.cli import main as edsl_main
from edsl.export.stand_ins import write_stand_ins

pytestmark = pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None,
                                reason="needs make and a C compiler")

TASK_C = r"""
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <mram_unaligned.h>
#include <alloc.h>
#include <barrier.h>
#include <handshake.h>
#include <mutex.h>
#include <atomic_bit.h>
#include <perfcounter.h>

#define BLOCK 64
__host struct { uint32_t n, mode; } ARGS;
__host uint64_t TOTAL;
BARRIER_INIT(all, NR_TASKLETS);
barrier_t filled;                       /* filled in by tasklet 0, as PrIM's HST-L does */
ATOMIC_BIT_INIT(filled_lock);
mutex_id_t never_set;                   /* zero: one mutex all the same, as on the DPU */
uint32_t message[NR_TASKLETS];
uint32_t base;                          /* values kept before this round */
uint64_t kept;
volatile int flag;
__mram_noinit int64_t staged[8];        /* MRAM variables, written by the host by name */
__mram uint64_t bias = 5;
__host int64_t staged_sum;

perfcounter_t cycles(void) { return perfcounter_get(); }     /* compiled, run in mode 1 only */

int main(void) {
    unsigned int t = me();
    if (t == 0) {
        mem_reset();
        filled.wait_queue = 0xff;
        filled.count = filled.initial_count = NR_TASKLETS;
        filled.lock = (uint8_t)(uintptr_t)&ATOMIC_BIT_GET(filled_lock);
        base = 0;
        kept = 0;
        int64_t w[8];
        __dma_aligned int32_t seven[2] = {0, 7}, unaligned[8];
        mram_write_unaligned(&seven[1], (__mram_ptr uint8_t *)staged + 12, 4);   /* staged[1] += 7 << 32 */
        int32_t *p = mram_read_unaligned((__mram_ptr uint8_t *)staged + 4, unaligned, 16);
        mram_read(staged, w, sizeof w);
        staged_sum = (int64_t)bias;     /* (on a DPU, a direct access to an MRAM variable is a DMA) */
        for (int i = 0; i < 8; i++)
            staged_sum += w[i];
        staged_sum += p[0] + p[1] + p[2] + p[3];                                /* 0 + 2 + 7 + 3 */
    }
    barrier_wait(&all);
    if (ARGS.mode == 1 && t == 1)
        cycles();
    int64_t *in = mem_alloc(BLOCK * 8), *out = mem_alloc(BLOCK * 8);
    if (ARGS.mode == 2 && t == 1)
        mram_read((__mram_ptr void const *)4, in, 8);
    if (ARGS.mode == 3 && t == 1) {     /* (runs on a DPU, where tasklet 1 runs beside tasklet 0) */
        mram_read((__mram_ptr void const *)0, in, 8);
        flag = 1;
    }
    if (ARGS.mode == 3 && t == 0)
        while (!flag)
            ;
    /* Each tasklet keeps the positive values of its block of the round;
     * the blocks' kept values follow one another at MRAM address 8 n. */
    for (uint32_t at = t * BLOCK; at < ARGS.n; at += NR_TASKLETS * BLOCK) {
        mram_read((__mram_ptr void const *)(uintptr_t)(at * 8), in, BLOCK * 8);
        uint32_t k = 0, before = 0;
        for (int i = 0; i < BLOCK; i++)
            if (in[i] > 0)
                out[k++] = in[i];
        if (t != 0) {
            handshake_wait_for(t - 1);
            before = message[t];
        }
        if (t < NR_TASKLETS - 1) {
            message[t + 1] = before + k;
            handshake_notify();
        }
        barrier_wait(&filled);
        mram_write(out, (__mram_ptr void *)(uintptr_t)((ARGS.n + base + before) * 8), k * 8);
        if (t == NR_TASKLETS - 1)       /* after its DMA: the others have read `base` */
            base += before + k;
        mutex_lock(never_set);
        kept += k;
        mutex_unlock(never_set);
        barrier_wait(&all);
    }
    if (t == 0)
        TOTAL = kept == base ? base : (uint64_t)-1;
    return 0;
}
"""

HOST_C = r"""
#include <dpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    struct { uint32_t n, mode; } args = {(uint32_t)atoi(argv[1]), (uint32_t)atoi(argv[2])};
    uint32_t n = args.n, i;
    struct dpu_set_t set, dpu;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/dpu_code", NULL));
    int64_t *x = malloc((size_t)NR_DPUS * n * 8), *y = malloc((size_t)n * 8);
    srand(1);
    for (uint32_t k = 0; k < NR_DPUS * n; k++)         /* (a block's first value positive: every block writes) */
        x[k] = k % 64 == 0 ? 1 + rand() % 100 : rand() % 201 - 100;
    int64_t staged[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    DPU_ASSERT(dpu_broadcast_to(set, "staged", 0, staged, sizeof staged, DPU_XFER_DEFAULT));
    if (dpu_copy_to(set, "staged", 4, staged, 8) != DPU_ERR_INVALID_MRAM_ACCESS       /* (MRAM: 8-byte) */
        || dpu_copy_to(set, "ARGS", 2, &args, 4) != DPU_ERR_INVALID_WRAM_ACCESS       /* (WRAM: 4-byte) */
        || dpu_copy_to(set, "ARGS", 4, &args, 8) != DPU_ERR_INVALID_SYMBOL_ACCESS     /* (past its end) */
        || dpu_copy_to(set, "no_such", 0, &args, 8) != DPU_ERR_UNKNOWN_SYMBOL
        || (NR_DPUS > 1 && dpu_copy_from(set, "ARGS", 0, &args, 8) != DPU_ERR_INVALID_DPU_SET)) {
        printf("a transfer the SDK refuses was taken\n");
        return 4;
    }
    DPU_FOREACH(set, dpu, i) {
        DPU_ASSERT(dpu_prepare_xfer(dpu, x + (size_t)i * n));
        DPU_ASSERT(dpu_copy_to(dpu, "ARGS", 0, &args, sizeof args));
    }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, n * 8, DPU_XFER_DEFAULT));
    if (dpu_launch(set, DPU_ASYNCHRONOUS) != DPU_OK || dpu_sync(set) != DPU_OK) {
        printf("launch failed\n");
        return 3;
    }
    int bad = 0;
    DPU_FOREACH(set, dpu, i) {
        uint64_t total, k = 0;
        int64_t sum;
        DPU_ASSERT(dpu_copy_from(dpu, "TOTAL", 0, &total, 8));
        DPU_ASSERT(dpu_copy_from(dpu, "staged_sum", 0, &sum, 8));
        bad |= sum != 5 + 36 + (7ll << 32) + 12;
        DPU_ASSERT(dpu_copy_from(dpu, DPU_MRAM_HEAP_POINTER_NAME, n * 8, y, n * 8));
        for (uint32_t j = 0; j < n; j++)
            if (x[(size_t)i * n + j] > 0 && y[k++] != x[(size_t)i * n + j])
                bad = 1;
        bad |= total != k;
    }
    printf(bad ? "[ERROR] Outputs differ!\n" : "[OK] Outputs are equal\n");
    return bad;
}
"""

MAKEFILE = """\
NR_DPUS ?= 2
NR_TASKLETS ?= 16
all: bin/host_code bin/dpu_code
bin/host_code: host.c
\tmkdir -p bin
\t$(CC) -o $@ host.c -Wall -std=c11 -O2 `dpu-pkg-config --cflags --libs dpu` -DNR_DPUS=${NR_DPUS}
bin/dpu_code: task.c
\tmkdir -p bin
\tdpu-upmem-dpurte-clang -Wall -O2 -DNR_TASKLETS=${NR_TASKLETS} -o $@ task.c
"""


@pytest.fixture(scope="module")
def sdk(tmp_path_factory):
    return write_stand_ins(tmp_path_factory.mktemp("stand-ins") / "sdk")


def build(sdk, folder, dpus, tasklets):
    folder.mkdir()
    for name, text in (("task.c", TASK_C), ("host.c", HOST_C), ("Makefile", MAKEFILE)):
        (folder / name).write_text(text)
    env = dict(os.environ, PATH=f"{sdk / 'bin'}{os.pathsep}{os.environ['PATH']}")
    r = subprocess.run(["make", f"NR_DPUS={dpus}", f"NR_TASKLETS={tasklets}"], cwd=folder, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def run(folder, n, mode=0):
    return subprocess.run(["./bin/host_code", str(n), str(mode)], cwd=folder, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("dpus,tasklets,blocks", [(1, 1, 3), (2, 4, 5), (3, 16, 2), (2, 16, 7)])
def test_a_project_written_for_the_sdk_builds_with_its_makefile_and_passes_its_check(sdk, tmp_path, dpus,
                                                                                   tasklets, blocks):
    build(sdk, tmp_path / "p", dpus, tasklets)
    r = run(tmp_path / "p", 64 * tasklets * blocks)
    assert r.returncode == 0 and "[OK]" in r.stdout, r.stdout + r.stderr


def test_what_the_stand_ins_cannot_honour_stops_the_dpu_naming_the_call_and_line(sdk, tmp_path):
    build(sdk, tmp_path / "p", 1, 4)
    r = run(tmp_path / "p", 256, mode=1)
    line = next(k for k, text in enumerate(TASK_C.split("\n"), 1) if "return perfcounter_get();" in text)
    assert r.returncode == 3 and (f"tasklet 1: task.c:{line}: perfcounter_get: the DPU model and the SDK "
                                  "stand-ins run DPU code compiled for the host") in r.stderr, r.stderr
    r = run(tmp_path / "p", 256, mode=2)
    assert r.returncode == 3, r.stderr
    line = next(k for k, text in enumerate(TASK_C.split("\n"), 1) if "(__mram_ptr void const *)4" in text)
    assert f"tasklet 1: task.c:{line}: mram_read: MRAM address 0x4 is not 8-byte aligned" in r.stderr, r.stderr


def test_a_tasklet_that_waits_in_a_loop_ends_the_program_saying_why(sdk, tmp_path):
    """Tasklets switch only at DMAs and waits: one waiting for another in a loop
    would keep the turn forever; after EDSL_SIM_TURN_SECONDS the program ends."""
    build(sdk, tmp_path / "p", 1, 2)
    r = subprocess.run(["./bin/host_code", "256", "3"], cwd=tmp_path / "p", capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, EDSL_SIM_TURN_SECONDS="1"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "tasklet 0 kept the turn 1 s without a DMA, a wait or its end" in r.stderr, r.stderr


def test_the_command_writes_the_folder_whole_and_keeps_an_existing_one(tmp_path, capsys):
    assert edsl_main(["sdk", str(tmp_path / "s")]) == 0
    assert "bin" in capsys.readouterr().out
    names = {p.name for p in (tmp_path / "s").rglob("*")}
    assert {"dpu-upmem-dpurte-clang", "dpu-pkg-config", "dpu.h", "mram.h", "dpu_abi.h", "dpu_sim_rt.c"} <= names
    assert os.access(tmp_path / "s" / "bin" / "dpu-pkg-config", os.X_OK)
    assert edsl_main(["sdk", str(tmp_path / "s")]) == 2
    assert "already exists" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["s"]            # nothing half-written beside it
