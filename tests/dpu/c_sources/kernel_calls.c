// Functions Triton kernels call with fl.call (tests/dpu/test_c_calls.py).
#include <defs.h>
#include <mram.h>
#include <barrier.h>
#include <stdio.h>

BARRIER_INIT(all, NR_TASKLETS);

// y += a * x over n elements, each tasklet every NR_TASKLETS-th.
void axpy(float *y, const float *x, float a, int32_t n) {
    for (int32_t i = me(); i < n; i += NR_TASKLETS)
        y[i] += a * x[i];
}

// total[0] = the sum of x: each tasklet sums its share into partial[me()]
// (a tile the tasklets share), then tasklet 0 adds the shares up.
void tile_sum(int64_t *total, int64_t *partial, const int32_t *x, int32_t n) {
    int64_t s = 0;
    for (int32_t i = me(); i < n; i += NR_TASKLETS)
        s += x[i];
    partial[me()] = s;
    barrier_wait(&all);
    if (me() == 0) {
        int64_t t = 0;
        for (int k = 0; k < NR_TASKLETS; k++)
            t += partial[k];
        total[0] = t;
    }
}

// Writes into its input: the caller's tile stays as it was.
void scribble(int32_t *x, int32_t n) {
    for (int32_t i = me(); i < n; i += NR_TASKLETS)
        x[i] = -1;
}

// Reads `n` 8-byte words from MRAM in one transfer: beyond 2048 bytes, a DMA rule is broken.
void read_words(int64_t *out, __mram_ptr const int64_t *src, int32_t n) {
    __dma_aligned int64_t buffer[512];
    if (me() == 0)
        mram_read(src, buffer, n * 8);  // <read-words>
    if (me() == 0)
        out[0] = buffer[0];
}

// Prints the program's first element.
void show(const int32_t *x) {
    if (me() == 0)
        printf("first element %d\n", x[0]);
}

// Every tasklet adds into total[0] with no barrier: a race.
void racy_sum(int64_t *total, const int32_t *x, int32_t n) {
    for (int32_t i = me(); i < n; i += NR_TASKLETS)
        total[0] += x[i];  // <racy>
}
