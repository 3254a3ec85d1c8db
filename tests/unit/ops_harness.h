/*
 * ops_harness.h — what the operator tests of the host kernels share
 * (tests/unit/test_ops_*.c): tensors and attributes written in one
 * expression, and an operator run the way the engine runs a node (schema
 * lookup, inference, host kernel lookup, exec_host_eval()).
 *
 * Header-only and static inline, unlike the helpers of tests/unit, so that
 * it is compiled only into the tests that include it.
 */
#ifndef CEP_TEST_OPS_HARNESS_H
#define CEP_TEST_OPS_HARNESS_H

#include <stdlib.h>
#include <string.h>

#include "client/cudaep.h"
#include "engine/exec.h"
#include "kernels/registry.h"

static inline struct op_tensor oh_tensor(cep_dtype dt, int rank, const int64_t *dims,
					 void *data)
{
	struct op_tensor t = { .data = data, .dtype = dt, .rank = rank };

	if (rank > 0)
		memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
	return t;
}

static inline struct op_attr oh_int(const char *name, int64_t v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_INT, .i = v };
}

static inline struct op_attr oh_float(const char *name, float v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_FLOAT, .f = v };
}

static inline struct op_attr oh_ints(const char *name, int n, const int64_t *v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_INTS, .n = n, .ints = v };
}

static inline struct op_attr oh_string(const char *name, const char *s)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_STRING, .s = s };
}

/* Runs only the inference of op of domain ("" for ai.onnx) at opset;
 * out[0..n_out) get dtypes and shapes. Returns the schema lookup's or the
 * inference's error. */
static inline int oh_infer_in(const char *domain, const char *op, int opset,
			      const struct op_attr *attrs, int n_attrs,
			      const struct op_tensor *in, int n_in, struct op_tensor *out,
			      int n_out)
{
	const struct op_node node = { "t", op, domain, opset, n_attrs, attrs };
	struct op_infer x = { &node, n_in, n_out, in, out };
	const struct op_schema *s;
	int i, ret;

	ret = op_schema_find(domain, op, opset, &s);
	if (ret < 0)
		return ret;
	for (i = 0; i < n_out; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].rank = -1;
	}
	return s->infer(&x);
}

/* Infers and runs op of domain on in; out[0..n_out) get their shapes and
 * freshly allocated data (free() them; none is left allocated on
 * failure). Returns the first error. */
static inline int oh_run_in(const char *domain, const char *op, int opset,
			    const struct op_attr *attrs, int n_attrs,
			    const struct op_tensor *in, int n_in, struct op_tensor *out,
			    int n_out)
{
	const struct op_node node = { "t", op, domain, opset, n_attrs, attrs };
	const struct op_schema *s;
	const struct op_kernel *k;
	int ret;

	ret = oh_infer_in(domain, op, opset, attrs, n_attrs, in, n_in, out, n_out);
	if (ret < 0)
		return ret;
	ret = op_schema_find(domain, op, opset, &s);
	if (ret < 0)
		return ret;
	ret = op_kernel_find(s, opset, BACKEND_HOST,
			     op_kernel_dtype(s, in, n_in, out, n_out), &k);
	if (ret < 0)
		return ret;
	return exec_host_eval(&node, k, in, n_in, out, n_out);
}

/* oh_infer_in() and oh_run_in() of an ai.onnx operator. */
static inline int oh_infer(const char *op, int opset, const struct op_attr *attrs,
			   int n_attrs, const struct op_tensor *in, int n_in,
			   struct op_tensor *out, int n_out)
{
	return oh_infer_in("", op, opset, attrs, n_attrs, in, n_in, out, n_out);
}

static inline int oh_run(const char *op, int opset, const struct op_attr *attrs,
			 int n_attrs, const struct op_tensor *in, int n_in,
			 struct op_tensor *out, int n_out)
{
	return oh_run_in("", op, opset, attrs, n_attrs, in, n_in, out, n_out);
}

/* A deterministic value in [-1, 1) from *seed (a linear congruence). */
static inline float oh_rand(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return (float)((*seed >> 8) & 0xffff) / 32768.0f - 1.0f;
}

#endif
