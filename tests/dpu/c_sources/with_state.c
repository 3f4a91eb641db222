// A function keeping a count between calls.
static int32_t calls;  // <calls>

void count(int32_t *out) {
    calls += 1;
    out[0] = calls;
}
