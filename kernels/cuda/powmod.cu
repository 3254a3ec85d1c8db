/*
 * powmod.cu — the kernels of powmod.cuh whose operands are all of the
 * first types: a float32, float16, bfloat16, int64 or int32 base with an
 * exponent of those or int8 or uint8, and Mod of float32, float16,
 * bfloat16, int64, int32, int8 and uint8. Launcher: kernels/cuda/powmod.c.
 */
#include "powmod.cuh"

#define POW_EXPONENTS(TA, sa)            \
	POW_KERNEL(TA, sa, float, f32)   \
	POW_KERNEL(TA, sa, f16, f16)     \
	POW_KERNEL(TA, sa, bf16, bf16)   \
	POW_KERNEL(TA, sa, i64, i64)     \
	POW_KERNEL(TA, sa, i32, i32)     \
	POW_KERNEL(TA, sa, i8, i8)       \
	POW_KERNEL(TA, sa, u8, u8)

POW_EXPONENTS(float, f32)
POW_EXPONENTS(f16, f16)
POW_EXPONENTS(bf16, bf16)
POW_EXPONENTS(i64, i64)
POW_EXPONENTS(i32, i32)

MOD_KERNEL(float, f32)
MOD_KERNEL(f16, f16)
MOD_KERNEL(bf16, bf16)
MOD_KERNEL(i64, i64)
MOD_KERNEL(i32, i32)
MOD_KERNEL(i8, i8)
MOD_KERNEL(u8, u8)
