/* mram_unaligned.h -- this project's stand-in for the UPMEM SDK header of the
 * same name: mram_read_unaligned and mram_write_unaligned over the checked
 * mram_read / mram_write (mram.h), written once with the DPU model's
 * (edsl_mram_unaligned.h says what they do); a broken rule stops the DPU with
 * the model's words, at the caller's file and line. */
#ifndef EDSL_SIM_MRAM_UNALIGNED_H
#define EDSL_SIM_MRAM_UNALIGNED_H
/* (in a C source an exported kernel calls, edsl_c_calls.h gives them over the program's transfers) */
#ifndef EDSL_C_CALLS_H

#include "dpu_abi.h"
#include "mram.h"

void edsl_sim_fault_code(int64_t code, int64_t nbytes, int64_t mram, int64_t wram, const char *file, int line)
    __attribute__((noreturn));

#define EDSL_UNALIGNED_WHERE const char *file, int line
#define EDSL_UNALIGNED_PASS file, line
#define EDSL_UNALIGNED_READ(mram, wram, n) edsl_sim_mram_read((const __mram_ptr void *)(mram), (wram), (n), file, line)
#define EDSL_UNALIGNED_WRITE(wram, mram, n) edsl_sim_mram_write((wram), (__mram_ptr void *)(mram), (n), file, line)
#define EDSL_UNALIGNED_FAIL(code, mram, wram, n) edsl_sim_fault_code((code), (n), (mram), (wram), file, line)
#include "edsl_mram_unaligned.h"

#define mram_read_unaligned(from, buffer, nb_of_bytes) \
    __edsl_mram_read_unaligned((from), (buffer), (nb_of_bytes), __FILE__, __LINE__)
#define mram_write_unaligned(from, to, nb_of_bytes) \
    __edsl_mram_write_unaligned((from), (to), (nb_of_bytes), __FILE__, __LINE__)

#endif
#endif
