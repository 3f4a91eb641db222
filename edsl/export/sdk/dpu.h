/* dpu.h -- this project's stand-in for the UPMEM host library header, for
 * running a host program against simulated DPUs (dpu_sim_host.c).
 *
 * The subset exported host runners and PrIM use: dpu_alloc, dpu_load, dpu_free,
 * dpu_get_nr_dpus, dpu_prepare_xfer, dpu_push_xfer, dpu_copy_to,
 * dpu_copy_from, dpu_broadcast_to, dpu_launch, dpu_sync, dpu_log_read, DPU_FOREACH, DPU_ASSERT,
 * dpu_error_to_string (and dpu_log.h's dpulog_read_for_dpu).
 * `dpu_load` takes the DPU program built as a shared object with the
 * stand-in DPU headers; every DPU gets a private copy of it (its own WRAM
 * globals) and its MRAM (EDSL_MRAM_BYTES, dpu_abi.h). DPUs run one after another at dpu_launch,
 * each with NR_TASKLETS tasklets taking turns. Transfers check the host library's rules
 * (MRAM: DMA-aligned offset and size; WRAM symbols: 4-byte aligned, in
 * bounds of the symbol). */
#ifndef EDSL_SIM_DPU_H
#define EDSL_SIM_DPU_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef enum dpu_error_t {
    DPU_OK = 0,
    DPU_ERR_INTERNAL,
    DPU_ERR_SYSTEM,
    DPU_ERR_ALLOCATION,
    DPU_ERR_INVALID_DPU_SET,
    DPU_ERR_ELF_INVALID_FILE,
    DPU_ERR_NO_PROGRAM_LOADED,
    DPU_ERR_UNKNOWN_SYMBOL,
    DPU_ERR_INVALID_SYMBOL_ACCESS,
    DPU_ERR_INVALID_MRAM_ACCESS,
    DPU_ERR_INVALID_WRAM_ACCESS,
    DPU_ERR_TRANSFER_ALREADY_SET,
    DPU_ERR_DPU_FAULT,
    DPU_ERR_INVALID_LAUNCH_POLICY,
    DPU_ERR_LOG_FORMAT,
    DPU_ERR_LOG_CONTEXT_MISSING,
    DPU_ERR_LOG_BUFFER_TOO_SMALL,
} dpu_error_t;

typedef enum dpu_xfer_t { DPU_XFER_TO_DPU, DPU_XFER_FROM_DPU } dpu_xfer_t;
typedef enum dpu_xfer_flags_t { DPU_XFER_DEFAULT = 0, DPU_XFER_NO_RESET = 1 } dpu_xfer_flags_t;
typedef enum dpu_launch_policy_t { DPU_ASYNCHRONOUS, DPU_SYNCHRONOUS } dpu_launch_policy_t;

struct dpu_program_t;
struct edsl_sim_system;
struct dpu_t;

/* A set of DPUs, or one DPU (count == 1 inside DPU_FOREACH; then `dpu` is it,
 * as dpu_log.h's dpulog_read_for_dpu takes it). */
struct dpu_set_t {
    struct edsl_sim_system *system;
    uint32_t first;
    uint32_t count;
    struct dpu_t *dpu;
};

#define DPU_ALLOCATE_ALL ((uint32_t)-1)
#define DPU_MRAM_HEAP_POINTER_NAME "__sys_used_mram_end"

dpu_error_t dpu_alloc(uint32_t nr_dpus, const char *profile, struct dpu_set_t *dpu_set);
dpu_error_t dpu_free(struct dpu_set_t dpu_set);
dpu_error_t dpu_get_nr_dpus(struct dpu_set_t dpu_set, uint32_t *nr_dpus);
dpu_error_t dpu_load(struct dpu_set_t dpu_set, const char *binary_path, struct dpu_program_t **program);
dpu_error_t dpu_prepare_xfer(struct dpu_set_t dpu_set, void *buffer);
dpu_error_t dpu_push_xfer(struct dpu_set_t dpu_set, dpu_xfer_t xfer, const char *symbol_name,
                          uint32_t symbol_offset, size_t length, dpu_xfer_flags_t flags);
dpu_error_t dpu_copy_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset,
                        const void *src, size_t length);
dpu_error_t dpu_copy_from(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset,
                          void *dst, size_t length);
dpu_error_t dpu_broadcast_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset,
                             const void *src, size_t length, dpu_xfer_flags_t flags);
/* (a launch, DPU_ASYNCHRONOUS too, has ended when dpu_launch returns) */
dpu_error_t dpu_sync(struct dpu_set_t dpu_set);
dpu_error_t dpu_launch(struct dpu_set_t dpu_set, dpu_launch_policy_t policy);
char *dpu_error_to_string(dpu_error_t status);
/* Print one DPU's printf log (its messages since its last launch) to `stream`. */
dpu_error_t dpu_log_read(struct dpu_set_t set, FILE *stream);

uint32_t edsl_sim_set_size(struct dpu_set_t set);
struct dpu_set_t edsl_sim_set_dpu(struct dpu_set_t set, uint32_t i);

#define EDSL_SIM_FOREACH_PICK(_1, _2, _3, NAME, ...) NAME
#define EDSL_SIM_FOREACH_2(set, dpu) \
    for (uint32_t edsl_sim_i_ = 0; edsl_sim_i_ < edsl_sim_set_size(set) \
         && ((dpu) = edsl_sim_set_dpu((set), edsl_sim_i_), 1); ++edsl_sim_i_)
#define EDSL_SIM_FOREACH_3(set, dpu, i) \
    for ((i) = 0; (i) < edsl_sim_set_size(set) && ((dpu) = edsl_sim_set_dpu((set), (i)), 1); ++(i))
#define DPU_FOREACH(...) \
    EDSL_SIM_FOREACH_PICK(__VA_ARGS__, EDSL_SIM_FOREACH_3, EDSL_SIM_FOREACH_2, ~)(__VA_ARGS__)

#define DPU_ASSERT(statement) \
    do { \
        dpu_error_t edsl_sim_err_ = (statement); \
        if (edsl_sim_err_ != DPU_OK) { \
            char *edsl_sim_msg_ = dpu_error_to_string(edsl_sim_err_); \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #statement, edsl_sim_msg_); \
            free(edsl_sim_msg_); \
            exit(EXIT_FAILURE); \
        } \
    } while (0)

#endif
