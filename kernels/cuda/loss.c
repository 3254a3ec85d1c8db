/*
 * loss.c — the CUDA kernels of SoftmaxCrossEntropyLoss (opset 12; bfloat16
 * from 13) and NegativeLogLikelihoodLoss (opset 12; bfloat16 from 22) for
 * the float types with int32 or int64 labels, as the reference kernels
 * take them (kernels/cpu/loss.c): kernels/cuda/loss.cu on the device.
 * prepare() reads the parameters with the host's cpu_loss_read()
 * (kernels/cpu/loss.h), picks a block per position for the log-softmax
 * of contiguous classes or a thread per position otherwise, and asks for
 * a workspace of each position's loss and weight when the losses are
 * reduced; run() launches the position kernel, then the one-block total.
 * Labels are data: a bad one is latched into the stream's fault record
 * and the backend fails the run with "SoftmaxCrossEntropyLoss: index 7 is
 * out of range for dimension 1 of size 5" when it syncs.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "kernels/cpu/loss.h"

/* Twin of struct cep_loss (loss.cu); struct cpu_loss's layout. */
struct cuda_loss {
	int64_t batch, classes, inner;
	int64_t ignore;
	int32_t has_ignore, weighted, reduction, pad;
};

struct loss_params {
	CUfunction fn, total;        /* total: NULL for reduction "none" */
	unsigned grid, block;
	struct cuda_loss l;
};
CUDA_PARAMS_FIT(struct loss_params);

static int loss_prepare(struct op_call *c, size_t *workspace, bool sce)
{
	struct loss_params *p = (struct loss_params *)c->params;
	const struct op_tensor *x = &c->in[0], *lb = &c->in[1];
	const char *sfx = cuda_dtype_suffix(x->dtype);
	struct cpu_loss l;
	int64_t positions;
	char name[40];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL || !op_dtype_in(x->dtype, CUDA_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(x->dtype));
	if (lb->dtype != CEP_DTYPE_INT32 && lb->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "%s: labels are %s, not int32 or int64",
				      c->node->op_type, cep_dtype_name(lb->dtype));
	cpu_loss_read(c->node, x, c->n_in > 2 && op_tensor_present(&c->in[2]), &l);
	p->l = (struct cuda_loss){
		.batch = l.batch, .classes = l.classes, .inner = l.inner, .ignore = l.ignore,
		.has_ignore = l.has_ignore, .weighted = l.weighted, .reduction = l.reduction,
	};
	positions = l.batch * l.inner;
	if (sce && l.inner == 1) {
		/* Contiguous classes: a block each, just enough warps for few. */
		p->block = l.classes >= CUDA_BLOCK ? CUDA_BLOCK
						   : 32 * (unsigned)(l.classes > 0 ? (l.classes + 31) / 32 : 1);
		p->grid = positions > (int64_t)CUDA_GRID_MAX ? CUDA_GRID_MAX : (unsigned)positions;
	} else {
		p->block = CUDA_BLOCK;
		p->grid = cuda_grid(positions);
	}
	snprintf(name, sizeof(name), "%s_%s_%s", sce ? (l.inner == 1 ? "sce_rows" : "sce_cols") : "nll",
		 sfx, lb->dtype == CEP_DTYPE_INT32 ? "i32" : "i64");
	ret = cuda_function_get(c->be, "loss", name, &p->fn);
	if (ret < 0 || l.reduction == CPU_LOSS_NONE)
		return ret;
	/* Each position's loss and weight, for the total. */
	*workspace = 2 * (size_t)positions * sizeof(double);
	snprintf(name, sizeof(name), "loss_total_%s", sfx);
	return cuda_function_get(c->be, "loss", name, &p->total);
}

static int loss_run(struct op_call *c)
{
	struct loss_params *p = (struct loss_params *)c->params;
	const void *x = c->in[0].data, *label = c->in[1].data;
	const void *w = p->l.weighted ? c->in[2].data : NULL;
	void *out = c->out[0].data;
	void *log_prob = c->n_out > 1 ? c->out[1].data : NULL;
	void *ws = c->workspace;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *args[] = { &x, &label, &w, &out, &log_prob, &ws, &p->l, &fault, &site };
	void *total_args[] = { &ws, &out, &p->l };
	int ret;

	if (p->total != NULL &&
	    c->workspace_bytes < 2 * (size_t)(p->l.batch * p->l.inner) * sizeof(double))
		return cep__set_error(CEP_EINTERNAL, "%s: the workspace is too small", c->node->op_type);
	if (p->grid > 0) {
		ret = cuda_fault_get(c->be, c->stream, &fault);
		if (ret < 0)
			return ret;
		ret = cuda_launch(c->be, c->stream, p->fn, p->grid, p->block, 0, args);
		if (ret < 0)
			return ret;
	}
	if (p->total == NULL)
		return 0;
	/* Even over no positions: the sum is 0, the mean 0/0. */
	return cuda_launch(c->be, c->stream, p->total, 1, 1024, 0, total_args);
}

static int sce_prepare(struct op_call *c, size_t *ws) { return loss_prepare(c, ws, true); }
static int nll_prepare(struct op_call *c, size_t *ws) { return loss_prepare(c, ws, false); }

/* The reference kernels' ranges: bfloat16 came at 13 and 22. */
#define LOSS_DTS_12 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "SoftmaxCrossEntropyLoss", 12, 12, BACKEND_CUDA, LOSS_DTS_12, sce_prepare, loss_run },
	{ "", "SoftmaxCrossEntropyLoss", 13, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT,
	  sce_prepare, loss_run },
	{ "", "NegativeLogLikelihoodLoss", 12, 21, BACKEND_CUDA, LOSS_DTS_12, nll_prepare, loss_run },
	{ "", "NegativeLogLikelihoodLoss", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT,
	  nll_prepare, loss_run },
};

const struct op_family op_family_cuda_loss = {
	"cuda_loss", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
