/*
 * test_cuda_einsum.c — the CUDA kernel of Einsum (kernels/cuda/einsum.c)
 * against the reference kernel of kernels/cpu/einsum.c on fresh random
 * data, printing the worst absolute and relative error of each call:
 * matrix products in every layout (batched, either operand transposed,
 * the output transposed or permuted, broadcast ellipses, a diagonal
 * operand, dot and outer products), which run as cuBLASLt GEMMs in the
 * float types, within a GEMM's tolerance; and what runs the general
 * kernel, bit for bit: integers, one operand (transposes, diagonals,
 * traces, sums), three operands, an index summed in one operand alone,
 * a sum over nothing.
 *
 * Everywhere: the registry gives Einsum a CUDA kernel for each type and
 * opset the host has one for, and where NVRTC is installed (no device
 * needed) the kernels the launcher asks for are in the compiled source.
 * On a GPU machine with CUDAEP_TEST_GPU=1 the rest runs; elsewhere it
 * skips, visibly.
 */
#include "tests/unit/cuda_util.h"

#include "gpu/cuda/cublaslt.h"
#include "gpu/cuda/nvrtc.h"

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))

/* ------------------------------------------------------------ everywhere */

Test(cuda_einsum, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, n = 0;
	size_t t;

	for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
		if (op_schema_find("", "Einsum", opset, &s) != 0)
			continue;
		for (t = 0; t < N_TYPES; t++) {
			bool has_host = op_kernel_find(s, opset, BACKEND_HOST, all_types[t], &host) == 0;
			bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, all_types[t], &dev) == 0;

			cr_assert_eq(has_dev, has_host, "Einsum/%d %s: host %d, cuda %d", opset,
				     cep_dtype_name(all_types[t]), has_host, has_dev);
			n += has_dev;
		}
	}
	cep__clear_error();
	/* 6 types at 12-27, bfloat16 too from 28. */
	cr_assert_eq(n, 6 * 16 + 7 * (OP_OPSET_MAX - 27));
}

Test(cuda_einsum, the_kernels_the_launcher_asks_for_exist)
{
	static const char *const names[] = { "einsum_f32", "einsum_f16", "einsum_bf16",
					     "einsum_i64", "einsum_i32", "einsum_i8", "einsum_u8",
					     "einsum_gather_2", "einsum_gather_4" };
	struct nvrtc_lib *lib = NULL;
	struct nvrtc_source src;
	void *image;
	size_t size, k;

	if (nvrtc_lib_open(NULL, &lib) != 0)
		GPU_SKIP("skipped: needs NVRTC (no GPU needed); %s", cep_last_error());
	cr_assert_eq(cuda_source_get("einsum", &src), 0, "%s", cep_last_error());
	cr_assert_eq(nvrtc_compile(lib, &src, 90, &image, &size), 0, "%s", cep_last_error());
	for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		cr_assert(cuda_image_has(image, size, names[k]), "einsum.cu has no kernel %s", names[k]);
	free(image);
	nvrtc_lib_free(lib);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_einsum, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* An equation over up to three operands of the given shapes. */
struct es_case {
	const char *eq;
	const char *shape[3];
	bool gemm;               /* a contraction of two: cuBLASLt's in floats */
};

static const struct es_case cases[] = {
	{ "ij,jk->ik", { "5,7", "7,3" }, true },
	{ "bij,bjk->bik", { "3,4,5", "3,5,6" }, true },
	{ "bij,bkj->bik", { "3,4,5", "3,6,5" }, true },
	{ "bji,bjk->bik", { "3,5,4", "3,5,6" }, true },
	{ "ij,jk->ki", { "5,7", "7,3" }, true },
	{ "bhqd,bhkd->bhqk", { "2,3,5,4", "2,3,6,4" }, true },
	{ "bhqk,bhkd->bqhd", { "2,3,5,6", "2,3,6,4" }, true },
	{ "ij,ij->", { "6,5", "6,5" }, true },
	{ "i,j->ij", { "7", "4" }, true },
	{ "...ij,...jk->...ik", { "2,1,3,4", "1,5,4,2" }, true },
	{ "bii,bij->bj", { "2,4,4", "2,4,3" }, true },
	{ "ij,j->i", { "6,9", "9" }, true },
	{ "abcd,cde->abe", { "2,3,4,5", "4,5,6" }, true },
	{ "ij,ij->ij", { "4,5", "4,5" }, true },
	{ "ij,jk", { "3,33", "33,2" }, true },
	{ "Ab,bC->CA", { "9,129", "129,17" }, true },
	{ "ii->i", { "5,5" }, false },
	{ "ii", { "6,6" }, false },
	{ "ij->ji", { "4,7" }, false },
	{ "ijk->", { "3,4,5" }, false },
	{ "i...->...", { "3,2,4" }, false },
	{ "ij,jk,kl->il", { "3,4", "4,5", "5,2" }, false },
	{ "ij,k->k", { "3,4", "5" }, false },
	{ "ij,jk->ik", { "3,0", "0,4" }, false },
	{ "ij,jk->ik", { "0,3", "3,4" }, false },
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

static int n_ops(const struct es_case *c)
{
	return c->shape[2] ? 3 : c->shape[1] ? 2 : 1;
}

/* Runs the case in dtype at opset; within rtol + atol_rms times the
 * reference's root mean square (0 and 0: bit for bit). */
static int64_t es_check(const struct es_case *c, cep_dtype dt, int opset, unsigned flags,
			double rtol, double atol_rms, unsigned *seed)
{
	struct op_attr at = { .name = "equation", .type = OP_ATTR_STRING, .s = c->eq };
	struct op_tensor in[3];
	struct gpu_call d;
	char what[200];
	size_t bytes;
	int64_t bad;
	void *got;
	int i, n = n_ops(c);

	for (i = 0; i < n; i++)
		in[i] = host_tensor(dt, c->shape[i], seed, false);
	gpu_call_flags = flags;
	gpu_call_make(&d, "Einsum", opset, &at, 1, in, n, 1, -1);
	gpu_call_flags = 0;
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s: %s", c->eq,
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s: %s", c->eq, cep_last_error());
	bytes = op_tensor_bytes(&d.ref[0]);
	got = malloc(bytes ? bytes : 1);
	dev_get(got, d.out[0].data, bytes);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	snprintf(what, sizeof(what), "Einsum/%d %s %s [%s] [%s]%s", opset, cep_dtype_name(dt),
		 c->eq, c->shape[0], c->shape[1] ? c->shape[1] : "",
		 (flags & OP_CALL_TF32) ? " tf32" : "");
	bad = compare_tensor(what, &d.ref[0], got, rtol, atol_rms * rms(&d.ref[0]));
	free(got);
	gpu_call_free(&d);
	free_inputs(in, n);
	return bad;
}

/* A GEMM's tolerance: its sums run in another order than the host's
 * (float32), and a half result may round the other way (one unit of its
 * last place). */
static void es_tol(cep_dtype t, bool gemm, double *rtol, double *atol_rms)
{
	if (!gemm || !cpu_is_float(t)) {
		*rtol = *atol_rms = 0.0;
		return;
	}
	*rtol = t == CEP_DTYPE_FLOAT32 ? 1e-4 : 1e-2;
	*atol_rms = t == CEP_DTYPE_BFLOAT16 ? 3e-2 : t == CEP_DTYPE_FLOAT16 ? 1e-2 : 1e-4;
}

Test(gpu_einsum, every_layout_and_type_matches_the_host)
{
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64, CEP_DTYPE_INT32,
					   CEP_DTYPE_INT8, CEP_DTYPE_UINT8 };
	unsigned seed = 71u ^ (unsigned)getpid();
	struct cublaslt *lt = NULL;
	int64_t bad = 0;
	size_t c, t, before;

	GPU_REQUIRE();
	cr_assert_eq(cuda_blas_get(gpu_be, &lt), 0, "%s", cep_last_error());
	before = cublaslt_gemm_count(lt);
	for (c = 0; c < N_CASES; c++) {
		for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
			int opset = types[t] == CEP_DTYPE_BFLOAT16 ? 28 : 12 + (int)(c % 16);
			double rtol, atol;

			es_tol(types[t], cases[c].gemm, &rtol, &atol);
			bad += es_check(&cases[c], types[t], opset, 0, rtol, atol, &seed);
		}
	}
	printf("  %zu cuBLASLt plans built\n", cublaslt_gemm_count(lt) - before);
	cr_assert_gt(cublaslt_gemm_count(lt), before, "no contraction went through cuBLASLt");
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* TF32 products: 10-bit mantissas in, float32 sums. */
Test(gpu_einsum, tf32_stays_within_its_precision)
{
	unsigned seed = 73u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t c;

	GPU_REQUIRE();
	for (c = 0; c < N_CASES; c++) {
		if (cases[c].gemm)
			bad += es_check(&cases[c], CEP_DTYPE_FLOAT32, 12, OP_CALL_TF32, 3e-3, 3e-3,
					&seed);
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
