/*
 * attention.c — the internal operator Attention (kernels/xfmr.h): scaled
 * dot products of queries and keys, plus a mask, a softmax over the keys,
 * and the weighted sum of the values, as engine/fuse_xfmr.c fuses the
 * MatMul -> Div -> Add -> Softmax -> MatMul chain of an exported model.
 * Its schema and reference kernel.
 *
 * The reference repeats the unfused host kernels' arithmetic row by row:
 * each score is a float32 sum over the depth in order (kernels/cpu/
 * matmul.c), scaled, plus the mask; the softmax takes a float maximum that
 * passes over NaN, sums in double and divides in float (kernels/cpu/
 * softmax.c); each output element sums probability times value over the
 * keys in order. On float32 the fusion therefore changes no bit where the
 * scale is a power of two (a Div by 8 becomes a scale of 1/8). float16 and
 * bfloat16 are computed in float32 and rounded once.
 */
#include "kernels/cpu/cpu.h"

#include "kernels/xfmr.h"

static int attn_prepare(struct op_call *c, size_t *workspace)
{
	struct xfmr_attn *a = (struct xfmr_attn *)c->params;
	int ret;

	_Static_assert(sizeof(*a) <= OP_PARAMS_BYTES, "params too large");
	ret = xfmr_attn_init(a, c->node, c->in, c->n_in, &c->out[0]);
	if (ret < 0)
		return ret;
	/* A row of scores and a row of output sums. */
	*workspace = (size_t)(a->Sk + a->Dv) * sizeof(float);
	return 0;
}

/* Softmax of the n scores s in place, as kernels/cpu/softmax.c does it. */
static void attn_softmax(float *s, int64_t n)
{
	float mx = -INFINITY;
	double sum = 0.0;
	int64_t j;

	for (j = 0; j < n; j++) {
		if (s[j] > mx)
			mx = s[j];
	}
	for (j = 0; j < n; j++)
		sum += expf(s[j] - mx);
	for (j = 0; j < n; j++)
		s[j] = expf(s[j] - mx) / (float)sum;
}

static int attn_run(struct op_call *c)
{
	const struct xfmr_attn *a = (const struct xfmr_attn *)c->params;
	cep_dtype t = c->in[0].dtype;
	const void *q = c->in[0].data, *k = c->in[1].data, *v = c->in[2].data;
	const void *m = a->has_mask ? c->in[3].data : NULL;
	float *s = c->workspace, *acc = s + a->Sk;
	int64_t b, h, i, j, d;

	for (b = 0; b < a->B; b++) {
		for (h = 0; h < a->H; h++) {
			int64_t qb = b * a->q[XFMR_B] + h * a->q[XFMR_H];
			int64_t kb = b * a->k[XFMR_B] + h * a->k[XFMR_H];
			int64_t vb = b * a->v[XFMR_B] + h * a->v[XFMR_H];
			int64_t mb = b * a->m[XFMR_B] + h * a->m[XFMR_H];
			int64_t ob = b * a->o[XFMR_B] + h * a->o[XFMR_H];

			for (i = 0; i < a->Sq; i++) {
				int64_t qi = qb + i * a->q[XFMR_S];

				for (j = 0; j < a->Sk; j++) {
					int64_t kj = kb + j * a->k[XFMR_S];
					float dot = 0.0f;

					for (d = 0; d < a->Dk; d++)
						dot += cpu_load_f(q, t, qi + d * a->q[XFMR_D]) *
						       cpu_load_f(k, t, kj + d * a->k[XFMR_D]);
					s[j] = dot * a->scale;
					if (m != NULL)
						s[j] += cpu_load_f(m, t, mb + i * a->m[2] + j * a->m[3]);
				}
				attn_softmax(s, a->Sk);
				memset(acc, 0, (size_t)a->Dv * sizeof(float));
				for (j = 0; j < a->Sk; j++) {
					int64_t vj = vb + j * a->v[XFMR_S];

					for (d = 0; d < a->Dv; d++)
						acc[d] += s[j] * cpu_load_f(v, t, vj + d * a->v[XFMR_D]);
				}
				for (d = 0; d < a->Dv; d++)
					cpu_store_f(c->out[0].data, t,
						    ob + i * a->o[XFMR_S] + d * a->o[XFMR_D], acc[d]);
			}
		}
	}
	return 0;
}

static const struct op_schema schemas[] = {
	{ XFMR_DOMAIN, "Attention", 1, 1, 3, 4, 1, 1, 0, OP_INTERNAL, xfmr_attn_infer },
};

static const struct op_kernel kernels[] = {
	{ XFMR_DOMAIN, "Attention", 1, 1, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64, attn_prepare, attn_run },
};

const struct op_family op_family_cpu_attention = {
	"cpu_attention", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
