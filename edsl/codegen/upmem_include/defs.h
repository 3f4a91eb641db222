/* The UPMEM SDK's defs.h, as far as the DPU model runs it. */
#ifndef EDSL_DEFS_H
#define EDSL_DEFS_H
#include "edsl_dpu.h"
typedef uint32_t sysname_t;
/* The running tasklet's id. */
static inline sysname_t me(void) { return EDSL_ME(); }
#endif
