/*
 * quant.c — the CUDA kernels of QuantizeLinear (opset 10 on; float16 and
 * bfloat16 from 19), DequantizeLinear (10 on) and DynamicQuantizeLinear
 * (11 on) for the types the reference kernels take (kernels/cpu/quant.c),
 * float8, int4, uint4 and float4e2m1 among them (a float type's zero
 * point is not read here; the host refuses one that is not 0):
 * kernels/cuda/quant.cu on the device. prepare() reads the granularity
 * with the host's own cpu_quant_read() and the division's rounding with
 * cpu_quant_div_round() (kernels/cpu/quant.h), so both backends quantize
 * with the same scales in the same arithmetic.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "kernels/cpu/quant.h"

/* Twin of struct cep_quant (quant.cu). */
struct cuda_quant {
	int64_t n, d, inner, block;
	int64_t so, sa, sr;
	int32_t round;
	int32_t sdt, zdt;
	int32_t saturate;
	int64_t lo, hi;
};

struct quant_params {
	CUfunction fn;
	unsigned grid;
	struct cuda_quant q;
};
CUDA_PARAMS_FIT(struct quant_params);

/* The zero point input of c, or NULL when it is absent. */
static const struct op_tensor *quant_zp_of(const struct op_call *c)
{
	return c->n_in > 2 && op_tensor_present(&c->in[2]) ? &c->in[2] : NULL;
}

/* Fills p->q's layout and types for c (either operator). */
static int quant_layout(struct op_call *c, struct quant_params *p)
{
	const struct op_tensor *zp = quant_zp_of(c);
	struct cpu_quant q;
	int ret;

	memset(p, 0, sizeof(*p));
	ret = cpu_quant_read(c->node, &c->in[0], &c->in[1], zp, &q);
	if (ret < 0)
		return ret;
	p->q = (struct cuda_quant){
		.n = q.n, .d = q.d, .inner = q.inner, .block = q.block,
		.so = q.so, .sa = q.sa, .sr = q.sr,
		.sdt = c->in[1].dtype, .zdt = zp != NULL ? zp->dtype : 0,
	};
	p->grid = cuda_grid(q.n);
	return 0;
}

/* The kernel-name suffix of input or output t, or NULL after the error. */
static const char *quant_suffix(const struct op_call *c, const struct op_tensor *t)
{
	const char *sfx = cuda_dtype_suffix(t->dtype);

	if (sfx == NULL)
		cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
			       cep_dtype_name(t->dtype));
	return sfx;
}

/* ----------------------------------------------------------- QuantizeLinear */

static int ql_prepare(struct op_call *c, size_t *workspace)
{
	struct quant_params *p = (struct quant_params *)c->params;
	const char *xs, *ys;
	char name[40];
	int round, ret;

	*workspace = 0;
	ret = quant_layout(c, p);
	if (ret < 0)
		return ret;
	ret = cpu_quant_div_round(c->node, c->in[0].dtype, c->in[1].dtype, &round);
	if (ret < 0)
		return ret;
	p->q.round = round;
	quant_range(c->out[0].dtype, &p->q.lo, &p->q.hi);
	p->q.saturate = c->node->opset < 19 || op_attr_int(c->node, "saturate", 1) != 0;
	if ((xs = quant_suffix(c, &c->in[0])) == NULL || (ys = quant_suffix(c, &c->out[0])) == NULL)
		return CEP_EDTYPE;
	snprintf(name, sizeof(name), "quantize_%s_%s", xs, ys);
	return cuda_function_get(c->be, "quant", name, &p->fn);
}

/* QuantizeLinear and DequantizeLinear launch alike: x, scale, zero point
 * (NULL when absent), y. */
static int quant_run(struct op_call *c)
{
	struct quant_params *p = (struct quant_params *)c->params;
	const struct op_tensor *zt = quant_zp_of(c);
	const void *x = c->in[0].data, *s = c->in[1].data, *zp = zt != NULL ? zt->data : NULL;
	void *y = c->out[0].data;
	void *args[] = { &x, &s, &zp, &y, &p->q };

	return cuda_launch(c->be, c->stream, p->fn, p->grid, CUDA_BLOCK, 0, args);
}

/* --------------------------------------------------------- DequantizeLinear */

static int dql_prepare(struct op_call *c, size_t *workspace)
{
	struct quant_params *p = (struct quant_params *)c->params;
	const char *xs, *ys;
	char name[40];
	int ret;

	*workspace = 0;
	ret = quant_layout(c, p);
	if (ret < 0)
		return ret;
	if ((xs = quant_suffix(c, &c->in[0])) == NULL || (ys = quant_suffix(c, &c->out[0])) == NULL)
		return CEP_EDTYPE;
	snprintf(name, sizeof(name), "dequantize_%s_%s", xs, ys);
	return cuda_function_get(c->be, "quant", name, &p->fn);
}

/* ---------------------------------------------------- DynamicQuantizeLinear */

#define DYN_BLOCK 1024 /* threads of the block that finds the range */

struct dyn_params {
	CUfunction range, apply;
	int64_t n;
	unsigned grid;
};
CUDA_PARAMS_FIT(struct dyn_params);

static int dyn_prepare(struct op_call *c, size_t *workspace)
{
	struct dyn_params *p = (struct dyn_params *)c->params;
	int ret;

	memset(p, 0, sizeof(*p));
	/* The scale and zero point, for the second kernel, whether or not
	 * the model names those outputs. */
	*workspace = 2 * sizeof(float);
	p->n = op_dims_product(&c->in[0], 0, c->in[0].rank);
	p->grid = cuda_grid(p->n);
	ret = cuda_function_get(c->be, "quant", "dynquant_range", &p->range);
	if (ret == 0)
		ret = cuda_function_get(c->be, "quant", "dynquant_apply", &p->apply);
	return ret;
}

static int dyn_run(struct op_call *c)
{
	struct dyn_params *p = (struct dyn_params *)c->params;
	const void *x = c->in[0].data;
	void *ws = c->workspace, *y = c->out[0].data;
	void *ys = c->n_out > 1 ? c->out[1].data : NULL, *yz = c->n_out > 2 ? c->out[2].data : NULL;
	void *range_args[] = { &x, &p->n, &ws, &ys, &yz };
	void *apply_args[] = { &x, &ws, &y, &p->n };
	int ret;

	ret = cuda_launch(c->be, c->stream, p->range, 1, DYN_BLOCK, 0, range_args);
	if (ret == 0)
		ret = cuda_launch(c->be, c->stream, p->apply, p->grid, CUDA_BLOCK, 0, apply_args);
	return ret;
}

/* ------------------------------------------------------------------- table */

static const struct op_kernel kernels[] = {
	{ "", "QuantizeLinear", 10, 18, BACKEND_CUDA, QUANT_DTS_QL_10, ql_prepare, quant_run },
	{ "", "QuantizeLinear", 19, OP_OPSET_MAX, BACKEND_CUDA, QUANT_DTS_QL_19, ql_prepare, quant_run },
	{ "", "DequantizeLinear", 10, 18, BACKEND_CUDA, QUANT_DTS_DQL, dql_prepare, quant_run },
	{ "", "DequantizeLinear", 19, 20, BACKEND_CUDA, QUANT_DTS_DQL_19, dql_prepare, quant_run },
	{ "", "DequantizeLinear", 21, OP_OPSET_MAX, BACKEND_CUDA, QUANT_DTS_DQL_21, dql_prepare,
	  quant_run },
	{ "", "DynamicQuantizeLinear", 11, OP_OPSET_MAX, BACKEND_CUDA, OP_DT(CEP_DTYPE_FLOAT32),
	  dyn_prepare, dyn_run },
};

const struct op_family op_family_cuda_quant = {
	"cuda_quant", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
