// Per-row top-k in CUDA C, called by fl.call from examples/gpu_topk_cuda.py on
// global memory. The block walks its rows; every thread holds its share of a
// row in registers as order-preserving 64-bit keys (the float's bits made to
// sort as unsigned integers, then the complement of the column, so that ties
// go to the earlier column). Each warp takes its own k largest keys by k
// rounds of warp shuffles (no barrier), leaving them in shared memory; after
// one barrier, warp 0 merges the warps' lists, one lane a list.
#define MAX_PER_THREAD 16   // 4,096 columns on 256 threads
#define MAX_K 32

typedef unsigned long long u64;

static __device__ __forceinline__ u64 key_of(float v, int col) {
  const unsigned int bits = __builtin_bit_cast(unsigned int, v);
  const unsigned int ordered = bits ^ ((unsigned int)((int)bits >> 31) | 0x80000000u);
  return (u64)ordered << 32 | (0xffffffffu - (unsigned int)col);
}

static __device__ __forceinline__ int column_of(u64 key) { return (int)(0xffffffffu - (unsigned int)key); }

static __device__ __forceinline__ u64 warp_max(u64 v) {
  for (int lane = 16; lane > 0; lane >>= 1) {
    const u64 o = (u64)__shfl_xor_sync(0xffffffffu, (long long)v, lane);
    v = o > v ? o : v;
  }
  return v;
}

extern "C" __device__ void RowsTopK(const __attribute__((address_space(1))) float *x,
                                    __attribute__((address_space(1))) float *vals,
                                    __attribute__((address_space(1))) int *idx, int rows, int n, int k) {
  __shared__ u64 candidates[32 * MAX_K];   // each warp's k largest, in order
  const int t = threadIdx.x, nt = blockDim.x, lane = t % 32, warp = t / 32, warps = nt / 32;
  assert(n <= MAX_PER_THREAD * nt && k <= MAX_K && k <= n);  // (the caller checks it too)
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const __attribute__((address_space(1))) float *src = x + (long long)row * n;
    u64 keys[MAX_PER_THREAD];
#pragma unroll
    for (int j = 0; j < MAX_PER_THREAD; ++j) {
      const int col = j * nt + t;
      keys[j] = col < n ? key_of(src[col], col) : 0;   // 0: below every key of a column
    }
    for (int r = 0; r < k; ++r) {                      // the warp's k largest
      u64 best = 0;
#pragma unroll
      for (int j = 0; j < MAX_PER_THREAD; ++j) best = keys[j] > best ? keys[j] : best;
      best = warp_max(best);
#pragma unroll
      for (int j = 0; j < MAX_PER_THREAD; ++j)
        if (keys[j] == best) keys[j] = 0;              // its owner drops it (keys are unique)
      if (lane == 0) candidates[warp * MAX_K + r] = best;
    }
    __syncthreads();
    if (warp == 0) {          // merge the warps' sorted lists: lane w holds warp w's head
      int head = 0;
      for (int r = 0; r < k; ++r) {
        const u64 mine = lane < warps && head < k ? candidates[lane * MAX_K + head] : 0;
        const u64 best = warp_max(mine);
        if (mine == best) ++head;
        if (lane == 0) {
          const int col = column_of(best);
          vals[(long long)row * k + r] = src[col];
          idx[(long long)row * k + r] = col;
        }
      }
    }
    __syncthreads();
  }
}
