/*
 * test_cuda_fast.c — the fast paths of the CUDA elementwise, pooling and
 * row kernels (kernels/cuda/elem.cuh and the launchers that pick them)
 * against the reference kernels of kernels/cpu on fresh random data:
 * Add, Sub, Mul, Div and the comparisons with operands of the output's
 * shape, a row over the last dim or one element, the unary functions and
 * activations, in every type, with tails that fill no whole vector and
 * with every pointer one element off a vector's alignment; the warp
 * kernels of LayerNormalization, Softmax and LogSoftmax at BERT's widths
 * and at rows that leave lanes idle; MaxPool 3x3/2 as ResNet-50 pools.
 *
 * Everywhere: the launchers' choice of layout. On a GPU machine with
 * CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

#include "kernels/cuda/launch.h"

static const cep_dtype fast_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------ everywhere */

/* The fast layout of out = a op b, or "-" for the general kernel, with
 * the row length in *cols. */
static const char *fast_layout(const char *sa, const char *sb, int64_t *cols)
{
	static char name[3];
	struct op_tensor a = { .dtype = CEP_DTYPE_FLOAT32 }, b = a, out = a;
	struct cuda_bcast bc;
	struct cuda_fast f;
	int i, r;

	shape_parse(&a, sa);
	shape_parse(&b, sb);
	out.rank = r = a.rank > b.rank ? a.rank : b.rank;
	for (i = 0; i < r; i++) {
		int ia = i - (r - a.rank), ib = i - (r - b.rank);
		int64_t da = ia >= 0 ? a.dims[ia] : 1, db = ib >= 0 ? b.dims[ib] : 1;

		out.dims[i] = da == 1 ? db : da;
	}
	cuda_bcast_init(&bc, &out, &a, &b);
	if (!cuda_fast_init(&f, &bc))
		return "-";
	*cols = f.cols;
	memcpy(name, f.name, sizeof(name));
	return name;
}

Test(cuda_fast, layouts_with_a_fast_path)
{
	static const struct {
		const char *a, *b, *want;
		int64_t cols;
	} cases[] = {
		{ "32,128,768", "32,128,768", "ff", 1 }, { "7", "7", "ff", 1 },
		{ "32,128,768", "768", "fr", 768 }, { "1,768", "32,128,768", "rf", 768 },
		{ "4,5,6", "1,5,6", "fr", 30 }, { "4,5,6", "", "fs", 1 },
		{ "1", "4,5,6", "sf", 1 }, { "1,1", "1", "ff", 1 }, { "", "", "ff", 1 },
		{ "4,5,6", "4,1,6", "-", 0 }, { "4,5,1", "4,5,6", "-", 0 },
		{ "3,1,5", "4,1", "-", 0 }, { "1,5", "4,1", "-", 0 },
	};
	size_t c;

	for (c = 0; c < N_OF(cases); c++) {
		int64_t cols = 0;
		const char *got = fast_layout(cases[c].a, cases[c].b, &cols);

		cr_expect_str_eq(got, cases[c].want, "[%s] [%s]: %s, want %s", cases[c].a,
				 cases[c].b, got, cases[c].want);
		cr_expect_eq(cols, cases[c].cols, "[%s] [%s]: cols %lld, want %lld", cases[c].a,
			     cases[c].b, (long long)cols, (long long)cases[c].cols);
	}
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_fast, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/*
 * Runs op on the host (the reference) and on the device over the same
 * inputs, the device's inputs and output placed shift elements past an
 * allocation's start (1: off every vector's alignment), and compares;
 * returns the mismatches.
 */
static int64_t check_shifted(const char *op, int opset, const struct op_attr *attrs,
			     int n_attrs, const struct op_tensor *in, int n_in, int shift,
			     const char *label)
{
	void *base[8], *saved[8], *out_base, *out_saved;
	const struct op_kernel *host;
	struct op_tensor ref;
	struct dev_call d;
	double rtol, atol;
	size_t bytes, pad_out;
	char what[200];
	int64_t bad;
	void *got;
	int i;

	cr_assert_eq(dev_call_make(&d, op, opset, attrs, n_attrs, in, n_in), 0, "%s",
		     cep_last_error());
	for (i = 0; i < n_in; i++) {
		size_t size = cep_dtype_size(in[i].dtype), b = op_tensor_bytes(&in[i]);

		cr_assert_eq(backend_mem_alloc(gpu_be, b + 16, &base[i]), 0, "%s",
			     cep_last_error());
		saved[i] = d.in[i].data;
		d.in[i].data = (char *)base[i] + shift * size;
		if (b)
			cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[i].data, in[i].data, b),
				     0, "%s", cep_last_error());
	}
	bytes = op_tensor_bytes(&d.out);
	pad_out = shift * cep_dtype_size(d.out.dtype);
	cr_assert_eq(backend_mem_alloc(gpu_be, bytes + 16, &out_base), 0, "%s", cep_last_error());
	dev_poison(out_base, bytes + 16);
	out_saved = d.out.data;
	d.out.data = (char *)out_base + pad_out;
	ref = d.out;
	ref.data = NULL;
	cr_assert_eq(op_kernel_find(d.schema, opset, BACKEND_HOST,
				    op_kernel_dtype(d.schema, in, n_in, &ref, 1), &host), 0);
	cr_assert_eq(exec_host_eval(&d.node, host, in, n_in, &ref, 1), 0, "%s", cep_last_error());
	cr_assert_eq(dev_call_launch(&d), 0, "%s: %s", op, cep_last_error());
	got = malloc(bytes + 16);
	dev_get(got, out_base, bytes + 16);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s: %s", op, cep_last_error());
	tolerance(ref.dtype, &rtol, &atol);
	snprintf(what, sizeof(what), "%s/%d %s shift %d", op, opset, label, shift);
	bad = compare_tensor(what, &ref, (char *)got + pad_out, rtol, atol);
	/* The bytes around the output must keep their poison. */
	for (i = 0; (size_t)i < pad_out; i++)
		bad += ((unsigned char *)got)[i] != 0xa5;
	for (i = 0; (size_t)i < 16 - pad_out; i++)
		bad += ((unsigned char *)got)[pad_out + bytes + i] != 0xa5;
	free(got);
	free(ref.data);
	for (i = 0; i < n_in; i++) {
		backend_mem_free(gpu_be, base[i], op_tensor_bytes(&in[i]) + 16);
		d.in[i].data = saved[i];
	}
	backend_mem_free(gpu_be, out_base, bytes + 16);
	d.out.data = out_saved;
	dev_call_free(&d);
	return bad;
}

/* Shapes that take each fast path, with element counts that leave a tail
 * after whole vectors (5 * 7 * 9 = 315) and rows that are not whole
 * vectors (9, 7), next to rows that are (16, 32). */
static const char *const fast_shapes[][2] = {
	{ "5,7,9", "5,7,9" }, { "3,64", "3,64" }, { "5,7,16", "16" }, { "32", "5,32" },
	{ "5,7,9", "9" }, { "7", "3,5,7" }, { "5,7,9", "" }, { "1", "3,5,7" },
	{ "7,1,16", "7,5,16" }, { "1000", "1" }, { "2,3", "2,1" },
};

Test(gpu_fast, binary_and_comparisons_on_every_layout_and_alignment)
{
	static const char *const ops[] = { "Add", "Sub", "Mul", "Div", "Equal", "Less",
					   "GreaterOrEqual", "And" };
	unsigned seed = 61u ^ (unsigned)getpid();
	struct op_tensor in[2];
	int64_t bad = 0;
	char label[96];
	size_t o, t, k;
	int shift, cases = 0;

	GPU_REQUIRE();
	for (o = 0; o < N_OF(ops); o++) {
		for (t = 0; t < N_OF(fast_types); t++) {
			const struct op_schema *s;
			const struct op_kernel *hk;

			cr_assert_eq(op_schema_find("", ops[o], 16, &s), 0);
			if (op_kernel_find(s, 16, BACKEND_HOST, fast_types[t], &hk) != 0)
				continue;
			for (k = 0; k < N_OF(fast_shapes); k++) {
				for (shift = 0; shift < 2; shift++) {
					in[0] = host_tensor(fast_types[t], fast_shapes[k][0], &seed, true);
					in[1] = host_tensor(fast_types[t], fast_shapes[k][1], &seed, true);
					snprintf(label, sizeof(label), "%s [%s] [%s]",
						 cep_dtype_name(fast_types[t]), fast_shapes[k][0],
						 fast_shapes[k][1]);
					bad += check_shifted(ops[o], 16, NULL, 0, in, 2, shift, label);
					free(in[0].data);
					free(in[1].data);
					cases++;
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
	cr_assert_gt(cases, 500);
}

Test(gpu_fast, unary_and_activations_on_every_alignment)
{
	static const char *const ops[] = { "Relu", "Erf", "Neg", "Abs", "Sigmoid", "Not",
					   "Gelu", "Clip", "LeakyRelu" };
	static const char *const shapes[] = { "315", "3,64", "17", "1" };
	unsigned seed = 67u ^ (unsigned)getpid();
	struct op_tensor in;
	int64_t bad = 0;
	char label[96];
	size_t o, t, k;
	int shift, cases = 0;

	GPU_REQUIRE();
	for (o = 0; o < N_OF(ops); o++) {
		int opset = strcmp(ops[o], "Gelu") == 0 ? 20 : 13;

		for (t = 0; t < N_OF(fast_types); t++) {
			const struct op_schema *s;
			const struct op_kernel *hk;

			cr_assert_eq(op_schema_find("", ops[o], opset, &s), 0);
			if (op_kernel_find(s, opset, BACKEND_HOST, fast_types[t], &hk) != 0)
				continue;
			for (k = 0; k < N_OF(shapes); k++) {
				for (shift = 0; shift < 2; shift++) {
					in = host_tensor(fast_types[t], shapes[k], &seed, true);
					snprintf(label, sizeof(label), "%s [%s]",
						 cep_dtype_name(fast_types[t]), shapes[k]);
					bad += check_shifted(ops[o], opset, NULL, 0, &in, 1, shift, label);
					free(in.data);
					cases++;
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
	cr_assert_gt(cases, 100);
}

/* Widths that take the warp kernels: BERT's 768 and 128, a row that fills
 * only some lanes (40, 8), the widest (1024), and the longest vector
 * count of float32 (1000: 8 vectors per lane, the last partly empty). */
Test(gpu_fast, layernorm_and_softmax_warp_rows)
{
	static const char *const shapes[] = { "37,768", "5,3,128", "9,40", "4,8", "3,1024",
					      "2,1000" };
	static const char *const scales[] = { "768", "1", "40", "8", "1024", "1000" };
	static const int opsets[] = { 11, 13 };
	unsigned seed = 71u ^ (unsigned)getpid();
	struct op_attr attrs[3] = {
		{ .name = "axis", .type = OP_ATTR_INT, .i = -1 },
		{ .name = "epsilon", .type = OP_ATTR_FLOAT, .f = 1e-5f },
		{ .name = "stash_type", .type = OP_ATTR_INT, .i = CEP_DTYPE_FLOAT32 },
	};
	struct op_tensor in[3];
	int64_t bad = 0;
	char label[160];
	size_t k, t, v;

	GPU_REQUIRE();
	for (k = 0; k < N_OF(shapes); k++) {
		for (t = 0; t < 3; t++) {
			in[0] = host_tensor(fast_types[t], shapes[k], &seed, k == 2);
			in[1] = host_tensor(fast_types[t], scales[k], &seed, false);
			in[2] = host_tensor(fast_types[t], scales[k], &seed, false);
			snprintf(label, sizeof(label), "%s [%s] [%s]", cep_dtype_name(fast_types[t]),
				 shapes[k], scales[k]);
			bad += gpu_check("LayerNormalization", 17, attrs, 3, in, 3, 3, label);
			bad += gpu_check("LayerNormalization", 17, attrs, 3, in, 2, 1, label);
			for (v = 0; v < N_OF(opsets); v++) {
				if (opsets[v] < 13 && fast_types[t] == CEP_DTYPE_BFLOAT16)
					continue;
				bad += gpu_check("Softmax", opsets[v], attrs, 1, in, 1, 1, label);
				bad += gpu_check("LogSoftmax", opsets[v], attrs, 1, in, 1, 1, label);
			}
			free_all(in, 3);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_fast, maxpool_3x3_stride_2_with_indices)
{
	static const int64_t k[2] = { 3, 3 }, s[2] = { 2, 2 }, pads[4] = { 1, 1, 1, 1 };
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT8, CEP_DTYPE_UINT8 };
	static const char *const shapes[] = { "2,3,23,29", "1,4,112,112" };
	unsigned seed = 73u ^ (unsigned)getpid();
	struct op_attr attrs[3] = {
		{ .name = "kernel_shape", .type = OP_ATTR_INTS, .ints = k, .n = 2 },
		{ .name = "strides", .type = OP_ATTR_INTS, .ints = s, .n = 2 },
		{ .name = "pads", .type = OP_ATTR_INTS, .ints = pads, .n = 4 },
	};
	struct op_tensor in;
	int64_t bad = 0;
	char label[96];
	size_t t, h;

	GPU_REQUIRE();
	for (t = 0; t < N_OF(types); t++) {
		for (h = 0; h < N_OF(shapes); h++) {
			in = host_tensor(types[t], shapes[h], &seed, true);
			snprintf(label, sizeof(label), "%s [%s]", cep_dtype_name(types[t]), shapes[h]);
			bad += gpu_check("MaxPool", 22, attrs, 3, &in, 1, 2, label);
			if (cpu_is_float(types[t]))
				bad += gpu_check("AveragePool", 22, attrs, 3, &in, 1, 1, label);
			free(in.data);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
