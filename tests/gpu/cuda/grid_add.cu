// A grid-stride vector add over global memory: every thread of every program
// walks the whole array (the shape of TLE-Raw's CUDA vector-add tutorial).
__device__ void GridAdd(__attribute__((address_space(1))) float *out,
                        __attribute__((address_space(1))) const float *x,
                        __attribute__((address_space(1))) const float *y, const int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    out[i] = x[i] + y[i];
}
