/*
 * castlike.c — CastLike (opset 15): Cast to the element type of a second
 * input, whose values are never read. The conversions are Cast's
 * (cpu_convert() of kernels/cpu/cpu.h, see cast.c). The float8 types and
 * saturate came at 19, as they did to Cast, int4 and uint4 at 21,
 * float4e2m1 at 23; round_mode (24) concerns only
 * float8e8m0 targets, which cudaep does not store.
 */
#include "kernels/cpu/cpu.h"

static int castlike_infer(struct op_infer *x)
{
	cep_dtype to = x->in[1].dtype;
	int ret;

	if (!op_dtype_in(to, OP_DTS_STORED))
		return cep__set_error(CEP_EUNSUPPORTED, "CastLike: casting to %s is not supported",
				      cep_dtype_name(to));
	if (x->node->opset < cpu_cast_since(to) || x->node->opset < cpu_cast_since(x->in[0].dtype))
		return cep__set_error(CEP_EMODEL, "CastLike (opset %d): %s is not a type of this opset",
				      x->node->opset, cep_dtype_name(x->node->opset < cpu_cast_since(to)
								     ? to : x->in[0].dtype));
	ret = op_attr_check(x->node, "saturate", OP_ATTR_INT);
	if (ret < 0)
		return ret;
	op_infer_like_input(x);
	x->out[0].dtype = to;
	return 0;
}

struct castlike_params {
	bool saturate;              /* float8 targets (opset 19 on) */
};

static int castlike_prepare(struct op_call *c, size_t *workspace)
{
	struct castlike_params *p = (struct castlike_params *)c->params;

	p->saturate = c->node->opset < 19 || op_attr_int(c->node, "saturate", 1) != 0;
	*workspace = 0;
	return 0;
}

static int castlike_run(struct op_call *c)
{
	const struct castlike_params *p = (const struct castlike_params *)c->params;
	cep_dtype from = c->in[0].dtype, to = c->out[0].dtype;
	const void *src = c->in[0].data;
	void *dst = c->out[0].data;
	int64_t n = cpu_numel(&c->in[0]);
	int64_t i;

	if (from == to) {
		if (n > 0 && dst != src)
			memcpy(dst, src, (size_t)n * cep_dtype_size(from));
		return 0;
	}
	for (i = 0; i < n; i++)
		cpu_convert(dst, to, src, from, i, p->saturate);
	return 0;
}

static const struct op_schema schemas[] = {
	{ "", "CastLike", 15, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, castlike_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "CastLike", 15, 18, BACKEND_HOST, OP_DTS_ALL, castlike_prepare, castlike_run },
	{ "", "CastLike", 19, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_STORED, castlike_prepare,
	  castlike_run },
};

const struct op_family op_family_cpu_castlike = {
	"cpu_castlike", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
