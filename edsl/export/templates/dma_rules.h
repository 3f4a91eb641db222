/* The DMA rules of edsl's DPU ABI, generated from edsl/target/dpu.py (DMA_RULES,
 * their one definition): which rules a transfer breaks, and why, worded as
 * the DPU model words it. For the host runner and the SDK stand-ins in sim/. */
#ifndef EDSL_DMA_RULES_H
#define EDSL_DMA_RULES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dpu_abi.h"

/* The EDSL_DMA_RULE_* bits of the rules a transfer of `nbytes` between MRAM
 * `mram` and WRAM `wram` breaks (0: none). */
static inline int edsl_dma_rules_broken(uint64_t mram, uint64_t wram, int64_t nbytes) {
  int broken = 0;
${checks}
  return broken;
}

/* Why the transfer breaks the rules: the message of the first rule it breaks. */
static inline void edsl_dma_violation(char *out, size_t size, uint64_t mram, uint64_t wram, int64_t nbytes) {
  int broken = edsl_dma_rules_broken(mram, wram, nbytes);
${messages}
  snprintf(out, size, "(no rule broken)");
}

#endif
