/* The UPMEM SDK's perfcounter.h, as far as the DPU model can honour it. The
 * model runs a C function as code compiled for the host, which counts no DPU
 * cycles (its time estimate, timing=True, counts what the function executed
 * once the run is over): a call of perfcounter_config or perfcounter_get
 * stops the tasklet, and the DPU, with an error at its line, where it runs
 * (code that only has such calls on a path it does not take runs), as the
 * SDK stand-ins do. */
#ifndef EDSL_PERFCOUNTER_H
#define EDSL_PERFCOUNTER_H
#include "edsl_dpu.h"

typedef uint64_t perfcounter_t;
typedef enum { COUNT_SAME, COUNT_CYCLES, COUNT_INSTRUCTIONS, COUNT_NOTHING } perfcounter_config_t;

__attribute__((noreturn)) static inline perfcounter_t __edsl_no_cycles(int64_t code, int64_t site) {
    __edsl_fail(code, site, 0, 0, 0);
}

#define perfcounter_config(config, reset_value)                                                    \
    ((void)(config), (void)(reset_value), __edsl_no_cycles(EDSL_ERR_PERFCOUNTER_CONFIG, EDSL_SITE))
#define perfcounter_get() __edsl_no_cycles(EDSL_ERR_PERFCOUNTER_GET, EDSL_SITE)
#endif
