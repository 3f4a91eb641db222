/* perfcounter.h -- this project's stand-in for the UPMEM SDK header of the
 * same name. The stand-ins run DPU code compiled for the host, which counts
 * no DPU cycles: perfcounter_config and perfcounter_get stop the DPU, naming
 * the call, where they run (the DPU model's time estimate, timing=True,
 * estimates the cycles). Code that only declares calls builds. */
#ifndef EDSL_SIM_PERFCOUNTER_H
#define EDSL_SIM_PERFCOUNTER_H

#include <stdbool.h>
#include <stdint.h>

typedef uint64_t perfcounter_t;
typedef enum { COUNT_SAME, COUNT_CYCLES, COUNT_INSTRUCTIONS, COUNT_NOTHING } perfcounter_config_t;

#define EDSL_SIM_NO_CYCLES "the SDK stand-ins run DPU code compiled for the host and count no DPU cycles"

perfcounter_t perfcounter_config(perfcounter_config_t config, bool reset_value);
perfcounter_t perfcounter_get(void);

#endif
