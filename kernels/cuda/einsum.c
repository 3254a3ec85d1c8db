/*
 * einsum.c — the CUDA kernel of Einsum (opset 12; bfloat16 from 28) for
 * every type the reference kernel takes (kernels/cpu/einsum.c). The
 * equation is resolved against the shapes by the code the host uses
 * (kernels/cpu/einsum.h): every index a loop, each operand a stride along
 * each loop.
 *
 * A contraction of two float operands becomes one strided-batched GEMM
 * through cuBLASLt (gpu/cuda/cublaslt.h, as MatMul), when each index is
 * one of: a batch index (both operands and the output), an M index (the
 * first operand and the output), an N index (the second and the output)
 * or a K index (both operands, summed). The operands are read in place
 * when their layout already is (batch, M, K) and (batch, K, N), either
 * matrix transposed; otherwise kernels/cuda/einsum.cu's gather copies
 * them so into the workspace (a transpose, a diagonal or a broadcast on
 * the way). The product goes straight into the output when its order is
 * (batch, M, N) or (batch, N, M) (the operands swapped for the second),
 * else into the workspace, gathered into the output after. Products and
 * sums run in float32 (TF32 only in a tf32 session), rounded once.
 *
 * Everything else runs the definition itself (einsum_<type>): integers,
 * float64 (in double, the host's order, so bit for bit its results), one
 * operand or more than two, an index summed in one operand alone, a
 * sum over no elements, and calls cuBLASLt cannot take.
 *
 * The strides and the gathers' layouts do not fit call->params (256
 * bytes), so prepare() keeps which way runs, the GEMM plan and the
 * workspace layout, and run() resolves the equation again (the same
 * shapes make the same loops) to fill the kernels' arguments.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "gpu/cuda/cublaslt.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/einsum.h"

#define EINSUM_WORKSPACE_MAX ((size_t)32 << 20)

/* Twin of struct cep_einsum (einsum.cu). */
struct cuda_einsum {
	int64_t n;
	int32_t n_ops, n_out, n_loops, pad;
	int64_t size[EINSUM_MAX_LOOPS];
	int64_t stride[EINSUM_MAX_OPS][EINSUM_MAX_LOOPS];
};

/* Twin of struct cep_einsum_ops. */
struct cuda_einsum_ops {
	const void *p[EINSUM_MAX_OPS];
};

/* Twin of struct cep_einsum_gather. */
struct cuda_einsum_gather {
	int64_t n;
	int32_t rank, pad;
	int64_t dims[EINSUM_MAX_LOOPS];
	int64_t stride[EINSUM_MAX_LOOPS];
};

enum einsum_path {
	EINSUM_EMPTY,           /* no output element */
	EINSUM_GENERAL,         /* einsum_<type> */
	EINSUM_GEMM,            /* gathers around one batched GEMM */
};

/* ---------------------------------------------------------------- the GEMM */

/* Which loops a layout walks, outermost first. */
struct einsum_order {
	int n;
	int8_t loop[EINSUM_MAX_LOOPS];
};

/* An equation as one batched GEMM: C (batch, M, N) = A (batch, M, K) times
 * B (batch, K, N), each of the four a list of loops. */
struct einsum_gemm {
	int a, b;                               /* operand numbers */
	struct einsum_order lb, lm, ln, lk;
	int64_t batch, m, n, k;
	bool a_dense, a_trans;                  /* A read in place: as
	                                         * (batch, M, K), or (batch, K, M) */
	bool b_dense, b_trans;                  /* B: (batch, K, N) or (batch, N, K) */
	bool c_dense;                           /* C written into the output */
};

static void order_add(struct einsum_order *o, int l)
{
	o->loop[o->n++] = (int8_t)l;
}

/* The concatenation of up to three orders. */
static struct einsum_order order_cat(const struct einsum_order *x, const struct einsum_order *y,
				     const struct einsum_order *z)
{
	struct einsum_order r = { 0 };
	int i;

	for (i = 0; i < x->n; i++)
		order_add(&r, x->loop[i]);
	for (i = 0; i < y->n; i++)
		order_add(&r, y->loop[i]);
	for (i = 0; z != NULL && i < z->n; i++)
		order_add(&r, z->loop[i]);
	return r;
}

static int64_t order_size(const struct cpu_einsum *e, const struct einsum_order *o)
{
	int64_t s = 1;
	int i;

	for (i = 0; i < o->n; i++)
		s *= e->size[o->loop[i]];
	return s;
}

/* Whether operand op (numel elements, strides st) is exactly the dense
 * tensor of the loops of o in that order. */
static bool order_dense(const struct cpu_einsum *e, const int64_t *st, int64_t numel,
			const struct einsum_order *o)
{
	int64_t want = 1;
	int i;

	if (numel != order_size(e, o))
		return false;
	for (i = o->n - 1; i >= 0; i--) {
		if (st[o->loop[i]] != want)
			return false;
		want *= e->size[o->loop[i]];
	}
	return true;
}

static bool order_equal(const struct einsum_order *x, const struct einsum_order *y)
{
	return x->n == y->n && memcmp(x->loop, y->loop, (size_t)x->n) == 0;
}

/*
 * Works out the GEMM of e over the operands in (strides st) into *g;
 * false when the equation is not one. Loops of size 1 are left out of
 * every list: any stride walks them.
 */
static bool einsum_gemm_plan(const struct cpu_einsum *e, const struct op_tensor *in,
			     int64_t st[EINSUM_MAX_OPS][EINSUM_MAX_LOOPS], struct einsum_gemm *g)
{
	struct einsum_order out = { 0 }, want;
	int l, i, j;

	memset(g, 0, sizeof(*g));
	if (e->n_ops != 2 || !cpu_is_float(in[0].dtype) || in[0].dtype == CEP_DTYPE_FLOAT64)
		return false;
	g->a = 0;
	g->b = 1;
	for (l = 0; l < e->n_loops; l++) {
		bool sa = st[0][l] != 0, sb = st[1][l] != 0, o = l < e->n_out;

		if (e->size[l] == 0 && !o)
			return false;           /* a sum over nothing: zeros */
		if (e->size[l] <= 1)
			continue;
		if (o)
			order_add(&out, l);
		if (o && sa == sb)
			order_add(&g->lb, l);   /* both, or broadcast in both */
		else if (o && sa)
			order_add(&g->lm, l);
		else if (o)
			order_add(&g->ln, l);
		else if (sa && sb)
			order_add(&g->lk, l);
		else
			return false;           /* summed in one operand alone */
	}
	/* K in A's order, so that A in its own layout reads in place. */
	for (i = 1; i < g->lk.n; i++) {
		for (j = i; j > 0 && st[0][g->lk.loop[j]] > st[0][g->lk.loop[j - 1]]; j--) {
			int8_t t = g->lk.loop[j];

			g->lk.loop[j] = g->lk.loop[j - 1];
			g->lk.loop[j - 1] = t;
		}
	}
	/* The output as (batch, N, M): the same GEMM with the operands
	 * swapped. */
	want = order_cat(&g->lb, &g->lm, &g->ln);
	g->c_dense = order_equal(&out, &want);
	want = order_cat(&g->lb, &g->ln, &g->lm);
	if (!g->c_dense && order_equal(&out, &want)) {
		struct einsum_order t = g->lm;

		g->lm = g->ln;
		g->ln = t;
		g->a = 1;
		g->b = 0;
		g->c_dense = true;
	}
	g->batch = order_size(e, &g->lb);
	g->m = order_size(e, &g->lm);
	g->n = order_size(e, &g->ln);
	g->k = order_size(e, &g->lk);
	want = order_cat(&g->lb, &g->lm, &g->lk);
	g->a_dense = order_dense(e, st[g->a], op_dims_product(&in[g->a], 0, in[g->a].rank), &want);
	if (!g->a_dense) {
		want = order_cat(&g->lb, &g->lk, &g->lm);
		g->a_dense = g->a_trans = order_dense(e, st[g->a],
						      op_dims_product(&in[g->a], 0, in[g->a].rank),
						      &want);
	}
	want = order_cat(&g->lb, &g->lk, &g->ln);
	g->b_dense = order_dense(e, st[g->b], op_dims_product(&in[g->b], 0, in[g->b].rank), &want);
	if (!g->b_dense) {
		want = order_cat(&g->lb, &g->ln, &g->lk);
		g->b_dense = g->b_trans = order_dense(e, st[g->b],
						      op_dims_product(&in[g->b], 0, in[g->b].rank),
						      &want);
	}
	return g->m > 0 && g->n > 0 && g->k > 0 && g->batch > 0;
}

/* The gather of operand st (strides) into the dense tensor of order o. */
static void gather_of(const struct cpu_einsum *e, const int64_t *st, const struct einsum_order *o,
		      struct cuda_einsum_gather *k)
{
	int i;

	memset(k, 0, sizeof(*k));
	k->n = order_size(e, o);
	k->rank = o->n > 0 ? o->n : 1;
	k->dims[0] = 1;
	for (i = 0; i < o->n; i++) {
		k->dims[i] = e->size[o->loop[i]];
		k->stride[i] = st[o->loop[i]];
	}
}

/* The gather of C (batch, M, N), dense, into the output (every output
 * loop in order). */
static void gather_out(const struct cpu_einsum *e, const struct einsum_gemm *g,
		       struct cuda_einsum_gather *k)
{
	struct einsum_order c = order_cat(&g->lb, &g->lm, &g->ln);
	int64_t cst[EINSUM_MAX_LOOPS] = { 0 }, s = 1;
	int i;

	for (i = c.n - 1; i >= 0; i--) {
		cst[c.loop[i]] = s;
		s *= e->size[c.loop[i]];
	}
	memset(k, 0, sizeof(*k));
	k->n = 1;
	k->rank = e->n_out > 0 ? e->n_out : 1;
	k->dims[0] = 1;
	for (i = 0; i < e->n_out; i++) {
		k->dims[i] = e->size[i];
		k->stride[i] = e->size[i] > 1 ? cst[i] : 0;
		k->n *= e->size[i];
	}
}

/* ---------------------------------------------------------------- the call */

struct einsum_params {
	int32_t path;                        /* enum einsum_path */
	int32_t a_copy, b_copy, c_copy;      /* 1: gathered through the workspace */
	int32_t swap;                        /* 1: the GEMM's A is operand 1 */
	int32_t pad;
	CUfunction fn;                       /* einsum_<type> or einsum_gather_<bytes> */
	struct cublaslt *lt;                 /* the backend's */
	const struct cublaslt_gemm *gemm;
	size_t a_off, b_off, c_off, lt_off;  /* workspace offsets, multiples of 256 */
};
CUDA_PARAMS_FIT(struct einsum_params);

static size_t round256(size_t v)
{
	return (v + 255) / 256 * 256;
}

/* The widest power of two up to 256 that divides the byte stride v. */
static uint32_t align_of(int64_t v)
{
	uint32_t a = 256;

	while (v != 0 && v % a != 0)
		a /= 2;
	return a;
}

/* Turns the failure of a cuBLASLt step into the operator's error. */
static int einsum_blame(int err)
{
	char why[400];

	snprintf(why, sizeof(why), "%s", cep_last_error());
	return cep__set_error(err, "Einsum: %s", why);
}

/* Sets up the GEMM way; 0 when it takes the call, 1 when the general
 * kernel must (cuBLASLt absent or refusing: the error is cleared), or an
 * error. */
static int einsum_gemm_prepare(struct op_call *c, const struct einsum_gemm *g,
			       struct einsum_params *p, size_t *workspace)
{
	const struct op_tensor *y = &c->out[0];
	int64_t es = (int64_t)cep_dtype_size(y->dtype);
	struct cublaslt_gemm_desc d;
	size_t at = 0;
	char name[32];
	int ret;

	if (cuda_blas_get(c->be, &p->lt) < 0) {
		if (!cuda_backend_is(c->be))
			return einsum_blame(CEP_EINVAL);
		cep__clear_error();
		return 1;
	}
	p->swap = g->a != 0;
	p->a_copy = !g->a_dense;
	p->b_copy = !g->b_dense;
	p->c_copy = !g->c_dense;
	if (p->a_copy) {
		p->a_off = at;
		at += round256((size_t)(g->batch * g->m * g->k * es));
	}
	if (p->b_copy) {
		p->b_off = at;
		at += round256((size_t)(g->batch * g->k * g->n * es));
	}
	if (p->c_copy) {
		p->c_off = at;
		at += round256((size_t)(g->batch * g->m * g->n * es));
	}
	p->lt_off = at;
	/* Row-major C = A B is column-major C^T = B^T A^T: cuBLASLt's first
	 * operand is B. A gathered copy is never transposed. */
	cublaslt_gemm_desc_init(&d);
	d.dtype = y->dtype;
	d.tf32 = y->dtype == CEP_DTYPE_FLOAT32 && (c->flags & OP_CALL_TF32) != 0;
	d.m = g->n;
	d.n = g->m;
	d.k = g->k;
	d.trans_a = g->b_dense && g->b_trans;
	d.trans_b = g->a_dense && g->a_trans;
	d.lda = d.trans_a ? g->k : g->n;
	d.ldb = d.trans_b ? g->m : g->k;
	d.ldd = g->n;
	d.batch = g->batch;
	if (g->batch > 1) {
		d.stride_a = g->k * g->n;
		d.stride_b = g->m * g->k;
		d.stride_d = g->m * g->n;
	}
	d.align_a = align_of(d.stride_a * es);
	d.align_b = align_of(d.stride_b * es);
	d.align_d = align_of(d.stride_d * es);
	ret = cublaslt_gemm_get(p->lt, &d, EINSUM_WORKSPACE_MAX, &p->gemm);
	if (ret == CEP_EINVAL || ret == CEP_ENOTSUP) {
		cep__clear_error();
		return 1;
	}
	if (ret < 0)
		return einsum_blame(ret);
	*workspace = at + cublaslt_gemm_workspace(p->gemm);
	p->path = EINSUM_GEMM;
	if (!p->a_copy && !p->b_copy && !p->c_copy)
		return 0;
	snprintf(name, sizeof(name), "einsum_gather_%d", (int)es);
	return cuda_function_get(c->be, "einsum", name, &p->fn);
}

static int einsum_prepare(struct op_call *c, size_t *workspace)
{
	struct einsum_params *p = (struct einsum_params *)c->params;
	const struct op_tensor *y = &c->out[0];
	const char *sfx = cuda_dtype_suffix(y->dtype);
	int64_t st[EINSUM_MAX_OPS][EINSUM_MAX_LOOPS];
	struct einsum_gemm g;
	struct cpu_einsum e;
	char name[24];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL || y->dtype == CEP_DTYPE_BOOL)
		return cep__set_error(CEP_EDTYPE, "Einsum: no cuda kernel for %s",
				      cep_dtype_name(y->dtype));
	ret = cpu_einsum_parse(c->node, c->in, c->n_in, &e);
	if (ret < 0)
		return ret;
	if (op_dims_product(y, 0, y->rank) == 0) {
		p->path = EINSUM_EMPTY;
		return 0;
	}
	cpu_einsum_strides(&e, c->in, st);
	if (einsum_gemm_plan(&e, c->in, st, &g)) {
		ret = einsum_gemm_prepare(c, &g, p, workspace);
		if (ret <= 0)
			return ret;
		memset(p, 0, sizeof(*p));
		*workspace = 0;
	}
	p->path = EINSUM_GENERAL;
	snprintf(name, sizeof(name), "einsum_%s", sfx);
	return cuda_function_get(c->be, "einsum", name, &p->fn);
}

/* Queues the gather k from src into dst. */
static int einsum_gather_run(struct op_call *c, CUfunction fn, const void *src, void *dst,
			     struct cuda_einsum_gather *k)
{
	void *args[] = { &src, &dst, k };

	return cuda_launch(c->be, c->stream, fn, cuda_grid(k->n), CUDA_BLOCK, 0, args);
}

static int einsum_gemm_run(struct op_call *c, const struct einsum_params *p,
			   const struct cpu_einsum *e, int64_t st[EINSUM_MAX_OPS][EINSUM_MAX_LOOPS])
{
	struct einsum_gemm g;
	struct cuda_einsum_gather k;
	struct einsum_order o;
	char *ws = c->workspace;
	const void *a, *b;
	void *out = c->out[0].data;
	int ret = 0;

	einsum_gemm_plan(e, c->in, st, &g);
	a = c->in[g.a].data;
	b = c->in[g.b].data;
	if (p->a_copy) {
		o = order_cat(&g.lb, &g.lm, &g.lk);
		gather_of(e, st[g.a], &o, &k);
		ret = einsum_gather_run(c, p->fn, a, ws + p->a_off, &k);
		a = ws + p->a_off;
	}
	if (ret == 0 && p->b_copy) {
		o = order_cat(&g.lb, &g.lk, &g.ln);
		gather_of(e, st[g.b], &o, &k);
		ret = einsum_gather_run(c, p->fn, b, ws + p->b_off, &k);
		b = ws + p->b_off;
	}
	if (ret < 0)
		return ret;
	ret = cublaslt_gemm_run(p->lt, p->gemm, cuda_stream_handle(c->stream), b, a, NULL,
				p->c_copy ? ws + p->c_off : out, NULL, ws + p->lt_off);
	if (ret < 0)
		return einsum_blame(ret);
	if (!p->c_copy)
		return 0;
	gather_out(e, &g, &k);
	return einsum_gather_run(c, p->fn, ws + p->c_off, out, &k);
}

static int einsum_run(struct op_call *c)
{
	const struct einsum_params *p = (const struct einsum_params *)c->params;
	int64_t st[EINSUM_MAX_OPS][EINSUM_MAX_LOOPS];
	struct cuda_einsum k;
	struct cuda_einsum_ops ops;
	struct cpu_einsum e;
	void *y = c->out[0].data;
	void *args[] = { &ops, &y, &k };
	int o, l, ret;

	if (p->path == EINSUM_EMPTY)
		return 0;
	/* The same shapes resolve to the same loops as in prepare(). */
	ret = cpu_einsum_parse(c->node, c->in, c->n_in, &e);
	if (ret < 0)
		return ret;
	cpu_einsum_strides(&e, c->in, st);
	if (p->path == EINSUM_GEMM)
		return einsum_gemm_run(c, p, &e, st);
	memset(&k, 0, sizeof(k));
	memset(&ops, 0, sizeof(ops));
	k.n = op_dims_product(&c->out[0], 0, c->out[0].rank);
	k.n_ops = e.n_ops;
	k.n_out = e.n_out;
	k.n_loops = e.n_loops;
	for (l = 0; l < e.n_loops; l++)
		k.size[l] = e.size[l];
	for (o = 0; o < e.n_ops; o++) {
		ops.p[o] = c->in[o].data;
		for (l = 0; l < e.n_loops; l++)
			k.stride[o][l] = st[o][l];
	}
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(k.n), CUDA_BLOCK, 0, args);
}

/* ------------------------------------------------------------------- table */

/* T of opset 12 among the stored types: no bfloat16, no bool. */
#define EINSUM_DTS_12 ((OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16)) | OP_DTS_INT)

static const struct op_kernel kernels[] = {
	{ "", "Einsum", 12, 27, BACKEND_CUDA, EINSUM_DTS_12, einsum_prepare, einsum_run },
	{ "", "Einsum", 28, OP_OPSET_MAX, BACKEND_CUDA, EINSUM_DTS_12 | OP_DT(CEP_DTYPE_BFLOAT16),
	  einsum_prepare, einsum_run },
};

const struct op_family op_family_cuda_einsum = {
	"cuda_einsum", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
