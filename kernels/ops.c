/*
 * ops.c — helpers every operator uses (kernels/ops.h): element counts and
 * their limits, attribute getters, axis normalisation, numpy broadcasting
 * over fixed and symbolic dimensions, dtype checks for inference.
 */
#include "kernels/ops.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- tensors */

int op_tensor_numel(const struct op_tensor *t, int64_t *numel)
{
	int64_t n = 1;
	int i;

	*numel = 0;
	if (t->rank < 0)
		return CEP_ESHAPE;
	for (i = 0; i < t->rank; i++) {
		if (!op_dim_fixed(t->dims[i]))
			return CEP_ESHAPE;
	}
	/* A zero anywhere makes the product 0 whatever the other dims. */
	for (i = 0; i < t->rank; i++) {
		if (t->dims[i] == 0)
			return 0;
	}
	for (i = 0; i < t->rank; i++) {
		if (t->dims[i] > OP_MAX_NUMEL / n)
			return cep__set_error(CEP_ELIMIT,
					      "a tensor of %s would have more than 2^40 elements",
					      cep_dtype_name(t->dtype));
		n *= t->dims[i];
	}
	*numel = n;
	return 0;
}

size_t op_tensor_bytes(const struct op_tensor *t)
{
	int64_t n = 1;
	int i;

	if (t->rank < 0)
		return 0;
	for (i = 0; i < t->rank; i++) {
		if (!op_dim_fixed(t->dims[i]))
			return 0;
		if (t->dims[i] == 0)
			return 0;
	}
	for (i = 0; i < t->rank; i++) {
		if (t->dims[i] > OP_MAX_NUMEL / n)
			return 0;
		n *= t->dims[i];
	}
	return (size_t)n * cep_dtype_size(t->dtype);
}

int64_t op_dims_product(const struct op_tensor *t, int from, int to)
{
	int64_t n = 1;
	int i;

	for (i = from; i < to; i++)
		n *= t->dims[i];
	return n;
}

void op_dims_format(const struct op_tensor *t, const char *const *syms,
		    int n_syms, char *buf, size_t len)
{
	size_t at = 0;
	int i;

	if (len == 0)
		return;
	buf[0] = '\0';
	if (t->rank < 0) {
		snprintf(buf, len, "[?...]");
		return;
	}
	at += (size_t)snprintf(buf + at, len - at, "[");
	for (i = 0; i < t->rank && at < len; i++) {
		int64_t d = t->dims[i];
		const char *sep = i ? "," : "";

		if (op_dim_fixed(d))
			at += (size_t)snprintf(buf + at, len - at, "%s%" PRId64, sep, d);
		else if (op_dim_symbolic(d) && syms && op_dim_symbol(d) < n_syms)
			at += (size_t)snprintf(buf + at, len - at, "%s%s", sep,
					       syms[op_dim_symbol(d)]);
		else if (op_dim_symbolic(d))
			at += (size_t)snprintf(buf + at, len - at, "%s?%d", sep,
					       op_dim_symbol(d));
		else
			at += (size_t)snprintf(buf + at, len - at, "%s?", sep);
	}
	if (at < len)
		snprintf(buf + at, len - at, "]");
}

void op_dtypes_format(uint32_t set, char *buf, size_t len)
{
	/* In the order users think of them, not enum order. */
	static const cep_dtype order[] = {
		CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16,
		CEP_DTYPE_FLOAT64, CEP_DTYPE_INT64, CEP_DTYPE_INT32,
		CEP_DTYPE_INT16, CEP_DTYPE_INT8, CEP_DTYPE_UINT64,
		CEP_DTYPE_UINT32, CEP_DTYPE_UINT16, CEP_DTYPE_UINT8,
		CEP_DTYPE_BOOL, CEP_DTYPE_FLOAT8E4M3FN, CEP_DTYPE_FLOAT8E4M3FNUZ,
		CEP_DTYPE_FLOAT8E5M2, CEP_DTYPE_FLOAT8E5M2FNUZ, CEP_DTYPE_INT4,
		CEP_DTYPE_UINT4, CEP_DTYPE_FLOAT4E2M1,
	};
	size_t at = 0;
	size_t i;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (i = 0; i < sizeof(order) / sizeof(order[0]) && at < len; i++) {
		if (!op_dtype_in(order[i], set))
			continue;
		at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "",
				       cep_dtype_name(order[i]));
	}
}

int op_tensor_get_int(const struct op_tensor *t, int64_t i, int64_t *v)
{
	switch (t->dtype) {
	case CEP_DTYPE_INT64:
		memcpy(v, (const char *)t->data + i * 8, 8);
		return 0;
	case CEP_DTYPE_INT32: {
		int32_t x;

		memcpy(&x, (const char *)t->data + i * 4, 4);
		*v = x;
		return 0;
	}
	default:
		return CEP_EDTYPE;
	}
}

/* ------------------------------------------------------------ attributes */

const struct op_attr *op_attr_find(const struct op_node *n, const char *name)
{
	int i;

	for (i = 0; i < n->n_attrs; i++) {
		if (strcmp(n->attrs[i].name, name) == 0)
			return &n->attrs[i];
	}
	return NULL;
}

int64_t op_attr_int(const struct op_node *n, const char *name, int64_t dflt)
{
	const struct op_attr *a = op_attr_find(n, name);

	return a && a->type == OP_ATTR_INT ? a->i : dflt;
}

float op_attr_float(const struct op_node *n, const char *name, float dflt)
{
	const struct op_attr *a = op_attr_find(n, name);

	return a && a->type == OP_ATTR_FLOAT ? a->f : dflt;
}

const char *op_attr_string(const struct op_node *n, const char *name,
			   const char *dflt)
{
	const struct op_attr *a = op_attr_find(n, name);

	return a && a->type == OP_ATTR_STRING ? a->s : dflt;
}

const int64_t *op_attr_ints(const struct op_node *n, const char *name,
			    int *count)
{
	const struct op_attr *a = op_attr_find(n, name);

	if (!a || a->type != OP_ATTR_INTS) {
		*count = 0;
		return NULL;
	}
	*count = a->n;
	return a->ints;
}

static const char *attr_type_name(enum op_attr_type t)
{
	switch (t) {
	case OP_ATTR_OTHER: return "unsupported";
	case OP_ATTR_FLOAT: return "float";
	case OP_ATTR_INT: return "int";
	case OP_ATTR_STRING: return "string";
	case OP_ATTR_TENSOR: return "tensor";
	case OP_ATTR_GRAPH: return "graph";
	case OP_ATTR_FLOATS: return "floats";
	case OP_ATTR_INTS: return "ints";
	case OP_ATTR_STRINGS: return "strings";
	}
	return "unknown";
}

int op_attr_check(const struct op_node *n, const char *name,
		  enum op_attr_type type)
{
	const struct op_attr *a = op_attr_find(n, name);

	if (!a || a->type == type)
		return 0;
	return cep__set_error(CEP_EMODEL, "%s: attribute '%s' is of type %s, expected %s",
			      n->op_type, name, attr_type_name(a->type),
			      attr_type_name(type));
}

/* ------------------------------------------------------------- inference */

int op_axis_normalize(const struct op_node *n, int64_t axis, int rank, int *out)
{
	if (axis < -rank || axis >= rank || (rank == 0 && axis != 0))
		return cep__set_error(CEP_EMODEL, "%s: axis %" PRId64
				      " is out of range for rank %d",
				      n->op_type, axis, rank);
	*out = (int)(axis < 0 ? axis + rank : axis);
	return 0;
}

int op_softmax_axis(const struct op_node *node, int rank, int *axis)
{
	int64_t dflt = node->opset < 13 ? 1 : -1;

	/* A scalar has one element to normalise whatever the axis says. */
	if (rank == 0) {
		*axis = 0;
		return 0;
	}
	return op_axis_normalize(node, op_attr_int(node, "axis", dflt), rank, axis);
}

int op_softmax_blocks(const struct op_node *node, const struct op_tensor *t,
		      int64_t *outer, int64_t *n, int64_t *inner)
{
	int axis, ret;

	ret = op_softmax_axis(node, t->rank, &axis);
	if (ret < 0)
		return ret;
	*outer = op_dims_product(t, 0, axis);
	if (node->opset < 13) {
		*n = op_dims_product(t, axis, t->rank);
		*inner = 1;
	} else {
		*n = t->rank ? t->dims[axis] : 1;
		*inner = op_dims_product(t, axis + 1, t->rank);
	}
	return 0;
}

static int64_t broadcast_dim(int64_t a, int64_t b, bool *bad)
{
	if (a == b)
		return a;
	if (a == 1)
		return b;
	if (b == 1)
		return a;
	if (op_dim_fixed(a) && op_dim_fixed(b)) {
		*bad = true;
		return a;
	}
	/* A symbol facing a fixed size can only be 1 or that size. */
	if (op_dim_fixed(a) && a != 1)
		return a;
	if (op_dim_fixed(b) && b != 1)
		return b;
	return OP_DIM_UNKNOWN;
}

int op_broadcast(const struct op_node *n, const struct op_tensor *a,
		 const struct op_tensor *b, struct op_tensor *out)
{
	char sa[160], sb[160];
	int rank, i;

	if (a->rank < 0 || b->rank < 0) {
		out->rank = -1;
		return 0;
	}
	rank = a->rank > b->rank ? a->rank : b->rank;
	for (i = 0; i < rank; i++) {
		int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
		int64_t da = ia >= 0 ? a->dims[ia] : 1;
		int64_t db = ib >= 0 ? b->dims[ib] : 1;
		bool bad = false;

		out->dims[i] = broadcast_dim(da, db, &bad);
		if (bad) {
			op_dims_format(a, NULL, 0, sa, sizeof(sa));
			op_dims_format(b, NULL, 0, sb, sizeof(sb));
			return cep__set_error(CEP_ESHAPE,
					      "%s: shapes %s and %s do not broadcast (dimension %d: %"
					      PRId64 " vs %" PRId64 ")",
					      n->op_type, sa, sb, i, da, db);
		}
	}
	out->rank = rank;
	return 0;
}

int op_infer_same_dtype(const struct op_infer *x, int first, int last)
{
	cep_dtype want = CEP_DTYPE_UNDEFINED;
	int want_at = -1;
	int i;

	for (i = first; i <= last && i < x->n_in; i++) {
		if (!op_tensor_present(&x->in[i]))
			continue;
		if (want_at < 0) {
			want = x->in[i].dtype;
			want_at = i;
		} else if (x->in[i].dtype != want) {
			return cep__set_error(CEP_EDTYPE,
					      "%s: input %d is %s but input %d is %s",
					      x->node->op_type, i,
					      cep_dtype_name(x->in[i].dtype), want_at,
					      cep_dtype_name(want));
		}
	}
	return 0;
}

int op_infer_like_input(struct op_infer *x)
{
	x->out[0].dtype = x->in[0].dtype;
	x->out[0].rank = x->in[0].rank;
	if (x->in[0].rank > 0)
		memcpy(x->out[0].dims, x->in[0].dims,
		       sizeof(int64_t) * (size_t)x->in[0].rank);
	return 0;
}
