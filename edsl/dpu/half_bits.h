/* A double rounded to 16-bit float bits, for the merge across DPUs of 16-bit
 * float atomics (merge.h) and the host runner's 16-bit float scalars
 * (kernel_args.h): one file of edsl's, in the DPU model and in exported
 * projects. */
#ifndef EDSL_HALF_BITS_H
#define EDSL_HALF_BITS_H

#include <stdint.h>

/* The merge of 16-bit float atomics rounds its results (exact
 * in double) to fp16 (`bf16` zero) or bf16 bits as NumPy's arithmetic does: to
 * nearest even, fp16 from the double, bf16 from the double rounded to float
 * first (ml_dtypes computes bf16 in float); a NaN becomes the quiet NaN of its
 * sign. Integer code: no 16-bit float type needed. */
static inline uint16_t edsl_half_bits(double x, int bf16) {
  const int man = bf16 ? 7 : 10, bias = bf16 ? 127 : 15, top = bf16 ? 0xff : 0x1f;
  union { double d; uint64_t u; } v;
  v.d = bf16 ? (double)(float)x : x;
  uint16_t sign = (uint16_t)(v.u >> 48 & 0x8000);
  int e = (int)(v.u >> 52 & 0x7ff);
  uint64_t sig = v.u & ((UINT64_C(1) << 52) - 1);
  if (e == 0x7ff)                                  /* infinity, or a quiet NaN */
    return (uint16_t)(sign | top << man | (sig ? 1u << (man - 1) : 0u));
  if (e == 0)                                      /* double subnormals: far below both formats */
    return sign;
  sig |= UINT64_C(1) << 52;                        /* x = sig * 2^(e - 1075) */
  /* The result's quantum 2^q: of the leading bit's binade, or of the subnormals. */
  int qmin = 1 - bias - man, q = e - 1023 - man > qmin ? e - 1023 - man : qmin;
  int drop = q - (e - 1075);                       /* at least 42 */
  if (drop > 53)                                   /* below half the smallest subnormal */
    return sign;
  uint64_t kept = sig >> drop, rest = sig & ((UINT64_C(1) << drop) - 1), half = UINT64_C(1) << (drop - 1);
  kept += rest > half || (rest == half && (kept & 1));
  /* Exponent field and significand in one sum: rounding up carries into it. */
  uint64_t enc = ((uint64_t)(q - qmin) << man) + kept;
  if (enc >= (uint64_t)top << man)
    enc = (uint64_t)top << man;                    /* overflow: infinity */
  return (uint16_t)(sign | enc);
}

#endif
