/* assert: a failed one is a DPU fault at the caller's line. */
#ifndef EDSL_ASSERT_H
#define EDSL_ASSERT_H
#include "edsl_dpu.h"

static inline void __edsl_assert_fail(int64_t site) {
    EDSL_ASSERT_FAIL(site);
    __edsl_stop();
}

#define assert(cond) ((cond) ? (void)0 : __edsl_assert_fail(EDSL_SITE))
#endif
