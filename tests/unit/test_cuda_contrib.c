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
 * QuickGelu, FastGelu, BiasGelu and BiasAdd.
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
