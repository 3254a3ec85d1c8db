/*
 * hardmax.c — Hardmax, with Softmax's two axis rules (op_softmax_axis()):
 * before opset 13 the input is a matrix split at `axis` (default 1) and
 * each row gets 1 at its first largest element and 0 elsewhere; from 13
 * on only dimension `axis` (default -1) is. Both reduce to (outer, n,
 * inner) blocks along n. A NaN counts as larger than anything, as in
 * numpy's argmax (and kernels/cpu/argmax.c), so the first NaN of a row
 * wins. float32, float16 and double, bfloat16 from 13.
 */
#include "kernels/cpu/cpu.h"

struct hardmax_params {
	int64_t outer, n, inner;
};

static int hardmax_infer(struct op_infer *x)
{
	int axis, ret;

	if ((ret = op_attr_check(x->node, "axis", OP_ATTR_INT)) < 0)
		return ret;
	if (x->in[0].rank >= 0) {
		ret = op_softmax_axis(x->node, x->in[0].rank, &axis);
		if (ret < 0)
			return ret;
	}
	return op_infer_like_input(x);
}

static int hardmax_prepare(struct op_call *c, size_t *workspace)
{
	struct hardmax_params *p = (struct hardmax_params *)c->params;

	*workspace = 0;
	return op_softmax_blocks(c->node, &c->in[0], &p->outer, &p->n, &p->inner);
}

static int hardmax_run(struct op_call *c)
{
	const struct hardmax_params *p = (const struct hardmax_params *)c->params;
	cep_dtype t = c->in[0].dtype;
	const void *in = c->in[0].data;
	void *out = c->out[0].data;
	int64_t o, j, k;

	for (o = 0; o < p->outer; o++) {
		for (j = 0; j < p->inner; j++) {
			int64_t base = o * p->n * p->inner + j, best = 0;
			double bv = p->n > 0 ? cpu_load_d(in, t, base) : 0.0;

			for (k = 1; k < p->n && bv == bv; k++) {
				double v = cpu_load_d(in, t, base + k * p->inner);

				if (v != v || v > bv) {
					bv = v;
					best = k;
				}
			}
			for (k = 0; k < p->n; k++)
				cpu_store_f(out, t, base + k * p->inner, k == best ? 1.0f : 0.0f);
		}
	}
	return 0;
}

static const struct op_schema schemas[] = {
	{ "", "Hardmax", 1, 12, 1, 1, 1, 1, 0, 0, hardmax_infer },
	{ "", "Hardmax", 13, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, hardmax_infer },
};

/* bfloat16 arrived at opset 13. */
static const struct op_kernel kernels[] = {
	{ "", "Hardmax", 1, 12, BACKEND_HOST, OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16),
	  hardmax_prepare, hardmax_run },
	{ "", "Hardmax", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, hardmax_prepare,
	  hardmax_run },
};

const struct op_family op_family_cpu_hardmax = {
	"cpu_hardmax", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
