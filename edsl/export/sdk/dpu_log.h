/* dpu_log.h -- this project's stand-in for the UPMEM host library header of
 * the same name: a DPU's printf log, printed as dpu_log_read prints it. */
#ifndef EDSL_SIM_DPU_LOG_H
#define EDSL_SIM_DPU_LOG_H

#include <stdio.h>
#include "dpu.h"

dpu_error_t dpulog_read_for_dpu(struct dpu_t *dpu, FILE *stream);

#endif
