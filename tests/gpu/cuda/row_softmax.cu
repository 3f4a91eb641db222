// Softmax of one row held in shared memory: a tree max and sum over the
// output tile, the input tile read-only; the output's descriptor returned.
#include <math_constants.h>

struct Row {
  __attribute__((address_space(3))) float *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
};

__device__ Row RowSoftmax(__attribute__((address_space(3))) float *out_alloc,
                          __attribute__((address_space(3))) float *out, int64_t out_offset, int64_t n,
                          int64_t out_stride, __attribute__((address_space(3))) float *in_alloc,
                          __attribute__((address_space(3))) float *in, int64_t in_offset, int64_t in_n,
                          int64_t in_stride) {
  const int t = threadIdx.x, step = blockDim.x;
  for (int i = t; i < n; i += step) out[i] = in[i];
  __syncthreads();
  for (int half = n >> 1; half > 0; half >>= 1) {
    for (int i = t; i < half; i += step) out[i] = fmaxf(out[i], out[i + half]);
    __syncthreads();
  }
  const float top = out[0];
  __syncthreads();
  for (int i = t; i < n; i += step) out[i] = exp2f(CUDART_L2E_F * (in[i] - top));
  __syncthreads();
  for (int half = n >> 1; half > 0; half >>= 1) {
    for (int i = t; i < half; i += step) out[i] = out[i] + out[i + half];
    __syncthreads();
  }
  const float inv = 1.0f / out[0];
  __syncthreads();
  for (int i = t; i < n; i += step) out[i] = exp2f(CUDART_L2E_F * (in[i] - top)) * inv;
  __syncthreads();
  return Row{out_alloc, out, out_offset, {n}, {out_stride}};
}
