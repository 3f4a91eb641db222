/* The UPMEM SDK's mram.h: DMA between MRAM and WRAM, the DMA rules checked
 * at the caller's line (8-byte aligned addresses, 8 to 2048 bytes, a multiple
 * of 8) and the launch's MRAM bounds. */
#ifndef EDSL_MRAM_H
#define EDSL_MRAM_H
#include "edsl_dpu.h"

/* (After a transfer the tasklet lets the next one run, where the model runs
 * them on one host thread: on a DPU a tasklet waits for its DMA while the
 * others run, and programs such as PrIM's SEL depend on that order.) */
static inline void __edsl_mram_read(const __mram_ptr void *from, void *to, unsigned int nb_of_bytes, int64_t site) {
    EDSL_MRAM_READ(__edsl_mram_address((int64_t)(uintptr_t)from), (int64_t)(uintptr_t)to, nb_of_bytes, site,
                   INT64_MAX, INT64_MAX);
    __edsl_stop_if_failed();
    EDSL_YIELD(EDSL_CTX());
}

static inline void __edsl_mram_write(const void *from, __mram_ptr void *to, unsigned int nb_of_bytes, int64_t site) {
    EDSL_MRAM_WRITE(__edsl_mram_address((int64_t)(uintptr_t)to), (int64_t)(uintptr_t)from, nb_of_bytes, site,
                    INT64_MAX, INT64_MAX);
    __edsl_stop_if_failed();
    EDSL_YIELD(EDSL_CTX());
}

/* The MRAM after the program's variables, to its end (the SDK's heap, which a
 * host program fills): a function run alone has one of its own, given by the
 * model (c_function); in a kernel the heap holds the kernel's arrays, and a
 * transfer there is an error that says so. */
#define DPU_MRAM_HEAP_POINTER ((__mram_ptr void *)(uintptr_t)((int64_t *)EDSL_CTX())[EDSL_CTX_C_MRAM_HEAP])

#define mram_read(from, to, nb_of_bytes) __edsl_mram_read((from), (to), (nb_of_bytes), EDSL_SITE)
#define mram_write(from, to, nb_of_bytes) __edsl_mram_write((from), (to), (nb_of_bytes), EDSL_SITE)
#endif
