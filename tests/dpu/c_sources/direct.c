// Loads and stores through __mram_ptr pointers, without mram_read or mram_write.
#include <defs.h>

typedef struct { int32_t a; float b; } pair;

// Each tasklet updates its blocks of 8 elements: no two tasklets change bytes
// of one 8-byte block (a direct store reads and writes back the whole block).
void direct(__mram_ptr int32_t *m, __mram_ptr int8_t *c, __mram_ptr double *d, __mram_ptr pair *p, int32_t n) {
    for (int32_t i = me() * 8; i < n; i += NR_TASKLETS * 8)
        for (int32_t k = i; k < i + 8 && k < n; k++) {
            m[k] = m[k] * 3 + 1;
            c[k] = (int8_t)(c[k] - 2);
            d[k] = d[k] * 0.5;
        }
    if (me() == 0) {
        p[1].b = p[0].b + (float)p[0].a;
        p[2] = p[1];
    }
}

// Reads element `k` of an array of int32: past the launch's MRAM where k is.
int32_t element(__mram_ptr const int32_t *m, int64_t k) {
    return m[k];  // <element>
}
