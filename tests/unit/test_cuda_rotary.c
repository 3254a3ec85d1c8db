/*
 * test_cuda_rotary.c — the CUDA kernel of RotaryEmbedding (kernels/cuda/
 * rotary.c) against the reference kernel of kernels/cpu/rotary.c on fresh
 * random data: 3-D and 4-D inputs, in halves and interleaved, full and
 * partial rotary dimensions, with position_ids (negative ones among them)
 * and without, caches broadcast over the batch; float32, float16 and
 * bfloat16. Both round each product and the sum to the type without
 * fused multiply-adds, and the caches are data, so the outputs must be
 * equal bit for bit. A position out of range, read on the device, fails
 * the run with the operator named, as on the host. com.microsoft's form
 * (an offset or a table of positions, 3-D and 4-D, partial rotations) too.
 *
 * Everywhere: the registry gives RotaryEmbedding a CUDA kernel for each
 * type and opset the host has one for. On a GPU machine with
 * CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

static const cep_dtype float_types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					 CEP_DTYPE_BFLOAT16 };

/* ------------------------------------------------------------ everywhere */

Test(cuda_rotary, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *k;
	int opset, checked = 0;
	size_t t;

	for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
		if (op_schema_find("", "RotaryEmbedding", opset, &s) != 0)
			continue;
		for (t = 0; t < 3; t++) {
			cr_assert_eq(op_kernel_find(s, opset, BACKEND_HOST, float_types[t], &k), 0);
			cr_assert_eq(op_kernel_find(s, opset, BACKEND_CUDA, float_types[t], &k), 0,
				     "RotaryEmbedding/%d %s", opset, cep_dtype_name(float_types[t]));
			checked++;
		}
		cr_assert_neq(op_kernel_find(s, opset, BACKEND_CUDA, CEP_DTYPE_INT32, &k), 0);
	}
	cep__clear_error();
	cr_assert_eq(checked, 3 * (OP_OPSET_MAX - 22));
	cr_assert_eq(op_schema_find("com.microsoft", "RotaryEmbedding", 1, &s), 0);
	for (t = 0; t < 3; t++) {
		cr_assert_eq(op_kernel_find(s, 1, BACKEND_HOST, float_types[t], &k), 0);
		cr_assert_eq(op_kernel_find(s, 1, BACKEND_CUDA, float_types[t], &k), 0);
	}
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_rotary, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

struct rcase {
	int rank3;
	int64_t B, H, S, D;
	int64_t rot;                   /* rotary_embedding_dim, 0: all */
	int interleaved;
	int64_t rows;                  /* cache rows with position_ids, 0: none */
	int64_t cb;                    /* the caches' batch without ids (1 broadcasts) */
};

/* Runs c in dt on both backends; returns the mismatches. */
static int64_t check_case(const struct rcase *c, cep_dtype dt, unsigned *seed)
{
	int64_t half = (c->rot ? c->rot : c->D) / 2, i, n_pos = c->B * c->S;
	struct op_attr at[3] = {
		{ .name = "interleaved", .type = OP_ATTR_INT, .i = c->interleaved },
		{ .name = "rotary_embedding_dim", .type = OP_ATTR_INT, .i = c->rot },
		{ .name = "num_heads", .type = OP_ATTR_INT, .i = c->H },
	};
	struct op_tensor in[4];
	char shape[64], cshape[64], label[160];
	int n_in = 3;

	if (c->rank3)
		snprintf(shape, sizeof(shape), "%lld,%lld,%lld", (long long)c->B, (long long)c->S,
			 (long long)(c->H * c->D));
	else
		snprintf(shape, sizeof(shape), "%lld,%lld,%lld,%lld", (long long)c->B,
			 (long long)c->H, (long long)c->S, (long long)c->D);
	if (c->rows)
		snprintf(cshape, sizeof(cshape), "%lld,%lld", (long long)c->rows, (long long)half);
	else
		snprintf(cshape, sizeof(cshape), "%lld,%lld,%lld", (long long)c->cb,
			 (long long)c->S, (long long)half);
	in[0] = host_tensor(dt, shape, seed, false);
	in[1] = host_tensor(dt, cshape, seed, false);
	in[2] = host_tensor(dt, cshape, seed, false);
	if (c->rows) {
		int64_t *pos = malloc(sizeof(int64_t) * (size_t)n_pos);

		cr_assert_not_null(pos);
		/* Every row, negative ones too. */
		for (i = 0; i < n_pos; i++)
			pos[i] = (int64_t)(rnd(seed) % (unsigned)(2 * c->rows)) - c->rows;
		in[3] = (struct op_tensor){ .data = pos, .dtype = CEP_DTYPE_INT64, .rank = 2,
					    .dims = { c->B, c->S } };
		n_in = 4;
	}
	snprintf(label, sizeof(label), "%s [%s] caches [%s] rot %lld%s", cep_dtype_name(dt), shape,
		 cshape, (long long)c->rot, c->interleaved ? " interleaved" : "");
	/* Bit for bit. */
	i = gpu_check_tol("RotaryEmbedding", 23, at, c->rank3 ? 3 : 2, in, n_in, 1, -1, 0.0, label);
	free_all(in, n_in);
	return i;
}

Test(gpu_rotary, every_layout_and_type_matches_the_host_bit_for_bit)
{
	static const struct rcase cases[] = {
		{ 0, 2, 4, 33, 64, 0, 0, 100, 0 },
		{ 0, 2, 4, 33, 64, 0, 1, 100, 0 },
		{ 1, 3, 8, 17, 128, 64, 0, 40, 0 },
		{ 1, 3, 8, 17, 128, 32, 1, 40, 0 },
		{ 0, 1, 2, 1000, 80, 0, 0, 0, 1 },
		{ 1, 4, 3, 9, 16, 8, 1, 0, 4 },
		{ 1, 2, 1, 5, 6, 2, 0, 0, 1 },
	};
	unsigned seed = 53u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t i, t;

	GPU_REQUIRE();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (t = 0; t < 3; t++)
			bad += check_case(&cases[i], float_types[t], &seed);
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_rotary, a_position_out_of_range_fails_the_run_with_the_op_named)
{
	static const int64_t bad_pos[] = { 0, 3, 60, 1 }, good_pos[] = { 0, 3, -50, 1 };
	unsigned seed = 59u ^ (unsigned)getpid();
	struct op_tensor in[4];
	struct gpu_call d;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT16, "1,2,4,8", &seed, false);
	in[1] = host_tensor(CEP_DTYPE_FLOAT16, "50,4", &seed, false);
	in[2] = host_tensor(CEP_DTYPE_FLOAT16, "50,4", &seed, false);
	in[3] = (struct op_tensor){ .data = (void *)good_pos, .dtype = CEP_DTYPE_INT64, .rank = 2,
				    .dims = { 1, 4 } };
	gpu_call_make(&d, "RotaryEmbedding", 23, NULL, 0, in, 4, 1, -1);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[3].data, bad_pos, sizeof(bad_pos)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: index 60 is out of range for "
			 "dimension 0 of size 50");
	printf("  a bad position: %s\n", cep_last_error());
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), &d.call);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	gpu_call_free(&d);
	free_all(in, 3);
}

/* com.microsoft RotaryEmbedding on both backends over in (4 inputs);
 * returns the mismatches (bit for bit). */
static int64_t ms_check(const struct op_attr *at, int n_at, struct op_tensor *in, const char *what)
{
	struct op_node node = { .name = "n", .op_type = "RotaryEmbedding", .domain = "com.microsoft",
				.opset = 1, .n_attrs = n_at, .attrs = at };
	struct op_tensor ref[1], out[1], dev[4];
	struct op_infer x = { .node = &node, .n_in = 4, .n_out = 1, .in = in, .out = ref };
	const struct op_schema *s;
	const struct op_kernel *host, *cuda;
	struct op_call call;
	size_t ws = 0;
	int64_t bad;
	void *got;
	int i;

	cr_assert_eq(op_schema_find("com.microsoft", "RotaryEmbedding", 1, &s), 0);
	cr_assert_eq(s->infer(&x), 0, "%s", cep_last_error());
	cr_assert_eq(op_kernel_find(s, 1, BACKEND_HOST, in[0].dtype, &host), 0);
	cr_assert_eq(op_kernel_find(s, 1, BACKEND_CUDA, in[0].dtype, &cuda), 0);
	cr_assert_eq(exec_host_eval(&node, host, in, 4, ref, 1), 0, "%s", cep_last_error());
	out[0] = ref[0];
	cr_assert_eq(backend_mem_alloc(gpu_be, op_tensor_bytes(&out[0]), &out[0].data), 0);
	dev_poison(out[0].data, op_tensor_bytes(&out[0]));
	for (i = 0; i < 4; i++) {
		dev[i] = in[i];
		dev[i].data = NULL;
	}
	call = (struct op_call){ .node = &node, .n_in = 4, .n_out = 1, .in = dev, .out = out,
				 .be = gpu_be };
	/* As the planner does, prepare() sees shapes but no data. */
	cr_assert_eq(cuda->prepare(&call, &ws), 0, "%s", cep_last_error());
	for (i = 0; i < 4; i++)
		dev[i].data = dev_put(in[i].data, op_tensor_bytes(&in[i]));
	cr_assert_eq(backend_launch(gpu_be, gpu_s, cuda->run, &call), 0, "%s", cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	got = malloc(op_tensor_bytes(&ref[0]));
	dev_get(got, out[0].data, op_tensor_bytes(&ref[0]));
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	bad = compare_tensor(what, &ref[0], got, 0.0, 0.0);
	free(got);
	free(ref[0].data);
	backend_mem_free(gpu_be, out[0].data, op_tensor_bytes(&out[0]));
	for (i = 0; i < 4; i++)
		backend_mem_free(gpu_be, dev[i].data, op_tensor_bytes(&in[i]));
	return bad;
}

Test(gpu_rotary, the_microsoft_form_matches_the_host_bit_for_bit)
{
	unsigned seed = 61u ^ (unsigned)getpid();
	int64_t bad = 0, off = 7, *ids;
	size_t t;
	int i, il;

	GPU_REQUIRE();
	ids = malloc(sizeof(int64_t) * 3 * 40);
	for (t = 0; t < 3; t++) {
		for (il = 0; il < 2; il++) {
			struct op_attr at[3] = {
				{ .name = "interleaved", .type = OP_ATTR_INT, .i = il },
				{ .name = "num_heads", .type = OP_ATTR_INT, .i = 4 },
				{ .name = "rotary_embedding_dim", .type = OP_ATTR_INT, .i = 32 },
			};
			struct op_tensor in[4];
			char what[96];

			for (i = 0; i < 3 * 40; i++)
				ids[i] = (int64_t)(rnd(&seed) % 100);
			/* 3-D, an offset, a partial rotation. */
			in[0] = host_tensor(float_types[t], "3,40,256", &seed, false);
			in[1] = int64_tensor(&off, 1);
			in[2] = host_tensor(float_types[t], "100,16", &seed, false);
			in[3] = host_tensor(float_types[t], "100,16", &seed, false);
			snprintf(what, sizeof(what), "com.microsoft %s [3,40,256] offset%s",
				 cep_dtype_name(float_types[t]), il ? " interleaved" : "");
			bad += ms_check(at, 3, in, what);
			free(in[1].data);
			/* A table of positions. */
			in[1] = (struct op_tensor){ .data = ids, .dtype = CEP_DTYPE_INT64, .rank = 2,
						    .dims = { 3, 40 } };
			bad += ms_check(at, 3, in, what);
			free_all(in, 1);
			free_all(&in[2], 2);
			/* 4-D, the whole head. */
			in[0] = host_tensor(float_types[t], "3,4,40,64", &seed, false);
			in[2] = host_tensor(float_types[t], "100,32", &seed, false);
			in[3] = host_tensor(float_types[t], "100,32", &seed, false);
			snprintf(what, sizeof(what), "com.microsoft %s [3,4,40,64] ids%s",
				 cep_dtype_name(float_types[t]), il ? " interleaved" : "");
			bad += ms_check(at, 1, in, what);
			free_all(in, 1);
			free_all(&in[2], 2);
		}
	}
	free(ids);
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
