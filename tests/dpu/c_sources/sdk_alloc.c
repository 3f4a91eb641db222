/* alloc.h: each tasklet takes `count` buffers of `size` bytes, writes its
 * id into each, and records their addresses; `reset` empties the heap first
 * and after. */
#include <defs.h>
#include <alloc.h>
#include <barrier.h>

BARRIER_INIT(everyone, NR_TASKLETS);
uint64_t variables[10];                          /* 80 bytes of the DPU's WRAM */

void alloc_many(__mram_ptr uint64_t *addresses, __mram_ptr uint64_t *bad, int size, int count) {
    for (int i = 0; i < count; i++) {
        uint8_t *p = mem_alloc(size);            // <alloc>
        for (int k = 0; k < size; k++)
            p[k] = (uint8_t)me();
        addresses[me() * count + i] = (uint64_t)(uintptr_t)p;
    }
    barrier_wait(&everyone);
    /* every buffer still holds its tasklet's id: none overlaps another */
    for (int i = 0; i < count; i++) {
        uint8_t *p = (uint8_t *)(uintptr_t)addresses[me() * count + i];
        for (int k = 0; k < size; k++)
            if (p[k] != (uint8_t)me())
                bad[me()] = 1;
    }
}

void alloc_reset(__mram_ptr uint64_t *addresses) {
    addresses[0] = (uint64_t)(uintptr_t)mem_alloc(24);
    addresses[1] = (uint64_t)(uintptr_t)mem_alloc(8);
    mem_reset();
    addresses[2] = (uint64_t)(uintptr_t)mem_alloc(16);
}
