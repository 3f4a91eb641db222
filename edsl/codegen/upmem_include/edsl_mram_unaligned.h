/* mram_unaligned.h's copies, written once for the DPU model (mram_unaligned.h
 * here) and the SDK stand-ins (edsl/export/sdk/mram_unaligned.h), over the
 * includer's checked transfers of the 8-byte blocks that hold the bytes:
 *   EDSL_UNALIGNED_WHERE        the parameters that say where the call is
 *   EDSL_UNALIGNED_PASS         ... passed on
 *   EDSL_UNALIGNED_READ(mram, wram, n), EDSL_UNALIGNED_WRITE(wram, mram, n)
 *                               a checked transfer (uintptr_t MRAM address)
 *   EDSL_UNALIGNED_FAIL(code, mram, wram, n)
 *                               a fault (abi.Err): the call then returns at once
 *                               (where the fault does not stop the tasklet, it
 *                               has stopped the DPU's transfers)
 * mram_read_unaligned(from, buffer, n) reads the blocks holding
 * [from, from + n) into `buffer` (8-byte aligned WRAM, room for n + 16
 * bytes) and returns where `from`'s byte is in it.
 * mram_write_unaligned(from, to, n) writes [to, to + n) from WRAM `from`,
 * which must be equal to `to` modulo 8 (else a fault, as on a DPU); the bytes
 * of the first and last blocks outside the range are read and written back
 * as they were (not atomically, as on a DPU).
 * Either of more than DMA_MAX_BYTES is an error at the caller's line. */
#ifndef EDSL_MRAM_UNALIGNED_IMPL_H
#define EDSL_MRAM_UNALIGNED_IMPL_H

#define __EDSL_BLOCK_DOWN(a) ((a) & ~(uintptr_t)(EDSL_DMA_ALIGN - 1))

/* [lo, hi) of MRAM (8-byte aligned) and WRAM `wram`, in transfers of at most DMA_MAX_BYTES. */
static inline void __edsl_unaligned_blocks(int write, uintptr_t lo, uintptr_t hi, uint8_t *wram, EDSL_UNALIGNED_WHERE) {
    for (uintptr_t a = lo; a < hi; a += EDSL_DMA_MAX_BYTES) {
        unsigned int n = hi - a < EDSL_DMA_MAX_BYTES ? (unsigned int)(hi - a) : EDSL_DMA_MAX_BYTES;
        if (write)
            EDSL_UNALIGNED_WRITE(wram + (a - lo), a, n);
        else
            EDSL_UNALIGNED_READ(a, wram + (a - lo), n);
    }
}

static inline void *__edsl_mram_read_unaligned(const __mram_ptr void *from, void *buffer, unsigned int nb_of_bytes,
                                               EDSL_UNALIGNED_WHERE) {
    uintptr_t at = (uintptr_t)from;
    if (nb_of_bytes > EDSL_DMA_MAX_BYTES) {
        EDSL_UNALIGNED_FAIL(EDSL_ERR_UNALIGNED_SIZE, 0, 0, nb_of_bytes);
        return buffer;
    }
    uintptr_t lo = __EDSL_BLOCK_DOWN(at), hi = __EDSL_BLOCK_DOWN(at + nb_of_bytes + EDSL_DMA_ALIGN - 1);
    __edsl_unaligned_blocks(0, lo, hi, (uint8_t *)buffer, EDSL_UNALIGNED_PASS);
    return (uint8_t *)buffer + (at - lo);
}

/* The block at `block` with the bytes of [at, end) it holds taken from WRAM `from` (at's). */
static inline void __edsl_unaligned_patch(uintptr_t block, uintptr_t at, uintptr_t end, const uint8_t *from,
                                          EDSL_UNALIGNED_WHERE) {
    __attribute__((aligned(EDSL_DMA_ALIGN))) uint8_t bytes[EDSL_DMA_ALIGN];
    EDSL_UNALIGNED_READ(block, bytes, EDSL_DMA_ALIGN);
    for (uintptr_t a = at > block ? at : block; a < end && a < block + EDSL_DMA_ALIGN; a++)
        bytes[a - block] = from[a - at];
    EDSL_UNALIGNED_WRITE(bytes, block, EDSL_DMA_ALIGN);
}

static inline void __edsl_mram_write_unaligned(const void *from, __mram_ptr void *to, unsigned int nb_of_bytes,
                                               EDSL_UNALIGNED_WHERE) {
    uintptr_t at = (uintptr_t)to, end = at + nb_of_bytes;
    if (nb_of_bytes > EDSL_DMA_MAX_BYTES) {
        EDSL_UNALIGNED_FAIL(EDSL_ERR_UNALIGNED_SIZE, 0, 0, nb_of_bytes);
        return;
    }
    if ((at ^ (uintptr_t)from) & (EDSL_DMA_ALIGN - 1)) {
        EDSL_UNALIGNED_FAIL(EDSL_ERR_UNALIGNED_MISMATCH, (int64_t)at, (int64_t)(uintptr_t)from, nb_of_bytes);
        return;
    }
    if (nb_of_bytes == 0)
        return;
    /* whole blocks [lo, hi) straight from WRAM (equal to MRAM modulo 8); the blocks at either end
     * that the range covers only in part, patched */
    uintptr_t lo = __EDSL_BLOCK_DOWN(at + EDSL_DMA_ALIGN - 1), hi = __EDSL_BLOCK_DOWN(end);
    if (lo >= hi) {
        __edsl_unaligned_patch(__EDSL_BLOCK_DOWN(at), at, end, (const uint8_t *)from, EDSL_UNALIGNED_PASS);
        if (__EDSL_BLOCK_DOWN(end - 1) != __EDSL_BLOCK_DOWN(at))
            __edsl_unaligned_patch(__EDSL_BLOCK_DOWN(end - 1), at, end, (const uint8_t *)from, EDSL_UNALIGNED_PASS);
        return;
    }
    if (at < lo)
        __edsl_unaligned_patch(lo - EDSL_DMA_ALIGN, at, end, (const uint8_t *)from, EDSL_UNALIGNED_PASS);
    __edsl_unaligned_blocks(1, lo, hi, (uint8_t *)from + (lo - at), EDSL_UNALIGNED_PASS);
    if (hi < end)
        __edsl_unaligned_patch(hi, at, end, (const uint8_t *)from, EDSL_UNALIGNED_PASS);
}
#endif
