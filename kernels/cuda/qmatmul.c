/*
 * qmatmul.c — the CUDA kernels of MatMulInteger and QLinearMatMul (opset
 * 10 on; the scales float16 and bfloat16 too from 21), int8 and uint8
 * operands of either type each, as the reference kernels take them
 * (kernels/cpu/qmatmul.c): kernels/cuda/qmatmul.cu on the device. The
 * batch broadcast and the zero points' and scales' layouts are read by
 * the host's own cpu_qmm_read() (kernels/cpu/quant.h); the grid is a
 * block per 16 x 16 output tile, striding over the rest.
 */
#include "kernels/cuda/launch.h"

#include <string.h>

#include "kernels/cpu/quant.h"

#define QMM_TILE 16

/* Twin of struct cep_qmm (qmatmul.cu). */
struct cuda_qmm {
	int64_t M, N, K, batch;
	int64_t dims[QMM_MAX_BATCH];
	int64_t a_str[QMM_MAX_BATCH];
	int64_t b_str[QMM_MAX_BATCH];
	int64_t a_bs, a_vs, b_bs, b_vs;
	int32_t rank;
	int32_t flags;
	int32_t sdt;
	int32_t round;
};

enum { QMM_A_SIGNED = 1, QMM_B_SIGNED = 2, QMM_Y_SIGNED = 4 };

struct qmm_params {
	CUfunction fn;
	unsigned grid;
	struct cuda_qmm q;
};
CUDA_PARAMS_FIT(struct qmm_params);

static bool qmm_qlinear(const struct op_call *c)
{
	return strcmp(c->node->op_type, "QLinearMatMul") == 0;
}

static int qmm_prepare(struct op_call *c, size_t *workspace)
{
	struct qmm_params *p = (struct qmm_params *)c->params;
	bool ql = qmm_qlinear(c);
	const struct op_tensor *a = &c->in[0], *b = &c->in[ql ? 3 : 1];
	struct cpu_qmm q;
	int64_t tiles;
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	ret = cpu_qmm_read(c->node, c->in, c->n_in, &c->out[0], &q);
	if (ret < 0)
		return ret;
	p->q = (struct cuda_qmm){
		.M = q.M, .N = q.N, .K = q.K, .batch = q.batch,
		.a_bs = q.a_bs, .a_vs = q.a_vs, .b_bs = q.b_bs, .b_vs = q.b_vs, .rank = q.rank,
	};
	memcpy(p->q.dims, q.dims, sizeof(q.dims));
	memcpy(p->q.a_str, q.a_str, sizeof(q.a_str));
	memcpy(p->q.b_str, q.b_str, sizeof(q.b_str));
	p->q.flags = (a->dtype == CEP_DTYPE_INT8 ? QMM_A_SIGNED : 0) |
		     (b->dtype == CEP_DTYPE_INT8 ? QMM_B_SIGNED : 0) |
		     (c->out[0].dtype == CEP_DTYPE_INT8 ? QMM_Y_SIGNED : 0);
	if (ql) {
		p->q.sdt = c->in[1].dtype;
		p->q.round = quant_round_of(c->in[1].dtype);
	}
	tiles = q.batch * ((q.M + QMM_TILE - 1) / QMM_TILE) * ((q.N + QMM_TILE - 1) / QMM_TILE);
	p->grid = tiles > (int64_t)CUDA_GRID_MAX ? CUDA_GRID_MAX : (unsigned)tiles;
	return cuda_function_get(c->be, "qmatmul", ql ? "qlinearmatmul" : "matmulinteger", &p->fn);
}

/* The data of input i of c, NULL when absent. */
static const void *qmm_data(const struct op_call *c, int i)
{
	return i < c->n_in && op_tensor_present(&c->in[i]) ? c->in[i].data : NULL;
}

static int qmm_run(struct op_call *c)
{
	struct qmm_params *p = (struct qmm_params *)c->params;
	const void *in[8];
	void *y = c->out[0].data;
	int i;

	for (i = 0; i < 8; i++)
		in[i] = qmm_data(c, i);
	if (qmm_qlinear(c)) {
		void *args[] = { &in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &in[6], &in[7],
				 &y, &p->q };

		return cuda_launch(c->be, c->stream, p->fn, p->grid, QMM_TILE * QMM_TILE, 0, args);
	}
	{
		void *args[] = { &in[0], &in[1], &in[2], &in[3], &y, &p->q };

		return cuda_launch(c->be, c->stream, p->fn, p->grid, QMM_TILE * QMM_TILE, 0, args);
	}
}

static const struct op_kernel kernels[] = {
	{ "", "MatMulInteger", 10, OP_OPSET_MAX, BACKEND_CUDA, QUANT_DTS_Q, qmm_prepare, qmm_run },
	{ "", "QLinearMatMul", 10, OP_OPSET_MAX, BACKEND_CUDA, QUANT_DTS_Q, qmm_prepare, qmm_run },
};

const struct op_family op_family_cuda_qmatmul = {
	"cuda_qmatmul", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
