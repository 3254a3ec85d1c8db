/*
 * attention.c — the CUDA kernel of the internal Attention operator
 * (kernels/xfmr.h) for float32, float16 and bfloat16: prepare() works out
 * the geometry with the host's code (xfmr_attn_init()), so both backends
 * address the operands the same way, and picks a kernel: the tensor-core
 * one of kernels/cuda/attention_tc.cu for 16-bit types and depths up to 64
 * on sm_80 and later, else the tiled kernel of kernels/cuda/attention.cu
 * for depths up to 128 or its row kernel for deeper heads; run() launches
 * it.
 */
#include "kernels/cuda/launch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kernels/xfmr.h"

/* Twin of struct cep_attn (attention.cu). */
struct cuda_attn {
	int64_t B, H, Sq, Sk, Dk, Dv;
	int64_t q[4], k[4], v[4];
	int64_t m[4];
	int64_t o[4];
	float scale;
	int32_t has_mask;
	int32_t vec;
	int64_t q_tiles;
};

#define ATTN_QROWS 16         /* query rows per block of attn_tile (AT_QROWS) */
#define ATTN_TC_QROWS 64      /* of attn_tc64 (TC_QROWS) */
#define ATTN_TILE_THREADS 128 /* AT_WARPS and TC_WARPS warps */
#define ATTN_ROWS_THREADS 128
#define ATTN_GRID_MAX (1u << 20)

struct attn_params {
	CUfunction fn;
	struct cuda_attn a;
	unsigned grid, block, shmem; /* shmem: dynamic bytes (attn_rows) */
	int depth;                   /* the kernel's depth when it has a 16-byte
	                              * staging path (cuda_attn.vec), else 0 */
};
CUDA_PARAMS_FIT(struct attn_params);

static int attn_prepare(struct op_call *c, size_t *workspace)
{
	struct attn_params *p = (struct attn_params *)c->params;
	const char *sfx = cuda_dtype_suffix(c->in[0].dtype);
	const char *src = "attention";
	struct xfmr_attn x;
	int64_t blocks;
	char name[32];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (!op_dtype_in(c->in[0].dtype, CUDA_DTS_FLOAT) || sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "Attention: no cuda kernel for %s",
				      cep_dtype_name(c->in[0].dtype));
	ret = xfmr_attn_init(&x, c->node, c->in, c->n_in, &c->out[0]);
	if (ret < 0)
		return ret;
	if (x.Dk > XFMR_ATTN_MAX_DEPTH || x.Dv > XFMR_ATTN_MAX_DEPTH)
		return cep__set_error(CEP_EUNSUPPORTED, "Attention: heads of depth %" PRId64
				      " and %" PRId64 " are deeper than the %d the cuda kernel "
				      "takes", x.Dk, x.Dv, XFMR_ATTN_MAX_DEPTH);
	p->a = (struct cuda_attn){ .B = x.B, .H = x.H, .Sq = x.Sq, .Sk = x.Sk, .Dk = x.Dk,
				   .Dv = x.Dv, .scale = x.scale, .has_mask = x.has_mask };
	memcpy(p->a.q, x.q, sizeof(x.q));
	memcpy(p->a.k, x.k, sizeof(x.k));
	memcpy(p->a.v, x.v, sizeof(x.v));
	memcpy(p->a.m, x.m, sizeof(x.m));
	memcpy(p->a.o, x.o, sizeof(x.o));
	if (c->in[0].dtype != CEP_DTYPE_FLOAT32 && x.Dk <= 64 && x.Dv <= 64 &&
	    cuda_backend_arch(c->be) >= 80) {
		/* mma.sync of 16-bit operands came with sm_80. */
		snprintf(name, sizeof(name), "attn_tc64_%s", sfx);
		src = "attention_tc";
		p->block = ATTN_TILE_THREADS;
		p->a.q_tiles = (x.Sq + ATTN_TC_QROWS - 1) / ATTN_TC_QROWS;
		blocks = x.B * x.H * p->a.q_tiles;
		p->depth = 64;
	} else if (x.Dk <= 128 && x.Dv <= 128) {
		p->a.q_tiles = (x.Sq + ATTN_QROWS - 1) / ATTN_QROWS;
		snprintf(name, sizeof(name), "attn_tile%d_%s", x.Dk <= 64 && x.Dv <= 64 ? 64 : 128,
			 sfx);
		p->block = ATTN_TILE_THREADS;
		blocks = x.B * x.H * p->a.q_tiles;
		p->depth = x.Dk <= 64 && x.Dv <= 64 ? 64 : 128;
	} else {
		snprintf(name, sizeof(name), "attn_rows_%s", sfx);
		p->block = ATTN_ROWS_THREADS;
		p->shmem = (unsigned)((x.Dk + x.Dv + ATTN_ROWS_THREADS) * sizeof(float));
		blocks = x.B * x.H * x.Sq;
	}
	/* An empty output has nothing to write. */
	if (x.Dv == 0)
		blocks = 0;
	p->grid = blocks > (int64_t)ATTN_GRID_MAX ? ATTN_GRID_MAX : (unsigned)blocks;
	ret = cuda_function_get(c->be, src, name, &p->fn);
	if (ret < 0) {
		char why[400];

		snprintf(why, sizeof(why), "%s", cep_last_error());
		return cep__set_error(ret, "Attention: %s", why);
	}
	return 0;
}

/* Whether an operand's rows start 16-byte aligned: its address and its
 * batch, head and row strides (elements of esize bytes). */
static bool attn_rows_aligned(const void *data, const int64_t *stride, size_t esize)
{
	int64_t per = 16 / (int64_t)esize;

	return ((uintptr_t)data & 15) == 0 && stride[3] == 1 && stride[0] % per == 0 &&
	       stride[1] % per == 0 && stride[2] % per == 0;
}

static int attn_run(struct op_call *c)
{
	struct attn_params *p = (struct attn_params *)c->params;
	const void *q = c->in[0].data, *k = c->in[1].data, *v = c->in[2].data;
	const void *m = p->a.has_mask ? c->in[3].data : NULL;
	void *o = c->out[0].data;
	void *args[] = { &q, &k, &v, &m, &o, &p->a };
	size_t esize = cep_dtype_size(c->in[0].dtype);

	/* Decided here, where the addresses are known (a captured graph keeps
	 * them, and the choice with them). */
	p->a.vec = p->depth > 0 && p->a.Dk == p->depth && p->a.Dv == p->depth &&
		   attn_rows_aligned(q, p->a.q, esize) &&
		   attn_rows_aligned(k, p->a.k, esize) &&
		   attn_rows_aligned(v, p->a.v, esize);

	return cuda_launch(c->be, c->stream, p->fn, p->grid, p->block, p->shmem, args);
}

static const struct op_kernel kernels[] = {
	{ XFMR_DOMAIN, "Attention", 1, 1, BACKEND_CUDA, CUDA_DTS_FLOAT, attn_prepare, attn_run },
};

const struct op_family op_family_cuda_attention = {
	"cuda_attention", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
