/*
 * depth_space.c — DepthToSpace and SpaceToDepth: a 4-D (N, C, H, W)
 * input whose channels are moved into blocksize x blocksize blocks of the
 * plane, or back. DepthToSpace (opset 1; mode from 11, bfloat16 from 13)
 * reads a block's channels in DCR order (depth, column, row: the block's
 * position is the outer part of the channel) or in CRD order (column, row,
 * depth: the inner part); SpaceToDepth (opset 1; bfloat16 from 13) writes
 * them in DCR order, and from opset 28 in either. Both move elements
 * without computing on them, so every stored type is one kernel; the
 * layout is one permutation of six dimensions (kernels/cpu/depth_space.h),
 * which the device kernel shares.
 */
#include "kernels/cpu/depth_space.h"
#include "kernels/cpu/shapeops.h"

#include <inttypes.h>

/* The largest blocksize: its square must not overflow any product. */
#define DEPTH_SPACE_MAX_BLOCK (INT64_C(1) << 20)

static bool is_d2s(const struct op_node *node)
{
	return strcmp(node->op_type, "DepthToSpace") == 0;
}

/* Whether node orders a block's channels CRD; its mode was checked. */
static bool mode_crd(const struct op_node *node)
{
	return strcmp(op_attr_string(node, "mode", "DCR"), "CRD") == 0;
}

/* Reads and checks node's blocksize and mode (the opset whose schema
 * has one: 11 for DepthToSpace, 28 for SpaceToDepth). */
static int attrs_check(const struct op_node *node, int64_t *bs)
{
	int mode_since = is_d2s(node) ? 11 : 28, ret;
	const char *mode;

	*bs = 1;
	ret = op_attr_check(node, "blocksize", OP_ATTR_INT);
	if (ret == 0)
		ret = op_attr_check(node, "mode", OP_ATTR_STRING);
	if (ret < 0)
		return ret;
	if (op_attr_find(node, "blocksize") == NULL)
		return cep__set_error(CEP_EMODEL, "%s: the blocksize attribute is required",
				      node->op_type);
	*bs = op_attr_int(node, "blocksize", 0);
	if (*bs < 1 || *bs > DEPTH_SPACE_MAX_BLOCK)
		return cep__set_error(CEP_EMODEL, "%s: blocksize %" PRId64 " is not in 1..%" PRId64,
				      node->op_type, *bs, DEPTH_SPACE_MAX_BLOCK);
	mode = op_attr_string(node, "mode", "DCR");
	if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
		return cep__set_error(CEP_EMODEL, "%s: mode \"%s\" is neither DCR nor CRD",
				      node->op_type, mode);
	if (node->opset < mode_since && strcmp(mode, "DCR") != 0)
		return cep__set_error(CEP_EMODEL, "%s: mode %s needs opset %d (the model has %d)",
				      node->op_type, mode, mode_since, node->opset);
	return 0;
}

/* d divided by bs, which must divide it (what names d in the message). */
static int dim_divide(const struct op_node *node, int64_t d, int64_t bs, const char *what,
		      int64_t *out)
{
	if (op_dim_fixed(d)) {
		if (d % bs != 0)
			return cep__set_error(CEP_ESHAPE, "%s: %s %" PRId64 " is not a multiple of "
					      "%" PRId64, node->op_type, what, d, bs);
		*out = d / bs;
	} else {
		*out = bs == 1 ? d : OP_DIM_UNKNOWN;
	}
	return 0;
}

/* d times m; symbols stay symbols only when m is 1. */
static int dim_times(const struct op_node *node, int64_t d, int64_t m, int64_t *out)
{
	if (op_dim_fixed(d)) {
		if (d > OP_MAX_NUMEL / m)
			return cep__set_error(CEP_ELIMIT, "%s: a dimension of %" PRId64 " times %" PRId64
					      " is beyond the largest tensor", node->op_type, d, m);
		*out = d * m;
	} else {
		*out = m == 1 ? d : OP_DIM_UNKNOWN;
	}
	return 0;
}

static int depth_space_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0];
	struct op_tensor *out = &x->out[0];
	int64_t bs = 1;
	int ret;

	out->dtype = in->dtype;
	out->rank = -1;
	ret = attrs_check(x->node, &bs);
	if (ret < 0 || in->rank < 0)
		return ret;
	if (in->rank != 4)
		return cep__set_error(CEP_ESHAPE, "%s: the input must be 4-D (N, C, H, W), not of "
				      "rank %d", x->node->op_type, in->rank);
	out->rank = 4;
	out->dims[0] = in->dims[0];
	if (is_d2s(x->node)) {
		ret = dim_divide(x->node, in->dims[1], bs * bs, "channel count", &out->dims[1]);
		if (ret == 0)
			ret = dim_times(x->node, in->dims[2], bs, &out->dims[2]);
		if (ret == 0)
			ret = dim_times(x->node, in->dims[3], bs, &out->dims[3]);
	} else {
		ret = dim_times(x->node, in->dims[1], bs * bs, &out->dims[1]);
		if (ret == 0)
			ret = dim_divide(x->node, in->dims[2], bs, "height", &out->dims[2]);
		if (ret == 0)
			ret = dim_divide(x->node, in->dims[3], bs, "width", &out->dims[3]);
	}
	if (ret < 0)
		out->rank = -1;
	return ret;
}

void cpu_depth_space_init(struct cpu_depth_space *g, const struct op_node *node,
			  const struct op_tensor *x)
{
	int64_t bs = op_attr_int(node, "blocksize", 1);
	int64_t n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
	int64_t plane = h * w;
	bool crd = mode_crd(node);

	if (is_d2s(node)) {
		/* Output (n, c', h, by, w, bx): row h * bs + by, column w * bs + bx,
		 * read from channel (by * bs + bx) * c' + c (DCR) or
		 * c * bs * bs + by * bs + bx (CRD). */
		int64_t co = c / (bs * bs);
		const int64_t dims[6] = { n, co, h, bs, w, bs };
		const int64_t dcr[6] = { c * plane, plane, w, bs * co * plane, 1, co * plane };
		const int64_t cr[6] = { c * plane, bs * bs * plane, w, bs * plane, 1, plane };

		memcpy(g->dims, dims, sizeof(dims));
		memcpy(g->stride, crd ? cr : dcr, sizeof(g->stride));
	} else {
		/* Output channel (by * bs + bx) * c + ch (DCR) or ch * bs * bs +
		 * by * bs + bx (CRD) of (h', w') holds input (ch, h' * bs + by,
		 * w' * bs + bx). */
		const int64_t dcr_d[6] = { n, bs, bs, c, h / bs, w / bs };
		const int64_t dcr_s[6] = { c * plane, w, 1, plane, bs * w, bs };
		const int64_t crd_d[6] = { n, c, bs, bs, h / bs, w / bs };
		const int64_t crd_s[6] = { c * plane, plane, w, 1, bs * w, bs };

		memcpy(g->dims, crd ? crd_d : dcr_d, sizeof(g->dims));
		memcpy(g->stride, crd ? crd_s : dcr_s, sizeof(g->stride));
	}
}

/* Walks the output in order, one innermost row at a time, keeping the
 * coordinates of the five outer dimensions. */
static int depth_space_run(struct op_call *c)
{
	const struct op_tensor *x = &c->in[0];
	size_t es = cep_dtype_size(x->dtype);
	struct cpu_depth_space g;
	int64_t pos[5] = { 0 }, rows, row, at = 0, j;
	int d;

	cpu_depth_space_init(&g, c->node, x);
	rows = g.dims[0] * g.dims[1] * g.dims[2] * g.dims[3] * g.dims[4];
	for (row = 0; row < rows && g.dims[5] > 0; row++) {
		int64_t base = 0;

		for (d = 0; d < 5; d++)
			base += pos[d] * g.stride[d];
		for (j = 0; j < g.dims[5]; j++, at++)
			shapeops_elem_copy(c->out[0].data, at, x->data, base + j * g.stride[5], es);
		for (d = 4; d >= 0; d--) {
			if (++pos[d] < g.dims[d])
				break;
			pos[d] = 0;
		}
	}
	return 0;
}

static const struct op_schema schemas[] = {
	/* 11 brought mode (DCR, CRD) to DepthToSpace, 28 to SpaceToDepth. */
	{ "", "DepthToSpace", 1, 10, 1, 1, 1, 1, 0, 0, depth_space_infer },
	{ "", "DepthToSpace", 11, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, depth_space_infer },
	{ "", "SpaceToDepth", 1, 27, 1, 1, 1, 1, 0, 0, depth_space_infer },
	{ "", "SpaceToDepth", 28, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, depth_space_infer },
};

/* bfloat16 joined both at opset 13. */
static const struct op_kernel kernels[] = {
	{ "", "DepthToSpace", 1, 12, BACKEND_HOST, SHAPEOPS_DTS_NO_BF16, NULL, depth_space_run },
	{ "", "DepthToSpace", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, depth_space_run },
	{ "", "SpaceToDepth", 1, 12, BACKEND_HOST, SHAPEOPS_DTS_NO_BF16, NULL, depth_space_run },
	{ "", "SpaceToDepth", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, depth_space_run },
};

const struct op_family op_family_cpu_depth_space = {
	"cpu_depth_space", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
