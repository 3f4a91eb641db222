/* handshake.h: a prefix sum passed from tasklet to tasklet. */
#include <defs.h>
#include <handshake.h>

static int passed[24];

/* out[t] = values[0] + ... + values[t] */
void handshake_prefix(int *out, const int *values) {
    int t = me(), sum = 0;
    if (t != 0) {
        handshake_wait_for(t - 1);
        sum = passed[t];
    }
    sum += values[t];
    out[t] = sum;
    if (t + 1 < NR_TASKLETS) {
        passed[t + 1] = sum;
        handshake_notify();                      // <notify>
    }
}

/* Every tasklet notifies: the last one's notification is owed to no one. */
void handshake_unanswered(void) {
    int t = me();
    if (t != 0)
        handshake_wait_for(t - 1);
    handshake_notify();                          // <unanswered>
}

void handshake_twice(void) {
    if (me() != 0)
        handshake_wait_for(0);                   // <twice>
}

void handshake_self(void) {
    handshake_wait_for(me());                    // <self>
}

/* PrIM's SEL: a handshake chain passes the counts, and after a barrier the
 * last tasklet moves the shared total on while the others still read it:
 * nothing orders that write after their reads (on a DPU only timing does). */
#include <barrier.h>
BARRIER_INIT(everyone, NR_TASKLETS);
static int total;

void handshake_then_total(int *out, const int *values) {
    int t = me(), before = 0;
    if (t != 0) {
        handshake_wait_for(t - 1);
        before = passed[t];
    }
    if (t + 1 < NR_TASKLETS) {
        passed[t + 1] = before + values[t];
        handshake_notify();
    }
    barrier_wait(&everyone);
    out[t] = total + before;                     // <total read>
    if (t == NR_TASKLETS - 1)
        total += before + values[t];             // <total moved>
}
