/*
 * split.c — Split: one tensor cut into consecutive parts along `axis`, one
 * per output. The part sizes are the `split` attribute before opset 13 and
 * the optional int64 `split` input from 13; without them the parts are
 * equal, which must divide the axis exactly before opset 18, while from 18
 * (where `num_outputs` may say how many parts there are) the last part is
 * smaller when it does not. Opset 1 took the sizes from the attribute or
 * from an optional second input of the data's (float) type, and gave
 * `axis` no default: a node without one is refused.
 *
 * The sizes are worked out the same way by inference (when the split input
 * is known: a constant or a value the planner folded) and by the kernel,
 * which therefore copes with outputs the model leaves unnamed.
 */
#include "kernels/cpu/shapeops.h"

#include <inttypes.h>
#include <limits.h>

/* How one Split node divides an axis of dim elements into n parts. */
struct split_parts {
	int n;                     /* parts: the node's outputs */
	const int64_t *sizes;      /* (n) from the attribute, or NULL */
	const struct op_tensor *list; /* the split input, or NULL */
	int64_t chunk;             /* equal parts: the size of all but the last */
	int64_t last;              /* equal parts: the size of the last */
	bool known;                /* the sizes are known */
};

/* The size of part k. */
static int64_t split_size(const struct split_parts *sp, int k)
{
	if (sp->sizes)
		return sp->sizes[k];
	if (sp->list)
		return shapeops_at(sp->list, k);
	return k == sp->n - 1 ? sp->last : sp->chunk;
}

/* Whether node is a Split of opset 1 given its sizes as its second input. */
static bool split1_listed(const struct op_node *node, const struct op_tensor *in, int n_in)
{
	return node->opset < 2 && n_in > 1 && op_tensor_present(&in[1]);
}

/* Equal parts of an axis of dim elements (fixed). */
static int split_equal(const struct op_node *node, int64_t dim, struct split_parts *sp)
{
	int64_t n = sp->n;

	if (node->opset < 18) {
		if (dim % n != 0)
			return cep__set_error(CEP_ESHAPE, "Split: an axis of %" PRId64
					      " does not split into %" PRId64 " equal parts", dim, n);
		sp->chunk = sp->last = dim / n;
	} else {
		sp->chunk = dim / n + (dim % n != 0);
		sp->last = dim - sp->chunk * (n - 1);
		if (sp->last < 0)
			return cep__set_error(CEP_ESHAPE, "Split: an axis of %" PRId64
					      " does not make %" PRId64 " parts of %" PRId64,
					      dim, n, sp->chunk);
	}
	sp->known = true;
	return 0;
}

/*
 * Works out how node splits in[0] (whose dimension `axis` is dim, maybe
 * not fixed during inference) into n_out parts. Checks the sizes when they
 * are known: one per output, none negative, summing to dim.
 */
static int split_parts_init(const struct op_node *node, const struct op_tensor *in,
			    int n_in, int n_out, int64_t dim, struct split_parts *sp)
{
	int64_t count = -1, sum = 0;
	bool listed;
	int k, ret;

	memset(sp, 0, sizeof(*sp));
	sp->n = n_out;
	if (node->opset < 13) {
		int n;

		ret = op_attr_check(node, "split", OP_ATTR_INTS);
		if (ret < 0)
			return ret;
		sp->sizes = op_attr_ints(node, "split", &n);
		count = sp->sizes ? n : -1;
		sp->known = sp->sizes != NULL;
		if (split1_listed(node, in, n_in)) {
			if (sp->sizes)
				return cep__set_error(CEP_EMODEL, "Split (opset 1): both the split input "
						      "and the split attribute are given");
			if (in[1].dtype != in[0].dtype)
				return cep__set_error(CEP_EDTYPE, "Split (opset 1): split is %s, not the "
						      "input's %s", cep_dtype_name(in[1].dtype),
						      cep_dtype_name(in[0].dtype));
			ret = shapeops_list_check(node, &in[1], "split", OP_DT(in[1].dtype), &count);
			if (ret < 0)
				return ret;
			sp->list = in[1].data ? &in[1] : NULL;
			sp->known = sp->list != NULL && count >= 0;
		}
	} else if (n_in > 1 && op_tensor_present(&in[1])) {
		ret = shapeops_list_check(node, &in[1], "split", SHAPEOPS_INT64, &count);
		if (ret < 0)
			return ret;
		sp->list = in[1].data ? &in[1] : NULL;
		sp->known = sp->list != NULL && count >= 0;
		if (node->opset >= 18 && op_attr_find(node, "num_outputs"))
			return cep__set_error(CEP_EMODEL,
					      "Split: both the split input and 'num_outputs' are given");
	}
	if (node->opset >= 18 && op_attr_find(node, "num_outputs")) {
		int64_t parts = op_attr_int(node, "num_outputs", -1);

		ret = op_attr_check(node, "num_outputs", OP_ATTR_INT);
		if (ret < 0)
			return ret;
		if (parts != n_out)
			return cep__set_error(CEP_EMODEL, "Split: num_outputs is %" PRId64
					      " but the node has %d outputs", parts, n_out);
	}
	if (count >= 0 && count != n_out)
		return cep__set_error(CEP_EMODEL, "Split: split has %" PRId64
				      " entries for %d outputs", count, n_out);
	listed = sp->sizes || split1_listed(node, in, n_in) ||
		 (node->opset >= 13 && n_in > 1 && op_tensor_present(&in[1]));
	if (!listed)
		return op_dim_fixed(dim) ? split_equal(node, dim, sp) : 0;
	if (!sp->known)
		return 0;
	for (k = 0; k < n_out; k++) {
		int64_t s = split_size(sp, k);

		if (s < 0)
			return cep__set_error(CEP_ESHAPE, "Split: part %d has size %" PRId64, k, s);
		if (s > OP_MAX_NUMEL || sum > OP_MAX_NUMEL)
			return cep__set_error(CEP_ELIMIT, "Split: part %d has size %" PRId64
					      ", beyond 2^40", k, s);
		sum += s;
	}
	if (op_dim_fixed(dim) && sum != dim)
		return cep__set_error(CEP_ESHAPE, "Split: the parts add up to %" PRId64
				      " but the axis has %" PRId64, sum, dim);
	return 0;
}

static int split_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0];
	struct split_parts sp;
	int axis = 0, k, ret;

	for (k = 0; k < x->n_out; k++) {
		x->out[k].dtype = in->dtype;
		x->out[k].rank = in->rank;
		if (in->rank > 0)
			memcpy(x->out[k].dims, in->dims, sizeof(int64_t) * (size_t)in->rank);
	}
	if (in->rank == 0)
		return cep__set_error(CEP_ESHAPE, "Split: the input must have rank >= 1");
	if (x->node->opset < 2 && !op_attr_find(x->node, "axis"))
		return cep__set_error(CEP_EMODEL, "Split (opset 1): attribute 'axis' is required "
				      "(opset 1 gives it no default)");
	if (in->rank > 0) {
		ret = op_axis_normalize(x->node, op_attr_int(x->node, "axis", 0), in->rank, &axis);
		if (ret < 0)
			return ret;
	}
	ret = split_parts_init(x->node, x->in, x->n_in, x->n_out,
			       in->rank > 0 ? in->dims[axis] : OP_DIM_UNKNOWN, &sp);
	if (ret < 0 || in->rank < 0)
		return ret;
	for (k = 0; k < x->n_out; k++) {
		if (sp.known)
			x->out[k].dims[axis] = split_size(&sp, k);
		else if (x->n_out > 1)
			x->out[k].dims[axis] = OP_DIM_UNKNOWN;
	}
	return 0;
}

/* Copies, for each index before the axis, each part's run of elements. */
static int split_run(struct op_call *c)
{
	const struct op_tensor *in = &c->in[0];
	const unsigned char *src = in->data;
	size_t es = cep_dtype_size(in->dtype);
	struct split_parts sp;
	int64_t outer, inner, dim, at = 0, o;
	int axis, k, ret;

	op_axis_normalize(c->node, op_attr_int(c->node, "axis", 0), in->rank, &axis);
	dim = in->dims[axis];
	ret = split_parts_init(c->node, c->in, c->n_in, c->n_out, dim, &sp);
	if (ret < 0)
		return ret;
	if (!sp.known)
		return cep__set_error(CEP_EINTERNAL, "Split: the split sizes are not on the host");
	outer = op_dims_product(in, 0, axis);
	inner = op_dims_product(in, axis + 1, in->rank) * (int64_t)es;
	for (k = 0; k < c->n_out; k++) {
		const struct op_tensor *out = &c->out[k];
		int64_t size = split_size(&sp, k);
		size_t run = (size_t)(size * inner);

		if (op_tensor_present(out) && out->dims[axis] != size)
			return cep__set_error(CEP_EINVAL, "Split: part %d has %" PRId64
					      " elements, the plan expected %" PRId64,
					      k, size, out->dims[axis]);
		if (op_tensor_present(out) && out->data && run) {
			unsigned char *dst = out->data;

			for (o = 0; o < outer; o++)
				memcpy(dst + (size_t)o * run,
				       src + (size_t)((o * dim + at) * inner), run);
		}
		at += size;
	}
	return 0;
}

/* Any number of outputs: the loader compares the count literally. */
#define SPLIT_MAX_OUTPUTS INT_MAX

/* 2: the sizes only an attribute, axis 0 by default, every type. */
static const struct op_schema schemas[] = {
	{ "", "Split", 1, 1, 1, 2, 1, SPLIT_MAX_OUTPUTS, 0, 0, split_infer },
	{ "", "Split", 2, 12, 1, 1, 1, SPLIT_MAX_OUTPUTS, 0, 0, split_infer },
	{ "", "Split", 13, 17, 1, 2, 1, SPLIT_MAX_OUTPUTS, 0, 0, split_infer },
	{ "", "Split", 18, OP_OPSET_MAX, 1, 2, 1, SPLIT_MAX_OUTPUTS, 0, 0, split_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Split", 1, 1, BACKEND_HOST, OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16), NULL,
	  split_run },
	{ "", "Split", 2, 12, BACKEND_HOST, SHAPEOPS_DTS_NO_BF16, NULL, split_run },
	{ "", "Split", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, split_run },
};

const struct op_family op_family_cpu_split = {
	"cpu_split", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
