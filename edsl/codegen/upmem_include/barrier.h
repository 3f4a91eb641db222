/* The UPMEM SDK's barrier.h: barrier_t has the SDK's four bytes (programs may
 * fill them in themselves, as PrIM's HST-L does), BARRIER_INIT(name, count)
 * defines one for `count` tasklets, barrier_wait waits at one.
 *
 * A barrier of every tasklet (BARRIER_INIT's count NR_TASKLETS: then const,
 * so that its waits fold to it) is the DPU model's barrier, which the check
 * of races between tasklets knows. One of fewer is made here of the model's
 * waits, as mutex.h's mutexes are, in its four bytes: `wait_queue` guards
 * it (0xff while free), `count` tasklets are still to arrive, `lock` counts
 * its openings. A tasklet waiting at it counts itself blocked, so that a
 * state where every tasklet left waits is a deadlock at the line of the one
 * that completes it, never a hang; the race check does not see the order
 * such a barrier makes (a function using one is run without it, as with
 * mutexes). */
#ifndef EDSL_BARRIER_H
#define EDSL_BARRIER_H
#include "edsl_dpu.h"

typedef struct __attribute__((aligned(4))) {
    uint8_t wait_queue;
    uint8_t count;
    uint8_t initial_count;
    uint8_t lock;
} barrier_t;

/* (const for a barrier of every tasklet) */
#define __EDSL_BARRIER_T(_count) \
    __typeof__(*__builtin_choose_expr((_count) == NR_TASKLETS, (const barrier_t *)0, (barrier_t *)0))

#define BARRIER_INIT(_name, _count)                                                                  \
    _Static_assert((_count) >= 1 && (_count) <= NR_TASKLETS,                                         \
                   "BARRIER_INIT's count must be from 1 to NR_TASKLETS");                            \
    __EDSL_BARRIER_T(_count) _name = {0xff, (_count), (_count), 0}

/* A barrier of fewer tasklets than the DPU runs (EDSL_SYNC_CALL). */
EDSL_SYNC_CALL void __edsl_barrier_some(barrier_t *b, int64_t site) {
    __edsl_stop_if_failed();
    EDSL_RACE_NOTE(EDSL_RACE_UNORDERED, 0, 0, site);      /* (the check of races does not know its order) */
    uint8_t free = 0xff;
    while (!__atomic_compare_exchange_n(&b->wait_queue, &free, 0, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        free = 0xff;
        __edsl_pause();
    }
    if (b->count <= 1) {                       /* the last to arrive: the others go on */
        for (int waiting = (int)b->initial_count - 1; waiting > 0; waiting--)
            __edsl_unblock();
        b->count = b->initial_count;
        __atomic_store_n(&b->lock, (uint8_t)(b->lock + 1), __ATOMIC_RELEASE);
        __atomic_store_n(&b->wait_queue, 0xff, __ATOMIC_RELEASE);
        EDSL_WAKE_WORD((const uint32_t *)b);
        return;
    }
    uint8_t opened = b->lock;
    b->count--;
    __edsl_block(site);
    __atomic_store_n(&b->wait_queue, 0xff, __ATOMIC_RELEASE);
    for (;;) {                                 /* until it opens: any change of its word wakes */
        uint32_t word = __atomic_load_n((const uint32_t *)b, __ATOMIC_ACQUIRE);
        if (((const uint8_t *)&word)[3] != opened)
            break;
        __edsl_stop_if_failed();
        EDSL_WAIT_WORD((const uint32_t *)b, word);
    }
}

static inline void __edsl_barrier_wait(const barrier_t *barrier, int64_t site) {
    if (barrier->initial_count == NR_TASKLETS) {
        EDSL_BARRIER(site);
        __edsl_stop_if_failed();
    } else {
        __edsl_barrier_some((barrier_t *)barrier, site);
    }
}

#define barrier_wait(barrier) __edsl_barrier_wait((barrier), EDSL_SITE)
#endif
