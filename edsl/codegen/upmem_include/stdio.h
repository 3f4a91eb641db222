/* printf: on the DPU model, the host's C library prints it and flushes at
 * once (as the model's kernels do); on a DPU, the SDK buffers the text for
 * the host's dpu_log_read. */
#ifndef EDSL_STDIO_H
#define EDSL_STDIO_H
#include <stdarg.h>
#include "edsl_dpu.h"
int vprintf(const char *format, va_list args);
int fflush(void *stream);

__attribute__((format(printf, 1, 2))) static int __edsl_printf(const char *format, ...) {
    va_list args;
    va_start(args, format);
    int n = vprintf(format, args);
    va_end(args);
    fflush(0);
    return n;
}

#define printf __edsl_printf
#endif
