/* mutex.h: a shared counter, trylock, and what the model reports. */
#include <defs.h>
#include <mutex.h>
#include <barrier.h>
#include <assert.h>

MUTEX_INIT(counter_mutex);
MUTEX_INIT(other_mutex);
BARRIER_INIT(everyone, NR_TASKLETS);

static int counter;

/* Each tasklet adds me() + 1, `reps` times, read and written apart. */
void mutex_counter(int *out, int reps) {
    for (int i = 0; i < reps; i++) {
        mutex_lock(counter_mutex);
        int seen = counter;
        for (volatile int k = 0; k < 8; k++)
            ;
        counter = seen + (int)me() + 1;
        mutex_unlock(MUTEX_GET(counter_mutex));
    }
    barrier_wait(&everyone);
    if (me() == 0)
        out[0] = counter;
}

/* Tasklet 0 holds the mutex while the others try it (all fail); then tasklet
 * NR_TASKLETS - 1 tries it free (it succeeds). out[t]: what tasklet t got. */
void mutex_try(int *out) {
    if (me() == 0)
        mutex_lock(other_mutex);
    barrier_wait(&everyone);
    if (me() != 0)
        out[me()] = mutex_trylock(other_mutex);
    barrier_wait(&everyone);
    if (me() == 0)
        mutex_unlock(other_mutex);
    barrier_wait(&everyone);
    if (me() == NR_TASKLETS - 1)
        out[NR_TASKLETS] = mutex_trylock(other_mutex);
}

/* Tasklet 0 holds the mutex and waits at a barrier; the others wait for the mutex. */
void holder_at_barrier(void) {
    if (me() == 0)
        mutex_lock(counter_mutex);
    barrier_wait(&everyone);
    if (me() == 0) {
        barrier_wait(&everyone);                 // <holder waits>
        mutex_unlock(counter_mutex);
    } else {
        mutex_lock(counter_mutex);               // <others wait>
        mutex_unlock(counter_mutex);
        barrier_wait(&everyone);
    }
}

/* Tasklet 0 returns holding the mutex, after the others wait for it. */
void holder_returns(void) {
    if (me() == 0)
        mutex_lock(counter_mutex);
    barrier_wait(&everyone);
    if (me() != 0)
        mutex_lock(counter_mutex);               // <wait for the finished>
}

void unlock_not_held(void) {
    if (me() == 0)
        mutex_lock(counter_mutex);
    barrier_wait(&everyone);
    if (me() == NR_TASKLETS - 1)
        mutex_unlock(counter_mutex);             // <unlock not held>
}

void lock_twice(void) {
    mutex_lock(counter_mutex);
    mutex_lock(counter_mutex);                   // <lock twice>
}

/* Tasklet 0 faults holding the mutex the others wait for: they give up. */
void holder_faults(void) {
    if (me() == 0)
        mutex_lock(counter_mutex);
    barrier_wait(&everyone);
    if (me() == 0)
        assert(me() != 0);                       // <fault>
    else
        mutex_lock(counter_mutex);
}

/* PrIM's HST-L: mutex ids never set (zero: on a DPU the atomic bit 0, one
 * mutex for all) guard a shared counter; an atomic bit's address is an id. */
#include <atomic_bit.h>
mutex_id_t never_set[2];
ATOMIC_BIT_INIT(bits)[2];
static int unset_counter;

void mutex_never_set(int *out, int reps) {
    for (int i = 0; i < reps; i++) {
        mutex_lock(never_set[i % 2]);
        int seen = unset_counter;
        for (volatile int k = 0; k < 8; k++)
            ;
        unset_counter = seen + 1;
        mutex_unlock(never_set[(i + 1) % 2]);          /* (the same mutex) */
    }
    barrier_wait(&everyone);
    if (me() == 0)
        out[0] = unset_counter + (&ATOMIC_BIT_GET(bits)[1] - &ATOMIC_BIT_GET(bits)[0]) * 1000;
}

/* A counter the other tasklets add to under the mutex, and tasklet 0 reads
 * without it: nothing orders its read and their writes, whatever ran first. */
void mutex_peek(int *out) {
    if (me() == 0) {
        out[0] = counter;                        // <peek>
        return;
    }
    mutex_lock(counter_mutex);
    counter += 1;                                // <under lock>
    mutex_unlock(counter_mutex);
}
