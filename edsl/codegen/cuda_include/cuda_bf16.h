// CUDA's bfloat16 types over clang's __bf16.
#pragma once
#include "edsl_cuda.h"
typedef __bf16 __nv_bfloat16;
typedef __bf16 __nv_bfloat162 __attribute__((ext_vector_type(2)));
static __device__ __forceinline__ float __bfloat162float(__nv_bfloat16 h) { return (float)h; }
static __device__ __forceinline__ __nv_bfloat16 __float2bfloat16(float f) { return (__nv_bfloat16)f; }
static __device__ __forceinline__ __nv_bfloat16 __float2bfloat16_rn(float f) { return (__nv_bfloat16)f; }
