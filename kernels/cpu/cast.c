/*
 * cast.c — Cast: every stored type to every other, with cpu_convert()'s
 * rules (kernels/cpu/cpu.h): between float types through double, rounding
 * to nearest even once on narrowing; between integer and bool types with
 * wrapping; float to integer truncates toward zero, NaN giving 0 and
 * out-of-range values saturating (to int64, or uint64 from 2^63 up)
 * before wrapping (ONNX leaves those undefined); anything to bool is "not
 * zero". The float8 types are types of Cast from opset 19, which brought
 * `saturate`: a value past a float8 type's range (an infinity included)
 * becomes its largest value of that sign with saturate=1 (the default),
 * else infinity (float8e5m2) or NaN (kernels/cpu/qtypes.h). int4 and
 * uint4 came at 21 and float4e2m1 at 23 (a byte each, client/cudaep.h):
 * an integer wraps into int4 or uint4, a float truncates and becomes 0
 * when out of their range (as the reference implementation has it); to
 * float4e2m1 rounds to nearest even and always saturates to +-6.
 *
 * `to` is a TensorProto.DataType number from opset 6, its name before
 * (kernels/legacy.h); bfloat16 is no type of those first opsets.
 */
#include "kernels/cpu/cpu.h"
#include "kernels/legacy.h"

static int cast_infer(struct op_infer *x)
{
	const struct op_attr *a = op_attr_find(x->node, "to");
	int64_t code;
	cep_dtype to;
	int ret;

	if (x->node->opset < 6) {
		ret = op_legacy_cast_to(x->node, &to);
		if (ret < 0)
			return ret;
		code = to;
	} else {
		if (!a || a->type != OP_ATTR_INT)
			return cep__set_error(CEP_EMODEL, "Cast: attribute 'to' (an int) is required");
		code = a->i;
	}
	to = (cep_dtype)code;
	if (code < 0 || code > 31 || !op_dtype_in(to, OP_DTS_STORED))
		return cep__set_error(CEP_EUNSUPPORTED, "Cast: casting to type %lld is not supported "
				      "(not a type cudaep stores)", (long long)code);
	if (x->node->opset < cpu_cast_since(to) || x->node->opset < cpu_cast_since(x->in[0].dtype))
		return cep__set_error(CEP_EMODEL, "Cast (opset %d): %s is not a type of this opset",
				      x->node->opset, cep_dtype_name(x->node->opset < cpu_cast_since(to)
								     ? to : x->in[0].dtype));
	ret = op_attr_check(x->node, "saturate", OP_ATTR_INT);
	if (ret < 0)
		return ret;
	op_infer_like_input(x);
	x->out[0].dtype = to;
	return 0;
}

struct cast_params {
	bool saturate;              /* float8 targets (opset 19 on) */
};

static int cast_prepare(struct op_call *c, size_t *workspace)
{
	struct cast_params *p = (struct cast_params *)c->params;

	p->saturate = c->node->opset < 19 || op_attr_int(c->node, "saturate", 1) != 0;
	*workspace = 0;
	return 0;
}

static int cast_run(struct op_call *c)
{
	const struct cast_params *p = (const struct cast_params *)c->params;
	cep_dtype from = c->in[0].dtype, to = c->out[0].dtype;
	const void *src = c->in[0].data;
	void *dst = c->out[0].data;
	int64_t n = cpu_numel(&c->in[0]);
	int64_t i;

	if (from == to) {
		memcpy(dst, src, (size_t)n * cep_dtype_size(from));
		return 0;
	}
	for (i = 0; i < n; i++)
		cpu_convert(dst, to, src, from, i, p->saturate);
	return 0;
}

/* 6: `to` became a number; 19 brought the float8 types and saturate. */
static const struct op_schema schemas[] = {
	{ "", "Cast", 1, 5, 1, 1, 1, 1, 0, 0, cast_infer },
	{ "", "Cast", 6, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, cast_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Cast", 1, 6, BACKEND_HOST, OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16), cast_prepare,
	  cast_run },
	{ "", "Cast", 7, 18, BACKEND_HOST, OP_DTS_ALL, cast_prepare, cast_run },
	{ "", "Cast", 19, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_STORED, cast_prepare, cast_run },
};

const struct op_family op_family_cpu_cast = {
	"cpu_cast", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
