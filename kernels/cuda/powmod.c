/*
 * powmod.c — the CUDA kernels of Pow and Mod (kernels/cpu/powmod.c on the
 * host), with its type sets per opset: Pow's base picks the kernel table
 * entry and its exponent, of any numeric type from opset 12, the second
 * half of the kernel's name; before opset 7 the exponent is laid out as
 * kernels/legacy.h views it. Device side: kernels/cuda/powmod.cuh,
 * compiled in powmod.cu where both operands are of the first types and
 * in powmod_wide.cu where one is float64, int16, uint16, uint32 or
 * uint64.
 */
#include "kernels/cuda/launch.h"
#include "kernels/legacy.h"

#include <stdio.h>

struct powmod_params {
	CUfunction fn;
	struct cuda_bcast bc;
	int32_t trunc;              /* Mod's fmod=1: C's fmod; else the floor's */
};
CUDA_PARAMS_FIT(struct powmod_params);

/* Input i's type has kernels here (the exponent's type is no type of the
 * table, which checks the base's). */
static int powmod_dtype_check(const struct op_call *c, int i)
{
	if (op_dtype_in(c->in[i].dtype, OP_DTS_NUMERIC))
		return 0;
	return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
			      cep_dtype_name(c->in[i].dtype));
}

/* The source that has the kernel of operand types a and b. */
static const char *powmod_source(cep_dtype a, cep_dtype b)
{
	return cuda_dtype_wide(a) || cuda_dtype_wide(b) ? "powmod_wide" : "powmod";
}

static int pow_prepare(struct op_call *c, size_t *workspace)
{
	struct powmod_params *p = (struct powmod_params *)c->params;
	struct op_tensor bv;
	char name[32];
	int ret;

	*workspace = 0;
	ret = powmod_dtype_check(c, 0);
	if (ret == 0)
		ret = powmod_dtype_check(c, 1);
	if (ret == 0)
		ret = op_legacy_bcast(c->node, &c->in[0], &c->in[1], &bv);
	if (ret < 0)
		return ret;
	snprintf(name, sizeof(name), "pow_%s_%s", cuda_dtype_suffix(c->in[0].dtype),
		 cuda_dtype_suffix(c->in[1].dtype));
	cuda_bcast_init(&p->bc, &c->out[0], &c->in[0], &bv);
	p->trunc = 0;
	return cuda_function_get(c->be, powmod_source(c->in[0].dtype, c->in[1].dtype), name,
				 &p->fn);
}

static int mod_prepare(struct op_call *c, size_t *workspace)
{
	struct powmod_params *p = (struct powmod_params *)c->params;
	char name[32];
	int ret;

	*workspace = 0;
	ret = powmod_dtype_check(c, 0);
	if (ret < 0)
		return ret;
	snprintf(name, sizeof(name), "mod_%s", cuda_dtype_suffix(c->in[0].dtype));
	cuda_bcast_init(&p->bc, &c->out[0], &c->in[0], &c->in[1]);
	p->trunc = op_attr_int(c->node, "fmod", 0) == 1;
	return cuda_function_get(c->be, powmod_source(c->in[0].dtype, c->in[0].dtype), name,
				 &p->fn);
}

/* Pow's kernels ignore the trailing argument. */
static int powmod_run(struct op_call *c)
{
	const struct powmod_params *p = (const struct powmod_params *)c->params;
	const void *a = c->in[0].data, *b = c->in[1].data;
	void *o = c->out[0].data;
	void *args[] = { &a, &b, &o, (void *)&p->bc, (void *)&p->trunc };

	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->bc.n), CUDA_BLOCK, 0, args);
}

/* ------------------------------------------------------------------- table */

#define NO_BF16 (OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16))
#define I32_I64 (OP_DT(CEP_DTYPE_INT64) | OP_DT(CEP_DTYPE_INT32))

/* The host's type sets (the table checks the base's type). */
static const struct op_kernel kernels[] = {
	{ "", "Pow", 1, 11, BACKEND_CUDA, NO_BF16, pow_prepare, powmod_run },
	{ "", "Pow", 12, 12, BACKEND_CUDA, NO_BF16 | I32_I64, pow_prepare, powmod_run },
	{ "", "Pow", 13, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_FLOAT | I32_I64, pow_prepare,
	  powmod_run },
	{ "", "Mod", 10, 12, BACKEND_CUDA, NO_BF16 | OP_DTS_INT, mod_prepare, powmod_run },
	{ "", "Mod", 13, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_NUMERIC, mod_prepare, powmod_run },
};

const struct op_family op_family_cuda_powmod = {
	"cuda_powmod", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
