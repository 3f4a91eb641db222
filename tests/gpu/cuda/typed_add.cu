// One template, instantiated for the element type a define names (the shape
// of TLE-Raw's CUDA template tutorial): extern "C" names per type.
#include <cuda_fp16.h>

#ifndef ELEM
#error "ELEM must be defined (dialect(defines={'ELEM': ...}))"
#endif
#define NAME_(t) TypedAdd_##t
#define NAME(t) NAME_(t)

template <typename T>
__device__ __forceinline__ void typed_add(__attribute__((address_space(1))) T *out,
                                          __attribute__((address_space(1))) const T *x,
                                          __attribute__((address_space(1))) const T *y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) out[i] = x[i] + y[i];
}

extern "C" __device__ void NAME(ELEM)(__attribute__((address_space(1))) ELEM *out,
                                      __attribute__((address_space(1))) const ELEM *x,
                                      __attribute__((address_space(1))) const ELEM *y, int n) {
  typed_add<ELEM>(out, x, y, n);
}
