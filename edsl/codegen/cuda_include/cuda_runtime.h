// CUDA's runtime header, for sources that include it: everything a raw
// function may use is in edsl_cuda.h, which edsl includes before the source.
#pragma once
#include "edsl_cuda.h"
