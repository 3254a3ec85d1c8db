/*
 * bitwise.cu — the kernels of bitwise.cuh for int64, int32, int8 and
 * uint8 (bitwise_wide.cu has the other integer types). Launcher:
 * kernels/cuda/bitwise.c. Kernels: <op>_<type> (bitwiseand_i32,
 * bitshiftleft_u8, bitshiftright_i64) for any broadcast,
 * <op>_<type>_<a><b> for the fast paths of elem.cuh (a, b: f, r or s as
 * in binary.cu), and bitwisenot_<type>.
 */
#include "bitwise.cuh"

#define BITWISE_TYPES(name, OP)                 \
	BITWISE_KERNEL(name, OP, i64, i64)      \
	BITWISE_KERNEL(name, OP, i32, i32)      \
	BITWISE_KERNEL(name, OP, i8, i8)        \
	BITWISE_KERNEL(name, OP, u8, u8)

BITWISE_TYPES(bitwiseand, BIT_AND)
BITWISE_TYPES(bitwiseor, BIT_OR)
BITWISE_TYPES(bitwisexor, BIT_XOR)
BITWISE_TYPES(bitshiftleft, BIT_SHL)
BITWISE_TYPES(bitshiftright, BIT_SHR)

BITWISE_NOT(i64, i64)
BITWISE_NOT(i32, i32)
BITWISE_NOT(i8, i8)
BITWISE_NOT(u8, u8)
