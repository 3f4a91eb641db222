// C = A B on the tensor cores of an H100/H200 (sm_90a), in CUDA C, called once
// per program by fl.call from examples/gpu_matmul_cuda.py with global
// pointers. A is M x K, B is read K-major (element (k, n) at b[n * ldb + k]:
// the layout of an N x K row-major tensor, transposed), C is M x N; all f16,
// accumulated in f32. The program computes the 128 x 256 tile of C at
// (m0, n0) with two warpgroups (8 warps), each 64 rows of it, by
// `wgmma.mma_async` m64n256k16 on shared-memory descriptors; the K loop runs
// over 64-wide slices brought by `cp.async` into a 4-stage ring, laid out as
// wgmma's 128-byte swizzle wants them (16-byte chunk c of row r at chunk
// c ^ (r % 8)), two slices in flight while one is multiplied. Rows and
// columns past M, N or K are zero-filled (cp.async's source size), so any
// shape works; a K that is not a multiple of 8 (rows not 16-byte aligned)
// takes element loads. The ring lives in the shared memory fl.call stages
// its tile operands in: the kernel passes workspace tiles of 193 KiB.
#include <cuda_fp16.h>

typedef __attribute__((address_space(1))) half ghalf;
typedef __attribute__((address_space(3))) half shalf;
typedef __attribute__((address_space(3))) long long sword;
typedef uint32_t u32x4 __attribute__((ext_vector_type(4)));

namespace {

constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, THREADS = 256;
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int ROW_BYTES = BK * 2;             // 128: one swizzle row
constexpr int C_STRIDE = BN + 8;              // halves a row of the C tile staged for the epilogue

__device__ __forceinline__ uint32_t shared_address(const sword *p) { return (uint32_t)(uintptr_t)p; }

__device__ __forceinline__ void cp_async16(uint32_t dst, const ghalf *src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"((uint64_t)(uintptr_t)src),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ void st_shared16(uint32_t dst, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

__device__ __forceinline__ uint32_t pack(half lo, half hi) {
  return (uint32_t)__builtin_bit_cast(uint16_t, lo) | (uint32_t)__builtin_bit_cast(uint16_t, hi) << 16;
}

// 8 halves of row `row` from column `col` on, zero past `cols` or past `rows`,
// into the 16 bytes at `dst`: cp.async when rows are 16-byte aligned, else
// element loads.
template <bool ALIGNED>
__device__ __forceinline__ void load_chunk(uint32_t dst, const ghalf *base, long long ld, int row, int rows, int col,
                                           int cols) {
  if (ALIGNED) {
    const bool in = row < rows && col < cols;     // (cols % 8 == 0: the chunk is whole)
    cp_async16(dst, in ? base + row * ld + col : base, in ? 16 : 0);
  } else {
    half h[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) h[j] = row < rows && col + j < cols ? base[row * ld + col + j] : (half)0.0f;
    st_shared16(dst, pack(h[0], h[1]), pack(h[2], h[3]), pack(h[4], h[5]), pack(h[6], h[7]));
  }
}

// The K slice at k0 of A's rows m0.. and B's columns n0.. into a stage (A then B).
template <bool ALIGNED>
__device__ __forceinline__ void load_stage(uint32_t stage, const ghalf *a, const ghalf *b, int M, int N, int K,
                                           long long lda, long long ldb, int m0, int n0, int k0, int tid) {
#pragma unroll
  for (int j = 0; j < BM * BK / 8 / THREADS; ++j) {
    const int i = tid + j * THREADS, row = i / 8, c = i % 8;
    load_chunk<ALIGNED>(stage + row * ROW_BYTES + ((c ^ (row % 8)) << 4), a, lda, m0 + row, M, k0 + 8 * c, K);
  }
#pragma unroll
  for (int j = 0; j < BN * BK / 8 / THREADS; ++j) {
    const int i = tid + j * THREADS, row = i / 8, c = i % 8;
    load_chunk<ALIGNED>(stage + A_BYTES + row * ROW_BYTES + ((c ^ (row % 8)) << 4), b, ldb, n0 + row, N, k0 + 8 * c,
                        K);
  }
}

// A shared-memory matrix descriptor: K-major rows of 128 bytes, 128-byte
// swizzle, 8-row groups 1024 bytes apart.
__device__ __forceinline__ uint64_t descriptor(uint32_t address) {
  return (uint64_t)((address & 0x3FFFF) >> 4) | (uint64_t)1 << 16 | (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

// Ties the accumulators to the asynchronous operations around them, so that
// the compiler neither reads them early nor moves them.
__device__ __forceinline__ void hold(float (&d)[128]) {
#pragma unroll
  for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

#define ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
    "+f"(d[i + 6]), "+f"(d[i + 7])

// d (64 x 256, f32, this warpgroup's fragments) += A (64 x 16) B (16 x 256).
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t a, uint64_t b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "
      "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "
      "%62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, "
      "%82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, "
      "%102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, "
      "%119, %120, %121, %122, %123, %124, %125, %126, %127},"
      " %128, %129, p, 1, 1, 0, 0;\n"
      "}\n"
      : ACC8(0), ACC8(8), ACC8(16), ACC8(24), ACC8(32), ACC8(40), ACC8(48), ACC8(56), ACC8(64), ACC8(72),
        ACC8(80), ACC8(88), ACC8(96), ACC8(104), ACC8(112), ACC8(120)
      : "l"(a), "l"(b), "r"(1));
}
#undef ACC8

template <bool ALIGNED>
__device__ __forceinline__ void mainloop(float (&d)[128], uint32_t ring, const ghalf *a, const ghalf *b, int M, int N,
                                         int K, long long lda, long long ldb, int m0, int n0, int tid) {
  const int slices = (K + BK - 1) / BK, wg = tid / 128;
#pragma unroll
  for (int s = 0; s < STAGES - 2; ++s) {
    if (s < slices) load_stage<ALIGNED>(ring + s * STAGE_BYTES, a, b, M, N, K, lda, ldb, m0, n0, s * BK, tid);
    cp_async_commit();
  }
  for (int kt = 0; kt < slices; ++kt) {
    // Slice kt has landed (each thread's copies, then everyone's); the
    // generic-proxy writes made visible to wgmma's async proxy; and every
    // warpgroup is done with slice kt - 2 (its wgmma waited for below).
    cp_async_wait<STAGES - 3>();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const int next = kt + STAGES - 2;     // into the stage slice kt - 2 used
    if (next < slices)
      load_stage<ALIGNED>(ring + (next % STAGES) * STAGE_BYTES, a, b, M, N, K, lda, ldb, m0, n0, next * BK, tid);
    cp_async_commit();
    const uint32_t stage = ring + (kt % STAGES) * STAGE_BYTES;
    const uint32_t sa = stage + wg * 64 * ROW_BYTES, sb = stage + A_BYTES;
    hold(d);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) wgmma_m64n256k16(d, descriptor(sa + 32 * kk), descriptor(sb + 32 * kk));
    wgmma_commit();
    wgmma_wait<1>();     // slice kt - 1's products are done: its stage is free after the next barrier
    hold(d);
  }
  wgmma_wait<0>();
  hold(d);
  cp_async_wait<0>();
}

}  // namespace

// The 128 x 256 tile of C at (m0, n0); every thread of a 256-thread block
// calls it. `ws0..ws2`: fl.call's workspace tiles, contiguous in shared memory
// (at least 4 stages of 48 KiB and 1 KiB to align them to 1024 bytes).
extern "C" __device__ void MatmulTC(ghalf *c, const ghalf *a, const ghalf *b, int M, int N, int K, int lda, int ldb,
                                    int ldc, int m0, int n0, sword *ws0_alloc, sword *ws0, int64_t ws0_offset,
                                    int64_t ws0_size, int64_t ws0_stride, sword *ws1_alloc, sword *ws1,
                                    int64_t ws1_offset, int64_t ws1_size, int64_t ws1_stride, sword *ws2_alloc,
                                    sword *ws2, int64_t ws2_offset, int64_t ws2_size, int64_t ws2_stride) {
  // (no assert here: a call in the function would make ptxas serialize the
  // wgmmas; the Python side launches 8 warps and passes 193 KiB)
  const int tid = threadIdx.x;
  const uint32_t ring = (shared_address(ws0) + 1023) & ~1023u;
  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.0f;
  const bool aligned = K % 8 == 0 && lda % 8 == 0 && ldb % 8 == 0 && (uintptr_t)a % 16 == 0 && (uintptr_t)b % 16 == 0;
  if (aligned) mainloop<true>(d, ring, a, b, M, N, K, lda, ldb, m0, n0, tid);
  else mainloop<false>(d, ring, a, b, M, N, K, lda, ldb, m0, n0, tid);

  // The tile through shared memory (f16, rows padded: no bank conflicts), then
  // out in 16-byte rows where whole and aligned.
  __syncthreads();
  shalf *ct = (shalf *)((__attribute__((address_space(3))) char *)ws0 + (ring - shared_address(ws0)));
  const int wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
  const int r0 = 64 * wg + 16 * warp + lane / 4, c0 = 2 * (lane % 4);
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    *(__attribute__((address_space(3))) half2 *)(ct + r0 * C_STRIDE + c0 + 8 * j) =
        __floats2half2_rn(d[4 * j], d[4 * j + 1]);
    *(__attribute__((address_space(3))) half2 *)(ct + (r0 + 8) * C_STRIDE + c0 + 8 * j) =
        __floats2half2_rn(d[4 * j + 2], d[4 * j + 3]);
  }
  __syncthreads();
  const bool vec = ldc % 8 == 0 && (uintptr_t)c % 16 == 0;
#pragma unroll 4
  for (int i = tid; i < BM * BN / 8; i += THREADS) {
    const int row = i / (BN / 8), col = 8 * (i % (BN / 8)), gr = m0 + row, gc = n0 + col;
    if (gr >= M || gc >= N) continue;
    const shalf *src = ct + row * C_STRIDE + col;
    ghalf *dst = c + (long long)gr * ldc + gc;
    if (vec && gc + 8 <= N) {
      *(__attribute__((address_space(1))) u32x4 *)dst = *(const __attribute__((address_space(3))) u32x4 *)src;
    } else {
      for (int j = 0; j < 8 && gc + j < N; ++j) dst[j] = src[j];
    }
  }
}
