/* The UPMEM SDK's mram_unaligned.h: mram_read_unaligned and
 * mram_write_unaligned (edsl_mram_unaligned.h says what they do) over the
 * model's checked transfers (mram.h), at the caller's line. */
#ifndef EDSL_MRAM_UNALIGNED_H
#define EDSL_MRAM_UNALIGNED_H
#include "mram.h"

#define EDSL_UNALIGNED_WHERE int64_t site
#define EDSL_UNALIGNED_PASS site
#define EDSL_UNALIGNED_READ(mram, wram, n) __edsl_mram_read((const __mram_ptr void *)(mram), (wram), (n), site)
#define EDSL_UNALIGNED_WRITE(wram, mram, n) __edsl_mram_write((wram), (__mram_ptr void *)(mram), (n), site)
#define EDSL_UNALIGNED_FAIL(code, mram, wram, n) __edsl_fail((code), site, (mram), (wram), (n))
#include "edsl_mram_unaligned.h"

#define mram_read_unaligned(from, buffer, nb_of_bytes) \
    __edsl_mram_read_unaligned((from), (buffer), (nb_of_bytes), EDSL_SITE)
#define mram_write_unaligned(from, to, nb_of_bytes) \
    __edsl_mram_write_unaligned((from), (to), (nb_of_bytes), EDSL_SITE)
#endif
