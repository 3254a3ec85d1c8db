/*
 * fpclass.c — which elements of a float tensor are infinite or NaN:
 * IsInf (opset 10 on; detect_positive and detect_negative choose the
 * signs that count) and IsNaN (opset 9 on). The output is bool, of the
 * input's shape.
 *
 * Every float type is widened to double first, which keeps every infinity
 * and NaN and makes no new one. The type sets follow each operator's
 * history among the types cudaep stores: IsInf took float and double
 * until opset 20 added float16 and bfloat16; IsNaN took float, float16
 * and double until opset 13 added bfloat16 (the float8 types of opset 20
 * are not stored).
 */
#include "kernels/cpu/elem.h"

static int fpclass_infer(struct op_infer *x)
{
	int ret = op_infer_like_input(x);

	x->out[0].dtype = CEP_DTYPE_BOOL;
	return ret;
}

/* detect_positive and detect_negative are ints: 0 turns a sign off, any
 * other value leaves it on (the default, 1). */
static int isinf_infer(struct op_infer *x)
{
	int ret = op_attr_check(x->node, "detect_positive", OP_ATTR_INT);

	if (ret == 0)
		ret = op_attr_check(x->node, "detect_negative", OP_ATTR_INT);
	return ret < 0 ? ret : fpclass_infer(x);
}

struct isinf_params {
	bool pos, neg;              /* which infinities map to true */
};

static int isinf_prepare(struct op_call *c, size_t *workspace)
{
	struct isinf_params *p = (struct isinf_params *)c->params;

	p->pos = op_attr_int(c->node, "detect_positive", 1) != 0;
	p->neg = op_attr_int(c->node, "detect_negative", 1) != 0;
	*workspace = 0;
	return 0;
}

static int isinf_run(struct op_call *c)
{
	const struct isinf_params *p = (const struct isinf_params *)c->params;
	cep_dtype t = c->in[0].dtype;
	const void *a = c->in[0].data;
	uint8_t *o = c->out[0].data;
	int64_t n = cpu_numel(&c->in[0]);
	int64_t i;

	for (i = 0; i < n; i++) {
		double v = cpu_load_d(a, t, i);

		o[i] = (p->pos && v == INFINITY) || (p->neg && v == -INFINITY);
	}
	return 0;
}

static int isnan_run(struct op_call *c)
{
	cep_dtype t = c->in[0].dtype;
	const void *a = c->in[0].data;
	uint8_t *o = c->out[0].data;
	int64_t n = cpu_numel(&c->in[0]);
	int64_t i;

	for (i = 0; i < n; i++) {
		double v = cpu_load_d(a, t, i);

		o[i] = v != v;
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_schema schemas[] = {
	{ "", "IsInf", 10, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, isinf_infer },
	{ "", "IsNaN", 9, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, fpclass_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "IsInf", 10, 19, BACKEND_HOST, OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT64),
	  isinf_prepare, isinf_run },
	{ "", "IsInf", 20, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, isinf_prepare, isinf_run },
	{ "", "IsNaN", 9, 12, BACKEND_HOST, ELEM_DTS_NO_BF16, NULL, isnan_run },
	{ "", "IsNaN", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, NULL, isnan_run },
};

const struct op_family op_family_cpu_fpclass = {
	"cpu_fpclass", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
