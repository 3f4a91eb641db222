/* defs.h -- this project's stand-in for the UPMEM SDK header of the same name,
 * for building a DPU program with the host C compiler (a simulated DPU: the
 * program is a shared object, its tasklets contexts of one thread taking turns).
 * me(), halt(), NR_TASKLETS and the memory attributes. */
#ifndef EDSL_SIM_DEFS_H
#define EDSL_SIM_DEFS_H

#include <stdint.h>

#ifndef NR_TASKLETS
#define NR_TASKLETS 1
#endif

/* WRAM variables the host may read and write (dpu_copy_to / dpu_push_xfer). */
#define __host __attribute__((visibility("default"), used))
/* MRAM pointers are plain host pointers into the simulated DPU's MRAM (or
 * MRAM addresses, below the MRAM's size: dpu_sim_rt.c). */
#define __mram_ptr
/* MRAM variables: kept apart, in the program's section edsl_mram (each DPU's
 * own, as the program's copy is), where transfers take them as MRAM; the host
 * reaches them by name, with MRAM's rules. */
#define __mram __attribute__((section("edsl_mram"), aligned(8), visibility("default"), used))
#define __mram_noinit __mram
#define __dma_aligned __attribute__((aligned(8)))
#define __noinline __attribute__((noinline))

typedef uint32_t sysname_t;

/* The id of the calling tasklet, 0 .. NR_TASKLETS - 1. */
sysname_t me(void);
/* Stop the calling tasklet. */
void halt(void) __attribute__((noreturn));

#endif
