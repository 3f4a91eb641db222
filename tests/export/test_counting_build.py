"""`edsl sdk --counting`: a project written for the SDK, built with its own
commands, counts what its DPU program executes, and the estimate of each
launch comes from those counts (edsl/export/counting_build.py)."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

from edsl.export.counting_build import launch_estimates
from edsl.export.stand_ins import write_stand_ins

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

TASK_C = r"""
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <barrier.h>

BARRIER_INIT(all, NR_TASKLETS);
__host uint32_t rounds, n;
__host int64_t sums[NR_TASKLETS];

int main(void) {
    int64_t w[2] __attribute__((aligned(8)));
    int64_t sum = 0;
    for (uint32_t r = 0; r < rounds; r++) {
        mram_read(DPU_MRAM_HEAP_POINTER, w, 16);
        barrier_wait(&all);
    }
    for (uint32_t i = 0; i < n; i++)            /* (a loop whose trip count is data) */
        sum += (int64_t)(i ^ me());
    sums[me()] = sum;
    return 0;
}
"""

HOST_C = r"""
#include <dpu.h>
#include <stdint.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    struct dpu_set_t set;
    uint32_t rounds = (uint32_t)atoi(argv[1]), n = (uint32_t)atoi(argv[2]);
    DPU_ASSERT(dpu_alloc(2, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./dpu_code", NULL));
    DPU_ASSERT(dpu_copy_to(set, "rounds", 0, &rounds, 4));
    DPU_ASSERT(dpu_copy_to(set, "n", 0, &n, 4));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    return 0;
}
"""


def built(d, task_c: str, tasklets: int):
    """Folder `d` with the DPU program `task_c` (of `tasklets` tasklets) and
    HOST_C built by their SDK commands against the counting stand-ins."""
    sdk = write_stand_ins(d / "sdk", counting=True)
    (d / "task.c").write_text(task_c)
    (d / "host.c").write_text(HOST_C)
    env = dict(os.environ, PATH=f"{sdk / 'bin'}{os.pathsep}{os.environ['PATH']}")
    for cmd in (f"dpu-upmem-dpurte-clang -O2 -DNR_TASKLETS={tasklets} -o dpu_code task.c",
                "cc -O2 -o host host.c `dpu-pkg-config --cflags --libs dpu`"):
        r = subprocess.run(cmd, shell=True, cwd=d, env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    return d


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return built(tmp_path_factory.mktemp("counting"), TASK_C, 4)


def counted(d, rounds: int, n: int):
    counts = d / "counts.jsonl"
    counts.unlink(missing_ok=True)                # (the host library appends)
    r = subprocess.run(["./host", str(rounds), str(n)], cwd=d, capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, EDSL_SIM_COUNTS=str(counts)))
    assert r.returncode == 0, r.stderr
    return launch_estimates(counts)


@settings(max_examples=15, deadline=None)
@given(rounds=st.integers(0, 50), n=st.integers(0, 200))
def test_each_launch_counts_its_transfers_waits_and_blocks(program, rounds, n):
    launches = counted(program, rounds, n)
    assert len(launches) == 2                                    # (two launches of 2 DPUs)
    for e in launches:
        ops = e.executed_ops
        assert ops.get("dma", 0) == ops.get("sync", 0) == rounds * 4 * 2    # 4 tasklets, 2 DPUs
        assert len(e.per_dpu_cycles) == 2 and e.per_dpu_cycles[0] == e.per_dpu_cycles[1] > 0
    assert launches[0].executed_ops == launches[1].executed_ops      # (counters restart each launch)


def test_a_loop_counts_the_same_operations_each_trip(program):
    """Executed operations are linear in a data-dependent trip count."""
    ops = [counted(program, 1, n)[0].executed_ops for n in (100, 200, 300)]
    for cls in set(ops[0]) | set(ops[1]) | set(ops[2]):
        a, b, c = (o.get(cls, 0) for o in ops)
        assert b - a == c - b, cls
    assert ops[1]["branch"] > ops[0]["branch"]


MUTEX_TASK_C = r"""
#include <stdint.h>
#include <defs.h>
#include <mutex.h>

MUTEX_INIT(m);
__host uint32_t rounds, n;                 /* (`rounds`: the host's, unused) */
uint32_t hist[8];

int main(void) {
    for (uint32_t i = 0; i < n; i++) {
        mutex_lock(m);
        hist[i & 7] += 1;
        mutex_unlock(m);
    }
    return 0;
}
"""


def test_a_mutexs_sections_count_as_held_in_the_counting_build(tmp_path):
    """The SDK's mutex_lock and mutex_unlock are their classes, and what runs
    between them is held: issued one tasklet at a time (edsl.dpu.timing)."""
    from edsl.dpu import timing
    first, _ = counted(built(tmp_path, MUTEX_TASK_C, 16), 0, 25)
    ops = first.executed_ops
    sections = 25 * 16 * 2                                # 16 tasklets, 2 DPUs
    assert ops["held:mutex_lock"] == ops["held:mutex_unlock"] == ops["held:store"] == sections
    held = sum(timing.slots_of(c) * k for c, k in ops.items() if c.startswith("held:")) / 2
    assert first.per_dpu_cycles == (timing.REVOLVER * held,) * 2
