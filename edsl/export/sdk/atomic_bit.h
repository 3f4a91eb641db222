/* atomic_bit.h -- this project's stand-in for the UPMEM SDK header of the
 * same name: ATOMIC_BIT_INIT(name) defines a bit of the DPU's atomic memory
 * (here a byte of WRAM; `ATOMIC_BIT_INIT(name)[n];` n of them),
 * ATOMIC_BIT_GET(name) names it. The stand-ins' mutexes and barriers are
 * named by such addresses (mutex.h, barrier.h). */
#ifndef EDSL_SIM_ATOMIC_BIT_H
#define EDSL_SIM_ATOMIC_BIT_H

#include <stdint.h>

#define ATOMIC_BIT_INIT(_name) uint8_t edsl_sim_atomic_bit_##_name
#define ATOMIC_BIT_GET(_name) edsl_sim_atomic_bit_##_name

#endif
