/* Variables in MRAM of C functions that kernels call: each DPU has its own,
 * with its first values at the launch, kept from one program to the next. */
#include <barrier.h>
#include <defs.h>
#include <mram.h>

__mram int64_t running_total[1] = {100};
__mram_noinit int64_t staged[16 * 8];
BARRIER_INIT(all, NR_TASKLETS);

/* out[0]: the running total of this DPU's programs so far, plus x[0 .. 7]. */
void running(int64_t *out, const int64_t *x) {
    if (me() != 0)
        return;
    __dma_aligned int64_t w[1];
    mram_read(running_total, w, sizeof w);
    for (int k = 0; k < 8; k++)
        w[0] += x[k];
    mram_write(w, running_total, sizeof w);
    out[0] = w[0];
}

/* sums[t]: the sum of all the tasklets' x[t * 8 .. t * 8 + 7], staged in MRAM. */
void staged_sum(int64_t *sums, const int64_t *x) {
    unsigned int t = me();
    __dma_aligned int64_t w[8];
    for (int k = 0; k < 8; k++)
        w[k] = x[t * 8 + k];
    mram_write(w, &staged[t * 8], sizeof w);
    barrier_wait(&all);
    int64_t total = 0;
    for (unsigned int u = 0; u < NR_TASKLETS; u++) {
        mram_read(&staged[u * 8], w, sizeof w);
        for (int k = 0; k < 8; k++)
            total += w[k];
    }
    sums[t] = total;
}

/* A transfer past the variable's end. */
void past_the_variable(int64_t *out) {
    __dma_aligned int64_t w[2];
    mram_read(&staged[16 * 8 - 1], w, sizeof w);  // <past the variable>
    out[0] = w[0];
}

/* DPU_MRAM_HEAP_POINTER: in a kernel, the heap holds the kernel's arrays. */
void into_the_heap(int64_t *out) {
    __dma_aligned int64_t w[1] = {out[0]};
    mram_write(w, DPU_MRAM_HEAP_POINTER, sizeof w);  // <heap>
}

/* 48 MiB of MRAM of its own, beside the parts of the arrays the DPU receives. */
__mram_noinit uint8_t big[48 << 20];

void touch_ends(int64_t *out, __mram_ptr const int64_t *a, int n) {
    __dma_aligned int64_t w[2];
    mram_read(&a[0], &w[0], 8);
    mram_read(&a[n - 1], &w[1], 8);
    mram_write(w, big, sizeof w);
    out[0] = w[0] + w[1];
}

/* Two functions of one source share its variables, as one program compiled from it does. */
int64_t kept_in_wram;
__mram_noinit int64_t kept_in_mram[1];

void keep(int64_t *unused, const int64_t *x) {
    if (me() != 0)
        return;
    __dma_aligned int64_t w[1] = {x[1]};
    kept_in_wram = x[0];
    mram_write(w, kept_in_mram, sizeof w);
}

void kept(int64_t *out) {
    if (me() != 0)
        return;
    __dma_aligned int64_t w[1];
    mram_read(kept_in_mram, w, sizeof w);
    out[0] = kept_in_wram;
    out[1] = w[0];
}
