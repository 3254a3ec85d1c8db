/*
 * test_cuda_xfmr.c — the CUDA kernels of the transformer fusions against
 * the host's reference kernels on fresh random data, printing the worst
 * absolute and relative error of each case:
 *
 *   MatMulBias  one cuBLASLt GEMM with its bias epilogue and no, ReLU,
 *               exact (erf) or tanh GELU, for X of rank 2 and 3, odd
 *               sizes, K = 1 and K = 0, every float type;
 *   Attention   BERT's shape (B 2, H 12, S 128, D 64) read and written in
 *               [B, S, H, D] order, S up to 512, K given transposed,
 *               queries and keys of different counts, depths 32 to 256
 *               (the tensor-core kernel takes 16-bit types up to 64,
 *               the tiled one float32 and up to 128, the row kernel the
 *               rest), Q broadcast over the batch, masks
 *               [B,1,1,S] and [B,1,S,S] with -10000, the type's lowest
 *               value and -inf (rows wholly masked are NaN on both
 *               sides), every float type;
 *   an encoder layer through the engine: the fused model on the device
 *               against the host, captured and replayed, allocating
 *               nothing once warm.
 *
 * float32 within 1e-4 relative (TF32 off) and 1e-4 of the output's root
 * mean square where sums cancel; float16 and bfloat16 within 1e-2 and 1e-2
 * of the root mean square (cuBLASLt's bias epilogue rounds the product to
 * the output type before it adds the bias, a unit of the product's last
 * place where product and bias cancel).
 *
 * Everywhere: the registry has a CUDA kernel of both operators for every
 * float type, and they refuse a backend that is not CUDA. On a GPU
 * machine with CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips,
 * visibly.
 */
#include "tests/unit/cuda_util.h"

#include "engine/engine.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"
#include "kernels/xfmr.h"

static const cep_dtype float_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16,
};

#define N_FLOATS (sizeof(float_types) / sizeof(float_types[0]))

/* ------------------------------------------------------------ everywhere */

Test(cuda_xfmr, the_device_covers_the_internal_operators_for_every_float_type)
{
	static const char *const ops[] = { "MatMulBias", "Attention" };
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	size_t i, t;

	for (i = 0; i < 2; i++) {
		cr_assert_eq(op_schema_find(XFMR_DOMAIN, ops[i], 1, &s), 0, "%s", cep_last_error());
		for (t = 0; t < N_FLOATS; t++) {
			cr_assert_eq(op_kernel_find(s, 1, BACKEND_HOST, float_types[t], &host), 0);
			cr_assert_eq(op_kernel_find(s, 1, BACKEND_CUDA, float_types[t], &dev), 0, "%s",
				     cep_last_error());
			cr_assert_eq(dev->backend, BACKEND_CUDA);
		}
		cr_assert_neq(op_kernel_find(s, 1, BACKEND_CUDA, CEP_DTYPE_INT32, &dev), 0);
	}
}

Test(cuda_xfmr, the_kernels_refuse_a_backend_that_is_not_cuda)
{
	static const char *const ops[] = { "MatMulBias", "Attention" };
	struct op_tensor in[2][3] = {
		{
			{ .dtype = CEP_DTYPE_FLOAT32, .rank = 2, .dims = { 4, 8 } },
			{ .dtype = CEP_DTYPE_FLOAT32, .rank = 2, .dims = { 8, 3 } },
			{ .dtype = CEP_DTYPE_FLOAT32, .rank = 1, .dims = { 3 } },
		},
		{
			{ .dtype = CEP_DTYPE_FLOAT32, .rank = 4, .dims = { 1, 2, 5, 8 } },
			{ .dtype = CEP_DTYPE_FLOAT32, .rank = 4, .dims = { 1, 2, 5, 8 } },
			{ .dtype = CEP_DTYPE_FLOAT32, .rank = 4, .dims = { 1, 2, 5, 8 } },
		},
	};
	struct op_tensor out[2] = {
		{ .dtype = CEP_DTYPE_FLOAT32, .rank = 2, .dims = { 4, 3 } },
		{ .dtype = CEP_DTYPE_FLOAT32, .rank = 4, .dims = { 1, 2, 5, 8 } },
	};
	struct op_node node = { .name = "n", .domain = XFMR_DOMAIN, .opset = 1 };
	struct op_call *call = calloc(1, sizeof(*call));
	const struct op_schema *s;
	const struct op_kernel *k;
	struct backend *host = NULL;
	size_t ws = 0, i;

	cr_assert_eq(backend_host_new(0, &host), 0, "%s", cep_last_error());
	for (i = 0; i < 2; i++) {
		node.op_type = ops[i];
		cr_assert_eq(op_schema_find(XFMR_DOMAIN, ops[i], 1, &s), 0);
		cr_assert_eq(op_kernel_find(s, 1, BACKEND_CUDA, CEP_DTYPE_FLOAT32, &k), 0);
		*call = (struct op_call){ .node = &node, .n_in = 3, .n_out = 1, .in = in[i],
					  .out = &out[i], .be = host };
		cr_assert_eq(k->prepare(call, &ws), CEP_EINVAL);
		cr_assert_eq(strncmp(cep_last_error(), ops[i], strlen(ops[i])), 0, "%s",
			     cep_last_error());
		cr_assert_not_null(strstr(cep_last_error(), "cuda backend"), "%s", cep_last_error());
	}
	backend_free(host);
	free(call);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_xfmr, .init = gpu_setup, .fini = gpu_teardown, .timeout = 900);

/* A prepared device call of an internal operator with its workspace. */
struct xcall {
	struct dev_call d;
	void *ws;                /* device memory, or NULL */
	size_t ws_bytes;
};

static void xcall_make(struct xcall *x, const char *op, const struct op_attr *attrs,
		       int n_attrs, const struct op_tensor *in, int n_in)
{
	struct dev_call *d = &x->d;
	int i;

	memset(x, 0, sizeof(*x));
	d->node = (struct op_node){ .name = "n", .op_type = op, .domain = XFMR_DOMAIN, .opset = 1,
				    .n_attrs = n_attrs, .attrs = attrs };
	infer_out(&d->node, &d->schema, in, n_in, &d->out);
	cr_assert_eq(op_kernel_find(d->schema, 1, BACKEND_CUDA, in[0].dtype, &d->kernel), 0, "%s",
		     cep_last_error());
	for (i = 0; i < n_in; i++) {
		d->in[i] = in[i];
		if (op_tensor_present(&in[i]))
			d->in[i].data = dev_put(in[i].data, op_tensor_bytes(&in[i]));
	}
	cr_assert_eq(backend_mem_alloc(gpu_be, op_tensor_bytes(&d->out), &d->out.data), 0,
		     "%s", cep_last_error());
	dev_poison(d->out.data, op_tensor_bytes(&d->out));
	d->call = calloc(1, sizeof(*d->call));
	d->call->node = &d->node;
	d->call->n_in = n_in;
	d->call->n_out = 1;
	d->call->in = d->in;
	d->call->out = &d->out;
	d->call->be = gpu_be;
	cr_assert_eq(d->kernel->prepare(d->call, &x->ws_bytes), 0, "%s: %s", op,
		     cep_last_error());
	if (x->ws_bytes > 0) {
		cr_assert_eq(backend_mem_alloc(gpu_be, x->ws_bytes, &x->ws), 0, "%s",
			     cep_last_error());
		d->call->workspace = x->ws;
		d->call->workspace_bytes = x->ws_bytes;
	}
}

static void xcall_free(struct xcall *x)
{
	if (x->ws != NULL)
		backend_mem_free(gpu_be, x->ws, x->ws_bytes);
	dev_call_free(&x->d);
}

/* The tolerance of the brief: 1e-4 for float32, 1e-2 for 16-bit types,
 * relative and of the root mean square. */
static double xfmr_tol(cep_dtype t)
{
	return t == CEP_DTYPE_FLOAT32 ? 1e-4 : 1e-2;
}

/* Runs op on the device and on the host over the host inputs in and
 * compares; returns the mismatches. */
static int64_t check_xfmr(const char *op, const struct op_attr *attrs, int n_attrs,
			  const struct op_tensor *in, int n_in, const char *label)
{
	const struct op_kernel *host;
	struct xcall x;
	struct op_tensor ref;
	size_t bytes;
	void *got;
	char what[200];
	double tol;
	int64_t bad;

	xcall_make(&x, op, attrs, n_attrs, in, n_in);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, x.d.kernel->run, x.d.call), 0, "%s: %s", op,
		     cep_last_error());
	ref = x.d.out;
	ref.data = NULL;
	cr_assert_eq(op_kernel_find(x.d.schema, 1, BACKEND_HOST, in[0].dtype, &host), 0);
	cr_assert_eq(exec_host_eval(&x.d.node, host, in, n_in, &ref, 1), 0, "%s",
		     cep_last_error());
	bytes = op_tensor_bytes(&ref);
	got = malloc(bytes ? bytes : 1);
	dev_get(got, x.d.out.data, bytes);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s: %s", op, cep_last_error());
	tol = xfmr_tol(ref.dtype);
	snprintf(what, sizeof(what), "%s %s", op, label);
	bad = compare_tensor(what, &ref, got, tol, tol * rms(&ref));
	free(got);
	free(ref.data);
	xcall_free(&x);
	return bad;
}

/* Multiplies every element of float tensor t by f. */
static void scale_tensor(struct op_tensor *t, float f)
{
	int64_t n = op_dims_product(t, 0, t->rank), i;

	for (i = 0; i < n; i++)
		cpu_store_f(t->data, t->dtype, i, f * cpu_load_f(t->data, t->dtype, i));
}

Test(gpu_xfmr, matmulbias_with_every_activation_and_type)
{
	static const char *const acts[] = { "none", "relu", "gelu", "gelu_tanh" };
	static const char *const shapes[][3] = {
		{ "7,16", "16,24", "24" },
		{ "2,128,768", "768,64", "64" },    /* BERT's rows, a head's width */
		{ "3,5,33", "33,17", "1,17" },      /* odd sizes, a [1, N] bias */
		{ "9,1", "1,40", "40" },            /* K = 1 */
		{ "4,0", "0,8", "8" },              /* K = 0: act(bias) */
		{ "0,16", "16,8", "8" },            /* no rows */
	};
	unsigned seed = 1709u ^ (unsigned)getpid();
	struct op_attr act = { .name = "activation", .type = OP_ATTR_STRING };
	struct op_tensor in[3];
	char label[160];
	int64_t bad = 0;
	size_t t, k, a;

	GPU_REQUIRE();
	for (t = 0; t < N_FLOATS; t++) {
		for (k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
			for (a = 0; a < 4; a++) {
				act.s = acts[a];
				in[0] = host_tensor(float_types[t], shapes[k][0], &seed, false);
				in[1] = host_tensor(float_types[t], shapes[k][1], &seed, false);
				in[2] = host_tensor(float_types[t], shapes[k][2], &seed, false);
				/* Sums of the order of the bias and the activations' bends. */
				scale_tensor(&in[1], 0.25f / sqrtf((float)in[1].dims[0] + 1.0f));
				snprintf(label, sizeof(label), "%s [%s] x [%s] + [%s], %s",
					 cep_dtype_name(float_types[t]), shapes[k][0], shapes[k][1],
					 shapes[k][2], acts[a]);
				bad += check_xfmr("MatMulBias", &act, 1, in, 3, label);
				free_inputs(in, 3);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* MatMulBias with a residual fourth input (activation none): cuBLASLt's C
 * with beta 1, or a copy that the bias pass adds to when K is 0. */
Test(gpu_xfmr, matmulbias_with_a_residual)
{
	static const char *const shapes[][4] = {
		{ "7,16", "16,24", "24", "7,24" },
		{ "2,128,768", "768,64", "64", "2,128,64" },
		{ "3,5,33", "33,17", "1,17", "3,5,17" },
		{ "4,0", "0,8", "8", "4,8" },       /* K = 0: bias + R */
		{ "0,16", "16,8", "8", "0,8" },     /* no rows */
	};
	unsigned seed = 3301u ^ (unsigned)getpid();
	struct op_attr act = { .name = "activation", .type = OP_ATTR_STRING, .s = "none" };
	struct op_tensor in[4];
	char label[160];
	int64_t bad = 0;
	size_t t, k, i;

	GPU_REQUIRE();
	for (t = 0; t < N_FLOATS; t++) {
		for (k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
			for (i = 0; i < 4; i++)
				in[i] = host_tensor(float_types[t], shapes[k][i], &seed, false);
			scale_tensor(&in[1], 0.25f / sqrtf((float)in[1].dims[0] + 1.0f));
			snprintf(label, sizeof(label), "%s [%s] x [%s] + [%s] + R [%s]",
				 cep_dtype_name(float_types[t]), shapes[k][0], shapes[k][1],
				 shapes[k][2], shapes[k][3]);
			bad += check_xfmr("MatMulBias", &act, 1, in, 4, label);
			free_inputs(in, 4);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* A case of Attention: sizes, the layouts its operands are stored in, the
 * mask. */
struct attn_case {
	int64_t B, H, Sq, Sk, Dk, Dv;
	bool bshd;               /* Q, V and O stored [B, S, H, D], K too */
	bool k_t;                /* K stored [B, H, D, S] (MatMul's K^T) */
	bool q_bcast;            /* Q's batch is 1, broadcast */
	int mask;                /* 0 none, 1 [B,1,1,Sk], 2 [B,1,Sq,Sk] */
};

/* Axes attributes: where (b, h, s, d) are stored. */
static const int64_t axes_bhsd[4] = { 0, 1, 2, 3 }, axes_bshd[4] = { 0, 2, 1, 3 };
static const int64_t axes_bhds[4] = { 0, 1, 3, 2 };

/* A rank-4 host tensor of logical (b, h, s, d) sizes stored through axes. */
static struct op_tensor attn_tensor(cep_dtype t, int64_t b, int64_t h, int64_t s, int64_t d,
				    const int64_t *axes, float scale, unsigned *seed)
{
	int64_t l[4] = { b, h, s, d };
	char shape[96];
	int64_t dims[4];
	int i;

	for (i = 0; i < 4; i++)
		dims[axes[i]] = l[i];
	snprintf(shape, sizeof(shape), "%lld,%lld,%lld,%lld", (long long)dims[0],
		 (long long)dims[1], (long long)dims[2], (long long)dims[3]);
	{
		struct op_tensor x = host_tensor(t, shape, seed, false);

		scale_tensor(&x, scale);
		return x;
	}
}

/* Mask values: 0 mostly; -10000, the type's lowest and -inf in places;
 * with wholly masked rows when full (a [B,1,Sq,Sk] mask). */
static void attn_mask_fill(struct op_tensor *m, bool full, unsigned *seed)
{
	int64_t n = op_dims_product(m, 0, m->rank), sk = m->dims[m->rank - 1], i;
	float lowest = m->dtype == CEP_DTYPE_FLOAT16 ? -65504.0f : -3.38e38f;

	for (i = 0; i < n; i++) {
		unsigned r = rnd(seed) % 100;

		cpu_store_f(m->data, m->dtype, i, r < 20 ? -10000.0f : r < 30 ? lowest :
						  r < 35 ? -INFINITY : 0.0f);
	}
	/* The first key of every row visible, but for the masked rows. */
	for (i = 0; i < n; i += sk)
		cpu_store_f(m->data, m->dtype, i, 0.0f);
	if (full) {
		for (i = 0; i < sk; i++)
			cpu_store_f(m->data, m->dtype, 3 * sk + i, -INFINITY);
	}
}

Test(gpu_xfmr, attention_of_every_shape_mask_and_type)
{
	static const struct attn_case cases[] = {
		{ 2, 12, 128, 128, 64, 64, true, false, false, 1 },   /* BERT-base */
		{ 1, 4, 512, 512, 64, 64, false, true, false, 2 },    /* S 512, K^T */
		{ 3, 2, 77, 77, 64, 64, false, false, false, 0 },     /* odd S, no mask */
		{ 2, 3, 10, 200, 64, 64, true, false, false, 1 },     /* Sq != Sk */
		{ 2, 2, 33, 40, 32, 32, false, false, true, 2 },      /* Q broadcast */
		{ 1, 3, 50, 50, 80, 128, false, true, false, 1 },     /* the 128 kernel */
		{ 1, 2, 20, 70, 256, 96, true, false, false, 2 },     /* the row kernel */
		{ 2, 1, 5, 3, 7, 5, false, false, false, 1 },         /* tiny and odd */
	};
	unsigned seed = 4099u ^ (unsigned)getpid();
	struct op_attr attrs[5] = {
		{ .name = "q_axes", .type = OP_ATTR_INTS, .n = 4 },
		{ .name = "k_axes", .type = OP_ATTR_INTS, .n = 4 },
		{ .name = "v_axes", .type = OP_ATTR_INTS, .n = 4 },
		{ .name = "out_axes", .type = OP_ATTR_INTS, .n = 4 },
		{ .name = "scale", .type = OP_ATTR_FLOAT },
	};
	struct op_tensor in[4];
	char label[200], mshape[64];
	int64_t bad = 0;
	size_t t, k;

	GPU_REQUIRE();
	for (t = 0; t < N_FLOATS; t++) {
		for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
			const struct attn_case *c = &cases[k];
			const int64_t *lay = c->bshd ? axes_bshd : axes_bhsd;
			const int64_t *klay = c->k_t ? axes_bhds : lay;
			cep_dtype dt = float_types[t];
			int n_in = c->mask ? 4 : 3;

			attrs[0].ints = lay;
			attrs[1].ints = klay;
			attrs[2].ints = lay;
			attrs[3].ints = lay;
			attrs[4].f = 1.0f / sqrtf((float)c->Dk);
			/* Q and K in [-1, 1]: scores of a few units, softmax not one-hot. */
			in[0] = attn_tensor(dt, c->q_bcast ? 1 : c->B, c->H, c->Sq, c->Dk, lay, 0.25f,
					    &seed);
			in[1] = attn_tensor(dt, c->B, c->H, c->Sk, c->Dk, klay, 0.25f, &seed);
			in[2] = attn_tensor(dt, c->B, c->H, c->Sk, c->Dv, lay, 1.0f, &seed);
			if (c->mask) {
				snprintf(mshape, sizeof(mshape), "%lld,1,%lld,%lld", (long long)c->B,
					 (long long)(c->mask == 2 ? c->Sq : 1), (long long)c->Sk);
				in[3] = host_tensor(dt, mshape, &seed, false);
				attn_mask_fill(&in[3], c->mask == 2 && c->Sq > 3, &seed);
			}
			snprintf(label, sizeof(label), "%s B%lld H%lld Sq%lld Sk%lld Dk%lld Dv%lld%s%s%s "
				 "mask %s", cep_dtype_name(dt), (long long)c->B, (long long)c->H,
				 (long long)c->Sq, (long long)c->Sk, (long long)c->Dk, (long long)c->Dv,
				 c->bshd ? " [B,S,H,D]" : "", c->k_t ? " K^T" : "",
				 c->q_bcast ? " Q[1,..]" : "", c->mask ? mshape : "none");
			bad += check_xfmr("Attention", attrs, 5, in, n_in, label);
			free_inputs(in, n_in);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* ------------------------------------------------ through the engine */

#define L_B 2
#define L_S 16
#define L_D 64
#define L_H 4
#define L_DH 16
#define L_F 128

/* Adds initializer name of shape with random values scaled by f. */
static void layer_init(struct onnxb *b, const char *name, const char *shape, float f,
		       unsigned *seed)
{
	struct op_tensor t = host_tensor(CEP_DTYPE_FLOAT32, shape, seed, false);

	scale_tensor(&t, f);
	onnxb_init(b, name, CEP_DTYPE_FLOAT32, shape, t.data);
	free(t.data);
}

/* One BERT encoder layer over x [2, 16, 64] with a mask [2, 1, 1, 16]
 * already extended: Linears with bias, heads split by Reshape and
 * Transpose, scaled scores plus mask, Softmax, the context merged, the
 * output projection, residual, LayerNormalization, an Erf-GELU
 * feed-forward, residual, LayerNormalization. */
static engine_model *layer_model(unsigned *seed)
{
	static const int64_t split[4] = { L_B, L_S, L_H, L_DH }, merge[3] = { L_B, L_S, L_D };
	static const int64_t to_bhsd[4] = { 0, 2, 1, 3 }, to_bhds[4] = { 0, 2, 3, 1 };
	static const float c4 = 4.0f, sqrt2 = 1.4142135f, one = 1.0f, half = 0.5f;
	struct onnxb *b = onnxb_new(17);
	engine_model *m = NULL;
	Onnx__NodeProto *n;
	char w[16], bias[16], mm[16], lin[16], r[16], h[16], in2[48];
	uint8_t *buf;
	size_t len;
	int i;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,16,64");
	onnxb_input(b, "ext", CEP_DTYPE_FLOAT32, "2,1,1,16");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "2,16,64");
	onnxb_init(b, "split", CEP_DTYPE_INT64, "4", split);
	onnxb_init(b, "merge", CEP_DTYPE_INT64, "3", merge);
	onnxb_init(b, "c4", CEP_DTYPE_FLOAT32, "", &c4);
	onnxb_init(b, "sqrt2", CEP_DTYPE_FLOAT32, "", &sqrt2);
	onnxb_init(b, "one", CEP_DTYPE_FLOAT32, "", &one);
	onnxb_init(b, "half", CEP_DTYPE_FLOAT32, "", &half);
	for (i = 0; i < 6; i++) {
		static const char names[] = "qkvo12";
		static const char *const wshape[6] = { "64,64", "64,64", "64,64", "64,64",
						       "64,128", "128,64" };
		static const char *const bshape[6] = { "64", "64", "64", "64", "128", "64" };

		snprintf(w, sizeof(w), "w%c", names[i]);
		snprintf(bias, sizeof(bias), "b%c", names[i]);
		layer_init(b, w, wshape[i], 0.125f, seed);
		layer_init(b, bias, bshape[i], 0.05f, seed);
	}
	layer_init(b, "g1", "64", 0.25f, seed);
	layer_init(b, "e1", "64", 0.1f, seed);
	layer_init(b, "g2", "64", 0.25f, seed);
	layer_init(b, "e2", "64", 0.1f, seed);
	for (i = 0; i < 3; i++) {
		const char p = "qkv"[i];

		snprintf(mm, sizeof(mm), "%cmm", p);
		snprintf(lin, sizeof(lin), "%cl", p);
		snprintf(r, sizeof(r), "%cr", p);
		snprintf(h, sizeof(h), "%ch", p);
		snprintf(in2, sizeof(in2), "x,w%c", p);
		onnxb_node(b, "MatMul", in2, mm);
		snprintf(in2, sizeof(in2), "%s,b%c", mm, p);
		onnxb_node(b, "Add", in2, lin);
		snprintf(in2, sizeof(in2), "%s,split", lin);
		onnxb_node(b, "Reshape", in2, r);
		n = onnxb_node(b, "Transpose", r, h);
		onnxb_attr_ints(n, "perm", 4, p == 'k' ? to_bhds : to_bhsd);
	}
	onnxb_node(b, "MatMul", "qh,kh", "scores");
	onnxb_node(b, "Div", "scores,c4", "scaled");
	onnxb_node(b, "Add", "scaled,ext", "masked");
	n = onnxb_node(b, "Softmax", "masked", "probs");
	onnxb_attr_int(n, "axis", -1);
	onnxb_node(b, "MatMul", "probs,vh", "ctx");
	n = onnxb_node(b, "Transpose", "ctx", "ctxt");
	onnxb_attr_ints(n, "perm", 4, to_bhsd);
	onnxb_node(b, "Reshape", "ctxt,merge", "ctxm");
	onnxb_node(b, "MatMul", "ctxm,wo", "omm");
	onnxb_node(b, "Add", "omm,bo", "attn");
	onnxb_node(b, "Add", "x,attn", "res1");
	n = onnxb_node(b, "LayerNormalization", "res1,g1,e1", "ln1");
	onnxb_attr_int(n, "axis", -1);
	onnxb_node(b, "MatMul", "ln1,w1", "f1mm");
	onnxb_node(b, "Add", "f1mm,b1", "f1");
	onnxb_node(b, "Div", "f1,sqrt2", "gu");
	onnxb_node(b, "Erf", "gu", "ge");
	onnxb_node(b, "Add", "ge,one", "ga");
	onnxb_node(b, "Mul", "f1,ga", "gm");
	onnxb_node(b, "Mul", "gm,half", "gelu");
	onnxb_node(b, "MatMul", "gelu,w2", "f2mm");
	onnxb_node(b, "Add", "f2mm,b2", "f2");
	onnxb_node(b, "Add", "ln1,f2", "res2");
	n = onnxb_node(b, "LayerNormalization", "res2,g2,e2", "y");
	onnxb_attr_int(n, "axis", -1);
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}

Test(gpu_xfmr, an_encoder_layer_through_the_engine_matches_the_host_and_replays)
{
	unsigned seed = 8191u ^ (unsigned)getpid();
	engine_model *m = layer_model(&seed);
	struct engine_session_options opts = { 0 };
	struct backend_counters warm, later;
	static float xv[L_B * L_S * L_D], ev[L_B * L_S], gy[L_B * L_S * L_D], hy[L_B * L_S * L_D];
	struct op_tensor x = { .dtype = CEP_DTYPE_FLOAT32, .rank = 3, .dims = { L_B, L_S, L_D },
			       .data = xv };
	struct op_tensor ref = x;
	int64_t xd[3] = { L_B, L_S, L_D }, ed[4] = { L_B, 1, 1, L_S };
	struct engine_input in[2] = {
		{ "x", CEP_DTYPE_FLOAT32, 3, xd, xv, sizeof(xv) },
		{ "ext", CEP_DTYPE_FLOAT32, 4, ed, ev, sizeof(ev) },
	};
	struct engine_output gout = { .name = "y", .data = gy, .capacity = sizeof(gy) };
	struct engine_output hout = { .name = "y", .data = hy, .capacity = sizeof(hy) };
	struct engine_stats st;
	struct backend *host;
	engine_session *gs, *hs;
	int64_t bad = 0;
	int run, j;

	/* 6 MatMulBias (two of them with the residual Adds folded in), an
	 * Attention, 4 Reshapes and 2 LayerNormalization: the planner's steps,
	 * checked wherever this runs. */
	cr_assert_eq(engine_model_node_count(m), 13, "%d nodes", engine_model_node_count(m));
	GPU_REQUIRE();
	ref.data = hy;
	cr_assert_eq(backend_host_new(0, &host), 0);
	cr_assert_eq(engine_session_new(m, gpu_be, &opts, &gs), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_new(m, host, &opts, &hs), 0, "%s", cep_last_error());
	for (run = 0; run < 6; run++) {
		fill_random(&x, &seed, false);
		/* Pad the last (4 + run) keys of the second sequence. */
		for (j = 0; j < L_B * L_S; j++)
			ev[j] = j >= L_S && j % L_S >= L_S - 4 - run ? -10000.0f : 0.0f;
		memset(gy, 0xa5, sizeof(gy));
		cr_assert_eq(eu_run(gs, in, 2, &gout, 1), 0, "run %d: %s", run,
			     cep_last_error());
		cr_assert_eq(eu_run(hs, in, 2, &hout, 1), 0, "%s", cep_last_error());
		bad += compare_tensor("engine: encoder layer, float32", &ref, gy, 1e-4,
				      1e-4 * rms(&ref));
		if (run == 2)
			backend_counters_get(gpu_be, &warm);
	}
	backend_counters_get(gpu_be, &later);
	engine_session_stats(gs, &st);
	cr_assert_eq(bad, 0);
	cr_assert_eq(later.allocs, warm.allocs, "the warm path allocates nothing");
	cr_assert_eq(later.replays - warm.replays, 3, "the plan is replayed as a graph");
	cr_assert_eq(later.launches, warm.launches, "no eager launches once captured");
	engine_session_free(gs);
	engine_session_free(hs);
	backend_free(host);
	engine_model_unref(m);
}
