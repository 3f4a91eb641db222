/* Each DPU its own MRAM: the merge of a launch on several DPUs, written once
 * for edsl's DPU model (edsl/dpu/merge.py compiles it for the host, with
 * EDSL_MERGE_ENTRIES) and for the host runner of exported projects (which
 * includes it after dpu_abi.h: EDSL_LOG_ENTRY).
 *
 * Every DPU ran on its own copy of the arrays and logged the bytes each
 * load, store and atomic used. DPU by DPU, bytes one DPU wrote are taken from
 * it, equal stores from several DPUs agree, and atomics whose old value is
 * unused are combined (the first DPU's value, then each next one's in);
 * anything else two DPUs share is refused, naming an element, both DPUs and
 * their uses: the first in the order `struct sharing`'s key gives (all
 * claims, DPU by DPU, before any read).
 *
 * One array at a time: `merge_begin`, then `merge_take` for each DPU in turn
 * (its writes), then `merge_reads` for each (its reads), then `merge_end`.
 * Nothing here prints or exits: the caller words what went wrong. */
#ifndef EDSL_MERGE_H
#define EDSL_MERGE_H

#include <stdint.h>
#if __STDC_HOSTED__
#include <math.h>
#include <stdlib.h>
#include <string.h>
#else
/* (the DPU model compiles it freestanding, with clang's own headers: the C
 * library's functions it calls, declared) */
#include <stddef.h>
void *malloc(size_t size);
void *calloc(size_t n, size_t size);
void free(void *p);
void qsort(void *base, size_t n, size_t size, int (*compare)(const void *, const void *));
void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
double ldexp(double x, int e);
#define NAN __builtin_nan("")
#define INFINITY __builtin_inf()
#endif

#include "half_bits.h"

/* The codes of the access log (edsl.target.dpu): a kind's low bits are an
 * ACCESS_*, an atomic's has its ATOMIC_* operation, flags, float type and
 * element size above. MERGED_ATOMICS: the operations (bits) the host merges
 * across DPUs when their old value is unused. MIXED, MIXED_ATOMICS: a byte
 * one DPU both stored to and updated atomically, or updated with different
 * atomics. SHARED_*: why a sharing is refused (abi.Shared). */
${codes}

/* One DPU's access log: its tasklets' entries, tasklet by tasklet. */
struct dpu_log {
  int64_t *rows;
  size_t n;
};

/* One DPU's use of a byte: its kind (a log kind, EDSL_MIXED or
 * EDSL_MIXED_ATOMICS) and site. */
struct use {
  int64_t dpu, kind, site;
};

/* The sharing the merge refuses (`why`: an EDSL_SHARED_*); `key` orders them
 * (claims before reads, then DPU, then address, then the read's log row). */
struct sharing {
  int found, why;
  uint64_t key[4];
  int array;                       /* the array's number */
  uint64_t address;                /* offset of the byte from DPU_MRAM_HEAP_POINTER */
  struct use first, second;
};

static void refuse(struct sharing *s, const uint64_t key[4], int why, int array, uint64_t address,
                   struct use first, struct use second) {
  if (s->found) {
    int k = 0;
    while (k < 4 && key[k] == s->key[k])
      k++;
    if (k == 4 || key[k] > s->key[k])
      return;                                       /* (the model meets the one kept first) */
  }
  s->found = 1;
  s->why = why;
  memcpy(s->key, key, sizeof s->key);
  s->array = array;
  s->address = address;
  s->first = first;
  s->second = second;
}

/* A log entry's claim: its bytes [lo, hi) (image addresses, within one span
 * of the merge), the position of `lo` and the end of its span, and the
 * entry's row. */
struct claim {
  int64_t kind, lo, hi, site;
  size_t row;
  int64_t pos, limit;
};

static int claims_by_kind(const void *x, const void *y) {
  const struct claim *a = x, *b = y;
  if (a->kind != b->kind)
    return a->kind < b->kind ? -1 : 1;
  if (a->lo != b->lo)
    return a->lo < b->lo ? -1 : 1;
  return a->row < b->row ? -1 : a->row > b->row;
}

static int claims_by_address(const void *x, const void *y) {
  const struct claim *a = x, *b = y;
  if (a->lo != b->lo)
    return a->lo < b->lo ? -1 : 1;
  return a->kind < b->kind ? -1 : a->kind > b->kind;
}

static int atomic_op(int64_t kind) {
  return (int)((kind >> EDSL_ATOMIC_OP_SHIFT) & EDSL_ATOMIC_OP_MASK);
}

/* Stores, and the atomics the host merges (their old value unused). */
static int mergeable(int64_t kind) {
  if (kind == EDSL_ACCESS_WRITE)
    return 1;
  return kind > 0 && (kind & EDSL_ACCESS_MASK) == EDSL_ACCESS_ATOMIC && !(kind & EDSL_ATOMIC_OLD_USED)
         && (EDSL_MERGED_ATOMICS >> atomic_op(kind) & 1);
}

/* A byte's kind in one DPU once another of its claims has kind `kind`. */
static int64_t mixed(int64_t current, int64_t kind) {
  if (current == kind)
    return current;
  return current == EDSL_ACCESS_WRITE || kind == EDSL_ACCESS_WRITE || current == EDSL_MIXED ? EDSL_MIXED
                                                                                              : EDSL_MIXED_ATOMICS;
}

/* A 16-bit float (`man` mantissa bits, exponent bias `bias`) as a double:
 * exact, in integer code (no 16-bit float type or runtime helper needed). */
static double half_value(uint16_t bits, int man, int bias) {
  int exp = (bits & 0x7fff) >> man, top = 0x7fff >> man;
  double sign = bits & 0x8000 ? -1.0 : 1.0, frac = (double)(bits & ((1u << man) - 1));
  if (exp == top)
    return frac != 0.0 ? NAN : sign * INFINITY;
  if (exp == 0)                                    /* zero and subnormals */
    return sign * ldexp(frac, 1 - bias - man);
  return sign * ldexp(frac + (double)(1u << man), exp - bias - man);
}

/* Whether NumPy's maximum / minimum of floats keeps the first (a NaN first;
 * of equal values, the second). */
#define KEEP_MAX(a, b) ((a) > (b) || (a) != (a))
#define KEEP_MIN(a, b) ((a) < (b) || (a) != (a))

/* Element `r` (the merged value so far) with one more DPU's final value `f`
 * in (`p`: as transferred), in the element's type: add adds f - p, max / min
 * take f in, and / or apply it, xor adds its change. */
static void combine(int64_t kind, uint8_t *r, const uint8_t *f, const uint8_t *p) {
  int op = atomic_op(kind), fl = (int)((kind >> EDSL_ATOMIC_FLOAT_SHIFT) & EDSL_ATOMIC_FLOAT_MASK);
  size_t size = (size_t)(kind >> EDSL_ATOMIC_SIZE_SHIFT);
  int add = op == EDSL_ATOMIC_ADD || op == EDSL_ATOMIC_FADD;
  int max = op == EDSL_ATOMIC_MAX || op == EDSL_ATOMIC_UMAX || op == EDSL_ATOMIC_FMAX;
  if (fl == EDSL_ATOMIC_FLOAT_F32) {
    float rv, fv, pv;
    memcpy(&rv, r, 4), memcpy(&fv, f, 4), memcpy(&pv, p, 4);
    float change = fv - pv;
    rv = add ? rv + change : (max ? KEEP_MAX(rv, fv) : KEEP_MIN(rv, fv)) ? rv : fv;
    memcpy(r, &rv, 4);
  } else if (fl == EDSL_ATOMIC_FLOAT_F64) {
    double rv, fv, pv;
    memcpy(&rv, r, 8), memcpy(&fv, f, 8), memcpy(&pv, p, 8);
    double change = fv - pv;
    rv = add ? rv + change : (max ? KEEP_MAX(rv, fv) : KEEP_MIN(rv, fv)) ? rv : fv;
    memcpy(r, &rv, 8);
  } else if (fl == EDSL_ATOMIC_FLOAT_F16 || fl == EDSL_ATOMIC_FLOAT_BF16) {
    /* Each operation rounded to the 16-bit type, as NumPy computes it (the
     * exact result, a double here, rounded). */
    int bf = fl == EDSL_ATOMIC_FLOAT_BF16, man = bf ? 7 : 10, bias = bf ? 127 : 15;
    uint16_t rb, fb, pb;
    memcpy(&rb, r, 2), memcpy(&fb, f, 2), memcpy(&pb, p, 2);
    double rv = half_value(rb, man, bias), fv = half_value(fb, man, bias), pv = half_value(pb, man, bias);
    if (add) {
      uint16_t change = edsl_half_bits(fv - pv, bf);
      rb = edsl_half_bits(rv + half_value(change, man, bias), bf);
    } else {
      rb = (max ? KEEP_MAX(rv, fv) : KEEP_MIN(rv, fv)) ? rb : fb;
    }
    memcpy(r, &rb, 2);
  } else {
    uint64_t rv = 0, fv = 0, pv = 0, mask = size == 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * size)) - 1;
    memcpy(&rv, r, size), memcpy(&fv, f, size), memcpy(&pv, p, size);
    int shift = 64 - 8 * (int)size;                  /* signed max / min: sign-extended */
    int64_t rs = (int64_t)(rv << shift) >> shift, fs = (int64_t)(fv << shift) >> shift;
    switch (op) {
      case EDSL_ATOMIC_ADD: rv = rv + fv - pv; break;
      case EDSL_ATOMIC_MAX: rv = fs > rs ? fv : rv; break;
      case EDSL_ATOMIC_MIN: rv = fs < rs ? fv : rv; break;
      case EDSL_ATOMIC_UMAX: rv = fv > rv ? fv : rv; break;
      case EDSL_ATOMIC_UMIN: rv = fv < rv ? fv : rv; break;
      /* Triton's float max / min on the bits: a signed max of the sign-clear
       * values and an unsigned min of the sign-set ones commute, so DPUs'
       * results merge as one (for min: the unsigned max where either is
       * sign-set, else the signed min). */
      case EDSL_ATOMIC_FMAX_BITS: rv = rs >= 0 || fs >= 0 ? (fs > rs ? fv : rv) : (fv < rv ? fv : rv); break;
      case EDSL_ATOMIC_FMIN_BITS: rv = rs < 0 || fs < 0 ? (fv > rv ? fv : rv) : (fs < rs ? fv : rv); break;
      case EDSL_ATOMIC_AND: rv &= fv; break;
      case EDSL_ATOMIC_OR: rv |= fv; break;
      default: rv ^= fv ^ pv; break;               /* EDSL_ATOMIC_XOR */
    }
    rv &= mask;
    memcpy(r, &rv, size);
  }
}

/* The merge of bytes of the arrays' image: its spans [starts[k], ends[k])
 * (addresses, in order, apart), their bytes one after another at positions
 * 0 .. n - 1 (span k's from offsets[k]): as transferred (`pristine`) and
 * merged so far (`result`); per position, the first DPU that wrote the byte,
 * its kind and site, a second DPU that wrote it and its site, and the use of
 * the DPU being taken (`mark`: its number + 1). The exported runner merges
 * one array as one span; the DPU model the bytes some DPU wrote, whatever
 * lies between them. */
struct merge {
  int array;
  size_t nspans;
  const int64_t *starts, *ends;
  int64_t *offsets;
  size_t n;
  const uint8_t *pristine;
  uint8_t *result;
  int32_t *owner, *other, *mark;
  int64_t *kind, *site, *other_site, *dkind, *dsite;
  struct claim *claims;
  size_t claims_cap;
  int stopped;                     /* a sharing refused in it, or a DPU's unlogged change */
  int64_t unlogged;                /* the position of a byte a DPU changed without logging it (-1: none) */
  struct sharing *refused;         /* the launch's refusal so far (of any array) */
};

static void merge_end(struct merge *m);

/* Array number `array`: the bytes of spans [starts[k], ends[k]) (k <
 * `nspans`; the arrays stay the caller's), as transferred (`pristine`, by
 * position), merged into `result`; refusals go to `s`. Returns 0, or -1
 * where its memory cannot be allocated (nothing is left allocated). */
static int merge_begin(struct merge *m, int array, size_t nspans, const int64_t *starts, const int64_t *ends,
                       const uint8_t *pristine, uint8_t *result, struct sharing *s) {
  memset(m, 0, sizeof *m);
  m->array = array, m->nspans = nspans, m->starts = starts, m->ends = ends;
  m->pristine = pristine, m->result = result, m->unlogged = -1, m->refused = s;
  m->offsets = malloc((nspans + 1) * sizeof *m->offsets);
  if (!m->offsets)
    return -1;
  m->offsets[0] = 0;
  for (size_t k = 0; k < nspans; k++)
    m->offsets[k + 1] = m->offsets[k] + (ends[k] - starts[k]);
  size_t n = m->n = (size_t)m->offsets[nspans];
  size_t b32 = (n ? n : 1) * sizeof(int32_t), b64 = (n ? n : 1) * sizeof(int64_t);
  m->owner = malloc(b32), m->other = malloc(b32), m->mark = calloc(n ? n : 1, sizeof(int32_t));
  m->kind = malloc(b64), m->site = malloc(b64), m->other_site = malloc(b64), m->dkind = malloc(b64);
  m->dsite = malloc(b64);
  if (!m->owner || !m->other || !m->mark || !m->kind || !m->site || !m->other_site || !m->dkind || !m->dsite) {
    merge_end(m);
    return -1;
  }
  memcpy(result, pristine, n);
  for (size_t b = 0; b < n; b++)
    m->owner[b] = m->other[b] = -1;
  return 0;
}

/* The first span that ends above address `a` (`nspans` where none does). */
static size_t merge_span_after(const struct merge *m, int64_t a) {
  size_t lo = 0, hi = m->nspans;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (m->ends[mid] <= a)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The span that holds address `a`, or -1 where none does (the spans are in
 * order and apart: the first that ends above it, if it starts at or below). */
static int64_t merge_span(const struct merge *m, int64_t a) {
  size_t k = merge_span_after(m, a);
  return k < m->nspans && m->starts[k] <= a ? (int64_t)k : -1;
}

/* DPU `d`'s writes (stores and atomics), from its log; `part` holds the bytes
 * at positions part_lo .. part_hi - 1 as the DPU left them, where its claims
 * lie (part[p - part_lo] is position p). With `check`, the other bytes of the
 * part must be as transferred (a DPU that changed one without logging it:
 * `unlogged`; the DPU model makes its parts from the logs, and reads only
 * their claimed bytes). Returns 0; or -1 for such a byte, or where memory
 * ran out. */
static int merge_take(struct merge *m, uint32_t d, const struct dpu_log *log, const uint8_t *part, int64_t part_lo,
                      int64_t part_hi, int check) {
  if (m->stopped)
    return 0;
  if (log->n > m->claims_cap) {
    free(m->claims);
    m->claims_cap = log->n;
    m->claims = malloc(m->claims_cap * sizeof *m->claims);
    if (!m->claims) {
      m->claims_cap = 0;
      m->stopped = 1;
      return -1;
    }
  }
  struct claim *claims = m->claims;
  /* The DPU's claims on the spans, within its part, each run of overlapping
   * or adjacent claims of one kind as one, with its first site. */
  size_t nc = 0;
  for (size_t r = 0; r < log->n; r++) {
    const int64_t *e = log->rows + r * EDSL_LOG_ENTRY;
    int64_t k = (e[0] & EDSL_ACCESS_MASK) != EDSL_ACCESS_READ && e[1] < e[2] ? merge_span(m, e[1]) : -1;
    if (k < 0)
      continue;
    int64_t base = m->offsets[k] - m->starts[k];          /* (position - address in span k) */
    int64_t lo = e[1] > part_lo - base ? e[1] : part_lo - base, hi = e[2] < m->ends[k] ? e[2] : m->ends[k];
    hi = hi < part_hi - base ? hi : part_hi - base;
    if (lo < hi)
      claims[nc++] = (struct claim){e[0], lo, hi, e[3], r, lo + base, m->ends[k]};
  }
  qsort(claims, nc, sizeof *claims, claims_by_kind);
  size_t runs = 0;
  for (size_t c = 0; c < nc; c++) {
    struct claim *last = runs ? &claims[runs - 1] : NULL;
    if (last && last->kind == claims[c].kind && claims[c].lo <= last->hi) {
      if (claims[c].hi > last->hi)
        last->hi = claims[c].hi;
    } else {
      claims[runs++] = claims[c];
    }
  }
  qsort(claims, runs, sizeof *claims, claims_by_address);
  /* Each byte's use in this DPU: the first claim's site; its kind, or mixed. */
  for (size_t c = 0; c < runs; c++)
    for (int64_t p = claims[c].pos; p < claims[c].pos + (claims[c].hi - claims[c].lo); p++) {
      if (m->mark[p] != (int32_t)d + 1) {
        m->mark[p] = (int32_t)d + 1;
        m->dkind[p] = claims[c].kind;
        m->dsite[p] = claims[c].site;
      } else {
        m->dkind[p] = mixed(m->dkind[p], claims[c].kind);
      }
    }
  for (int64_t p = part_lo; check && p < part_hi; p++)
    if (part[p - part_lo] != m->pristine[p] && m->mark[p] != (int32_t)d + 1) {
      m->unlogged = p;
      m->stopped = 1;
      return -1;
    }
  /* Its bytes in address order, each once: new ones taken, shared ones
   * checked and combined. */
  int64_t upto = INT64_MIN;
  for (size_t c = 0; c < runs; c++) {
    for (int64_t a = claims[c].lo > upto ? claims[c].lo : upto; a < claims[c].hi; a++) {
      int64_t p = claims[c].pos + (a - claims[c].lo), k = m->dkind[p];
      if (m->owner[p] < 0) {
        m->owner[p] = (int32_t)d;
        m->kind[p] = k;
        m->site[p] = m->dsite[p];
        m->result[p] = part[p - part_lo];
        continue;
      }
      if (m->kind[p] != k || !mergeable(k) || (k == EDSL_ACCESS_WRITE && m->result[p] != part[p - part_lo])) {
        uint64_t key[4] = {0, d, (uint64_t)a, 0};
        int stores = k == EDSL_ACCESS_WRITE && m->kind[p] == EDSL_ACCESS_WRITE;
        refuse(m->refused, key, stores ? EDSL_SHARED_STORES : EDSL_SHARED_USES, m->array, (uint64_t)a,
               (struct use){m->owner[p], m->kind[p], m->site[p]}, (struct use){d, k, m->dsite[p]});
        m->stopped = 1;
        return 0;
      }
      int64_t size = k >> EDSL_ATOMIC_SIZE_SHIFT;
      if (k != EDSL_ACCESS_WRITE && a % size == 0 && a + size <= claims[c].limit)
        combine(k, m->result + p, part + (p - part_lo), m->pristine + p);
      if (m->other[p] < 0) {
        m->other[p] = (int32_t)d;
        m->other_site[p] = m->dsite[p];
      }
    }
    if (claims[c].hi > upto)
      upto = claims[c].hi;
  }
  return 0;
}

/* DPU `d`'s reads, once every DPU's writes are in: only of bytes no other
 * DPU wrote (the lowest such byte a DPU read is named, as the model names it). */
static void merge_reads(struct merge *m, uint32_t d, const struct dpu_log *log) {
  if (m->stopped)
    return;
  for (size_t r = 0; r < log->n; r++) {     /* (each row's first such byte: the lowest of all is kept) */
    const int64_t *e = log->rows + r * EDSL_LOG_ENTRY;
    if ((e[0] & EDSL_ACCESS_MASK) != EDSL_ACCESS_READ)
      continue;
    int found = 0;                         /* (the spans it reads: from the first that ends above its first byte) */
    for (size_t k = merge_span_after(m, e[1]); k < m->nspans && m->starts[k] < e[2] && !found; k++) {
      int64_t from = e[1] > m->starts[k] ? e[1] : m->starts[k], to = e[2] < m->ends[k] ? e[2] : m->ends[k];
      for (int64_t a = from; a < to; a++) {
        int64_t p = m->offsets[k] + (a - m->starts[k]);
        int32_t owner = m->owner[p], other = m->other[p];
        if (owner < 0 || (owner == (int32_t)d && (other < 0 || other == (int32_t)d)))
          continue;
        struct use writer = owner == (int32_t)d ? (struct use){other, m->kind[p], m->other_site[p]}
                                                : (struct use){owner, m->kind[p], m->site[p]};
        uint64_t key[4] = {1, d, (uint64_t)a, r};
        refuse(m->refused, key, EDSL_SHARED_READ, m->array, (uint64_t)a, writer, (struct use){d, e[0], e[3]});
        m->stopped = 1;                    /* (after this DPU's rows: the next DPUs' reads are not checked) */
        found = 1;
        break;
      }
    }
  }
}

/* What the merge kept but the result (written to `result` as it went). */
static void merge_end(struct merge *m) {
  free(m->owner), free(m->other), free(m->mark), free(m->kind), free(m->site), free(m->other_site);
  free(m->dkind), free(m->dsite), free(m->claims), free(m->offsets);
  m->owner = m->other = m->mark = NULL;
  m->kind = m->site = m->other_site = m->dkind = m->dsite = NULL;
  m->claims = NULL;
  m->offsets = NULL;
}

#ifdef EDSL_MERGE_ENTRIES
/* The entries the DPU model calls through ctypes (edsl/dpu/merge.py). */
struct merge *edsl_merge_new(int array, size_t nspans, const int64_t *starts, const int64_t *ends,
                             const uint8_t *pristine, uint8_t *result, struct sharing *s) {
  struct merge *m = malloc(sizeof *m);
  if (m && merge_begin(m, array, nspans, starts, ends, pristine, result, s) == 0)
    return m;
  free(m);
  return NULL;
}

int edsl_merge_take(struct merge *m, uint32_t d, int64_t *rows, size_t n, const uint8_t *part, int64_t part_lo,
                    int64_t part_hi) {
  struct dpu_log log = {rows, n};
  return merge_take(m, d, &log, part, part_lo, part_hi, 0);
}

void edsl_merge_reads(struct merge *m, uint32_t d, int64_t *rows, size_t n) {
  struct dpu_log log = {rows, n};
  merge_reads(m, d, &log);
}

void edsl_merge_free(struct merge *m) {
  merge_end(m);
  free(m);
}
#endif

#endif
