/*
 * cumsum.c — the CUDA kernels of CumSum (opset 11 on) and CumProd (26 on)
 * for every type the reference kernels take (kernels/cpu/cumsum.c):
 * kernels/cuda/cumsum.cu on the device. The axis is an input, and the
 * planner gives prepare() no input's value (only shapes), so the kernel
 * reads it on the device; one out of range fails the run at the stream's
 * sync with "CumSum: axes entry 0 is 5, out of range for rank 3 ..."
 * (gpu/cuda/cuda_kernels.h).
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

/* Twin of struct cep_scan (cumsum.cu). */
struct cuda_scan {
	int64_t n;
	int32_t rank;
	int32_t axis_wide;
	int32_t exclusive;
	int32_t reverse;
	int64_t dims[CEP_MAX_RANK];
};

struct scan_params {
	CUfunction fn;
	struct cuda_scan s;
};
CUDA_PARAMS_FIT(struct scan_params);

static int scan_prepare(struct op_call *c, size_t *workspace, const char *kernel)
{
	struct scan_params *p = (struct scan_params *)c->params;
	const struct op_tensor *x = &c->in[0], *axis = &c->in[1];
	const char *sfx = cuda_dtype_suffix(x->dtype);
	char name[32];

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(x->dtype));
	if (axis->dtype != CEP_DTYPE_INT32 && axis->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "%s: axis is %s, not int32 or int64",
				      c->node->op_type, cep_dtype_name(axis->dtype));
	if (x->rank < 1)
		return cep__set_error(CEP_ESHAPE, "%s: the input is a scalar, it has no axis",
				      c->node->op_type);
	p->s.n = op_dims_product(x, 0, x->rank);
	p->s.rank = x->rank;
	p->s.axis_wide = axis->dtype == CEP_DTYPE_INT64;
	p->s.exclusive = op_attr_int(c->node, "exclusive", 0) != 0;
	p->s.reverse = op_attr_int(c->node, "reverse", 0) != 0;
	memcpy(p->s.dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
	snprintf(name, sizeof(name), "%s_%s", kernel, sfx);
	return cuda_function_get(c->be, "cumsum", name, &p->fn);
}

static int scan_run(struct op_call *c)
{
	struct scan_params *p = (struct scan_params *)c->params;
	const void *x = c->in[0].data, *axis = c->in[1].data;
	void *y = c->out[0].data;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *args[] = { &x, &axis, &y, &p->s, &fault, &site };
	int ret;

	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	/* One block even for an empty input, which still checks its axis.
	 * The columns are at most the elements. */
	return cuda_launch(c->be, c->stream, p->fn, p->s.n > 0 ? cuda_grid(p->s.n) : 1,
			   CUDA_BLOCK, 0, args);
}

static int cumsum_prepare(struct op_call *c, size_t *ws) { return scan_prepare(c, ws, "cumsum"); }
static int cumprod_prepare(struct op_call *c, size_t *ws) { return scan_prepare(c, ws, "cumprod"); }

/* The reference kernels' sets: float16 and bfloat16 joined CumSum at 14. */
#define SCAN_DTS_11 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT64) | \
		     OP_DT(CEP_DTYPE_INT32) | OP_DT(CEP_DTYPE_INT64) | \
		     OP_DT(CEP_DTYPE_UINT32) | OP_DT(CEP_DTYPE_UINT64))
#define SCAN_DTS_14 (SCAN_DTS_11 | OP_DT(CEP_DTYPE_FLOAT16) | OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "CumSum", 11, 13, BACKEND_CUDA, SCAN_DTS_11, cumsum_prepare, scan_run },
	{ "", "CumSum", 14, OP_OPSET_MAX, BACKEND_CUDA, SCAN_DTS_14, cumsum_prepare, scan_run },
	{ "", "CumProd", 26, OP_OPSET_MAX, BACKEND_CUDA, SCAN_DTS_14, cumprod_prepare, scan_run },
};

const struct op_family op_family_cuda_cumsum = {
	"cuda_cumsum", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
