/*
 * elem.h — what the elementwise families of kernels/cpu share (math.c,
 * activation.c, compare.c, variadic.c, powmod.c, trig.c, fpclass.c,
 * bitwise.c): the type sets that the ONNX type constraints reduce to
 * among the types cudaep stores, and broadcasting inference over any
 * number of inputs. Internal to kernels/cpu; the element loads, stores and
 * the broadcasting iterator are cpu.h's.
 */
#ifndef CEP_KERNELS_CPU_ELEM_H
#define CEP_KERNELS_CPU_ELEM_H

#include "kernels/cpu/cpu.h"

/* float, float16 and double: the float types of most operators before
 * bfloat16 joined them (opset 13 for most, 16 or 22 for some). */
#define ELEM_DTS_NO_BF16 (OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16))

/* int32 and int64, the integer types of Pow's base and PRelu. */
#define ELEM_DTS_I32_I64 (OP_DT(CEP_DTYPE_INT64) | OP_DT(CEP_DTYPE_INT32))

/*
 * Numpy broadcasting of the present inputs first..last of x into the rank
 * and dims of x->out[0] (its dtype is left alone). Symbolic dims are
 * carried through as op_broadcast() does; an input of unknown rank makes
 * the output's rank unknown. Returns 0 or CEP_ESHAPE with op_broadcast()'s
 * message.
 */
static inline int elem_infer_broadcast(struct op_infer *x, int first, int last)
{
	struct op_tensor acc = { .rank = 0 }, next;
	int i, ret;

	/* A rank-0 start broadcasts to whatever comes: the fold's identity.
	 * The fold goes through a copy because op_broadcast() must not
	 * write the dims it reads. */
	for (i = first; i <= last && i < x->n_in; i++) {
		if (!op_tensor_present(&x->in[i]))
			continue;
		ret = op_broadcast(x->node, &acc, &x->in[i], &next);
		if (ret < 0)
			return ret;
		if (next.rank < 0) {
			x->out[0].rank = -1;
			return 0;
		}
		acc.rank = next.rank;
		memcpy(acc.dims, next.dims, sizeof(int64_t) * (size_t)next.rank);
	}
	x->out[0].rank = acc.rank;
	memcpy(x->out[0].dims, acc.dims, sizeof(int64_t) * (size_t)acc.rank);
	return 0;
}

#endif
