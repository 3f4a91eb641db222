/* alloc.h -- this project's stand-in for the UPMEM SDK header of the same name:
 * mem_alloc takes from the DPU's WRAM heap (at most the WRAM's size,
 * EDSL_WRAM_BYTES); running out is a DPU fault, as on the hardware. */
#ifndef EDSL_SIM_ALLOC_H
#define EDSL_SIM_ALLOC_H

#include <stddef.h>
#include "defs.h"

void *mem_alloc(size_t size);
void mem_reset(void);

#endif
