/*
 * bitwise_wide.cu — the kernels of bitwise.cuh for int16, uint16,
 * uint32 and uint64 (bitwise.cu has the first integer types), apart so
 * that a model without them never waits for their compile. Launcher:
 * kernels/cuda/bitwise.c. Kernels: <op>_<type> (bitwiseand_i32,
 * bitshiftleft_u8, bitshiftright_i64) for any broadcast,
 * <op>_<type>_<a><b> for the fast paths of elem.cuh (a, b: f, r or s as
 * in binary.cu), and bitwisenot_<type>.
 */
#include "bitwise.cuh"

#define BITWISE_TYPES(name, OP)                 \
	BITWISE_KERNEL(name, OP, i16, i16)      \
	BITWISE_KERNEL(name, OP, u16, u16)      \
	BITWISE_KERNEL(name, OP, u32, u32)      \
	BITWISE_KERNEL(name, OP, u64, u64)

BITWISE_TYPES(bitwiseand, BIT_AND)
BITWISE_TYPES(bitwiseor, BIT_OR)
BITWISE_TYPES(bitwisexor, BIT_XOR)
BITWISE_TYPES(bitshiftleft, BIT_SHL)
BITWISE_TYPES(bitshiftright, BIT_SHR)

BITWISE_NOT(i16, i16)
BITWISE_NOT(u16, u16)
BITWISE_NOT(u32, u32)
BITWISE_NOT(u64, u64)
