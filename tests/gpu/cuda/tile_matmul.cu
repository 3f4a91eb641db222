// acc += a @ b on tiles in shared memory (f16 inputs, f32 accumulator), each
// thread a strided set of output elements; used in the outs/ins form.
#include <cuda_fp16.h>

__device__ void TileMatmul(__attribute__((address_space(3))) float *acc_alloc,
                           __attribute__((address_space(3))) float *acc, int64_t acc_offset, int64_t m,
                           int64_t n, int64_t acc_s0, int64_t acc_s1,
                           __attribute__((address_space(3))) half *a_alloc, __attribute__((address_space(3))) half *a,
                           int64_t a_offset, int64_t a_m, int64_t k, int64_t a_s0, int64_t a_s1,
                           __attribute__((address_space(3))) half *b_alloc, __attribute__((address_space(3))) half *b,
                           int64_t b_offset, int64_t b_k, int64_t b_n, int64_t b_s0, int64_t b_s1) {
  for (int i = threadIdx.x; i < m * n; i += blockDim.x) {
    const int row = i / n, col = i % n;
    float sum = 0.0f;
    for (int j = 0; j < k; ++j)
      sum += __half2float(a[row * a_s0 + j * a_s1]) * __half2float(b[j * b_s0 + col * b_s1]);
    acc[row * acc_s0 + col * acc_s1] += sum;
  }
}
