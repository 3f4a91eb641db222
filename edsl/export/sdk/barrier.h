/* barrier.h -- this project's stand-in for the UPMEM SDK header of the same name:
 * a barrier over the simulated DPU's tasklets (POSIX threads; a mutex and a
 * condition variable, so that a DPU fault can release the waiting tasklets). */
#ifndef EDSL_SIM_BARRIER_H
#define EDSL_SIM_BARRIER_H

#include <pthread.h>
#include "defs.h"

typedef struct barrier_t {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned int count;
    unsigned int waiting;
    unsigned long generation;
} barrier_t;

#define BARRIER_INIT(_name, _counter) \
    barrier_t _name = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, (_counter), 0, 0 }

void barrier_wait(barrier_t *barrier);

#endif
