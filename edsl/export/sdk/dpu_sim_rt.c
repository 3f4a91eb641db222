/* dpu_sim_rt.c -- the DPU side of this project's simulated DPU.
 *
 * Compiled with a DPU program (built with the host C compiler against the
 * stand-in headers defs.h, mram.h, barrier.h, alloc.h) into one shared
 * object. The host library (dpu_sim_host.c) loads one private copy of that
 * object per simulated DPU, so every DPU has its own WRAM globals, and runs
 * `main` on NR_TASKLETS threads through edsl_sim_run. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "barrier.h"
#include "defs.h"
#include "mram.h"

#define EDSL_WRAM_BYTES (64u * 1024u)
#define EDSL_DMA_MAX 2048u

uint8_t *edsl_sim_mram_heap;
static uint8_t *mram_lo, *mram_hi;
static __thread sysname_t tasklet_id;
static volatile int faulted;
static char fault_message[512];
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;

sysname_t me(void) { return tasklet_id; }

void halt(void) { pthread_exit(NULL); }

static void stop_if_faulted(void) {
    if (faulted)
        pthread_exit(NULL);
}

/* Record the first fault of the DPU and stop the calling tasklet. */
static void fault(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fault(const char *fmt, ...) {
    pthread_mutex_lock(&fault_lock);
    if (!faulted) {
        int n = snprintf(fault_message, sizeof fault_message, "tasklet %u: ", (unsigned)tasklet_id);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(fault_message + n, sizeof fault_message - (size_t)n, fmt, ap);
        va_end(ap);
        faulted = 1;
    }
    pthread_mutex_unlock(&fault_lock);
    pthread_exit(NULL);
}

static void check_dma(const char *what, const void *mram, const void *wram, unsigned int n) {
    uintptr_t m = (uintptr_t)mram, w = (uintptr_t)wram;
    stop_if_faulted();
    if (n % 8u || n < 8u || n > EDSL_DMA_MAX)
        fault("%s: DMA size %u bytes: must be a multiple of 8 between 8 and %u", what, n, EDSL_DMA_MAX);
    if (m % 8u)
        fault("%s: MRAM address %#lx is not 8-byte aligned", what, (unsigned long)(m - (uintptr_t)mram_lo));
    if (w % 8u)
        fault("%s: WRAM address %p is not 8-byte aligned", what, wram);
    if ((const uint8_t *)mram < mram_lo || (const uint8_t *)mram + n > mram_hi)
        fault("%s: %u bytes at MRAM address %#lx are outside the DPU's 64 MiB MRAM", what, n,
              (unsigned long)(m - (uintptr_t)mram_lo));
}

void mram_read(const __mram_ptr void *from, void *to, unsigned int nb_of_bytes) {
    check_dma("mram_read", from, to, nb_of_bytes);
    memcpy(to, from, nb_of_bytes);
}

void mram_write(const void *from, __mram_ptr void *to, unsigned int nb_of_bytes) {
    check_dma("mram_write", to, from, nb_of_bytes);
    memcpy(to, from, nb_of_bytes);
}

void barrier_wait(barrier_t *b) {
    pthread_mutex_lock(&b->lock);
    if (faulted) {
        pthread_mutex_unlock(&b->lock);
        pthread_exit(NULL);
    }
    unsigned long generation = b->generation;
    if (++b->waiting >= b->count) {
        b->waiting = 0;
        b->generation++;
        pthread_cond_broadcast(&b->cond);
    } else {
        while (generation == b->generation) {
            struct timespec t;
            clock_gettime(CLOCK_REALTIME, &t);
            t.tv_nsec += 10 * 1000 * 1000;
            if (t.tv_nsec >= 1000000000L) {
                t.tv_sec += 1;
                t.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&b->cond, &b->lock, &t);
            if (faulted && generation == b->generation) {   /* another tasklet stopped the DPU */
                b->waiting--;
                pthread_mutex_unlock(&b->lock);
                pthread_exit(NULL);
            }
        }
    }
    pthread_mutex_unlock(&b->lock);
}

static uint8_t wram_heap[EDSL_WRAM_BYTES] __attribute__((aligned(8)));
static size_t wram_heap_used;
static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;

void *mem_alloc(size_t size) {
    stop_if_faulted();
    pthread_mutex_lock(&heap_lock);
    size_t start = (wram_heap_used + 7u) & ~(size_t)7u;
    if (size > EDSL_WRAM_BYTES || start + size > EDSL_WRAM_BYTES) {
        pthread_mutex_unlock(&heap_lock);
        fault("mem_alloc(%zu): the WRAM heap is exhausted (%zu of %u bytes used)", size, start,
              EDSL_WRAM_BYTES);
    }
    wram_heap_used = start + size;
    pthread_mutex_unlock(&heap_lock);
    return wram_heap + start;
}

void mem_reset(void) {
    pthread_mutex_lock(&heap_lock);
    wram_heap_used = 0;
    pthread_mutex_unlock(&heap_lock);
}

struct tasklet_start {
    int (*entry)(void);
    sysname_t id;
};

static void *tasklet_main(void *arg) {
    struct tasklet_start *start = arg;
    tasklet_id = start->id;
    start->entry();
    return NULL;
}

/* Run `entry` (the program's main) on NR_TASKLETS threads over `mram`.
 * Returns 0, or 1 after a fault (its description in `message`). */
__attribute__((visibility("default")))
int edsl_sim_run(int (*entry)(void), uint8_t *mram, size_t mram_bytes, size_t heap_offset,
                 char *message, size_t message_size) {
    pthread_t threads[NR_TASKLETS];
    struct tasklet_start starts[NR_TASKLETS];
    mram_lo = mram;
    mram_hi = mram + mram_bytes;
    edsl_sim_mram_heap = mram + heap_offset;
    faulted = 0;
    fault_message[0] = 0;
    wram_heap_used = 0;
    int started = 0;
    for (int i = 0; i < NR_TASKLETS; i++) {
        starts[i].entry = entry;
        starts[i].id = (sysname_t)i;
        if (pthread_create(&threads[i], NULL, tasklet_main, &starts[i]) != 0) {
            snprintf(fault_message, sizeof fault_message, "cannot start tasklet %d", i);
            faulted = 1;
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    if (faulted && message && message_size) {
        strncpy(message, fault_message, message_size - 1);
        message[message_size - 1] = 0;
    }
    return faulted ? 1 : 0;
}

__attribute__((visibility("default")))
int edsl_sim_nr_tasklets(void) { return NR_TASKLETS; }
