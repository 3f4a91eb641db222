// Each tasklet copies its chunks of `chunk` bytes from src to dst, through a
// WRAM buffer, starting `shift` bytes into both arrays.
#include <defs.h>
#include <mram.h>
#include <barrier.h>

BARRIER_INIT(all, NR_TASKLETS);

void copy_chunks(__mram_ptr int64_t *dst, __mram_ptr const int64_t *src, int64_t nbytes, int64_t chunk,
                 int64_t shift) {
    __dma_aligned uint8_t buffer[2048];     // (larger transfers break the DMA rules)
    for (int64_t at = (int64_t)me() * chunk; at < nbytes; at += NR_TASKLETS * chunk) {
        mram_read((const __mram_ptr uint8_t *)src + shift + at, buffer, chunk);  // <read>
        mram_write(buffer, (__mram_ptr uint8_t *)dst + shift + at, chunk);       // <write>
    }
    barrier_wait(&all);
}
