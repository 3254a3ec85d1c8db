/*
 * test_cuda_sdpa.c — the CUDA kernel of ONNX's Attention (kernels/cuda/
 * sdpa.c) against the reference kernel of kernels/cpu/sdpa.c on fresh
 * random data: each of its kernels (tensor cores for float16 and bfloat16
 * heads up to 64 and 128 elements, the SIMT tiles of heads up to 128 and
 * 256, the rows of deeper heads and of decoding's few query rows),
 * partial tiles of queries and keys,
 * 3-D and 4-D operands, grouped heads, caches, bool and float masks of
 * each broadcast rank, the causal frontier, scale, softcap,
 * nonpad_kv_seqlen with a short mask (opset 24), windows (25),
 * softmax_precision, every qk_matmul_output mode, fully masked and NaN
 * rows, and a grid of more rows than blocks; float32, float16 and
 * bfloat16, printing the worst error of each output. The device rounds
 * every step as the host does, so the outputs differ only where float32
 * sums are taken in another order (the dot products, Y's sums, the
 * float32 and float16 softmax sums) or the device's expf and tanhf round
 * differently: the tolerance is a few units of the type.
 *
 * Everywhere: the registry gives Attention a CUDA kernel for each type
 * and opset the host has one for. On a GPU machine with CUDAEP_TEST_GPU=1
 * the rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

static const cep_dtype float_types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					 CEP_DTYPE_BFLOAT16 };

/* ------------------------------------------------------------ everywhere */

Test(cuda_sdpa, the_device_covers_what_the_host_covers)
{
	static const cep_dtype others[] = { CEP_DTYPE_INT64, CEP_DTYPE_INT32, CEP_DTYPE_BOOL };
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, checked = 0;
	size_t t;

	for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
		if (op_schema_find("", "Attention", opset, &s) != 0)
			continue;
		for (t = 0; t < 3; t++) {
			cr_assert_eq(op_kernel_find(s, opset, BACKEND_HOST, float_types[t], &host), 0);
			cr_assert_eq(op_kernel_find(s, opset, BACKEND_CUDA, float_types[t], &dev), 0,
				     "Attention/%d %s", opset, cep_dtype_name(float_types[t]));
			checked++;
		}
		for (t = 0; t < 3; t++)
			cr_assert_neq(op_kernel_find(s, opset, BACKEND_CUDA, others[t], &dev), 0);
	}
	cep__clear_error();
	/* Opsets 23 to OP_OPSET_MAX. */
	cr_assert_eq(checked, 3 * (OP_OPSET_MAX - 22));
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_sdpa, .init = gpu_setup, .fini = gpu_teardown, .timeout = 900);

/* One configuration. */
struct gcase {
	int opset;
	int rank3;
	int64_t B, Hq, Hkv, Sq, Skv, P, Dk, Dv;
	int causal;
	float scale;                   /* 0: absent */
	float softcap;
	int mask;                      /* 0 none, 1 bool, 2 float */
	int mrank;
	int64_t mdims[4];
	int nonpad;
	int64_t np[4];
	int64_t left, right;           /* -2: absent */
	int qk_mode;
	int prec;                      /* softmax_precision, 0: absent */
};

/* A host tensor of dt and dims, uniform in [-amp, amp). */
static struct op_tensor uniform(cep_dtype dt, int rank, const int64_t *dims, unsigned *seed,
				float amp)
{
	struct op_tensor t = { .dtype = dt, .rank = rank };
	int64_t n, i;

	memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
	n = op_dims_product(&t, 0, rank);
	t.data = calloc((size_t)(n ? n : 1), cep_dtype_size(dt));
	cr_assert_not_null(t.data);
	for (i = 0; i < n; i++)
		cpu_store_f(t.data, dt, i, ((float)(rnd(seed) % 65536) / 32768.0f - 1.0f) * amp);
	return t;
}

/* The tolerances of a type: a few of its units. */
static void sdpa_tol(cep_dtype dt, double *rtol, double *atol)
{
	*rtol = *atol = dt == CEP_DTYPE_BFLOAT16 ? 1.6e-2 : dt == CEP_DTYPE_FLOAT16 ? 2e-3 : 2e-5;
}

/* Fills the inputs of c in dt; returns their count. */
static int inputs_make(const struct gcase *c, cep_dtype dt, unsigned *seed, struct op_tensor *in)
{
	int n = 3, i;

	if (c->rank3) {
		in[0] = uniform(dt, 3, (int64_t[]){ c->B, c->Sq, c->Hq * c->Dk }, seed, 1.5f);
		in[1] = uniform(dt, 3, (int64_t[]){ c->B, c->Skv, c->Hkv * c->Dk }, seed, 1.5f);
		in[2] = uniform(dt, 3, (int64_t[]){ c->B, c->Skv, c->Hkv * c->Dv }, seed, 1.0f);
	} else {
		in[0] = uniform(dt, 4, (int64_t[]){ c->B, c->Hq, c->Sq, c->Dk }, seed, 1.5f);
		in[1] = uniform(dt, 4, (int64_t[]){ c->B, c->Hkv, c->Skv, c->Dk }, seed, 1.5f);
		in[2] = uniform(dt, 4, (int64_t[]){ c->B, c->Hkv, c->Skv, c->Dv }, seed, 1.0f);
	}
	for (i = 3; i < 7; i++)
		in[i] = (struct op_tensor){ .dtype = CEP_DTYPE_UNDEFINED };
	if (c->mask == 1) {
		int64_t k, m;

		in[3] = (struct op_tensor){ .dtype = CEP_DTYPE_BOOL, .rank = c->mrank };
		memcpy(in[3].dims, c->mdims, sizeof(c->mdims));
		m = op_dims_product(&in[3], 0, c->mrank);
		in[3].data = malloc((size_t)m + 1);
		cr_assert_not_null(in[3].data);
		/* Three in four keys attend. */
		for (k = 0; k < m; k++)
			((uint8_t *)in[3].data)[k] = rnd(seed) % 4 != 0;
		n = 4;
	} else if (c->mask == 2) {
		in[3] = uniform(dt, c->mrank, c->mdims, seed, 2.0f);
		n = 4;
	}
	if (c->P > 0) {
		in[4] = uniform(dt, 4, (int64_t[]){ c->B, c->Hkv, c->P, c->Dk }, seed, 1.5f);
		in[5] = uniform(dt, 4, (int64_t[]){ c->B, c->Hkv, c->P, c->Dv }, seed, 1.0f);
		n = 6;
	}
	if (c->nonpad) {
		in[6] = int64_tensor(c->np, (int)c->B);
		n = 7;
	}
	return n;
}

/* The attributes of c into at; returns their count. */
static int attrs_make(const struct gcase *c, struct op_attr *at)
{
	int n = 0;

	if (c->rank3) {
		at[n++] = (struct op_attr){ .name = "q_num_heads", .type = OP_ATTR_INT, .i = c->Hq };
		at[n++] = (struct op_attr){ .name = "kv_num_heads", .type = OP_ATTR_INT, .i = c->Hkv };
	}
	if (c->causal)
		at[n++] = (struct op_attr){ .name = "is_causal", .type = OP_ATTR_INT, .i = 1 };
	if (c->scale > 0.0f)
		at[n++] = (struct op_attr){ .name = "scale", .type = OP_ATTR_FLOAT, .f = c->scale };
	if (c->softcap > 0.0f)
		at[n++] = (struct op_attr){ .name = "softcap", .type = OP_ATTR_FLOAT, .f = c->softcap };
	if (c->left != -2)
		at[n++] = (struct op_attr){ .name = "left_window_size", .type = OP_ATTR_INT,
					    .i = c->left };
	if (c->right != -2)
		at[n++] = (struct op_attr){ .name = "right_window_size", .type = OP_ATTR_INT,
					    .i = c->right };
	if (c->prec)
		at[n++] = (struct op_attr){ .name = "softmax_precision", .type = OP_ATTR_INT,
					    .i = c->prec };
	at[n++] = (struct op_attr){ .name = "qk_matmul_output_mode", .type = OP_ATTR_INT,
				    .i = c->qk_mode };
	return n;
}

/* Runs c in dt on both backends and compares the four outputs; returns
 * the mismatches. poison, when set, changes the inputs before the run. */
static int64_t check_case(const struct gcase *c, cep_dtype dt, unsigned seed, const char *what,
			  void (*poison)(struct op_tensor *in))
{
	static const char *const names[4] = { "Y", "present_key", "present_value", "qk" };
	struct op_attr at[12];
	struct op_tensor in[7];
	struct gpu_call d;
	int64_t bad = 0;
	int n_in, n_at, i;

	n_in = inputs_make(c, dt, &seed, in);
	if (poison)
		poison(in);
	n_at = attrs_make(c, at);
	gpu_call_make(&d, "Attention", c->opset, at, n_at, in, n_in, 4, -1);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s: %s", what, cep_last_error());
	for (i = 0; i < 4; i++) {
		size_t bytes = op_tensor_bytes(&d.ref[i]);
		void *got = malloc(bytes ? bytes : 1);
		double rtol = 0.0, atol = 0.0;
		char label[200];

		dev_get(got, d.out[i].data, bytes);
		cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
		/* The caches are copies: exact. The scores before the softmax
		 * reach tens. */
		if (i == 0 || i == 3)
			sdpa_tol(dt, &rtol, &atol);
		if (i == 3 && c->qk_mode < 3)
			atol *= 8;
		snprintf(label, sizeof(label), "%s %s %s", what, cep_dtype_name(dt), names[i]);
		bad += compare_tensor(label, &d.ref[i], got, rtol, atol);
		free(got);
	}
	gpu_call_free(&d);
	for (i = 0; i < n_in; i++)
		free(in[i].data);
	return bad;
}

Test(gpu_sdpa, every_kernel_and_option_matches_the_host)
{
	static const struct gcase cases[] = {
		/* opset rank3 B Hq Hkv Sq Skv P Dk Dv causal scale softcap mask mrank mdims
		 * nonpad np left right mode prec */
		/* Tiles of 16 rows, heads up to 128. */
		{ 23, 0, 2, 4, 4, 37, 100, 0, 64, 64, 0, 0, 0, 0, 0, { 0 }, 0, { 0 }, -2, -2, 0, 0 },
		{ 23, 1, 2, 8, 2, 37, 77, 20, 64, 64, 1, 0, 0, 0, 0, { 0 }, 0, { 0 }, -2, -2, 3, 0 },
		{ 23, 0, 1, 4, 1, 50, 50, 0, 80, 96, 1, 0.3f, 0, 1, 4, { 1, 4, 50, 50 }, 0, { 0 },
		  -2, -2, 2, 0 },
		{ 23, 0, 2, 2, 2, 16, 33, 31, 128, 128, 0, 0, 0, 1, 4, { 2, 1, 16, 64 }, 0, { 0 },
		  -2, -2, 1, 0 },
		{ 23, 1, 1, 6, 3, 5, 200, 0, 40, 24, 0, 0, 20.0f, 2, 2, { 5, 200 }, 0, { 0 }, -2, -2,
		  1, 0 },
		{ 23, 0, 1, 2, 2, 1, 1000, 0, 128, 128, 0, 0, 0, 2, 3, { 2, 1, 1000 }, 0, { 0 }, -2,
		  -2, 3, 0 },
		{ 23, 0, 3, 4, 4, 9, 9, 0, 32, 32, 1, 0, 0, 0, 0, { 0 }, 0, { 0 }, -2, -2, 3, 1 },
		{ 23, 0, 2, 2, 2, 20, 40, 0, 64, 64, 0, 0, 0, 2, 1, { 40 }, 0, { 0 }, -2, -2, 3, 10 },
		/* Tiles of 8 rows, heads up to 256. */
		{ 23, 0, 1, 2, 2, 19, 70, 0, 256, 256, 1, 0, 30.0f, 2, 2, { 19, 70 }, 0, { 0 }, -2,
		  -2, 3, 0 },
		{ 23, 1, 2, 4, 2, 11, 45, 6, 160, 200, 0, 0, 0, 1, 2, { 11, 51 }, 0, { 0 }, -2, -2,
		  2, 0 },
		/* A block per row beyond. */
		{ 23, 0, 1, 2, 1, 7, 300, 4, 300, 264, 1, 0, 0, 2, 4, { 1, 2, 7, 304 }, 0, { 0 },
		  -2, -2, 3, 0 },
		{ 23, 0, 1, 1, 1, 3, 5, 0, 1000, 40, 0, 0, 0, 0, 0, { 0 }, 0, { 0 }, -2, -2, 0, 0 },
		/* Decoding: a block per row. */
		{ 23, 0, 4, 8, 2, 3, 1, 500, 128, 128, 1, 0, 0, 0, 0, { 0 }, 0, { 0 }, -2, -2, 3, 0 },
		{ 23, 1, 2, 4, 4, 4, 4, 60, 64, 64, 1, 0, 0, 2, 4, { 2, 1, 4, 64 }, 0, { 0 }, -2, -2,
		  2, 0 },
		/* Opset 24: nonpad_kv_seqlen, a short mask, negative offsets. */
		{ 24, 0, 3, 4, 2, 12, 64, 0, 64, 64, 1, 0, 0, 2, 4, { 3, 1, 12, 40 }, 1,
		  { 40, 5, 64 }, -2, -2, 3, 0 },
		{ 24, 1, 2, 2, 2, 1, 90, 0, 96, 96, 1, 0, 0, 1, 2, { 1, 70 }, 1, { 70, 33 }, -2, -2,
		  2, 0 },
		/* Opset 25: windows. */
		{ 25, 0, 1, 4, 2, 40, 40, 0, 64, 64, 0, 0, 0, 0, 0, { 0 }, 0, { 0 }, 5, 2, 3, 0 },
		{ 25, 0, 2, 2, 2, 8, 8, 30, 128, 128, 1, 0, 0, 1, 2, { 8, 38 }, 0, { 0 }, 10, -1, 2,
		  0 },
		{ 25, 1, 2, 2, 1, 16, 50, 0, 200, 200, 0, 0, 0, 0, 0, { 0 }, 1, { 50, 20 }, 3, 3, 3,
		  0 },
	};
	unsigned seed = 41u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t i, t;

	GPU_REQUIRE();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (t = 0; t < 3; t++) {
			char what[32];

			snprintf(what, sizeof(what), "case %zu", i);
			bad += check_case(&cases[i], float_types[t], seed + (unsigned)(7 * i + t), what,
					  NULL);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* NaN in one query row: that row is NaN on both backends, the others not. */
static void nan_row(struct op_tensor *in)
{
	cpu_store_f(in[0].data, in[0].dtype, 5, NAN);
}

/* A bool mask with fully masked rows (every other row of batch 0 false). */
static void masked_rows(struct op_tensor *in)
{
	int64_t i, j, T = in[3].dims[1];

	for (i = 0; i < in[3].dims[0]; i += 2)
		for (j = 0; j < T; j++)
			((uint8_t *)in[3].data)[i * T + j] = 0;
}

Test(gpu_sdpa, fully_masked_and_nan_rows_match_the_host)
{
	static const struct gcase rows = { 23, 0, 1, 2, 2, 20, 40, 0, 64, 64, 0, 0, 0, 1, 2,
					   { 20, 40 }, 0, { 0 }, -2, -2, 3, 0 };
	static const struct gcase deep = { 23, 0, 1, 2, 2, 6, 40, 0, 300, 300, 0, 0, 0, 1, 2,
					   { 6, 40 }, 0, { 0 }, -2, -2, 3, 0 };
	unsigned seed = 43u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t t;

	GPU_REQUIRE();
	for (t = 0; t < 3; t++) {
		bad += check_case(&rows, float_types[t], seed + (unsigned)t, "masked rows", masked_rows);
		bad += check_case(&rows, float_types[t], seed + (unsigned)t, "a NaN row", nan_row);
		bad += check_case(&deep, float_types[t], seed + (unsigned)t, "deep masked rows",
				  masked_rows);
		bad += check_case(&deep, float_types[t], seed + (unsigned)t, "deep NaN row", nan_row);
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* More query rows than the grid has blocks: the kernels loop over them. */
Test(gpu_sdpa, more_rows_than_blocks)
{
	static const struct gcase tiles = { 23, 0, 2, 4, 4, 131072, 3, 0, 16, 16, 0, 0, 0, 0, 0,
					    { 0 }, 0, { 0 }, -2, -2, 0, 0 };
	static const struct gcase tc = { 23, 0, 4, 8, 8, 131104, 3, 0, 16, 16, 0, 0, 0, 0, 0,
					 { 0 }, 0, { 0 }, -2, -2, 0, 0 };
	static const struct gcase rows = { 23, 0, 2, 1, 1, 33000, 2, 0, 264, 264, 0, 0, 0, 0, 0,
					   { 0 }, 0, { 0 }, -2, -2, 0, 0 };
	unsigned seed = 47u ^ (unsigned)getpid();
	int64_t bad = 0;

	GPU_REQUIRE();
	bad += check_case(&tiles, CEP_DTYPE_FLOAT32, seed, "131072 x 8 rows in SIMT tiles", NULL);
	bad += check_case(&tc, CEP_DTYPE_FLOAT16, seed, "131104 x 32 rows in tensor-core tiles",
			  NULL);
	bad += check_case(&rows, CEP_DTYPE_BFLOAT16, seed, "66000 rows", NULL);
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
