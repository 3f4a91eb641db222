/* dpu_sim_rt.c -- the DPU side of this project's simulated DPU.
 *
 * Compiled with a DPU program (built with the host C compiler against the
 * stand-in headers defs.h, mram.h, barrier.h, alloc.h, mutex.h,
 * handshake.h, seqread.h, perfcounter.h) into one shared
 * object. The host library (dpu_sim_host.c) loads one private copy of that
 * object per simulated DPU, so every DPU has its own WRAM globals, and runs
 * `main` on NR_TASKLETS tasklets through edsl_sim_run, one at a time (see
 * "tasklets" below). Tasklets that all wait, at barriers, for mutexes or in
 * handshakes, with none left to end a wait, are a fault, where hardware would
 * hang. The limits are the DPU ABI's
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
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "alloc.h"
#include "barrier.h"
#include "defs.h"
#include "dma_rules.h"
#include "dpu_abi.h"
#include "error_messages.h"
#include "handshake.h"
#include "mram.h"
#include "mutex.h"
#include "perfcounter.h"
#include "seqread.h"

uint8_t *edsl_sim_mram_heap;
static uint8_t *mram_lo, *mram_hi;
static char fault_message[512];

/* ---- tasklets: one runs at a time ------------------------------------------
 * A DPU's tasklets share one pipeline, and a tasklet waiting for a DMA lets
 * the others run. So here the tasklets are contexts of one thread (ucontext),
 * one runs at a time, and the turn passes, in tasklet order, to the next that
 * can run: at each mram_read / mram_write (after the copy: the transfer's
 * time is the others'), where a tasklet waits (barrier, mutex, handshake)
 * and where it ends. Runs are thus the same every time, and code that relies
 * on the DPU's order -- a value read right after a barrier, before a slower
 * tasklet's DMA ends and it changes the value -- sees what the DPU gives. A
 * wait that no tasklet left to run can end is a deadlock, found at once
 * (hardware would hang). A tasklet that waits for another without any of
 * these calls (a loop on a WRAM variable) never lets it run: rather than
 * hang, the program stops with an error once a tasklet has kept the turn
 * EDSL_SIM_TURN_SECONDS seconds (see watch_turns). */
enum { READY, WAITING, DONE };
#define EDSL_SIM_STACK_BYTES (256u << 10)        /* a tasklet's stack: host code needs more than a DPU's */
static ucontext_t scheduler, contexts[NR_TASKLETS];
static sysname_t tasklet_id;                      /* the running tasklet */
static int state[NR_TASKLETS];
static int at_barrier[NR_TASKLETS];               /* WAITING at a barrier (else for a mutex or handshake) */
static const void *waits_on[NR_TASKLETS];         /* the barrier, mutex or notifier it waits for */
static int faulted;

sysname_t me(void) { return tasklet_id; }

/* Back to the scheduler for good: the tasklet ended or the DPU faulted. */
static void stop_tasklet(void) __attribute__((noreturn));
static void stop_tasklet(void) {
    setcontext(&scheduler);
    abort();                                      /* (setcontext returns only on error) */
}

/* Record the DPU's first fault and stop its tasklets. */
static void fault(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fault(const char *fmt, ...) {
    int n = snprintf(fault_message, sizeof fault_message, "tasklet %u: ", (unsigned)tasklet_id);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fault_message + n, sizeof fault_message - (size_t)n, fmt, ap);
    va_end(ap);
    faulted = 1;
    stop_tasklet();
}

/* Fault with the DPU model's words for error `code` (error_messages.h), after
 * `file`:`line` where one is given (mram_unaligned.h's faults too). */
void edsl_sim_fault_code(int64_t code, int64_t nbytes, int64_t mram, int64_t wram, const char *file, int line)
    __attribute__((noreturn));
void edsl_sim_fault_code(int64_t code, int64_t nbytes, int64_t mram, int64_t wram, const char *file, int line) {
    char message[400];
    struct edsl_error_operands operands = {.code = code, .nbytes = nbytes, .mram = mram, .wram = wram};
    edsl_error_message(message, sizeof message, &operands);
    if (file)
        fault("%s:%d: %s", file, line, message);
    fault("%s", message);
}

static void fault_code(int64_t code, int64_t nbytes, int64_t mram) __attribute__((noreturn));
static void fault_code(int64_t code, int64_t nbytes, int64_t mram) {
    edsl_sim_fault_code(code, nbytes, mram, 0, NULL, 0);
}

/* Let the other tasklets run; back when the caller's turn comes again. */
static void switch_turn(void) { swapcontext(&contexts[tasklet_id], &scheduler); }

/* Wait, at a barrier or not, until another tasklet makes the caller READY. */
static void wait_for(const void *what, int barrier) {
    state[tasklet_id] = WAITING;
    at_barrier[tasklet_id] = barrier;
    waits_on[tasklet_id] = what;
    switch_turn();
}

static void make_ready(unsigned int t) {
    state[t] = READY;
    waits_on[t] = NULL;
}

void halt(void) {
    state[tasklet_id] = DONE;
    stop_tasklet();
}

/* The program's MRAM variables (defs.h: __mram, __mram_noinit), kept apart from its MRAM. */
extern uint8_t __start_edsl_mram[] __attribute__((weak, visibility("hidden")));
extern uint8_t __stop_edsl_mram[] __attribute__((weak, visibility("hidden")));
/* The section's first bytes (this file is linked first): no variable of the
 * program then shares its address with __start_edsl_mram, a symbol of size 0
 * that dladdr1 could name instead of it. */
__attribute__((section("edsl_mram"), aligned(8), used)) static uint64_t edsl_sim_mram_first;

__attribute__((visibility("default")))
void edsl_sim_mram_variables(uint8_t **lo, uint8_t **hi) {
    *lo = __start_edsl_mram;
    *hi = __stop_edsl_mram;
}

static int in_mram_variables(const uint8_t *p, unsigned int n) {
    return __start_edsl_mram && p >= __start_edsl_mram && p + n <= __stop_edsl_mram;
}

static void check_dma(const char *what, const void *mram, const void *wram, unsigned int n, const char *file,
                      int line) {
    const uint8_t *base = in_mram_variables(mram, 0) ? __start_edsl_mram : mram_lo;
    uint64_t m = (uint64_t)((const uint8_t *)mram - base), w = (uint64_t)(uintptr_t)wram;
    char rule[256];
    if (edsl_dma_rules_broken(m, w, n)) {
        edsl_dma_violation(rule, sizeof rule, m, w, n);
        fault("%s:%d: %s: %s", file, line, what, rule);
    }
    if (!in_mram_variables(mram, n) && ((const uint8_t *)mram < mram_lo || (const uint8_t *)mram + n > mram_hi))
        fault("%s:%d: %s: %u bytes at MRAM address %#lx are outside the DPU's %d MiB MRAM", file, line, what, n,
              (unsigned long)m, EDSL_MRAM_BYTES >> 20);
}

/* An MRAM address as the DPU has it (0 .. the MRAM's size: what the host's
 * offsets from DPU_MRAM_HEAP_POINTER are when the program has no MRAM
 * variables), or a pointer into the running DPU's MRAM (DPU_MRAM_HEAP_POINTER
 * and pointers from it, which DPU code may also load and store through):
 * the host pointer. (The MRAM's window lies above its size: no overlap.) */
static const uint8_t *mram_host(const void *mram) {
    uintptr_t a = (uintptr_t)mram;
    return a < (uintptr_t)EDSL_MRAM_BYTES ? mram_lo + a : (const uint8_t *)mram;
}

/* ---- counting, for the time estimate --------------------------------------
 * Each tasklet's transfers (reads, bytes read, writes, bytes written) are
 * counted; a program built for counting (edsl.export.counting_build) also adds
 * each block it executes to its tasklet's row of counters, which the function
 * the build names EDSL_SIM_COUNTERS gives it (edsl_sim_counter_slots a row). */
enum { DMA_READS, DMA_READ_BYTES, DMA_WRITES, DMA_WRITE_BYTES, DMA_COUNTS };
static uint64_t dma_counts[NR_TASKLETS][DMA_COUNTS];
extern const unsigned int edsl_sim_counter_slots __attribute__((weak));
static int64_t *counters;                        /* [NR_TASKLETS][edsl_sim_counter_slots] */

#ifdef EDSL_SIM_COUNTERS
int64_t *EDSL_SIM_COUNTERS(void) { return counters + (size_t)tasklet_id * edsl_sim_counter_slots; }
#endif

/* The last run's counts, for the host (0 slots: the program counts no blocks). */
__attribute__((visibility("default")))
void edsl_sim_counts(const int64_t **blocks, unsigned int *slots, const uint64_t **dma, unsigned int *tasklets) {
    *blocks = counters;
    *slots = &edsl_sim_counter_slots && counters ? edsl_sim_counter_slots : 0;
    *dma = &dma_counts[0][0];
    *tasklets = NR_TASKLETS;
}

/* The DMA's copy, then the others' turn while it would take its time. */
static void dma(void *to, const void *from, unsigned int n, int write) {
    memcpy(to, from, n);
    dma_counts[tasklet_id][write ? DMA_WRITES : DMA_READS]++;
    dma_counts[tasklet_id][write ? DMA_WRITE_BYTES : DMA_READ_BYTES] += n;
    switch_turn();
}

void edsl_sim_mram_read(const __mram_ptr void *from, void *to, unsigned int nb_of_bytes, const char *file, int line) {
    from = mram_host(from);
    check_dma("mram_read", from, to, nb_of_bytes, file, line);
    dma(to, from, nb_of_bytes, 0);
}

void edsl_sim_mram_write(const void *from, __mram_ptr void *to, unsigned int nb_of_bytes, const char *file,
                         int line) {
    to = (__mram_ptr void *)(uintptr_t)mram_host(to);
    check_dma("mram_write", to, from, nb_of_bytes, file, line);
    dma(to, from, nb_of_bytes, 1);
}

/* ---- barriers ------------------------------------------------------------- */
void barrier_wait(barrier_t *b) {
    if (b->count <= 1) {                         /* the last to arrive: the others go on */
        for (unsigned int t = 0; t < NR_TASKLETS; t++)
            if (state[t] == WAITING && waits_on[t] == b)
                make_ready(t);
        b->count = b->initial_count;
    } else {
        b->count--;
        wait_for(b, 1);
    }
}

/* ---- mutexes: a DPU's are bits of its atomic memory, named by address ------
 * (a mutex_id_t never set, as zero, is one mutex too, as on the DPU). */
static struct {
    mutex_id_t id;
    unsigned int owner;                          /* the holder's tasklet id + 1, 0 if free */
} mutexes[EDSL_SIM_MUTEXES];
static unsigned int nr_mutexes;

/* The state of mutex `id`. */
static unsigned int *mutex_owner(mutex_id_t id) {
    for (unsigned int k = 0; k < nr_mutexes; k++)
        if (mutexes[k].id == id)
            return &mutexes[k].owner;
    if (nr_mutexes == EDSL_SIM_MUTEXES)
        fault("mutex_lock: more than the DPU's %d mutexes", EDSL_SIM_MUTEXES);
    mutexes[nr_mutexes].id = id;
    mutexes[nr_mutexes].owner = 0;
    return &mutexes[nr_mutexes++].owner;
}

bool mutex_trylock(mutex_id_t mutex) {
    unsigned int *owner = mutex_owner(mutex);
    bool taken = *owner == 0;
    if (taken)
        *owner = tasklet_id + 1;
    return taken;
}

void mutex_lock(mutex_id_t mutex) {
    unsigned int *owner = mutex_owner(mutex);
    if (*owner == tasklet_id + 1)
        fault_code(EDSL_ERR_MUTEX_RELOCK, 0, 0);
    if (*owner == 0)
        *owner = tasklet_id + 1;
    else
        wait_for(owner, 0);                      /* (mutex_unlock hands it over) */
}

void mutex_unlock(mutex_id_t mutex) {
    unsigned int *owner = mutex_owner(mutex);
    if (*owner != tasklet_id + 1)
        fault_code(EDSL_ERR_MUTEX_UNLOCK, 0, 0);
    *owner = 0;
    for (unsigned int k = 1; k < NR_TASKLETS; k++) {   /* to the next waiter after the holder */
        unsigned int t = (tasklet_id + k) % NR_TASKLETS;
        if (state[t] == WAITING && waits_on[t] == owner) {
            *owner = t + 1;
            make_ready(t);
            break;
        }
    }
}

/* ---- handshakes -----------------------------------------------------------
 * A tasklet in handshake_wait_for(n) waits on awaited[n]; tasklet n in
 * handshake_notify with none waiting for it, on notifying[n]. A notifier
 * that waited goes on before the tasklet that released it: on the DPU it
 * only has to return, while the other goes on with its work (a DMA the
 * notifier then issues is the first of the two). */
static char awaited[NR_TASKLETS], notifying[NR_TASKLETS];

/* The tasklet waiting on `what`, or -1. */
static int waiter_on(const void *what) {
    for (unsigned int t = 0; t < NR_TASKLETS; t++)
        if (state[t] == WAITING && waits_on[t] == what)
            return (int)t;
    return -1;
}

int handshake_wait_for(sysname_t notifier) {
    if (notifier >= NR_TASKLETS || notifier == tasklet_id)
        fault_code(EDSL_ERR_HANDSHAKE_WHOM, 0, notifier);
    if (waiter_on(&awaited[notifier]) >= 0) {
            fault_code(EDSL_ERR_HANDSHAKE_BUSY, 0, notifier);
    }
    if (waiter_on(&notifying[notifier]) >= 0) {
        make_ready(notifier);
        switch_turn();                           /* (the notifier goes on first, as on the DPU) */
    } else
        wait_for(&awaited[notifier], 0);
    return 0;
}

void handshake_notify(void) {
    int waiter = waiter_on(&awaited[tasklet_id]);
    if (waiter >= 0)
        make_ready((unsigned int)waiter);
    else
        wait_for(&notifying[tasklet_id], 0);
}

/* ---- perfcounter: no DPU cycles to count -------------------------------- */
perfcounter_t edsl_sim_no_cycles(int code, const char *file, int line) {
    edsl_sim_fault_code(code, 0, 0, 0, file, line);
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
    uintptr_t at = (uintptr_t)mram_host(mram_addr);
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

void *mem_alloc(size_t size) {
    size_t start = EDSL_ALIGN_UP(wram_heap_used);
    if (size > EDSL_WRAM_BYTES || start + size > EDSL_WRAM_BYTES) {
        fault("mem_alloc(%zu): the WRAM heap is exhausted (%zu of %d bytes used)", size, start,
              EDSL_WRAM_BYTES);
    }
    wram_heap_used = start + size;
    return wram_heap + start;
}

void mem_reset(void) { wram_heap_used = 0; }

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

static void log_open(void) {
    if (!log_buffer) {                  /* no STDOUT_BUFFER_INIT: the default buffer */
        if (!log_default)
            log_default = calloc(1, EDSL_SIM_DEFAULT_STDOUT_BYTES);
        if (!log_default) {
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

static int (*program_entry)(void);

/* ---- a tasklet that keeps the turn ----------------------------------------
 * A thread beside the run counts the turns given; where none was for
 * EDSL_SIM_TURN_SECONDS (the environment's, else 60: on a DPU that much host
 * work between two DMAs would take hours), the running tasklet waits for
 * another in a way the stand-ins cannot run, and the program ends, saying so. */
#define EDSL_SIM_TURN_SECONDS 60
static unsigned long turns;
static int watching;
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watch_cond = PTHREAD_COND_INITIALIZER;

static void *watch_turns(void *arg) {
    (void)arg;
    const char *env = getenv("EDSL_SIM_TURN_SECONDS");
    long limit = env && atol(env) > 0 ? atol(env) : EDSL_SIM_TURN_SECONDS, still = 0;
    unsigned long seen = __atomic_load_n(&turns, __ATOMIC_RELAXED);
    pthread_mutex_lock(&watch_lock);
    while (watching) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_sec += 1;
        pthread_cond_timedwait(&watch_cond, &watch_lock, &t);
        unsigned long now = __atomic_load_n(&turns, __ATOMIC_RELAXED);
        still = now == seen ? still + 1 : 0;
        seen = now;
        if (watching && still >= limit) {
            fprintf(stderr, "[dpu sim] tasklet %u kept the turn %ld s without a DMA, a wait or its end: the "
                    "stand-ins switch tasklets only there, so a tasklet that waits for another in a loop "
                    "(on a WRAM variable) never lets it run; this program cannot run on them\n",
                    (unsigned)__atomic_load_n(&tasklet_id, __ATOMIC_RELAXED), limit);
            _exit(EXIT_FAILURE);
        }
    }
    pthread_mutex_unlock(&watch_lock);
    return NULL;
}

static void tasklet_main(void) {
    program_entry();
    state[tasklet_id] = DONE;                     /* (then uc_link: the scheduler) */
}

/* The next tasklet after `t`, in tasklet order, that can run (`t` last), or
 * -1; then `*deadlock` is the error code where tasklets are left waiting. */
static int next_tasklet(unsigned int t, int64_t *deadlock) {
    int waiting = 0, at_barriers = 1;
    for (unsigned int k = 1; k <= NR_TASKLETS; k++) {
        unsigned int u = (t + k) % NR_TASKLETS;
        if (state[u] == READY)
            return (int)u;
        if (state[u] == WAITING) {
            waiting = 1;
            at_barriers &= at_barrier[u];
        }
    }
    *deadlock = !waiting ? 0 : at_barriers ? EDSL_ERR_DEADLOCK : EDSL_ERR_SYNC_DEADLOCK;
    return -1;
}

/* Run `entry` (the program's main) on NR_TASKLETS tasklets over `mram`.
 * Returns 0, or 1 after a fault (its description in `message`). */
__attribute__((visibility("default")))
int edsl_sim_run(int (*entry)(void), uint8_t *mram, size_t mram_bytes, size_t heap_offset,
                 char *message, size_t message_size) {
    mram_lo = mram;
    mram_hi = mram + mram_bytes;
    edsl_sim_mram_heap = mram + heap_offset;
    program_entry = entry;
    faulted = 0;
    fault_message[0] = 0;
    wram_heap_used = 0;
    nr_mutexes = 0;
    memset(dma_counts, 0, sizeof dma_counts);
    if (&edsl_sim_counter_slots && edsl_sim_counter_slots) {
        size_t bytes = (size_t)NR_TASKLETS * edsl_sim_counter_slots * sizeof *counters;
        if (!counters && !(counters = malloc(bytes))) {
            snprintf(message, message_size, "cannot allocate the tasklets' block counters");
            return 1;
        }
        memset(counters, 0, bytes);
    }
    /* The log restarts at each boot; a declared buffer is the MRAM before the heap. */
    if (&__stdout_buffer_size && __stdout_buffer_size <= heap_offset) {
        log_buffer = mram;
        log_size = __stdout_buffer_size;
    } else {
        log_buffer = log_default;
        log_size = EDSL_SIM_DEFAULT_STDOUT_BYTES;
    }
    log_wp = log_wrapped = 0;
    /* The stacks, each above a page no access may touch (an overflow faults). */
    size_t page = (size_t)sysconf(_SC_PAGESIZE), each = page + EDSL_SIM_STACK_BYTES;
    uint8_t *stacks = mmap(NULL, each * NR_TASKLETS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stacks == MAP_FAILED) {
        snprintf(message, message_size, "cannot allocate the tasklets' stacks");
        return 1;
    }
    for (int t = 0; t < NR_TASKLETS; t++) {
        mprotect(stacks + each * (size_t)t, page, PROT_NONE);
        getcontext(&contexts[t]);
        contexts[t].uc_stack.ss_sp = stacks + each * (size_t)t + page;
        contexts[t].uc_stack.ss_size = EDSL_SIM_STACK_BYTES;
        contexts[t].uc_link = &scheduler;
        makecontext(&contexts[t], tasklet_main, 0);
        state[t] = READY;
        waits_on[t] = NULL;
    }
    pthread_t watcher;
    watching = 1;
    int watched = pthread_create(&watcher, NULL, watch_turns, NULL) == 0;
    int64_t deadlock = 0;
    int t = 0;                                    /* tasklet 0 first, as the DPU boots it */
    while (!faulted && t >= 0) {
        __atomic_store_n(&tasklet_id, (sysname_t)t, __ATOMIC_RELAXED);
        swapcontext(&scheduler, &contexts[t]);
        __atomic_add_fetch(&turns, 1, __ATOMIC_RELAXED);
        if (!faulted)
            t = next_tasklet((unsigned int)t, &deadlock);
        if (deadlock) {                           /* (named after the tasklet that waited last) */
            char text[400];
            struct edsl_error_operands operands = {.code = deadlock};
            edsl_error_message(text, sizeof text, &operands);
            snprintf(fault_message, sizeof fault_message, "tasklet %u: %s", (unsigned)tasklet_id, text);
            faulted = 1;
        }
    }
    pthread_mutex_lock(&watch_lock);
    watching = 0;
    pthread_cond_signal(&watch_cond);
    pthread_mutex_unlock(&watch_lock);
    if (watched)
        pthread_join(watcher, NULL);
    munmap(stacks, each * NR_TASKLETS);
    if (faulted && message && message_size) {
        strncpy(message, fault_message, message_size - 1);
        message[message_size - 1] = 0;
    }
    return faulted ? 1 : 0;
}

__attribute__((visibility("default")))
int edsl_sim_nr_tasklets(void) { return NR_TASKLETS; }
