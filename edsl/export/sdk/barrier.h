/* barrier.h -- this project's stand-in for the UPMEM SDK header of the same
 * name: barrier_t has the SDK's fields (programs may fill them themselves:
 * `count` tasklets still to arrive, reset to `initial_count` as the last one
 * does), and barrier_wait waits with the other waits of the DPU
 * (dpu_sim_rt.c), so that tasklets that all wait, at barriers, for mutexes or
 * in handshakes, are a deadlock it reports. */
#ifndef EDSL_SIM_BARRIER_H
#define EDSL_SIM_BARRIER_H

#include "atomic_bit.h"
#include "defs.h"

typedef struct barrier_t {
    uint8_t wait_queue;
    uint8_t count;
    uint8_t initial_count;
    uint8_t lock;            /* (an atomic bit on the DPU; unused here) */
} barrier_t;

#define BARRIER_INIT(_name, _counter) barrier_t _name = {0xff, (_counter), (_counter), 0}

void barrier_wait(barrier_t *barrier);

#endif
