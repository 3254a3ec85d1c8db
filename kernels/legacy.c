/*
 * legacy.c — the rules of ONNX's first opsets that later ones dropped
 * (kernels/legacy.h): the broadcast attributes of the binary operators
 * before opset 7, PRelu's slope per channel before 7, Cast's type names
 * before 6, Concat's default axis before 4. Each is checked here once and handed to the kernels as what
 * the later opsets mean.
 */
#include "kernels/legacy.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Opset 7 brought numpy broadcasting to the binary operators and PRelu. */
#define LEGACY_NUMPY_OPSET 7

/* Whether every dim of t is fixed and their product is 1. */
static bool one_element(const struct op_tensor *t)
{
	int i;

	for (i = 0; i < t->rank; i++) {
		if (t->dims[i] != 1)
			return false;
	}
	return true;
}

/* ------------------------------------------------------------- broadcast */

static int bcast_error(const struct op_node *n, const struct op_tensor *a,
		       const struct op_tensor *b, const char *why)
{
	char sa[160], sb[160];

	op_dims_format(a, NULL, 0, sa, sizeof(sa));
	op_dims_format(b, NULL, 0, sb, sizeof(sb));
	return cep__set_error(CEP_ESHAPE, "%s (opset %d): B of shape %s %s A of shape %s",
			      n->op_type, n->opset, sb, why, sa);
}

int op_legacy_bcast(const struct op_node *n, const struct op_tensor *a,
		    const struct op_tensor *b, struct op_tensor *bv)
{
	const struct op_attr *axis_attr;
	int64_t axis;
	int i, ret;

	*bv = *b;
	if (n->opset >= LEGACY_NUMPY_OPSET || a->rank < 0 || b->rank < 0)
		return 0;
	if ((ret = op_attr_check(n, "broadcast", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(n, "axis", OP_ATTR_INT)) < 0)
		return ret;
	if (op_attr_int(n, "broadcast", 0) == 0) {
		/* Without broadcast=1 the shapes are one. */
		if (a->rank != b->rank)
			return bcast_error(n, a, b, "has another rank than (broadcast=0)");
		for (i = 0; i < a->rank; i++) {
			if (op_dim_fixed(a->dims[i]) && op_dim_fixed(b->dims[i]) &&
			    a->dims[i] != b->dims[i])
				return bcast_error(n, a, b, "has another shape than (broadcast=0)");
		}
		return 0;
	}
	if (b->rank > a->rank)
		return bcast_error(n, a, b, "has a higher rank than");
	if (one_element(b)) {
		bv->rank = 0;
		return 0;
	}
	axis_attr = op_attr_find(n, "axis");
	axis = axis_attr ? axis_attr->i : a->rank - b->rank;
	if (axis < 0)
		axis += a->rank;
	if (axis < 0 || axis > a->rank - b->rank)
		return cep__set_error(CEP_EMODEL, "%s (opset %d): axis %" PRId64
				      " does not fit B of rank %d in A of rank %d",
				      n->op_type, n->opset, axis_attr->i, b->rank, a->rank);
	for (i = 0; i < b->rank; i++) {
		int64_t da = a->dims[axis + i], db = b->dims[i];

		if (op_dim_fixed(da) && op_dim_fixed(db) && da != db) {
			char why[96];

			snprintf(why, sizeof(why), "is not a run of the dims, from axis %" PRId64 ", of",
				 axis);
			return bcast_error(n, a, b, why);
		}
	}
	/* B's dims, then ones to A's last dim: numpy aligns them at axis. */
	bv->rank = a->rank - (int)axis;
	for (i = b->rank; i < bv->rank; i++)
		bv->dims[i] = 1;
	return 0;
}

bool op_legacy_bcast_axis(const struct op_node *n)
{
	return n->opset < LEGACY_NUMPY_OPSET && op_attr_int(n, "broadcast", 0) != 0 &&
	       op_attr_find(n, "axis") != NULL;
}

/* ------------------------------------------------------------------ PRelu */

int op_legacy_prelu_slope(const struct op_node *n, const struct op_tensor *x,
			  const struct op_tensor *slope, struct op_tensor *view)
{
	int64_t c = 1;
	int i, n_long = 0;

	*view = *slope;
	if (n->opset >= LEGACY_NUMPY_OPSET || x->rank < 0 || slope->rank < 0)
		return 0;
	if (one_element(slope)) {
		view->rank = 0;
		return 0;
	}
	/* One per channel: a vector of C, or C values under unit dims
	 * (Caffe2, where PRelu comes from, reads the slope flat). */
	for (i = 0; i < slope->rank; i++) {
		if (slope->dims[i] != 1) {
			n_long++;
			c = slope->dims[i];
		}
	}
	if (x->rank >= 2 && n_long == 1 &&
	    (!op_dim_fixed(c) || !op_dim_fixed(x->dims[1]) || c == x->dims[1])) {
		view->rank = x->rank - 1;
		view->dims[0] = c;
		for (i = 1; i < view->rank; i++)
			view->dims[i] = 1;
	}
	/* Any other slope is outside the old rule: read as opset 7 reads it
	 * (what ONNX's version converter takes it to mean), refused there if
	 * it does not broadcast either. */
	return 0;
}

/* ------------------------------------------------------------------- Cast */

/* TensorProto.DataType's names, indexed by number (0 has none). */
static const char *const type_names[] = {
	NULL, "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
	"BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128",
	"BFLOAT16",
};

int op_legacy_cast_to(const struct op_node *n, cep_dtype *dtype)
{
	const struct op_attr *a = op_attr_find(n, "to");
	size_t i;

	if (!a || a->type != OP_ATTR_STRING)
		return cep__set_error(CEP_EMODEL, "Cast (opset %d): attribute 'to' (a type name "
				      "such as \"FLOAT\") is required", n->opset);
	for (i = 1; i < sizeof(type_names) / sizeof(type_names[0]); i++) {
		if (strcasecmp(a->s, type_names[i]) == 0) {
			*dtype = (cep_dtype)i;
			return 0;
		}
	}
	return cep__set_error(CEP_EMODEL, "Cast (opset %d): 'to' is \"%s\", not the name of a "
			      "TensorProto data type", n->opset, a->s);
}

/* ----------------------------------------------------------------- Concat */

int64_t op_legacy_concat_axis(const struct op_node *n)
{
	return op_attr_int(n, "axis", n->opset < 4 ? 1 : 0);
}
