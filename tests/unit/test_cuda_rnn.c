/*
 * test_cuda_rnn.c — the CUDA kernels of kernels/cuda/rnn.c (RNN, GRU,
 * LSTM) against the reference kernels of kernels/cpu/rnn.c on fresh
 * random data, in float32, float16 and bfloat16, printing the worst
 * absolute and relative error of every output: each operator in every
 * direction and layout with and without each optional input, every
 * activation with clip, GRU's linear_before_reset, LSTM's peepholes and
 * input_forget, sequence_lens shorter than the sequence and 0, outputs
 * left unnamed, wide layers over long sequences (units looped over by
 * the grid, rows longer than a warp), an empty sequence; a bad
 * sequence_lens failing the run with the operator's message; and the
 * model of rnn_model.h in fp16 and bf16 sessions on the device against
 * float32 on the host.
 *
 * Everywhere: the registry gives each of these operators a CUDA kernel for
 * each type and opset the host has one for, so that model is all half
 * for the device; and where NVRTC is installed (no device needed) the
 * kernels the launcher asks for are in the compiled source. On a GPU machine with CUDAEP_TEST_GPU=1 the rest runs; elsewhere
 * it skips, visibly.
 */
#include "tests/unit/cuda_util.h"
#include "tests/unit/rnn_model.h"

#include "gpu/cuda/nvrtc.h"

static const char *const rnn_ops[] = { "RNN", "GRU", "LSTM" };

static const cep_dtype rnn_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_RNN_TYPES (sizeof(rnn_types) / sizeof(rnn_types[0]))

/* ------------------------------------------------------------ everywhere */

Test(cuda_rnn, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	size_t i, t;
	int opset, checked = 0;

	for (i = 0; i < 3; i++) {
		for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
			cr_assert_eq(op_schema_find("", rnn_ops[i], opset, &s), 0, "%s/%d: %s",
				     rnn_ops[i], opset, cep_last_error());
			for (t = 0; t < N_RNN_TYPES; t++) {
				bool has_host = op_kernel_find(s, opset, BACKEND_HOST, rnn_types[t],
							       &host) == 0;
				bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, rnn_types[t],
							      &dev) == 0;

				cr_assert_eq(has_dev, has_host, "%s/%d %s: host %d, cuda %d",
					     rnn_ops[i], opset, cep_dtype_name(rnn_types[t]),
					     has_host, has_dev);
				checked += has_dev;
			}
		}
	}
	/* float32 and float16 from 1, bfloat16 from 22. */
	cr_assert_eq(checked, 3 * (2 * OP_OPSET_MAX + (OP_OPSET_MAX - 21)));
}

/* Compiling needs NVRTC, not a device: rnn.cu compiles for sm_90 and has
 * every kernel the launcher looks up. */
Test(cuda_rnn, the_kernels_the_launcher_asks_for_exist)
{
	static const char *const kinds[] = { "rnn_init", "rnn_step", "lstm_step", "gru_gates",
					     "gru_hidden" };
	static const char *const sfx[] = { "f32", "f16", "bf16" };
	struct nvrtc_lib *lib = NULL;
	struct nvrtc_source src;
	char name[32];
	void *image;
	size_t size, k, t;

	if (nvrtc_lib_open(NULL, &lib) != 0)
		GPU_SKIP("skipped: needs NVRTC (no GPU needed); %s", cep_last_error());
	cr_assert_eq(cuda_source_get("rnn", &src), 0, "%s", cep_last_error());
	cr_assert_eq(nvrtc_compile(lib, &src, 90, &image, &size), 0, "%s", cep_last_error());
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (t = 0; t < 3; t++) {
			snprintf(name, sizeof(name), "%s_%s", kinds[k], sfx[t]);
			cr_assert(cuda_image_has(image, size, name), "rnn.cu has no kernel %s", name);
		}
	}
	cr_assert(!cuda_image_has(image, size, "rnn_step_f64"));
	free(image);
	nvrtc_lib_free(lib);
}

/* Converting for the device needs no device: every node of rnn_model.h
 * finds a half kernel there, so none stays float32. */
Test(cuda_rnn, a_half_model_is_all_half_for_the_device)
{
	unsigned seed = 59u ^ (unsigned)getpid();
	struct pm_model pm = rnn_model(&seed);

	rnn_model_all_half(&pm, CEP_PRECISION_FP16, BACKEND_CUDA);
	rnn_model_all_half(&pm, CEP_PRECISION_BF16, BACKEND_CUDA);
	pm_model_free(&pm);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_rnn, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* A call of RNN, GRU or LSTM on the device (up to 8 inputs, 3 outputs,
 * the workspace) as the planner makes one, with the host's results. */
struct rnn_call {
	struct op_node node;
	const struct op_kernel *kernel;
	struct op_tensor in[8], out[3], ref[3]; /* in, out: device pointers */
	struct op_call call;
	int n_in, n_out;
};

/* Builds, computes the reference of and prepares op over the host inputs;
 * the outputs whose bit is set in absent are left unnamed. */
static void rnn_call_make(struct rnn_call *d, const char *op, int opset,
			  const struct op_attr *attrs, int n_attrs, const struct op_tensor *in,
			  int n_in, int n_out, unsigned absent)
{
	struct op_infer x = { .node = &d->node, .n_in = n_in, .n_out = n_out, .in = in,
			      .out = d->out };
	const struct op_schema *s;
	const struct op_kernel *host;
	void *dev[11];
	size_t ws = 0;
	int i;

	memset(d, 0, sizeof(*d));
	d->node = (struct op_node){ .name = "n", .op_type = op, .domain = "", .opset = opset,
				    .n_attrs = n_attrs, .attrs = attrs };
	d->n_in = n_in;
	d->n_out = n_out;
	cr_assert_eq(op_schema_find("", op, opset, &s), 0, "%s", cep_last_error());
	cr_assert_eq(s->infer(&x), 0, "%s", cep_last_error());
	cr_assert_eq(op_kernel_find(s, opset, BACKEND_CUDA, in[0].dtype, &d->kernel), 0, "%s",
		     cep_last_error());
	cr_assert_eq(op_kernel_find(s, opset, BACKEND_HOST, in[0].dtype, &host), 0, "%s",
		     cep_last_error());
	for (i = 0; i < n_out; i++) {
		d->ref[i] = d->out[i];
		d->ref[i].data = NULL;
	}
	cr_assert_eq(exec_host_eval(&d->node, host, in, n_in, d->ref, n_out), 0, "%s",
		     cep_last_error());
	for (i = 0; i < n_in; i++) {
		d->in[i] = in[i];
		if (op_tensor_present(&in[i]))
			d->in[i].data = dev_put(in[i].data, op_tensor_bytes(&in[i]));
	}
	for (i = 0; i < n_out; i++) {
		if (absent & (1u << i)) {
			d->out[i] = (struct op_tensor){ .dtype = CEP_DTYPE_UNDEFINED };
			continue;
		}
		cr_assert_eq(backend_mem_alloc(gpu_be, op_tensor_bytes(&d->out[i]), &d->out[i].data),
			     0, "%s", cep_last_error());
		dev_poison(d->out[i].data, op_tensor_bytes(&d->out[i]));
	}
	d->call = (struct op_call){ .node = &d->node, .n_in = n_in, .n_out = n_out, .in = d->in,
				    .out = d->out, .be = gpu_be };
	/* As the planner does, prepare() sees shapes but no data. */
	for (i = 0; i < n_in; i++) {
		dev[i] = d->in[i].data;
		d->in[i].data = NULL;
	}
	for (i = 0; i < n_out; i++) {
		dev[n_in + i] = d->out[i].data;
		d->out[i].data = NULL;
	}
	cr_assert_eq(d->kernel->prepare(&d->call, &ws), 0, "%s: %s", op, cep_last_error());
	for (i = 0; i < n_in; i++)
		d->in[i].data = dev[i];
	for (i = 0; i < n_out; i++)
		d->out[i].data = dev[n_in + i];
	d->call.workspace_bytes = ws;
	if (ws) {
		cr_assert_eq(backend_mem_alloc(gpu_be, ws, &d->call.workspace), 0, "%s",
			     cep_last_error());
		/* Nothing may read the workspace before writing it. */
		dev_poison(d->call.workspace, ws);
	}
}

static void rnn_call_free(struct rnn_call *d)
{
	int i;

	for (i = 0; i < d->n_in; i++) {
		if (d->in[i].data)
			backend_mem_free(gpu_be, d->in[i].data, op_tensor_bytes(&d->in[i]));
	}
	for (i = 0; i < d->n_out; i++) {
		if (d->out[i].data)
			backend_mem_free(gpu_be, d->out[i].data, op_tensor_bytes(&d->out[i]));
		free(d->ref[i].data);
	}
	if (d->call.workspace)
		backend_mem_free(gpu_be, d->call.workspace, d->call.workspace_bytes);
}

/* Runs the call and compares every named output with the host's. float32
 * sums run in another order on the device: 1e-4 relative, 1e-5 absolute. */
static int64_t rnn_call_check(struct rnn_call *d, const char *label)
{
	int64_t bad = 0;
	int i;

	cr_assert_eq(backend_launch(gpu_be, gpu_s, d->kernel->run, &d->call), 0, "%s: %s",
		     d->node.op_type, cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s: %s", d->node.op_type,
		     cep_last_error());
	for (i = 0; i < d->n_out; i++) {
		size_t bytes = op_tensor_bytes(&d->ref[i]);
		double rtol, atol;
		char what[240];
		void *got;

		if (d->out[i].data == NULL)
			continue;
		got = malloc(bytes ? bytes : 1);
		dev_get(got, d->out[i].data, bytes);
		cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
		tolerance(d->ref[i].dtype, &rtol, &atol);
		if (d->ref[i].dtype == CEP_DTYPE_FLOAT32) {
			rtol = 1e-4;
			atol = 1e-5;
		}
		snprintf(what, sizeof(what), "%s/%d %s %s", d->node.op_type, d->node.opset, label,
			 i == 0 ? "Y" : i == 1 ? "Y_h" : "Y_c");
		bad += compare_tensor(what, &d->ref[i], got, rtol, atol);
		free(got);
	}
	return bad;
}

/* A case: shapes, the optional inputs given, the attributes. */
struct gcase {
	const char *op;
	int opset;
	const char *dir;
	int layout;
	int S, B, I, H;
	bool b, h0, c0, p;
	const int32_t *lens;           /* (B), NULL: none */
	int n_attrs;
	struct op_attr attrs[4];       /* beyond hidden_size, direction, layout */
	unsigned absent;               /* outputs left unnamed */
};

/* Values in [-scale, scale) of dt, from seed. */
static struct op_tensor rnd_tensor(cep_dtype dt, int rank, const int64_t *dims, float scale,
				   unsigned *seed)
{
	struct op_tensor t = { .dtype = dt, .rank = rank };
	int64_t n, i;

	memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
	n = op_dims_product(&t, 0, rank);
	t.data = calloc(1, (size_t)n * cep_dtype_size(dt) + 1);
	cr_assert_not_null(t.data);
	for (i = 0; i < n; i++)
		cpu_store_f(t.data, dt, i, scale * ((float)(rnd(seed) % 65536) / 32768.0f - 1.0f));
	return t;
}

static int64_t run_gcase(const struct gcase *c, cep_dtype dt, unsigned *seed)
{
	int D = c->dir && !strcmp(c->dir, "bidirectional") ? 2 : 1;
	int G = !strcmp(c->op, "RNN") ? 1 : !strcmp(c->op, "GRU") ? 3 : 4, lstm = G == 4;
	int n_in = lstm ? 8 : 6, n_out = lstm ? 3 : 2, na = 0, i;
	int64_t S = c->S, B = c->B, I = c->I, H = c->H;
	int64_t dx[3] = { c->layout ? B : S, c->layout ? S : B, I }, dw[3] = { D, G * H, I };
	int64_t dr[3] = { D, G * H, H }, db[2] = { D, 2 * G * H };
	int64_t dh[3] = { c->layout ? B : D, c->layout ? D : B, H }, dp[2] = { D, 3 * H };
	struct op_attr attrs[8];
	struct op_tensor in[8] = { { 0 } };
	struct rnn_call d;
	char label[200];
	int64_t bad;

	attrs[na++] = (struct op_attr){ .name = "hidden_size", .type = OP_ATTR_INT, .i = H };
	if (c->dir)
		attrs[na++] = (struct op_attr){ .name = "direction", .type = OP_ATTR_STRING, .s = c->dir };
	if (c->layout)
		attrs[na++] = (struct op_attr){ .name = "layout", .type = OP_ATTR_INT, .i = 1 };
	for (i = 0; i < c->n_attrs; i++)
		attrs[na++] = c->attrs[i];
	in[0] = rnd_tensor(dt, 3, dx, 2.0f, seed);
	in[1] = rnd_tensor(dt, 3, dw, 2.0f / sqrtf((float)I), seed);
	in[2] = rnd_tensor(dt, 3, dr, 2.0f / sqrtf((float)H), seed);
	if (c->b)
		in[3] = rnd_tensor(dt, 2, db, 0.5f, seed);
	if (c->lens) {
		in[4] = (struct op_tensor){ .dtype = CEP_DTYPE_INT32, .rank = 1, .dims = { B } };
		in[4].data = malloc(sizeof(int32_t) * (size_t)B);
		memcpy(in[4].data, c->lens, sizeof(int32_t) * (size_t)B);
	}
	if (c->h0)
		in[5] = rnd_tensor(dt, 3, dh, 1.0f, seed);
	if (lstm && c->c0)
		in[6] = rnd_tensor(dt, 3, dh, 1.0f, seed);
	if (lstm && c->p)
		in[7] = rnd_tensor(dt, 2, dp, 0.5f, seed);
	snprintf(label, sizeof(label), "%s %s L%d [S %d B %d I %d H %d]%s%s%s%s%s",
		 cep_dtype_name(dt), c->dir ? c->dir : "forward", c->layout, c->S, c->B, c->I, c->H,
		 c->b ? " B" : "", c->lens ? " lens" : "", c->h0 ? " h0" : "",
		 lstm && c->c0 ? " c0" : "", lstm && c->p ? " P" : "");
	rnn_call_make(&d, c->op, c->opset, attrs, na, in, n_in, n_out, c->absent);
	bad = rnn_call_check(&d, label);
	rnn_call_free(&d);
	free_inputs(in, 8);
	return bad;
}

/* The opset a case runs at for dt: bfloat16 from 22. */
static int opset_for(int opset, cep_dtype dt)
{
	return dt == CEP_DTYPE_BFLOAT16 && opset < 22 ? 22 : opset;
}

static const cep_dtype float_types[3] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					  CEP_DTYPE_BFLOAT16 };

Test(gpu_rnn, every_op_direction_layout_and_optional_input)
{
	static const char *const dirs[] = { "forward", "reverse", "bidirectional" };
	static const int32_t lens[3] = { 6, 2, 0 };
	unsigned seed = 61u ^ (unsigned)getpid();
	int64_t bad = 0;
	int o, d, layout, t, v;

	GPU_REQUIRE();
	for (o = 0; o < 3; o++) {
		for (d = 0; d < 3; d++) {
			for (layout = 0; layout < 2; layout++) {
				for (v = 0; v < 2; v++) {
					for (t = 0; t < 3; t++) {
						struct gcase c = { .op = rnn_ops[o], .dir = dirs[d],
								   .layout = layout, .S = 6, .B = 3,
								   .I = 5, .H = 7, .b = v, .h0 = !v,
								   .c0 = v, .p = !v,
								   .lens = v ? lens : NULL };

						c.opset = opset_for(layout ? 14 : 7, float_types[t]);
						bad += run_gcase(&c, float_types[t], &seed);
					}
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_rnn, activations_clip_and_the_gru_and_lstm_options)
{
	static const char *const rnn_acts[2] = { "LeakyRelu", "HardSigmoid" };
	static const char *const gru_acts[4] = { "Sigmoid", "Softsign", "HardSigmoid", "Elu" };
	static const char *const lstm_acts[6] = { "Sigmoid", "Tanh", "Softplus", "HardSigmoid",
						  "ScaledTanh", "Affine" };
	static const char *const one[1] = { "ThresholdedRelu" };
	static const float alpha[4] = { 0.3f, 0.25f, 0.8f, 0.6f }, beta[3] = { 0.45f, 0.7f, 0.1f };
	unsigned seed = 67u ^ (unsigned)getpid();
	struct gcase cases[] = {
		{ .op = "RNN", .opset = 22, .dir = "bidirectional", .S = 5, .B = 2, .I = 9, .H = 33,
		  .b = true, .n_attrs = 3,
		  .attrs = { { .name = "activations", .type = OP_ATTR_STRINGS, .n = 2, .strings = rnn_acts },
			     { .name = "activation_alpha", .type = OP_ATTR_FLOATS, .n = 2, .floats = alpha },
			     { .name = "activation_beta", .type = OP_ATTR_FLOATS, .n = 1, .floats = beta } } },
		{ .op = "RNN", .opset = 7, .S = 4, .B = 3, .I = 4, .H = 6, .b = true, .n_attrs = 2,
		  .attrs = { { .name = "activations", .type = OP_ATTR_STRINGS, .n = 1, .strings = one },
			     { .name = "activation_alpha", .type = OP_ATTR_FLOATS, .n = 1, .floats = alpha } } },
		{ .op = "GRU", .opset = 22, .dir = "bidirectional", .S = 5, .B = 2, .I = 6, .H = 9,
		  .b = true, .h0 = true, .n_attrs = 4,
		  .attrs = { { .name = "activations", .type = OP_ATTR_STRINGS, .n = 4, .strings = gru_acts },
			     { .name = "activation_alpha", .type = OP_ATTR_FLOATS, .n = 2, .floats = alpha },
			     { .name = "activation_beta", .type = OP_ATTR_FLOATS, .n = 1, .floats = beta },
			     { .name = "clip", .type = OP_ATTR_FLOAT, .f = 1.5f } } },
		{ .op = "GRU", .opset = 3, .S = 6, .B = 2, .I = 5, .H = 8, .b = true, .h0 = true,
		  .n_attrs = 1, .attrs = { { .name = "linear_before_reset", .type = OP_ATTR_INT, .i = 1 } } },
		{ .op = "GRU", .opset = 14, .layout = 1, .dir = "reverse", .S = 6, .B = 2, .I = 5, .H = 8,
		  .b = true, .n_attrs = 2,
		  .attrs = { { .name = "linear_before_reset", .type = OP_ATTR_INT, .i = 1 },
			     { .name = "clip", .type = OP_ATTR_FLOAT, .f = 0.7f } } },
		{ .op = "LSTM", .opset = 22, .dir = "bidirectional", .S = 5, .B = 3, .I = 7, .H = 10,
		  .b = true, .h0 = true, .c0 = true, .p = true, .n_attrs = 4,
		  .attrs = { { .name = "activations", .type = OP_ATTR_STRINGS, .n = 6, .strings = lstm_acts },
			     { .name = "activation_alpha", .type = OP_ATTR_FLOATS, .n = 3, .floats = alpha },
			     { .name = "activation_beta", .type = OP_ATTR_FLOATS, .n = 3, .floats = beta },
			     { .name = "clip", .type = OP_ATTR_FLOAT, .f = 2.0f } } },
		{ .op = "LSTM", .opset = 14, .S = 6, .B = 2, .I = 5, .H = 8, .b = true, .c0 = true,
		  .p = true, .n_attrs = 1,
		  .attrs = { { .name = "input_forget", .type = OP_ATTR_INT, .i = 1 } } },
	};
	int64_t bad = 0;
	size_t c, t;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < 3; t++) {
			struct gcase g = cases[c];

			g.opset = opset_for(g.opset, float_types[t]);
			bad += run_gcase(&g, float_types[t], &seed);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* Lengths of every kind, outputs unnamed in turn, an empty sequence, and
 * layers wide and long enough that the grid loops and rows pass a warp. */
Test(gpu_rnn, lengths_unnamed_outputs_and_wide_layers)
{
	static const int32_t lens[5] = { 9, 1, 0, 4, 9 }, zero[2] = { 0, 0 };
	unsigned seed = 71u ^ (unsigned)getpid();
	struct gcase cases[] = {
		{ .op = "LSTM", .opset = 22, .dir = "bidirectional", .S = 9, .B = 5, .I = 6, .H = 12,
		  .b = true, .h0 = true, .c0 = true, .lens = lens, .absent = 1 },
		{ .op = "GRU", .opset = 22, .dir = "reverse", .layout = 1, .S = 9, .B = 5, .I = 6,
		  .H = 12, .b = true, .lens = lens, .absent = 2 },
		{ .op = "LSTM", .opset = 22, .S = 9, .B = 5, .I = 6, .H = 12, .lens = lens, .absent = 3 },
		{ .op = "RNN", .opset = 22, .dir = "bidirectional", .S = 0, .B = 2, .I = 3, .H = 4,
		  .h0 = true, .lens = zero },
		{ .op = "LSTM", .opset = 22, .dir = "bidirectional", .S = 48, .B = 8, .I = 80,
		  .H = 256, .b = true, .h0 = true, .c0 = true, .p = true },
		{ .op = "GRU", .opset = 22, .dir = "bidirectional", .S = 48, .B = 8, .I = 80, .H = 256,
		  .b = true, .h0 = true },
		/* 563200 units: more than the grid's 65535 blocks of 8 take at once. */
		{ .op = "RNN", .opset = 22, .S = 2, .B = 512, .I = 8, .H = 1100, .b = true },
	};
	int64_t bad = 0;
	size_t c, t;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < 3; t++)
			bad += run_gcase(&cases[c], float_types[t], &seed);
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* A length past seq_length (or below 0) read at run time fails the run
 * with the operator's message, and the stream serves the next. */
Test(gpu_rnn, a_bad_sequence_length_fails_the_run)
{
	int32_t good[2] = { 3, 1 }, past[2] = { 3, 4 }, below[2] = { -2, 1 };
	int64_t dx[3] = { 3, 2, 4 }, dw[3] = { 1, 20, 4 }, dr[3] = { 1, 20, 5 };
	struct op_attr at = { .name = "hidden_size", .type = OP_ATTR_INT, .i = 5 };
	unsigned seed = 73u ^ (unsigned)getpid();
	struct op_tensor in[8] = { { 0 } };
	struct rnn_call d;

	GPU_REQUIRE();
	in[0] = rnd_tensor(CEP_DTYPE_FLOAT32, 3, dx, 1, &seed);
	in[1] = rnd_tensor(CEP_DTYPE_FLOAT32, 3, dw, 1, &seed);
	in[2] = rnd_tensor(CEP_DTYPE_FLOAT32, 3, dr, 1, &seed);
	in[4] = (struct op_tensor){ .dtype = CEP_DTYPE_INT32, .rank = 1, .dims = { 2 }, .data = good };
	rnn_call_make(&d, "LSTM", 22, &at, 1, in, 5, 3, 0);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[4].data, past, sizeof(past)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	printf("  a length of 4 of 3: %s\n", cep_last_error());
	cr_assert(strstr(cep_last_error(), "LSTM: the value 4 read at run time") != NULL, "%s",
		  cep_last_error());
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), &d.call);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[4].data, below, sizeof(below)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	printf("  a length of -2: %s\n", cep_last_error());
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[4].data, good, sizeof(good)), 0);
	cr_assert_eq(rnn_call_check(&d, "good lengths again"), 0);
	in[4].data = NULL;
	rnn_call_free(&d);
	free_inputs(in, 8);
}

/* The model of rnn_model.h in fp16 and bf16 on the device against float32
 * on the host: every node in half, sequence_lens int32. */
Test(gpu_rnn, half_sessions_on_the_device)
{
	unsigned seed = 79u ^ (unsigned)getpid();
	struct pm_model pm;
	struct backend *host;
	cep_precision p;

	GPU_REQUIRE();
	pm = rnn_model(&seed);
	cr_assert_eq(backend_host_new(0, &host), 0, "%s", cep_last_error());
	for (p = CEP_PRECISION_FP16; p <= CEP_PRECISION_BF16; p++)
		pm_compare(&pm, gpu_be, p, host, &seed, 3, p == CEP_PRECISION_FP16 ? 5e-3 : 3e-2);
	pm_compare(&pm, gpu_be, CEP_PRECISION_FP32, host, &seed, 2, 1e-5);
	backend_free(host);
	pm_model_free(&pm);
}
