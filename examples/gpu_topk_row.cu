// Per-row top-k in CUDA C, called by fl.call from examples/gpu_topk_cuda.py on
// global memory. Every thread of the block holds its share of the row in
// registers as order-preserving 64-bit keys (the float's bits made to sort as
// unsigned integers, then the complement of the column, so that ties go to
// the earlier column); k rounds each take the block's largest key (warp
// shuffles, one shared slot per warp) and drop it from its owner's share.
#define MAX_PER_THREAD 16   // 4,096 columns on 256 threads

typedef unsigned long long u64;

static __device__ __forceinline__ u64 key_of(float v, int col) {
  const unsigned int bits = __builtin_bit_cast(unsigned int, v);
  const unsigned int ordered = bits ^ ((unsigned int)((int)bits >> 31) | 0x80000000u);
  return (u64)ordered << 32 | (0xffffffffu - (unsigned int)col);
}

static __device__ __forceinline__ u64 block_max(u64 v, u64 *slots) {
  for (int lane = 16; lane > 0; lane >>= 1) {
    const u64 o = (u64)__shfl_xor_sync(0xffffffffu, (long long)v, lane);
    v = o > v ? o : v;
  }
  if (threadIdx.x % 32 == 0) slots[threadIdx.x / 32] = v;
  __syncthreads();
  v = slots[0];
  for (int w = 1; w < (int)blockDim.x / 32; ++w) v = slots[w] > v ? slots[w] : v;
  __syncthreads();
  return v;
}

extern "C" __device__ void RowTopK(const __attribute__((address_space(1))) float *x,
                                   __attribute__((address_space(1))) float *vals,
                                   __attribute__((address_space(1))) int *idx, int n, int k) {
  __shared__ u64 slots[32];
  const int t = threadIdx.x, nt = blockDim.x;
  assert(n <= MAX_PER_THREAD * nt);  // the row fits the registers (the caller checks it too)
  u64 keys[MAX_PER_THREAD];
#pragma unroll
  for (int j = 0; j < MAX_PER_THREAD; ++j) {
    const int col = j * nt + t;
    keys[j] = col < n ? key_of(x[col], col) : 0;   // 0: below every key of a column
  }
  for (int r = 0; r < k; ++r) {
    u64 best = 0;
#pragma unroll
    for (int j = 0; j < MAX_PER_THREAD; ++j) best = keys[j] > best ? keys[j] : best;
    best = block_max(best, slots);
#pragma unroll
    for (int j = 0; j < MAX_PER_THREAD; ++j)
      if (keys[j] == best) keys[j] = 0;             // its owner drops it (keys are unique)
    if (t == 0) {
      const int col = (int)(0xffffffffu - (unsigned int)best);
      vals[r] = x[col];
      idx[r] = col;
    }
  }
}
