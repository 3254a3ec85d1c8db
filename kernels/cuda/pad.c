/*
 * pad.c — the CUDA kernel of Pad (opset 7 on, every mode) for every type
 * the reference kernel takes (kernels/cpu/pad.c): kernels/cuda/pad.cu on
 * the device. The mode, and before opset 11 the pads, are read by the
 * host's own functions (kernels/cpu/pad.h). From 11 on the pads (and the
 * axes of opset 18) are inputs whose values the planner does not give
 * prepare(), so the kernel reads them on the device and checks them
 * against the output's planned shape; prepare() checks their types and
 * shapes. The fill value is the attribute before opset 11, the optional
 * constant_value input since, read on the device too.
 */
#include "kernels/cuda/launch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kernels/cpu/pad.h"

/* Twin of struct cep_pad (pad.cu). */
struct cuda_pad {
	int64_t n;                      /* output elements */
	int32_t rank;                   /* >= 1 */
	int32_t mode;                   /* enum cpu_pad_mode */
	int32_t n_axes;                 /* pads input: entries per side */
	int32_t wide;                   /* bit 0: pads int64; bit 1: axes int64 */
	int64_t idims[CEP_MAX_RANK];
	int64_t odims[CEP_MAX_RANK];
	int64_t begin[CEP_MAX_RANK];    /* without a pads input */
	int64_t end[CEP_MAX_RANK];
};

struct pad_params {
	CUfunction fn;
	int32_t mode;                   /* enum cpu_pad_mode */
	int32_t n_axes;                 /* > 0 or -1: the pads are an input */
	int32_t wide;
	bool has_axes, has_cval;        /* inputs 3 and 2 read on the device */
	uint64_t cval;                  /* the fill's bits (attribute, or 0); the
	                                 * kernel's argument of the element's size
	                                 * reads its low-order bytes first */
	struct cpu_pad_amounts a;       /* pads of the attribute */
};
CUDA_PARAMS_FIT(struct pad_params);

/* Checks the types and shapes of the pads and axes inputs (opset 11 on)
 * and records how the kernel reads them. */
static int pad_inputs(const struct op_call *c, struct pad_params *p)
{
	const struct op_tensor *pads = &c->in[1];
	const struct op_tensor *axes = c->n_in > 3 && op_tensor_present(&c->in[3]) ? &c->in[3]
										 : NULL;
	int rank = c->in[0].rank;

	p->n_axes = rank;
	if (axes != NULL) {
		if (axes->rank != 1 || axes->dims[0] > rank)
			return cep__set_error(CEP_ESHAPE, "Pad: axes must be 1-D with at most %d "
					      "values", rank);
		p->n_axes = (int32_t)axes->dims[0];
		p->has_axes = true;
		p->wide |= axes->dtype == CEP_DTYPE_INT64 ? 2 : 0;
	}
	if (pads->rank != 1 || pads->dims[0] != 2 * (int64_t)p->n_axes)
		return cep__set_error(CEP_ESHAPE, "Pad: pads must be 1-D with %d values",
				      2 * p->n_axes);
	p->wide |= pads->dtype == CEP_DTYPE_INT64 ? 1 : 0;
	p->has_cval = c->n_in > 2 && op_tensor_present(&c->in[2]) &&
		      op_tensor_bytes(&c->in[2]) == cep_dtype_size(c->in[0].dtype);
	return 0;
}

static int pad_prepare(struct op_call *c, size_t *workspace)
{
	struct pad_params *p = (struct pad_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	enum cpu_pad_mode mode;
	size_t es = cep_dtype_size(x->dtype);
	char name[16];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (es != 1 && es != 2 && es != 4 && es != 8)
		return cep__set_error(CEP_EDTYPE, "Pad: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	if (c->out[0].rank != x->rank)
		return cep__set_error(CEP_ESHAPE, "Pad: data has rank %d, the output %d", x->rank,
				      c->out[0].rank);
	ret = cpu_pad_mode_get(c->node, &mode);
	if (ret < 0)
		return ret;
	p->mode = mode;
	/* The values of inputs are not known here: 1 means they are inputs. */
	ret = cpu_pad_amounts_get(c->node, c->in, c->n_in, x->rank, &p->a);
	if (ret < 0)
		return ret;
	if (ret == 1) {
		ret = pad_inputs(c, p);
		if (ret < 0)
			return ret;
	} else {
		p->n_axes = -1;
	}
	if (c->node->opset < 11) {
		unsigned char v[8] = { 0 };

		cpu_store_f(v, x->dtype, 0, op_attr_float(c->node, "value", 0.0f));
		memcpy(&p->cval, v, sizeof(p->cval));
	}
	snprintf(name, sizeof(name), "pad_%zu", es);
	return cuda_function_get(c->be, "pad", name, &p->fn);
}

static int pad_run(struct op_call *c)
{
	struct pad_params *p = (struct pad_params *)c->params;
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	const void *data = x->data, *pads = NULL, *axes = NULL, *cval_in = NULL;
	void *out = y->data;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	struct cuda_pad k = { .rank = x->rank > 0 ? x->rank : 1, .mode = p->mode,
			      .n_axes = p->n_axes > 0 ? p->n_axes : 0, .wide = p->wide };
	void *args[] = { &data, &out, &k, &pads, &axes, &cval_in, &p->cval, &fault, &site };
	int i, ret;

	k.n = op_dims_product(y, 0, y->rank);
	if (k.n == 0)
		return 0;
	for (i = 0; i < k.rank; i++) {
		k.idims[i] = x->rank > 0 ? x->dims[i] : 1;
		k.odims[i] = y->rank > 0 ? y->dims[i] : 1;
		k.begin[i] = p->a.begin[i];
		k.end[i] = p->a.end[i];
	}
	if (p->n_axes >= 0) {
		pads = c->in[1].data;
		axes = p->has_axes ? c->in[3].data : NULL;
	}
	if (p->has_cval)
		cval_in = c->in[2].data;
	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(k.n), CUDA_BLOCK, 0, args);
}

/* The reference kernel's type sets: integers from opset 11, the rest of
 * the stored types from 13. */
#define PAD_DTS_NO_BF16 (OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "Pad", 1, 10, BACKEND_CUDA, PAD_DTS_NO_BF16, pad_prepare, pad_run },
	{ "", "Pad", 11, 12, BACKEND_CUDA, PAD_DTS_NO_BF16 | OP_DTS_INT, pad_prepare, pad_run },
	{ "", "Pad", 13, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL, pad_prepare, pad_run },
};

const struct op_family op_family_cuda_pad = {
	"cuda_pad", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
