"""`edsl sdk FOLDER --model`: a project written for the UPMEM SDK, built with
its own Makefile, its DPUs run on the DPU model (edsl.sdk_model):
the host's transfers by the SDK's rules, each DPU's variables its own and
kept between launches, MRAM addresses as the DPU has them (pointers from
`DPU_MRAM_HEAP_POINTER` kept in 32 bits, host offsets), and what the model adds to the stand-ins: a
transfer's fault, a race between tasklets and a compile error at the DPU
source's line, each a clear error where the hardware would give a wrong
answer."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from edsl.export.stand_ins import write_stand_ins

pytestmark = pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None,
                                reason="needs make and a C compiler")

TASK_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <defs.h>
#include <mram.h>
#include <barrier.h>
#include "common.h"

__host args_t ARGS;
__host uint64_t SUMS[NR_TASKLETS];
__host uint32_t LAUNCHES;                   /* kept by each DPU between launches */
__host uint64_t FIRST;                      /* read at MRAM address 0: a host offset as an address */
__mram_noinit uint64_t scale[1];            /* written by the host by name */
static uint32_t seen;                       /* the DPU's too, but not the host's to name */
__dma_aligned uint64_t cache[NR_TASKLETS][BLOCK];
BARRIER_INIT(all, NR_TASKLETS);
volatile int flag;

int main(void) {
    unsigned int t = me();
    uint32_t heap = (uint32_t)DPU_MRAM_HEAP_POINTER;           /* (as PrIM's programs keep it) */
    if (ARGS.mode == 4 && t == 0)           /* (on a DPU tasklet 1 runs beside it and sets the flag) */
        while (!flag)
            ;
    if (ARGS.mode == 4 && t == 1) {
        mram_read(scale, cache[t], 8);
        flag = 1;
    }
    if (t == 0) {
        LAUNCHES += 1;
        seen += 1;
    }
    uint64_t sum = 0, k;
    mram_read(scale, cache[t], 8);
    k = cache[t][0];
    if (t == 0) {
        mram_read((__mram_ptr void const *)0, cache[t], 8);
        FIRST = cache[t][0];
    }
    for (uint32_t at = t * BLOCK; at < ARGS.n; at += NR_TASKLETS * BLOCK) {
        mram_read((__mram_ptr void const *)(heap + at * 8), cache[t], BLOCK * 8);
        for (int i = 0; i < BLOCK; i++)
            sum += k * cache[t][i];
    }
    SUMS[t] = sum;                                                         // <sum>
    if (ARGS.mode == 1 && t == 1)
        mram_read((__mram_ptr void const *)(heap + 4), cache[t], 8);      // <misaligned>
    if (ARGS.mode == 2)
        SUMS[0] = sum;                                                     // <race>
    if (ARGS.mode == 3 && t == 0)
        printf("DPU says %u\n", (unsigned)seen);
    barrier_wait(&all);
    return 0;
}
"""

COMMON_H = """#define BLOCK 32
typedef struct { uint32_t n, mode; } args_t;
"""

HOST_C = r"""
#include <dpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "common.h"

int main(int argc, char **argv) {
    args_t args = {(uint32_t)atoi(argv[1]), (uint32_t)atoi(argv[2])};
    uint32_t n = args.n, i;
    struct dpu_set_t set, dpu;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/dpu_code", NULL));
    uint64_t *x = malloc((size_t)NR_DPUS * n * 8), scale = 3;
    for (uint32_t k = 0; k < NR_DPUS * n; k++)
        x[k] = (uint64_t)k * 7 % 1000;
    if (dpu_copy_to(set, "scale", 4, &scale, 8) != DPU_ERR_INVALID_MRAM_ACCESS       /* (MRAM: 8-byte) */
        || dpu_copy_to(set, "ARGS", 2, &args, 4) != DPU_ERR_INVALID_WRAM_ACCESS      /* (WRAM: 4-byte) */
        || dpu_copy_to(set, "ARGS", 4, &args, 8) != DPU_ERR_INVALID_SYMBOL_ACCESS    /* (past its end) */
        || dpu_copy_to(set, "seen", 0, &args, 4) != DPU_ERR_UNKNOWN_SYMBOL           /* (static) */
        || dpu_copy_to(set, "no_such", 0, &args, 8) != DPU_ERR_UNKNOWN_SYMBOL) {
        printf("a transfer the SDK refuses was taken\n");
        return 4;
    }
    DPU_ASSERT(dpu_broadcast_to(set, "scale", 0, &scale, 8, DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_broadcast_to(set, "ARGS", 0, &args, sizeof args, DPU_XFER_DEFAULT));
    DPU_FOREACH(set, dpu, i)
        DPU_ASSERT(dpu_prepare_xfer(dpu, x + (size_t)i * n));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, n * 8, DPU_XFER_DEFAULT));
    for (int launch = 0; launch < 2; launch++)
        if (dpu_launch(set, DPU_SYNCHRONOUS) != DPU_OK) {
            printf("launch failed\n");
            return 3;
        }
    int bad = 0;
    DPU_FOREACH(set, dpu, i) {
        uint64_t sums[NR_TASKLETS], got = 0, want = 0;
        uint32_t launches;
        uint64_t first;
        DPU_ASSERT(dpu_copy_from(dpu, "FIRST", 0, &first, 8));
        bad |= first != x[(size_t)i * n];
        DPU_ASSERT(dpu_copy_from(dpu, "SUMS", 0, sums, sizeof sums));
        DPU_ASSERT(dpu_copy_from(dpu, "LAUNCHES", 0, &launches, 4));
        for (int t = 0; t < NR_TASKLETS; t++)
            got += sums[t];
        for (uint32_t k = 0; k < n; k++)
            want += scale * x[(size_t)i * n + k];
        bad |= got != want || launches != 2;
        if (args.mode == 3)
            DPU_ASSERT(dpu_log_read(dpu, stdout));
    }
    DPU_ASSERT(dpu_free(set));
    printf(bad ? "[ERROR] Outputs differ!\n" : "[OK] Outputs are equal\n");
    return bad;
}
"""

MAKEFILE = """\
NR_DPUS ?= 2
NR_TASKLETS ?= 16
all: bin/host_code bin/dpu_code
bin/host_code: host/app.c
\tmkdir -p bin
\t$(CC) -o $@ host/app.c -Wall -std=c11 -O2 -Isupport `dpu-pkg-config --cflags --libs dpu` -DNR_DPUS=${NR_DPUS} \\
\t    -DNR_TASKLETS=${NR_TASKLETS}
bin/dpu_code: dpu/task.c
\tmkdir -p bin
\tdpu-upmem-dpurte-clang -Wall -Wextra -g -Isupport -O2 -DNR_TASKLETS=${NR_TASKLETS} -o $@ dpu/task.c
"""


def line_of(marker: str) -> int:
    return next(k for k, text in enumerate(TASK_C.split("\n"), 1) if text.endswith(f"// <{marker}>"))


@pytest.fixture(scope="module")
def model_sdk(tmp_path_factory):
    return write_stand_ins(tmp_path_factory.mktemp("stand-ins") / "sdk", model=True)


def build(sdk, folder, dpus, tasklets, task_c=TASK_C):
    for name, text in (("dpu/task.c", task_c), ("host/app.c", HOST_C), ("support/common.h", COMMON_H),
                       ("Makefile", MAKEFILE)):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    env = dict(os.environ, PATH=f"{sdk / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(["make", f"NR_DPUS={dpus}", f"NR_TASKLETS={tasklets}"], cwd=folder, env=env,
                          capture_output=True, text=True)


def run(folder, n, mode=0, env=None):
    return subprocess.run(["./bin/host_code", str(n), str(mode)], cwd=folder, capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, **(env or {})))


@pytest.mark.parametrize("dpus,tasklets,blocks", [(1, 1, 3), (3, 16, 2)])
def test_a_project_written_for_the_sdk_runs_on_the_model_and_passes_its_check(model_sdk, tmp_path, dpus,
                                                                            tasklets, blocks):
    assert build(model_sdk, tmp_path, dpus, tasklets).returncode == 0
    r = run(tmp_path, 32 * tasklets * blocks)
    assert r.returncode == 0 and "[OK]" in r.stdout, r.stdout + r.stderr


def test_the_same_project_on_the_stand_ins_agrees(tmp_path):
    sdk = write_stand_ins(tmp_path / "sdk")
    assert build(sdk, tmp_path / "p", 3, 16).returncode == 0
    r = run(tmp_path / "p", 32 * 16 * 2)
    assert r.returncode == 0 and "[OK]" in r.stdout, r.stdout + r.stderr


def test_a_misaligned_transfer_faults_the_dpu_at_its_line(model_sdk, tmp_path):
    assert build(model_sdk, tmp_path, 2, 4).returncode == 0
    r = run(tmp_path, 256, mode=1)
    assert r.returncode == 3, r.stdout + r.stderr
    assert f"[dpu sim] DPU 0: fault: {tmp_path / 'dpu' / 'task.c'}:{line_of('misaligned')}:" in r.stderr, r.stderr
    assert "MRAM address" in r.stderr and "8-byte aligned" in r.stderr, r.stderr


def test_a_race_between_tasklets_is_an_error_naming_its_lines_where_asked(model_sdk, tmp_path):
    assert build(model_sdk, tmp_path, 1, 4).returncode == 0
    r = run(tmp_path, 256, mode=2, env={"EDSL_RACE_CHECK": "1"})
    assert r.returncode == 3, r.stdout + r.stderr
    assert (f"race on byte 0 of 'SUMS': tasklet 0 writes it at line {line_of('sum')} (column 1) and tasklet 1 "
            f"writes it at line {line_of('race')}") in r.stderr, r.stderr
    # Unchecked it runs (its answer is the order's: the tasklets take turns as a DPU's do).
    r = run(tmp_path, 256, mode=2, env={"EDSL_RACE_CHECK": "0"})
    assert r.returncode in (0, 1) and "race" not in r.stderr, r.stdout + r.stderr


def test_a_tasklet_that_waits_in_a_loop_ends_the_model_saying_why(model_sdk, tmp_path):
    """Tasklets take turns at transfers and waits: one that waits for another in
    a loop keeps the turn; after EDSL_SIM_TURN_SECONDS the model ends, never hangs."""
    assert build(model_sdk, tmp_path, 1, 2).returncode == 0
    r = run(tmp_path, 128, mode=4, env={"EDSL_SIM_TURN_SECONDS": "1", "EDSL_RACE_CHECK": "0"})
    assert r.returncode == 3, r.stdout + r.stderr               # (its dpu_launch failed)
    assert ("DPU 0: no transfer, wait or end of a tasklet for 1 s" in r.stderr
            and "the DPU model ended" in r.stderr), r.stderr


def test_dpu_log_read_prints_each_dpus_printf_of_its_last_launch(model_sdk, tmp_path):
    assert build(model_sdk, tmp_path, 2, 2).returncode == 0
    r = run(tmp_path, 128, mode=3)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("DPU says 2\n") == 2 and "=== DPU#0x1 ===" in r.stdout, r.stdout


def test_a_compile_error_fails_the_build_at_its_line(model_sdk, tmp_path):
    r = build(model_sdk, tmp_path, 1, 4, task_c=TASK_C.replace("SUMS[t] = sum;", "SUMS[t] = sum"))
    assert r.returncode != 0
    assert f"task.c:{line_of('sum')}" in r.stderr and "DPU model" in r.stderr, r.stderr


def test_a_flag_the_model_cannot_honour_is_refused_naming_it(model_sdk, tmp_path):
    (tmp_path / "t.c").write_text("int main(void) { return 0; }\n")
    r = subprocess.run([str(model_sdk / "bin" / "dpu-upmem-dpurte-clang"), "-flto-thin", "-lfoo", "-o", "x", "t.c"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 1 and "'-lfoo'" in r.stderr, r.stderr
