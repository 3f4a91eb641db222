/* dpu_sim_rt.c -- the DPU side of this project's simulated DPU.
 *
 * Compiled with a DPU program (built with the host C compiler against the
 * stand-in headers defs.h, mram.h, barrier.h, alloc.h, mutex.h,
 * handshake.h, seqread.h) into one shared
 * object. The host library (dpu_sim_host.c) loads one private copy of that
 * object per simulated DPU, so every DPU has its own WRAM globals, and runs
 * `main` on NR_TASKLETS threads through edsl_sim_run. Tasklets that all wait,
 * at barriers, for mutexes or in handshakes, with none left to end a wait, are
 * a fault, where hardware would hang. The limits are the DPU ABI's
 * (dpu_abi.h); errors the DPU model also reports are worded as it words them
 * (error_messages.h). printf
 * (stdio.h) writes the DPU's log as the SDK's does (see "printf" below). */
#define EDSL_SIM_RUNTIME 1             /* (stdio.h: the host's, for this file) */
#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "barrier.h"
#include "defs.h"
#include "dma_rules.h"
#include "dpu_abi.h"
#include "error_messages.h"
#include "handshake.h"
#include "mram.h"
#include "mutex.h"
#include "seqread.h"

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

/* Fault with the DPU model's words for error `code` (error_messages.h). */
static void fault_code(int64_t code, int64_t nbytes, int64_t mram) __attribute__((noreturn));
static void fault_code(int64_t code, int64_t nbytes, int64_t mram) {
    char message[400];
    struct edsl_error_operands operands = {.code = code, .nbytes = nbytes, .mram = mram};
    edsl_error_message(message, sizeof message, &operands);
    fault("%s", message);
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

/* ---- waits: barriers, mutexes, handshakes ---------------------------------
 * One lock for them all. A tasklet whose wait no running tasklet has ended
 * yet counts itself `stuck`; the tasklet that ends it counts it out. When
 * every tasklet that has not finished is stuck, none can end another's wait:
 * a deadlock. Waiters look every 10 ms (and stop where another tasklet
 * faulted). */
static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sync_cond = PTHREAD_COND_INITIALIZER;
static unsigned int stuck, stuck_at_barriers;

/* Wait, `sync_lock` held, until `ended(what)`. */
static void sync_wait(int (*ended)(const void *), const void *what) {
    while (!ended(what)) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += 10 * 1000 * 1000;
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec += 1;
            t.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&sync_cond, &sync_lock, &t);
        if (ended(what))
            break;
        if (faulted) {                      /* another tasklet stopped the DPU */
            pthread_mutex_unlock(&sync_lock);
            pthread_exit(NULL);
        }
        if (stuck + __atomic_load_n(&finished, __ATOMIC_SEQ_CST) >= NR_TASKLETS) {
            int only_barriers = stuck == stuck_at_barriers;
            pthread_mutex_unlock(&sync_lock);
            fault_code(only_barriers ? EDSL_ERR_DEADLOCK : EDSL_ERR_SYNC_DEADLOCK, 0, 0);
        }
    }
}

/* End the wait of `n` stuck tasklets (`sync_lock` held). */
static void unstick(unsigned int n) {
    stuck -= n;
    pthread_cond_broadcast(&sync_cond);
}

struct barrier_pass { const barrier_t *barrier; unsigned long generation; };

static int barrier_passed(const void *what) {
    const struct barrier_pass *pass = what;
    return pass->barrier->generation != pass->generation;
}

void barrier_wait(barrier_t *b) {
    stop_if_faulted();
    pthread_mutex_lock(&sync_lock);
    if (++b->waiting >= b->count) {
        stuck_at_barriers -= b->waiting - 1;
        unstick(b->waiting - 1);
        b->waiting = 0;
        b->generation++;
    } else {
        struct barrier_pass pass = {b, b->generation};
        stuck++;
        stuck_at_barriers++;
        sync_wait(barrier_passed, &pass);
    }
    pthread_mutex_unlock(&sync_lock);
}

struct mutex_hold { const edsl_sim_mutex_t *mutex; unsigned int holder; };

static int mutex_held(const void *what) {
    const struct mutex_hold *hold = what;
    return hold->mutex->owner == hold->holder;
}

bool mutex_trylock(mutex_id_t mutex) {
    stop_if_faulted();
    pthread_mutex_lock(&sync_lock);
    bool taken = mutex->owner == 0;
    if (taken)
        mutex->owner = tasklet_id + 1;
    pthread_mutex_unlock(&sync_lock);
    return taken;
}

void mutex_lock(mutex_id_t mutex) {
    struct mutex_hold hold = {mutex, tasklet_id + 1};
    stop_if_faulted();
    pthread_mutex_lock(&sync_lock);
    if (mutex->owner == 0) {
        mutex->owner = hold.holder;
    } else if (mutex->owner == hold.holder) {
        pthread_mutex_unlock(&sync_lock);
        fault_code(EDSL_ERR_MUTEX_RELOCK, 0, 0);
    } else {
        mutex->waiters |= 1u << tasklet_id;
        stuck++;
        sync_wait(mutex_held, &hold);
    }
    pthread_mutex_unlock(&sync_lock);
}

void mutex_unlock(mutex_id_t mutex) {
    pthread_mutex_lock(&sync_lock);
    if (mutex->owner != tasklet_id + 1) {
        pthread_mutex_unlock(&sync_lock);
        fault_code(EDSL_ERR_MUTEX_UNLOCK, 0, 0);
    }
    unsigned int waiters = mutex->waiters;
    if (waiters == 0) {
        mutex->owner = 0;
    } else {                                /* to the next waiter after this tasklet, in tasklet order */
        unsigned int after = waiters & ~((2u << tasklet_id) - 1);
        unsigned int next = (unsigned int)__builtin_ctz(after ? after : waiters);
        mutex->waiters = waiters & ~(1u << next);
        mutex->owner = next + 1;
        unstick(1);
    }
    pthread_mutex_unlock(&sync_lock);
}

static struct {
    unsigned int waiter[EDSL_MAX_TASKLETS];     /* by notifier: the tasklet waiting for it + 1, or 0 */
    unsigned int notifying[EDSL_MAX_TASKLETS];  /* by notifier: 1 while it waits for a waiter */
    unsigned int go[EDSL_MAX_TASKLETS];         /* by tasklet: set by the one that releases it */
} handshakes;

static int released(const void *what) {
    return handshakes.go[*(const sysname_t *)what] != 0;
}

/* Suspend the running tasklet until another releases it (`sync_lock` held). */
static void handshake_suspend(void) {
    handshakes.go[tasklet_id] = 0;
    stuck++;
    sync_wait(released, &tasklet_id);
}

static void handshake_release(sysname_t tasklet) {
    handshakes.go[tasklet] = 1;
    unstick(1);
}

int handshake_wait_for(sysname_t notifier) {
    stop_if_faulted();
    if (notifier >= NR_TASKLETS || notifier == tasklet_id)
        fault_code(EDSL_ERR_HANDSHAKE_WHOM, 0, notifier);
    pthread_mutex_lock(&sync_lock);
    if (handshakes.waiter[notifier] != 0) {
        pthread_mutex_unlock(&sync_lock);
        fault_code(EDSL_ERR_HANDSHAKE_BUSY, 0, notifier);
    }
    if (handshakes.notifying[notifier]) {
        handshakes.notifying[notifier] = 0;
        handshake_release(notifier);
    } else {
        handshakes.waiter[notifier] = tasklet_id + 1;
        handshake_suspend();
    }
    pthread_mutex_unlock(&sync_lock);
    return 0;
}

void handshake_notify(void) {
    stop_if_faulted();
    pthread_mutex_lock(&sync_lock);
    unsigned int waiter = handshakes.waiter[tasklet_id];
    if (waiter != 0) {
        handshakes.waiter[tasklet_id] = 0;
        handshake_release(waiter - 1);
    } else {
        handshakes.notifying[tasklet_id] = 1;
        handshake_suspend();
    }
    pthread_mutex_unlock(&sync_lock);
}

/* ---- seqread ------------------------------------------------------------ */
/* Fill the reader's cache from MRAM address `mram` (8-byte aligned), to the
 * end of the DPU's MRAM at most; the cache pointer of byte `at`. */
static void *seqread_fill(seqreader_t *reader, uintptr_t mram, uintptr_t at, unsigned int cache_size) {
    uintptr_t end = (uintptr_t)mram_hi, n = 2 * (uintptr_t)cache_size;
    if (mram < end && end - mram < n)
        n = end - mram;
    mram_read((const __mram_ptr void *)mram, reader->cache, (unsigned int)n);
    reader->mram = mram;
    return reader->cache + (at - mram);
}

void *edsl_sim_seqread_init(seqreader_buffer_t cache, __mram_ptr void *mram_addr, seqreader_t *reader,
                            unsigned int cache_size) {
    uintptr_t at = (uintptr_t)mram_addr;
    reader->cache = (uint8_t *)cache;
    return seqread_fill(reader, at & ~(uintptr_t)(EDSL_DMA_ALIGN - 1), at, cache_size);
}

void *edsl_sim_seqread_get(void *ptr, uint32_t inc, seqreader_t *reader, unsigned int cache_size) {
    if (inc > cache_size)
        fault_code(EDSL_ERR_SEQREAD_STEP, inc, cache_size);
    uint8_t *next = (uint8_t *)ptr + inc;
    if (next < reader->cache + cache_size)
        return next;
    uintptr_t at = reader->mram + (uintptr_t)(next - reader->cache);
    return seqread_fill(reader, at & ~(uintptr_t)(EDSL_DMA_ALIGN - 1), at, cache_size);
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

/* ---- printf --------------------------------------------------------------
 * As the SDK's DPU printf: each message goes to the DPU's log buffer, encoded
 * as the SDK's host library reads it (dpu_log_read): the format, with each
 * conversion as written ('i' as 'd', 'L' and 'z' dropped) and each run of text
 * as "%s", and a NUL; then the arguments: the runs of text and %s strings
 * NUL-terminated, %c one byte, %f %e %E %g %G doubles, any other conversion 4
 * bytes, or 8 with an 'l'. Bytes go to the buffer 8 at a time, the message's
 * last 8 padded with zeros. The buffer (STDOUT_BUFFER_INIT: in MRAM, before
 * the heap; else 1 MiB, the SDK's default) is circular: once it wrapped, the
 * host refuses to read it (DPU_ERR_LOG_BUFFER_TOO_SMALL); a message that
 * overwrites its own start stops the DPU (the SDK's printf overflow fault). */
extern const unsigned int __stdout_buffer_size __attribute__((weak));
#define EDSL_SIM_DEFAULT_STDOUT_BYTES 1048576u       /* (1 MiB) */

static uint8_t *log_buffer, *log_default;
static uint32_t log_size, log_wp, log_wrapped, log_wraps, log_start, log_cache_n;
static uint8_t log_cache[8];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void log_open(void) {
    stop_if_faulted();
    pthread_mutex_lock(&log_lock);
    if (!log_buffer) {                  /* no STDOUT_BUFFER_INIT: the default buffer */
        if (!log_default)
            log_default = calloc(1, EDSL_SIM_DEFAULT_STDOUT_BYTES);
        if (!log_default) {
            pthread_mutex_unlock(&log_lock);
            fault("printf: cannot allocate the log buffer");
        }
        log_buffer = log_default;
        log_size = EDSL_SIM_DEFAULT_STDOUT_BYTES;
    }
    log_cache_n = 0;
    log_wraps = 0;
    log_start = log_wp;
}

static void log_write_cache(void) {
    uint32_t at = log_wp;
    log_wp += 8;
    if (log_wp >= log_size) {
        log_wp = 0;
        log_wrapped = 1;
        log_wraps++;
    }
    memcpy(log_buffer + at, log_cache, 8);
}

static void log_byte(uint8_t byte) {
    log_cache[log_cache_n++] = byte;
    if (log_cache_n == 8) {
        log_write_cache();
        log_cache_n = 0;
    }
}

static void log_bytes(const void *data, unsigned int n) {
    for (unsigned int k = 0; k < n; k++)
        log_byte(((const uint8_t *)data)[k]);
}

static void log_close(void) {
    memset(log_cache + log_cache_n, 0, 8 - log_cache_n);
    log_write_cache();
    int overflow = log_wraps > 1 || (log_wraps == 1 && log_wp > log_start);
    pthread_mutex_unlock(&log_lock);
    if (overflow)
        fault("printf: a message longer than the DPU's log buffer of %u bytes (STDOUT_BUFFER_INIT)", log_size);
}

/* A conversion's letter ends it; 'l', 'L' and 'z' are its length. */
static int conversion_end(char c) {
    return isalpha((unsigned char)c) && c != 'l' && c != 'L' && c != 'z';
}

void edsl_sim_printf(const char *restrict format, ...) {
    log_open();
    int text = 0;
    for (const char *f = format; *f; f++) {
        if (*f == '%' && f[1] != '%') {
            if (!*++f)
                break;
            log_byte('%');
            for (; *f; f++) {
                if (*f == 'L' || *f == 'z')
                    continue;
                log_byte(*f == 'i' ? 'd' : (uint8_t)*f);
                if (conversion_end(*f))
                    break;
            }
            if (!*f)
                break;
            text = 0;
        } else {
            if (*f == '%')
                f++;
            if (!text)
                log_bytes("%s", 2);
            text = 1;
        }
    }
    log_byte(0);
    va_list ap;
    va_start(ap, format);
    text = 0;
    for (const char *f = format; *f; f++) {
        if (*f == '%' && f[1] != '%') {
            if (!*++f)
                break;
            if (text)
                log_byte(0);
            text = 0;
            int wide = 0;
            for (; *f && !conversion_end(*f); f++)
                wide |= *f == 'l' || *f == 'L';
            if (!*f)
                break;
            switch (*f) {
            case 's': {
                const char *s = va_arg(ap, const char *);
                log_bytes(s, (unsigned int)strlen(s) + 1);
                break;
            }
            case 'c':
                log_byte((uint8_t)va_arg(ap, int));
                break;
            case 'f': case 'e': case 'E': case 'g': case 'G': {
                double d = va_arg(ap, double);
                log_bytes(&d, 8);
                break;
            }
            default:
                if (wide) {
                    int64_t v = va_arg(ap, long long);
                    log_bytes(&v, 8);
                } else {
                    int32_t v = va_arg(ap, int);
                    log_bytes(&v, 4);
                }
            }
        } else {
            if (*f == '%')
                f++;
            log_byte((uint8_t)*f);
            text = 1;
        }
    }
    if (text)
        log_byte(0);
    va_end(ap);
    log_close();
}

void edsl_sim_puts(const char *str) {
    log_open();
    log_bytes("%s", 3);
    log_bytes(str, (unsigned int)strlen(str));
    log_bytes("\n", 2);
    log_close();
}

void edsl_sim_putchar(int c) {
    log_open();
    log_bytes("%c", 3);
    log_byte((uint8_t)c);
    log_close();
}

/* The DPU's log for the host (dpu_log_read): 0 if the program has none. */
__attribute__((visibility("default")))
int edsl_sim_log(const uint8_t **data, uint32_t *bytes, int *wrapped) {
    if (!log_buffer)
        return 0;
    *data = log_buffer;
    *bytes = log_wp;
    *wrapped = (int)log_wrapped;
    return 1;
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
    stuck = stuck_at_barriers = 0;
    memset(&handshakes, 0, sizeof handshakes);
    /* The log restarts at each boot; a declared buffer is the MRAM before the heap. */
    if (&__stdout_buffer_size && __stdout_buffer_size <= heap_offset) {
        log_buffer = mram;
        log_size = __stdout_buffer_size;
    } else {
        log_buffer = log_default;
        log_size = EDSL_SIM_DEFAULT_STDOUT_BYTES;
    }
    log_wp = log_wrapped = 0;
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
