/*
 * rotary.c — the CUDA kernel of RotaryEmbedding (ai.onnx opset 23 and
 * com.microsoft opset 1) for float32, float16 and bfloat16, as the
 * reference kernel takes them
 * (kernels/cpu/rotary.c): prepare() reads the geometry with the host's own
 * cpu_rope_read(), run() launches a thread per element
 * (kernels/cuda/rotary.cu). Positions are data, so they are checked where
 * they are read, on the device: one out of range fails the run with
 * "RotaryEmbedding: index 60 is out of range for dimension 0 of size 50",
 * as on the host.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "kernels/cpu/rotary.h"

struct rope_params {
	CUfunction fn;
	struct rope_geom g;        /* twin of struct cep_rope */
	struct rope_inputs ix;     /* where the operands are in node's domain */
};
CUDA_PARAMS_FIT(struct rope_params);

static int rope_prepare(struct op_call *c, size_t *workspace)
{
	struct rope_params *p = (struct rope_params *)c->params;
	const char *sfx;
	char name[16];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	cpu_rope_inputs(c->node, &p->ix);
	sfx = cuda_dtype_suffix(c->in[p->ix.x].dtype);
	if (sfx == NULL || !op_dtype_in(c->in[p->ix.x].dtype, CUDA_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "RotaryEmbedding: no cuda kernel for %s",
				      cep_dtype_name(c->in[p->ix.x].dtype));
	ret = cpu_rope_read(c->node, c->in, c->n_in, &p->g);
	if (ret < 0)
		return ret;
	snprintf(name, sizeof(name), "rope_%s", sfx);
	return cuda_function_get(c->be, "rotary", name, &p->fn);
}

static int rope_run(struct op_call *c)
{
	struct rope_params *p = (struct rope_params *)c->params;
	const void *x = c->in[p->ix.x].data, *cosc = c->in[p->ix.cos].data;
	const void *sinc = c->in[p->ix.sin].data;
	const void *pos = p->g.has_pos ? c->in[p->ix.pos].data : NULL;
	void *y = c->out[0].data;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *args[] = { &x, &cosc, &sinc, &pos, &y, &p->g, &fault, &site };
	int ret;

	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->g.B * p->g.H * p->g.S * p->g.D),
			   CUDA_BLOCK, 0, args);
}

static const struct op_kernel kernels[] = {
	{ "", "RotaryEmbedding", 23, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, rope_prepare, rope_run },
	{ "com.microsoft", "RotaryEmbedding", 1, 1, BACKEND_CUDA, CUDA_DTS_FLOAT, rope_prepare,
	  rope_run },
};

const struct op_family op_family_cuda_rotary = {
	"cuda_rotary", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
