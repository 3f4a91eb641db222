/* mram_unaligned.h: copies at any MRAM address, of any size up to 2048 bytes. */
#include <defs.h>
#include <mram.h>
#include <mram_unaligned.h>

/* out[0 .. n - 1]: bytes at .. at + n - 1 of MRAM array `m`. */
void read_unaligned(uint8_t *out, __mram_ptr const uint8_t *m, unsigned int at, unsigned int n) {
    __dma_aligned uint8_t buffer[2048 + 16];
    if (me() != 0)
        return;
    const uint8_t *p = mram_read_unaligned(m + at, buffer, n);  // <read>
    for (unsigned int k = 0; k < n; k++)
        out[k] = p[k];
}

/* Bytes at .. at + n - 1 of MRAM array `m` set to values[0 .. n - 1], from a
 * WRAM copy equal to their address modulo 8 (plus `skew`: 0 on a DPU). */
void write_unaligned(__mram_ptr uint8_t *m, const uint8_t *values, unsigned int at, unsigned int n,
                     unsigned int skew) {
    __dma_aligned uint8_t buffer[2048 + 16];
    if (me() != 0)
        return;
    uint8_t *from = buffer + (((uintptr_t)(m + at) + skew) & 7);
    for (unsigned int k = 0; k < n; k++)
        from[k] = values[k];
    mram_write_unaligned(from, m + at, n);  // <write>
}
