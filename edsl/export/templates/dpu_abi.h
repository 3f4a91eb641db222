/* The DPU ABI of edsl, generated from edsl/target/dpu.py (its one definition):
 * the hardware's limits, the slots of a tasklet's launch context (Ctx) and of
 * the state a DPU's tasklets share (Dpu), and the error codes (Err). Shared by
 * the DPU program, the host runner and the SDK stand-ins in sim/. */
#ifndef EDSL_DPU_ABI_H
#define EDSL_DPU_ABI_H

/* The hardware: memory sizes, tasklets, the rules of MRAM<->WRAM transfers. */
${limits}

/* `n` bytes rounded up to the DMA alignment (what buffers are padded to). */
#define EDSL_ALIGN_UP(n) (((n) + EDSL_DMA_ALIGN - 1) / EDSL_DMA_ALIGN * EDSL_DMA_ALIGN)

/* Transfer directions (a context's ERR_DIR slot). */
${directions}

/* Slots (int64_t) of a tasklet's launch context. */
${ctx}

/* Slots (int64_t) of the state the tasklets of one DPU share. */
${dpu}

/* Error codes of a context's ERROR slot. */
${errors}

/* Why a transfer is outside the launch's arrays (the `why` of its error message:
 * error_messages.h), and when a wait never ends. */
${messages}

#endif
