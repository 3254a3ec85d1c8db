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
 * cases of these types are test_cuda_bitwise.c's.)
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
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	size_t i, t;
	int opset, checked = 0;

	for (i = 0; i < N_OF(wide_ops); i++) {
		int covered = 0;

		for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
			if (op_schema_find("", wide_ops[i], opset, &s) != 0)
				continue;
			for (t = 0; t < N_OF(wide_types); t++) {
				bool has_host = op_kernel_find(s, opset, BACKEND_HOST, wide_types[t],
							       &host) == 0;
				bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, wide_types[t],
							      &dev) == 0;

				cr_assert_eq(has_dev, has_host, "%s/%d %s: host %d, cuda %d",
					     wide_ops[i], opset, cep_dtype_name(wide_types[t]),
					     has_host, has_dev);
				covered += has_dev;
			}
		}
		cr_assert_gt(covered, 0, "%s", wide_ops[i]);
		checked += covered;
	}
	printf("  %d (operator, opset, type) kernels\n", checked);
}

/* Whether the compiled image holds a symbol called name. */
static bool image_has(const void *image, size_t size, const char *name)
{
	char key[96];
	size_t n = strlen(name) + 2;

	key[0] = '\0';
	memcpy(key + 1, name, n - 1);
	return memmem(image, size, key, n) != NULL;
}

static void *compile(struct nvrtc_lib *lib, const char *src_name, size_t *size)
{
	struct nvrtc_source src;
	void *image = NULL;

	cr_assert_eq(cuda_source_get(src_name, &src), 0, "%s", cep_last_error());
	cr_assert_eq(nvrtc_compile(lib, &src, 90, &image, size), 0, "%s: %s", src_name,
		     cep_last_error());
	return image;
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
		void *image = compile(lib, sources[i].source, &size);

		for (f = 0; f < sources[i].n_formats; f++) {
			for (t = 0; t < sources[i].n_types; t++, n++) {
				snprintf(name, sizeof(name), sources[i].formats[f],
					 cuda_dtype_suffix(sources[i].types[t]));
				cr_assert(image_has(image, size, name), "%s: %s", sources[i].source,
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
