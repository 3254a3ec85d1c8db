/*
 * test_cuda_elem.c — the CUDA kernels of the elementwise families with
 * attributes, many inputs or mixed types (kernels/cuda/activation,
 * compare, variadic, powmod) against the reference kernels of kernels/cpu
 * on fresh random data, NaN, infinities, subnormals and integer extremes
 * among it, printing the worst absolute and relative error of each case:
 * every operator for every type the host takes, at the opsets where its
 * definition or type set changes, under broadcasting.
 *
 * Everywhere: the registry gives each of these operators a CUDA kernel
 * for every type and opset the host has one for, and the broadcasting
 * layout of many operands is right. On a GPU machine with
 * CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

#include "kernels/cuda/launch.h"

static const char *const elem_ops[] = {
	"LeakyRelu", "Elu", "HardSigmoid", "HardSwish", "Softplus", "Gelu", "PRelu", "Clip",
	"Selu", "Celu", "Softsign", "Swish", "Shrink",
	"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Not",
	"Where", "Min", "Max", "Sum", "Mean", "Pow", "Mod",
};

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------ everywhere */

Test(cuda_elem, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	size_t i, t;
	int opset, checked = 0;

	for (i = 0; i < N_OF(elem_ops); i++) {
		int covered = 0;

		for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
			if (op_schema_find("", elem_ops[i], opset, &s) != 0)
				continue;
			for (t = 0; t < N_TYPES; t++) {
				if (op_kernel_find(s, opset, BACKEND_HOST, all_types[t], &host) != 0) {
					cr_assert_neq(op_kernel_find(s, opset, BACKEND_CUDA,
								     all_types[t], &dev), 0,
						      "%s/%d: a cuda kernel for %s, which the host "
						      "lacks", elem_ops[i], opset,
						      cep_dtype_name(all_types[t]));
					continue;
				}
				cr_assert_eq(op_kernel_find(s, opset, BACKEND_CUDA, all_types[t], &dev),
					     0, "%s", cep_last_error());
				cr_assert_eq(dev->backend, BACKEND_CUDA);
				covered++;
			}
		}
		cr_assert_gt(covered, 0, "%s", elem_ops[i]);
		checked += covered;
	}
	cr_assert_gt(checked, 700);
}

/* The operand offsets of output element i under a cuda_bcastn layout,
 * as kernels/cuda/elem.cuh computes them. */
static void bcastn_at(const struct cuda_bcastn *p, int64_t i, int64_t *off)
{
	int64_t stride[CUDA_BCASTN_MAX];
	int d, k;

	for (k = 0; k < p->n_in; k++) {
		off[k] = 0;
		stride[k] = 1;
	}
	for (d = p->rank - 1; d >= 0; d--) {
		int64_t c = i % p->dims[d];

		for (k = 0; k < p->n_in; k++) {
			if (((p->bmask[k] >> d) & 1u) == 0) {
				off[k] += c * stride[k];
				stride[k] *= p->dims[d];
			}
		}
		i /= p->dims[d];
	}
}

/* The offset of output element i in operand t under numpy broadcasting,
 * straight from the definition. */
static int64_t bcast_ref(const struct op_tensor *out, const struct op_tensor *t, int64_t i)
{
	int64_t off = 0, stride = 1;
	int d;

	for (d = out->rank - 1; d >= 0; d--) {
		int dt = d - (out->rank - t->rank);
		int64_t c = i % out->dims[d];

		if (dt >= 0 && t->dims[dt] != 1) {
			off += c * stride;
			stride *= t->dims[dt];
		}
		i /= out->dims[d];
	}
	return off;
}

Test(cuda_elem, the_layout_of_many_operands_matches_numpy)
{
	static const char *const cases[][4] = {
		{ "2,3,4,5", "5", "3,1,1", "2,1,4,1" }, { "4,5", "4,5", "4,5", "" },
		{ "6,1,7", "1,5,1", "7", "6,5,7" }, { "1,1,3", "2,1,1", "1", "3" },
		{ "3,1,1,2", "1,4,5,1", "3,4,5,2", "4,1,2" },
	};
	struct op_tensor in[4], out;
	const struct op_tensor *ins[4];
	struct cuda_bcastn p;
	int64_t n, i, off[CUDA_BCASTN_MAX];
	size_t c;
	int k, d;

	for (c = 0; c < N_OF(cases); c++) {
		memset(&out, 0, sizeof(out));
		for (k = 0; k < 4; k++) {
			memset(&in[k], 0, sizeof(in[k]));
			shape_parse(&in[k], cases[c][k]);
			ins[k] = &in[k];
			if (in[k].rank > out.rank) {
				for (d = out.rank; d < in[k].rank; d++)
					out.dims[d] = 1;
				out.rank = in[k].rank;
			}
		}
		/* The output's dims: the largest of each, aligned right. */
		for (d = 0; d < out.rank; d++)
			out.dims[d] = 1;
		for (k = 0; k < 4; k++) {
			for (d = 0; d < in[k].rank; d++) {
				int64_t *o = &out.dims[d + out.rank - in[k].rank];

				if (in[k].dims[d] != 1)
					*o = in[k].dims[d];
			}
		}
		cuda_bcastn_init(&p, &out, ins, 4);
		n = op_dims_product(&out, 0, out.rank);
		cr_assert_eq(p.n, n);
		cr_assert_leq(p.rank, out.rank > 0 ? out.rank : 1);
		for (i = 0; i < n; i++) {
			bcastn_at(&p, i, off);
			for (k = 0; k < 4; k++)
				cr_assert_eq(off[k], bcast_ref(&out, &in[k], i),
					     "case %zu, element %lld, operand %d",
					     c, (long long)i, k);
		}
	}
	/* Operands of the output's own shape merge into one dim. */
	shape_parse(&out, "4,5,6");
	ins[0] = ins[1] = &out;
	cuda_bcastn_init(&p, &out, ins, 2);
	cr_assert_eq(p.rank, 1);
	cr_assert_eq(p.dims[0], 120);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_elem, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/*
 * A device call as dev_call_make() of cuda_util.h builds one, with room
 * for the 11 inputs of the variadic cases and the workspace the kernel
 * asks for (Sum of many float16 inputs keeps its running sum there),
 * placed in device memory.
 */
#define ELEM_MAX_IN 12

struct elem_call {
	struct op_node node;
	const struct op_schema *schema;
	const struct op_kernel *kernel;    /* the cuda one */
	struct op_tensor in[ELEM_MAX_IN], out; /* device pointers */
	struct op_call *call;
};

static void elem_call_make(struct elem_call *d, const char *op, int opset,
			   const struct op_attr *attrs, int n_attrs,
			   const struct op_tensor *in, int n_in)
{
	size_t ws = 0;
	int i;

	cr_assert_leq(n_in, ELEM_MAX_IN);
	memset(d, 0, sizeof(*d));
	d->node = (struct op_node){ .name = "n", .op_type = op, .domain = "", .opset = opset,
				    .n_attrs = n_attrs, .attrs = attrs };
	infer_out(&d->node, &d->schema, in, n_in, &d->out);
	cr_assert_eq(op_kernel_find(d->schema, opset, BACKEND_CUDA,
				    op_kernel_dtype(d->schema, in, n_in, &d->out, 1), &d->kernel),
		     0, "%s", cep_last_error());
	for (i = 0; i < n_in; i++) {
		d->in[i] = in[i];
		if (op_tensor_present(&in[i]))
			d->in[i].data = dev_put(in[i].data, op_tensor_bytes(&in[i]));
	}
	cr_assert_eq(backend_mem_alloc(gpu_be, op_tensor_bytes(&d->out), &d->out.data), 0,
		     "%s", cep_last_error());
	dev_poison(d->out.data, op_tensor_bytes(&d->out));
	d->call = calloc(1, sizeof(*d->call));
	d->call->node = &d->node;
	d->call->n_in = n_in;
	d->call->n_out = 1;
	d->call->in = d->in;
	d->call->out = &d->out;
	d->call->be = gpu_be;
	cr_assert_eq(d->kernel->prepare(d->call, &ws), 0, "%s: %s", op, cep_last_error());
	if (ws > 0) {
		cr_assert_eq(backend_mem_alloc(gpu_be, ws, &d->call->workspace), 0, "%s",
			     cep_last_error());
		d->call->workspace_bytes = ws;
	}
}

static void elem_call_free(struct elem_call *d)
{
	int i;

	for (i = 0; i < d->call->n_in; i++)
		backend_mem_free(gpu_be, d->in[i].data, op_tensor_bytes(&d->in[i]));
	backend_mem_free(gpu_be, d->out.data, op_tensor_bytes(&d->out));
	backend_mem_free(gpu_be, d->call->workspace, d->call->workspace_bytes);
	free(d->call);
}

/*
 * Pow of an integer base to a float exponent goes through the double
 * pow() of each side's math library, which may differ in the last bits
 * (glibc's is correctly rounded, CUDA's within 2 units in the last
 * place), and truncating and wrapping a large result shows those bits.
 * So each element must be what the host's rule (truncate, saturate,
 * wrap) makes of a double within 2 ulps of the host's pow(); the elements
 * that differ from the host's at all are counted and printed.
 */
static int64_t compare_pow_int_float(const char *what, const struct op_tensor *in,
				     const struct op_tensor *ref, const void *got)
{
	int64_t n = op_dims_product(ref, 0, ref->rank), i, bad = 0, differ = 0;
	cep_dtype t = ref->dtype;

	for (i = 0; i < n; i++) {
		int64_t base = cpu_load_i(in[0].data, t, bcast_ref(ref, &in[0], i));
		double e = cpu_load_f(in[1].data, in[1].dtype, bcast_ref(ref, &in[1], i));
		double x = pow((double)base, e);
		int64_t g = cpu_load_i(got, t, i);
		uint64_t wrapped;
		bool ok = false;
		int k;

		if (g != cpu_load_i(ref->data, t, i))
			differ++;
		/* x - 2 ulps to x + 2 ulps (a NaN stays itself, giving 0). */
		x = nextafter(nextafter(x, -INFINITY), -INFINITY);
		for (k = 0; k < 5 && !ok; k++) {
			cpu_store_i(&wrapped, t, 0, cpu_f2i(x));
			ok = cpu_load_i(&wrapped, t, 0) == g;
			x = nextafter(x, INFINITY);
		}
		if (!ok && bad++ == 0)
			printf("    first mismatch at %lld: %lld ^ %.9g, want %lld, got %lld\n",
			       (long long)i, (long long)base, e,
			       (long long)cpu_load_i(ref->data, t, i), (long long)g);
	}
	printf("  %-44s %9lld elements  %lld off the host's last bits%s\n", what, (long long)n,
	       (long long)differ, bad ? "  MISMATCH" : "");
	fflush(stdout);
	return bad;
}

/* Runs op on the host (the reference) and on the device over the same
 * inputs and compares; returns the mismatches. */
static int64_t check_op(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
			const struct op_tensor *in, int n_in, const char *label)
{
	const struct op_kernel *host;
	struct op_tensor ref;
	struct elem_call d;
	double rtol, atol;
	char what[200];
	size_t bytes;
	int64_t bad;
	void *got;

	elem_call_make(&d, op, opset, attrs, n_attrs, in, n_in);
	ref = d.out;
	ref.data = NULL;
	cr_assert_eq(op_kernel_find(d.schema, opset, BACKEND_HOST,
				    op_kernel_dtype(d.schema, in, n_in, &ref, 1), &host), 0);
	cr_assert_eq(exec_host_eval(&d.node, host, in, n_in, &ref, 1), 0, "%s", cep_last_error());
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, d.call), 0, "%s: %s", op,
		     cep_last_error());
	bytes = op_tensor_bytes(&ref);
	got = malloc(bytes ? bytes : 1);
	dev_get(got, d.out.data, bytes);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s: %s", op, cep_last_error());
	tolerance(ref.dtype, &rtol, &atol);
	snprintf(what, sizeof(what), "%s/%d %s", op, opset, label);
	if (strcmp(op, "Pow") == 0 && !cpu_is_float(in[0].dtype) && cpu_is_float(in[1].dtype))
		bad = compare_pow_int_float(what, in, &ref, got);
	else
		bad = compare_tensor(what, &ref, got, rtol, atol);
	free(got);
	free(ref.data);
	elem_call_free(&d);
	return bad;
}

/* Whether the host has a kernel for op at opset over inputs of dtype. */
static bool host_takes(const char *op, int opset, cep_dtype dtype)
{
	const struct op_schema *s;
	const struct op_kernel *k;

	return op_schema_find("", op, opset, &s) == 0 &&
	       op_kernel_find(s, opset, BACKEND_HOST, dtype, &k) == 0;
}

/* ------------------------------------------------------------ activations */

Test(gpu_elem, activations_match_the_host_for_every_type)
{
	static const struct op_attr alpha = { .name = "alpha", .type = OP_ATTR_FLOAT, .f = 0.3f };
	static const struct op_attr ab[2] = {
		{ .name = "alpha", .type = OP_ATTR_FLOAT, .f = 0.25f },
		{ .name = "beta", .type = OP_ATTR_FLOAT, .f = 0.375f },
	};
	static const struct op_attr gelu_tanh = { .name = "approximate", .type = OP_ATTR_STRING,
						  .s = "tanh" };
	static const struct op_attr selu[2] = {
		{ .name = "alpha", .type = OP_ATTR_FLOAT, .f = 2.0f },
		{ .name = "gamma", .type = OP_ATTR_FLOAT, .f = 3.0f },
	};
	static const struct op_attr shrink[2] = {
		{ .name = "lambd", .type = OP_ATTR_FLOAT, .f = 1.5f },
		{ .name = "bias", .type = OP_ATTR_FLOAT, .f = 0.75f },
	};
	static const struct {
		const char *op;
		int opsets[2];
		const struct op_attr *attrs;
		int n_attrs;
	} cases[] = {
		{ "LeakyRelu", { 13, 16 }, NULL, 0 }, { "LeakyRelu", { 13, 22 }, &alpha, 1 },
		{ "Elu", { 13, 22 }, NULL, 0 }, { "Elu", { 13, 22 }, &alpha, 1 },
		{ "HardSigmoid", { 13, 22 }, NULL, 0 }, { "HardSigmoid", { 13, 22 }, ab, 2 },
		{ "HardSwish", { 14, 22 }, NULL, 0 }, { "Softplus", { 13, 22 }, NULL, 0 },
		{ "Gelu", { 20, 22 }, NULL, 0 }, { "Gelu", { 20, 22 }, &gelu_tanh, 1 },
		{ "Selu", { 6, 22 }, NULL, 0 }, { "Selu", { 6, 22 }, selu, 2 },
		{ "Celu", { 12, 28 }, NULL, 0 }, { "Celu", { 12, 28 }, &alpha, 1 },
		{ "Softsign", { 1, 22 }, NULL, 0 }, { "Swish", { 24, 24 }, NULL, 0 },
		{ "Swish", { 24, 28 }, &alpha, 1 }, { "Shrink", { 9, 9 }, NULL, 0 },
		{ "Shrink", { 9, 9 }, shrink, 2 },
	};
	unsigned seed = 31u ^ (unsigned)getpid();
	struct op_tensor in;
	char label[96];
	int64_t bad = 0;
	size_t c, v, t;
	int cases_run = 0;

	GPU_REQUIRE();
	for (c = 0; c < N_OF(cases); c++) {
		for (v = 0; v < 2; v++) {
			for (t = 0; t < N_TYPES; t++) {
				if (!host_takes(cases[c].op, cases[c].opsets[v], all_types[t]))
					continue;
				in = host_tensor(all_types[t], "41,67", &seed, true);
				snprintf(label, sizeof(label), "%s [41,67]%s",
					 cep_dtype_name(all_types[t]),
					 cases[c].n_attrs ? " (attributes)" : "");
				bad += check_op(cases[c].op, cases[c].opsets[v], cases[c].attrs,
						cases[c].n_attrs, &in, 1, label);
				free(in.data);
				cases_run++;
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
	cr_assert_gt(cases_run, 40);
}

Test(gpu_elem, prelu_broadcasts_its_slope)
{
	static const char *const shapes[][2] = {
		{ "3,4,5", "5" }, { "2,3,4", "3,1" }, { "7,9", "7,9" }, { "2,3", "" },
		{ "2,3,1,4", "1,3,1,1" },
	};
	static const int opsets[] = { 8, 16 };
	unsigned seed = 37u ^ (unsigned)getpid();
	struct op_tensor in[2];
	char label[96];
	int64_t bad = 0;
	size_t k, v, t;

	GPU_REQUIRE();
	for (v = 0; v < N_OF(opsets); v++) {
		for (t = 0; t < N_TYPES; t++) {
			if (!host_takes("PRelu", opsets[v], all_types[t]))
				continue;
			for (k = 0; k < N_OF(shapes); k++) {
				in[0] = host_tensor(all_types[t], shapes[k][0], &seed, true);
				in[1] = host_tensor(all_types[t], shapes[k][1], &seed, true);
				snprintf(label, sizeof(label), "%s [%s] slope [%s]",
					 cep_dtype_name(all_types[t]), shapes[k][0], shapes[k][1]);
				bad += check_op("PRelu", opsets[v], NULL, 0, in, 2, label);
				free_inputs(in, 2);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_elem, clip_takes_bounds_as_attributes_then_inputs)
{
	static const struct op_attr bounds[2] = {
		{ .name = "min", .type = OP_ATTR_FLOAT, .f = -1.25f },
		{ .name = "max", .type = OP_ATTR_FLOAT, .f = 2.5f },
	};
	/* Which of min and max are given as inputs: both, neither, each. */
	static const bool given[][2] = { { true, true }, { false, false }, { true, false },
					 { false, true } };
	unsigned seed = 41u ^ (unsigned)getpid();
	struct op_tensor in[3];
	char label[96];
	int64_t bad = 0;
	size_t t, g;
	int a;

	GPU_REQUIRE();
	for (t = 0; t < N_TYPES; t++) {
		if (!host_takes("Clip", 10, all_types[t]))
			continue;
		for (a = 0; a <= 2; a++) {
			in[0] = host_tensor(all_types[t], "33,17", &seed, true);
			snprintf(label, sizeof(label), "%s attributes: %d", cep_dtype_name(all_types[t]),
				 a);
			bad += check_op("Clip", 10, a == 1 ? &bounds[1] : bounds, a, in, 1, label);
			free(in[0].data);
		}
	}
	for (t = 0; t < N_TYPES; t++) {
		if (!host_takes("Clip", 13, all_types[t]))
			continue;
		for (g = 0; g < N_OF(given); g++) {
			in[0] = host_tensor(all_types[t], "33,17", &seed, true);
			for (a = 0; a < 2; a++) {
				in[1 + a] = given[g][a] ? host_tensor(all_types[t], "", &seed, false)
							: (struct op_tensor){ .rank = 0 };
			}
			snprintf(label, sizeof(label), "%s min %s max %s",
				 cep_dtype_name(all_types[t]), given[g][0] ? "given" : "absent",
				 given[g][1] ? "given" : "absent");
			bad += check_op("Clip", 13, NULL, 0, in, 3, label);
			free_inputs(in, 3);
		}
		/* Bounds the wrong way round: every element becomes max. */
		in[0] = host_tensor(all_types[t], "100", &seed, true);
		in[1] = host_tensor(all_types[t], "1", &seed, false);
		in[2] = host_tensor(all_types[t], "1", &seed, false);
		cpu_store_i(in[1].data, all_types[t], 0, 3);
		cpu_store_i(in[2].data, all_types[t], 0, 1);
		snprintf(label, sizeof(label), "%s min 3 > max 1", cep_dtype_name(all_types[t]));
		bad += check_op("Clip", 13, NULL, 0, in, 3, label);
		free_inputs(in, 3);
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* ------------------------------------------------------ compare and logic */

static const char *const cmp_shapes[][2] = {
	{ "3,4,5", "3,4,5" }, { "3,1,5", "4,1" }, { "", "7,3" }, { "6,1,1,8", "1,5,7,1" },
};

Test(gpu_elem, comparisons_broadcast_like_the_host)
{
	static const char *const ops[] = { "Equal", "Less", "LessOrEqual", "Greater",
					   "GreaterOrEqual", "And", "Or" };
	static const int opsets[] = { 10, 16 };
	unsigned seed = 43u ^ (unsigned)getpid();
	struct op_tensor in[2];
	char label[96];
	int64_t bad = 0;
	size_t o, v, t, k;
	int cases = 0;

	GPU_REQUIRE();
	for (o = 0; o < N_OF(ops); o++) {
		for (v = 0; v < N_OF(opsets); v++) {
			for (t = 0; t < N_TYPES; t++) {
				if (!host_takes(ops[o], opsets[v], all_types[t]))
					continue;
				for (k = 0; k < N_OF(cmp_shapes); k++) {
					in[0] = host_tensor(all_types[t], cmp_shapes[k][0], &seed, true);
					in[1] = host_tensor(all_types[t], cmp_shapes[k][1], &seed, true);
					/* Equal values must show up, not only unequal ones. */
					if (op_tensor_bytes(&in[0]) == op_tensor_bytes(&in[1]))
						memcpy(in[1].data, in[0].data,
						       op_tensor_bytes(&in[0]) / 2);
					snprintf(label, sizeof(label), "%s [%s] [%s]",
						 cep_dtype_name(all_types[t]), cmp_shapes[k][0],
						 cmp_shapes[k][1]);
					bad += check_op(ops[o], opsets[v], NULL, 0, in, 2, label);
					free_inputs(in, 2);
					cases++;
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
	cr_assert_gt(cases, 150);
}

Test(gpu_elem, not_and_where)
{
	static const char *const shapes[][3] = {
		{ "3,4,5", "3,4,5", "3,4,5" }, { "4,1", "3,1,5", "5" }, { "", "2,3", "1,3" },
		{ "6,1,7", "1,5,1", "6,5,7" },
	};
	static const int opsets[] = { 13, 16 };
	unsigned seed = 47u ^ (unsigned)getpid();
	struct op_tensor in[3];
	char label[96];
	int64_t bad = 0;
	size_t v, t, k;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_BOOL, "77,13", &seed, false);
	bad += check_op("Not", 1, NULL, 0, in, 1, "bool [77,13]");
	bad += check_op("Not", 13, NULL, 0, in, 1, "bool [77,13]");
	free(in[0].data);
	for (v = 0; v < N_OF(opsets); v++) {
		for (t = 0; t < N_TYPES; t++) {
			if (!host_takes("Where", opsets[v], all_types[t]))
				continue;
			for (k = 0; k < N_OF(shapes); k++) {
				in[0] = host_tensor(CEP_DTYPE_BOOL, shapes[k][0], &seed, false);
				in[1] = host_tensor(all_types[t], shapes[k][1], &seed, true);
				in[2] = host_tensor(all_types[t], shapes[k][2], &seed, true);
				snprintf(label, sizeof(label), "%s [%s] [%s] [%s]",
					 cep_dtype_name(all_types[t]), shapes[k][0], shapes[k][1],
					 shapes[k][2]);
				bad += check_op("Where", opsets[v], NULL, 0, in, 3, label);
				free_inputs(in, 3);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* --------------------------------------------------------------- variadic */

Test(gpu_elem, min_max_sum_mean_of_any_number_of_inputs)
{
	static const char *const ops[] = { "Min", "Max", "Sum", "Mean" };
	/* Up to 11 shapes per case; more than 8 inputs take two launches. */
	static const struct {
		int n;
		const char *shapes[11];
	} cases[] = {
		{ 1, { "5,7" } },
		{ 2, { "3,4,5", "3,4,5" } },
		{ 3, { "3,1,5", "4,1", "" } },
		{ 4, { "2,3,4,5", "5", "3,1,1", "2,1,4,1" } },
		{ 8, { "6,5", "6,5", "5", "6,1", "", "1,5", "6,5", "1" } },
		{ 11, { "4,3", "3", "4,3", "4,1", "", "4,3", "1,3", "4,3", "3", "4,3", "4,3" } },
	};
	static const int opsets[] = { 12, 13 };
	unsigned seed = 53u ^ (unsigned)getpid();
	struct op_tensor in[11];
	char label[96];
	int64_t bad = 0;
	size_t o, v, t, c;
	int i, runs = 0;

	GPU_REQUIRE();
	for (o = 0; o < N_OF(ops); o++) {
		for (v = 0; v < N_OF(opsets); v++) {
			for (t = 0; t < N_TYPES; t++) {
				if (!host_takes(ops[o], opsets[v], all_types[t]))
					continue;
				for (c = 0; c < N_OF(cases); c++) {
					for (i = 0; i < cases[c].n; i++)
						in[i] = host_tensor(all_types[t], cases[c].shapes[i],
								    &seed, true);
					snprintf(label, sizeof(label), "%s %d inputs [%s] ...",
						 cep_dtype_name(all_types[t]), cases[c].n,
						 cases[c].shapes[0]);
					bad += check_op(ops[o], opsets[v], NULL, 0, in, cases[c].n,
							label);
					free_inputs(in, cases[c].n);
					runs++;
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
	cr_assert_gt(runs, 100);
}

/* ---------------------------------------------------------------- Pow, Mod */

Test(gpu_elem, pow_for_every_base_and_exponent_type)
{
	static const char *const shapes[][2] = { { "37,29", "37,29" }, { "3,1,5", "4,1" },
						 { "6,7", "" } };
	unsigned seed = 59u ^ (unsigned)getpid();
	struct op_tensor in[2];
	char label[96];
	int64_t bad = 0;
	size_t a, b, k;
	int runs = 0;

	GPU_REQUIRE();
	/* Before opset 12 one float type for both. */
	for (a = 0; a < N_TYPES; a++) {
		if (!host_takes("Pow", 11, all_types[a]))
			continue;
		in[0] = host_tensor(all_types[a], "37,29", &seed, true);
		in[1] = host_tensor(all_types[a], "29", &seed, true);
		snprintf(label, sizeof(label), "%s ^ %s", cep_dtype_name(all_types[a]),
			 cep_dtype_name(all_types[a]));
		bad += check_op("Pow", 11, NULL, 0, in, 2, label);
		free_inputs(in, 2);
	}
	for (a = 0; a < N_TYPES; a++) {
		if (!host_takes("Pow", 15, all_types[a]))
			continue;
		for (b = 0; b + 1 < N_TYPES; b++) {
			for (k = 0; k < N_OF(shapes); k++) {
				in[0] = host_tensor(all_types[a], shapes[k][0], &seed, true);
				in[1] = host_tensor(all_types[b], shapes[k][1], &seed, true);
				snprintf(label, sizeof(label), "%s ^ %s [%s] [%s]",
					 cep_dtype_name(all_types[a]), cep_dtype_name(all_types[b]),
					 shapes[k][0], shapes[k][1]);
				bad += check_op("Pow", 15, NULL, 0, in, 2, label);
				free_inputs(in, 2);
				runs++;
			}
		}
	}
	/* A scalar exponent of 2, which the host squares. */
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "1000", &seed, true);
	in[1] = host_tensor(CEP_DTYPE_FLOAT32, "", &seed, false);
	*(float *)in[1].data = 2.0f;
	bad += check_op("Pow", 15, NULL, 0, in, 2, "float32 ^ 2");
	free_inputs(in, 2);
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
	cr_assert_eq(runs, 5 * 7 * 3);
}

Test(gpu_elem, mod_with_both_sign_rules)
{
	static const char *const shapes[][2] = { { "41,23", "41,23" }, { "3,1,5", "4,1" },
						 { "6,7", "" } };
	struct op_attr fmod = { .name = "fmod", .type = OP_ATTR_INT };
	static const int opsets[] = { 12, 13, 28 };
	unsigned seed = 61u ^ (unsigned)getpid();
	struct op_tensor in[2];
	char label[96];
	int64_t bad = 0;
	size_t v, t, k;
	int f, runs = 0;

	GPU_REQUIRE();
	for (v = 0; v < N_OF(opsets); v++) {
		for (t = 0; t < N_TYPES; t++) {
			if (!host_takes("Mod", opsets[v], all_types[t]))
				continue;
			for (f = 0; f <= 1; f++) {
				/* fmod=0 takes floats only from opset 28. */
				if (f == 0 && cpu_is_float(all_types[t]) && opsets[v] < 28)
					continue;
				fmod.i = f;
				for (k = 0; k < N_OF(shapes); k++) {
					in[0] = host_tensor(all_types[t], shapes[k][0], &seed, true);
					in[1] = host_tensor(all_types[t], shapes[k][1], &seed, true);
					snprintf(label, sizeof(label), "%s fmod=%d [%s] [%s]",
						 cep_dtype_name(all_types[t]), f, shapes[k][0],
						 shapes[k][1]);
					bad += check_op("Mod", opsets[v], &fmod, 1, in, 2, label);
					free_inputs(in, 2);
					runs++;
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
	cr_assert_gt(runs, 60);
}
