/* The UPMEM SDK's atomic_bit.h: ATOMIC_BIT_INIT(name) defines a bit of the
 * DPU's atomic memory (`ATOMIC_BIT_INIT(name)[n];` n of them), ATOMIC_BIT_GET
 * (name) names it. On the DPU model a byte of WRAM: programs take its address
 * as an id (PrIM's HST-L fills a barrier_t's `lock` with one), which the
 * model's barriers and mutexes do not need. */
#ifndef EDSL_ATOMIC_BIT_H
#define EDSL_ATOMIC_BIT_H
#include <stdint.h>

#define ATOMIC_BIT_INIT(_name) uint8_t __edsl_atomic_bit_##_name
#define ATOMIC_BIT_GET(_name) __edsl_atomic_bit_##_name
#endif
