/* The wording of edsl's run-time errors, generated from edsl/target/dpu.py
 * (ERROR_FORMATS, their one definition): an error's message with its
 * operands, worded as the DPU model words it. For the host runner. */
#ifndef EDSL_ERROR_MESSAGES_H
#define EDSL_ERROR_MESSAGES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dpu_abi.h"

/* What an error's message names (abi.ERROR_OPERANDS): the context's ERR_*
 * slots, and what the reader makes of them (NULL: a text it lacks). */
struct edsl_error_operands {
${fields}
};

/* The name of a transfer (abi.TRANSFER_NAMES): `write` 0 or 1, by ERR_DIR. */
static inline const char *edsl_transfer_name(int write) {
  return write ? ${write} : ${read};
}

/* The buffer an EDSL transfer overruns (abi.OVERRUN_SIDES); NULL for another code. */
static inline const char *edsl_overrun_side(int64_t code, int write) {
${sides}
  return NULL;
}

/* The message of the error `o->code` with its operands. */
static inline void edsl_error_message(char *out, size_t size, const struct edsl_error_operands *o) {
  switch (o->code) {
${cases}
  default:
    break;
  }
${unknown}
}

#endif
