/*
 * reduce.c — the CUDA kernels of the Reduce* operators (ReduceSum,
 * ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
 * ReduceSumSquare, ReduceLogSum, ReduceLogSumExp) for the types the
 * reference kernels take at each opset (kernels/cpu/reduce.c):
 * kernels/cuda/reduce.cu on the device.
 *
 * The axes are an attribute before ReduceSum's opset 13 and the others'
 * 18, and an optional int64 input since. The planner gives prepare() no
 * input's value (only shapes), so an attribute or an empty input turns
 * into a mask here, and a non-empty axes input is read by the kernel
 * itself, on the device, where a bad axis fails the run through the fault
 * record. Either way the output's shape was fixed by inference, which the
 * kernel checks the axes against.
 */
#include "kernels/cuda/launch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Twin of struct cep_reduce (reduce.cu). */
struct cuda_reduce {
	int64_t out_n, count;
	int64_t lo, hi;
	int32_t rank;
	uint32_t mask;
	int32_t n_axes;
	int32_t pad;
	int64_t dims[CEP_MAX_RANK];
};

struct reduce_params {
	CUfunction fn;
	unsigned grid, block;
	bool device_axes;          /* the kernel reads input 1 */
	struct cuda_reduce r;
};
CUDA_PARAMS_FIT(struct reduce_params);

/* Outputs of at least this many inputs each get a block. */
#define REDUCE_BLOCK_MIN 128

static void reduce_bounds(cep_dtype t, int64_t *lo, int64_t *hi)
{
	switch (t) {
	case CEP_DTYPE_INT32: *lo = INT32_MIN; *hi = INT32_MAX; break;
	case CEP_DTYPE_INT8: *lo = INT8_MIN; *hi = INT8_MAX; break;
	case CEP_DTYPE_UINT64: *lo = 0; *hi = (int64_t)UINT64_MAX; break; /* its bits */
	case CEP_DTYPE_UINT32: *lo = 0; *hi = UINT32_MAX; break;
	case CEP_DTYPE_UINT8: *lo = 0; *hi = UINT8_MAX; break;
	case CEP_DTYPE_BOOL: *lo = 0; *hi = 1; break;
	default: *lo = INT64_MIN; *hi = INT64_MAX; break;
	}
}

/* Sets p->r.mask from the axes attribute (or an empty axes input), or
 * p->device_axes for a non-empty axes input. */
static int reduce_axes(struct op_call *c, struct reduce_params *p)
{
	const struct op_node *node = c->node;
	int since = strcmp(node->op_type, "ReduceSum") == 0 ? 13 : 18;
	int rank = c->in[0].rank, cnt = 0, k;
	const int64_t *attr = NULL;
	bool noop = false;

	if (node->opset < since) {
		attr = op_attr_ints(node, "axes", &cnt);
	} else {
		noop = op_attr_int(node, "noop_with_empty_axes", 0) != 0;
		if (c->n_in > 1 && op_tensor_present(&c->in[1])) {
			const struct op_tensor *axes = &c->in[1];

			if (axes->dtype != CEP_DTYPE_INT64)
				return cep__set_error(CEP_EDTYPE, "%s: axes must be int64, not %s",
						      node->op_type, cep_dtype_name(axes->dtype));
			cnt = axes->rank == 0 ? 1 : (int)axes->dims[0];
			if (cnt > rank)
				return cep__set_error(CEP_EINVAL, "%s: %d axes for an input of rank %d",
						      node->op_type, cnt, rank);
			if (cnt > 0) {
				p->device_axes = true;
				p->r.n_axes = cnt;
				return 0;
			}
		}
	}
	/* Empty axes reduce everything, unless noop_with_empty_axes. */
	p->r.mask = cnt == 0 && !noop ? (1u << rank) - 1u : 0u;
	for (k = 0; k < cnt; k++) {
		int64_t a = attr[k];

		if (a < -rank || a >= rank)
			return cep__set_error(CEP_EINVAL, "%s: axis %" PRId64 " is out of range for rank %d",
					      node->op_type, a, rank);
		if (a < 0)
			a += rank;
		if (p->r.mask & (1u << a))
			return cep__set_error(CEP_EINVAL, "%s: axis %" PRId64 " appears twice in axes",
					      node->op_type, a);
		p->r.mask |= 1u << a;
	}
	return 0;
}

static int reduce_prepare(struct op_call *c, size_t *workspace, const char *op)
{
	struct reduce_params *p = (struct reduce_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	const char *sfx = cuda_dtype_suffix(x->dtype);
	int64_t n = op_dims_product(x, 0, x->rank);
	char name[40];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(x->dtype));
	ret = reduce_axes(c, p);
	if (ret < 0)
		return ret;
	p->r.rank = x->rank;
	memcpy(p->r.dims, x->dims, sizeof(p->r.dims));
	p->r.out_n = op_dims_product(&c->out[0], 0, c->out[0].rank);
	p->r.count = p->r.out_n > 0 ? n / p->r.out_n : 0;
	reduce_bounds(x->dtype, &p->r.lo, &p->r.hi);
	if (p->r.count >= REDUCE_BLOCK_MIN) {
		p->block = p->r.count >= CUDA_BLOCK ? CUDA_BLOCK
						    : 32 * (unsigned)((p->r.count + 31) / 32);
		p->grid = p->r.out_n > (int64_t)CUDA_GRID_MAX ? CUDA_GRID_MAX
							      : (unsigned)p->r.out_n;
	} else {
		p->block = CUDA_BLOCK;
		p->grid = cuda_grid(p->r.out_n);
	}
	snprintf(name, sizeof(name), "reduce_%s_%s_%s", op,
		 p->r.count >= REDUCE_BLOCK_MIN ? "block" : "thread", sfx);
	return cuda_function_get(c->be, cuda_dtype_wide(x->dtype) ? "reduce_wide" : "reduce", name,
				 &p->fn);
}

static int reduce_run(struct op_call *c)
{
	struct reduce_params *p = (struct reduce_params *)c->params;
	const void *x = c->in[0].data, *axes = p->device_axes ? c->in[1].data : NULL;
	void *y = c->out[0].data;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *args[] = { &x, &y, &p->r, &axes, &fault, &site };
	int ret;

	if (p->r.out_n == 0)
		return 0;
	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->fn, p->grid, p->block, 0, args);
}

static int sum_prepare(struct op_call *c, size_t *ws) { return reduce_prepare(c, ws, "sum"); }
static int mean_prepare(struct op_call *c, size_t *ws) { return reduce_prepare(c, ws, "mean"); }
static int max_prepare(struct op_call *c, size_t *ws) { return reduce_prepare(c, ws, "max"); }
static int min_prepare(struct op_call *c, size_t *ws) { return reduce_prepare(c, ws, "min"); }
static int prod_prepare(struct op_call *c, size_t *ws) { return reduce_prepare(c, ws, "prod"); }
static int l1_prepare(struct op_call *c, size_t *ws) { return reduce_prepare(c, ws, "l1"); }
static int l2_prepare(struct op_call *c, size_t *ws) { return reduce_prepare(c, ws, "l2"); }
static int sumsq_prepare(struct op_call *c, size_t *ws) { return reduce_prepare(c, ws, "sumsq"); }
static int logsum_prepare(struct op_call *c, size_t *ws) { return reduce_prepare(c, ws, "logsum"); }
static int lse_prepare(struct op_call *c, size_t *ws) { return reduce_prepare(c, ws, "lse"); }

/* The reference kernels' type sets per opset range. */
#define RED_DTS_7 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16) | \
		   OP_DT(CEP_DTYPE_FLOAT64) | OP_DT(CEP_DTYPE_INT32) | OP_DT(CEP_DTYPE_INT64) | \
		   OP_DT(CEP_DTYPE_UINT32) | OP_DT(CEP_DTYPE_UINT64))
#define RED_DTS_13 (RED_DTS_7 | OP_DT(CEP_DTYPE_BFLOAT16))
#define RED_DTS_MINMAX_12 (RED_DTS_7 | OP_DT(CEP_DTYPE_INT8) | OP_DT(CEP_DTYPE_UINT8))
#define RED_DTS_MINMAX_13 (RED_DTS_MINMAX_12 | OP_DT(CEP_DTYPE_BFLOAT16))
#define RED_DTS_MINMAX_20 (RED_DTS_MINMAX_13 | OP_DT(CEP_DTYPE_BOOL))

#define RK(op, since, until, dts, prepare) \
	{ "", op, since, until, BACKEND_CUDA, dts, prepare, reduce_run }
#define RK_PLAIN(op, prepare) \
	RK(op, 1, 12, RED_DTS_7, prepare), \
	RK(op, 13, OP_OPSET_MAX, RED_DTS_13, prepare)
/* The logs lost their integer types at 28. */
#define RK_LOG(op, prepare) \
	RK(op, 1, 12, RED_DTS_7, prepare), \
	RK(op, 13, 27, RED_DTS_13, prepare), \
	RK(op, 28, OP_OPSET_MAX, OP_DTS_FLOAT, prepare)

static const struct op_kernel kernels[] = {
	RK("ReduceSum", 1, 12, RED_DTS_7, sum_prepare),
	RK("ReduceSum", 13, OP_OPSET_MAX, RED_DTS_13, sum_prepare),
	RK("ReduceMean", 1, 12, RED_DTS_7, mean_prepare),
	RK("ReduceMean", 13, OP_OPSET_MAX, RED_DTS_13, mean_prepare),
	RK("ReduceMax", 1, 11, RED_DTS_7, max_prepare),
	RK("ReduceMax", 12, 12, RED_DTS_MINMAX_12, max_prepare),
	RK("ReduceMax", 13, 19, RED_DTS_MINMAX_13, max_prepare),
	RK("ReduceMax", 20, OP_OPSET_MAX, RED_DTS_MINMAX_20, max_prepare),
	RK("ReduceMin", 1, 11, RED_DTS_7, min_prepare),
	RK("ReduceMin", 12, 12, RED_DTS_MINMAX_12, min_prepare),
	RK("ReduceMin", 13, 19, RED_DTS_MINMAX_13, min_prepare),
	RK("ReduceMin", 20, OP_OPSET_MAX, RED_DTS_MINMAX_20, min_prepare),
	RK_PLAIN("ReduceProd", prod_prepare),
	RK_PLAIN("ReduceL1", l1_prepare),
	RK_PLAIN("ReduceL2", l2_prepare),
	RK_PLAIN("ReduceSumSquare", sumsq_prepare),
	RK_LOG("ReduceLogSum", logsum_prepare),
	RK_LOG("ReduceLogSumExp", lse_prepare),
};

const struct op_family op_family_cuda_reduce = {
	"cuda_reduce", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
