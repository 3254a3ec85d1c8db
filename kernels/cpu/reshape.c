/*
 * reshape.c — operators that change a shape but not the elements: Reshape
 * (0 copies a dimension unless allowzero, -1 is inferred; the shape an
 * attribute before opset 5, an input after), Flatten, Squeeze and
 * Unsqueeze (axes an attribute before opset 13, an input after), and
 * Identity. Their kernels are one copy; their inference is
 * where the work is, symbolic dimensions included, so that a [batch, 4, 8]
 * reshaped to [0, -1] is known to be [batch, 32] before any input arrives.
 */
#include "kernels/cpu/cpu.h"

#include <inttypes.h>

/* Copies the input's elements to the output unless they already share
 * memory. */
static int copy_run(struct op_call *c)
{
	size_t bytes = op_tensor_bytes(&c->out[0]);

	if (c->out[0].data != c->in[0].data && bytes)
		memcpy(c->out[0].data, c->in[0].data, bytes);
	return 0;
}

/*
 * The product of t->dims[from..to): a fixed size when every dim is fixed;
 * a symbol when exactly one dim is symbolic and the rest multiply to 1;
 * OP_DIM_UNKNOWN otherwise.
 */
static int64_t dims_product_sym(const struct op_tensor *t, int from, int to)
{
	int64_t fixed = 1, sym = 0;
	int n_sym = 0, i;

	for (i = from; i < to; i++) {
		int64_t d = t->dims[i];

		if (d == 0)
			return 0;
		if (op_dim_fixed(d)) {
			if (d > OP_MAX_NUMEL / fixed)
				return OP_DIM_UNKNOWN;
			fixed *= d;
		} else if (op_dim_symbolic(d)) {
			sym = d;
			n_sym++;
		} else {
			return OP_DIM_UNKNOWN;
		}
	}
	if (n_sym == 0)
		return fixed;
	return n_sym == 1 && fixed == 1 ? sym : OP_DIM_UNKNOWN;
}

/* Reads the integer list of input i, when it is known, into v (up to max
 * entries); returns the count, -1 when the input's value is unknown. */
static int known_ints(const struct op_infer *x, int i, int64_t *v, int max,
		      int *err)
{
	const struct op_tensor *t = &x->in[i];
	int64_t n;
	int k;

	*err = 0;
	if (!t->data)
		return -1;
	if (t->rank > 1 || (t->dtype != CEP_DTYPE_INT64 && t->dtype != CEP_DTYPE_INT32)) {
		*err = cep__set_error(CEP_EDTYPE, "%s: input %d must be a 1-D int64 tensor",
				      x->node->op_type, i);
		return -1;
	}
	n = t->rank == 0 ? 1 : t->dims[0];
	if (n > max) {
		*err = cep__set_error(CEP_EUNSUPPORTED, "%s: %" PRId64 " entries in input %d, at most %d",
				      x->node->op_type, n, i, max);
		return -1;
	}
	for (k = 0; k < n; k++)
		op_tensor_get_int(t, k, &v[k]);
	return (int)n;
}

/* ------------------------------------------------------------------ Reshape */

/* Sets out->dims[at] for the -1 of a Reshape: the input's element count
 * over the output's other dims, with symbols cancelling where they can. */
static int reshape_infer_minus1(const struct op_tensor *in, struct op_tensor *out,
				int at)
{
	int64_t in_fixed = 1, out_fixed = 1, rest = 0;
	int64_t in_syms[CEP_MAX_RANK];
	int n_in_syms = 0, n_rest = 0, i, k;

	out->dims[at] = OP_DIM_UNKNOWN;
	if (in->rank < 0)
		return 0;
	for (i = 0; i < in->rank; i++) {
		if (in->dims[i] == 0) {
			out->dims[at] = 0;
			return 0;
		}
		if (op_dim_fixed(in->dims[i])) {
			if (in->dims[i] > OP_MAX_NUMEL / in_fixed)
				return cep__set_error(CEP_ELIMIT, "Reshape: the input has more than 2^40 elements");
			in_fixed *= in->dims[i];
		} else if (op_dim_symbolic(in->dims[i]))
			in_syms[n_in_syms++] = in->dims[i];
		else
			return 0;
	}
	for (i = 0; i < out->rank; i++) {
		int64_t d = out->dims[i];

		if (i == at)
			continue;
		if (op_dim_fixed(d)) {
			if (d == 0)
				return cep__set_error(CEP_ESHAPE,
						      "Reshape: -1 cannot be inferred next to a 0 dimension");
			if (d > OP_MAX_NUMEL / out_fixed)
				return cep__set_error(CEP_ELIMIT, "Reshape: the shape has more than 2^40 elements");
			out_fixed *= d;
			continue;
		}
		if (!op_dim_symbolic(d))
			return 0;
		/* Cancel the symbol against an equal one of the input. */
		for (k = 0; k < n_in_syms && in_syms[k] != d; k++)
			;
		if (k == n_in_syms)
			return 0;
		in_syms[k] = in_syms[--n_in_syms];
	}
	for (k = 0; k < n_in_syms; k++) {
		rest = in_syms[k];
		n_rest++;
	}
	if (in_fixed % out_fixed != 0)
		return cep__set_error(CEP_ESHAPE, "Reshape: %" PRId64
				      " elements do not divide into dimensions of %" PRId64,
				      in_fixed, out_fixed);
	if (n_rest == 0)
		out->dims[at] = in_fixed / out_fixed;
	else if (n_rest == 1 && in_fixed == out_fixed)
		out->dims[at] = rest;
	return 0;
}

/* Reshape-1's shape, the attribute: its count, or an error. */
static int reshape1_shape(const struct op_node *node, int64_t *shape)
{
	const int64_t *a;
	int n, err;

	if ((err = op_attr_check(node, "shape", OP_ATTR_INTS)) < 0)
		return err;
	a = op_attr_ints(node, "shape", &n);
	if (!a)
		return cep__set_error(CEP_EMODEL, "Reshape (opset %d): attribute 'shape' is required",
				      node->opset);
	if (n > CEP_MAX_RANK)
		return cep__set_error(CEP_EUNSUPPORTED, "Reshape: %d entries in shape, at most %d", n,
				      CEP_MAX_RANK);
	memcpy(shape, a, sizeof(int64_t) * (size_t)n);
	return n;
}

static int reshape_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0];
	struct op_tensor *out = &x->out[0];
	bool allowzero = x->node->opset >= 14 && op_attr_int(x->node, "allowzero", 0);
	int64_t shape[CEP_MAX_RANK];
	int64_t in_n, out_n;
	int n, i, minus1 = -1, err;

	out->dtype = in->dtype;
	if (x->node->opset < 5) {
		n = reshape1_shape(x->node, shape);
		if (n < 0)
			return n;
	} else {
		if (x->in[1].rank >= 0 && x->in[1].rank != 1)
			return cep__set_error(CEP_ESHAPE, "Reshape: the shape input must be 1-D");
		n = known_ints(x, 1, shape, CEP_MAX_RANK, &err);
		if (err < 0)
			return err;
	}
	if (n < 0) {
		/* Unknown values but a known count still give the rank. */
		out->rank = x->in[1].rank == 1 && op_dim_fixed(x->in[1].dims[0]) &&
				    x->in[1].dims[0] <= CEP_MAX_RANK
			    ? (int)x->in[1].dims[0] : -1;
		for (i = 0; i < out->rank; i++)
			out->dims[i] = OP_DIM_UNKNOWN;
		return 0;
	}
	out->rank = n;
	for (i = 0; i < n; i++) {
		int64_t s = shape[i];

		if (s == -1) {
			if (minus1 >= 0)
				return cep__set_error(CEP_ESHAPE, "Reshape: more than one -1 in the shape");
			minus1 = i;
			out->dims[i] = OP_DIM_UNKNOWN;
		} else if (s < -1) {
			return cep__set_error(CEP_ESHAPE, "Reshape: shape entry %d is %" PRId64, i, s);
		} else if (s == 0 && !allowzero) {
			if (in->rank >= 0 && i >= in->rank)
				return cep__set_error(CEP_ESHAPE,
						      "Reshape: shape entry %d is 0 but the input has rank %d",
						      i, in->rank);
			out->dims[i] = in->rank >= 0 ? in->dims[i] : OP_DIM_UNKNOWN;
		} else {
			out->dims[i] = s;
		}
	}
	if (minus1 >= 0) {
		err = reshape_infer_minus1(in, out, minus1);
		if (err < 0)
			return err;
	}
	/* With everything fixed, the element counts must agree. */
	if (op_tensor_numel(in, &in_n) == 0 && op_tensor_numel(out, &out_n) == 0 &&
	    in_n != out_n) {
		char a[160], b[160];

		op_dims_format(in, NULL, 0, a, sizeof(a));
		op_dims_format(out, NULL, 0, b, sizeof(b));
		return cep__set_error(CEP_ESHAPE, "Reshape: cannot reshape %s to %s", a, b);
	}
	return 0;
}

/* ------------------------------------------------------------------ Flatten */

static int flatten_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0];
	struct op_tensor *out = &x->out[0];
	int64_t axis = op_attr_int(x->node, "axis", 1);

	out->dtype = in->dtype;
	out->rank = 2;
	if (in->rank < 0) {
		out->dims[0] = out->dims[1] = OP_DIM_UNKNOWN;
		return 0;
	}
	if (axis < -in->rank || axis > in->rank)
		return cep__set_error(CEP_EMODEL, "Flatten: axis %" PRId64 " is out of range for rank %d",
				      axis, in->rank);
	if (axis < 0)
		axis += in->rank;
	out->dims[0] = dims_product_sym(in, 0, (int)axis);
	out->dims[1] = dims_product_sym(in, (int)axis, in->rank);
	return 0;
}

/* --------------------------------------------------------- Squeeze, Unsqueeze */

/* The axes of (Un)squeeze: the attribute before opset 13, input 1 after.
 * Returns the count, -1 when they are not known yet (an input computed at
 * run time), -2 when there are none. */
static int squeeze_axes(const struct op_infer *x, int64_t *axes, int *err)
{
	*err = 0;
	if (x->node->opset < 13) {
		int n;
		const int64_t *a = op_attr_ints(x->node, "axes", &n);

		if (!a)
			return -2;
		if (n > CEP_MAX_RANK) {
			*err = cep__set_error(CEP_EUNSUPPORTED, "%s: %d axes, at most %d",
					      x->node->op_type, n, CEP_MAX_RANK);
			return -1;
		}
		memcpy(axes, a, sizeof(int64_t) * (size_t)n);
		return n;
	}
	if (x->n_in < 2 || !op_tensor_present(&x->in[1]))
		return -2;
	return known_ints(x, 1, axes, CEP_MAX_RANK, err);
}

static int squeeze_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0];
	struct op_tensor *out = &x->out[0];
	bool drop[CEP_MAX_RANK] = { false };
	int64_t axes[CEP_MAX_RANK];
	int n, i, r = 0, err;

	out->dtype = in->dtype;
	n = squeeze_axes(x, axes, &err);
	if (err < 0)
		return err;
	if (in->rank < 0 || n == -1) {
		out->rank = -1;
		return 0;
	}
	if (n == -2) {
		for (i = 0; i < in->rank; i++) {
			if (!op_dim_fixed(in->dims[i])) {
				out->rank = -1; /* a symbol might be 1 */
				return 0;
			}
			drop[i] = in->dims[i] == 1;
		}
	}
	for (i = 0; i < n; i++) {
		int a;

		err = op_axis_normalize(x->node, axes[i], in->rank, &a);
		if (err < 0)
			return err;
		if (op_dim_fixed(in->dims[a]) && in->dims[a] != 1)
			return cep__set_error(CEP_ESHAPE, "Squeeze: dimension %d is %" PRId64 ", not 1",
					      a, in->dims[a]);
		drop[a] = true;
	}
	for (i = 0; i < in->rank; i++) {
		if (!drop[i])
			out->dims[r++] = in->dims[i];
	}
	out->rank = r;
	return 0;
}

static int unsqueeze_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0];
	struct op_tensor *out = &x->out[0];
	bool added[CEP_MAX_RANK] = { false };
	int64_t axes[CEP_MAX_RANK];
	int n, i, j = 0, rank, err;

	out->dtype = in->dtype;
	n = squeeze_axes(x, axes, &err);
	if (err < 0)
		return err;
	if (n == -2)
		return cep__set_error(CEP_EMODEL, "Unsqueeze: axes are required");
	if (in->rank < 0 || n < 0) {
		out->rank = -1;
		return 0;
	}
	rank = in->rank + n;
	if (rank > CEP_MAX_RANK)
		return cep__set_error(CEP_EUNSUPPORTED, "Unsqueeze: rank %d is above %d", rank,
				      CEP_MAX_RANK);
	for (i = 0; i < n; i++) {
		int a;

		err = op_axis_normalize(x->node, axes[i], rank, &a);
		if (err < 0)
			return err;
		if (added[a])
			return cep__set_error(CEP_EMODEL, "Unsqueeze: axis %" PRId64 " appears twice",
					      axes[i]);
		added[a] = true;
	}
	for (i = 0; i < rank; i++)
		out->dims[i] = added[i] ? 1 : in->dims[j++];
	out->rank = rank;
	return 0;
}

/* ----------------------------------------------------------------- Identity */

static int identity_infer(struct op_infer *x)
{
	return op_infer_like_input(x);
}

/* ------------------------------------------------------------------- table */

/* Reshape's first definition (float types, consumed_inputs) took its
 * shape as an attribute; Flatten took every type from 9. */
#define RESHAPE_DTS_1 (OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_schema schemas[] = {
	{ "", "Reshape", 1, 4, 1, 1, 1, 1, 0, 0, reshape_infer },
	{ "", "Reshape", 5, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, reshape_infer },
	{ "", "Flatten", 1, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, flatten_infer },
	{ "", "Squeeze", 1, OP_OPSET_MAX, 1, 2, 1, 1, 0, 0, squeeze_infer },
	{ "", "Unsqueeze", 1, OP_OPSET_MAX, 1, 2, 1, 1, 0, 0, unsqueeze_infer },
	{ "", "Identity", 1, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, identity_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Reshape", 1, 4, BACKEND_HOST, RESHAPE_DTS_1, NULL, copy_run },
	{ "", "Reshape", 5, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, copy_run },
	{ "", "Flatten", 1, 6, BACKEND_HOST, RESHAPE_DTS_1, NULL, copy_run },
	{ "", "Flatten", 7, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, copy_run },
	{ "", "Squeeze", 1, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, copy_run },
	{ "", "Unsqueeze", 1, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, copy_run },
	{ "", "Identity", 1, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, copy_run },
};

const struct op_family op_family_cpu_reshape = {
	"cpu_reshape", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
