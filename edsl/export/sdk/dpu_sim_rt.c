/* dpu_sim_rt.c -- the DPU side of this project's simulated DPU.
 *
 * Compiled with a DPU program (built with the host C compiler against the
 * stand-in headers defs.h, mram.h, barrier.h, alloc.h) into one shared
 * object. The host library (dpu_sim_host.c) loads one private copy of that
 * object per simulated DPU, so every DPU has its own WRAM globals, and runs
 * `main` on NR_TASKLETS threads through edsl_sim_run. A barrier that can never
 * complete (a tasklet waits while all the others have finished) is a fault,
 * where hardware would hang. The limits are the DPU ABI's (dpu_abi.h). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "barrier.h"
#include "defs.h"
#include "dma_rules.h"
#include "dpu_abi.h"
#include "mram.h"

uint8_t *edsl_sim_mram_heap;
static uint8_t *mram_lo, *mram_hi;
static __thread sysname_t tasklet_id;
static volatile int faulted;
static volatile unsigned int finished;   /* tasklets that returned from main or halted */
static char fault_message[512];
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;

sysname_t me(void) { return tasklet_id; }

void halt(void) {
    __atomic_add_fetch(&finished, 1, __ATOMIC_SEQ_CST);
    pthread_exit(NULL);
}

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
    uint64_t m = (uint64_t)((const uint8_t *)mram - mram_lo), w = (uint64_t)(uintptr_t)wram;
    char rule[256];
    stop_if_faulted();
    if (edsl_dma_rules_broken(m, w, n)) {
        edsl_dma_violation(rule, sizeof rule, m, w, n);
        fault("%s: %s", what, rule);
    }
    if ((const uint8_t *)mram < mram_lo || (const uint8_t *)mram + n > mram_hi)
        fault("%s: %u bytes at MRAM address %#lx are outside the DPU's %d MiB MRAM", what, n,
              (unsigned long)m, EDSL_MRAM_BYTES >> 20);
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
            if (generation != b->generation)
                break;
            if (faulted) {                  /* another tasklet stopped the DPU */
                b->waiting--;
                pthread_mutex_unlock(&b->lock);
                pthread_exit(NULL);
            }
            if (b->waiting + __atomic_load_n(&finished, __ATOMIC_SEQ_CST) >= b->count) {
                b->waiting--;
                pthread_mutex_unlock(&b->lock);
                fault("deadlock at a barrier: %u tasklet(s) finished and will never reach it "
                      "(every tasklet must reach every barrier)", finished);
            }
        }
    }
    pthread_mutex_unlock(&b->lock);
}

static uint8_t wram_heap[EDSL_WRAM_BYTES] __attribute__((aligned(EDSL_DMA_ALIGN)));
static size_t wram_heap_used;
static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;

void *mem_alloc(size_t size) {
    stop_if_faulted();
    pthread_mutex_lock(&heap_lock);
    size_t start = EDSL_ALIGN_UP(wram_heap_used);
    if (size > EDSL_WRAM_BYTES || start + size > EDSL_WRAM_BYTES) {
        pthread_mutex_unlock(&heap_lock);
        fault("mem_alloc(%zu): the WRAM heap is exhausted (%zu of %d bytes used)", size, start,
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
    __atomic_add_fetch(&finished, 1, __ATOMIC_SEQ_CST);
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
    finished = 0;
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
