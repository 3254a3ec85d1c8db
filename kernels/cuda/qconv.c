/*
 * qconv.c — the CUDA kernels of ConvInteger and QLinearConv (opset 10
 * on), int8 and uint8 of either type for each operand, as the reference
 * kernels take them (kernels/cpu/qconv.c): kernels/cuda/qconv.cu on the
 * device, a thread per output element. The window is resolved by the
 * host's own cpu_qconv_read() (kernels/cpu/quant.h, through
 * kernels/conv_geom.h), so both backends convolve the same windows with
 * the same pads.
 */
#include "kernels/cuda/launch.h"

#include <string.h>

#include "kernels/cpu/quant.h"

/* Twin of struct cep_qconv (qconv.cu). */
struct cuda_qconv {
	int64_t in[3], out[3];
	int64_t k[3], s[3], d[3], pb[3];
	int64_t n;
	int64_t m, cg, mg;
	int32_t flags;
	int32_t pad;
};

enum { QCONV_X_SIGNED = 1, QCONV_W_SIGNED = 2, QCONV_Y_SIGNED = 4, QCONV_W_PER_CHANNEL = 8 };

struct qconv_params {
	CUfunction fn;
	unsigned grid;
	struct cuda_qconv q;
};
CUDA_PARAMS_FIT(struct qconv_params);

static bool qconv_qlinear(const struct op_call *c)
{
	return strcmp(c->node->op_type, "QLinearConv") == 0;
}

static int qconv_prepare(struct op_call *c, size_t *workspace)
{
	struct qconv_params *p = (struct qconv_params *)c->params;
	bool ql = qconv_qlinear(c);
	const struct op_tensor *x = &c->in[0], *w = &c->in[ql ? 3 : 1];
	struct cpu_qconv q;
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	ret = cpu_qconv_read(c->node, c->in, c->n_in, &c->out[0], &q);
	if (ret < 0)
		return ret;
	memcpy(p->q.in, q.g.in, sizeof(p->q.in));
	memcpy(p->q.out, q.g.out, sizeof(p->q.out));
	memcpy(p->q.k, q.g.k, sizeof(p->q.k));
	memcpy(p->q.s, q.g.s, sizeof(p->q.s));
	memcpy(p->q.d, q.g.d, sizeof(p->q.d));
	memcpy(p->q.pb, q.g.pb, sizeof(p->q.pb));
	p->q.n = op_dims_product(&c->out[0], 0, c->out[0].rank);
	p->q.m = q.m;
	p->q.cg = q.cg;
	p->q.mg = q.mg;
	p->q.flags = (x->dtype == CEP_DTYPE_INT8 ? QCONV_X_SIGNED : 0) |
		     (w->dtype == CEP_DTYPE_INT8 ? QCONV_W_SIGNED : 0) |
		     (c->out[0].dtype == CEP_DTYPE_INT8 ? QCONV_Y_SIGNED : 0) |
		     (q.w_per_channel ? QCONV_W_PER_CHANNEL : 0);
	/* An empty group (no channels out) leaves mg 0: nothing to launch. */
	p->grid = q.mg > 0 ? cuda_grid(p->q.n) : 0;
	return cuda_function_get(c->be, "qconv", ql ? "qlinearconv" : "convinteger", &p->fn);
}

/* The data of input i of c, NULL when absent. */
static const void *qconv_data(const struct op_call *c, int i)
{
	return i < c->n_in && op_tensor_present(&c->in[i]) ? c->in[i].data : NULL;
}

static int qconv_run(struct op_call *c)
{
	struct qconv_params *p = (struct qconv_params *)c->params;
	const void *in[9];
	void *y = c->out[0].data;
	int i;

	for (i = 0; i < 9; i++)
		in[i] = qconv_data(c, i);
	if (qconv_qlinear(c)) {
		void *args[] = { &in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &in[6], &in[7],
				 &in[8], &y, &p->q };

		return cuda_launch(c->be, c->stream, p->fn, p->grid, CUDA_BLOCK, 0, args);
	}
	{
		void *args[] = { &in[0], &in[1], &in[2], &in[3], &y, &p->q };

		return cuda_launch(c->be, c->stream, p->fn, p->grid, CUDA_BLOCK, 0, args);
	}
}

static const struct op_kernel kernels[] = {
	{ "", "ConvInteger", 10, OP_OPSET_MAX, BACKEND_CUDA, QUANT_DTS_Q, qconv_prepare, qconv_run },
	{ "", "QLinearConv", 10, OP_OPSET_MAX, BACKEND_CUDA, QUANT_DTS_Q, qconv_prepare, qconv_run },
};

const struct op_family op_family_cuda_qconv = {
	"cuda_qconv", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
