/* The UPMEM SDK's handshake.h: handshake_wait_for(notifier) suspends the
 * tasklet until tasklet `notifier` calls handshake_notify(), and a
 * handshake_notify() that no tasklet waits for suspends its tasklet until
 * one calls handshake_wait_for on it; handshake_wait_for returns 0.
 *
 * On the DPU model a suspended tasklet counts itself blocked in its DPU's
 * state (as mutex_lock does) and the tasklet that releases it counts it
 * out, under one guard, so that a state where every tasklet left waits is
 * reported at the line of the one that completes it, never a hang. What
 * the SDK answers with an error code (a second tasklet waiting for the same
 * notifier) is an error at the call's line, as is waiting for itself or for
 * a tasklet the DPU does not run (it would wait forever). */
#ifndef EDSL_HANDSHAKE_H
#define EDSL_HANDSHAKE_H
#include "edsl_dpu.h"
#include "defs.h"

static struct {
    uint32_t guard;
    uint32_t waiter[EDSL_MAX_TASKLETS];     /* by notifier: the tasklet waiting for it + 1, or 0 */
    uint32_t notifying[EDSL_MAX_TASKLETS];  /* by notifier: 1 while it waits for a waiter */
    uint32_t go[EDSL_MAX_TASKLETS];         /* by tasklet: set by the one that releases it */
    uint32_t pairings[EDSL_MAX_TASKLETS];   /* by notifier: its handshakes so far (the check of races:
                                               both sides of one are ordered before what either does after) */
} __edsl_handshakes;

static inline void __edsl_handshake_guard(void) {
    uint32_t free = 0;
    while (!__atomic_compare_exchange_n(&__edsl_handshakes.guard, &free, 1, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED)) {
        free = 0;
        __edsl_pause();
    }
}

static inline void __edsl_handshake_release(void) {
    __atomic_store_n(&__edsl_handshakes.guard, 0, __ATOMIC_RELEASE);
}

/* Release suspended tasklet `tid` (under the guard). */
static inline void __edsl_handshake_go(uint32_t tid) {
    __edsl_unblock();
    __atomic_store_n(&__edsl_handshakes.go[tid], 1, __ATOMIC_RELEASE);
    EDSL_WAKE_WORD(&__edsl_handshakes.go[tid]);
}

/* Suspend the running tasklet `tid` (under the guard, which it lets go). */
static inline void __edsl_handshake_suspend(uint32_t tid, int64_t site) {
    __atomic_store_n(&__edsl_handshakes.go[tid], 0, __ATOMIC_RELAXED);
    __edsl_block(site);
    __edsl_handshake_release();
    __edsl_wait_until(&__edsl_handshakes.go[tid], 1);
}

EDSL_SYNC_CALL int __edsl_handshake_wait_for(sysname_t notifier, int64_t site) {
    uint32_t tid = EDSL_ME();
    __edsl_stop_if_failed();
    if (notifier >= NR_TASKLETS || notifier == tid)
        __edsl_fail(EDSL_ERR_HANDSHAKE_WHOM, site, notifier, 0, 0);
    __edsl_handshake_guard();
    if (__edsl_handshakes.waiter[notifier] != 0) {
        __edsl_handshake_release();
        __edsl_fail(EDSL_ERR_HANDSHAKE_BUSY, site, notifier, 0, 0);
    }
    uint32_t *pairings = &__edsl_handshakes.pairings[notifier], number = *pairings + 1;
    __edsl_race_release(pairings, number);
    if (__edsl_handshakes.notifying[notifier]) {
        __edsl_handshakes.notifying[notifier] = 0;
        *pairings = number;
        __edsl_handshake_go(notifier);
        __edsl_handshake_release();
        /* (where the tasklets share a host thread, the notifier goes on first, as
         * the stand-ins order them: PrIM's UNI depends on its transfer coming
         * before this tasklet's) */
        EDSL_YIELD(EDSL_CTX());
    } else {
        __edsl_handshakes.waiter[notifier] = tid + 1;
        __edsl_handshake_suspend(tid, site);
    }
    __edsl_race_acquire(pairings, number, 2);
    return 0;
}

EDSL_SYNC_CALL void __edsl_handshake_notify(int64_t site) {
    uint32_t tid = EDSL_ME();
    __edsl_stop_if_failed();
    __edsl_handshake_guard();
    uint32_t *pairings = &__edsl_handshakes.pairings[tid], number = *pairings + 1;
    __edsl_race_release(pairings, number);
    uint32_t waiter = __edsl_handshakes.waiter[tid];
    if (waiter != 0) {
        __edsl_handshakes.waiter[tid] = 0;
        *pairings = number;
        __edsl_handshake_go(waiter - 1);
        __edsl_handshake_release();
    } else {
        __edsl_handshakes.notifying[tid] = 1;
        __edsl_handshake_suspend(tid, site);
    }
    __edsl_race_acquire(pairings, number, 2);
}

#define handshake_wait_for(notifier) __edsl_handshake_wait_for((notifier), EDSL_SITE)
#define handshake_notify() __edsl_handshake_notify(EDSL_SITE)
#endif
