#include <defs.h>
#include "include/chunks.h"

void copy_twice(__mram_ptr int64_t *dst, __mram_ptr const int64_t *src, int64_t nbytes) {
    __dma_aligned int64_t buffer[256];
    copy_chunk(dst, src, buffer, nbytes);
    mram_read(src, buffer, nbytes);      // <main-read>
}
