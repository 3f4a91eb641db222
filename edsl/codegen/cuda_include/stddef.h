// size_t and friends, from the compiler's own macros.
#pragma once
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
#define NULL nullptr
#define offsetof(t, m) __builtin_offsetof(t, m)
