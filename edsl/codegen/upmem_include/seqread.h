/* The UPMEM SDK's seqread.h: a sequential reader of MRAM through a WRAM
 * cache of 2 * SEQREAD_CACHE_SIZE bytes (seqread_alloc takes it from the
 * heap, alloc.h). seqread_init(cache, mram, reader) and
 * seqread_get(pointer, step, reader) give a WRAM pointer to the byte the
 * reader is at, with SEQREAD_CACHE_SIZE bytes readable from it;
 * seqread_tell(pointer, reader) is that byte's MRAM address. Each refill
 * of the cache is the model's checked mram_read at the caller's line (the
 * DMA rules, the launch's MRAM); a refill stops at the end of the MRAM array
 * it reads (on a DPU it reads on into the MRAM beyond, which the model does
 * not have), and a refill that starts within SEQREAD_CACHE_SIZE bytes past
 * an array's end (a loop's last step) reads nothing: bytes of the cache past
 * the array are not what a DPU would read there.
 * A step over SEQREAD_CACHE_SIZE bytes (undefined on a DPU) is an error at
 * its line. SEQREAD_CACHE_SIZE may be defined before the include
 * (256 otherwise); the model fills the cache with one transfer, so it is a
 * multiple of 8 of at most half the largest transfer. */
#ifndef EDSL_SEQREAD_H
#define EDSL_SEQREAD_H
#include "edsl_dpu.h"
#include "alloc.h"

#ifndef SEQREAD_CACHE_SIZE
#define SEQREAD_CACHE_SIZE 256
#endif
_Static_assert(SEQREAD_CACHE_SIZE >= EDSL_DMA_ALIGN && SEQREAD_CACHE_SIZE % EDSL_DMA_ALIGN == 0 &&
               2 * SEQREAD_CACHE_SIZE <= EDSL_DMA_MAX_BYTES,
               "the DPU model's SEQREAD_CACHE_SIZE: a multiple of 8, at most half the largest transfer");

typedef uintptr_t seqreader_buffer_t;
typedef struct {
    uint8_t *cache;         /* the WRAM cache, 2 * SEQREAD_CACHE_SIZE bytes */
    uintptr_t mram;         /* the MRAM address of its first byte */
} seqreader_t;

/* Fill the reader's cache from MRAM address `mram` (8-byte aligned), as far
 * as the MRAM array holding it goes; the cache pointer of byte `at`. */
static inline void *__edsl_seqread_fill(seqreader_t *reader, uintptr_t mram, uintptr_t at, int64_t site) {
    int64_t *ctx = (int64_t *)EDSL_CTX();
    const int64_t *regions = (const int64_t *)(uintptr_t)ctx[EDSL_CTX_REGIONS];
    int64_t n = 2 * SEQREAD_CACHE_SIZE, a = (int64_t)mram, inside = 0, past = 0;
    for (int64_t k = 0; k < ctx[EDSL_CTX_NREGIONS]; k++) {
        int64_t lo = regions[2 * k], hi = regions[2 * k + 1];
        if (lo <= a && a < hi) {
            inside = 1;
            n = hi - a < n ? hi - a : n;
        }
        past |= hi <= a && a <= hi + SEQREAD_CACHE_SIZE;
    }
    /* (a reader that stepped just past an array's end reads nothing, as a loop's last step does) */
    if (inside || !past) {
        EDSL_MRAM_READ(a, (int64_t)(uintptr_t)reader->cache, n, site, INT64_MAX, INT64_MAX);
        __edsl_stop_if_failed();
    }
    reader->mram = mram;
    return reader->cache + (at - mram);
}

static inline void *__edsl_seqread_init(seqreader_buffer_t cache, __mram_ptr void *mram_addr, seqreader_t *reader,
                                        int64_t site) {
    uintptr_t at = (uintptr_t)mram_addr;
    reader->cache = (uint8_t *)cache;
    return __edsl_seqread_fill(reader, at & ~(uintptr_t)(EDSL_DMA_ALIGN - 1), at, site);
}

static inline void *__edsl_seqread_get(void *ptr, uint32_t inc, seqreader_t *reader, int64_t site) {
    if (inc > SEQREAD_CACHE_SIZE)
        __edsl_fail(EDSL_ERR_SEQREAD_STEP, site, SEQREAD_CACHE_SIZE, 0, inc);
    uint8_t *next = (uint8_t *)ptr + inc;
    if (next < reader->cache + SEQREAD_CACHE_SIZE)
        return next;
    uintptr_t at = reader->mram + (uintptr_t)(next - reader->cache);
    return __edsl_seqread_fill(reader, at & ~(uintptr_t)(EDSL_DMA_ALIGN - 1), at, site);
}

static inline __mram_ptr void *seqread_tell(void *ptr, seqreader_t *reader) {
    return (__mram_ptr void *)(reader->mram + (uintptr_t)((uint8_t *)ptr - reader->cache));
}

#define seqread_alloc() ((seqreader_buffer_t)__edsl_mem_alloc(2 * SEQREAD_CACHE_SIZE, EDSL_SITE))
#define seqread_init(cache, mram_addr, reader) __edsl_seqread_init((cache), (mram_addr), (reader), EDSL_SITE)
#define seqread_get(ptr, inc, reader) __edsl_seqread_get((ptr), (inc), (reader), EDSL_SITE)
#endif
