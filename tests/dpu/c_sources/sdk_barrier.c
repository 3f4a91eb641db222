/* barrier.h: barriers of every tasklet and of groups of them. */
#include <defs.h>
#include <barrier.h>

BARRIER_INIT(all, NR_TASKLETS);
barrier_t groups[24];                            /* filled in by tasklet 0, as PrIM's HST-L does */
static int slots[24];

/* In `rounds` rounds, each group of `size` tasklets in a row (the last may be
 * smaller) adds its members' values after a barrier of the group:
 * out[t] = rounds * (the sum of t's group's values). */
void group_sums(int *out, const int *values, int size, int rounds) {
    int t = me(), first = t / size * size, n = NR_TASKLETS - first < size ? NR_TASKLETS - first : size;
    if (t == 0)
        for (int g = 0; g * size < NR_TASKLETS; g++) {
            int m = NR_TASKLETS - g * size < size ? NR_TASKLETS - g * size : size;
            groups[g].wait_queue = 0xff;
            groups[g].count = groups[g].initial_count = (unsigned char)m;
            groups[g].lock = 0;
        }
    barrier_wait(&all);
    int sum = 0;
    for (int r = 0; r < rounds; r++) {
        slots[t] = values[t] + r;
        barrier_wait(&groups[t / size]);
        for (int k = first; k < first + n; k++)
            sum += slots[k] - r;
        barrier_wait(&groups[t / size]);         /* (before the next round's writes) */
    }
    out[t] = sum;
}

/* A barrier of every tasklet but one, which two tasklets never reach: the
 * others wait there for good. */
void group_never_full(void) {
    if (me() == 0) {
        groups[1].wait_queue = 0xff;
        groups[1].count = groups[1].initial_count = NR_TASKLETS - 1;
        groups[1].lock = 0;
    }
    barrier_wait(&all);
    if (me() < 2)
        return;
    barrier_wait(&groups[1]);                    // <never full>
}
