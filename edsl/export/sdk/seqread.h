/* seqread.h -- this project's stand-in for the UPMEM SDK header of the same
 * name: a sequential reader of MRAM through a WRAM cache of
 * 2 * SEQREAD_CACHE_SIZE bytes (seqread_alloc takes it with mem_alloc).
 * seqread_init and seqread_get give a WRAM pointer to the byte the reader is
 * at, SEQREAD_CACHE_SIZE bytes readable from it; each refill is a checked
 * mram_read (stopping at the end of the DPU's MRAM); a step over
 * SEQREAD_CACHE_SIZE stops the DPU with the model's words (dpu_sim_rt.c). */
#ifndef EDSL_SIM_SEQREAD_H
#define EDSL_SIM_SEQREAD_H

#include "alloc.h"
#include "defs.h"

#ifndef SEQREAD_CACHE_SIZE
#define SEQREAD_CACHE_SIZE 256
#endif

typedef uintptr_t seqreader_buffer_t;
typedef struct {
    uint8_t *cache;          /* the WRAM cache, 2 * SEQREAD_CACHE_SIZE bytes */
    uintptr_t mram;          /* the MRAM address of its first byte */
} seqreader_t;

void *edsl_sim_seqread_init(seqreader_buffer_t cache, __mram_ptr void *mram_addr, seqreader_t *reader,
                            unsigned int cache_size);
void *edsl_sim_seqread_get(void *ptr, uint32_t inc, seqreader_t *reader, unsigned int cache_size);

static inline __mram_ptr void *seqread_tell(void *ptr, seqreader_t *reader) {
    return (__mram_ptr void *)(reader->mram + (uintptr_t)((uint8_t *)ptr - reader->cache));
}

#define seqread_alloc() ((seqreader_buffer_t)mem_alloc(2 * SEQREAD_CACHE_SIZE))
#define seqread_init(cache, mram_addr, reader) \
    edsl_sim_seqread_init((cache), (mram_addr), (reader), SEQREAD_CACHE_SIZE)
#define seqread_get(ptr, inc, reader) edsl_sim_seqread_get((ptr), (inc), (reader), SEQREAD_CACHE_SIZE)

#endif
