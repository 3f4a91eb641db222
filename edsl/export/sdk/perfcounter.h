/* perfcounter.h -- this project's stand-in for the UPMEM SDK header of the
 * same name. The stand-ins run DPU code compiled for the host, which counts
 * no DPU cycles: perfcounter_config and perfcounter_get stop the DPU where
 * they run, naming the call and its line, in the DPU model's words (the
 * model's time estimate, timing=True, estimates the cycles). Code whose
 * calls are on paths it does not take runs. */
#ifndef EDSL_SIM_PERFCOUNTER_H
#define EDSL_SIM_PERFCOUNTER_H

#include <stdbool.h>
#include <stdint.h>

#include "dpu_abi.h"

typedef uint64_t perfcounter_t;
typedef enum { COUNT_SAME, COUNT_CYCLES, COUNT_INSTRUCTIONS, COUNT_NOTHING } perfcounter_config_t;

/* Stop the DPU with error `code` (EDSL_ERR_PERFCOUNTER_*) at file:line. */
perfcounter_t edsl_sim_no_cycles(int code, const char *file, int line) __attribute__((noreturn));

#define perfcounter_config(config, reset_value)                                                       \
    ((void)(config), (void)(reset_value), edsl_sim_no_cycles(EDSL_ERR_PERFCOUNTER_CONFIG, __FILE__, __LINE__))
#define perfcounter_get() edsl_sim_no_cycles(EDSL_ERR_PERFCOUNTER_GET, __FILE__, __LINE__)

#endif
