/* The UPMEM SDK's mutex.h: MUTEX_INIT(name) defines a mutex, `name` (or
 * MUTEX_GET(name)) its mutex_id_t; mutex_lock, mutex_trylock, mutex_unlock.
 *
 * On the DPU model a mutex is a word the tasklets change under its guard
 * bit. A tasklet that finds it held by another counts itself blocked in its
 * DPU's state (the Dpu COUNT slot, which the barrier also counts) and waits
 * until the holder hands it the mutex (counting it out), so that a state
 * where every tasklet left waits, at a barrier or for a mutex, is seen by the
 * one that completes it: a deadlock reported at its line, never a hang. A
 * waiting tasklet gives up once its DPU has failed. What is undefined on a
 * DPU is an error at the call's line: unlocking a mutex the tasklet does not
 * hold, locking one it holds (it would wait for itself forever). */
#ifndef EDSL_MUTEX_H
#define EDSL_MUTEX_H
#include "edsl_dpu.h"

typedef struct {
    uint32_t guard;     /* 1 while a tasklet changes the two words below */
    uint32_t owner;     /* the holder's tasklet id + 1, 0 if free */
    uint32_t waiters;   /* a bit per tasklet waiting for it */
    uint32_t releases;  /* its unlocks so far (the check of races: __edsl_race_release) */
} __edsl_mutex_t;
typedef __edsl_mutex_t *mutex_id_t;

#define MUTEX_INIT(_name)                                                                            \
    __edsl_mutex_t __edsl_mutex_##_name = {0, 0, 0, 0};                                              \
    mutex_id_t const _name = &__edsl_mutex_##_name
#define MUTEX_GET(_name) (_name)

/* The mutex of an id never set (zero, as PrIM's HST-L leaves its ids): on a
 * DPU the id of the atomic bit 0, one mutex all the same. */
static __edsl_mutex_t __edsl_mutex_unset;
static inline mutex_id_t __edsl_mutex_of(mutex_id_t mutex) {
    return mutex ? mutex : &__edsl_mutex_unset;
}

static inline void __edsl_mutex_guard(mutex_id_t mutex) {
    uint32_t free = 0;
    while (!__atomic_compare_exchange_n(&mutex->guard, &free, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        free = 0;
        __edsl_pause();          /* (only tasklets on threads find it taken: no one yields holding it) */
    }
}

static inline void __edsl_mutex_release(mutex_id_t mutex) {
    __atomic_store_n(&mutex->guard, 0, __ATOMIC_RELEASE);
}

/* Lock, unlock and trylock are functions of their own (EDSL_SYNC_CALL): the
 * time estimate counts each call as the DPU's instructions for it (class
 * mutex_lock, mutex_unlock, mutex_trylock) and what runs between a lock and
 * its unlock as held. */
EDSL_SYNC_CALL bool __edsl_mutex_trylock(mutex_id_t mutex) {
    uint32_t me = EDSL_ME() + 1;
    mutex = __edsl_mutex_of(mutex);
    __edsl_mutex_guard(mutex);
    bool taken = mutex->owner == 0;
    if (taken) {
        __atomic_store_n(&mutex->owner, me, __ATOMIC_RELAXED);
        __edsl_race_acquire(mutex, mutex->releases, 1);
    }
    __edsl_mutex_release(mutex);
    return taken;
}

EDSL_SYNC_CALL void __edsl_mutex_lock(mutex_id_t mutex, int64_t site) {
    uint32_t tid = EDSL_ME(), me = tid + 1;
    mutex = __edsl_mutex_of(mutex);
    __edsl_stop_if_failed();
    __edsl_mutex_guard(mutex);
    if (mutex->owner == 0) {
        __atomic_store_n(&mutex->owner, me, __ATOMIC_RELAXED);
        __edsl_race_acquire(mutex, mutex->releases, 1);
        __edsl_mutex_release(mutex);
        return;
    }
    if (mutex->owner == me) {
        __edsl_mutex_release(mutex);
        __edsl_fail(EDSL_ERR_MUTEX_RELOCK, site, 0, 0, 0);
    }
    /* Blocked: counted while the guard keeps the holder from handing it over. */
    mutex->waiters |= (uint32_t)1 << tid;
    __edsl_block(site);
    __edsl_mutex_release(mutex);
    __edsl_wait_until(&mutex->owner, me);
    __edsl_race_acquire(mutex, __atomic_load_n(&mutex->releases, __ATOMIC_ACQUIRE), 1);   /* (handed on) */
}

EDSL_SYNC_CALL void __edsl_mutex_unlock(mutex_id_t mutex, int64_t site) {
    uint32_t tid = EDSL_ME(), me = tid + 1;
    mutex = __edsl_mutex_of(mutex);
    __edsl_mutex_guard(mutex);
    if (mutex->owner != me) {
        __edsl_mutex_release(mutex);
        __edsl_fail(EDSL_ERR_MUTEX_UNLOCK, site, 0, 0, 0);
    }
    mutex->releases++;
    __edsl_race_release(mutex, mutex->releases);
    uint32_t waiters = mutex->waiters;
    if (waiters == 0) {
        __atomic_store_n(&mutex->owner, 0, __ATOMIC_RELEASE);
    } else {
        /* Handed to the next waiter after this tasklet, in tasklet order. */
        uint32_t after = waiters & ~(((uint32_t)2 << tid) - 1);
        uint32_t next = (uint32_t)__builtin_ctz(after ? after : waiters);
        mutex->waiters = waiters & ~((uint32_t)1 << next);
        __edsl_unblock();
        __atomic_store_n(&mutex->owner, next + 1, __ATOMIC_RELEASE);
        EDSL_WAKE_WORD(&mutex->owner);
    }
    __edsl_mutex_release(mutex);
}

#define mutex_lock(mutex) __edsl_mutex_lock((mutex), EDSL_SITE)
#define mutex_unlock(mutex) __edsl_mutex_unlock((mutex), EDSL_SITE)
#define mutex_trylock(mutex) __edsl_mutex_trylock(mutex)
#endif
