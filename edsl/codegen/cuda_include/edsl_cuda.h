// CUDA's device-side language for raw functions compiled by edsl: included
// before every CUDA C source (clang -include), since the compile uses no
// CUDA toolkit (-nocudainc). Each name is edsl's own definition over clang's
// NVPTX builtins; libm's functions are declared here and linked to libdevice
// by edsl (edsl.inject.gpu_library).
#pragma once

#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict

#include <stdint.h>
#include <stddef.h>

// --- vector types (CUDA's vector_types.h): aligned to their size, so that a
// load or store of one is one instruction
#define __EDSL_VEC2(t, n, a) struct __attribute__((aligned(a))) n##2 { t x, y; };
#define __EDSL_VEC4(t, n, a) struct __attribute__((aligned(a))) n##4 { t x, y, z, w; };
__EDSL_VEC2(float, float, 8) __EDSL_VEC4(float, float, 16) __EDSL_VEC2(int, int, 8) __EDSL_VEC4(int, int, 16)
__EDSL_VEC2(unsigned int, uint, 8) __EDSL_VEC4(unsigned int, uint, 16) __EDSL_VEC2(double, double, 16)
__EDSL_VEC2(long long, longlong, 16)
#undef __EDSL_VEC2
#undef __EDSL_VEC4
static __device__ __forceinline__ float2 make_float2(float x, float y) { return {x, y}; }
static __device__ __forceinline__ float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static __device__ __forceinline__ int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }

// --- built-in variables: `threadIdx.x` reads %tid.x (the unused axes fold away)
struct uint3 { unsigned int x, y, z; };
struct dim3 { unsigned int x, y, z; };
#define __EDSL_SREG3(type, name, reg)                                                        \
  static __device__ __forceinline__ type name() {                                              \
    return {(unsigned int)__nvvm_read_ptx_sreg_##reg##_x(), (unsigned int)__nvvm_read_ptx_sreg_##reg##_y(), \
            (unsigned int)__nvvm_read_ptx_sreg_##reg##_z()};                                   \
  }
__EDSL_SREG3(uint3, __edsl_thread_idx, tid)
__EDSL_SREG3(uint3, __edsl_block_idx, ctaid)
__EDSL_SREG3(dim3, __edsl_block_dim, ntid)
__EDSL_SREG3(dim3, __edsl_grid_dim, nctaid)
#undef __EDSL_SREG3
#define threadIdx (__edsl_thread_idx())
#define blockIdx (__edsl_block_idx())
#define blockDim (__edsl_block_dim())
#define gridDim (__edsl_grid_dim())
#define warpSize 32

// --- synchronization (__syncthreads is clang's builtin)
static __device__ __forceinline__ void __syncwarp(unsigned int mask = 0xffffffffu) { __nvvm_bar_warp_sync(mask); }
static __device__ __forceinline__ void __threadfence_block() { __nvvm_membar_cta(); }
static __device__ __forceinline__ void __threadfence() { __nvvm_membar_gl(); }
static __device__ __forceinline__ void __threadfence_system() { __nvvm_membar_sys(); }

// --- warp shuffles and votes: `c` packs the segment width as PTX's shfl.sync wants it
#define __EDSL_SHFL(name, op, clamp)                                                             \
  static __device__ __forceinline__ int name(unsigned int m, int v, int x, int w = 32) {       \
    return __nvvm_shfl_sync_##op##_i32(m, v, x, ((32 - w) << 8) | (clamp)); }                    \
  static __device__ __forceinline__ unsigned int name(unsigned int m, unsigned int v, int x,   \
                                                       int w = 32) {                           \
    return (unsigned int)__nvvm_shfl_sync_##op##_i32(m, (int)v, x, ((32 - w) << 8) | (clamp)); } \
  static __device__ __forceinline__ float name(unsigned int m, float v, int x, int w = 32) {   \
    return __nvvm_shfl_sync_##op##_f32(m, v, x, ((32 - w) << 8) | (clamp)); }                    \
  static __device__ __forceinline__ long long name(unsigned int m, long long v, int x,         \
                                                    int w = 32) {                              \
    int lo = name(m, (int)v, x, w), hi = name(m, (int)(v >> 32), x, w);                        \
    return (long long)(((unsigned long long)(unsigned int)hi << 32) | (unsigned int)lo); }      \
  static __device__ __forceinline__ double name(unsigned int m, double v, int x, int w = 32) { \
    return __builtin_bit_cast(double, name(m, __builtin_bit_cast(long long, v), x, w)); }
__EDSL_SHFL(__shfl_sync, idx, 0x1f)
__EDSL_SHFL(__shfl_up_sync, up, 0)
__EDSL_SHFL(__shfl_down_sync, down, 0x1f)
__EDSL_SHFL(__shfl_xor_sync, bfly, 0x1f)
#undef __EDSL_SHFL
static __device__ __forceinline__ unsigned int __ballot_sync(unsigned int m, int p) { return __nvvm_vote_ballot_sync(m, p); }
static __device__ __forceinline__ int __any_sync(unsigned int m, int p) { return __nvvm_vote_any_sync(m, p); }
static __device__ __forceinline__ int __all_sync(unsigned int m, int p) { return __nvvm_vote_all_sync(m, p); }
static __device__ __forceinline__ unsigned int __activemask() { return __nvvm_activemask(); }
static __device__ __forceinline__ int __popc(unsigned int x) { return __builtin_popcount(x); }
static __device__ __forceinline__ int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static __device__ __forceinline__ int __clz(int x) { return x ? __builtin_clz(x) : 32; }
static __device__ __forceinline__ int __ffs(int x) { return __builtin_ffs(x); }

// --- atomics: device scope, relaxed, on a pointer of any address space; the old value
#define __EDSL_ATOMIC(name, builtin)                                                   \
  template <typename P, typename V> static __device__ __forceinline__ auto name(P p, V v) { \
    return builtin(p, v, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE); }
__EDSL_ATOMIC(atomicAdd, __scoped_atomic_fetch_add)
__EDSL_ATOMIC(atomicSub, __scoped_atomic_fetch_sub)
__EDSL_ATOMIC(atomicMax, __scoped_atomic_fetch_max)
__EDSL_ATOMIC(atomicMin, __scoped_atomic_fetch_min)
__EDSL_ATOMIC(atomicAnd, __scoped_atomic_fetch_and)
__EDSL_ATOMIC(atomicOr, __scoped_atomic_fetch_or)
__EDSL_ATOMIC(atomicXor, __scoped_atomic_fetch_xor)
__EDSL_ATOMIC(atomicExch, __scoped_atomic_exchange_n)
#undef __EDSL_ATOMIC
template <typename P, typename V> static __device__ __forceinline__ V atomicCAS(P p, V expected, V desired) {
  __scoped_atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED,
                                     __MEMORY_SCOPE_DEVICE);
  return expected;
}

// --- printf and assert (CUDA's vprintf and __assertfail)
extern "C" __device__ int vprintf(const char *, const char *);
extern "C" __device__ int printf(const char *, ...);
extern "C" __device__ void __assertfail(const char *, const char *, unsigned int, const char *, size_t);
#define assert(e) ((e) ? (void)0 : __assertfail(#e, __FILE__, __LINE__, __func__, 1))

// --- libm: f32 and f64 (libdevice's __nv_ functions, linked by edsl)
#define __EDSL_LIBM1(n) extern "C" __device__ double n(double); extern "C" __device__ float n##f(float);
#define __EDSL_LIBM2(n) extern "C" __device__ double n(double, double); extern "C" __device__ float n##f(float, float);
__EDSL_LIBM1(acos) __EDSL_LIBM1(acosh) __EDSL_LIBM1(asin) __EDSL_LIBM1(asinh) __EDSL_LIBM1(atan)
__EDSL_LIBM1(atanh) __EDSL_LIBM1(cbrt) __EDSL_LIBM1(ceil) __EDSL_LIBM1(cos) __EDSL_LIBM1(cosh)
__EDSL_LIBM1(erf) __EDSL_LIBM1(erfc) __EDSL_LIBM1(exp) __EDSL_LIBM1(exp2) __EDSL_LIBM1(expm1)
__EDSL_LIBM1(fabs) __EDSL_LIBM1(floor) __EDSL_LIBM1(log) __EDSL_LIBM1(log10) __EDSL_LIBM1(log1p)
__EDSL_LIBM1(log2) __EDSL_LIBM1(rint) __EDSL_LIBM1(round) __EDSL_LIBM1(sin) __EDSL_LIBM1(sinh)
__EDSL_LIBM1(sqrt) __EDSL_LIBM1(tan) __EDSL_LIBM1(tanh) __EDSL_LIBM1(trunc)
__EDSL_LIBM2(atan2) __EDSL_LIBM2(copysign) __EDSL_LIBM2(fmod) __EDSL_LIBM2(pow)
__EDSL_LIBM2(fmax) __EDSL_LIBM2(fmin)
extern "C" __device__ double fma(double, double, double);
extern "C" __device__ float fmaf(float, float, float);
extern "C" __device__ double rsqrt(double);
extern "C" __device__ float rsqrtf(float);
#undef __EDSL_LIBM1
#undef __EDSL_LIBM2
// CUDA's fast f32 intrinsics (the GPU's approximate instructions, libdevice's __nv_fast_)
#define __EDSL_FAST(n) extern "C" __device__ float __nv_fast_##n(float); \
  static __device__ __forceinline__ float __##n(float x) { return __nv_fast_##n(x); }
__EDSL_FAST(expf) __EDSL_FAST(exp10f) __EDSL_FAST(logf) __EDSL_FAST(log2f) __EDSL_FAST(log10f)
__EDSL_FAST(sinf) __EDSL_FAST(cosf) __EDSL_FAST(tanf)
#undef __EDSL_FAST
static __device__ __forceinline__ float __fdividef(float a, float b) { return __nvvm_div_approx_f(a, b); }
static __device__ __forceinline__ float __frcp_rn(float a) { return __nvvm_rcp_rn_f(a); }
static __device__ __forceinline__ float __fsqrt_rn(float a) { return __nvvm_sqrt_rn_f(a); }
static __device__ __forceinline__ float __saturatef(float a) { return __nvvm_saturate_f(a); }
static __device__ __forceinline__ int min(int a, int b) { return a < b ? a : b; }
static __device__ __forceinline__ int max(int a, int b) { return a > b ? a : b; }
static __device__ __forceinline__ unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
static __device__ __forceinline__ unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
static __device__ __forceinline__ long long min(long long a, long long b) { return a < b ? a : b; }
static __device__ __forceinline__ long long max(long long a, long long b) { return a > b ? a : b; }
static __device__ __forceinline__ float min(float a, float b) { return fminf(a, b); }
static __device__ __forceinline__ float max(float a, float b) { return fmaxf(a, b); }
