// A helper of scaled_copy.c, in a folder of its own.
static inline int32_t scale(int32_t v) { return SCALE * v; }
