/*
 * test_cuda_kernels.c — every CUDA kernel of kernels/cuda against the
 * reference kernel of kernels/cpu on fresh random data (specials such as
 * NaN, infinities, subnormals and integer extremes included), printing
 * the worst absolute and relative error of each case: Add, Sub, Mul, Div
 * under broadcasting for every numeric type; the unary functions for every
 * type the host takes at each opset; Cast between every pair of types
 * (bit for bit); Transpose, Concat, Gather and the reshaping copies; and a
 * Gather index out of range failing the run with the host's message.
 *
 * Everywhere: the registry gives every operator a CUDA kernel for each
 * type and opset the host has one for, and none where the host has none.
 * On a GPU machine with CUDAEP_TEST_GPU=1 the rest runs; elsewhere it
 * skips, visibly.
 */
#include "tests/unit/cuda_util.h"

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))

/* ------------------------------------------------------------ everywhere */

/* Every operator of the registry, in every domain (the internal ones
 * too), at every opset and for every stored type: the CUDA backend has a
 * kernel exactly where the host has one. Only operators that never launch
 * are left out: those whose outputs follow from shapes alone (Shape, Size)
 * and those without inputs (Constant), which are folded at load. */
Test(cuda_kernels, the_device_covers_what_the_host_covers)
{
	const struct op_kernel *host, *dev;
	int i, opset, checked = 0;
	size_t t;

	for (i = 0; i < op_schema_count(); i++) {
		const struct op_schema *s = op_schema_at(i);

		if ((s->flags & OP_SHAPE_ONLY) || s->max_in == 0)
			continue;
		for (opset = s->since; opset <= s->until && opset <= OP_OPSET_MAX; opset++) {
			for (t = 0; t < N_TYPES; t++) {
				bool has_host = op_kernel_find(s, opset, BACKEND_HOST, all_types[t],
							       &host) == 0;
				bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, all_types[t],
							      &dev) == 0;

				cr_assert_eq(has_dev, has_host, "%s %s/%d %s: host %d, cuda %d",
					     op_domain_name(s->domain), s->op_type, opset,
					     cep_dtype_name(all_types[t]), has_host, has_dev);
				if (has_dev) {
					cr_assert_eq(dev->backend, BACKEND_CUDA);
					checked++;
				}
			}
		}
	}
	cr_assert_gt(checked, 8000);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_kernels, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* Runs op on the host (the reference) and on the device over the same
 * inputs and compares; returns the mismatches. exact: compare float types
 * bit for bit too (NaN still matches NaN). */
static int64_t check_op(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
			const struct op_tensor *in, int n_in, const char *label, bool exact)
{
	const struct op_kernel *host;
	struct op_tensor ref;
	struct dev_call d;
	double rtol, atol;
	char what[160];
	size_t bytes;
	int64_t bad;
	void *got;

	cr_assert_eq(dev_call_make(&d, op, opset, attrs, n_attrs, in, n_in), 0, "%s",
		     cep_last_error());
	ref = d.out;
	ref.data = NULL;
	cr_assert_eq(op_kernel_find(d.schema, opset, BACKEND_HOST,
				    op_kernel_dtype(d.schema, in, n_in, &ref, 1), &host), 0);
	cr_assert_eq(exec_host_eval(&d.node, host, in, n_in, &ref, 1), 0, "%s", cep_last_error());
	cr_assert_eq(dev_call_launch(&d), 0, "%s: %s", op, cep_last_error());
	bytes = op_tensor_bytes(&ref);
	got = malloc(bytes ? bytes : 1);
	dev_get(got, d.out.data, bytes);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s: %s", op, cep_last_error());
	tolerance(ref.dtype, &rtol, &atol);
	if (exact)
		rtol = atol = 0.0;
	snprintf(what, sizeof(what), "%s/%d %s", op, opset, label);
	bad = compare_tensor(what, &ref, got, rtol, atol);
	free(got);
	free(ref.data);
	dev_call_free(&d);
	return bad;
}

Test(gpu_kernels, binary_ops_broadcast_like_the_host)
{
	static const char *const ops[] = { "Add", "Sub", "Mul", "Div" };
	static const char *const shapes[][2] = {
		{ "3,4,5", "3,4,5" }, { "3,1,5", "4,1" }, { "", "7,3" },
		{ "2,3,4,5", "5" }, { "6,1,1,8", "1,5,7,1" }, { "1", "" },
	};
	unsigned seed = 20240601u ^ (unsigned)getpid();
	struct op_tensor in[2];
	char label[96];
	int64_t bad = 0;
	size_t o, t, k;

	GPU_REQUIRE();
	for (o = 0; o < 4; o++) {
		for (t = 0; t + 1 < N_TYPES; t++) {
			for (k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
				in[0] = host_tensor(all_types[t], shapes[k][0], &seed, true);
				in[1] = host_tensor(all_types[t], shapes[k][1], &seed, true);
				snprintf(label, sizeof(label), "%s [%s] [%s]",
					 cep_dtype_name(all_types[t]), shapes[k][0], shapes[k][1]);
				bad += check_op(ops[o], 14, NULL, 0, in, 2, label, false);
				free_inputs(in, 2);
			}
		}
	}
	/* More elements than one grid covers: the kernels loop. */
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "4096,4097", &seed, false);
	in[1] = host_tensor(CEP_DTYPE_FLOAT32, "4097", &seed, false);
	bad += check_op("Mul", 14, NULL, 0, in, 2, "float32 [4096,4097] [4097]", false);
	free_inputs(in, 2);
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_kernels, unary_ops_match_the_host_for_every_type)
{
	static const char *const ops[] = {
		"Relu", "Sigmoid", "Tanh", "Exp", "Sqrt", "Reciprocal", "Neg", "Abs", "Log",
		"Erf", "Floor", "Ceil", "Round",
	};
	static const int opsets[] = { 11, 13 };
	unsigned seed = 7u ^ (unsigned)getpid();
	const struct op_schema *s;
	const struct op_kernel *k;
	struct op_tensor in;
	char label[96];
	int64_t bad = 0;
	size_t o, v, t;
	int cases = 0;

	GPU_REQUIRE();
	for (o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		for (v = 0; v < 2; v++) {
			cr_assert_eq(op_schema_find("", ops[o], opsets[v], &s), 0);
			for (t = 0; t < N_TYPES; t++) {
				if (op_kernel_find(s, opsets[v], BACKEND_HOST, all_types[t], &k) != 0)
					continue;
				in = host_tensor(all_types[t], "37,91", &seed, true);
				snprintf(label, sizeof(label), "%s [37,91]",
					 cep_dtype_name(all_types[t]));
				bad += check_op(ops[o], opsets[v], NULL, 0, &in, 1, label, false);
				free(in.data);
				cases++;
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
	cr_assert_gt(cases, 60);
}

Test(gpu_kernels, cast_between_every_pair_bit_for_bit)
{
	unsigned seed = 99u ^ (unsigned)getpid();
	struct op_attr to = { .name = "to", .type = OP_ATTR_INT };
	struct op_tensor in;
	char label[96];
	int64_t bad = 0;
	size_t f, t;

	GPU_REQUIRE();
	for (f = 0; f < N_TYPES; f++) {
		for (t = 0; t < N_TYPES; t++) {
			to.i = all_types[t];
			in = host_tensor(all_types[f], "2000", &seed, true);
			snprintf(label, sizeof(label), "%s -> %s", cep_dtype_name(all_types[f]),
				 cep_dtype_name(all_types[t]));
			bad += check_op("Cast", 13, &to, 1, &in, 1, label, true);
			free(in.data);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_kernels, transpose_for_every_element_size)
{
	static const struct {
		const char *shape;
		int n_perm;
		int64_t perm[4];
	} cases[] = {
		{ "2,3,4", 3, { 1, 0, 2 } }, { "2,3,4", 0, { 0 } }, { "5,1,7,3", 4, { 3, 2, 1, 0 } },
		{ "5,1,7,3", 4, { 0, 2, 1, 3 } }, { "6,1", 2, { 1, 0 } }, { "33,65", 2, { 1, 0 } },
		{ "4,1,1,6", 4, { 1, 0, 3, 2 } },
	};
	static const cep_dtype types[] = { CEP_DTYPE_BOOL, CEP_DTYPE_UINT8, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_FLOAT32, CEP_DTYPE_INT64 };
	unsigned seed = 5u ^ (unsigned)getpid();
	struct op_attr perm = { .name = "perm", .type = OP_ATTR_INTS };
	struct op_tensor in;
	char label[96];
	int64_t bad = 0;
	size_t c, t;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
			perm.n = cases[c].n_perm;
			perm.ints = cases[c].perm;
			in = host_tensor(types[t], cases[c].shape, &seed, true);
			snprintf(label, sizeof(label), "%s [%s] perm of %d", cep_dtype_name(types[t]),
				 cases[c].shape, cases[c].n_perm);
			bad += check_op("Transpose", 13, &perm, cases[c].n_perm ? 1 : 0, &in, 1,
					label, true);
			free(in.data);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_kernels, concat_along_every_axis)
{
	static const struct {
		const char *shapes[3];
		int axis;
	} cases[] = {
		{ { "2,3,4", "2,5,4", "2,1,4" }, 1 }, { { "2,3,4", "1,3,4", "3,3,4" }, 0 },
		{ { "2,3,1", "2,3,2", "2,3,5" }, -1 }, { { "4,0,2", "4,3,2", "4,1,2" }, 1 },
		{ { "7", "9", "1" }, 0 },
	};
	static const cep_dtype types[] = { CEP_DTYPE_BOOL, CEP_DTYPE_FLOAT16, CEP_DTYPE_FLOAT32,
					   CEP_DTYPE_INT64, CEP_DTYPE_BFLOAT16 };
	unsigned seed = 11u ^ (unsigned)getpid();
	struct op_attr axis = { .name = "axis", .type = OP_ATTR_INT };
	struct op_tensor in[3];
	char label[96];
	int64_t bad = 0;
	size_t c, t;
	int i;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
			axis.i = cases[c].axis;
			for (i = 0; i < 3; i++)
				in[i] = host_tensor(types[t], cases[c].shapes[i], &seed, true);
			snprintf(label, sizeof(label), "%s [%s]+[%s]+[%s] axis %d",
				 cep_dtype_name(types[t]), cases[c].shapes[0], cases[c].shapes[1],
				 cases[c].shapes[2], cases[c].axis);
			bad += check_op("Concat", 13, &axis, 1, in, 3, label, true);
			free_inputs(in, 3);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* An index tensor of n values, each in [-dim, dim). */
static struct op_tensor indices(cep_dtype dtype, const char *shape, int64_t dim, unsigned *seed)
{
	struct op_tensor t = host_tensor(dtype, shape, seed, false);
	int64_t n = op_dims_product(&t, 0, t.rank), i;

	for (i = 0; i < n; i++)
		cpu_store_i(t.data, dtype, i, (int64_t)(rnd(seed) % (2 * dim)) - dim);
	return t;
}

Test(gpu_kernels, gather_along_every_axis)
{
	static const struct {
		const char *data, *idx;
		int axis;
		int64_t dim;
	} cases[] = {
		{ "5,4,3", "2,3", 0, 5 }, { "5,4,3", "7", 1, 4 }, { "5,4,3", "2,2", 2, 3 },
		{ "5,4,3", "", 0, 5 }, { "10,64", "33", 0, 10 }, { "6,2,8", "4,1", -2, 2 },
	};
	static const cep_dtype types[] = { CEP_DTYPE_BOOL, CEP_DTYPE_FLOAT16, CEP_DTYPE_FLOAT32,
					   CEP_DTYPE_INT64 };
	static const cep_dtype idx_types[] = { CEP_DTYPE_INT64, CEP_DTYPE_INT32 };
	unsigned seed = 13u ^ (unsigned)getpid();
	struct op_attr axis = { .name = "axis", .type = OP_ATTR_INT };
	struct op_tensor in[2];
	char label[96];
	int64_t bad = 0;
	size_t c, t, x;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
			for (x = 0; x < 2; x++) {
				axis.i = cases[c].axis;
				in[0] = host_tensor(types[t], cases[c].data, &seed, true);
				in[1] = indices(idx_types[x], cases[c].idx, cases[c].dim, &seed);
				snprintf(label, sizeof(label), "%s [%s] %s [%s] axis %d",
					 cep_dtype_name(types[t]), cases[c].data,
					 cep_dtype_name(idx_types[x]), cases[c].idx, cases[c].axis);
				bad += check_op("Gather", 13, &axis, 1, in, 2, label, true);
				free_inputs(in, 2);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_kernels, a_gather_index_out_of_range_fails_the_run)
{
	static const int64_t bad_idx[] = { 0, 4, 9, -6, 2 };
	unsigned seed = 17u;
	struct op_tensor in[2];
	struct dev_call d;
	char want[128];

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "5,3", &seed, false);
	in[1] = (struct op_tensor){ .data = (void *)bad_idx, .dtype = CEP_DTYPE_INT64, .rank = 1,
				    .dims = { 5 } };
	cr_assert_eq(dev_call_make(&d, "Gather", 13, NULL, 0, in, 2), 0);
	cr_assert_eq(dev_call_launch(&d), 0, "%s", cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	/* Which of 9 and -6 is latched first is up to the device. */
	snprintf(want, sizeof(want), "Gather: index %s is out of range for dimension 0 of size 5",
		 strstr(cep_last_error(), "index 9") ? "9" : "-6");
	cr_assert_str_eq(cep_last_error(), want);
	printf("  a bad index: %s\n", cep_last_error());
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), d.call);
	/* The record is cleared: the next sync of the stream succeeds. */
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	cr_assert_null(backend_stream_fault(gpu_be, gpu_s));
	dev_call_free(&d);
	free(in[0].data);
}

Test(gpu_kernels, dropout_in_training_mode_fails_the_run_as_the_host_refuses_it)
{
	static const float plan_ratio = 0.0f, ratio = 0.5f;
	static const uint8_t plan_training = 0, training = 1;
	unsigned seed = 19u;
	struct op_tensor in[3];
	struct dev_call d;

	GPU_REQUIRE();
	/* Planned with values that pass (as a plan is, when the values are
	 * not known), then run with others, as inputs read at run time. */
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "4,3", &seed, false);
	in[1] = (struct op_tensor){ .data = (void *)&plan_ratio, .dtype = CEP_DTYPE_FLOAT32,
				    .rank = 0 };
	in[2] = (struct op_tensor){ .data = (void *)&plan_training, .dtype = CEP_DTYPE_BOOL,
				    .rank = 0 };
	cr_assert_eq(dev_call_make(&d, "Dropout", 13, NULL, 0, in, 3), 0, "%s", cep_last_error());
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, &ratio, sizeof(ratio)), 0);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[2].data, &training, 1), 0);
	cr_assert_eq(dev_call_launch(&d), 0, "%s", cep_last_error());
	/* The ratio and the mode are read on the device: the fault record
	 * carries the kind and the ratio, and the words are the host's. */
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "Dropout: training_mode is true with ratio 0.5; "
			 "only inference (training_mode false) is supported");
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), d.call);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	dev_call_free(&d);
	free(in[0].data);
}

Test(gpu_kernels, reshaping_copies)
{
	static const int64_t shape[] = { -1, 6 }, axes[] = { 0, 3 };
	unsigned seed = 23u ^ (unsigned)getpid();
	struct op_attr flat_axis = { .name = "axis", .type = OP_ATTR_INT, .i = 2 };
	struct op_attr sq_axes = { .name = "axes", .type = OP_ATTR_INTS, .n = 1,
				   .ints = (const int64_t[]){ 1 } };
	struct op_tensor in[2];
	int64_t bad = 0;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT16, "4,1,3,2", &seed, true);
	in[1] = (struct op_tensor){ .data = (void *)shape, .dtype = CEP_DTYPE_INT64, .rank = 1,
				    .dims = { 2 } };
	bad += check_op("Reshape", 14, NULL, 0, in, 2, "float16 [4,1,3,2] to [-1,6]", true);
	bad += check_op("Flatten", 13, &flat_axis, 1, in, 1, "float16 [4,1,3,2] axis 2", true);
	bad += check_op("Squeeze", 11, &sq_axes, 1, in, 1, "float16 [4,1,3,2] axes [1]", true);
	bad += check_op("Identity", 16, NULL, 0, in, 1, "float16 [4,1,3,2]", true);
	in[1].data = (void *)axes;
	bad += check_op("Unsqueeze", 13, NULL, 0, in, 2, "float16 [4,1,3,2] axes [0,3]", true);
	free(in[0].data);
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
