/*
 * test_cuda_window.c — the CUDA kernels of the windowed and resampling
 * operators (kernels/cuda/pool, lrn, pad, resize) against the reference
 * kernels of kernels/cpu on fresh random data, specials included, printing
 * the worst absolute and relative error of each case: MaxPool (with its
 * Indices in both storage orders) and AveragePool over 1-D, 2-D and 3-D
 * windows with strides, pads, dilations, ceil_mode, auto_pad and
 * count_include_pad; LpPool of p 1, 2 and others (opset 1's float p
 * too) over the same windows; GlobalAveragePool and GlobalMaxPool on planes small
 * and large; LRN of several sizes; Pad in every mode with pads as an
 * attribute or as inputs (negative ones and axes included); Resize and
 * Upsample in every mode, coordinate transformation and rounding, up and
 * down, from scales or sizes.
 *
 * On a GPU machine with CUDAEP_TEST_GPU=1 these run; elsewhere they skip,
 * visibly (that every operator has a CUDA kernel wherever the host has
 * one is test_cuda_kernels.c's check, over the whole registry).
 */
#include "tests/unit/cuda_util.h"

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))
#define N_FLOAT_TYPES 3 /* the first three of all_types */

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_window, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* Whether the host has a kernel of op at opset for dtype. */
static bool host_takes(const char *op, int opset, cep_dtype dtype)
{
	const struct op_schema *s;
	const struct op_kernel *k;

	return op_schema_find("", op, opset, &s) == 0 &&
	       op_kernel_find(s, opset, BACKEND_HOST, dtype, &k) == 0;
}

/* An INTS attribute of the first n values of v. */
static struct op_attr ints_attr(const char *name, const int64_t *v, int n)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_INTS, .n = n, .ints = v };
}

static struct op_attr int_attr(const char *name, int64_t v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_INT, .i = v };
}

static struct op_attr float_attr(const char *name, float v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_FLOAT, .f = v };
}

static struct op_attr string_attr(const char *name, const char *v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_STRING, .s = v };
}

/* ----------------------------------------------------------------- pools */

static const struct {
	const char *x;
	int n;                          /* spatial dims */
	int64_t k[3], s[3], d[3];
	int64_t pads[6];                /* begins, then ends */
	int ceil;
	const char *auto_pad;           /* NULL: NOTSET */
} pool_cases[] = {
	{ "2,3,17", 1, { 3 }, { 2 }, { 1 }, { 1, 1 }, 0, NULL },
	{ "2,3,9,11", 2, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1, 1, 1 }, 1, NULL },
	{ "1,4,10,10", 2, { 3, 2 }, { 1, 3 }, { 2, 2 }, { 0, 1, 2, 0 }, 0, NULL },
	{ "1,2,5,6,7", 3, { 2, 3, 2 }, { 1, 2, 2 }, { 1, 1, 1 }, { 1, 0, 1, 0, 1, 1 }, 1, NULL },
	{ "2,2,8,7", 2, { 3, 3 }, { 2, 3 }, { 1, 1 }, { 0 }, 0, "SAME_UPPER" },
	{ "2,2,8,7", 2, { 4, 2 }, { 3, 2 }, { 1, 1 }, { 0 }, 0, "SAME_LOWER" },
	{ "1,3,12,13", 2, { 5, 4 }, { 2, 3 }, { 1, 1 }, { 0 }, 1, "VALID" },
	/* Pads wider than the window: some windows hold no element. */
	{ "1,2,4,4", 2, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 3, 3, 3, 3 }, 0, NULL },
	{ "1,1,33,65", 2, { 7, 7 }, { 1, 1 }, { 3, 1 }, { 3, 3, 3, 3 }, 0, NULL },
};

/* The attributes of pool case c at opset (what exists there). */
static int pool_attrs(size_t c, const char *op, int opset, int cip, int order,
		      struct op_attr *a)
{
	int n = 0, sp = pool_cases[c].n;
	bool dil = opset >= (strcmp(op, "MaxPool") == 0 ? 10 : 19);

	a[n++] = ints_attr("kernel_shape", pool_cases[c].k, sp);
	a[n++] = ints_attr("strides", pool_cases[c].s, sp);
	if (pool_cases[c].auto_pad)
		a[n++] = string_attr("auto_pad", pool_cases[c].auto_pad);
	else
		a[n++] = ints_attr("pads", pool_cases[c].pads, 2 * sp);
	if (dil)
		a[n++] = ints_attr("dilations", pool_cases[c].d, sp);
	if (opset >= 10)
		a[n++] = int_attr("ceil_mode", pool_cases[c].ceil);
	if (strcmp(op, "AveragePool") == 0)
		a[n++] = int_attr("count_include_pad", cip);
	else if (opset >= 8)
		a[n++] = int_attr("storage_order", order);
	return n;
}

/* Whether case c means what it says at opset: without dilations or
 * ceil_mode there, only cases that do not need them. */
static bool pool_case_fits(size_t c, const char *op, int opset)
{
	bool dil = opset >= (strcmp(op, "MaxPool") == 0 ? 10 : 19);
	int i;

	for (i = 0; i < pool_cases[c].n && !dil; i++) {
		if (pool_cases[c].d[i] != 1)
			return false;
	}
	return opset >= 10 || !pool_cases[c].ceil;
}

Test(gpu_window, maxpool_with_indices_and_averagepool)
{
	static const struct {
		const char *op;
		int opset, n_out;
	} runs[] = {
		{ "MaxPool", 8, 2 }, { "MaxPool", 12, 2 }, { "MaxPool", 22, 1 }, { "MaxPool", 22, 2 },
		{ "AveragePool", 7, 1 }, { "AveragePool", 11, 1 }, { "AveragePool", 19, 1 },
		{ "AveragePool", 22, 1 },
	};
	unsigned seed = 101u ^ (unsigned)getpid();
	struct op_attr attrs[8];
	struct op_tensor in;
	char label[200];
	int64_t bad = 0;
	size_t r, c, t;
	int flag, n_attrs;

	GPU_REQUIRE();
	for (r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		for (c = 0; c < sizeof(pool_cases) / sizeof(pool_cases[0]); c++) {
			if (!pool_case_fits(c, runs[r].op, runs[r].opset))
				continue;
			for (t = 0; t < N_TYPES; t++) {
				if (!host_takes(runs[r].op, runs[r].opset, all_types[t]))
					continue;
				/* count_include_pad, or storage_order. */
				for (flag = 0; flag < 2; flag++) {
					n_attrs = pool_attrs(c, runs[r].op, runs[r].opset, flag, flag,
							     attrs);
					in = host_tensor(all_types[t], pool_cases[c].x, &seed, c % 2 == 0);
					snprintf(label, sizeof(label), "%s [%s] case %zu %s%s",
						 cep_dtype_name(all_types[t]), pool_cases[c].x, c,
						 runs[r].op[0] == 'A' ? "count_include_pad=" : "storage_order=",
						 flag ? "1" : "0");
					bad += gpu_check(runs[r].op, runs[r].opset, attrs, n_attrs, &in, 1,
							 runs[r].n_out, label);
					free(in.data);
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_window, maxpool_indices_left_unnamed)
{
	unsigned seed = 103u ^ (unsigned)getpid();
	struct op_attr attrs[8];
	struct op_tensor in;
	int n_attrs;
	int64_t bad;

	GPU_REQUIRE();
	n_attrs = pool_attrs(1, "MaxPool", 12, 0, 0, attrs);
	in = host_tensor(CEP_DTYPE_FLOAT32, pool_cases[1].x, &seed, true);
	bad = gpu_check_absent("MaxPool", 12, attrs, n_attrs, &in, 1, 2, 1,
			       "float32 case 1, Indices unnamed");
	free(in.data);
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* The attributes of pool case c for LpPool at opset, with p (a float at
 * opset 1, an int from 2). */
static int lp_attrs(size_t c, int opset, float p, struct op_attr *a)
{
	int n = 0, sp = pool_cases[c].n;

	a[n++] = ints_attr("kernel_shape", pool_cases[c].k, sp);
	a[n++] = ints_attr("strides", pool_cases[c].s, sp);
	if (pool_cases[c].auto_pad)
		a[n++] = string_attr("auto_pad", pool_cases[c].auto_pad);
	else
		a[n++] = ints_attr("pads", pool_cases[c].pads, 2 * sp);
	if (opset >= 18) {
		a[n++] = ints_attr("dilations", pool_cases[c].d, sp);
		a[n++] = int_attr("ceil_mode", pool_cases[c].ceil);
	}
	a[n++] = opset < 2 ? float_attr("p", p) : int_attr("p", (int64_t)p);
	return n;
}

Test(gpu_window, lppool_of_every_case_and_p)
{
	static const struct {
		int opset;
		float p;
	} runs[] = { { 1, 2.0f }, { 1, 2.5f }, { 2, 1.0f }, { 11, 2.0f }, { 18, 3.0f },
		     { 18, 2.0f }, { 22, 1.0f }, { 22, 2.0f }, { 22, 4.0f } };
	unsigned seed = 107u ^ (unsigned)getpid();
	struct op_attr attrs[8];
	struct op_tensor in;
	char label[200];
	int64_t bad = 0;
	size_t r, c, t, i;
	int n_attrs;

	GPU_REQUIRE();
	for (r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		for (c = 0; c < sizeof(pool_cases) / sizeof(pool_cases[0]); c++) {
			bool fits = runs[r].opset >= 18 || !pool_cases[c].ceil;

			for (i = 0; i < (size_t)pool_cases[c].n && runs[r].opset < 18; i++)
				fits &= pool_cases[c].d[i] == 1;
			if (!fits)
				continue;
			for (t = 0; t < N_FLOAT_TYPES; t++) {
				if (!host_takes("LpPool", runs[r].opset, all_types[t]))
					continue;
				n_attrs = lp_attrs(c, runs[r].opset, runs[r].p, attrs);
				in = host_tensor(all_types[t], pool_cases[c].x, &seed, c % 2 == 0);
				snprintf(label, sizeof(label), "%s [%s] case %zu p %g",
					 cep_dtype_name(all_types[t]), pool_cases[c].x, c,
					 (double)runs[r].p);
				bad += gpu_check("LpPool", runs[r].opset, attrs, n_attrs, &in, 1, 1,
						 label);
				free(in.data);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_window, global_pools_on_small_and_large_planes)
{
	static const char *const shapes[] = {
		"2,3,5,5", "1,4,300", "2,2,16,16", "3,2", "2,3,0", "1,1,127", "1,2,1000,3",
	};
	static const char *const ops[] = { "GlobalAveragePool", "GlobalMaxPool" };
	static const int opsets[] = { 7, 22 };
	unsigned seed = 107u ^ (unsigned)getpid();
	struct op_tensor in;
	char label[160];
	int64_t bad = 0;
	size_t o, v, c, t;

	GPU_REQUIRE();
	for (o = 0; o < 2; o++) {
		for (v = 0; v < 2; v++) {
			for (c = 0; c < sizeof(shapes) / sizeof(shapes[0]); c++) {
				for (t = 0; t < N_FLOAT_TYPES; t++) {
					if (!host_takes(ops[o], opsets[v], all_types[t]))
						continue;
					in = host_tensor(all_types[t], shapes[c], &seed, c % 2 == 0);
					snprintf(label, sizeof(label), "%s [%s]",
						 cep_dtype_name(all_types[t]), shapes[c]);
					bad += gpu_check(ops[o], opsets[v], NULL, 0, &in, 1, 1, label);
					free(in.data);
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* ------------------------------------------------------------------- LRN */

Test(gpu_window, lrn_of_several_sizes_and_exponents)
{
	static const struct {
		const char *x;
		int64_t size;
		float alpha, beta, bias;
	} cases[] = {
		{ "2,7,3,4", 3, 1e-4f, 0.75f, 1.0f }, { "2,7,3,4", 5, 2.0f, 0.75f, 2.0f },
		{ "1,16,5", 2, 0.5f, 0.5f, 1.0f }, { "1,16,5", 6, 1.0f, 1.3f, 1.5f },
		{ "3,5", 1, 1.0f, 0.75f, 1.0f }, { "1,1,4,4", 4, 3.0f, 0.75f, 1.0f },
		{ "2,64,14,14", 5, 1e-3f, 0.75f, 1.0f }, { "1,9,2,2,2", 9, 1.0f, 2.0f, 1.0f },
	};
	static const int opsets[] = { 7, 13 };
	unsigned seed = 109u ^ (unsigned)getpid();
	struct op_attr attrs[4];
	struct op_tensor in;
	char label[160];
	int64_t bad = 0;
	size_t c, t, v;

	GPU_REQUIRE();
	for (v = 0; v < 2; v++) {
		for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
			for (t = 0; t < N_FLOAT_TYPES; t++) {
				if (!host_takes("LRN", opsets[v], all_types[t]))
					continue;
				attrs[0] = int_attr("size", cases[c].size);
				attrs[1] = float_attr("alpha", cases[c].alpha);
				attrs[2] = float_attr("beta", cases[c].beta);
				attrs[3] = float_attr("bias", cases[c].bias);
				in = host_tensor(all_types[t], cases[c].x, &seed, c % 2 == 1);
				snprintf(label, sizeof(label), "%s [%s] size %lld beta %g",
					 cep_dtype_name(all_types[t]), cases[c].x,
					 (long long)cases[c].size, cases[c].beta);
				bad += gpu_check("LRN", opsets[v], attrs, 4, &in, 1, 1, label);
				free(in.data);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* ------------------------------------------------------------------- Pad */

static const struct {
	const char *x;
	int n;                          /* values per side */
	int has_axes;                   /* opset 18 on: the axes input */
	int64_t axes[3];
	int64_t pads[6];                /* begins, then ends */
} pad_cases[] = {
	{ "3,4", 2, 0, { 0 }, { 1, 2, 2, 1 } },
	{ "3,4", 2, 0, { 0 }, { -1, 0, 0, -2 } },
	{ "2,3,5", 3, 0, { 0 }, { 0, -1, 3, 1, 2, -2 } },
	/* Wider than the dimensions: reflect and wrap go round again. */
	{ "2,3,5", 3, 0, { 0 }, { 0, 7, 9, 0, 8, 11 } },
	{ "7", 1, 0, { 0 }, { 10, -3 } },
	{ "", 0, 0, { 0 }, { 0 } },
	{ "4,1,3", 3, 0, { 0 }, { 0, 2, 1, 0, 3, 0 } },
	{ "1,1,33", 3, 0, { 0 }, { 0, 0, 40, 0, 0, -30 } },
	{ "2,3,5", 2, 1, { -1, 0 }, { 2, 1, -1, 0 } },
	{ "3,4", 1, 1, { 1 }, { 3, 3 } },
	{ "64,130", 2, 0, { 0 }, { 3, 5, 2, 4 } },
};

static const char *const pad_modes[] = { "constant", "reflect", "edge", "wrap" };

/* The pads of case c as an input of dtype (int64, or int32). */
static struct op_tensor pad_list(const int64_t *v, int n, cep_dtype dtype)
{
	struct op_tensor t = int64_tensor(v, n);
	int i;

	if (dtype == CEP_DTYPE_INT32) {
		t.dtype = CEP_DTYPE_INT32;
		for (i = 0; i < n; i++)
			((int32_t *)t.data)[i] = (int32_t)v[i];
	}
	return t;
}

Test(gpu_window, pad_in_every_mode_with_pads_as_attribute_or_inputs)
{
	static const int opsets[] = { 10, 11, 13, 18, 19 };
	unsigned seed = 113u ^ (unsigned)getpid();
	struct op_attr attrs[3];
	struct op_tensor in[4], cval = { .rank = 0 };
	unsigned char cbuf[8];
	char label[200];
	int64_t bad = 0;
	size_t v, c, t, m;
	int n_in, with_cval;

	GPU_REQUIRE();
	for (v = 0; v < sizeof(opsets) / sizeof(opsets[0]); v++) {
		int opset = opsets[v];

		for (c = 0; c < sizeof(pad_cases) / sizeof(pad_cases[0]); c++) {
			if (pad_cases[c].has_axes && opset < 18)
				continue;
			for (m = 0; m < 4; m++) {
				if (m == 3 && opset < 19)
					continue;
				for (t = 0; t < N_TYPES; t++) {
					if (!host_takes("Pad", opset, all_types[t]))
						continue;
					for (with_cval = 0; with_cval < (m == 0 && opset >= 11 ? 2 : 1);
					     with_cval++) {
						attrs[0] = string_attr("mode", pad_modes[m]);
						in[0] = host_tensor(all_types[t], pad_cases[c].x, &seed,
								    true);
						n_in = 1;
						if (opset < 11) {
							attrs[1] = ints_attr("pads", pad_cases[c].pads,
									     2 * pad_cases[c].n);
							attrs[2] = float_attr("value", -2.5f);
						} else {
							in[n_in++] = pad_list(pad_cases[c].pads,
									      2 * pad_cases[c].n,
									      c % 2 ? CEP_DTYPE_INT32
										    : CEP_DTYPE_INT64);
							cval.dtype = all_types[t];
							cval.data = cbuf;
							fill_random(&cval, &seed, false);
							in[n_in++] = with_cval ? cval : (struct op_tensor){ 0 };
							if (pad_cases[c].has_axes)
								in[n_in++] = pad_list(pad_cases[c].axes,
										      pad_cases[c].n,
										      c % 2 ? CEP_DTYPE_INT64
											    : CEP_DTYPE_INT32);
						}
						snprintf(label, sizeof(label), "%s [%s] case %zu %s%s",
							 cep_dtype_name(all_types[t]), pad_cases[c].x, c,
							 pad_modes[m], with_cval ? " with constant_value" : "");
						bad += gpu_check("Pad", opset, attrs, opset < 11 ? 3 : 1,
								 in, n_in, 1, label);
						free(in[0].data);
						if (opset >= 11)
							free(in[1].data);
						if (pad_cases[c].has_axes && opset >= 11)
							free(in[3].data);
					}
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_window, pads_that_change_after_planning_fail_the_run)
{
	static const int64_t pads[4] = { 1, 0, 1, 0 }, moved[4] = { 1, 0, 2, 0 };
	unsigned seed = 127u ^ (unsigned)getpid();
	struct op_attr mode = { .name = "mode", .type = OP_ATTR_STRING, .s = "reflect" };
	struct op_tensor in[2];
	struct gpu_call d;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "3,4", &seed, false);
	in[1] = int64_tensor(pads, 4);
	gpu_call_make(&d, "Pad", 13, &mode, 1, in, 2, 1, -1);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, moved, sizeof(moved)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "Pad: the values of its inputs give 6 elements along "
			 "dimension 0, where the plan made for the shapes has 5");
	printf("  moved pads: %s\n", cep_last_error());
	/* The record was cleared: the stream carries on. */
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, pads, sizeof(pads)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	gpu_call_free(&d);
	free_all(in, 2);
}

/* ---------------------------------------------------------------- Resize */

/* A float32 host tensor of the n values v (rank 1). */
static struct op_tensor f32_tensor(const float *v, int n)
{
	struct op_tensor t = { .dtype = CEP_DTYPE_FLOAT32, .rank = 1, .dims = { n } };

	t.data = calloc(1, sizeof(float) * (size_t)(n ? n : 1));
	cr_assert_not_null(t.data);
	memcpy(t.data, v, sizeof(float) * (size_t)n);
	return t;
}

/* One Resize: the attributes that differ from the defaults, and the
 * scales (or sizes) and roi as inputs. */
struct rs_case {
	const char *op;                 /* NULL: "Resize" */
	int opset;
	const char *x;
	const char *mode, *coord, *nearest;      /* NULL: the default */
	float cubic_a;                  /* 0: the default */
	int exclude, antialias;
	const char *policy;
	int n_axes;                     /* of the axes attribute; 0: none */
	int64_t axes[4];
	int n;                          /* values of scales or sizes */
	float scales[5];                /* used when sizes[0] is 0 */
	int64_t sizes[5];
	int n_roi;
	float roi[10];
};

/* The tolerance of a case: cubic and antialiased weights go through more
 * roundings than float32's last bit on the way. */
static double rs_rtol(const struct rs_case *r)
{
	return (r->mode && strcmp(r->mode, "cubic") == 0) || r->antialias ? 1e-4 : 0.0;
}

/* Runs case r for dtype; returns the mismatches. */
static int64_t rs_run(const struct rs_case *r, cep_dtype dtype, unsigned *seed)
{
	const char *op = r->op ? r->op : "Resize";
	bool upsample = strcmp(op, "Upsample") == 0, legacy = upsample || r->opset < 11;
	struct op_attr attrs[12];
	struct op_tensor in[4] = { { 0 } };
	int n_attrs = 0, n_in;
	char label[240];
	int64_t bad;

	if (r->mode)
		attrs[n_attrs++] = string_attr("mode", r->mode);
	if (r->coord)
		attrs[n_attrs++] = string_attr("coordinate_transformation_mode", r->coord);
	if (r->nearest)
		attrs[n_attrs++] = string_attr("nearest_mode", r->nearest);
	if (r->cubic_a != 0.0f)
		attrs[n_attrs++] = float_attr("cubic_coeff_a", r->cubic_a);
	if (r->exclude)
		attrs[n_attrs++] = int_attr("exclude_outside", 1);
	if (r->antialias)
		attrs[n_attrs++] = int_attr("antialias", 1);
	if (r->policy)
		attrs[n_attrs++] = string_attr("keep_aspect_ratio_policy", r->policy);
	if (r->n_axes)
		attrs[n_attrs++] = ints_attr("axes", r->axes, r->n_axes);
	if (r->n_roi)
		attrs[n_attrs++] = float_attr("extrapolation_value", 7.5f);
	if (upsample && r->opset < 9)
		attrs[n_attrs++] = (struct op_attr){ .name = "scales", .type = OP_ATTR_FLOATS,
						     .n = r->n, .floats = r->scales };
	in[0] = host_tensor(dtype, r->x, seed, true);
	if (upsample && r->opset < 9) {
		n_in = 1;
	} else if (legacy) {
		in[1] = f32_tensor(r->scales, r->n);
		n_in = 2;
	} else {
		if (r->n_roi)
			in[1] = f32_tensor(r->roi, r->n_roi);
		if (r->sizes[0] == 0)
			in[2] = f32_tensor(r->scales, r->n);
		else
			in[3] = int64_tensor(r->sizes, r->n);
		n_in = r->sizes[0] == 0 ? 3 : 4;
	}
	snprintf(label, sizeof(label), "%s [%s] %s%s%s%s%s%s%s%s%s by %s%s",
		 cep_dtype_name(dtype), r->x, r->mode ? r->mode : "nearest",
		 r->coord ? " " : "", r->coord ? r->coord : "",
		 r->nearest ? " " : "", r->nearest ? r->nearest : "",
		 r->exclude ? " exclude_outside" : "", r->antialias ? " antialias" : "",
		 r->policy ? " " : "", r->policy ? r->policy : "",
		 r->sizes[0] ? "sizes" : "scales", r->n_axes ? " on axes" : "");
	bad = gpu_check_tol(op, r->opset, attrs, n_attrs, in, n_in, 1, -1, rs_rtol(r), label);
	free_all(in, 4);
	return bad;
}

/* Runs r for every type the host takes (float16 and an integer type
 * only where cover_types, to keep the sweep short). */
static int64_t rs_sweep(const struct rs_case *r, bool cover_types, unsigned *seed)
{
	const char *op = r->op ? r->op : "Resize";
	bool nearest = r->mode == NULL || strcmp(r->mode, "nearest") == 0;
	int64_t bad = 0;
	size_t t;

	for (t = 0; t < N_TYPES; t++) {
		cep_dtype dt = all_types[t];

		if (!host_takes(op, r->opset, dt) || (dt == CEP_DTYPE_BOOL && !nearest))
			continue;
		if (!cover_types && dt != CEP_DTYPE_FLOAT32 && dt != CEP_DTYPE_BFLOAT16 &&
		    dt != CEP_DTYPE_UINT8)
			continue;
		bad += rs_run(r, dt, seed);
	}
	return bad;
}

Test(gpu_window, resize_every_mode_and_coordinate_transformation)
{
	static const char *const coords[] = {
		"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
		"tf_crop_and_resize", "half_pixel_symmetric",
	};
	static const char *const modes[] = { "nearest", "linear", "cubic" };
	static const char *const rounds[] = {
		"round_prefer_floor", "round_prefer_ceil", "floor", "ceil",
	};
	static const float scales[][4] = {
		{ 1, 1, 2, 1.5f }, { 1, 1, 0.5f, 0.6f }, { 1, 1, 1.7f, 0.4f }, { 1, 2, 3, 1 },
	};
	/* Crops reaching outside the input, in the last dimension or the
	 * one before it: the extrapolation value, taken whole or weighted. */
	static const float rois[2][8] = {
		{ 0, 0, 0.1f, -0.2f, 1, 1, 0.8f, 1.3f }, { 0, 0, -0.3f, 0.2f, 1, 1, 1.2f, 0.9f },
	};
	unsigned seed = 131u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t c, m, s;
	int k = 0;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(coords) / sizeof(coords[0]); c++) {
		for (m = 0; m < 3; m++) {
			for (s = 0; s < sizeof(scales) / sizeof(scales[0]); s++, k++) {
				struct rs_case r = {
					.opset = c == 5 ? 19 : 13, .x = "2,3,5,7", .mode = modes[m],
					.coord = coords[c], .n = 4,
				};

				memcpy(r.scales, scales[s], sizeof(scales[s]));
				if (m == 0)
					r.nearest = rounds[k % 4];
				if (m == 2) {
					r.cubic_a = k % 2 ? -0.5f : 0.0f;
					r.exclude = k % 3 == 0;
				}
				if (c == 4) {
					r.n_roi = 8;
					memcpy(r.roi, rois[k % 2], sizeof(rois[0]));
				}
				bad += rs_sweep(&r, s == 0, &seed);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_window, resize_by_sizes_axes_antialias_and_older_forms)
{
	static const struct rs_case cases[] = {
		/* Sizes, with each keep_aspect_ratio_policy. */
		{ .opset = 18, .x = "1,2,6,8", .mode = "linear", .n = 4, .sizes = { 1, 2, 9, 4 } },
		{ .opset = 18, .x = "1,2,6,8", .mode = "cubic", .policy = "not_larger", .n = 4,
		  .sizes = { 1, 2, 9, 20 } },
		{ .opset = 18, .x = "1,2,6,8", .mode = "nearest", .policy = "not_smaller", .n = 4,
		  .sizes = { 1, 2, 3, 5 } },
		{ .opset = 18, .x = "1,2,6,8", .mode = "linear", .n_axes = 2, .axes = { 3, 2 },
		  .n = 2, .sizes = { 11, 4 } },
		{ .opset = 18, .x = "2,6,8", .mode = "cubic", .n_axes = 1, .axes = { -1 }, .n = 1,
		  .scales = { 2.5f } },
		/* Antialiased shrinking: more taps than the kernel's width. */
		{ .opset = 18, .x = "1,2,13,17", .mode = "linear", .antialias = 1, .n_axes = 2,
		  .axes = { -2, -1 }, .n = 2, .scales = { 0.3f, 0.45f } },
		{ .opset = 18, .x = "1,2,13,17", .mode = "cubic", .antialias = 1, .n = 4,
		  .scales = { 1, 1, 0.25f, 0.6f } },
		{ .opset = 19, .x = "1,1,12", .mode = "cubic", .antialias = 1, .exclude = 1,
		  .coord = "half_pixel_symmetric", .n = 3, .sizes = { 1, 1, 5 } },
		/* Same size, scale not 1: interpolated all the same. */
		{ .opset = 13, .x = "1,1,10", .mode = "linear", .n = 3, .scales = { 1, 1, 1.05f } },
		/* Three dimensions at once; a rank-1 input. */
		{ .opset = 13, .x = "1,3,4,5", .mode = "cubic", .n = 4,
		  .scales = { 1, 1.5f, 2, 0.5f } },
		{ .opset = 13, .x = "2,3,4,3", .mode = "linear", .coord = "align_corners", .n = 4,
		  .scales = { 2, 1.5f, 0.5f, 3 } },
		{ .opset = 13, .x = "9", .mode = "nearest", .nearest = "ceil", .n = 1,
		  .scales = { 2.5f } },
		{ .opset = 13, .x = "1,4,1", .mode = "linear", .coord = "pytorch_half_pixel", .n = 3,
		  .sizes = { 1, 4, 1 } },
		/* Opset 11: tf_half_pixel_for_nn; 10: the first form. */
		{ .opset = 11, .x = "1,2,5,6", .mode = "nearest", .coord = "tf_half_pixel_for_nn",
		  .n = 4, .scales = { 1, 1, 1.6f, 0.5f } },
		{ .opset = 10, .x = "1,2,5,6", .mode = "nearest", .n = 4,
		  .scales = { 1, 1, 0.6f, 2.5f } },
		{ .opset = 10, .x = "1,2,5,6", .mode = "linear", .n = 4, .scales = { 1, 1, 0.6f, 2.5f } },
		/* Upsample: scales an attribute at 7, an input at 9. */
		{ .op = "Upsample", .opset = 7, .x = "1,2,3,4", .mode = "nearest", .n = 4,
		  .scales = { 1, 1, 2, 3 } },
		{ .op = "Upsample", .opset = 7, .x = "1,2,3,4", .mode = "linear", .n = 4,
		  .scales = { 1, 1, 2.5f, 1.5f } },
		{ .op = "Upsample", .opset = 9, .x = "2,3,4", .mode = "linear", .n = 3,
		  .scales = { 1, 2, 1.25f } },
	};
	unsigned seed = 137u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t c;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		bad += rs_sweep(&cases[c], true, &seed);
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_window, resize_scales_that_change_after_planning_fail_the_run)
{
	static const float scales[4] = { 1, 1, 2, 2 }, moved[4] = { 1, 1, 3, 2 };
	unsigned seed = 139u ^ (unsigned)getpid();
	struct op_attr mode = { .name = "mode", .type = OP_ATTR_STRING, .s = "linear" };
	struct op_tensor in[3] = { { 0 } };
	struct gpu_call d;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "1,1,3,4", &seed, false);
	in[2] = f32_tensor(scales, 4);
	gpu_call_make(&d, "Resize", 13, &mode, 1, in, 3, 1, -1);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[2].data, moved, sizeof(moved)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(),
			 "Resize: the values of its inputs give 9 elements along dimension 2, "
			 "where the plan made for the shapes has 6");
	printf("  moved scales: %s\n", cep_last_error());
	/* The record was cleared: the stream carries on. */
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[2].data, scales, sizeof(scales)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	gpu_call_free(&d);
	free_all(in, 3);
}
