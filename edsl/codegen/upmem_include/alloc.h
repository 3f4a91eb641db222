/* The UPMEM SDK's alloc.h, as far as the DPU model honours it: the
 * incremental allocator. mem_alloc(size) takes `size` bytes (rounded up to
 * 8) of the DPU's WRAM heap, shared by its tasklets, and gives an 8-byte
 * aligned pointer; nothing frees them but mem_reset(), which empties the
 * heap. The heap is what the DPU's WRAM leaves after the function's
 * variables, its WRAM arrays and its tasklets' stacks
 * (edsl.target.dpu.c_heap_bytes): a mem_alloc beyond it is an error at its
 * line, as the SDK's mem_alloc faults.
 *
 * The SDK's other allocators are not provided: a call of the buddy
 * allocator's functions is a compile error at its line, the fixed-size block
 * allocator's (fsb_*) are not declared. */
#ifndef EDSL_ALLOC_H
#define EDSL_ALLOC_H
#include "edsl_dpu.h"

/* The model's heap (the program's variables, loaded anew with it for each run). */
static uint8_t __edsl_heap[EDSL_WRAM_BYTES] __attribute__((aligned(EDSL_HEAP_ALIGN)));
static uint32_t __edsl_heap_used;

static inline void *__edsl_mem_alloc(size_t size, int64_t site) {
    int64_t heap = ((int64_t *)EDSL_CTX())[EDSL_CTX_C_HEAP];
    if (heap > EDSL_WRAM_BYTES)
        heap = EDSL_WRAM_BYTES;
    uint64_t asked = ((uint64_t)size + EDSL_HEAP_ALIGN - 1) & ~(uint64_t)(EDSL_HEAP_ALIGN - 1);
    uint32_t used = __atomic_load_n(&__edsl_heap_used, __ATOMIC_RELAXED);
    do {
        if (asked > (uint64_t)heap - used || asked < (uint64_t)size)
            __edsl_fail(EDSL_ERR_HEAP_FULL, site, heap - used, heap, (int64_t)size);
    } while (!__atomic_compare_exchange_n(&__edsl_heap_used, &used, used + (uint32_t)asked, true,
                                          __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
    return &__edsl_heap[used];
}

static inline void __edsl_mem_reset(void) {
    __atomic_store_n(&__edsl_heap_used, 0, __ATOMIC_RELEASE);
}

#define mem_alloc(size) __edsl_mem_alloc((size), EDSL_SITE)
#define mem_reset() __edsl_mem_reset()

#define __EDSL_NOT_PROVIDED(what) \
    __attribute__((unavailable("the DPU model does not provide " what " yet: use mem_alloc")))
void *buddy_alloc(size_t size) __EDSL_NOT_PROVIDED("the SDK's buddy allocator");
void buddy_free(void *pointer) __EDSL_NOT_PROVIDED("the SDK's buddy allocator");
void buddy_init(size_t size) __EDSL_NOT_PROVIDED("the SDK's buddy allocator");
void *buddy_realloc(void *pointer, size_t size) __EDSL_NOT_PROVIDED("the SDK's buddy allocator");
#endif
