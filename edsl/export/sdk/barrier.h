/* barrier.h -- this project's stand-in for the UPMEM SDK header of the same name:
 * a barrier over the simulated DPU's tasklets (POSIX threads), under the lock
 * of every wait of the DPU (dpu_sim_rt.c), so that tasklets that all wait, at
 * barriers, for mutexes or in handshakes, are a deadlock it reports. */
#ifndef EDSL_SIM_BARRIER_H
#define EDSL_SIM_BARRIER_H

#include "defs.h"

typedef struct barrier_t {
    unsigned int count;
    unsigned int waiting;
    unsigned long generation;
} barrier_t;

#define BARRIER_INIT(_name, _counter) barrier_t _name = { (_counter), 0, 0 }

void barrier_wait(barrier_t *barrier);

#endif
