/* seqread.h: read `n` bytes from `in + offset` in steps of `step`, copying
 * them to `out`; `tell[k]`: seqread_tell's MRAM offset (from `in`) of step k. */
#ifdef CACHE
#define SEQREAD_CACHE_SIZE CACHE
#endif
#include <seqread.h>

void seqread_copy(__mram_ptr const uint8_t *in, uint8_t *out, uint32_t *tell, int offset, int n, int step) {
    seqreader_t reader;
    uint8_t *p = seqread_init(seqread_alloc(), (__mram_ptr void *)(in + offset), &reader);
    for (int i = 0, k = 0; i < n; i += step, k++) {
        tell[k] = (uint32_t)((__mram_ptr const uint8_t *)seqread_tell(p, &reader) - in);
        for (int j = 0; j < step && i + j < n; j++)
            out[i + j] = p[j];
        p = seqread_get(p, step, &reader);        // <step>
    }
}

void seqread_far(__mram_ptr const uint8_t *in, int offset) {
    seqreader_t reader;
    seqread_init(seqread_alloc(), (__mram_ptr void *)(in + offset), &reader);   // <init>
}
