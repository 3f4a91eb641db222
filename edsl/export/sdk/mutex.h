/* mutex.h -- this project's stand-in for the UPMEM SDK header of the same name:
 * MUTEX_INIT(name) defines a mutex, `name` (or MUTEX_GET(name)) its
 * mutex_id_t; mutex_lock, mutex_trylock, mutex_unlock (dpu_sim_rt.c). A
 * released mutex goes to the next waiting tasklet after its holder, in
 * tasklet order, as on the DPU model. Unlocking a mutex the tasklet does not
 * hold, or locking one it holds, stops the DPU with the model's words. */
#ifndef EDSL_SIM_MUTEX_H
#define EDSL_SIM_MUTEX_H

#include <stdbool.h>
#include "defs.h"

typedef struct {
    unsigned int owner;      /* the holder's tasklet id + 1, 0 if free */
    unsigned int waiters;    /* a bit per tasklet waiting for it */
} edsl_sim_mutex_t;
typedef edsl_sim_mutex_t *mutex_id_t;

#define MUTEX_INIT(_name) \
    edsl_sim_mutex_t edsl_sim_mutex_##_name = {0, 0}; \
    mutex_id_t const _name = &edsl_sim_mutex_##_name
#define MUTEX_GET(_name) (_name)

void mutex_lock(mutex_id_t mutex);
void mutex_unlock(mutex_id_t mutex);
bool mutex_trylock(mutex_id_t mutex);

#endif
