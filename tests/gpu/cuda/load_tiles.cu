// The two operand tiles of step k of a matmul, filled from global memory into
// the call's shared tiles (16-byte cp.async where a tile row is whole and
// aligned, else element by element, zero beyond the matrices), both
// descriptors returned in one struct: the tiles Triton's tl.dot then reads.
#include <cuda_fp16.h>
#include <stdint.h>

typedef __attribute__((address_space(3))) half shalf;
typedef const __attribute__((address_space(1))) half ghalf;

struct Tile {
  shalf *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
};
struct Tiles {
  Tile a, b;
};

// rows x cols of the matrix m (row-major, `width` columns, `height` rows)
// from (row0, col0) into t.
static __device__ void fill(Tile t, ghalf *m, int64_t height, int64_t width, int64_t row0, int64_t col0) {
  const int64_t rows = t.sizes[0], cols = t.sizes[1];
  shalf *dst = t.aligned + t.offset;
  const bool whole = row0 + rows <= height && col0 + cols <= width && cols % 8 == 0 && width % 8 == 0 &&
                     col0 % 8 == 0 && t.strides[1] == 1 && t.strides[0] % 8 == 0 &&
                     ((uintptr_t)m & 15) == 0 && ((uintptr_t)dst & 15) == 0;
  if (whole) {
    for (int64_t v = threadIdx.x; v < rows * cols / 8; v += blockDim.x) {
      const int64_t r = v * 8 / cols, c = v * 8 % cols;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((uint32_t)(uintptr_t)(dst + r * t.strides[0] + c)),
                   "l"(m + (row0 + r) * width + col0 + c) : "memory");
    }
    asm volatile("cp.async.commit_group;\n\tcp.async.wait_group 0;" ::: "memory");
  } else {
    for (int64_t e = threadIdx.x; e < rows * cols; e += blockDim.x) {
      const int64_t r = e / cols, c = e % cols;
      const bool in = row0 + r < height && col0 + c < width;
      dst[r * t.strides[0] + c * t.strides[1]] = in ? m[(row0 + r) * width + col0 + c] : __float2half(0.0f);
    }
  }
}

__device__ Tiles LoadTiles(shalf *a_alloc, shalf *a, int64_t a_offset, int64_t a_rows, int64_t a_cols,
                           int64_t a_stride0, int64_t a_stride1, shalf *b_alloc, shalf *b, int64_t b_offset,
                           int64_t b_rows, int64_t b_cols, int64_t b_stride0, int64_t b_stride1, ghalf *x, ghalf *y,
                           int M, int N, int K, int pid_m, int pid_n, int k) {
  const Tiles t = {{a_alloc, a, a_offset, {a_rows, a_cols}, {a_stride0, a_stride1}},
                   {b_alloc, b, b_offset, {b_rows, b_cols}, {b_stride0, b_stride1}}};
  fill(t.a, x, M, K, (int64_t)pid_m * a_rows, (int64_t)k * a_cols);
  fill(t.b, y, K, N, (int64_t)k * b_rows, (int64_t)pid_n * b_cols);
  __syncthreads();
  return t;
}
