/* Variables in MRAM (__mram, __mram_noinit) and the MRAM after them
 * (DPU_MRAM_HEAP_POINTER), as PrIM's programs keep their buffers: each
 * tasklet writes its values into one, and every tasklet sums them all back. */
#include <barrier.h>
#include <defs.h>
#include <mram.h>

#define PER 8
__mram_noinit int64_t staged[NR_TASKLETS * PER];
__mram int64_t bias = 5;
BARRIER_INIT(all, NR_TASKLETS);

/* Tasklet me()'s values written at buffer[me() * PER...], then every tasklet's read back and summed. */
static int64_t sum_through(__mram_ptr int64_t *buffer, const int64_t *values) {
    unsigned int t = me();
    int64_t w[PER];
    for (int k = 0; k < PER; k++)
        w[k] = values[t * PER + k];
    mram_write(w, &buffer[t * PER], sizeof w);
    barrier_wait(&all);
    int64_t total = 0;
    for (unsigned int u = 0; u < NR_TASKLETS; u++) {
        mram_read(&buffer[u * PER], w, sizeof w);
        for (int k = 0; k < PER; k++)
            total += w[k];
    }
    return total;
}

void sum_through_mram(const int64_t *values, int64_t *sums) {
    sums[me()] = bias + sum_through(staged, values);   /* (bias: a direct access, the DMA of its 8 bytes) */
}

/* The same through the MRAM after the variables (PrIM's buffers), 8 MiB in. */
void sum_through_heap(const int64_t *values, int64_t *sums) {
    sums[me()] = sum_through((__mram_ptr int64_t *)DPU_MRAM_HEAP_POINTER + (1 << 20), values);
}

/* Each run starts with the program's first values. */
void bump(int64_t *out) {
    bias = bias + 1;
    out[0] = bias;
}

/* The heap ends with the DPU's 64 MiB of MRAM (less the variables'). */
void past_the_heap(int64_t *w) {
    mram_read((__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER + (64 << 20) - 8, w, 16);  // <heap end>
}

void past_the_end(int64_t *w) {
    mram_read(&staged[NR_TASKLETS * PER - 1], w, 16);  // <past>
}
