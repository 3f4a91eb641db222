// Row softmax in CUDA C, called once per program by fl.call from
// examples/gpu_softmax_cuda.py on global memory: the block walks its rows
// (a grid-stride loop), every thread holding its share of a row in registers
// (V float4s, 16-byte loads and stores), the maximum and the sum of
// exponentials reduced by warp shuffles and one shared slot per warp. One
// read and one write of each row: the traffic of a fused softmax.
#include <math_constants.h>

typedef __attribute__((address_space(1))) float gfloat;
typedef __attribute__((address_space(1))) float4 gfloat4;

// The block's maximum (or sum) of v, in every thread; `slots` holds one value
// a warp (two sets used in turn, so one barrier a reduction suffices).
template <bool IS_MAX>
static __device__ __forceinline__ float block_reduce(float v, float *slots) {
  for (int lane = 16; lane > 0; lane >>= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, v, lane);
    v = IS_MAX ? fmaxf(v, o) : v + o;
  }
  if (threadIdx.x % 32 == 0) slots[threadIdx.x / 32] = v;
  __syncthreads();
  v = slots[0];
  for (int w = 1; w < (int)blockDim.x / 32; ++w) v = IS_MAX ? fmaxf(v, slots[w]) : v + slots[w];
  return v;
}

template <int V>  // float4s a thread: the row has at most 4 * V * blockDim.x elements
static __device__ void softmax_rows(gfloat *out, const gfloat *in, int rows, int n, int in_stride,
                                    int out_stride, float *slots) {
  const int t = threadIdx.x, nt = blockDim.x;
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const gfloat4 *src = (const gfloat4 *)(in + (long long)row * in_stride);
    gfloat4 *dst = (gfloat4 *)(out + (long long)row * out_stride);
    float4 x[V];
    float top = -CUDART_INF_F;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int i = k * nt + t;  // in float4s
      x[k] = 4 * i < n ? float4(src[i]) : make_float4(-CUDART_INF_F, -CUDART_INF_F, -CUDART_INF_F, -CUDART_INF_F);
      top = fmaxf(top, fmaxf(fmaxf(x[k].x, x[k].y), fmaxf(x[k].z, x[k].w)));
    }
    top = block_reduce<true>(top, slots);
    float total = 0.0f;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      x[k] = make_float4(__expf(x[k].x - top), __expf(x[k].y - top), __expf(x[k].z - top), __expf(x[k].w - top));
      total += (x[k].x + x[k].y) + (x[k].z + x[k].w);
    }
    const float scale = 1.0f / block_reduce<false>(total, slots + 32);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int i = k * nt + t;
      if (4 * i < n) dst[i] = make_float4(x[k].x * scale, x[k].y * scale, x[k].z * scale, x[k].w * scale);
    }
  }
}

// A row of n f32 (n a multiple of 4, rows 16-byte aligned: the caller checks),
// up to 4 * 8 * blockDim.x elements.
extern "C" __device__ void RowsSoftmax(gfloat *out, const gfloat *in, int rows, int n, int in_stride,
                                       int out_stride) {
  __shared__ float slots[64];
  const int per = (n + 4 * blockDim.x - 1) / (4 * blockDim.x);
  assert(per <= 8 && n % 4 == 0);
  if (per <= 1) softmax_rows<1>(out, in, rows, n, in_stride, out_stride, slots);
  else if (per <= 2) softmax_rows<2>(out, in, rows, n, in_stride, out_stride, slots);
  else if (per <= 4) softmax_rows<4>(out, in, rows, n, in_stride, out_stride, slots);
  else softmax_rows<8>(out, in, rows, n, in_stride, out_stride, slots);
}
