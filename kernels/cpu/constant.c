/*
 * constant.c — operators whose outputs never depend on input data:
 * Constant (from its value* attribute), Shape (with start and end, opset
 * 15) and Size. The engine folds them at load or plan time, so their
 * kernels run on the host only, on values the planner keeps.
 */
#include "kernels/cpu/cpu.h"

#include <inttypes.h>

/* ----------------------------------------------------------------- Constant */

/* The one value attribute of a Constant node; CEP_EMODEL unless exactly one
 * is there, CEP_EUNSUPPORTED for strings and sparse tensors. */
static int constant_attr(const struct op_node *node, const struct op_attr **out)
{
	static const char *const names[] = {
		"value", "value_float", "value_floats", "value_int", "value_ints",
		"value_string", "value_strings", "sparse_value",
	};
	const struct op_attr *found = NULL;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct op_attr *a = op_attr_find(node, names[i]);

		if (!a)
			continue;
		if (found)
			return cep__set_error(CEP_EMODEL, "Constant: both '%s' and '%s' are set",
					      found->name, a->name);
		found = a;
	}
	if (!found)
		return cep__set_error(CEP_EMODEL, "Constant: no value attribute");
	if (strncmp(found->name, "value_string", 12) == 0 ||
	    strcmp(found->name, "sparse_value") == 0)
		return cep__set_error(CEP_EUNSUPPORTED, "Constant: '%s' is not supported",
				      found->name);
	*out = found;
	return 0;
}

static int constant_infer(struct op_infer *x)
{
	struct op_tensor *out = &x->out[0];
	const struct op_attr *a;
	int ret;

	ret = constant_attr(x->node, &a);
	if (ret < 0)
		return ret;
	if (strcmp(a->name, "value") == 0) {
		if (a->type != OP_ATTR_TENSOR)
			return op_attr_check(x->node, a->name, OP_ATTR_TENSOR);
		out->dtype = a->t->dtype;
		out->rank = a->t->rank;
		memcpy(out->dims, a->t->dims, sizeof(out->dims));
		return 0;
	}
	if (strcmp(a->name, "value_float") == 0 || strcmp(a->name, "value_floats") == 0)
		out->dtype = CEP_DTYPE_FLOAT32;
	else
		out->dtype = CEP_DTYPE_INT64;
	switch (a->type) {
	case OP_ATTR_FLOAT:
	case OP_ATTR_INT:
		out->rank = 0;
		return 0;
	case OP_ATTR_FLOATS:
	case OP_ATTR_INTS:
		out->rank = 1;
		out->dims[0] = a->n;
		return 0;
	default:
		return cep__set_error(CEP_EMODEL, "Constant: attribute '%s' has the wrong type",
				      a->name);
	}
}

static int constant_run(struct op_call *c)
{
	const struct op_attr *a;
	int ret;

	ret = constant_attr(c->node, &a);
	if (ret < 0)
		return ret;
	switch (a->type) {
	case OP_ATTR_TENSOR:
		memcpy(c->out[0].data, a->t->data, op_tensor_bytes(a->t));
		break;
	case OP_ATTR_FLOAT:
		memcpy(c->out[0].data, &a->f, sizeof(float));
		break;
	case OP_ATTR_INT:
		memcpy(c->out[0].data, &a->i, sizeof(int64_t));
		break;
	case OP_ATTR_FLOATS:
		memcpy(c->out[0].data, a->floats, sizeof(float) * (size_t)a->n);
		break;
	case OP_ATTR_INTS:
		memcpy(c->out[0].data, a->ints, sizeof(int64_t) * (size_t)a->n);
		break;
	default:
		return cep__set_error(CEP_EINTERNAL, "Constant: attribute of type %d", a->type);
	}
	return 0;
}

/* -------------------------------------------------------------------- Shape */

/* The [start, end) slice of the dimensions Shape reports (opset 15). */
static void shape_range(const struct op_node *node, int rank, int *start, int *end)
{
	int64_t s = 0, e = rank;

	if (node->opset >= 15) {
		s = op_attr_int(node, "start", 0);
		e = op_attr_int(node, "end", rank);
	}
	if (s < 0)
		s += rank;
	if (e < 0)
		e += rank;
	s = s < 0 ? 0 : s > rank ? rank : s;
	e = e < 0 ? 0 : e > rank ? rank : e;
	*start = (int)s;
	*end = (int)(e > s ? e : s);
}

static int shape_infer(struct op_infer *x)
{
	struct op_tensor *out = &x->out[0];
	int start, end;

	out->dtype = CEP_DTYPE_INT64;
	out->rank = 1;
	if (x->in[0].rank < 0) {
		out->dims[0] = OP_DIM_UNKNOWN;
		return 0;
	}
	shape_range(x->node, x->in[0].rank, &start, &end);
	out->dims[0] = end - start;
	return 0;
}

static int shape_run(struct op_call *c)
{
	int64_t *o = c->out[0].data;
	int start, end, i;

	shape_range(c->node, c->in[0].rank, &start, &end);
	for (i = start; i < end; i++)
		o[i - start] = c->in[0].dims[i];
	return 0;
}

static int size_infer(struct op_infer *x)
{
	x->out[0].dtype = CEP_DTYPE_INT64;
	x->out[0].rank = 0;
	return 0;
}

static int size_run(struct op_call *c)
{
	int64_t n = cpu_numel(&c->in[0]);

	memcpy(c->out[0].data, &n, sizeof(n));
	return 0;
}

static const struct op_schema schemas[] = {
	{ "", "Constant", 1, OP_OPSET_MAX, 0, 0, 1, 1, -1, 0, constant_infer },
	{ "", "Shape", 1, OP_OPSET_MAX, 1, 1, 1, 1, 0, OP_SHAPE_ONLY, shape_infer },
	{ "", "Size", 1, OP_OPSET_MAX, 1, 1, 1, 1, 0, OP_SHAPE_ONLY, size_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Constant", 1, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, constant_run },
	{ "", "Shape", 1, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, shape_run },
	{ "", "Size", 1, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, size_run },
};

const struct op_family op_family_cpu_constant = {
	"cpu_constant", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
