/* stdio.h -- this project's stand-in for the UPMEM SDK's DPU header of the same
 * name, in a DPU program the Makefile's sim rule builds (EDSL_SIM_DPU_PROGRAM):
 * printf, puts and putchar store their messages in the DPU's log buffer
 * (dpu_sim_rt.c), of the size STDOUT_BUFFER_INIT declares (1 MiB by default,
 * as in the SDK), which the host reads with dpu_log_read (dpu_sim_host.c).
 * Anywhere else (host code, the stand-ins themselves) it is the host's stdio.h. */
#if !defined(EDSL_SIM_DPU_PROGRAM) || defined(EDSL_SIM_RUNTIME)
#include_next <stdio.h>
#else
#ifndef EDSL_SIM_STDIO_H
#define EDSL_SIM_STDIO_H

#include <stddef.h>

/* The log buffer: `size` bytes, a multiple of 8 (in MRAM, before the heap). */
#define STDOUT_BUFFER_INIT(size) \
    _Static_assert((size) >= 8 && ((size) & 7) == 0, "stdout buffer size must be a multiple of 8 and > 0"); \
    const unsigned int __stdout_buffer_size = (size)

/* (named apart from the host's functions, which the simulated DPU runs beside) */
#define printf edsl_sim_printf
#define puts edsl_sim_puts
#define putchar edsl_sim_putchar

void edsl_sim_printf(const char *restrict format, ...) __attribute__((format(__printf__, 1, 2)));
void edsl_sim_puts(const char *str);
void edsl_sim_putchar(int c);

#endif
#endif
