// Row softmax in CUDA C, called by fl.call from examples/gpu_softmax_cuda.py
// on global memory: every thread of the block holds up to MAX_PER_THREAD
// elements of the row in registers (16-byte loads where the row is aligned),
// the maximum and the sum of exponentials are reduced by warp shuffles and
// one shared slot per warp, and the row is written once. One read and one
// write of the row: the traffic of a fused softmax.
#include <math_constants.h>

#define MAX_PER_THREAD 32   // 32 f32 a thread: 8,192 columns on 256 threads

typedef __attribute__((address_space(1))) float gfloat;

static __device__ __forceinline__ float4 load4(const gfloat *p) {
  return *(const __attribute__((address_space(1))) float4 *)p;
}

static __device__ __forceinline__ void store4(gfloat *p, float4 v) {
  *(__attribute__((address_space(1))) float4 *)p = v;
}

static __device__ __forceinline__ float block_reduce(float v, bool is_max, float *slots) {
  for (int lane = 16; lane > 0; lane >>= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, v, lane);
    v = is_max ? fmaxf(v, o) : v + o;
  }
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (threadIdx.x % 32 == 0) slots[warp] = v;
  __syncthreads();
  v = slots[0];
  for (int w = 1; w < warps; ++w) v = is_max ? fmaxf(v, slots[w]) : v + slots[w];
  __syncthreads();  // every thread has read the slots before they are written again
  return v;
}

extern "C" __device__ void RowSoftmax(gfloat *out, const gfloat *in, int n) {
  __shared__ float slots[32];
  const int t = threadIdx.x, nt = blockDim.x;
  assert(n <= MAX_PER_THREAD * nt);  // the row fits the registers (the caller checks it too)
  float x[MAX_PER_THREAD];
  // 16-byte loads when the row is aligned and whole float4s cover it
  const bool vec = (((unsigned long long)in | (unsigned long long)out) & 15) == 0 && n % 4 == 0;
  float top = -CUDART_INF_F;
  if (vec) {
#pragma unroll
    for (int k = 0; k < MAX_PER_THREAD / 4; ++k) {
      const int i = (k * nt + t) * 4;
      const float4 v = i < n ? load4(in + i) : make_float4(-CUDART_INF_F, -CUDART_INF_F, -CUDART_INF_F,
                                                            -CUDART_INF_F);
      x[4 * k] = v.x; x[4 * k + 1] = v.y; x[4 * k + 2] = v.z; x[4 * k + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int k = 0; k < MAX_PER_THREAD; ++k) {
      const int i = k * nt + t;
      x[k] = i < n ? in[i] : -CUDART_INF_F;
    }
  }
#pragma unroll
  for (int k = 0; k < MAX_PER_THREAD; ++k) top = fmaxf(top, x[k]);
  top = block_reduce(top, true, slots);
  float total = 0.0f;
#pragma unroll
  for (int k = 0; k < MAX_PER_THREAD; ++k) {
    x[k] = __expf(x[k] - top);
    total += x[k];
  }
  const float scale = 1.0f / block_reduce(total, false, slots);
  if (vec) {
#pragma unroll
    for (int k = 0; k < MAX_PER_THREAD / 4; ++k) {
      const int i = (k * nt + t) * 4;
      if (i < n) store4(out + i, make_float4(x[4 * k] * scale, x[4 * k + 1] * scale, x[4 * k + 2] * scale,
                                             x[4 * k + 3] * scale));
    }
  } else {
#pragma unroll
    for (int k = 0; k < MAX_PER_THREAD; ++k) {
      const int i = k * nt + t;
      if (i < n) out[i] = x[k] * scale;
    }
  }
}
