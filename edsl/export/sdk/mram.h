/* mram.h -- this project's stand-in for the UPMEM SDK header of the same name.
 * mram_read / mram_write check the DMA rules of the DPU: MRAM and WRAM
 * addresses 8-byte aligned, size a multiple of 8 from 8 to 2048 bytes, MRAM
 * range inside the DPU's 64 MiB. A broken rule is recorded and stops the DPU
 * (dpu_launch then fails with DPU_ERR_DPU_FAULT and the reason is printed). */
#ifndef EDSL_SIM_MRAM_H
#define EDSL_SIM_MRAM_H

#include "defs.h"

#define MRAM_SIZE (64u << 20)

/* Start of the MRAM the program does not use itself (the host's heap). */
extern uint8_t *edsl_sim_mram_heap;
#define DPU_MRAM_HEAP_POINTER ((__mram_ptr void *)edsl_sim_mram_heap)

void mram_read(const __mram_ptr void *from, void *to, unsigned int nb_of_bytes);
void mram_write(const void *from, __mram_ptr void *to, unsigned int nb_of_bytes);

#endif
