/*
 * resize.c — the CUDA kernels of Resize (opset 10 on) and Upsample (1 to
 * 9) for every type, mode, coordinate transformation and rounding the
 * reference kernel takes (kernels/cpu/resize.c): kernels/cuda/resize.cu
 * on the device.
 *
 * prepare() reads the attributes with the host's own functions
 * (kernels/cpu/resize.h), and from the shapes alone sizes the workspace:
 * a header, then per resized dimension a table of input positions and
 * weights for each output position, as many taps as the dimension can
 * need (cpu_resize_taps_bound()). The scales or sizes and the roi are
 * inputs whose values the planner does not give prepare(): the table
 * kernel reads them on the device at each run (Upsample's scale
 * attributes of opsets 1 to 8 excepted, known here), and the output's
 * planned shape is what it checks them against.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "kernels/cpu/resize.h"

/* Twin of struct cep_resize (resize.cu). */
struct cuda_resize {
	int64_t n;                      /* output elements */
	int64_t table_n;                /* output positions of the resized dims */
	int32_t rank, n_axes;
	int32_t mode, coord, round, policy;
	int32_t antialias, exclude_outside;
	int32_t upsample;
	int32_t src, roi;               /* enum resize_src, enum resize_roi */
	int32_t pad;
	int32_t axes[CEP_MAX_RANK];
	double cubic_a, extrapolation;
	double scale[CEP_MAX_RANK];     /* per dim, for RESIZE_SRC_GIVEN */
	int64_t idims[CEP_MAX_RANK], odims[CEP_MAX_RANK];
	int64_t istride[CEP_MAX_RANK];  /* elements */
	int64_t taps_max[CEP_MAX_RANK]; /* per dim; 0: not resized */
	int64_t table[CEP_MAX_RANK];    /* byte offset of dim d's table */
};

/* Where the target comes from (resize.cu's RS_SRC_*). */
enum resize_src { RESIZE_SRC_GIVEN, RESIZE_SRC_SCALES_F32, RESIZE_SRC_SCALES_F16, RESIZE_SRC_SIZES };

/* The roi's type (resize.cu's RS_ROI_*). */
enum resize_roi { RESIZE_ROI_NONE, RESIZE_ROI_F32, RESIZE_ROI_F16, RESIZE_ROI_BF16 };

/* The header of each dim's table (resize.cu's struct rs_head). */
#define RESIZE_HEAD_BYTES (CEP_MAX_RANK * 16)

struct resize_params {
	CUfunction table, apply;
	uint64_t fill;                  /* the extrapolation value's bits (nearest) */
	double cubic_a, extrapolation;
	double lo, hi;                  /* an integer type's range */
	float scale[CEP_MAX_RANK];      /* Upsample's scales attribute, per dim */
	int32_t taps_max[CEP_MAX_RANK]; /* per dim; 0: not resized */
	int8_t axes[CEP_MAX_RANK];
	int8_t n_axes, mode, coord, round, policy, antialias, exclude_outside, upsample;
	int8_t src, roi;                /* enum resize_src, enum resize_roi */
	int8_t src_input;               /* the input of the scales or sizes; -1: none */
};
CUDA_PARAMS_FIT(struct resize_params);

/* Lays the workspace out for y's dims and the taps of each dim: fills
 * table[] (byte offsets) and returns the bytes. Nearest keeps one index
 * per output position; linear and cubic taps_max weights, as many
 * indices, and an extrapolation flag. */
static size_t resize_layout(const struct op_tensor *y, const int32_t *taps_max, bool nearest,
			    int64_t *table)
{
	size_t at = RESIZE_HEAD_BYTES;
	int d;

	for (d = 0; d < y->rank; d++) {
		size_t out = (size_t)y->dims[d], t = (size_t)taps_max[d];

		table[d] = (int64_t)at;
		if (t == 0)
			continue;
		if (nearest)
			at += out * sizeof(int64_t);
		else
			at += out * t * (sizeof(double) + sizeof(int64_t)) + ((out + 7) & ~(size_t)7);
	}
	return at;
}

/* Reads where the target comes from: the scales attribute (known here),
 * or the scales or sizes input, read on the device. */
static int resize_source(struct op_call *c, const struct cpu_resize_attrs *a,
			 struct resize_params *p)
{
	const struct op_node *node = c->node;
	bool legacy = cpu_resize_legacy(node);
	const struct op_tensor *scales = cpu_resize_input(c->in, c->n_in, legacy ? 1 : 2);
	struct cpu_resize_target t;
	int d, ret;

	ret = cpu_resize_target_get(node, a, c->in, c->n_in, &t);
	if (ret < 0)
		return ret;
	p->src_input = -1;
	if (ret == 0) {
		p->src = RESIZE_SRC_GIVEN;
		for (d = 0; d < c->in[0].rank; d++)
			p->scale[d] = (float)t.scale[d];
		return 0;
	}
	if (scales != NULL && a->policy != CPU_RESIZE_STRETCH)
		return cep__set_error(CEP_EMODEL, "%s: keep_aspect_ratio_policy applies to sizes, "
				      "not scales", node->op_type);
	if (scales != NULL) {
		p->src = scales->dtype == CEP_DTYPE_FLOAT16 ? RESIZE_SRC_SCALES_F16
							    : RESIZE_SRC_SCALES_F32;
		p->src_input = legacy ? 1 : 2;
	} else {
		p->src = RESIZE_SRC_SIZES;
		p->src_input = 3;
	}
	return 0;
}

/* Checks the roi of a tf_crop_and_resize and records its type. */
static int resize_roi_get(struct op_call *c, const struct cpu_resize_attrs *a,
			  struct resize_params *p)
{
	const struct op_tensor *roi = cpu_resize_input(c->in, c->n_in, 1);

	p->roi = RESIZE_ROI_NONE;
	if (a->coord != CPU_RESIZE_TF_CROP_AND_RESIZE || cpu_resize_legacy(c->node))
		return 0;
	if (roi == NULL || roi->rank != 1 || roi->dims[0] != 2 * (int64_t)a->n_axes)
		return cep__set_error(CEP_ESHAPE, "%s: tf_crop_and_resize needs a roi of %d values",
				      c->node->op_type, 2 * a->n_axes);
	switch (roi->dtype) {
	case CEP_DTYPE_FLOAT32: p->roi = RESIZE_ROI_F32; break;
	case CEP_DTYPE_FLOAT16: p->roi = RESIZE_ROI_F16; break;
	case CEP_DTYPE_BFLOAT16: p->roi = RESIZE_ROI_BF16; break;
	default:
		return cep__set_error(CEP_EDTYPE, "%s: roi is %s, not a float type",
				      c->node->op_type, cep_dtype_name(roi->dtype));
	}
	return 0;
}

static int resize_prepare(struct op_call *c, size_t *workspace)
{
	struct resize_params *p = (struct resize_params *)c->params;
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	const char *sfx = cuda_dtype_suffix(x->dtype);
	size_t es = cep_dtype_size(x->dtype);
	struct cpu_resize_attrs a;
	int64_t table[CEP_MAX_RANK];
	unsigned char fill[8] = { 0 };
	char name[32];
	int j, d, ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL || (es != 1 && es != 2 && es != 4 && es != 8) || y->rank != x->rank)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(x->dtype));
	ret = cpu_resize_attrs_get(c->node, x->rank, &a);
	if (ret < 0)
		return ret;
	if (a.mode != CPU_RESIZE_NEAREST && x->dtype == CEP_DTYPE_BOOL)
		return cep__set_error(CEP_EUNSUPPORTED, "%s: only mode nearest takes bool",
				      c->node->op_type);
	ret = resize_source(c, &a, p);
	if (ret < 0)
		return ret;
	ret = resize_roi_get(c, &a, p);
	if (ret < 0)
		return ret;
	p->mode = (int8_t)a.mode;
	p->coord = (int8_t)a.coord;
	p->round = (int8_t)a.round;
	p->policy = (int8_t)a.policy;
	p->antialias = a.antialias;
	p->exclude_outside = a.exclude_outside;
	p->upsample = strcmp(c->node->op_type, "Upsample") == 0;
	p->cubic_a = a.cubic_a;
	p->extrapolation = a.extrapolation;
	p->n_axes = (int8_t)a.n_axes;
	for (j = 0; j < a.n_axes; j++) {
		d = a.axes[j];
		p->axes[j] = (int8_t)d;
		p->taps_max[d] = a.mode == CPU_RESIZE_NEAREST
			? 1 : (int32_t)cpu_resize_taps_bound(&a, x->dims[d], y->dims[d]);
	}
	/* The fill and the integer range, as cpu_resize_store() has them. */
	cpu_resize_store(&(struct op_tensor){ .data = fill, .dtype = y->dtype }, 0,
			 a.extrapolation);
	memcpy(&p->fill, fill, sizeof(p->fill));
	switch (x->dtype) {
	case CEP_DTYPE_INT8: p->lo = -128.0; p->hi = 127.0; break;
	case CEP_DTYPE_UINT8: p->lo = 0.0; p->hi = 255.0; break;
	case CEP_DTYPE_INT32: p->lo = -2147483648.0; p->hi = 2147483647.0; break;
	default: p->lo = -9223372036854775808.0; p->hi = 9223372036854775807.0; break;
	}
	*workspace = resize_layout(y, p->taps_max, a.mode == CPU_RESIZE_NEAREST, table);
	ret = cuda_function_get(c->be, "resize", "resize_table", &p->table);
	if (ret < 0)
		return ret;
	if (a.mode == CPU_RESIZE_NEAREST)
		snprintf(name, sizeof(name), "resize_nearest_%zu", es);
	else
		snprintf(name, sizeof(name), "resize_interp_%s", sfx);
	return cuda_function_get(c->be, "resize", name, &p->apply);
}

static int resize_run(struct op_call *c)
{
	struct resize_params *p = (struct resize_params *)c->params;
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	const void *data = x->data, *src = NULL, *roi = NULL;
	void *out = y->data, *ws = c->workspace;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	struct cuda_resize k = {
		.rank = x->rank > 0 ? x->rank : 1, .n_axes = p->n_axes, .mode = p->mode,
		.coord = p->coord, .round = p->round, .policy = p->policy,
		.antialias = p->antialias, .exclude_outside = p->exclude_outside,
		.upsample = p->upsample, .src = p->src, .roi = p->roi,
		.cubic_a = p->cubic_a, .extrapolation = p->extrapolation,
	};
	void *targs[] = { &k, &src, &roi, &ws, &fault, &site };
	void *nargs[] = { &data, &out, &k, &ws, &p->fill };
	void *iargs[] = { &data, &out, &k, &ws, &p->lo, &p->hi };
	int64_t stride = 1;
	int d, j, ret;

	k.n = op_dims_product(y, 0, y->rank);
	if (k.n == 0)
		return 0;
	resize_layout(y, p->taps_max, p->mode == CPU_RESIZE_NEAREST, k.table);
	for (d = k.rank - 1; d >= 0; d--) {
		k.idims[d] = x->rank > 0 ? x->dims[d] : 1;
		k.odims[d] = y->rank > 0 ? y->dims[d] : 1;
		k.istride[d] = stride;
		stride *= k.idims[d];
		k.scale[d] = p->src == RESIZE_SRC_GIVEN && x->rank > 0 ? p->scale[d] : 1.0;
		k.taps_max[d] = p->taps_max[d];
	}
	for (j = 0; j < p->n_axes; j++) {
		k.axes[j] = p->axes[j];
		k.table_n += k.odims[p->axes[j]];
	}
	if (p->src_input >= 0)
		src = c->in[p->src_input].data;
	if (p->roi != RESIZE_ROI_NONE)
		roi = c->in[1].data;
	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	ret = cuda_launch(c->be, c->stream, p->table, cuda_grid(k.table_n), CUDA_BLOCK, 0, targs);
	if (ret < 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->apply, cuda_grid(k.n), CUDA_BLOCK, 0,
			   p->mode == CPU_RESIZE_NEAREST ? nargs : iargs);
}

/* The reference kernel's type sets: bfloat16 from Resize 13. */
#define RESIZE_NO_BF16 (CUDA_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16))
/* Upsample-1's own set (kernels/cpu/resize.c). */
#define RESIZE_DTS_UPSAMPLE1 (OP_DT(CEP_DTYPE_BOOL) | OP_DT(CEP_DTYPE_INT32) | \
			      OP_DT(CEP_DTYPE_INT64) | OP_DT(CEP_DTYPE_FLOAT32) | \
			      OP_DT(CEP_DTYPE_FLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "Resize", 10, 12, BACKEND_CUDA, RESIZE_NO_BF16, resize_prepare, resize_run },
	{ "", "Resize", 13, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_ALL, resize_prepare, resize_run },
	{ "", "Upsample", 1, 6, BACKEND_CUDA, RESIZE_DTS_UPSAMPLE1, resize_prepare, resize_run },
	{ "", "Upsample", 7, 9, BACKEND_CUDA, RESIZE_NO_BF16, resize_prepare, resize_run },
};

const struct op_family op_family_cuda_resize = {
	"cuda_resize", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
