/*
 * expand.c — operators that repeat their input: Expand (opset 8:
 * broadcast to a shape given as an int64 input, numpy rules in both
 * directions, so the output may be larger than the shape asked for) and
 * Tile (opset 6: each dimension repeated as many times as an int64 input
 * says; at opset 1 one dimension, the `axis` input, repeated `tiles`
 * times, both scalars of the data's float type).
 *
 * Both output shapes depend on an input's value: inference computes them
 * when it is known (a constant, or a value the planner folded) and leaves
 * unknown what it cannot tell; symbolic dimensions survive where the rule
 * allows (a dimension expanded by 1 or tiled once keeps its symbol). The
 * kernels need only the shapes the planner fixed, not the values again.
 */
#include "kernels/cpu/shapeops.h"

#include <inttypes.h>

/* ------------------------------------------------------------------- Expand */

static int expand_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0], *shape = &x->in[1];
	struct op_tensor *out = &x->out[0];
	struct op_tensor want = { .dtype = CEP_DTYPE_INT64 };
	int64_t n;
	int i, ret;

	out->dtype = in->dtype;
	ret = shapeops_list_check(x->node, shape, "shape", SHAPEOPS_INT64, &n);
	if (ret < 0)
		return ret;
	if (n > CEP_MAX_RANK)
		return cep__set_error(CEP_EUNSUPPORTED, "Expand: shape has %" PRId64
				      " entries, at most %d", n, CEP_MAX_RANK);
	out->rank = -1;
	if (n < 0 || in->rank < 0)
		return 0;
	want.rank = (int)n;
	for (i = 0; i < want.rank; i++) {
		if (!shape->data) {
			want.dims[i] = OP_DIM_UNKNOWN;
			continue;
		}
		want.dims[i] = shapeops_at(shape, i);
		if (want.dims[i] < 0)
			return cep__set_error(CEP_ESHAPE, "Expand: shape entry %d is %" PRId64,
					      i, want.dims[i]);
	}
	if (shape->data)
		return op_broadcast(x->node, in, &want, out);
	/* Without the values, an input dimension other than 1 still fixes
	 * its output dimension: the shape may only repeat it or say 1. */
	out->rank = in->rank > want.rank ? in->rank : want.rank;
	for (i = 0; i < out->rank; i++) {
		int k = i - (out->rank - in->rank);
		int64_t d = k >= 0 ? in->dims[k] : 1;

		out->dims[i] = op_dim_fixed(d) && d != 1 ? d : OP_DIM_UNKNOWN;
	}
	return 0;
}

/* Walks the output in rows of the broadcasting iterator: a row either
 * copies a contiguous run of the input or repeats one element of it. */
static int expand_run(struct op_call *c)
{
	const struct op_tensor *in = &c->in[0], *out = &c->out[0];
	const struct op_tensor *ins[1] = { in };
	size_t es = cep_dtype_size(in->dtype);
	const unsigned char *src = in->data;
	unsigned char *dst = out->data;
	struct cpu_bcast bc;
	int64_t r;

	cpu_bcast_init(&bc, out, ins, 1);
	for (r = 0; r < bc.rows; r++) {
		const unsigned char *from = src + (size_t)bc.off[0] * es;

		if (bc.step[0] == 0)
			shapeops_fill(dst, from, es, bc.inner);
		else
			memcpy(dst, from, (size_t)bc.inner * es);
		dst += (size_t)bc.inner * es;
		cpu_bcast_next(&bc);
	}
	return 0;
}

/* --------------------------------------------------------------------- Tile */

static int tile_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0], *rep = &x->in[1];
	struct op_tensor *out = &x->out[0];
	int64_t n;
	int i, ret;

	out->dtype = in->dtype;
	out->rank = in->rank;
	ret = shapeops_list_check(x->node, rep, "repeats", SHAPEOPS_INT64, &n);
	if (ret < 0)
		return ret;
	if (in->rank < 0)
		return 0;
	if (n >= 0 && n != in->rank)
		return cep__set_error(CEP_ESHAPE, "Tile: repeats has %" PRId64
				      " entries for an input of rank %d", n, in->rank);
	for (i = 0; i < in->rank; i++) {
		int64_t d = in->dims[i], k;

		if (!rep->data || n < 0) {
			out->dims[i] = d == 0 ? 0 : OP_DIM_UNKNOWN;
			continue;
		}
		k = shapeops_at(rep, i);
		if (k < 0)
			return cep__set_error(CEP_ESHAPE, "Tile: repeats entry %d is %" PRId64, i, k);
		if (k == 0 || d == 0)
			out->dims[i] = 0;
		else if (k == 1)
			out->dims[i] = d;
		else if (!op_dim_fixed(d))
			out->dims[i] = OP_DIM_UNKNOWN;
		else if (d > OP_MAX_NUMEL / k)
			return cep__set_error(CEP_ELIMIT, "Tile: dimension %d would be %" PRId64
					      " times %" PRId64 ", beyond 2^40", i, d, k);
		else
			out->dims[i] = d * k;
	}
	return 0;
}

/*
 * Output rows (the innermost dimension) are built one by one: the input
 * row they repeat is found from the outer coordinates modulo the input's
 * dimensions and laid out as many times as the innermost repeat says.
 */
/* A scalar input of Tile-1 (tiles or axis, input i) known on the host,
 * in *v; 1 when it is not known yet. It has the data's type, a float: it
 * must hold a whole number. */
static int tile1_scalar(const struct op_infer *x, int i, const char *what, int64_t *v)
{
	const struct op_tensor *t = &x->in[i];
	int64_t n;
	double f;

	if (!op_dtype_in(t->dtype, OP_DTS_NUMERIC))
		return cep__set_error(CEP_EDTYPE, "Tile (opset %d): %s is %s, not a number",
				      x->node->opset, what, cep_dtype_name(t->dtype));
	if (t->rank < 0)
		return 1;
	if (op_tensor_numel(t, &n) == 0 && n != 1)
		return cep__set_error(CEP_ESHAPE, "Tile (opset %d): %s must be one value, it has %"
				      PRId64, x->node->opset, what, n);
	if (!t->data || n != 1)
		return 1;
	f = cpu_load_d(t->data, t->dtype, 0);
	if (f != floor(f) || fabs(f) > (double)OP_MAX_NUMEL)
		return cep__set_error(CEP_EMODEL, "Tile (opset %d): %s is %g, not a whole number",
				      x->node->opset, what, f);
	*v = (int64_t)f;
	return 0;
}

/* Tile-1: dimension `axis` of the input repeated `tiles` times, as Tile-6
 * does with repeats of 1 but there. */
static int tile1_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0];
	struct op_tensor *out = &x->out[0];
	int64_t tiles = 0, axis = 0;
	int known, i, a, ret;

	*out = *in;
	out->data = NULL;
	ret = tile1_scalar(x, 1, "tiles", &tiles);
	if (ret < 0)
		return ret;
	known = ret == 0;
	ret = tile1_scalar(x, 2, "axis", &axis);
	if (ret < 0)
		return ret;
	known = known && ret == 0;
	if (in->rank < 0)
		return 0;
	if (in->rank == 0)
		return cep__set_error(CEP_ESHAPE, "Tile (opset %d): the input must have rank >= 1",
				      x->node->opset);
	if (!known) {
		for (i = 0; i < in->rank; i++)
			out->dims[i] = OP_DIM_UNKNOWN;
		return 0;
	}
	ret = op_axis_normalize(x->node, axis, in->rank, &a);
	if (ret < 0)
		return ret;
	if (tiles < 0)
		return cep__set_error(CEP_ESHAPE, "Tile (opset %d): tiles is %" PRId64,
				      x->node->opset, tiles);
	if (tiles == 0 || in->dims[a] == 0)
		out->dims[a] = 0;
	else if (!op_dim_fixed(in->dims[a]))
		out->dims[a] = tiles == 1 ? in->dims[a] : OP_DIM_UNKNOWN;
	else if (in->dims[a] > OP_MAX_NUMEL / tiles)
		return cep__set_error(CEP_ELIMIT, "Tile: dimension %d would be %" PRId64
				      " times %" PRId64 ", beyond 2^40", a, in->dims[a], tiles);
	else
		out->dims[a] = in->dims[a] * tiles;
	return 0;
}

static int tile_run(struct op_call *c)
{
	const struct op_tensor *in = &c->in[0], *out = &c->out[0];
	size_t es = cep_dtype_size(in->dtype);
	const unsigned char *src = in->data;
	unsigned char *dst = out->data;
	int64_t stride[CEP_MAX_RANK], pos[CEP_MAX_RANK] = { 0 };
	int64_t s = 1, rows, row;
	size_t width, total, done;
	int r = in->rank, d;

	if (cpu_numel(out) == 0)
		return 0;
	if (r == 0) {
		memcpy(dst, src, es);
		return 0;
	}
	for (d = r - 1; d >= 0; d--) {
		stride[d] = s;
		s *= in->dims[d];
	}
	width = (size_t)in->dims[r - 1] * es;
	total = (size_t)out->dims[r - 1] * es;
	rows = op_dims_product(out, 0, r - 1);
	for (row = 0; row < rows; row++) {
		int64_t off = 0;

		for (d = 0; d < r - 1; d++)
			off += pos[d] % in->dims[d] * stride[d];
		/* One copy of the input row, then the row doubles itself. */
		memcpy(dst, src + (size_t)off * es, width);
		for (done = width; done < total; done *= 2)
			memcpy(dst + done, dst, done < total - done ? done : total - done);
		dst += total;
		for (d = r - 2; d >= 0; d--) {
			if (++pos[d] < out->dims[d])
				break;
			pos[d] = 0;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_schema schemas[] = {
	{ "", "Expand", 8, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, expand_infer },
	/* 6: repeats for every dimension, of every type. */
	{ "", "Tile", 1, 5, 3, 3, 1, 1, 0, 0, tile1_infer },
	{ "", "Tile", 6, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, tile_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Expand", 8, 12, BACKEND_HOST, SHAPEOPS_DTS_NO_BF16, NULL, expand_run },
	{ "", "Expand", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, expand_run },
	{ "", "Tile", 1, 5, BACKEND_HOST, OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16), NULL,
	  tile_run },
	{ "", "Tile", 6, 12, BACKEND_HOST, SHAPEOPS_DTS_NO_BF16, NULL, tile_run },
	{ "", "Tile", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, tile_run },
};

const struct op_family op_family_cpu_expand = {
	"cpu_expand", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
