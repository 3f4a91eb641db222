/* The UPMEM SDK's perfcounter.h: refused. The DPU model runs a C function
 * as code compiled for the host; its time estimate (edsl.dpu.timing) counts
 * what the function executed once the run is over, so a running function has
 * no faithful count to read: a call of perfcounter_config or perfcounter_get
 * is a compile error at its line. */
#ifndef EDSL_PERFCOUNTER_H
#define EDSL_PERFCOUNTER_H
#include "edsl_dpu.h"

typedef uint64_t perfcounter_t;
typedef enum { COUNT_SAME, COUNT_CYCLES, COUNT_INSTRUCTIONS, COUNT_NOTHING } perfcounter_config_t;

#define __EDSL_NO_COUNT                                                                              \
    __attribute__((unavailable("the DPU model estimates a C function's cycles once a run is over " \
                               "(timing=True), so a running function has no count to read")))
perfcounter_t perfcounter_config(perfcounter_config_t config, bool reset_value) __EDSL_NO_COUNT;
perfcounter_t perfcounter_get(void) __EDSL_NO_COUNT;
#endif
