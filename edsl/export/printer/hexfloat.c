/* C's "%a" of a double, as the C library of the DPU model prints it (glibc):
 * the DPU's printf has no %a. Added to an exported program that prints one. */
#define EDSL_HEXFLOAT_CHARS 32
static const char *edsl_hexfloat(char *out, double v) {
  union { double d; uint64_t u; } b;
  b.d = v;
  uint64_t man = b.u & UINT64_C(0xfffffffffffff);
  int exp = (int)((b.u >> 52) & 0x7ff), e, digits = 13, n = 0;
  char *p = out, tmp[8];
  if (b.u >> 63)
    *p++ = '-';
  if (exp == 0x7ff) {
    const char *word = man ? "nan" : "inf";
    while (*word)
      *p++ = *word++;
    *p = 0;
    return out;
  }
  *p++ = '0';
  *p++ = 'x';
  *p++ = exp ? '1' : '0';
  e = exp ? exp - 1023 : (man ? -1022 : 0);
  if (man) {
    while (!(man & 0xf)) {
      man >>= 4;
      digits--;
    }
    *p++ = '.';
    for (int k = digits - 1; k >= 0; k--)
      *p++ = "0123456789abcdef"[(man >> (4 * k)) & 0xf];
  }
  *p++ = 'p';
  *p++ = e < 0 ? '-' : '+';
  unsigned int u = (unsigned int)(e < 0 ? -e : e);
  do {
    tmp[n++] = (char)('0' + u % 10u);
    u /= 10u;
  } while (u);
  while (n)
    *p++ = tmp[--n];
  *p = 0;
  return out;
}
