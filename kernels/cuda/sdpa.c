/*
 * sdpa.c — the CUDA kernel of ONNX's Attention operator (opsets 23 to 25)
 * for float32, float16 and bfloat16, as the reference kernel takes them
 * (kernels/cpu/sdpa.c): prepare() reads the geometry with the host's own
 * cpu_sdpa_read(), so both backends attend over the same keys with the
 * same bias and rounding, picks a kernel and sizes its grid and shared
 * memory: for float16 and bfloat16 heads up to 128 elements on sm_80 and
 * later the tensor-core one (kernels/cuda/sdpa_tc.cu, a block per 64
 * query rows), else those of kernels/cuda/sdpa.cu (a block per 16 query
 * rows for heads up to 128, per 8 up to 256), and for deeper heads, or
 * SDPA_FEW_ROWS query rows or fewer (decoding), a block per row; run()
 * writes present_key and present_value when they are asked for, then
 * launches the rows.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "kernels/cpu/sdpa.h"

#define SDPA_THREADS 128       /* four warps, every kernel */
#define SDPA_KEYS 32           /* keys per tile (SD_KEYS) */
#define SDPA_SHMEM_MAX 49152u  /* dynamic shared memory without opting in */
#define SDPA_TC_QROWS 64       /* query rows per block of sdpa_tc (TC_QROWS) */
#define SDPA_FEW_ROWS 4        /* at most this many query rows: a block per row */

/* The mask's element type, as sdpa.cu's SD_MDT_* reads it. */
enum { SDPA_MDT_NONE, SDPA_MDT_BOOL, SDPA_MDT_F32, SDPA_MDT_F16, SDPA_MDT_BF16 };

struct sdpa_params {
	CUfunction rows, concat;   /* rows: the tile or the row kernel */
	struct sdpa_geom g;        /* twin of struct cep_sdpa */
	int32_t mdt;
	unsigned grid, shmem;      /* shmem: dynamic bytes of the rows */
};
CUDA_PARAMS_FIT(struct sdpa_params);

static int32_t sdpa_mdt(const struct op_call *c)
{
	if (c->n_in <= SDPA_IN_MASK || !op_tensor_present(&c->in[SDPA_IN_MASK]))
		return SDPA_MDT_NONE;
	switch (c->in[SDPA_IN_MASK].dtype) {
	case CEP_DTYPE_BOOL: return SDPA_MDT_BOOL;
	case CEP_DTYPE_FLOAT16: return SDPA_MDT_F16;
	case CEP_DTYPE_BFLOAT16: return SDPA_MDT_BF16;
	default: return SDPA_MDT_F32;
	}
}

static int sdpa_prepare(struct op_call *c, size_t *workspace)
{
	struct sdpa_params *p = (struct sdpa_params *)c->params;
	const char *sfx = cuda_dtype_suffix(c->in[SDPA_IN_Q].dtype);
	int64_t rows, depth, qrows;
	char name[32];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL || !op_dtype_in(c->in[SDPA_IN_Q].dtype, CUDA_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "Attention: no cuda kernel for %s",
				      cep_dtype_name(c->in[SDPA_IN_Q].dtype));
	ret = cpu_sdpa_read(c->node, c->in, c->n_in, &p->g);
	if (ret < 0)
		return ret;
	p->mdt = sdpa_mdt(c);
	depth = p->g.Dk > p->g.Dv ? p->g.Dk : p->g.Dv;
	/* Query rows per block: four warps of 4, of 2 for deeper heads,
	 * else a block per row. */
	qrows = p->g.Sq <= SDPA_FEW_ROWS ? 1 : depth <= 128 ? 16 : depth <= 256 ? 8 : 1;
	if (qrows == 16 && c->in[SDPA_IN_Q].dtype != CEP_DTYPE_FLOAT32 &&
	    cuda_backend_arch(c->be) >= 80) {
		rows = p->g.B * p->g.Hq * ((p->g.Sq + SDPA_TC_QROWS - 1) / SDPA_TC_QROWS);
		p->shmem = 0;
		snprintf(name, sizeof(name), "sdpa_tc%d_%s", depth <= 64 ? 64 : 128, sfx);
		ret = cuda_function_get(c->be, "sdpa_tc", name, &p->rows);
		if (ret < 0)
			return ret;
	} else if (qrows > 1) {
		/* sdpa.cu's sd_dq() and sd_ldk(). */
		int64_t dq = (p->g.Dk + 3) & ~(int64_t)3, ldk = dq + ((dq >> 2) & 1 ? 8 : 4);
		int64_t ld = ldk > p->g.Dv ? ldk : p->g.Dv;

		rows = p->g.B * p->g.Hq * ((p->g.Sq + qrows - 1) / qrows);
		p->shmem = (unsigned)((qrows * dq + SDPA_KEYS * ld + qrows * SDPA_KEYS) *
				      (int64_t)sizeof(float));
		snprintf(name, sizeof(name), "sdpa_tile%d_%s", (int)(qrows / 4), sfx);
	} else {
		rows = p->g.B * p->g.Hq * p->g.Sq;
		p->shmem = (unsigned)((p->g.Dk + p->g.Dv + SDPA_THREADS) * (int64_t)sizeof(float));
		snprintf(name, sizeof(name), "sdpa_rows_%s", sfx);
	}
	if (p->shmem > SDPA_SHMEM_MAX)
		return cep__set_error(CEP_EUNSUPPORTED, "Attention: heads of %lld and %lld elements "
				      "need %u bytes of shared memory, more than the %u a block has",
				      (long long)p->g.Dk, (long long)p->g.Dv, p->shmem, SDPA_SHMEM_MAX);
	p->grid = rows > (int64_t)CUDA_GRID_MAX ? CUDA_GRID_MAX : (unsigned)rows;
	if (p->rows == NULL) {
		ret = cuda_function_get(c->be, "sdpa", name, &p->rows);
		if (ret < 0)
			return ret;
	}
	snprintf(name, sizeof(name), "sdpa_concat_%s", sfx);
	return cuda_function_get(c->be, "sdpa", name, &p->concat);
}

/* Whether output i of the call is wanted. */
static bool sdpa_wanted(const struct op_call *c, int i)
{
	return i < c->n_out && op_tensor_present(&c->out[i]) && c->out[i].data != NULL;
}

/* Writes present cache out (depth elements a row) from past and now. */
static int sdpa_present(struct op_call *c, struct sdpa_params *p, int out, int past, int now,
			int64_t depth)
{
	const void *pa = p->g.P ? c->in[past].data : NULL, *nw = c->in[now].data;
	void *dst = c->out[out].data;
	void *args[] = { &pa, &nw, &dst, &p->g, &depth };

	return cuda_launch(c->be, c->stream, p->concat, cuda_grid(p->g.B * p->g.Hkv * p->g.T * depth),
			   CUDA_BLOCK, 0, args);
}

static int sdpa_run(struct op_call *c)
{
	struct sdpa_params *p = (struct sdpa_params *)c->params;
	const void *q = c->in[SDPA_IN_Q].data, *k = c->in[SDPA_IN_K].data;
	const void *v = c->in[SDPA_IN_V].data;
	const void *pk = p->g.P ? c->in[SDPA_IN_PAST_K].data : NULL;
	const void *pv = p->g.P ? c->in[SDPA_IN_PAST_V].data : NULL;
	const void *mask = p->mdt != SDPA_MDT_NONE ? c->in[SDPA_IN_MASK].data : NULL;
	const void *nonpad = p->g.nonpad ? c->in[SDPA_IN_NONPAD].data : NULL;
	void *y = c->out[SDPA_OUT_Y].data;
	void *qk = sdpa_wanted(c, SDPA_OUT_QK) ? c->out[SDPA_OUT_QK].data : NULL;
	void *args[] = { &q, &k, &v, &pk, &pv, &mask, &nonpad, &y, &qk, &p->g, &p->mdt };
	int ret;

	if (sdpa_wanted(c, SDPA_OUT_PRESENT_K)) {
		ret = sdpa_present(c, p, SDPA_OUT_PRESENT_K, SDPA_IN_PAST_K, SDPA_IN_K, p->g.Dk);
		if (ret < 0)
			return ret;
	}
	if (sdpa_wanted(c, SDPA_OUT_PRESENT_V)) {
		ret = sdpa_present(c, p, SDPA_OUT_PRESENT_V, SDPA_IN_PAST_V, SDPA_IN_V, p->g.Dv);
		if (ret < 0)
			return ret;
	}
	return cuda_launch(c->be, c->stream, p->rows, p->grid, SDPA_THREADS, p->shmem, args);
}

static const struct op_kernel kernels[] = {
	{ "", "Attention", 23, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, sdpa_prepare, sdpa_run },
};

const struct op_family op_family_cuda_sdpa = {
	"cuda_sdpa", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
