/*
 * test_cuda_red.c — the CUDA kernels of the reductions, normalizations,
 * softmaxes and repeats (kernels/cuda/softmax, norm, reduce, expand)
 * against the reference kernels of kernels/cpu on fresh random data,
 * specials included, printing the worst absolute and relative error of
 * each case: Softmax and LogSoftmax under both axis rules, rows and
 * columns; LayerNormalization with every way Scale and B broadcast and its
 * Mean and InvStdDev outputs; BatchNormalization spatial, per element and
 * with parameters typed apart from X, and in training mode with its
 * running statistics; every Reduce* operator (Sum, Mean,
 * Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp) over axes given as
 * an attribute or as an input read on the device, for every type the host
 * takes at each opset (float64, uint32 and uint64 included); a bad axes
 * input failing the run
 * with the operator named; Expand and Tile for every element size.
 *
 * Everywhere: the registry gives every one of these operators a CUDA
 * kernel for each type and opset the host has one for. On a GPU machine
 * with CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

static const char *const red_ops[] = {
	"Softmax", "LogSoftmax", "LayerNormalization", "BatchNormalization", "ReduceSum",
	"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
	"ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "Expand", "Tile", "Slice", "Split",
	"ArgMax", "ArgMin", "GatherElements", "Dropout", "ConstantOfShape", "Range",
};

static const cep_dtype red_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_RED_TYPES (sizeof(red_types) / sizeof(red_types[0]))
#define N_FLOAT_TYPES 3 /* the first three of red_types */

/* The types that joined them; the device takes them for the Reduce*
 * operators and for those that only move elements, not for the rest. */
static const cep_dtype wide_types[] = {
	CEP_DTYPE_FLOAT64, CEP_DTYPE_INT16, CEP_DTYPE_UINT16, CEP_DTYPE_UINT32, CEP_DTYPE_UINT64,
};

#define N_WIDE_TYPES (sizeof(wide_types) / sizeof(wide_types[0]))

/* Whether op takes the wide types on the device where the host does. */
static bool takes_wide(const char *op)
{
	static const char *const movers[] = {
		"Expand", "Tile", "Slice", "Split", "GatherElements", "ConstantOfShape", "Range",
	};
	size_t i;

	if (strncmp(op, "Reduce", 6) == 0)
		return true;
	for (i = 0; i < sizeof(movers) / sizeof(movers[0]); i++) {
		if (strcmp(op, movers[i]) == 0)
			return true;
	}
	return false;
}

/* Type t of the old and the wide types together (t < N_RED_TYPES +
 * N_WIDE_TYPES). */
static cep_dtype any_type(size_t t)
{
	return t < N_RED_TYPES ? red_types[t] : wide_types[t - N_RED_TYPES];
}

/* ------------------------------------------------------------ everywhere */

Test(cuda_red, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	size_t i, t;
	int opset, checked = 0;

	for (i = 0; i < sizeof(red_ops) / sizeof(red_ops[0]); i++) {
		for (opset = 7; opset <= OP_OPSET_MAX; opset++) {
			if (op_schema_find("", red_ops[i], opset, &s) != 0)
				continue;
			size_t types = takes_wide(red_ops[i]) ? N_RED_TYPES + N_WIDE_TYPES
							      : N_RED_TYPES;

			for (t = 0; t < types; t++) {
				bool has_host = op_kernel_find(s, opset, BACKEND_HOST, any_type(t),
							       &host) == 0;
				bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, any_type(t),
							      &dev) == 0;

				cr_assert_eq(has_dev, has_host, "%s/%d %s: host %d, cuda %d",
					     red_ops[i], opset, cep_dtype_name(any_type(t)),
					     has_host, has_dev);
				if (has_dev) {
					cr_assert_eq(dev->backend, BACKEND_CUDA);
					checked++;
				}
			}
		}
	}
	cr_assert_gt(checked, 500);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_red, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* ------------------------------------------------------------- softmaxes */

Test(gpu_red, softmax_and_logsoftmax_along_every_axis)
{
	static const struct {
		const char *shape;
		int axis;
	} cases[] = {
		{ "37,91", -1 }, { "4,5,6", 1 }, { "4,5,6", 0 }, { "3,1000", 1 }, { "2,3,700", 2 },
		{ "", 0 }, { "2,0,3", 1 }, { "5,7", -2 }, { "1,1", -1 },
	};
	static const char *const ops[] = { "Softmax", "LogSoftmax" };
	static const int opsets[] = { 11, 13 };
	unsigned seed = 31u ^ (unsigned)getpid();
	struct op_attr axis = { .name = "axis", .type = OP_ATTR_INT };
	struct op_tensor in;
	char label[96];
	int64_t bad = 0;
	size_t o, c, t, v;

	GPU_REQUIRE();
	for (o = 0; o < 2; o++) {
		for (v = 0; v < 2; v++) {
			for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
				for (t = 0; t < N_FLOAT_TYPES; t++) {
					if (opsets[v] < 13 && red_types[t] == CEP_DTYPE_BFLOAT16)
						continue;
					axis.i = cases[c].axis;
					in = host_tensor(red_types[t], cases[c].shape, &seed, c % 2 == 0);
					snprintf(label, sizeof(label), "%s [%s] axis %d",
						 cep_dtype_name(red_types[t]), cases[c].shape,
						 cases[c].axis);
					bad += gpu_check(ops[o], opsets[v], &axis, 1, &in, 1, 1, label);
					free(in.data);
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* -------------------------------------------------------- normalizations */

Test(gpu_red, layernorm_with_every_scale_layout_and_its_statistics)
{
	static const struct {
		const char *x, *scale, *bias;  /* bias "-": absent */
		int axis;
	} cases[] = {
		{ "8,64", "64", "64", -1 }, { "4,5,6", "5,6", "6", 1 }, { "4,5,6", "1", "-", -1 },
		{ "3,1000", "1000", "1", -1 }, { "4,5,6", "4,1,6", "5,1", 2 },
		{ "2,3,4", "3,4", "2,3,4", 1 }, { "6,7", "7", "-", 0 }, { "3,0", "0", "0", 1 },
	};
	unsigned seed = 17u ^ (unsigned)getpid();
	struct op_attr attrs[3] = {
		{ .name = "axis", .type = OP_ATTR_INT },
		{ .name = "epsilon", .type = OP_ATTR_FLOAT, .f = 1e-3f },
		{ .name = "stash_type", .type = OP_ATTR_INT },
	};
	struct op_tensor in[3];
	char label[160];
	int64_t bad = 0;
	size_t c, t;
	int n_in, stash;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < N_FLOAT_TYPES; t++) {
			for (stash = 0; stash < 2; stash++) {
				attrs[0].i = cases[c].axis;
				attrs[2].i = stash ? CEP_DTYPE_BFLOAT16 : CEP_DTYPE_FLOAT32;
				n_in = strcmp(cases[c].bias, "-") == 0 ? 2 : 3;
				in[0] = host_tensor(red_types[t], cases[c].x, &seed, c == 1);
				in[1] = host_tensor(red_types[t], cases[c].scale, &seed, false);
				in[2] = n_in == 3 ? host_tensor(red_types[t], cases[c].bias, &seed, false)
						  : (struct op_tensor){ 0 };
				snprintf(label, sizeof(label), "%s [%s] [%s] [%s] axis %d stash %s",
					 cep_dtype_name(red_types[t]), cases[c].x, cases[c].scale,
					 cases[c].bias, cases[c].axis, stash ? "bf16" : "f32");
				bad += gpu_check("LayerNormalization", 17, attrs, 3, in, n_in, 3, label);
				free_all(in, n_in);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* Makes every element of the float tensor t non-negative (a variance). */
static void make_nonnegative(struct op_tensor *t)
{
	int64_t n = op_dims_product(t, 0, t->rank), i;

	for (i = 0; i < n; i++)
		cpu_store_f(t->data, t->dtype, i, fabsf(cpu_load_f(t->data, t->dtype, i)));
}

Test(gpu_red, batchnorm_spatial_per_element_and_mixed_types)
{
	static const struct {
		int opset, spatial;
		const char *x, *p;
		cep_dtype tx, tsb, tmv;
	} cases[] = {
		{ 9, 1, "2,3,4,5", "3", CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT32 },
		{ 9, 1, "2,3,4,5", "3", CEP_DTYPE_FLOAT16, CEP_DTYPE_FLOAT16, CEP_DTYPE_FLOAT16 },
		{ 14, 1, "4,16", "16", CEP_DTYPE_BFLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_FLOAT32 },
		{ 15, 1, "2,8,33", "8", CEP_DTYPE_FLOAT16, CEP_DTYPE_FLOAT32, CEP_DTYPE_BFLOAT16 },
		{ 15, 1, "3", "1", CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT32 },
		{ 7, 0, "2,3,4", "3,4", CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT32 },
		{ 7, 1, "64,32,7,7", "32", CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT32 },
	};
	unsigned seed = 23u ^ (unsigned)getpid();
	struct op_attr attrs[2] = {
		{ .name = "epsilon", .type = OP_ATTR_FLOAT, .f = 1e-5f },
		{ .name = "spatial", .type = OP_ATTR_INT },
	};
	struct op_tensor in[5];
	char label[160];
	int64_t bad = 0;
	size_t c;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		attrs[1].i = cases[c].spatial;
		in[0] = host_tensor(cases[c].tx, cases[c].x, &seed, true);
		in[1] = host_tensor(cases[c].tsb, cases[c].p, &seed, false);
		in[2] = host_tensor(cases[c].tsb, cases[c].p, &seed, false);
		in[3] = host_tensor(cases[c].tmv, cases[c].p, &seed, false);
		in[4] = host_tensor(cases[c].tmv, cases[c].p, &seed, false);
		make_nonnegative(&in[4]);
		snprintf(label, sizeof(label), "%s [%s] params %s/%s [%s]%s",
			 cep_dtype_name(cases[c].tx), cases[c].x, cep_dtype_name(cases[c].tsb),
			 cep_dtype_name(cases[c].tmv), cases[c].p,
			 cases[c].spatial ? "" : " spatial=0");
		bad += gpu_check("BatchNormalization", cases[c].opset, attrs,
				 cases[c].opset < 9 ? 2 : 1, in, 5, 1, label);
		free_all(in, 5);
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* training_mode=1: the batch's statistics, and the running ones written
 * (either output may be left unnamed). */
Test(gpu_red, batchnorm_training_mode)
{
	static const struct {
		int opset;
		const char *x, *p;
		cep_dtype tx, tsb, tmv;
	} cases[] = {
		{ 14, "2,3,4,5", "3", CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT32 },
		{ 15, "8,16,33", "16", CEP_DTYPE_FLOAT16, CEP_DTYPE_FLOAT32, CEP_DTYPE_BFLOAT16 },
		{ 15, "64,32,7,7", "32", CEP_DTYPE_BFLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_FLOAT32 },
		{ 15, "5,2", "2", CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16 },
		{ 15, "0,3,2", "3", CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT32 },
	};
	unsigned seed = 29u ^ (unsigned)getpid();
	struct op_attr attrs[3] = {
		{ .name = "training_mode", .type = OP_ATTR_INT, .i = 1 },
		{ .name = "epsilon", .type = OP_ATTR_FLOAT, .f = 1e-3f },
		{ .name = "momentum", .type = OP_ATTR_FLOAT, .f = 0.7f },
	};
	struct op_tensor in[5];
	char label[160];
	int64_t bad = 0;
	size_t c;
	int absent;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (absent = -1; absent <= 2; absent += 3) {
			in[0] = host_tensor(cases[c].tx, cases[c].x, &seed, false);
			in[1] = host_tensor(cases[c].tsb, cases[c].p, &seed, false);
			in[2] = host_tensor(cases[c].tsb, cases[c].p, &seed, false);
			in[3] = host_tensor(cases[c].tmv, cases[c].p, &seed, false);
			in[4] = host_tensor(cases[c].tmv, cases[c].p, &seed, false);
			make_nonnegative(&in[4]);
			snprintf(label, sizeof(label), "%s [%s] params %s/%s training%s",
				 cep_dtype_name(cases[c].tx), cases[c].x, cep_dtype_name(cases[c].tsb),
				 cep_dtype_name(cases[c].tmv), absent < 0 ? "" : ", no running_var");
			bad += gpu_check_absent("BatchNormalization", cases[c].opset, attrs, 3, in, 5, 3,
						absent, label);
			free_all(in, 5);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* ------------------------------------------------------------ reductions */

static const struct {
	const char *shape;
	int n_axes;                 /* -1: none given (everything, or noop) */
	int64_t axes[3];
	int keepdims, noop;
} reduce_cases[] = {
	{ "3,4,5", 1, { 1 }, 1, 0 }, { "3,4,5", 2, { 0, 2 }, 0, 0 }, { "3,4,5", -1, { 0 }, 1, 0 },
	{ "3,4,5", 1, { -1 }, 0, 0 }, { "2,300,7", 1, { 1 }, 1, 0 }, { "64,1000", 1, { 1 }, 0, 0 },
	{ "1000,3", 1, { 0 }, 1, 0 }, { "4,0,3", 1, { 1 }, 1, 0 }, { "7", 1, { 0 }, 0, 0 },
	{ "2,3,4,5", 3, { 3, 0, 2 }, 1, 0 }, { "3,4", -1, { 0 }, 1, 1 }, { "", -1, { 0 }, 0, 0 },
};

/* Moves the float values of t (in [-4, 4]) to [0.75, 1.25], so that a
 * product of a thousand of them stays far from overflow, where the order
 * of the products would decide between infinity and a finite value. */
static void near_one(struct op_tensor *t)
{
	int64_t n = op_dims_product(t, 0, t->rank), i;

	if (!cpu_is_float(t->dtype))
		return;
	for (i = 0; i < n; i++)
		cpu_store_d(t->data, t->dtype, i, 1.0 + cpu_load_d(t->data, t->dtype, i) / 16.0);
}

/* Runs op over every reduce case for every type the host takes at opset,
 * axes as an input when as_input. */
static int64_t reduce_sweep(const char *op, int opset, bool as_input, unsigned *seed)
{
	const struct op_schema *s;
	const struct op_kernel *k;
	struct op_attr attrs[3];
	struct op_tensor in[2];
	char label[160];
	int64_t bad = 0;
	size_t c, t;
	int n_attrs, n_in;

	cr_assert_eq(op_schema_find("", op, opset, &s), 0);
	for (c = 0; c < sizeof(reduce_cases) / sizeof(reduce_cases[0]); c++) {
		for (t = 0; t < N_RED_TYPES + N_WIDE_TYPES; t++) {
			if (op_kernel_find(s, opset, BACKEND_HOST, any_type(t), &k) != 0)
				continue;
			n_attrs = 0;
			n_in = 1;
			attrs[n_attrs++] = (struct op_attr){ .name = "keepdims", .type = OP_ATTR_INT,
							     .i = reduce_cases[c].keepdims };
			if (reduce_cases[c].noop) {
				if (!as_input)
					continue;
				attrs[n_attrs++] = (struct op_attr){ .name = "noop_with_empty_axes",
								     .type = OP_ATTR_INT, .i = 1 };
			}
			in[0] = host_tensor(any_type(t), reduce_cases[c].shape, seed,
					    c % 3 != 2 && strcmp(op, "ReduceProd") != 0);
			if (strcmp(op, "ReduceProd") == 0)
				near_one(&in[0]);
			if (as_input && (reduce_cases[c].n_axes >= 0 || reduce_cases[c].noop))
				in[n_in++] = int64_tensor(reduce_cases[c].axes,
							  reduce_cases[c].n_axes > 0 ? reduce_cases[c].n_axes : 0);
			else if (!as_input && reduce_cases[c].n_axes > 0)
				attrs[n_attrs++] = (struct op_attr){ .name = "axes", .type = OP_ATTR_INTS,
								     .n = reduce_cases[c].n_axes,
								     .ints = reduce_cases[c].axes };
			snprintf(label, sizeof(label), "%s [%s] %d axes%s%s%s",
				 cep_dtype_name(any_type(t)), reduce_cases[c].shape,
				 reduce_cases[c].n_axes > 0 ? reduce_cases[c].n_axes : 0,
				 as_input ? " (input)" : "",
				 reduce_cases[c].keepdims ? " keepdims" : "",
				 reduce_cases[c].noop ? " noop" : "");
			/* ReduceLogSumExp sums exp() over a row and takes log():
			 * the device's expf() may differ from the host's by an
			 * ulp in each term (float64's exp() by far less). */
			bad += gpu_check_tol(op, opset, attrs, n_attrs, in, n_in, 1, -1,
					     strcmp(op, "ReduceLogSumExp") == 0 &&
						     any_type(t) != CEP_DTYPE_FLOAT64 ? 1e-4 : 0.0,
					     label);
			free_all(in, n_in);
		}
	}
	return bad;
}

Test(gpu_red, reductions_over_axes_from_attribute_and_input)
{
	static const char *const ops[] = {
		"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
		"ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp",
	};
	unsigned seed = 41u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t o;

	GPU_REQUIRE();
	for (o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		bool sum = o == 0, minmax = o == 2 || o == 3, logs = o >= 8;

		bad += reduce_sweep(ops[o], sum ? 11 : 13, false, &seed);
		bad += reduce_sweep(ops[o], sum ? 13 : 18, true, &seed);
		/* Max and Min took bool at 20; the logs lost the integers at 28. */
		if (minmax)
			bad += reduce_sweep(ops[o], 20, true, &seed);
		if (logs)
			bad += reduce_sweep(ops[o], 28, true, &seed);
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_red, a_bad_axes_input_fails_the_run_with_the_op_named)
{
	static const int64_t good[1] = { 1 }, worse[1] = { 5 };
	unsigned seed = 43u ^ (unsigned)getpid();
	struct op_tensor in[2];
	struct gpu_call d;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "3,4,5", &seed, false);
	in[1] = int64_tensor(good, 1);
	gpu_call_make(&d, "ReduceSum", 13, NULL, 0, in, 2, 1, -1);
	/* The plan was made for axis 1; the device now holds 5. */
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, worse, sizeof(worse)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(),
			 "ReduceSum: axes entry 0 is 5, out of range for rank 3 or repeated");
	printf("  a bad axis: %s\n", cep_last_error());
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), &d.call);
	/* The record was cleared: the stream carries on. */
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, good, sizeof(good)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	gpu_call_free(&d);
	free_all(in, 2);
}

/* --------------------------------------------------------------- repeats */

Test(gpu_red, expand_and_tile_for_every_element_size)
{
	static const struct {
		const char *op, *x;
		int n;
		int64_t v[4];
	} cases[] = {
		{ "Expand", "3,1", 2, { 3, 4 } }, { "Expand", "4", 3, { 2, 3, 1 } },
		{ "Expand", "", 2, { 5, 2 } }, { "Expand", "2,1,3", 4, { 4, 2, 7, 3 } },
		{ "Expand", "1,5", 1, { 1 } }, { "Expand", "1,3", 2, { 0, 1 } },
		{ "Tile", "2,3", 2, { 3, 2 } }, { "Tile", "5", 1, { 4 } },
		{ "Tile", "2,1,3", 3, { 1, 5, 0 } }, { "Tile", "33,65", 2, { 2, 3 } },
	};
	unsigned seed = 47u ^ (unsigned)getpid();
	struct op_tensor in[2];
	char label[160];
	int64_t bad = 0;
	size_t c, t;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < N_RED_TYPES; t++) {
			in[0] = host_tensor(red_types[t], cases[c].x, &seed, true);
			in[1] = int64_tensor(cases[c].v, cases[c].n);
			snprintf(label, sizeof(label), "%s [%s] by %d values",
				 cep_dtype_name(red_types[t]), cases[c].x, cases[c].n);
			bad += gpu_check(cases[c].op, 13, NULL, 0, in, 2, 1, label);
			free_all(in, 2);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* ---------------------------------------------------------- shape moves */

/* An index tensor (int64, or int32 when narrow) of the n values v. */
static struct op_tensor index_tensor(const int64_t *v, int n, bool narrow)
{
	struct op_tensor t = int64_tensor(v, n);
	int i;

	if (narrow) {
		t.dtype = CEP_DTYPE_INT32;
		for (i = 0; i < n; i++)
			((int32_t *)t.data)[i] = (int32_t)v[i];
	}
	return t;
}

Test(gpu_red, slice_with_bounds_as_attributes_and_inputs)
{
	static const struct {
		const char *x;
		int n, has_axes, has_steps;
		int64_t starts[3], ends[3], axes[3], steps[3];
	} cases[] = {
		{ "5,6,7", 2, 1, 1, { 1, -5 }, { 4, INT64_MAX }, { 0, 2 }, { 1, 2 } },
		{ "5,6,7", 1, 1, 1, { -1 }, { INT64_MIN }, { 1 }, { -2 } },
		{ "5,6,7", 3, 0, 0, { 0, 2, 3 }, { 5, 3, 100 }, { 0 }, { 1 } },
		{ "10", 1, 0, 1, { 8 }, { 1 }, { 0 }, { -3 } },
		{ "4,9", 1, 1, 1, { 3 }, { 3 }, { -1 }, { 1 } },
		{ "3,4,33", 2, 1, 1, { 0, 32 }, { 3, -34 }, { 0, -1 }, { 2, -1 } },
	};
	unsigned seed = 53u ^ (unsigned)getpid();
	struct op_attr attrs[3];
	struct op_tensor in[5];
	char label[160];
	int64_t bad = 0;
	size_t c, t;
	int narrow, n_in;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < N_RED_TYPES; t++) {
			for (narrow = 0; narrow < 2; narrow++) {
				in[0] = host_tensor(red_types[t], cases[c].x, &seed, true);
				in[1] = index_tensor(cases[c].starts, cases[c].n, narrow);
				in[2] = index_tensor(cases[c].ends, cases[c].n, false);
				in[3] = cases[c].has_axes ? index_tensor(cases[c].axes, cases[c].n, narrow)
							  : (struct op_tensor){ 0 };
				in[4] = cases[c].has_steps ? index_tensor(cases[c].steps, cases[c].n, false)
							   : (struct op_tensor){ 0 };
				n_in = cases[c].has_steps ? 5 : cases[c].has_axes ? 4 : 3;
				snprintf(label, sizeof(label), "%s [%s] case %zu%s",
					 cep_dtype_name(red_types[t]), cases[c].x, c,
					 narrow ? " (int32 starts)" : "");
				bad += gpu_check("Slice", 13, NULL, 0, in, n_in, 1, label);
				free_all(in, 5);
			}
			/* Opset 9: attributes, steps of 1 only. */
			if (red_types[t] == CEP_DTYPE_BFLOAT16 || cases[c].steps[0] != 1 ||
			    (cases[c].n > 1 && cases[c].steps[1] != 1))
				continue;
			attrs[0] = (struct op_attr){ .name = "starts", .type = OP_ATTR_INTS,
						     .n = cases[c].n, .ints = cases[c].starts };
			attrs[1] = (struct op_attr){ .name = "ends", .type = OP_ATTR_INTS,
						     .n = cases[c].n, .ints = cases[c].ends };
			attrs[2] = (struct op_attr){ .name = "axes", .type = OP_ATTR_INTS,
						     .n = cases[c].n, .ints = cases[c].axes };
			in[0] = host_tensor(red_types[t], cases[c].x, &seed, true);
			snprintf(label, sizeof(label), "%s [%s] case %zu (attributes)",
				 cep_dtype_name(red_types[t]), cases[c].x, c);
			bad += gpu_check("Slice", 9, attrs, cases[c].has_axes ? 3 : 2, in, 1, 1, label);
			free(in[0].data);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_red, slice_bounds_that_change_after_planning_fail_the_run)
{
	static const int64_t starts[1] = { 1 }, ends[1] = { 4 }, moved[1] = { 0 };
	unsigned seed = 59u ^ (unsigned)getpid();
	struct op_tensor in[3];
	struct gpu_call d;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "6,2", &seed, false);
	in[1] = int64_tensor(starts, 1);
	in[2] = int64_tensor(ends, 1);
	gpu_call_make(&d, "Slice", 13, NULL, 0, in, 3, 1, -1);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, moved, sizeof(moved)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(),
			 "Slice: the values of its inputs give 4 elements along dimension 0, "
			 "where the plan made for the shapes has 3");
	printf("  moved bounds: %s\n", cep_last_error());
	gpu_call_free(&d);
	free_all(in, 3);
}

Test(gpu_red, split_by_attribute_input_and_equal_parts)
{
	static const int64_t sizes3[3] = { 2, 0, 5 }, sizes2[2] = { 3, 4 };
	unsigned seed = 61u ^ (unsigned)getpid();
	struct op_attr attrs[2];
	struct op_tensor in[2];
	char label[160];
	int64_t bad = 0;
	size_t t;

	GPU_REQUIRE();
	for (t = 0; t < N_RED_TYPES; t++) {
		const char *ty = cep_dtype_name(red_types[t]);

		if (red_types[t] != CEP_DTYPE_BFLOAT16) {
			attrs[0] = (struct op_attr){ .name = "axis", .type = OP_ATTR_INT, .i = 1 };
			attrs[1] = (struct op_attr){ .name = "split", .type = OP_ATTR_INTS, .n = 3,
						     .ints = sizes3 };
			in[0] = host_tensor(red_types[t], "3,7,5", &seed, true);
			snprintf(label, sizeof(label), "%s [3,7,5] split 2,0,5 (attribute)", ty);
			bad += gpu_check("Split", 11, attrs, 2, in, 1, 3, label);
			free(in[0].data);
		}
		attrs[0] = (struct op_attr){ .name = "axis", .type = OP_ATTR_INT, .i = -1 };
		in[0] = host_tensor(red_types[t], "4,7", &seed, true);
		in[1] = int64_tensor(sizes2, 2);
		snprintf(label, sizeof(label), "%s [4,7] split 3,4 (input)", ty);
		bad += gpu_check("Split", 13, attrs, 1, in, 2, 2, label);
		snprintf(label, sizeof(label), "%s [4,7] split 3,4 (input), first unnamed", ty);
		bad += gpu_check_absent("Split", 13, attrs, 1, in, 2, 2, 0, label);
		free_all(in, 2);
		attrs[0] = (struct op_attr){ .name = "axis", .type = OP_ATTR_INT, .i = 0 };
		attrs[1] = (struct op_attr){ .name = "num_outputs", .type = OP_ATTR_INT, .i = 4 };
		in[0] = host_tensor(red_types[t], "10,3", &seed, true);
		snprintf(label, sizeof(label), "%s [10,3] in 4 uneven parts", ty);
		bad += gpu_check("Split", 18, attrs, 2, in, 1, 4, label);
		snprintf(label, sizeof(label), "%s [10,3] in 4 uneven parts, third unnamed", ty);
		bad += gpu_check_absent("Split", 18, attrs, 2, in, 1, 4, 2, label);
		free(in[0].data);
		in[0] = host_tensor(red_types[t], "6,4", &seed, true);
		snprintf(label, sizeof(label), "%s [6,4] in 3 equal parts", ty);
		bad += gpu_check("Split", 13, attrs, 1, in, 1, 3, label);
		free(in[0].data);
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_red, argmax_and_argmin_with_ties_and_nan)
{
	static const struct {
		const char *shape;
		int axis, keepdims;
	} cases[] = {
		{ "37,91", -1, 1 }, { "4,5,6", 1, 0 }, { "3,1000", 1, 1 }, { "1000,3", 0, 0 },
		{ "2,0,3", 0, 1 }, { "7", 0, 0 },
	};
	static const char *const ops[] = { "ArgMax", "ArgMin" };
	unsigned seed = 67u ^ (unsigned)getpid();
	struct op_attr attrs[3];
	struct op_tensor in;
	char label[160];
	int64_t bad = 0;
	size_t o, c, t;
	int last;

	GPU_REQUIRE();
	for (o = 0; o < 2; o++) {
		for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
			for (t = 0; t + 1 < N_RED_TYPES; t++) {
				for (last = 0; last < 2; last++) {
					attrs[0] = (struct op_attr){ .name = "axis", .type = OP_ATTR_INT,
								     .i = cases[c].axis };
					attrs[1] = (struct op_attr){ .name = "keepdims",
								     .type = OP_ATTR_INT,
								     .i = cases[c].keepdims };
					attrs[2] = (struct op_attr){ .name = "select_last_index",
								     .type = OP_ATTR_INT, .i = last };
					/* bfloat16 and float16 make ties among random values. */
					in = host_tensor(red_types[t], cases[c].shape, &seed, true);
					snprintf(label, sizeof(label), "%s [%s] axis %d%s",
						 cep_dtype_name(red_types[t]), cases[c].shape,
						 cases[c].axis, last ? " last" : "");
					bad += gpu_check(ops[o], 13, attrs, 3, &in, 1, 1, label);
					free(in.data);
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* Indices of shape idx into data along axis, every one in range. */
static struct op_tensor ge_indices(const char *idx, const struct op_tensor *data, int axis,
				   bool narrow, unsigned *seed)
{
	struct op_tensor t = { .dtype = narrow ? CEP_DTYPE_INT32 : CEP_DTYPE_INT64 };
	int64_t n, i, dim = data->dims[axis];

	shape_parse(&t, idx);
	n = op_dims_product(&t, 0, t.rank);
	t.data = calloc(1, (size_t)(n ? n : 1) * 8);
	cr_assert_not_null(t.data);
	for (i = 0; i < n; i++)
		cpu_store_i(t.data, t.dtype, i, (int64_t)(rnd(seed) % (unsigned)(2 * dim)) - dim);
	return t;
}

Test(gpu_red, gather_elements_along_every_axis)
{
	static const struct {
		const char *data, *idx;
		int axis;
	} cases[] = {
		{ "3,4", "3,4", 0 }, { "3,4", "2,6", 1 }, { "2,3,5", "2,3,4", 2 },
		{ "2,3,5", "2,7,1", 1 }, { "6", "10", 0 },
	};
	unsigned seed = 71u ^ (unsigned)getpid();
	struct op_attr axis = { .name = "axis", .type = OP_ATTR_INT };
	struct op_tensor in[2];
	char label[160];
	int64_t bad = 0;
	size_t c, t;
	int narrow;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < N_RED_TYPES; t++) {
			for (narrow = 0; narrow < 2; narrow++) {
				axis.i = cases[c].axis;
				in[0] = host_tensor(red_types[t], cases[c].data, &seed, true);
				in[1] = ge_indices(cases[c].idx, &in[0], cases[c].axis, narrow, &seed);
				snprintf(label, sizeof(label), "%s [%s] by [%s] axis %d %s",
					 cep_dtype_name(red_types[t]), cases[c].data, cases[c].idx,
					 cases[c].axis, narrow ? "int32" : "int64");
				bad += gpu_check("GatherElements", 13, &axis, 1, in, 2, 1, label);
				free_all(in, 2);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_red, a_gather_elements_index_out_of_range_fails_the_run)
{
	static const int64_t bad_idx = 9;
	unsigned seed = 73u ^ (unsigned)getpid();
	struct op_attr axis = { .name = "axis", .type = OP_ATTR_INT, .i = 1 };
	struct op_tensor in[2];
	struct gpu_call d;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "3,4", &seed, false);
	in[1] = ge_indices("3,4", &in[0], 1, false, &seed);
	gpu_call_make(&d, "GatherElements", 13, &axis, 1, in, 2, 1, -1);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, (int64_t *)d.in[1].data + 5, &bad_idx,
				      sizeof(bad_idx)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(),
			 "GatherElements: index 9 is out of range for dimension 1 of size 4");
	printf("  a bad index: %s\n", cep_last_error());
	gpu_call_free(&d);
	free_all(in, 2);
}

/* ----------------------------------------------------- the generators */

Test(gpu_red, dropout_constantofshape_and_range)
{
	static const int64_t shape[3] = { 3, 1, 5 };
	static const struct {
		cep_dtype t;
		double start, limit, delta;
	} ranges[] = {
		{ CEP_DTYPE_FLOAT32, 0.5, 10.0, 0.3 }, { CEP_DTYPE_FLOAT32, 5.0, -3.0, -0.7 },
		{ CEP_DTYPE_INT64, -7, 100, 9 }, { CEP_DTYPE_INT32, 20, -20, -3 },
		{ CEP_DTYPE_FLOAT16, 1.0, 3.0, 0.125 }, { CEP_DTYPE_BFLOAT16, -2.0, 2.0, 0.5 },
		{ CEP_DTYPE_INT64, 3, 3, 1 },
	};
	unsigned seed = 79u ^ (unsigned)getpid();
	struct op_tensor in[3], value = { .rank = 1, .dims = { 1 } };
	struct op_attr attr;
	unsigned char vbuf[8];
	char label[160];
	int64_t bad = 0;
	size_t t, r;
	int i;

	GPU_REQUIRE();
	/* Dropout: opset 7 with a mask of the input's type, 13 with a bool
	 * mask and training_mode given false. */
	for (t = 0; t < N_FLOAT_TYPES; t++) {
		static const float ratio = 0.25f;
		static const uint8_t off = 0;

		if (red_types[t] != CEP_DTYPE_BFLOAT16) {
			in[0] = host_tensor(red_types[t], "37,91", &seed, true);
			snprintf(label, sizeof(label), "%s [37,91]", cep_dtype_name(red_types[t]));
			bad += gpu_check("Dropout", 7, NULL, 0, in, 1, 2, label);
			free(in[0].data);
		}
		in[0] = host_tensor(red_types[t], "5,300", &seed, true);
		in[1] = (struct op_tensor){ .dtype = CEP_DTYPE_FLOAT32, .rank = 0,
					    .data = (void *)&ratio };
		in[2] = (struct op_tensor){ .dtype = CEP_DTYPE_BOOL, .rank = 0, .data = (void *)&off };
		snprintf(label, sizeof(label), "%s [5,300] training_mode false",
			 cep_dtype_name(red_types[t]));
		bad += gpu_check("Dropout", 13, NULL, 0, in, 3, 2, label);
		free(in[0].data);
	}
	/* ConstantOfShape of every type, the value from fresh random bits. */
	for (t = 0; t < N_RED_TYPES; t++) {
		value.dtype = red_types[t];
		value.data = vbuf;
		fill_random(&value, &seed, true);
		attr = (struct op_attr){ .name = "value", .type = OP_ATTR_TENSOR, .t = &value };
		in[0] = int64_tensor(shape, 3);
		snprintf(label, sizeof(label), "%s [3,1,5]", cep_dtype_name(red_types[t]));
		bad += gpu_check("ConstantOfShape", 20, &attr, 1, in, 1, 1, label);
		free(in[0].data);
	}
	in[0] = int64_tensor(shape, 3);
	bad += gpu_check("ConstantOfShape", 9, NULL, 0, in, 1, 1, "default float32 0 [3,1,5]");
	free(in[0].data);
	for (r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++) {
		double v[3] = { ranges[r].start, ranges[r].limit, ranges[r].delta };

		for (i = 0; i < 3; i++) {
			in[i] = (struct op_tensor){ .dtype = ranges[r].t, .rank = 0 };
			in[i].data = calloc(1, 8);
			if (cpu_is_float(ranges[r].t))
				cpu_store_f(in[i].data, ranges[r].t, 0, (float)v[i]);
			else
				cpu_store_i(in[i].data, ranges[r].t, 0, (int64_t)v[i]);
		}
		snprintf(label, sizeof(label), "%s %g..%g by %g", cep_dtype_name(ranges[r].t),
			 v[0], v[1], v[2]);
		bad += gpu_check("Range", 27, NULL, 0, in, 3, 1, label);
		free_all(in, 3);
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
