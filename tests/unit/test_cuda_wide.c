/*
 * test_cuda_wide.c — the device kernels that the wider types (float64,
 * int16, uint16, uint32, uint64) gained after the first ones: BitShift
 * and the Bitwise operators (bitwise_wide.cu), Max, Min and Mod, Pow's
 * exponent types, CumSum and CumProd, TopK of uint64, Einsum of float64,
 * against the reference kernels of kernels/cpu on fresh random data
 * (integers exactly, float64 to 1e-12 relative).
 *
 * Everywhere: the registry gives these operators a CUDA kernel for each
 * of these types and opsets the host has one for, and every kernel name
 * the launchers build for them is in the compiled sources (where NVRTC is
 * installed; no GPU needed). On a GPU machine with CUDAEP_TEST_GPU=1 the
 * rest runs; elsewhere it skips, visibly. (The bitwise operators' GPU
 * cases of these types are test_cuda_bitwise.c's.) The unary functions
 * of float64 (Relu ... Round) are here too: the expanded form of
 * ReduceLogSumExp runs Exp and Log of float64.
 */
#include "gpu/cuda/nvrtc.h"
#include "kernels/cuda/launch.h"
#include "tests/unit/cuda_util.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const cep_dtype wide_types[] = {
	CEP_DTYPE_FLOAT64, CEP_DTYPE_INT16, CEP_DTYPE_UINT16, CEP_DTYPE_UINT32, CEP_DTYPE_UINT64,
};

static const char *const wide_ops[] = {
	"BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "Max", "Min", "Sum",
	"Mean", "Mod", "Pow", "CumSum", "CumProd", "TopK", "Einsum", "Relu", "Sigmoid", "Tanh",
	"Exp", "Sqrt", "Reciprocal", "Neg", "Abs", "Log", "Erf", "Floor", "Ceil", "Round",
};

/* ------------------------------------------------------------ everywhere */

Test(cuda_wide, the_device_covers_what_the_host_covers)
{
	int checked = 0, covered;
	size_t i;

	for (i = 0; i < N_OF(wide_ops); i++) {
		covered = cuda_covers_host("", wide_ops[i], wide_types, N_OF(wide_types));
		cr_assert_gt(covered, 0, "%s", wide_ops[i]);
		checked += covered;
	}
	printf("  %d (operator, opset, type) kernels\n", checked);
}

/* The kernels of one source that the launchers name, as printf formats
 * of one type suffix. */
struct wide_names {
	const char *source;
	const char *const *formats;
	int n_formats;
	const cep_dtype *types;
	int n_types;
};

static const cep_dtype int_wide[] = {
	CEP_DTYPE_INT16, CEP_DTYPE_UINT16, CEP_DTYPE_UINT32, CEP_DTYPE_UINT64,
};

static const char *const bitwise_names[] = {
	"bitwiseand_%s", "bitwiseand_%s_ff", "bitwiseand_%s_fr", "bitwiseand_%s_rf",
	"bitwiseand_%s_fs", "bitwiseand_%s_sf", "bitwiseor_%s", "bitwiseor_%s_ff",
	"bitwisexor_%s", "bitwisexor_%s_sf", "bitshiftleft_%s", "bitshiftleft_%s_fr",
	"bitshiftright_%s", "bitshiftright_%s_rf", "bitwisenot_%s",
};

static const cep_dtype all_wide[] = {
	CEP_DTYPE_FLOAT64, CEP_DTYPE_INT16, CEP_DTYPE_UINT16, CEP_DTYPE_UINT32, CEP_DTYPE_UINT64,
};

static const cep_dtype f64_only[] = { CEP_DTYPE_FLOAT64 };

static const cep_dtype scan_wide[] = { CEP_DTYPE_FLOAT64, CEP_DTYPE_UINT32, CEP_DTYPE_UINT64 };

static const char *const variadic_min_max[] = { "min_%s", "max_%s" };
static const char *const variadic_f64[] = { "sum_%s", "mean_%s" };
static const char *const mod_names[] = { "mod_%s" };
/* Pow's kernels are pow_<base>_<exponent>: here every base with a wide
 * exponent, and the float64 base with every exponent. */
static const char *const pow_wide_exp[] = {
	"pow_f32_%s", "pow_f16_%s", "pow_bf16_%s", "pow_i64_%s", "pow_i32_%s", "pow_f64_%s",
};
static const cep_dtype first_numeric[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8,
};
static const char *const pow_f64_base[] = { "pow_f64_%s" };
static const char *const scan_names[] = { "cumsum_%s", "cumprod_%s" };
static const char *const topk_names[] = { "topk_%s" };
static const char *const einsum_names[] = { "einsum_%s" };
static const char *const unary_f64[] = {
	"relu_%s", "sigmoid_%s", "tanh_%s", "exp_%s", "sqrt_%s", "reciprocal_%s", "neg_%s",
	"abs_%s", "log_%s", "erf_%s", "floor_%s", "ceil_%s", "round_%s",
};
static const char *const unary_ints[] = { "abs_%s", "erf_%s" };
static const char *const unary_i16[] = { "relu_%s", "neg_%s" };
static const cep_dtype i16_only[] = { CEP_DTYPE_INT16 };

static const struct wide_names sources[] = {
	{ "bitwise_wide", bitwise_names, N_OF(bitwise_names), int_wide, N_OF(int_wide) },
	{ "variadic_wide", variadic_min_max, N_OF(variadic_min_max), all_wide, N_OF(all_wide) },
	{ "variadic_wide", variadic_f64, N_OF(variadic_f64), f64_only, 1 },
	{ "powmod_wide", mod_names, N_OF(mod_names), all_wide, N_OF(all_wide) },
	{ "powmod_wide", pow_wide_exp, N_OF(pow_wide_exp), all_wide, N_OF(all_wide) },
	{ "powmod_wide", pow_f64_base, 1, first_numeric, N_OF(first_numeric) },
	{ "cumsum", scan_names, N_OF(scan_names), scan_wide, N_OF(scan_wide) },
	{ "topk", topk_names, 1, all_wide, N_OF(all_wide) },
	{ "einsum", einsum_names, 1, all_wide, N_OF(all_wide) },
	{ "unary_wide", unary_f64, N_OF(unary_f64), f64_only, 1 },
	{ "unary_wide", unary_ints, N_OF(unary_ints), int_wide, N_OF(int_wide) },
	{ "unary_wide", unary_i16, N_OF(unary_i16), i16_only, 1 },
};

Test(cuda_wide_nvrtc, every_kernel_the_launchers_name_is_compiled, .timeout = 600)
{
	struct nvrtc_lib *lib = NULL;
	size_t i, size, n = 0;
	int f, t;
	char name[96];

	if (nvrtc_lib_open(NULL, &lib) != 0) {
		fprintf(stderr, "[SKIP] needs NVRTC (no GPU needed): %s\n", cep_last_error());
		cr_skip_test("needs NVRTC: %s", cep_last_error());
	}
	for (i = 0; i < N_OF(sources); i++) {
		void *image = cuda_compile_90(lib, sources[i].source, &size);

		for (f = 0; f < sources[i].n_formats; f++) {
			for (t = 0; t < sources[i].n_types; t++, n++) {
				snprintf(name, sizeof(name), sources[i].formats[f],
					 cuda_dtype_suffix(sources[i].types[t]));
				cr_assert(cuda_image_has(image, size, name), "%s: %s", sources[i].source,
					  name);
			}
		}
		free(image);
	}
	printf("  %zu kernels found\n", n);
	nvrtc_lib_free(lib);
}

/* Every embedded header reaches NVRTC (a source including one that did
 * not would fail to compile). */
Test(cuda_wide, every_embedded_header_is_given_to_nvrtc)
{
	struct nvrtc_source src;
	int i, headers = 0;

	for (i = 0; i < cuda_source_count; i++) {
		size_t n = strlen(cuda_sources[i].name);

		headers += n > 4 && strcmp(cuda_sources[i].name + n - 4, ".cuh") == 0;
	}
	cr_assert_eq(cuda_source_get("unary_wide", &src), 0, "%s", cep_last_error());
	cr_assert_eq(src.n_headers, headers);
	cr_assert_geq(headers, 18);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_wide, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

Test(gpu_wide, max_min_sum_mean_match_the_host)
{
	static const struct {
		const char *op;
		int opset;
		bool ints;
	} ops[] = {
		{ "Max", 13, true }, { "Min", 13, true }, { "Max", 12, true }, { "Min", 8, false },
		{ "Sum", 13, false }, { "Mean", 13, false }, { "Sum", 8, false },
	};
	/* Two inputs broadcast; ten, so that a second launch folds the rest. */
	static const char *const shapes[10] = { "3,1,37", "5,1", "37", "", "3,5,37", "1,5,1",
						"1", "5,37", "3,1,1", "3,5,37" };
	unsigned seed = 107u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t o, t;

	GPU_REQUIRE();
	for (o = 0; o < N_OF(ops); o++) {
		for (t = 0; t < N_OF(wide_types); t++) {
			struct op_tensor in[10];
			char label[96];
			int n, i;

			if (wide_types[t] != CEP_DTYPE_FLOAT64 && !ops[o].ints)
				continue;
			for (n = 2; n <= 10; n += 8) {
				for (i = 0; i < n; i++)
					in[i] = host_tensor(wide_types[t], shapes[i], &seed, true);
				snprintf(label, sizeof(label), "%s, %d inputs",
					 cep_dtype_name(wide_types[t]), n);
				bad += gpu_check(ops[o].op, ops[o].opset, NULL, 0, in, n, 1, label);
				free_all(in, n);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_wide, mod_matches_the_host_with_either_remainder)
{
	unsigned seed = 109u ^ (unsigned)getpid();
	struct op_attr fmod = { .name = "fmod", .type = OP_ATTR_INT };
	int64_t bad = 0;
	size_t t;
	int f;

	GPU_REQUIRE();
	for (t = 0; t < N_OF(wide_types); t++) {
		for (f = 0; f <= 1; f++) {
			bool fl = wide_types[t] == CEP_DTYPE_FLOAT64;
			struct op_tensor in[2];
			char label[96];

			fmod.i = f;
			in[0] = host_tensor(wide_types[t], "7,33", &seed, true);
			in[1] = host_tensor(wide_types[t], "33", &seed, true);
			snprintf(label, sizeof(label), "%s fmod=%d", cep_dtype_name(wide_types[t]), f);
			/* fmod=0 takes floats from opset 28. */
			bad += gpu_check("Mod", fl && f == 0 ? 28 : 13, &fmod, 1, in, 2, 1, label);
			free_all(in, 2);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* Exponents an integer base takes through double exactly on both sides:
 * a truncated pow() would differ where the device's pow() is an ulp off
 * an integer (0, 1 and 2 are products or exact, and a negative power of
 * a base past 1 truncates to 0). */
static void pow_int_safe_exponents(struct op_tensor *e)
{
	static const double safe[] = { 0.0, 2.0, -1.0, -3.0, 1.0 };
	int64_t n = op_dims_product(e, 0, e->rank), i;

	for (i = 0; i < n; i++)
		cpu_store_d(e->data, e->dtype, i, safe[i % 5]);
}

Test(gpu_wide, pow_with_the_wide_exponents_and_a_float64_base_matches_the_host)
{
	static const cep_dtype bases[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64, CEP_DTYPE_INT32,
					   CEP_DTYPE_FLOAT64 };
	static const cep_dtype exps[] = {
		CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_FLOAT64,
		CEP_DTYPE_INT64, CEP_DTYPE_INT32, CEP_DTYPE_INT16, CEP_DTYPE_INT8,
		CEP_DTYPE_UINT64, CEP_DTYPE_UINT32, CEP_DTYPE_UINT16, CEP_DTYPE_UINT8,
	};
	unsigned seed = 113u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t b, e;
	int cases = 0;

	GPU_REQUIRE();
	for (b = 0; b < N_OF(bases); b++) {
		for (e = 0; e < N_OF(exps); e++) {
			bool wide = cuda_dtype_wide(bases[b]) || cuda_dtype_wide(exps[e]);
			bool int_base = bases[b] == CEP_DTYPE_INT64 || bases[b] == CEP_DTYPE_INT32;
			bool float_exp = cpu_is_float(exps[e]);
			struct op_tensor in[2];
			char label[96];
			int64_t n, i;

			if (!wide)
				continue; /* the first types' are test_cuda_elem's */
			in[0] = host_tensor(bases[b], "6,41", &seed, !int_base);
			in[1] = host_tensor(exps[e], "41", &seed, false);
			n = op_dims_product(&in[0], 0, in[0].rank);
			if (int_base) {
				/* Small bases, so that powers neither all wrap nor
				 * all vanish. */
				for (i = 0; i < n; i++)
					cpu_store_i(in[0].data, bases[b], i,
						    (int64_t)(rnd(&seed) % 11) - 5);
				if (float_exp)
					pow_int_safe_exponents(&in[1]);
			}
			if (!float_exp) {
				/* Exponents mostly small, some huge (uint64 past
				 * 2^63 included) and negative ones. */
				for (i = 0; i < 41; i++) {
					unsigned r = rnd(&seed);

					if (r % 5 != 0)
						cpu_store_i(in[1].data, exps[e], i,
							    (int64_t)(r % 9) - 2);
				}
			}
			snprintf(label, sizeof(label), "%s ^ %s", cep_dtype_name(bases[b]),
				 cep_dtype_name(exps[e]));
			/* 15: bfloat16 exponents are allowed. */
			bad += gpu_check("Pow", 15, NULL, 0, in, 2, 1, label);
			free_all(in, 2);
			cases++;
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
	cr_assert_eq(cases, 5 * 5 + 12);
}

Test(gpu_wide, cumsum_and_cumprod_match_the_host)
{
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT64, CEP_DTYPE_UINT32,
					   CEP_DTYPE_UINT64 };
	static const char *const ops[] = { "CumSum", "CumProd" };
	unsigned seed = 127u ^ (unsigned)getpid();
	struct op_attr a[2] = {
		{ .name = "exclusive", .type = OP_ATTR_INT },
		{ .name = "reverse", .type = OP_ATTR_INT },
	};
	int64_t bad = 0, axis;
	size_t o, t;
	int k;

	GPU_REQUIRE();
	for (o = 0; o < N_OF(ops); o++) {
		for (t = 0; t < N_OF(types); t++) {
			for (k = 0; k < 4; k++) {
				struct op_tensor in[2];
				char label[96];

				a[0].i = k & 1;
				a[1].i = k >> 1;
				axis = k == 3 ? -1 : k;
				in[0] = host_tensor(types[t], "4,9,7", &seed, true);
				in[1] = int64_tensor(&axis, -1);
				snprintf(label, sizeof(label), "%s axis %lld exclusive %d reverse %d",
					 cep_dtype_name(types[t]), (long long)axis, k & 1, k >> 1);
				bad += gpu_check(ops[o], 26, a, 2, in, 2, 1, label);
				free_all(in, 2);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_wide, topk_of_the_wide_types_matches_the_host)
{
	unsigned seed = 131u ^ (unsigned)getpid();
	struct op_attr a[2] = {
		{ .name = "largest", .type = OP_ATTR_INT },
		{ .name = "axis", .type = OP_ATTR_INT },
	};
	int64_t bad = 0, k = 5;
	size_t t;
	int l;

	GPU_REQUIRE();
	for (t = 0; t < N_OF(wide_types); t++) {
		for (l = 0; l < 4; l++) {
			struct op_tensor in[2];
			char label[96];

			a[0].i = l & 1;
			a[1].i = l >> 1 ? 0 : -1;
			in[0] = host_tensor(wide_types[t], "9,37", &seed, true);
			/* Ties, which go to the lower index. */
			memcpy((char *)in[0].data + 3 * cep_dtype_size(wide_types[t]), in[0].data,
			       cep_dtype_size(wide_types[t]));
			in[1] = int64_tensor(&k, 1);
			snprintf(label, sizeof(label), "%s largest %d axis %lld",
				 cep_dtype_name(wide_types[t]), l & 1, (long long)a[1].i);
			bad += gpu_check("TopK", 11, a, 2, in, 2, 2, label);
			free_all(in, 2);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_wide, einsum_of_the_wide_types_matches_the_host)
{
	static const struct {
		const char *eq, *shapes[3];
		int n;
	} cases[] = {
		{ "ij,jk->ik", { "13,17", "17,11" }, 2 },
		{ "bij,bjk->bik", { "3,5,7", "3,7,4" }, 2 },
		{ "ij,kj->ik", { "6,9", "5,9" }, 2 },
		{ "ii->i", { "7,7" }, 1 },
		{ "ij->", { "9,13" }, 1 },
		{ "i,i,i->", { "19", "19", "19" }, 3 },
	};
	unsigned seed = 137u ^ (unsigned)getpid();
	struct op_attr eq = { .name = "equation", .type = OP_ATTR_STRING };
	int64_t bad = 0;
	size_t c, t;

	GPU_REQUIRE();
	for (c = 0; c < N_OF(cases); c++) {
		for (t = 0; t < N_OF(wide_types); t++) {
			struct op_tensor in[3];
			char label[96];
			int i;

			eq.s = cases[c].eq;
			for (i = 0; i < cases[c].n; i++)
				in[i] = host_tensor(wide_types[t], cases[c].shapes[i], &seed, false);
			snprintf(label, sizeof(label), "%s %s", cep_dtype_name(wide_types[t]),
				 cases[c].eq);
			bad += gpu_check("Einsum", 12, &eq, 1, in, cases[c].n, 1, label);
			free_all(in, cases[c].n);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_wide, the_unary_functions_of_the_wide_types_match_the_host)
{
	static const struct {
		const char *op;
		int opset;
	} ops[] = {
		{ "Relu", 14 }, { "Sigmoid", 13 }, { "Tanh", 13 }, { "Exp", 13 }, { "Sqrt", 13 },
		{ "Reciprocal", 13 }, { "Neg", 13 }, { "Abs", 13 }, { "Log", 13 }, { "Erf", 13 },
		{ "Floor", 13 }, { "Ceil", 13 }, { "Round", 22 }, { "Erf", 9 }, { "Relu", 6 },
	};
	unsigned seed = 139u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t o, t;
	int cases = 0;

	GPU_REQUIRE();
	for (o = 0; o < N_OF(ops); o++) {
		for (t = 0; t < N_OF(wide_types); t++) {
			const struct op_schema *s;
			const struct op_kernel *k;
			struct op_tensor in;
			char label[96];

			cr_assert_eq(op_schema_find("", ops[o].op, ops[o].opset, &s), 0);
			if (op_kernel_find(s, ops[o].opset, BACKEND_HOST, wide_types[t], &k) != 0)
				continue;
			in = host_tensor(wide_types[t], "5,67", &seed, true);
			snprintf(label, sizeof(label), "%s", cep_dtype_name(wide_types[t]));
			bad += gpu_check(ops[o].op, ops[o].opset, NULL, 0, &in, 1, 1, label);
			free(in.data);
			cases++;
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
	/* float64 for all 15; int16 for Relu 14, Neg, Abs and Erf 9; the
	 * unsigned three for Abs and Erf 9. */
	cr_assert_eq(cases, 15 + 4 + 3 * 2);
}
