/* The UPMEM SDK's barrier.h. The DPU model's barrier holds every tasklet of
 * the DPU: a barrier for fewer is refused where it is declared. */
#ifndef EDSL_BARRIER_H
#define EDSL_BARRIER_H
#include "edsl_dpu.h"

typedef struct { uint8_t count; } barrier_t;

#define BARRIER_INIT(_name, _count)                                                             \
    _Static_assert((_count) == NR_TASKLETS, "the DPU model's barriers hold every tasklet: "      \
                   "BARRIER_INIT's count must be NR_TASKLETS");                                 \
    const barrier_t _name = {(_count)}

static inline void __edsl_barrier_wait(const barrier_t *barrier, int64_t site) {
    (void)barrier;
    EDSL_BARRIER(site);
    __edsl_stop_if_failed();
}

#define barrier_wait(barrier) __edsl_barrier_wait((barrier), EDSL_SITE)
#endif
