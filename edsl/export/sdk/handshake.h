/* handshake.h -- this project's stand-in for the UPMEM SDK header of the same
 * name: handshake_wait_for(notifier) suspends the tasklet until tasklet
 * `notifier` calls handshake_notify(), which, with no tasklet waiting for it,
 * suspends its tasklet until one does (dpu_sim_rt.c). Waiting for a tasklet
 * another already waits for, for itself or for one the DPU does not run
 * stops the DPU with the model's words. */
#ifndef EDSL_SIM_HANDSHAKE_H
#define EDSL_SIM_HANDSHAKE_H

#include "defs.h"

int handshake_wait_for(sysname_t notifier);
void handshake_notify(void);

#endif
