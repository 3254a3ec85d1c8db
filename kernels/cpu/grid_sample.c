/*
 * grid_sample.c — GridSample (opset 16: 4-D; opset 20: any number of
 * spatial dims; bfloat16 from 22) and AffineGrid (opset 20), the sampler
 * and grid generator of spatial transformer networks.
 *
 * GridSample: X (N, C, D1..Dr) is sampled at the positions of grid (N,
 * O1..Or, r), normalized to [-1, 1] with the last spatial dim first
 * (grid[..., 0] is along Dr), into Y (N, C, O1..Or). A coordinate g along
 * a dim of size n becomes ((g + 1) / 2) * (n - 1) with align_corners,
 * ((g + 1) * n - 1) / 2 without; one outside the border range ([0, n - 1]
 * with align_corners, [-0.5, n - 0.5] without) is clamped to [0, n - 1]
 * (padding_mode border) or reflected about the borders until it is
 * inside (reflection). nearest rounds it half to even; linear (bilinear)
 * weighs the 2 positions around it, cubic (bicubic) the 4 around it with
 * Keys' kernel of a = -0.75, nested one dim at a time, the last dim
 * innermost. A position outside the input reads 0 (zeros), the nearest
 * border element (border) or its reflection (reflection). Computed in
 * float32; X of any stored type (integers and bool interpolated in
 * float32 and stored truncated toward zero, nearest copies elements
 * exactly); the grid float32 or float16 (bfloat16 from 22). In a half
 * session the grid stays float32 (engine/precision.c): a float16 grid
 * moves positions by a quarter of a pixel across 1024 of them, a bfloat16
 * one by two.
 *
 * AffineGrid: theta (N, 2, 3) or (N, 3, 4) applied to the homogeneous
 * coordinates of an evenly spaced grid over [-1, 1] of the spatial size
 * given by the int64 input size ((N, C, H, W) or (N, C, D, H, W)): pixel
 * centres at -1 + (2i + 1) / n, or with align_corners at -1 + 2i / (n -
 * 1) (0 for n = 1); grid (N, H, W, 2) or (N, D, H, W, 3) holds x (along
 * W) first. Computed in float32, of theta's type; it stays float32 in a
 * half session, its output being a grid.
 */
#include "kernels/cpu/grid_sample.h"

#include <inttypes.h>

#include "kernels/cpu/cpu.h"
#include "kernels/cpu/shapeops.h"

/* Tap positions beyond this are as far outside as any (no dim is this
 * large), which keeps float to integer conversions defined. */
#define GS_FAR 1e9f

#define GS_CUBIC_A (-0.75f)

int cpu_grid_sample_attrs(const struct op_node *node, struct cpu_grid_sample *a)
{
	bool old = node->opset < 20;
	const char *mode, *pad;
	int ret;

	ret = op_attr_check(node, "mode", OP_ATTR_STRING);
	if (ret == 0)
		ret = op_attr_check(node, "padding_mode", OP_ATTR_STRING);
	if (ret == 0)
		ret = op_attr_check(node, "align_corners", OP_ATTR_INT);
	if (ret < 0)
		return ret;
	mode = op_attr_string(node, "mode", old ? "bilinear" : "linear");
	if (strcmp(mode, old ? "bilinear" : "linear") == 0)
		a->mode = CPU_GS_LINEAR;
	else if (strcmp(mode, "nearest") == 0)
		a->mode = CPU_GS_NEAREST;
	else if (strcmp(mode, old ? "bicubic" : "cubic") == 0)
		a->mode = CPU_GS_CUBIC;
	else
		return cep__set_error(CEP_EMODEL, "GridSample: mode '%s' is not %s at opset %d",
				      mode, old ? "bilinear, nearest or bicubic"
						: "linear, nearest or cubic", node->opset);
	pad = op_attr_string(node, "padding_mode", "zeros");
	if (strcmp(pad, "zeros") == 0)
		a->padding = CPU_GS_ZEROS;
	else if (strcmp(pad, "border") == 0)
		a->padding = CPU_GS_BORDER;
	else if (strcmp(pad, "reflection") == 0)
		a->padding = CPU_GS_REFLECTION;
	else
		return cep__set_error(CEP_EMODEL, "GridSample: padding_mode '%s' is not zeros, "
				      "border or reflection", pad);
	a->align_corners = op_attr_int(node, "align_corners", 0) != 0;
	return 0;
}

/* ------------------------------------------------------- GridSample: infer */

/* The grid's element types: bfloat16 from opset 22. */
static uint32_t gs_grid_types(int opset)
{
	uint32_t t = OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16);

	return opset >= 22 ? t | OP_DT(CEP_DTYPE_BFLOAT16) : t;
}

static int gs_infer(struct op_infer *x)
{
	const struct op_tensor *xt = &x->in[0], *gt = &x->in[1];
	struct op_tensor *y = &x->out[0];
	struct cpu_grid_sample a;
	int rank, r, i, ret;

	y->dtype = xt->dtype;
	y->rank = -1;
	ret = cpu_grid_sample_attrs(x->node, &a);
	if (ret < 0)
		return ret;
	if (!op_dtype_in(gt->dtype, gs_grid_types(x->node->opset)))
		return cep__set_error(CEP_EDTYPE, "GridSample: grid is %s, not float32 or float16%s",
				      cep_dtype_name(gt->dtype),
				      x->node->opset >= 22 ? " or bfloat16" : "");
	rank = xt->rank >= 0 ? xt->rank : gt->rank;
	if (rank < 0)
		return 0;
	if (rank < 3 || rank > CEP_MAX_RANK)
		return cep__set_error(CEP_ESHAPE, "GridSample: X must have rank 3 to %d (N, C, "
				      "spatial...), it has %d", CEP_MAX_RANK, rank);
	if (x->node->opset < 20 && rank != 4)
		return cep__set_error(CEP_ESHAPE, "GridSample: X must be 4-D (N, C, H, W) at opset "
				      "%d, it has rank %d", x->node->opset, rank);
	r = rank - 2;
	if (xt->rank >= 0 && gt->rank >= 0 && gt->rank != xt->rank)
		return cep__set_error(CEP_ESHAPE, "GridSample: grid has rank %d but X has rank %d",
				      gt->rank, xt->rank);
	if (gt->rank >= 0 && op_dim_fixed(gt->dims[rank - 1]) && gt->dims[rank - 1] != r)
		return cep__set_error(CEP_ESHAPE, "GridSample: grid's last dimension is %" PRId64
				      ", it must be %d (the spatial dims of X)",
				      gt->dims[rank - 1], r);
	if (xt->rank >= 0 && gt->rank >= 0 && op_dim_fixed(xt->dims[0]) &&
	    op_dim_fixed(gt->dims[0]) && xt->dims[0] != gt->dims[0])
		return cep__set_error(CEP_ESHAPE, "GridSample: X has %" PRId64 " images but grid %"
				      PRId64, xt->dims[0], gt->dims[0]);
	y->rank = rank;
	y->dims[0] = xt->rank >= 0 && op_dim_fixed(xt->dims[0]) ? xt->dims[0]
		   : gt->rank >= 0 ? gt->dims[0] : OP_DIM_UNKNOWN;
	y->dims[1] = xt->rank >= 0 ? xt->dims[1] : OP_DIM_UNKNOWN;
	for (i = 0; i < r; i++)
		y->dims[2 + i] = gt->rank >= 0 ? gt->dims[1 + i] : OP_DIM_UNKNOWN;
	return 0;
}

/* ------------------------------------------------------ GridSample: kernel */

/* floor(v) as an integer, positions past GS_FAR (NaN too) pinned there. */
static int64_t gs_floor(float v)
{
	if (!(v > -GS_FAR))
		return -(int64_t)GS_FAR;
	if (v > GS_FAR)
		return (int64_t)GS_FAR;
	return (int64_t)floorf(v);
}

/* v reflected about lo and hi until it lies between them. */
static float gs_reflect(float v, float lo, float hi)
{
	float range = hi - lo, dx, q, r;

	if (range <= 0.0f)
		return lo;
	if (v >= lo && v <= hi)
		return v;
	dx = v < lo ? lo - v : v - hi;
	q = floorf(dx / range);
	r = dx - q * range;
	if (fmodf(q, 2.0f) == 0.0f)
		return v < lo ? lo + r : hi - r;
	return v < lo ? hi - r : lo + r;
}

/* Keys' cubic weights of the 4 taps around a position t past the first
 * tap's successor (t in [0, 1)). */
static void gs_cubic(float t, float *w)
{
	const float a = GS_CUBIC_A;
	float x = fabsf(t), x1 = x + 1.0f, y = 1.0f - x, y1 = 2.0f - x;

	w[0] = ((a * x1 - 5.0f * a) * x1 + 8.0f * a) * x1 - 4.0f * a;
	w[1] = ((a + 2.0f) * x - (a + 3.0f)) * x * x + 1.0f;
	w[2] = ((a + 2.0f) * y - (a + 3.0f)) * y * y + 1.0f;
	w[3] = ((a * y1 - 5.0f * a) * y1 + 8.0f * a) * y1 - 4.0f * a;
}

/* The taps of one output position along one input dim of size n. */
struct gs_taps {
	int taps;
	int64_t idx[4];      /* input index; -1: outside (zeros) */
	float w[4];
};

/* The index tap i reads along a dim of size n, or -1 (zeros, outside). */
static int64_t gs_tap_index(const struct cpu_grid_sample *a, int64_t i, int64_t n, float lo,
			    float hi)
{
	if (i >= 0 && i < n)
		return i;
	switch (a->padding) {
	case CPU_GS_BORDER:
		return i < 0 ? 0 : n - 1;
	case CPU_GS_REFLECTION: {
		int64_t j = (int64_t)gs_reflect((float)i, lo, hi);

		return j < 0 ? 0 : j >= n ? n - 1 : j;
	}
	default:
		return -1;
	}
}

/* The taps along a dim of size n for the normalized coordinate g. */
static void gs_taps_of(const struct cpu_grid_sample *a, float g, int64_t n, struct gs_taps *t)
{
	float lo = a->align_corners ? 0.0f : -0.5f;
	float hi = a->align_corners ? (float)(n - 1) : (float)n - 0.5f;
	float v = a->align_corners ? (g + 1.0f) / 2.0f * (float)(n - 1)
				   : ((g + 1.0f) * (float)n - 1.0f) / 2.0f;
	int64_t x0;
	int k;

	if (a->mode == CPU_GS_NEAREST)
		v = rintf(v);
	if (v < lo || v > hi) {
		if (a->padding == CPU_GS_BORDER)
			v = v < 0.0f ? 0.0f : v > (float)(n - 1) ? (float)(n - 1) : v;
		else if (a->padding == CPU_GS_REFLECTION)
			v = gs_reflect(v, lo, hi);
	}
	x0 = gs_floor(v);
	switch (a->mode) {
	case CPU_GS_NEAREST:
		t->taps = 1;
		t->idx[0] = gs_tap_index(a, x0, n, lo, hi);
		t->w[0] = 1.0f;
		return;
	case CPU_GS_LINEAR:
		t->taps = 2;
		t->w[1] = v - (float)x0;
		t->w[0] = 1.0f - t->w[1];
		break;
	default:
		t->taps = 4;
		gs_cubic(v - (float)x0, t->w);
		x0 -= 1;
		break;
	}
	for (k = 0; k < t->taps; k++)
		t->idx[k] = gs_tap_index(a, x0 + k, n, lo, hi);
}

/* The interpolated value of one channel (elements from x0 of xt, the
 * input's spatial dims in) at the taps t of each of the r dims: nested
 * weighted sums, the last dim innermost. */
static float gs_interp(const struct op_tensor *xt, int64_t x0, const int64_t *in, int r,
		       const struct gs_taps *t)
{
	float part[GRID_SAMPLE_MAX_DIMS] = { 0 };
	int k[GRID_SAMPLE_MAX_DIMS] = { 0 };
	int d;

	for (;;) {
		int64_t off = 0;
		bool inside = true;
		float v = 0.0f;

		for (d = 0; d < r; d++) {
			int64_t i = t[d].idx[k[d]];

			inside &= i >= 0;
			off = off * in[d] + i;
		}
		if (inside)
			v = cpu_load_f(xt->data, xt->dtype, x0 + off);
		part[r - 1] += t[r - 1].w[k[r - 1]] * v;
		for (d = r - 1; d >= 0; d--) {
			if (++k[d] < t[d].taps)
				break;
			k[d] = 0;
			if (d == 0)
				return part[0];
			part[d - 1] += t[d - 1].w[k[d - 1]] * part[d];
			part[d] = 0.0f;
		}
	}
}

static int gs_run(struct op_call *c)
{
	const struct op_tensor *xt = &c->in[0], *gt = &c->in[1], *yt = &c->out[0];
	int r = xt->rank - 2, d;
	int64_t in[GRID_SAMPLE_MAX_DIMS], plane_in, plane_out, n, pos, ch;
	size_t es = cep_dtype_size(xt->dtype);
	struct gs_taps t[GRID_SAMPLE_MAX_DIMS];
	struct cpu_grid_sample a;
	int ret;

	ret = cpu_grid_sample_attrs(c->node, &a);
	if (ret < 0)
		return ret;
	for (d = 0; d < r; d++)
		in[d] = xt->dims[2 + d];
	plane_in = op_dims_product(xt, 2, xt->rank);
	plane_out = op_dims_product(yt, 2, yt->rank);
	for (n = 0; n < yt->dims[0]; n++) {
		for (pos = 0; pos < plane_out; pos++) {
			int64_t g0 = (n * plane_out + pos) * r;

			/* grid[..., 0] is along the last spatial dim. */
			for (d = 0; d < r; d++)
				gs_taps_of(&a, cpu_load_f(gt->data, gt->dtype, g0 + r - 1 - d), in[d],
					   &t[d]);
			for (ch = 0; ch < yt->dims[1]; ch++) {
				int64_t x0 = (n * yt->dims[1] + ch) * plane_in;
				int64_t y0 = (n * yt->dims[1] + ch) * plane_out + pos;

				if (a.mode == CPU_GS_NEAREST) {
					int64_t off = 0;
					bool inside = true;

					for (d = 0; d < r; d++) {
						inside &= t[d].idx[0] >= 0;
						off = off * in[d] + t[d].idx[0];
					}
					if (inside)
						memcpy((char *)yt->data + (size_t)y0 * es,
						       (const char *)xt->data + (size_t)(x0 + off) * es, es);
					else
						memset((char *)yt->data + (size_t)y0 * es, 0, es);
					continue;
				}
				cpu_store_f(yt->data, yt->dtype, y0, gs_interp(xt, x0, in, r, t));
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------- AffineGrid */

static int ag_infer(struct op_infer *x)
{
	const struct op_tensor *th = &x->in[0], *size = &x->in[1];
	struct op_tensor *y = &x->out[0];
	int64_t count, v[5];
	int r = -1, i, ret;

	y->dtype = th->dtype;
	y->rank = -1;
	if ((ret = op_attr_check(x->node, "align_corners", OP_ATTR_INT)) < 0)
		return ret;
	ret = shapeops_list_check(x->node, size, "size", SHAPEOPS_INT64, &count);
	if (ret < 0)
		return ret;
	if (count >= 0 && count != 4 && count != 5)
		return cep__set_error(CEP_ESHAPE, "AffineGrid: size has %" PRId64 " values, it "
				      "must be (N, C, H, W) or (N, C, D, H, W)", count);
	if (th->rank >= 0) {
		if (th->rank != 3)
			return cep__set_error(CEP_ESHAPE, "AffineGrid: theta must be 3-D (N, 2, 3) "
					      "or (N, 3, 4), it has rank %d", th->rank);
		if (op_dim_fixed(th->dims[1]) && th->dims[1] != 2 && th->dims[1] != 3)
			return cep__set_error(CEP_ESHAPE, "AffineGrid: theta is (N, %" PRId64 ", ...), "
					      "not (N, 2, 3) or (N, 3, 4)", th->dims[1]);
		if (op_dim_fixed(th->dims[1]))
			r = (int)th->dims[1];
		if (op_dim_fixed(th->dims[2]) && r > 0 && th->dims[2] != r + 1)
			return cep__set_error(CEP_ESHAPE, "AffineGrid: theta is (N, %d, %" PRId64
					      "), not (N, %d, %d)", r, th->dims[2], r, r + 1);
	}
	if (count >= 0) {
		if (r > 0 && count != r + 2)
			return cep__set_error(CEP_ESHAPE, "AffineGrid: size has %" PRId64 " values "
					      "but theta is for %d spatial dims", count, r);
		r = (int)count - 2;
	}
	if (r < 0)
		return 0;
	y->rank = r + 2;
	y->dims[0] = th->rank >= 0 ? th->dims[0] : OP_DIM_UNKNOWN;
	for (i = 1; i <= r; i++)
		y->dims[i] = OP_DIM_UNKNOWN;
	y->dims[r + 1] = r;
	if (size->data == NULL || count < 0)
		return 0;
	for (i = 0; i < count; i++) {
		v[i] = shapeops_at(size, i);
		if (v[i] < 0 || v[i] > OP_MAX_NUMEL)
			return cep__set_error(CEP_EINVAL, "AffineGrid: size[%d] is %" PRId64, i, v[i]);
	}
	if (op_dim_fixed(y->dims[0]) && y->dims[0] != v[0])
		return cep__set_error(CEP_EINVAL, "AffineGrid: size gives %" PRId64 " images but "
				      "theta has %" PRId64, v[0], y->dims[0]);
	y->dims[0] = v[0];
	for (i = 1; i <= r; i++)
		y->dims[i] = v[1 + i];
	return 0;
}

/* The base coordinate of position i of n along one dim. */
static float ag_base(int64_t i, int64_t n, bool align)
{
	if (align)
		return n > 1 ? (float)(2 * i) / (float)(n - 1) - 1.0f : 0.0f;
	return (float)(2 * i + 1) / (float)n - 1.0f;
}

static int ag_run(struct op_call *c)
{
	const struct op_tensor *th = &c->in[0], *y = &c->out[0];
	bool align = op_attr_int(c->node, "align_corners", 0) != 0;
	int r = y->rank - 2, d, j;
	int64_t n, pos, plane = op_dims_product(y, 1, y->rank - 1);

	/* The size's values made the output's shape; check that they still
	 * do. */
	for (d = 0; d < y->rank - 1; d++) {
		int64_t v = shapeops_at(&c->in[1], d == 0 ? 0 : d + 1);

		if (v != y->dims[d])
			return cep__set_error(CEP_ESHAPE, "AffineGrid: size[%d] is %" PRId64 " but the "
					      "plan has %" PRId64, d == 0 ? 0 : d + 1, v, y->dims[d]);
	}
	for (n = 0; n < y->dims[0]; n++) {
		for (pos = 0; pos < plane; pos++) {
			float base[3];
			int64_t p = pos;

			/* base[0] is x (along the last dim), then y, z. */
			for (d = r - 1; d >= 0; d--) {
				int64_t len = y->dims[1 + d];

				base[r - 1 - d] = ag_base(p % len, len, align);
				p /= len;
			}
			for (j = 0; j < r; j++) {
				int64_t t0 = (n * r + j) * (r + 1);
				float acc = 0.0f;

				for (d = 0; d < r; d++)
					acc += cpu_load_f(th->data, th->dtype, t0 + d) * base[d];
				acc += cpu_load_f(th->data, th->dtype, t0 + r);
				cpu_store_f(y->data, y->dtype, (n * plane + pos) * r + j, acc);
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

/* X's types: everything but float64, which the float32 arithmetic here
 * would round (the integers go through float32 as well). */
#define GS_DTS_X (OP_DTS_ALL & ~OP_DT(CEP_DTYPE_FLOAT64))
#define GS_DTS_NO_BF16 (GS_DTS_X & ~OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_schema schemas[] = {
	{ "", "GridSample", 16, 19, 2, 2, 1, 1, 0, 0, gs_infer },
	{ "", "GridSample", 20, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, gs_infer },
	{ "", "AffineGrid", 20, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, ag_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "GridSample", 16, 21, BACKEND_HOST, GS_DTS_NO_BF16, NULL, gs_run },
	{ "", "GridSample", 22, OP_OPSET_MAX, BACKEND_HOST, GS_DTS_X, NULL, gs_run },
	{ "", "AffineGrid", 20, OP_OPSET_MAX, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64, NULL, ag_run },
};

const struct op_family op_family_cpu_grid_sample = {
	"cpu_grid_sample", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
