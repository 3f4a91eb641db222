#include <defs.h>
#include <barrier.h>
#include <assert.h>

BARRIER_INIT(all, NR_TASKLETS);

// Tasklet `bad` fails an assert; the others meet at a barrier it never reaches.
void faults(int32_t *marks, int32_t bad) {
    if ((int32_t)me() == bad)
        assert(marks[bad] > 0);  // <assert>
    barrier_wait(&all);          // <barrier>
    marks[me()] = 1;
}

// Only tasklet 0 waits: a barrier the others never reach.
void lonely(int32_t *marks) {
    if (me() == 0)
        barrier_wait(&all);      // <lonely>
    marks[me()] = 1;
}

// A count kept in a variable of the DPU's WRAM: a fresh DPU starts it at 0.
static int32_t calls;

int32_t count_calls(int32_t *out) {
    calls += 1;
    out[0] = calls;
    return calls;
}

// The tasklets' sum of 0..n-1, each tasklet its share, then tasklet 0 adds them up.
int64_t partial[NR_TASKLETS];

void tasklet_sum(int64_t *total, int64_t n) {
    int64_t s = 0;
    for (int64_t k = me(); k < n; k += NR_TASKLETS)
        s += k;
    partial[me()] = s;
    barrier_wait(&all);
    if (me() == 0) {
        int64_t t = 0;
        for (int k = 0; k < NR_TASKLETS; k++)
            t += partial[k];
        total[0] = t;
    }
}

#include <stdio.h>

// Each tasklet prints a line.
void hello(int32_t n) {
    printf("tasklet %u of %d: n = %d\n", me(), NR_TASKLETS, n);
}
