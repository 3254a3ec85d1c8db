/*
 * castlike.c — CastLike (opset 15): Cast to the element type of a second
 * input, whose values are never read. The conversions are Cast's
 * (cpu_convert() of kernels/cpu/cpu.h, see cast.c). The saturate (19)
 * and round_mode (24) attributes concern only float8 and smaller float
 * targets, which cudaep does not store.
 */
#include "kernels/cpu/cpu.h"

static int castlike_infer(struct op_infer *x)
{
	cep_dtype to = x->in[1].dtype;

	if (!op_dtype_in(to, OP_DTS_ALL))
		return cep__set_error(CEP_EUNSUPPORTED, "CastLike: casting to %s is not supported",
				      cep_dtype_name(to));
	op_infer_like_input(x);
	x->out[0].dtype = to;
	return 0;
}

static int castlike_run(struct op_call *c)
{
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
		cpu_convert(dst, to, src, from, i);
	return 0;
}

static const struct op_schema schemas[] = {
	{ "", "CastLike", 15, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, castlike_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "CastLike", 15, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, castlike_run },
};

const struct op_family op_family_cpu_castlike = {
	"cpu_castlike", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
