/* mram.h -- this project's stand-in for the UPMEM SDK header of the same name.
 * mram_read / mram_write (dpu_sim_rt.c) check the DMA rules of the DPU
 * (dpu_abi.h: aligned MRAM and WRAM addresses, a size from the minimum to the
 * maximum and a multiple of the alignment) and that the MRAM range is inside
 * the DPU's MRAM. A broken rule is recorded and stops the DPU (dpu_launch then
 * fails with DPU_ERR_DPU_FAULT and the reason is printed, at the caller's file
 * and line). */
#ifndef EDSL_SIM_MRAM_H
#define EDSL_SIM_MRAM_H

#include "defs.h"

/* Start of the MRAM the program does not use itself (the host's heap). */
extern uint8_t *edsl_sim_mram_heap;
#define DPU_MRAM_HEAP_POINTER ((__mram_ptr void *)edsl_sim_mram_heap)

void edsl_sim_mram_read(const __mram_ptr void *from, void *to, unsigned int nb_of_bytes, const char *file, int line);
void edsl_sim_mram_write(const void *from, __mram_ptr void *to, unsigned int nb_of_bytes, const char *file, int line);
/* (a broken rule names the caller's line) */
#define mram_read(from, to, nb_of_bytes) edsl_sim_mram_read((from), (to), (nb_of_bytes), __FILE__, __LINE__)
#define mram_write(from, to, nb_of_bytes) edsl_sim_mram_write((from), (to), (nb_of_bytes), __FILE__, __LINE__)

#endif
