// A helper of copy_twice.c, in a file of its own: its faults are reported here.
#include <mram.h>

static inline void copy_chunk(__mram_ptr int64_t *dst, __mram_ptr const int64_t *src, int64_t *buffer,
                              int64_t nbytes) {
    mram_read(src, buffer, nbytes);      // <helper-read>
    mram_write(buffer, dst, nbytes);
}
