/*
 * nms.c — the CUDA kernel of NonMaxSuppression (opset 10 on, float32, as
 * the reference kernel of kernels/cpu/nms.c): kernels/cuda/nms.cu on the
 * device. The number selected was counted by inference while planning;
 * the device selects again and a run whose data selects another number
 * fails at the stream's sync ("NonMaxSuppression: the values of its
 * inputs give 4 elements along dimension 0, where the plan made for the
 * shapes has 3"). The workspace holds each (batch, class) pair's sorted
 * candidates and kept boxes (32-bit box indices) and its count.
 */
#include "kernels/cuda/launch.h"

#include <inttypes.h>
#include <string.h>

/* Twin of struct cep_nms (nms.cu). */
struct cuda_nms {
	int64_t batches, classes, boxes;
	int64_t count;
	int32_t center;
	int32_t pad;
};

struct nms_params {
	CUfunction select_fn, write_fn;
	unsigned grid;                  /* blocks: one per pair, at most CUDA_GRID_MAX */
	struct cuda_nms n;
	size_t lists;                   /* bytes of the order and kept lists, each */
};
CUDA_PARAMS_FIT(struct nms_params);

static int nms_prepare(struct op_call *c, size_t *workspace)
{
	struct nms_params *p = (struct nms_params *)c->params;
	const struct op_tensor *boxes = &c->in[0], *scores = &c->in[1];
	int64_t pairs;
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	p->n.batches = boxes->dims[0];
	p->n.boxes = boxes->dims[1];
	p->n.classes = scores->dims[1];
	p->n.count = c->out[0].dims[0];
	p->n.center = op_attr_int(c->node, "center_point_box", 0) != 0;
	if (p->n.boxes > INT32_MAX)
		return cep__set_error(CEP_EUNSUPPORTED, "NonMaxSuppression: %" PRId64 " boxes are "
				      "more than the cuda kernel indexes", p->n.boxes);
	pairs = p->n.batches * p->n.classes;
	p->grid = pairs > (int64_t)CUDA_GRID_MAX ? CUDA_GRID_MAX : pairs > 0 ? (unsigned)pairs : 1;
	p->lists = ((size_t)(pairs * p->n.boxes) * sizeof(int32_t) + 7) / 8 * 8;
	*workspace = 2 * p->lists + (size_t)(pairs > 0 ? pairs : 1) * sizeof(int64_t);
	ret = cuda_function_get(c->be, "nms", "nms_select", &p->select_fn);
	if (ret < 0)
		return ret;
	return cuda_function_get(c->be, "nms", "nms_write", &p->write_fn);
}

/* The data of optional input i, NULL when it is absent or empty. */
static const void *nms_optional(const struct op_call *c, int i)
{
	if (i >= c->n_in || !op_tensor_present(&c->in[i]) ||
	    op_dims_product(&c->in[i], 0, c->in[i].rank) == 0)
		return NULL;
	return c->in[i].data;
}

static int nms_run(struct op_call *c)
{
	const struct nms_params *p = (const struct nms_params *)c->params;
	const void *boxes = c->in[0].data, *scores = c->in[1].data;
	const void *max_out = nms_optional(c, 2), *iou = nms_optional(c, 3);
	const void *score_thr = nms_optional(c, 4);
	unsigned char *ws = c->workspace;
	void *order = ws, *sel = ws + p->lists, *counts = ws + 2 * p->lists;
	void *out = c->out[0].data;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *select_args[] = { &boxes, &scores, &max_out, &iou, &score_thr, &order, &sel, &counts,
				(void *)&p->n };
	void *write_args[] = { &sel, &counts, &out, (void *)&p->n, &fault, &site };
	int ret;

	if (c->workspace_bytes < 2 * p->lists + sizeof(int64_t))
		return cep__set_error(CEP_EINTERNAL, "NonMaxSuppression: the workspace is too small");
	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	ret = cuda_launch(c->be, c->stream, p->select_fn, p->grid, CUDA_BLOCK, 0, select_args);
	if (ret < 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->write_fn, p->grid, CUDA_BLOCK, 0, write_args);
}

static const struct op_kernel kernels[] = {
	{ "", "NonMaxSuppression", 10, OP_OPSET_MAX, BACKEND_CUDA, OP_DT(CEP_DTYPE_FLOAT32),
	  nms_prepare, nms_run },
};

const struct op_family op_family_cuda_nms = {
	"cuda_nms", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
