/*
 * rnn.c — the CUDA kernels of RNN, GRU and LSTM (opset 1 on; float32 and
 * float16, bfloat16 from opset 22, as the reference kernels take them:
 * kernels/cpu/rnn.c), kernels/cuda/rnn.cu on the device. prepare() reads
 * the parameters with the host's own cpu_rnn_read() (kernels/cpu/rnn.h),
 * lays out the workspace (two H buffers, C or GRU's z and r, the checked
 * sequence lengths) and sizes the grids; run() queues the initial states,
 * then one launch per time step (two for GRU), one after the other on the
 * call's stream: a step needs the whole H of the one before.
 *
 * Why one direct kernel per step rather than cuBLASLt GEMMs (X W^T for
 * every step at once, H R^T per step) and a gate kernel: it is the
 * simplest to get right. The recurrence stays in float32 for every type
 * (cuBLASLt's GEMMs take and give one type, so half weights would need
 * float32 copies or a half H rounded at every step, which the reference
 * does not do); sequence_lens, which stops each batch entry at its own
 * step and reverses it from its own end, GRU's r (.) H before R_h,
 * peepholes, clip and any activation are a few lines of one kernel
 * instead of strided GEMM batches and fix-ups; and the sums run in the
 * reference's order of gates. The cost is speed at large batches, where a
 * GEMM would reuse each weight across the batch; at the batch sizes of
 * speech and sequence models in inference a step is bound by reading the
 * weights once (from L2 after the first step), as a GEMM is.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "kernels/cpu/rnn.h"

#define RNN_WARPS 8 /* units (a warp each) per block of a step kernel */

/* The kernels take struct cpu_rnn as it is (struct cep_rnn, rnn.cu). */
_Static_assert(sizeof(struct cpu_rnn) == 144, "struct cpu_rnn must match cep_rnn of rnn.cu");

struct rnn_params {
	CUfunction init;        /* rnn_init */
	CUfunction step;        /* rnn_step, lstm_step or gru_gates */
	CUfunction step2;       /* gru_hidden; NULL for RNN and LSTM */
	unsigned init_grid, step_grid;
	uint64_t off_h[2];      /* workspace bytes: the H buffers, float (units) */
	uint64_t off_cz;        /* LSTM's C or GRU's z, float (units); 0: none */
	uint64_t off_r;         /* GRU's r or r (.) H, float (units); 0: none */
	uint64_t off_lens;      /* the lengths, int32 (batch) */
	struct cpu_rnn rnn;
};
CUDA_PARAMS_FIT(struct rnn_params);

/* n bytes rounded up to the 256 that every workspace part starts on. */
static uint64_t rnn_round(uint64_t n)
{
	return (n + 255) & ~(uint64_t)255;
}

static int rnn_prepare(struct op_call *c, size_t *workspace)
{
	static const char *const steps[] = { "rnn_step", "gru_gates", "lstm_step" };
	struct rnn_params *p = (struct rnn_params *)c->params;
	const char *sfx = cuda_dtype_suffix(c->in[CPU_RNN_X].dtype);
	int64_t units, blocks;
	uint64_t fbytes, at;
	char name[32];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL || !op_dtype_in(c->in[CPU_RNN_X].dtype, CUDA_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(c->in[CPU_RNN_X].dtype));
	ret = cpu_rnn_read(c->node, c->in, &p->rnn);
	if (ret < 0)
		return ret;
	units = p->rnn.dirs * p->rnn.batch * p->rnn.hidden;
	if (units == 0)
		return 0;
	fbytes = rnn_round(sizeof(float) * (uint64_t)units);
	p->off_h[1] = fbytes;
	at = 2 * fbytes;
	if (p->rnn.op != CPU_RNN_SIMPLE) {
		p->off_cz = at;
		at += fbytes;
	}
	if (p->rnn.op == CPU_RNN_GRU) {
		p->off_r = at;
		at += fbytes;
	}
	p->off_lens = at;
	*workspace = at + rnn_round(sizeof(int32_t) * (uint64_t)p->rnn.batch);
	p->init_grid = cuda_grid(units);
	blocks = (units + RNN_WARPS - 1) / RNN_WARPS;
	p->step_grid = blocks > (int64_t)CUDA_GRID_MAX ? CUDA_GRID_MAX : (unsigned)blocks;
	snprintf(name, sizeof(name), "rnn_init_%s", sfx);
	if ((ret = cuda_function_get(c->be, "rnn", name, &p->init)) < 0)
		return ret;
	snprintf(name, sizeof(name), "%s_%s", steps[p->rnn.op], sfx);
	if ((ret = cuda_function_get(c->be, "rnn", name, &p->step)) < 0)
		return ret;
	if (p->rnn.op != CPU_RNN_GRU)
		return 0;
	snprintf(name, sizeof(name), "gru_hidden_%s", sfx);
	return cuda_function_get(c->be, "rnn", name, &p->step2);
}

/* The data of input i, or NULL when it is absent. */
static const void *rnn_in(const struct op_call *c, int i)
{
	return i < c->n_in && op_tensor_present(&c->in[i]) ? c->in[i].data : NULL;
}

/* The data of output i, or NULL when the node leaves it unnamed. */
static void *rnn_out(const struct op_call *c, int i)
{
	return i < c->n_out && op_tensor_present(&c->out[i]) ? c->out[i].data : NULL;
}

static int rnn_run(struct op_call *c)
{
	struct rnn_params *p = (struct rnn_params *)c->params;
	bool lstm = p->rnn.op == CPU_RNN_LSTM;
	const void *x = c->in[CPU_RNN_X].data, *w = c->in[CPU_RNN_W].data;
	const void *r = c->in[CPU_RNN_R].data, *bias = rnn_in(c, CPU_RNN_B);
	const void *lens_in = rnn_in(c, CPU_RNN_LENS), *h0 = rnn_in(c, CPU_RNN_H0);
	const void *c0 = lstm ? rnn_in(c, CPU_RNN_C0) : NULL;
	const void *peep = lstm ? rnn_in(c, CPU_RNN_P) : NULL;
	void *y = rnn_out(c, CPU_RNN_Y), *yh = rnn_out(c, CPU_RNN_YH);
	void *yc = lstm ? rnn_out(c, CPU_RNN_YC) : NULL;
	char *ws = c->workspace;
	void *hb[2], *cz, *rg, *lens, *cst, *hin, *hout;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	int64_t s;
	void *init_args[] = { &h0, &c0, &lens_in, &hb[0], &cst, &lens, &yh, &yc, &p->rnn,
			      &fault, &site };
	void *step_args[] = { &x, &w, &r, &bias, &peep, &lens, &hin, &hout, &cz, &rg, &y,
			      &yh, &yc, &p->rnn, &s };
	int ret;

	if (p->init == NULL)
		return 0; /* no units: every output is empty */
	if (lens_in != NULL && (ret = cuda_fault_get(c->be, c->stream, &fault)) < 0)
		return ret;
	hb[0] = ws + p->off_h[0];
	hb[1] = ws + p->off_h[1];
	cz = p->off_cz ? ws + p->off_cz : NULL;
	rg = p->off_r ? ws + p->off_r : NULL;
	cst = lstm ? cz : NULL;
	lens = ws + p->off_lens;
	ret = cuda_launch(c->be, c->stream, p->init, p->init_grid, CUDA_BLOCK, 0, init_args);
	for (s = 0; ret == 0 && s < p->rnn.seq; s++) {
		hin = hb[s & 1];
		hout = hb[(s + 1) & 1];
		ret = cuda_launch(c->be, c->stream, p->step, p->step_grid, 32 * RNN_WARPS, 0,
				  step_args);
		if (ret == 0 && p->step2 != NULL)
			ret = cuda_launch(c->be, c->stream, p->step2, p->step_grid, 32 * RNN_WARPS, 0,
					  step_args);
	}
	return ret;
}

/* ------------------------------------------------------------------- table */

/* The reference kernels' ranges: bfloat16 arrived at opset 22. */
#define RNN_DTS_1 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "RNN", 1, 21, BACKEND_CUDA, RNN_DTS_1, rnn_prepare, rnn_run },
	{ "", "RNN", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, rnn_prepare, rnn_run },
	{ "", "GRU", 1, 21, BACKEND_CUDA, RNN_DTS_1, rnn_prepare, rnn_run },
	{ "", "GRU", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, rnn_prepare, rnn_run },
	{ "", "LSTM", 1, 21, BACKEND_CUDA, RNN_DTS_1, rnn_prepare, rnn_run },
	{ "", "LSTM", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, rnn_prepare, rnn_run },
};

const struct op_family op_family_cuda_rnn = {
	"cuda_rnn", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
