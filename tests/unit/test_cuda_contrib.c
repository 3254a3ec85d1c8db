/*
 * test_cuda_contrib.c — the CUDA kernels of onnxruntime's contrib
 * operators against the host's (tests/unit/test_ops_contrib.c checks those
 * against the formulas) on fresh random data, specials among it in some
 * cases, in float32, float16 and bfloat16 where each takes them, printing
 * the worst absolute and relative error of every output:
 * SkipLayerNormalization and SkipSimplifiedLayerNormalization with and
 * without their optional inputs and outputs, a skip repeated over the
 * batch, rows of the warp kernels and of the block kernel;
 * SimplifiedLayerNormalization in both domains with a broadcast scale and
 * onnxruntime's LayerNormalization before 17; com.microsoft Gelu,
 * QuickGelu, FastGelu, BiasGelu and BiasAdd; com.microsoft Attention
 * with each mask form over heads of each of the internal Attention's
 * kernels (tensor-core, tiled, rows), compared within 1e-4 (float32) or
 * 1e-2 (16-bit types) of the output's root mean square.
 *
 * Everywhere: the registry gives each of them a CUDA kernel for each type
 * the host has one for. On a GPU machine with CUDAEP_TEST_GPU=1 the rest
 * runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

#define MS OP_DOMAIN_MS
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
	const char *domain, *op;
	int opset;
} contrib_ops[] = {
	{ MS, "SkipLayerNormalization", 1 },
	{ MS, "SkipSimplifiedLayerNormalization", 1 },
	{ MS, "SimplifiedLayerNormalization", 1 },
	{ "", "SimplifiedLayerNormalization", 1 },
	{ "", "SimplifiedLayerNormalization", 17 },
	{ "", "LayerNormalization", 1 },
	{ "", "LayerNormalization", 16 },
	{ MS, "Gelu", 1 },
	{ MS, "QuickGelu", 1 },
	{ MS, "FastGelu", 1 },
	{ MS, "BiasGelu", 1 },
	{ MS, "BiasAdd", 1 },
	{ MS, "Attention", 1 },
};

static const cep_dtype contrib_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_FLOAT_TYPES 3 /* the first three of contrib_types */

/* ------------------------------------------------------------ everywhere */

Test(cuda_contrib, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	size_t i, t;
	int checked = 0;

	for (i = 0; i < N_OF(contrib_ops); i++) {
		cr_assert_eq(op_schema_find(contrib_ops[i].domain, contrib_ops[i].op,
					    contrib_ops[i].opset, &s), 0, "%s", cep_last_error());
		for (t = 0; t < N_OF(contrib_types); t++) {
			bool has_host = op_kernel_find(s, contrib_ops[i].opset, BACKEND_HOST,
						       contrib_types[t], &host) == 0;
			bool has_dev = op_kernel_find(s, contrib_ops[i].opset, BACKEND_CUDA,
						      contrib_types[t], &dev) == 0;

			cr_assert_eq(has_dev, has_host, "%s %s/%d %s: host %d, cuda %d",
				     op_domain_name(contrib_ops[i].domain), contrib_ops[i].op,
				     contrib_ops[i].opset, cep_dtype_name(contrib_types[t]),
				     has_host, has_dev);
			cr_assert_eq(has_host, t < N_FLOAT_TYPES &&
					       !(strcmp(contrib_ops[i].op, "BiasAdd") == 0 &&
						 contrib_types[t] == CEP_DTYPE_BFLOAT16),
				     "%s %s", contrib_ops[i].op, cep_dtype_name(contrib_types[t]));
			checked += has_dev;
		}
	}
	cr_assert_eq(checked, (int)N_OF(contrib_ops) * 3 - 1);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_contrib, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/*
 * The skip forms over rows of the warp kernels (768 and 128 wide, BERT's;
 * 1000, the last vector partly empty; 40, some lanes idle) and of the
 * block kernel (4096 wide; 37, not whole vectors), a skip of the input's
 * shape or repeated over the batch, with every optional input or none,
 * every output or output 0 alone, or all but Mean.
 */
Test(gpu_contrib, skip_layernorms_warp_and_block_rows)
{
	static const struct {
		const char *x, *skip, *h;
		bool specials;
	} cases[] = {
		{ "4,16,768", "4,16,768", "768", false }, { "2,8,768", "1,8,768", "768", true },
		{ "3,5,128", "5,128", "128", false },     { "6,1000", "6,1000", "1000", false },
		{ "2,3,40", "2,3,40", "40", true },       { "2,3,4096", "3,4096", "4096", false },
		{ "5,37", "5,37", "37", true },
	};
	static const char *const ops[] = { "SkipLayerNormalization",
					   "SkipSimplifiedLayerNormalization" };
	unsigned seed = 61u ^ (unsigned)getpid();
	struct op_attr eps[1] = { { .name = "epsilon", .type = OP_ATTR_FLOAT, .f = 1e-5f } };
	struct op_tensor in[5];
	char label[200];
	int64_t bad = 0;
	size_t c, t, o;

	GPU_REQUIRE();
	for (c = 0; c < N_OF(cases); c++) {
		for (t = 0; t < N_FLOAT_TYPES; t++) {
			cep_dtype dt = contrib_types[t];

			in[0] = host_tensor(dt, cases[c].x, &seed, cases[c].specials);
			in[1] = host_tensor(dt, cases[c].skip, &seed, false);
			in[2] = host_tensor(dt, cases[c].h, &seed, false);
			in[3] = host_tensor(dt, cases[c].h, &seed, false);
			in[4] = host_tensor(dt, cases[c].h, &seed, false);
			for (o = 0; o < N_OF(ops); o++) {
				/* The simplified form's optional input 3 is its bias. */
				int full = o == 0 ? 5 : 4;

				snprintf(label, sizeof(label), "%s [%s] skip [%s]", cep_dtype_name(dt),
					 cases[c].x, cases[c].skip);
				bad += gpu_check_tol_in(MS, ops[o], 1, eps, 1, in, full, 4, -1, 0.0,
							label);
				bad += gpu_check_tol_in(MS, ops[o], 1, eps, 1, in, 3, 1, -1, 0.0, label);
				snprintf(label, sizeof(label), "%s [%s] skip [%s], no mean",
					 cep_dtype_name(dt), cases[c].x, cases[c].skip);
				bad += gpu_check_tol_in(MS, ops[o], 1, NULL, 0, in, full, 4, 1, 0.0,
							label);
			}
			free_all(in, 5);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* SimplifiedLayerNormalization in ai.onnx and com.microsoft, with
 * inv_std_var, over warp rows, block rows and a scale that broadcasts
 * along the normalized dims (axis 1); onnxruntime's LayerNormalization
 * before 17 with its statistics. */
Test(gpu_contrib, simplified_layernorm_and_old_layernorm)
{
	static const struct {
		const char *x, *scale;
		int axis;
		bool specials;
	} cases[] = {
		{ "8,4096", "4096", -1, false }, { "33,768", "768", -1, true },
		{ "4,5,6", "5,6", 1, false },    { "4,5,6", "6", 1, false },
		{ "3,2,64", "1", -1, false },    { "7,100", "100", -1, false },
	};
	static const struct { const char *domain; int opset; } where[] = {
		{ "", 1 }, { "", 23 }, { MS, 1 },
	};
	unsigned seed = 67u ^ (unsigned)getpid();
	struct op_attr attrs[2] = {
		{ .name = "axis", .type = OP_ATTR_INT },
		{ .name = "epsilon", .type = OP_ATTR_FLOAT, .f = 1e-6f },
	};
	struct op_tensor in[3];
	char label[200];
	int64_t bad = 0;
	size_t c, t, w;

	GPU_REQUIRE();
	for (c = 0; c < N_OF(cases); c++) {
		for (t = 0; t < N_FLOAT_TYPES; t++) {
			cep_dtype dt = contrib_types[t];

			attrs[0].i = cases[c].axis;
			in[0] = host_tensor(dt, cases[c].x, &seed, cases[c].specials);
			in[1] = host_tensor(dt, cases[c].scale, &seed, false);
			in[2] = host_tensor(dt, cases[c].scale, &seed, false);
			for (w = 0; w < N_OF(where); w++) {
				snprintf(label, sizeof(label), "%s %s [%s] [%s] axis %d",
					 op_domain_name(where[w].domain), cep_dtype_name(dt), cases[c].x,
					 cases[c].scale, cases[c].axis);
				bad += gpu_check_tol_in(where[w].domain, "SimplifiedLayerNormalization",
							where[w].opset, attrs, 2, in, 2, 2, -1, 0.0,
							label);
			}
			snprintf(label, sizeof(label), "%s [%s] [%s] axis %d", cep_dtype_name(dt),
				 cases[c].x, cases[c].scale, cases[c].axis);
			bad += gpu_check("LayerNormalization", 16, attrs, 2, in, 3, 3, label);
			free_all(in, 3);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* The Gelus, with specials; FastGelu with and without its bias. */
Test(gpu_contrib, gelu_forms)
{
	static const char *const shapes[][2] = {
		{ "3,7,33", "33" }, { "2,128,3072", "3072" }, { "5", "5" }, { "4,0", "0" },
	};
	unsigned seed = 71u ^ (unsigned)getpid();
	struct op_attr alpha[1] = { { .name = "alpha", .type = OP_ATTR_FLOAT, .f = -0.8f } };
	struct op_tensor in[2];
	char label[160];
	int64_t bad = 0;
	size_t c, t;

	GPU_REQUIRE();
	for (c = 0; c < N_OF(shapes); c++) {
		for (t = 0; t < N_FLOAT_TYPES; t++) {
			cep_dtype dt = contrib_types[t];

			in[0] = host_tensor(dt, shapes[c][0], &seed, c == 0);
			in[1] = host_tensor(dt, shapes[c][1], &seed, false);
			snprintf(label, sizeof(label), "%s [%s]", cep_dtype_name(dt), shapes[c][0]);
			bad += gpu_check_tol_in(MS, "Gelu", 1, NULL, 0, in, 1, 1, -1, 0.0, label);
			bad += gpu_check_tol_in(MS, "QuickGelu", 1, NULL, 0, in, 1, 1, -1, 0.0, label);
			bad += gpu_check_tol_in(MS, "QuickGelu", 1, alpha, 1, in, 1, 1, -1, 0.0, label);
			bad += gpu_check_tol_in(MS, "FastGelu", 1, NULL, 0, in, 1, 1, -1, 0.0, label);
			snprintf(label, sizeof(label), "%s [%s] + bias [%s]", cep_dtype_name(dt),
				 shapes[c][0], shapes[c][1]);
			bad += gpu_check_tol_in(MS, "FastGelu", 1, NULL, 0, in, 2, 1, -1, 0.0, label);
			bad += gpu_check_tol_in(MS, "BiasGelu", 1, NULL, 0, in, 2, 1, -1, 0.0, label);
			free_all(in, 2);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* BiasAdd of NHWC activations, float32 and float16. */
Test(gpu_contrib, bias_add)
{
	static const char *const shapes[][2] = {
		{ "2,64,320", "320" }, { "1,3,5", "5" }, { "3,0,4", "4" },
	};
	unsigned seed = 73u ^ (unsigned)getpid();
	struct op_tensor in[3];
	char label[160];
	int64_t bad = 0;
	size_t c, t;

	GPU_REQUIRE();
	for (c = 0; c < N_OF(shapes); c++) {
		for (t = 0; t < 2; t++) {
			cep_dtype dt = contrib_types[t];

			in[0] = host_tensor(dt, shapes[c][0], &seed, c == 1);
			in[1] = host_tensor(dt, shapes[c][1], &seed, false);
			in[2] = host_tensor(dt, shapes[c][0], &seed, false);
			snprintf(label, sizeof(label), "%s [%s]", cep_dtype_name(dt), shapes[c][0]);
			bad += gpu_check_tol_in(MS, "BiasAdd", 1, NULL, 0, in, 3, 1, -1, 0.0, label);
			free_all(in, 3);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* Multiplies every element of float tensor t by f. */
static void scale_tensor(struct op_tensor *t, float f)
{
	int64_t n = op_dims_product(t, 0, t->rank), i;

	for (i = 0; i < n; i++)
		cpu_store_f(t->data, t->dtype, i, f * cpu_load_f(t->data, t->dtype, i));
}

/* Runs Attention on both backends and compares as test_cuda_xfmr.c
 * compares its fused attention: relative 1e-4 (1e-2 for 16-bit types),
 * and as much of the output's root mean square absolute. */
static int64_t check_ms_attention(const struct op_attr *attrs, int n_attrs,
				  const struct op_tensor *in, int n_in, const char *label)
{
	double tol = in[0].dtype == CEP_DTYPE_FLOAT32 ? 1e-4 : 1e-2;
	struct gpu_call d;
	char what[240];
	int64_t bad;
	size_t bytes;
	void *got;

	gpu_call_make_in(&d, MS, "Attention", 1, attrs, n_attrs, in, n_in, 1, -1);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	bytes = op_tensor_bytes(&d.ref[0]);
	got = malloc(bytes ? bytes : 1);
	dev_get(got, d.out[0].data, bytes);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	snprintf(what, sizeof(what), "Attention %s", label);
	bad = compare_tensor(what, &d.ref[0], got, tol, tol * rms(&d.ref[0]));
	free(got);
	gpu_call_free(&d);
	return bad;
}

/*
 * BERT-base's geometry (12 heads of 64: the tensor-core kernel for 16-bit
 * types, the 64-deep tiled one for float32), heads of 128 and of 160 (the
 * row kernel), with lengths, a raw (B, S) mask, a raw (B, S, S) mask with
 * attention_bias, unidirectional, and none; V narrower than Q and K once.
 */
Test(gpu_contrib, ms_attention_masks_and_depths)
{
	static const struct {
		int64_t B, S, K, hq, hv, H;
		int mask;           /* 0 none, 1 lengths, 2 raw (B, S), 3 raw (B, S, S) + bias */
		bool causal, bias;
	} cases[] = {
		{ 2, 128, 768, 768, 768, 12, 1, false, true },
		{ 3, 40, 256, 256, 256, 2, 2, false, true },
		{ 2, 33, 96, 320, 320, 2, 3, false, false },
		{ 2, 50, 64, 128, 64, 4, 0, true, true },
		{ 1, 7, 16, 64, 64, 4, 2, true, true },
	};
	unsigned seed = 79u ^ (unsigned)getpid();
	struct op_tensor in[6];
	char label[200], shape[64];
	int64_t bad = 0, sizes[3];
	size_t c, t;

	GPU_REQUIRE();
	for (c = 0; c < N_OF(cases); c++) {
		for (t = 0; t < N_FLOAT_TYPES; t++) {
			cep_dtype dt = contrib_types[t];
			int64_t B = cases[c].B, S = cases[c].S, N = 2 * cases[c].hq + cases[c].hv, i;
			struct op_attr attrs[3] = {
				{ .name = "num_heads", .type = OP_ATTR_INT, .i = cases[c].H },
				{ .name = "qkv_hidden_sizes", .type = OP_ATTR_INTS, .n = 3, .ints = sizes },
				{ .name = "unidirectional", .type = OP_ATTR_INT, .i = cases[c].causal },
			};
			int n_in = cases[c].mask == 3 ? 6 : 4;

			sizes[0] = sizes[1] = cases[c].hq;
			sizes[2] = cases[c].hv;
			snprintf(shape, sizeof(shape), "%lld,%lld,%lld", (long long)B, (long long)S,
				 (long long)cases[c].K);
			in[0] = host_tensor(dt, shape, &seed, false);
			scale_tensor(&in[0], 0.25f);
			snprintf(shape, sizeof(shape), "%lld,%lld", (long long)cases[c].K, (long long)N);
			in[1] = host_tensor(dt, shape, &seed, false);
			scale_tensor(&in[1], 1.0f / (float)sqrt((double)cases[c].K));
			snprintf(shape, sizeof(shape), "%lld", (long long)N);
			in[2] = cases[c].bias ? host_tensor(dt, shape, &seed, false)
					      : (struct op_tensor){ .dtype = CEP_DTYPE_UNDEFINED };
			in[3] = (struct op_tensor){ .dtype = CEP_DTYPE_UNDEFINED };
			if (cases[c].mask == 1)
				snprintf(shape, sizeof(shape), "%lld", (long long)B);
			else if (cases[c].mask == 2)
				snprintf(shape, sizeof(shape), "%lld,%lld", (long long)B, (long long)S);
			else
				snprintf(shape, sizeof(shape), "%lld,%lld,%lld", (long long)B,
					 (long long)S, (long long)S);
			if (cases[c].mask > 0) {
				in[3] = host_tensor(CEP_DTYPE_INT32, shape, &seed, false);
				for (i = 0; i < op_dims_product(&in[3], 0, in[3].rank); i++) {
					int32_t *m = in[3].data;

					/* Lengths in [1, S]; raw masks keep key 0. */
					m[i] = cases[c].mask == 1 ? (int32_t)(1 + (unsigned)m[i] % S)
								  : i % S == 0 || (m[i] & 3) != 0;
				}
			}
			in[4] = (struct op_tensor){ .dtype = CEP_DTYPE_UNDEFINED };
			snprintf(shape, sizeof(shape), "1,%lld,%lld,%lld", (long long)cases[c].H,
				 (long long)S, (long long)S);
			in[5] = host_tensor(dt, shape, &seed, false);
			snprintf(label, sizeof(label), "%s B %lld S %lld H %lld heads of %lld, mask %d%s",
				 cep_dtype_name(dt), (long long)B, (long long)S, (long long)cases[c].H,
				 (long long)(cases[c].hq / cases[c].H), cases[c].mask,
				 cases[c].causal ? ", causal" : "");
			bad += check_ms_attention(attrs, 3, in, n_in, label);
			free_all(in, 6);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
