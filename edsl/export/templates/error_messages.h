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

/* What a sharing error's message names (abi.SHARING_OPERANDS): the two DPUs,
 * the element, what each did to it and each one's line (or ""). */
struct edsl_sharing_operands {
${sharing_fields}
};

/* The message of a sharing across DPUs that the merge refuses (merge.h's
 * `struct sharing`), by its why (abi.SHARING_FORMATS). */
static inline void edsl_sharing_message(char *out, size_t size, int64_t why, const struct edsl_sharing_operands *o) {
  switch (why) {
${sharing_cases}
  default:
    break;
  }
  snprintf(out, size, "DPUs share an element (why %lld)", (long long)why);
}

/* What a use does to an element (abi.USE_VERBS, OLD_USED_VERB), and a use's
 * line in a message (abi.SHARING_LINE: before and after the number). */
${verbs}

/* An element of an array as an error names it (abi.ELEMENT_NAME). */
static inline void edsl_element_name(char *out, size_t size, int64_t index, const char *array) {
${element_name}
  snprintf(out, size, "%s", "");
}

/* The verb of an atomic named `op` (`old_used`: OLD_USED_VERB or ""). */
static inline void edsl_atomic_verb(char *out, size_t size, const char *op, const char *old_used) {
${atomic_verb}
  snprintf(out, size, "%s", "");
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
