// CUDA's fast f32 intrinsics, one row of the result each: the GPU's
// approximate instructions, as -use_fast_math gives them.
__device__ void FastMath(__attribute__((address_space(1))) float *out,
                         __attribute__((address_space(1))) const float *x, const int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float a = x[i];
    out[0 * n + i] = __expf(a);
    out[1 * n + i] = __logf(a);
    out[2 * n + i] = __log2f(a);
    out[3 * n + i] = __log10f(a);
    out[4 * n + i] = __sinf(a);
    out[5 * n + i] = __cosf(a);
    out[6 * n + i] = __tanf(a);
    out[7 * n + i] = __exp10f(a);
  }
}
