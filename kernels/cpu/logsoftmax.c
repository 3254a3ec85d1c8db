/*
 * logsoftmax.c — LogSoftmax: x - max - log(sum(exp(x - max))) along an
 * axis, with the two axis rules Softmax has too (kernels/cpu/softmax.c):
 * before opset 13 the input is a matrix split at `axis` (default 1) and
 * each of its rows is normalised; from 13 on only dimension `axis`
 * (default -1) is. Both make (outer, n, inner) blocks normalised along n.
 *
 * The max is subtracted first so exp() never overflows, and the sum is
 * kept in double so that a long row of tiny terms keeps its precision.
 * A row along the last axis (inner 1) is read contiguously; otherwise the
 * n rows of inner elements are swept in memory order, with each column's
 * running max and sum in the workspace.
 */
#include "kernels/cpu/chunk.h"

struct lsm_params {
	int64_t outer, n, inner;  /* the input as (outer, n, inner) */
};

static int lsm_infer(struct op_infer *x)
{
	int axis, ret;

	ret = op_attr_check(x->node, "axis", OP_ATTR_INT);
	if (ret < 0)
		return ret;
	if (x->in[0].rank >= 0) {
		ret = op_softmax_axis(x->node, x->in[0].rank, &axis);
		if (ret < 0)
			return ret;
	}
	return op_infer_like_input(x);
}

static int lsm_prepare(struct op_call *c, size_t *workspace)
{
	struct lsm_params *p = (struct lsm_params *)c->params;
	int ret;

	ret = op_softmax_blocks(c->node, &c->in[0], &p->outer, &p->n, &p->inner);
	if (ret < 0)
		return ret;
	*workspace = p->inner > 1 ? 2 * (size_t)p->inner * sizeof(double) : 0;
	return 0;
}

/* e^d for d <= 0: a float exp() loses nothing that the double sum keeps
 * for a result of float32 or narrower; float64 takes the double one. */
static double lsm_exp(cep_dtype t, double d)
{
	return t == CEP_DTYPE_FLOAT64 ? exp(d) : expf((float)d);
}

/* One contiguous row of n elements from at. */
static void lsm_row(const struct op_tensor *in, struct op_tensor *out, int64_t at, int64_t n)
{
	double v[CHUNK_N], mx = -INFINITY, sum = 0.0, lse;
	int64_t k0;
	int j, cnt;

	for (k0 = 0; k0 < n; k0 += cnt) {
		cnt = n - k0 < CHUNK_N ? (int)(n - k0) : CHUNK_N;
		chunk_load_d(in->data, in->dtype, at + k0, cnt, v);
		for (j = 0; j < cnt; j++)
			mx = v[j] > mx || v[j] != v[j] ? v[j] : mx;
	}
	for (k0 = 0; k0 < n; k0 += cnt) {
		cnt = n - k0 < CHUNK_N ? (int)(n - k0) : CHUNK_N;
		chunk_load_d(in->data, in->dtype, at + k0, cnt, v);
		for (j = 0; j < cnt; j++)
			sum += lsm_exp(in->dtype, v[j] - mx);
	}
	lse = log(sum);
	for (k0 = 0; k0 < n; k0 += cnt) {
		cnt = n - k0 < CHUNK_N ? (int)(n - k0) : CHUNK_N;
		chunk_load_d(in->data, in->dtype, at + k0, cnt, v);
		for (j = 0; j < cnt; j++)
			v[j] = v[j] - mx - lse;
		chunk_store_d(out->data, out->dtype, at + k0, cnt, v);
	}
}

/* Block o's n rows of inner elements; column j is normalised along n. */
static void lsm_columns(struct op_call *c, int64_t o)
{
	const struct lsm_params *p = (const struct lsm_params *)c->params;
	const struct op_tensor *in = &c->in[0];
	double *mx = c->workspace, *sum = mx + p->inner, v[CHUNK_N];
	int64_t base = o * p->n * p->inner, k, j0;
	int j, cnt;

	for (j0 = 0; j0 < p->inner; j0++) {
		mx[j0] = -INFINITY;
		sum[j0] = 0.0;
	}
	for (k = 0; k < p->n; k++) {
		for (j0 = 0; j0 < p->inner; j0 += cnt) {
			cnt = p->inner - j0 < CHUNK_N ? (int)(p->inner - j0) : CHUNK_N;
			chunk_load_d(in->data, in->dtype, base + k * p->inner + j0, cnt, v);
			for (j = 0; j < cnt; j++) {
				if (v[j] > mx[j0 + j] || v[j] != v[j])
					mx[j0 + j] = v[j];
			}
		}
	}
	for (k = 0; k < p->n; k++) {
		for (j0 = 0; j0 < p->inner; j0 += cnt) {
			cnt = p->inner - j0 < CHUNK_N ? (int)(p->inner - j0) : CHUNK_N;
			chunk_load_d(in->data, in->dtype, base + k * p->inner + j0, cnt, v);
			for (j = 0; j < cnt; j++)
				sum[j0 + j] += lsm_exp(in->dtype, v[j] - mx[j0 + j]);
		}
	}
	/* From here on mx holds max + log(sum). */
	for (j0 = 0; j0 < p->inner; j0++)
		mx[j0] += log(sum[j0]);
	for (k = 0; k < p->n; k++) {
		for (j0 = 0; j0 < p->inner; j0 += cnt) {
			int64_t at = base + k * p->inner + j0;

			cnt = p->inner - j0 < CHUNK_N ? (int)(p->inner - j0) : CHUNK_N;
			chunk_load_d(in->data, in->dtype, at, cnt, v);
			for (j = 0; j < cnt; j++)
				v[j] -= mx[j0 + j];
			chunk_store_d(c->out[0].data, c->out[0].dtype, at, cnt, v);
		}
	}
}

static int lsm_run(struct op_call *c)
{
	const struct lsm_params *p = (const struct lsm_params *)c->params;
	int64_t o;

	if (p->outer * p->n * p->inner == 0)
		return 0;
	if (p->inner > 1 && c->workspace_bytes < 2 * (size_t)p->inner * sizeof(double))
		return cep__set_error(CEP_EINTERNAL, "LogSoftmax: the workspace is too small");
	for (o = 0; o < p->outer; o++) {
		if (p->inner == 1)
			lsm_row(&c->in[0], &c->out[0], o * p->n, p->n);
		else
			lsm_columns(c, o);
	}
	return 0;
}

/* The axis rule changed at 13, which also added bfloat16. */
static const struct op_schema schemas[] = {
	{ "", "LogSoftmax", 1, 12, 1, 1, 1, 1, 0, 0, lsm_infer },
	{ "", "LogSoftmax", 13, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, lsm_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "LogSoftmax", 1, 12, BACKEND_HOST, OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16),
	  lsm_prepare, lsm_run },
	{ "", "LogSoftmax", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, lsm_prepare, lsm_run },
};

const struct op_family op_family_cpu_logsoftmax = {
	"cpu_logsoftmax", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
