/*
 * shapeops.h — what the shape-moving reference kernels share (slice.c,
 * split.c, expand.c, gather_elements.c, generate.c): checking an input that
 * carries a list of integers (a target shape, repeats, split sizes, slice
 * bounds) whose value inference may or may not know yet, reading it, and
 * copying or repeating single elements of any stored type without a call
 * to memcpy per element. Internal to kernels/cpu.
 */
#ifndef CEP_KERNELS_CPU_SHAPEOPS_H
#define CEP_KERNELS_CPU_SHAPEOPS_H

#include "kernels/cpu/cpu.h"

/* The index types a list input may have. */
#define SHAPEOPS_INT64 OP_DT(CEP_DTYPE_INT64)
#define SHAPEOPS_INDEX (OP_DT(CEP_DTYPE_INT64) | OP_DT(CEP_DTYPE_INT32))

/* Every stored type but bfloat16, which these operators took only from
 * opset 13 (ConstantOfShape from 20): kernels of older opsets refuse it,
 * as the checker of those opsets does. */
#define SHAPEOPS_DTS_NO_BF16 (OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16))

/*
 * Checks a list input t of node (called what in messages, "shape",
 * "starts"): 1-D, of a type in set (SHAPEOPS_INT64 or SHAPEOPS_INDEX).
 * Stores its entry count in *count, -1 while that is not fixed. Returns 0,
 * or CEP_EDTYPE / CEP_ESHAPE with a message naming the operator and input.
 */
static inline int shapeops_list_check(const struct op_node *node,
				      const struct op_tensor *t, const char *what,
				      uint32_t set, int64_t *count)
{
	*count = -1;
	if (!op_dtype_in(t->dtype, set))
		return cep__set_error(CEP_EDTYPE, "%s: %s is %s, not %s", node->op_type, what,
				      cep_dtype_name(t->dtype),
				      set == SHAPEOPS_INT64 ? "int64" : "int32 or int64");
	if (t->rank < 0)
		return 0;
	if (t->rank != 1)
		return cep__set_error(CEP_ESHAPE, "%s: %s must be 1-D, not of rank %d",
				      node->op_type, what, t->rank);
	if (op_dim_fixed(t->dims[0]))
		*count = t->dims[0];
	return 0;
}

/* Entry k of an integer tensor whose elements are in host memory. */
static inline int64_t shapeops_at(const struct op_tensor *t, int64_t k)
{
	return cpu_load_i(t->data, t->dtype, k);
}

/* Copies element si of src to element di of dst, es bytes each. The
 * constant sizes let the compiler turn each copy into one move. */
static inline void shapeops_elem_copy(void *dst, int64_t di, const void *src,
				      int64_t si, size_t es)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	switch (es) {
	case 1: d[di] = s[si]; break;
	case 2: memcpy(d + di * 2, s + si * 2, 2); break;
	case 4: memcpy(d + di * 4, s + si * 4, 4); break;
	case 8: memcpy(d + di * 8, s + si * 8, 8); break;
	default: memcpy(d + di * (int64_t)es, s + si * (int64_t)es, es); break;
	}
}

/* Fills n elements of es bytes at dst with the element at elem (which
 * must not lie inside the destination), doubling the filled part with
 * each copy. */
static inline void shapeops_fill(void *dst, const void *elem, size_t es, int64_t n)
{
	unsigned char *d = dst;
	size_t total = (size_t)n * es, done;

	if (n <= 0)
		return;
	memcpy(d, elem, es);
	for (done = es; done < total; done *= 2)
		memcpy(d + done, d, done < total - done ? done : total - done);
}

#endif
