/*
 * test_cuda_ms_mha.c — the CUDA kernel of com.microsoft MultiHeadAttention
 * (kernels/cuda/ms_mha.c) against the host's (test_ops_ms_mha.c checks
 * that one against a reference): every form of Q, K and V with bias, each
 * key_padding_mask form, attention_bias, past and present, unidirectional,
 * over heads of each of the internal Attention's kernels (tensor-core and
 * tiled 64, tiled 128, rows), on fresh random data in float32, float16 and
 * bfloat16, the output compared within 1e-4 (float32) or 1e-2 (16-bit
 * types) of its root mean square and the present outputs likewise,
 * printing the worst absolute and relative error of each.
 *
 * Everywhere: the registry gives MultiHeadAttention a CUDA kernel for each
 * type the host has one for, and the kernels the launcher names are in
 * ms_attention.cu's image (where NVRTC is installed). On a GPU machine
 * with CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips, visibly.
 */
#include "gpu/cuda/nvrtc.h"
#include "kernels/cuda/launch.h"
#include "tests/unit/cuda_util.h"

#define MS OP_DOMAIN_MS
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const cep_dtype float_types[3] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16,
};

/* ------------------------------------------------------------ everywhere */

Test(cuda_ms_mha, the_device_covers_what_the_host_covers)
{
	static const cep_dtype all[] = {
		CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_FLOAT64,
		CEP_DTYPE_INT32, CEP_DTYPE_INT64,
	};
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	size_t t;

	cr_assert_eq(op_schema_find(MS, "MultiHeadAttention", 1, &s), 0, "%s", cep_last_error());
	for (t = 0; t < N_OF(all); t++) {
		bool has_host = op_kernel_find(s, 1, BACKEND_HOST, all[t], &host) == 0;
		bool has_dev = op_kernel_find(s, 1, BACKEND_CUDA, all[t], &dev) == 0;

		cr_assert_eq(has_dev, has_host, "%s: host %d, cuda %d", cep_dtype_name(all[t]),
			     has_host, has_dev);
		cr_assert_eq(has_host, t < 3, "%s", cep_dtype_name(all[t]));
	}
}

Test(cuda_ms_mha, the_kernels_it_names_compile)
{
	static const char *const formats[] = { "mha_gather_%s", "msa_mask_%s", "msa_bias_%s" };
	struct nvrtc_lib *lib = NULL;
	struct nvrtc_source src;
	void *image = NULL;
	char name[64];
	size_t size, f, t;

	if (nvrtc_lib_open(NULL, &lib) != 0) {
		fprintf(stderr, "[SKIP] needs NVRTC (no GPU needed): %s\n", cep_last_error());
		cr_skip_test("needs NVRTC: %s", cep_last_error());
	}
	cr_assert_eq(cuda_source_get("ms_attention", &src), 0, "%s", cep_last_error());
	cr_assert_eq(nvrtc_compile(lib, &src, 90, &image, &size), 0, "%s", cep_last_error());
	for (f = 0; f < N_OF(formats); f++) {
		for (t = 0; t < N_OF(float_types); t++) {
			snprintf(name, sizeof(name), formats[f], cuda_dtype_suffix(float_types[t]));
			cr_assert(cuda_image_has(image, size, name), "%s", name);
		}
	}
	free(image);
	nvrtc_lib_free(lib);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_ms_mha, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* Runs MultiHeadAttention on both backends; compares the output and the
 * present outputs as test_cuda_contrib.c compares Attention's. */
static int64_t check_mha(const struct op_attr *attrs, int n_attrs, const struct op_tensor *in,
			 int n_in, const char *label)
{
	double tol = in[0].dtype == CEP_DTYPE_FLOAT32 ? 1e-4 : 1e-2;
	struct gpu_call d;
	int64_t bad = 0;
	int i;

	gpu_call_make_in(&d, MS, "MultiHeadAttention", 1, attrs, n_attrs, in, n_in, 3, -1);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	for (i = 0; i < 3; i++) {
		size_t bytes = op_tensor_bytes(&d.ref[i]);
		void *got = malloc(bytes ? bytes : 1);
		char what[240];

		dev_get(got, d.out[i].data, bytes);
		cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
		snprintf(what, sizeof(what), "MultiHeadAttention %s (output %d)", label, i);
		bad += compare_tensor(what, &d.ref[i], got, tol, tol * rms(&d.ref[i]));
		free(got);
	}
	gpu_call_free(&d);
	return bad;
}

/*
 * Whisper's cross attention (keys in heads), BERT's self attention (12
 * heads of 64, lengths), T5's with attention_bias per head, a decoder step
 * with past and causal, packed K and V, packed Q, K and V, heads of 128
 * and of 160 (the rows kernel), V narrower than K.
 */
Test(gpu_ms_mha, forms_masks_past_and_depths)
{
	static const struct {
		int form;           /* 0 separate, 1 packed KV, 2 KV in heads, 3 packed QKV */
		int64_t B, S, L, P, N, H, Hv;
		int mask;           /* 0 none, 1 lengths, 2 (B, T), 3 (B, S, T) */
		int ab;             /* 0 none, 1 (1, N, S, T), 2 (B, 1, S, T) */
		bool causal, bias;
	} cases[] = {
		{ 2, 2, 5, 60, 0, 6, 64, 64, 0, 0, false, false },
		{ 0, 2, 128, 128, 0, 12, 64, 64, 1, 0, false, true },
		{ 0, 2, 33, 40, 0, 4, 64, 32, 3, 1, false, true },
		{ 0, 3, 1, 1, 17, 4, 64, 64, 2, 0, true, true },
		{ 1, 2, 20, 24, 0, 2, 128, 128, 2, 2, false, false },
		{ 3, 2, 50, 50, 8, 2, 160, 160, 0, 0, true, true },
		{ 3, 1, 7, 7, 0, 4, 16, 16, 1, 1, true, true },
	};
	unsigned seed = 83u ^ (unsigned)getpid();
	struct op_tensor in[8];
	struct op_tensor none = { .dtype = CEP_DTYPE_UNDEFINED };
	char label[200], shape[80];
	int64_t bad = 0;
	size_t c, t;

	GPU_REQUIRE();
	for (c = 0; c < N_OF(cases); c++) {
		for (t = 0; t < N_OF(float_types); t++) {
			cep_dtype dt = float_types[t];
			int64_t B = cases[c].B, S = cases[c].S, L = cases[c].L, P = cases[c].P;
			int64_t N = cases[c].N, H = cases[c].H, Hv = cases[c].Hv, T = P + L, i;
			struct op_attr attrs[2] = {
				{ .name = "num_heads", .type = OP_ATTR_INT, .i = N },
				{ .name = "unidirectional", .type = OP_ATTR_INT, .i = cases[c].causal },
			};

			for (i = 0; i < 8; i++)
				in[i] = none;
			if (cases[c].form == 3) {
				snprintf(shape, sizeof(shape), "%lld,%lld,%lld,3,%lld", (long long)B,
					 (long long)S, (long long)N, (long long)H);
				in[0] = host_tensor(dt, shape, &seed, false);
			} else {
				snprintf(shape, sizeof(shape), "%lld,%lld,%lld", (long long)B,
					 (long long)S, (long long)(N * H));
				in[0] = host_tensor(dt, shape, &seed, false);
			}
			if (cases[c].form == 0) {
				snprintf(shape, sizeof(shape), "%lld,%lld,%lld", (long long)B,
					 (long long)L, (long long)(N * H));
				in[1] = host_tensor(dt, shape, &seed, false);
				snprintf(shape, sizeof(shape), "%lld,%lld,%lld", (long long)B,
					 (long long)L, (long long)(N * Hv));
				in[2] = host_tensor(dt, shape, &seed, false);
			} else if (cases[c].form == 1) {
				snprintf(shape, sizeof(shape), "%lld,%lld,%lld,2,%lld", (long long)B,
					 (long long)L, (long long)N, (long long)H);
				in[1] = host_tensor(dt, shape, &seed, false);
			} else if (cases[c].form == 2) {
				snprintf(shape, sizeof(shape), "%lld,%lld,%lld,%lld", (long long)B,
					 (long long)N, (long long)L, (long long)H);
				in[1] = host_tensor(dt, shape, &seed, false);
				snprintf(shape, sizeof(shape), "%lld,%lld,%lld,%lld", (long long)B,
					 (long long)N, (long long)L, (long long)Hv);
				in[2] = host_tensor(dt, shape, &seed, false);
			}
			if (cases[c].bias) {
				snprintf(shape, sizeof(shape), "%lld", (long long)(2 * N * H + N * Hv));
				in[3] = host_tensor(dt, shape, &seed, false);
			}
			if (cases[c].mask > 0) {
				if (cases[c].mask == 1)
					snprintf(shape, sizeof(shape), "%lld", (long long)B);
				else if (cases[c].mask == 2)
					snprintf(shape, sizeof(shape), "%lld,%lld", (long long)B,
						 (long long)T);
				else
					snprintf(shape, sizeof(shape), "%lld,%lld,%lld", (long long)B,
						 (long long)S, (long long)T);
				in[4] = host_tensor(CEP_DTYPE_INT32, shape, &seed, false);
				for (i = 0; i < op_dims_product(&in[4], 0, in[4].rank); i++) {
					int32_t *m = in[4].data;

					/* Lengths in [1, T]; raw masks keep key 0. */
					m[i] = cases[c].mask == 1 ? (int32_t)(1 + (unsigned)m[i] % T)
								  : i % T == 0 || (m[i] & 3) != 0;
				}
			}
			if (cases[c].ab > 0) {
				snprintf(shape, sizeof(shape), "%lld,%lld,%lld,%lld",
					 (long long)(cases[c].ab == 2 ? B : 1),
					 (long long)(cases[c].ab == 1 ? N : 1), (long long)S, (long long)T);
				in[5] = host_tensor(dt, shape, &seed, false);
			}
			if (P > 0) {
				snprintf(shape, sizeof(shape), "%lld,%lld,%lld,%lld", (long long)B,
					 (long long)N, (long long)P, (long long)H);
				in[6] = host_tensor(dt, shape, &seed, false);
				snprintf(shape, sizeof(shape), "%lld,%lld,%lld,%lld", (long long)B,
					 (long long)N, (long long)P, (long long)Hv);
				in[7] = host_tensor(dt, shape, &seed, false);
			}
			snprintf(label, sizeof(label), "%s form %d B %lld S %lld L %lld P %lld, %lld heads of %lld/%lld, mask %d, bias %d%s",
				 cep_dtype_name(dt), cases[c].form, (long long)B, (long long)S,
				 (long long)L, (long long)P, (long long)N, (long long)H, (long long)Hv,
				 cases[c].mask, cases[c].ab, cases[c].causal ? ", causal" : "");
			bad += check_mha(attrs, 2, in, 8, label);
			free_all(in, 8);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
