// out = SCALE * x, each tasklet every NR_TASKLETS-th element (SCALE: a macro of the dialect).
#include <defs.h>
#include "helpers/scale.h"

void scaled_copy(int32_t *out, const int32_t *x, int32_t n) {
    for (int32_t i = me(); i < n; i += NR_TASKLETS)
        out[i] = scale(x[i]);
}
