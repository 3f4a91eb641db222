/* Included before a raw DPU function in C (edsl.codegen.upmem_c): the UPMEM
 * SDK's qualifiers, and the DPU model's runtime entry points, whose names the
 * compile defines (EDSL_ME...: edsl.target.dpu). A call that fails on the
 * hardware (a DMA rule broken, an assert) records the error at the caller's
 * line and stops the tasklet, as a DPU fault stops it. */
#ifndef EDSL_DPU_H
#define EDSL_DPU_H
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

#define __mram_ptr __attribute__((address_space(255)))
#define __mram __mram_ptr
#define __mram_noinit __mram_ptr
#define __dma_aligned __attribute__((aligned(8)))
#define __host
#define __keep __attribute__((used))
#define __noinline __attribute__((noinline))
/* A function of the model's mutex.h, handshake.h or barrier.h that a program
 * calls: not inlined, so that the time estimate counts a call of it as the
 * DPU's instructions for it, and none of its code, which is the model's
 * (edsl.codegen.upmem_c.SYNC_CALLS names them). */
#define EDSL_SYNC_CALL static __attribute__((noinline, unused))

/* A site: the file and line that made a call (EDSL_SITE_BASE: where C sites
 * start, above the EDSL ones; EDSL_FILE_INDEX: the file's, folded by clang). */
#define EDSL_SITE ((int64_t)EDSL_SITE_BASE + (int64_t)EDSL_FILE_INDEX * EDSL_FILE_SITES + __LINE__)

extern uint32_t EDSL_ME(void);
extern void EDSL_BARRIER(int64_t site);
extern void EDSL_MRAM_READ(int64_t mram, int64_t wram, int64_t n, int64_t site, int64_t mram_end,
                           int64_t wram_end);
extern void EDSL_MRAM_WRITE(int64_t mram, int64_t wram, int64_t n, int64_t site, int64_t mram_end,
                            int64_t wram_end);
extern void EDSL_ASSERT_FAIL(int64_t site);
extern void *EDSL_CTX(void);
/* (ctx, code, site, mram, wram, bytes, direction): record the tasklet's first error; its DPU stops. */
extern void EDSL_FAIL(void *ctx, int64_t code, int64_t site, int64_t mram, int64_t wram, int64_t n,
                      int64_t dir);
/* (ctx): let the DPU's next tasklet run where the model runs them on one host thread. */
extern void EDSL_YIELD(void *ctx);
/* (word, value): wait a while where *word == value, letting the others run; (word): wake its sleepers. */
extern void EDSL_WAIT_WORD(const uint32_t *word, uint32_t value);
extern void EDSL_WAKE_WORD(const uint32_t *word);
/* (kind, address, n, site): one entry of the tasklet's race log (nothing where races are not checked). */
extern void EDSL_RACE_NOTE(int64_t kind, int64_t address, int64_t n, int64_t site);

/* For the check of races between tasklets (edsl.dpu.races): what this
 * tasklet did so far is ordered before what a tasklet does after acquiring
 * synchronisation `number` of `object`; an acquire joins `releases` of them. */
static inline void __edsl_race_release(const void *object, uint32_t number) {
    EDSL_RACE_NOTE(EDSL_RACE_RELEASE, (int64_t)(uintptr_t)object, number, 0);
}
static inline void __edsl_race_acquire(const void *object, uint32_t number, int64_t releases) {
    EDSL_RACE_NOTE(EDSL_RACE_ACQUIRE, (int64_t)(uintptr_t)object, number, releases);
}

/* Stop the running tasklet: back to where __edsl_run entered the function
 * (the jump buffer in the tasklet's context slot EDSL_CTX_C_STOP). */
__attribute__((noreturn, noinline)) static void __edsl_stop(void) {
    void **buffer = (void **)(uintptr_t)((int64_t *)EDSL_CTX())[EDSL_CTX_C_STOP];
    __builtin_longjmp(buffer, 1);
}

/* Run the packed entry of the raw function on `args` until it returns or a
 * fault stops the tasklet. (This and the transfers below are weak: a kernel
 * calling several C functions links one copy.) */
__attribute__((weak)) void __edsl_run(void (*packed)(void **), void **args) {
    void *buffer[5];
    int64_t *ctx = (int64_t *)EDSL_CTX();
    int64_t outer = ctx[EDSL_CTX_C_STOP];
    ctx[EDSL_CTX_C_STOP] = (int64_t)(uintptr_t)buffer;
    if (__builtin_setjmp(buffer) == 0)
        packed(args);
    ctx[EDSL_CTX_C_STOP] = outer;
}

/* Stop the tasklet if its DPU has stopped on an error (its own or another
 * tasklet's): the state slot EDSL_DPU_FAILED the tasklets of a DPU share. */
static inline void __edsl_stop_if_failed(void) {
    int64_t *state = (int64_t *)(uintptr_t)((int64_t *)EDSL_CTX())[EDSL_CTX_DPU];
    if (__atomic_load_n(&state[EDSL_DPU_FAILED], __ATOMIC_ACQUIRE) != 0)
        __edsl_stop();
}

/* The state the tasklets of the running tasklet's DPU share (edsl.target.dpu's Dpu slots). */
static inline int64_t *__edsl_dpu_state(void) {
    return (int64_t *)(uintptr_t)((int64_t *)EDSL_CTX())[EDSL_CTX_DPU];
}

/* Record error `code` at `site` (with its operands) and stop the tasklet. */
__attribute__((noreturn)) static inline void __edsl_fail(int64_t code, int64_t site, int64_t mram, int64_t wram,
                                                         int64_t n) {
    EDSL_FAIL(EDSL_CTX(), code, site, mram, wram, n, 0);
    __edsl_stop();
}

/* A tasklet that waits lets the others run: it yields to its DPU's scheduler
 * where the model runs the tasklets on one host thread, else (a thread each)
 * gives its core away. */
int sched_yield(void);
static inline void __edsl_pause(void) {
    EDSL_YIELD(EDSL_CTX());
    if (__atomic_load_n(&__edsl_dpu_state()[EDSL_DPU_SCHEDULER], __ATOMIC_RELAXED) == 0)
        sched_yield();
}

/* The running tasklet blocks at `site` (mutex.h, handshake.h): counted in its
 * DPU's state (the COUNT slot, which the barrier counts too) by the caller,
 * under the guard that keeps the tasklet that will release it from doing so
 * before; a deadlock if every tasklet left now waits. Another tasklet counts
 * it out (__edsl_unblock) as it releases it. */
static inline void __edsl_block(int64_t site) {
    int64_t *state = __edsl_dpu_state();
    __atomic_store_n(&state[EDSL_DPU_WAIT_SITE], site, __ATOMIC_RELAXED);
    int64_t old = __atomic_fetch_add(&state[EDSL_DPU_COUNT], (int64_t)1 << EDSL_COUNT_BLOCKED_SHIFT,
                                     __ATOMIC_ACQ_REL);
    int64_t arrived = old & EDSL_COUNT_FIELD_MASK;
    int64_t blocked = ((old >> EDSL_COUNT_BLOCKED_SHIFT) & EDSL_COUNT_FIELD_MASK) + 1;
    int64_t finished = old >> EDSL_COUNT_FINISHED_SHIFT;
    if (arrived + blocked + finished == state[EDSL_DPU_TASKLETS])
        EDSL_FAIL(EDSL_CTX(), EDSL_ERR_SYNC_DEADLOCK, site, 0, 0, 0, 0);
}

static inline void __edsl_unblock(void) {
    __atomic_fetch_sub(&__edsl_dpu_state()[EDSL_DPU_COUNT], (int64_t)1 << EDSL_COUNT_BLOCKED_SHIFT,
                       __ATOMIC_ACQ_REL);
}

/* Wait (letting the others run) until `*word == value`; stop if the DPU
 * fails. Who changes the word wakes its sleepers (EDSL_WAKE_WORD). */
static inline void __edsl_wait_until(const uint32_t *word, uint32_t value) {
    for (uint32_t now; (now = __atomic_load_n(word, __ATOMIC_ACQUIRE)) != value;) {
        __edsl_stop_if_failed();
        EDSL_WAIT_WORD(word, now);
    }
}

/* The host address of MRAM address `address`: in a whole DPU program
 * (edsl.c_program) an address below the MRAM's size is an MRAM address of
 * its, as on a DPU (a host's offset used as one); other MRAM pointers are
 * the host's already. */
static inline int64_t __edsl_mram_address(int64_t address) {
    int64_t base = ((int64_t *)EDSL_CTX())[EDSL_CTX_C_MRAM_BASE];
    return base != 0 && (uint64_t)address < (uint64_t)EDSL_MRAM_BYTES ? base + address : address;
}

/* A load or store through a __mram_ptr pointer, rewritten into a call by
 * edsl.codegen.upmem_c: the 8-byte aligned blocks holding its `size` bytes
 * moved by the model's checked DMA (a store reads them, changes its bytes and
 * writes them back). */
__attribute__((used, noinline, weak)) uint64_t __edsl_mram_load(int64_t address, int64_t size, int64_t site) {
    address = __edsl_mram_address(address);
    int64_t start = address & ~(int64_t)7, end = (address + size + 7) & ~(int64_t)7;
    uint64_t blocks[2] = {0, 0}, value = 0;
    EDSL_MRAM_READ(start, (int64_t)(uintptr_t)blocks, end - start, site, INT64_MAX, INT64_MAX);
    __edsl_stop_if_failed();
    __builtin_memcpy(&value, (uint8_t *)blocks + (address - start), (size_t)size);
    return value;
}

__attribute__((used, noinline, weak)) void __edsl_mram_store(int64_t address, int64_t size, uint64_t value,
                                                       int64_t site) {
    address = __edsl_mram_address(address);
    int64_t start = address & ~(int64_t)7, end = (address + size + 7) & ~(int64_t)7;
    uint64_t blocks[2] = {0, 0};
    EDSL_MRAM_READ(start, (int64_t)(uintptr_t)blocks, end - start, site, INT64_MAX, INT64_MAX);
    __edsl_stop_if_failed();
    __builtin_memcpy((uint8_t *)blocks + (address - start), &value, (size_t)size);
    EDSL_MRAM_WRITE(start, (int64_t)(uintptr_t)blocks, end - start, site, INT64_MAX, INT64_MAX);
    __edsl_stop_if_failed();
}
#endif
