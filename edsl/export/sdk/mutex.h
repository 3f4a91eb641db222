/* mutex.h -- this project's stand-in for the UPMEM SDK header of the same name:
 * a mutex is a bit of the DPU's atomic memory, mutex_id_t its address
 * (MUTEX_INIT(name) defines one, `name` or MUTEX_GET(name) its id; an id
 * never set is a mutex too, as on the DPU); mutex_lock, mutex_trylock,
 * mutex_unlock (dpu_sim_rt.c). A released mutex goes to the next waiting
 * tasklet after its holder, in tasklet order, as on the DPU model. Unlocking
 * a mutex the tasklet does not hold, or locking one it holds, stops the DPU
 * with the model's words. */
#ifndef EDSL_SIM_MUTEX_H
#define EDSL_SIM_MUTEX_H

#include <stdbool.h>
#include "atomic_bit.h"
#include "defs.h"

/* The mutexes a DPU has (the SDK documentation's figure for v1B DPUs). */
#define EDSL_SIM_MUTEXES 64

typedef uint8_t *mutex_id_t;

#define MUTEX_INIT(_name) \
    ATOMIC_BIT_INIT(mutex_##_name); \
    mutex_id_t const _name = &ATOMIC_BIT_GET(mutex_##_name)
#define MUTEX_GET(_name) (_name)

void mutex_lock(mutex_id_t mutex);
void mutex_unlock(mutex_id_t mutex);
bool mutex_trylock(mutex_id_t mutex);

#endif
