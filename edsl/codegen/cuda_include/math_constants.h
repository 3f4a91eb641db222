// The constants of CUDA's math_constants.h used in device code (values: the
// mathematical constants, rounded to the type).
#pragma once
#define CUDART_INF_F __builtin_huge_valf()
#define CUDART_NAN_F __builtin_nanf("")
#define CUDART_INF __builtin_huge_val()
#define CUDART_NAN __builtin_nan("")
#define CUDART_PI_F 3.14159265358979323846f
#define CUDART_PI 3.14159265358979323846
#define CUDART_L2E_F 1.44269504088896340736f
#define CUDART_L2E 1.44269504088896340736
#define CUDART_L2T_F 3.32192809488736234787f
#define CUDART_LN2_F 0.693147180559945309417f
#define CUDART_LN2 0.693147180559945309417
#define CUDART_LG2_F 0.301029995663981195214f
#define CUDART_SQRT_2_F 1.41421356237309504880f
#define CUDART_SQRT_HALF_F 0.707106781186547524401f
#define CUDART_ZERO_F 0.0f
#define CUDART_ONE_F 1.0f
