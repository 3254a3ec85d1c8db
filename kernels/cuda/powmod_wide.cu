/*
 * powmod_wide.cu — the kernels of powmod.cuh with a float64, int16,
 * uint16, uint32 or uint64 operand: Pow of a float64 base with every
 * exponent type, of the first base types with these exponents, and Mod
 * of these types; apart from powmod.cu so that a model without them never
 * waits for their compile. Launcher: kernels/cuda/powmod.c.
 */
#include "powmod.cuh"

/* The exponents of the wider types. */
#define POW_WIDE_EXPONENTS(TA, sa)          \
	POW_KERNEL(TA, sa, double, f64)     \
	POW_KERNEL(TA, sa, i16, i16)        \
	POW_KERNEL(TA, sa, u64, u64)        \
	POW_KERNEL(TA, sa, u32, u32)        \
	POW_KERNEL(TA, sa, u16, u16)

POW_WIDE_EXPONENTS(float, f32)
POW_WIDE_EXPONENTS(f16, f16)
POW_WIDE_EXPONENTS(bf16, bf16)
POW_WIDE_EXPONENTS(i64, i64)
POW_WIDE_EXPONENTS(i32, i32)
POW_WIDE_EXPONENTS(double, f64)

/* A float64 base with the first exponent types. */
POW_KERNEL(double, f64, float, f32)
POW_KERNEL(double, f64, f16, f16)
POW_KERNEL(double, f64, bf16, bf16)
POW_KERNEL(double, f64, i64, i64)
POW_KERNEL(double, f64, i32, i32)
POW_KERNEL(double, f64, i8, i8)
POW_KERNEL(double, f64, u8, u8)

MOD_KERNEL(double, f64)
MOD_KERNEL(i16, i16)
MOD_KERNEL(u16, u16)
MOD_KERNEL(u32, u32)
MOD_KERNEL(u64, u64)
