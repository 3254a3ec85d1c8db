/*
 * test_cuda_ctrl.c — control flow (If, Loop, Scan) on the CUDA backend
 * against the host backend, on the same fresh random data: each model is
 * loaded once and run in a session of each, and every output compared,
 * the largest absolute and relative errors printed. If passes every
 * stored type through (its condition read back from the device), Loop
 * runs the ONNX example (a body planned per iteration) and a while loop
 * whose body computes its condition, Scan runs along other axes and
 * backward for each float type and the integers, and a Scan RNN reads the
 * model's weights in place from the device copy (fp32 and fp16 sessions).
 * A plan with control flow is never captured, and a bad index a kernel of
 * a loop body meets names that kernel's node.
 *
 * Everywhere: the models load and every node their subplans would launch
 * on the device has a device kernel (the registry alone decides). On a GPU
 * machine with CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips,
 * visibly.
 */
#include <time.h>

#include "tests/unit/cuda_util.h"

#include "engine/engine.h"
#include "engine/model.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

#define MAX_IO 4

static unsigned fresh_seed(const char *what)
{
	unsigned seed = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL);

	printf("%s: seed %u\n", what, seed);
	return seed;
}

/* A model and one run's inputs and outputs. */
struct ctrl_case {
	const char *what;
	uint8_t *bytes;
	size_t len;
	cep_precision precision;
	int n_in, n_out;
	struct engine_input in[MAX_IO];
	struct op_tensor in_t[MAX_IO];   /* the inputs' data, random */
	const char *out[MAX_IO];
};

static void case_input(struct ctrl_case *c, const char *name, cep_dtype dt, const char *shape,
		       unsigned *seed)
{
	struct op_tensor *t = &c->in_t[c->n_in];

	*t = host_tensor(dt, shape, seed, false);
	c->in[c->n_in++] = (struct engine_input){ name, dt, t->rank, t->dims, t->data,
						  op_tensor_bytes(t) };
}

static void case_free(struct ctrl_case *c)
{
	int i;

	for (i = 0; i < c->n_in; i++)
		free(c->in_t[i].data);
	free(c->bytes);
}

/* Runs c on backend be into outs (malloc'd, the caller frees each). */
static int case_run(const struct ctrl_case *c, struct backend *be, struct engine_output *outs,
		    int runs)
{
	struct engine_model_options mo = { .precision = c->precision, .backend = be->kind };
	struct engine_session_options so = { .precision = c->precision };
	engine_model *m = NULL;
	engine_session *s = NULL;
	int i, r, ret;

	cr_assert_eq(engine_model_load_as(c->bytes, c->len, -1, &mo, &m), 0, "%s: %s", c->what,
		     cep_last_error());
	cr_assert_eq(engine_session_new(m, be, &so, &s), 0, "%s", cep_last_error());
	for (i = 0; i < c->n_out; i++) {
		outs[i] = (struct engine_output){ .name = c->out[i], .capacity = 1u << 20 };
		outs[i].data = malloc(outs[i].capacity);
		cr_assert_not_null(outs[i].data);
	}
	/* Several runs: the second would be captured if anything were. */
	for (r = 0, ret = 0; r < runs && ret == 0; r++)
		ret = eu_run(s, c->in, (size_t)c->n_in, outs, (size_t)c->n_out);
	if (ret == 0 && be == gpu_be) {
		struct engine_plan_info info;

		cr_assert_geq(engine_session_plans(s, &info, 1), 1);
		cr_assert_not(info.captured, "%s: a plan with control flow was captured", c->what);
	}
	engine_session_free(s);
	engine_model_unref(m);
	return ret;
}

/* Compares an output of the device with the host's: integers and bools
 * exactly, floats by the norm of the difference over the host's norm
 * (within tol); prints the largest absolute and relative errors. */
static void compare(const char *what, const struct engine_output *dev,
		    const struct engine_output *host, double tol)
{
	struct op_tensor t = { .dtype = host->dtype, .rank = host->rank };
	double max_abs = 0, max_rel = 0, err2 = 0, ref2 = 0;
	bool is_float = cpu_is_float(host->dtype);
	int64_t n, i;
	int d;

	cr_assert_eq(dev->dtype, host->dtype, "%s: dtype", what);
	cr_assert_eq(dev->rank, host->rank, "%s: rank", what);
	for (d = 0; d < host->rank; d++)
		cr_assert_eq(dev->dims[d], host->dims[d], "%s: dim %d", what, d);
	memcpy(t.dims, host->dims, sizeof(t.dims));
	n = op_dims_product(&t, 0, t.rank);
	for (i = 0; i < n; i++) {
		double a, b, err;

		if (is_float) {
			a = cpu_load_f(dev->data, host->dtype, i);
			b = cpu_load_f(host->data, host->dtype, i);
		} else {
			a = (double)cpu_load_i(dev->data, host->dtype, i);
			b = (double)cpu_load_i(host->data, host->dtype, i);
			cr_assert_eq(a, b, "%s[%lld]: device %g, host %g", what, (long long)i, a, b);
		}
		err = fabs(a - b);
		if (err > max_abs)
			max_abs = err;
		if (b != 0 && err / fabs(b) > max_rel)
			max_rel = err / fabs(b);
		err2 += err * err;
		ref2 += b * b;
	}
	printf("%-32s %-8s %6lld elements: max abs %.3g, max rel %.3g, norm rel %.3g\n", what,
	       cep_dtype_name(host->dtype), (long long)n, max_abs, max_rel,
	       ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2));
	if (is_float)
		cr_assert(sqrt(err2) <= tol * sqrt(ref2), "%s: the device is %g off the host "
			  "(relative to its norm), more than %g", what,
			  ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2), tol);
}

/* Runs c on the device and on the host and compares every output. */
static void case_check(const struct ctrl_case *c, double tol)
{
	struct engine_output dev[MAX_IO], host[MAX_IO];
	struct backend *h;
	char what[96];
	int i;

	cr_assert_eq(backend_host_new(0, &h), 0);
	cr_assert_eq(case_run(c, h, host, 1), 0, "%s on the host: %s", c->what, cep_last_error());
	cr_assert_eq(case_run(c, gpu_be, dev, 3), 0, "%s on the device: %s", c->what,
		     cep_last_error());
	for (i = 0; i < c->n_out; i++) {
		snprintf(what, sizeof(what), "%s %s", c->what, c->out[i]);
		compare(what, &dev[i], &host[i], tol);
		free(dev[i].data);
		free(host[i].data);
	}
	backend_free(h);
}

/* ---------------------------------------------------------------- models */

/* y = If(cond) { x } else { x + x } (Not for bool). */
static void if_case(struct ctrl_case *c, cep_dtype dt, unsigned *seed)
{
	struct onnxb *b = onnxb_new(21), t, e;
	Onnx__NodeProto *n;

	memset(c, 0, sizeof(*c));
	c->what = "if";
	onnxb_input(b, "cond", CEP_DTYPE_BOOL, "");
	onnxb_input(b, "x", dt, "3,5");
	onnxb_output(b, "y", dt, NULL);
	n = onnxb_node(b, "If", "cond", "y");
	t = onnxb_subgraph(b, n, "then_branch");
	onnxb_output(&t, "x", dt, NULL);
	e = onnxb_subgraph(b, n, "else_branch");
	if (dt == CEP_DTYPE_BOOL)
		onnxb_node(&e, "Not", "x", "e");
	else
		onnxb_node(&e, "Add", "x,x", "e");
	onnxb_output(&e, "e", dt, NULL);
	c->bytes = onnxb_finish(b, &c->len);
	case_input(c, "cond", CEP_DTYPE_BOOL, "", seed);
	case_input(c, "x", dt, "3,5", seed);
	c->out[c->n_out++] = "y";
}

/* test_loop11 of ONNX: y += xs[i:i+1], every y a scan output. */
static void loop11_case(struct ctrl_case *c, unsigned *seed)
{
	static const int64_t one = 1, axes[1] = { 0 };
	float xs[8];
	struct onnxb *b = onnxb_new(11), body;
	struct op_tensor xt = { .data = xs, .dtype = CEP_DTYPE_FLOAT32, .rank = 1, .dims = { 8 } };
	Onnx__NodeProto *n;

	memset(c, 0, sizeof(*c));
	c->what = "loop11";
	fill_random(&xt, seed, false);
	onnxb_input(b, "trip", CEP_DTYPE_INT64, "");
	onnxb_input(b, "y", CEP_DTYPE_FLOAT32, "1");
	onnxb_init(b, "go", CEP_DTYPE_BOOL, "", &(unsigned char){ 1 });
	onnxb_output(b, "res_y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "res_scan", CEP_DTYPE_FLOAT32, NULL);
	n = onnxb_node(b, "Loop", "trip,go,y", "res_y,res_scan");
	body = onnxb_subgraph(b, n, "body");
	onnxb_input(&body, "iter", CEP_DTYPE_INT64, "");
	onnxb_input(&body, "cond_in", CEP_DTYPE_BOOL, "");
	onnxb_input(&body, "y_in", CEP_DTYPE_FLOAT32, "1");
	onnxb_init(&body, "xs", CEP_DTYPE_FLOAT32, "8", xs);
	onnxb_init(&body, "one", CEP_DTYPE_INT64, "", &one);
	onnxb_node(&body, "Identity", "cond_in", "cond_out");
	onnxb_node(&body, "Add", "iter,one", "end");
	onnxb_attr_ints(onnxb_node(&body, "Unsqueeze", "iter", "s"), "axes", 1, axes);
	onnxb_attr_ints(onnxb_node(&body, "Unsqueeze", "end", "e"), "axes", 1, axes);
	onnxb_node(&body, "Slice", "xs,s,e", "sl");
	onnxb_node(&body, "Add", "y_in,sl", "y_out");
	onnxb_node(&body, "Identity", "y_out", "scan_out");
	onnxb_output(&body, "cond_out", CEP_DTYPE_BOOL, NULL);
	onnxb_output(&body, "y_out", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(&body, "scan_out", CEP_DTYPE_FLOAT32, NULL);
	c->bytes = onnxb_finish(b, &c->len);
	case_input(c, "trip", CEP_DTYPE_INT64, "", seed);
	*(int64_t *)c->in_t[0].data = 1 + (int64_t)(rnd(seed) % 8);
	case_input(c, "y", CEP_DTYPE_FLOAT32, "1", seed);
	c->out[c->n_out++] = "res_y";
	c->out[c->n_out++] = "res_scan";
}

/* v = v * 0.75 + x while |v|_2 > t; k counts the iterations. */
static void while_case(struct ctrl_case *c, unsigned *seed)
{
	static const int64_t zero = 0, one = 1;
	static const float f = 0.75f;
	struct onnxb *b = onnxb_new(17), body;
	Onnx__NodeProto *n;

	memset(c, 0, sizeof(*c));
	c->what = "while";
	onnxb_input(b, "m", CEP_DTYPE_INT64, "");
	onnxb_input(b, "t", CEP_DTYPE_FLOAT32, "");
	onnxb_input(b, "v", CEP_DTYPE_FLOAT32, "64");
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "64");
	onnxb_init(b, "k0", CEP_DTYPE_INT64, "", &zero);
	onnxb_output(b, "k", CEP_DTYPE_INT64, NULL);
	onnxb_output(b, "vf", CEP_DTYPE_FLOAT32, NULL);
	n = onnxb_node(b, "Loop", "m,,k0,v", "k,vf");
	body = onnxb_subgraph(b, n, "body");
	onnxb_input(&body, "i", CEP_DTYPE_INT64, "");
	onnxb_input(&body, "c", CEP_DTYPE_BOOL, "");
	onnxb_input(&body, "k_in", CEP_DTYPE_INT64, "");
	onnxb_input(&body, "v_in", CEP_DTYPE_FLOAT32, "64");
	onnxb_init(&body, "one", CEP_DTYPE_INT64, "", &one);
	onnxb_init(&body, "f", CEP_DTYPE_FLOAT32, "", &f);
	onnxb_node(&body, "Add", "k_in,one", "k_out");
	onnxb_node(&body, "Mul", "v_in,f", "vm");
	onnxb_node(&body, "Add", "vm,x", "v_out");
	onnxb_attr_int(onnxb_node(&body, "ReduceL2", "v_out", "norm"), "keepdims", 0);
	onnxb_node(&body, "Greater", "norm,t", "go");
	onnxb_output(&body, "go", CEP_DTYPE_BOOL, NULL);
	onnxb_output(&body, "k_out", CEP_DTYPE_INT64, NULL);
	onnxb_output(&body, "v_out", CEP_DTYPE_FLOAT32, NULL);
	c->bytes = onnxb_finish(b, &c->len);
	case_input(c, "m", CEP_DTYPE_INT64, "", seed);
	*(int64_t *)c->in_t[0].data = 200;
	case_input(c, "t", CEP_DTYPE_FLOAT32, "", seed);
	case_input(c, "v", CEP_DTYPE_FLOAT32, "64", seed);
	case_input(c, "x", CEP_DTYPE_FLOAT32, "64", seed);
	{
		float *x = c->in_t[3].data;
		int i;

		/* The fixed point is 4x: end once |v| is within 10% of it. */
		for (i = 0; i < 64; i++)
			x[i] *= 0.25f;
		*(float *)c->in_t[1].data = 0;
		for (i = 0; i < 64; i++)
			*(float *)c->in_t[1].data += 16 * x[i] * x[i];
		*(float *)c->in_t[1].data = 1.1f * sqrtf(*(float *)c->in_t[1].data);
	}
	c->out[c->n_out++] = "k";
	c->out[c->n_out++] = "vf";
}

/* Scan of dtype dt: s += x_t (x [5,4,3] along axis 1, forward) + w_t (w
 * [3,5] along axis 1, backward); y = s * x_t stacked along the last axis,
 * prepending. */
static void scan_case(struct ctrl_case *c, cep_dtype dt, unsigned *seed)
{
	static const int64_t in_axes[2] = { 1, 1 }, in_dirs[2] = { 0, 1 }, out_axes[1] = { -1 },
			     out_dirs[1] = { 1 };
	struct onnxb *b = onnxb_new(16), body;
	Onnx__NodeProto *n;

	memset(c, 0, sizeof(*c));
	c->what = "scan";
	onnxb_input(b, "s0", dt, "5,3");
	onnxb_input(b, "x", dt, "5,4,3");
	onnxb_input(b, "w", dt, "3,4");
	onnxb_output(b, "s", dt, NULL);
	onnxb_output(b, "y", dt, NULL);
	n = onnxb_node(b, "Scan", "s0,x,w", "s,y");
	onnxb_attr_int(n, "num_scan_inputs", 2);
	onnxb_attr_ints(n, "scan_input_axes", 2, in_axes);
	onnxb_attr_ints(n, "scan_input_directions", 2, in_dirs);
	onnxb_attr_ints(n, "scan_output_axes", 1, out_axes);
	onnxb_attr_ints(n, "scan_output_directions", 1, out_dirs);
	body = onnxb_subgraph(b, n, "body");
	onnxb_input(&body, "s_in", dt, "5,3");
	onnxb_input(&body, "xt", dt, "5,3");
	onnxb_input(&body, "wt", dt, "3");
	onnxb_node(&body, "Add", "s_in,xt", "a");
	onnxb_node(&body, "Add", "a,wt", "s_out");
	onnxb_node(&body, "Mul", "s_out,xt", "p");
	onnxb_output(&body, "s_out", dt, NULL);
	onnxb_output(&body, "p", dt, NULL);
	c->bytes = onnxb_finish(b, &c->len);
	case_input(c, "s0", dt, "5,3", seed);
	case_input(c, "x", dt, "5,4,3", seed);
	case_input(c, "w", dt, "3,4", seed);
	c->out[c->n_out++] = "s";
	c->out[c->n_out++] = "y";
}

/* h_t = tanh(x_t @ wx + h @ wh + bias) over x [2,7,16] along axis 1, the
 * weights initializers of the model graph. */
static void rnn_case(struct ctrl_case *c, cep_precision p, unsigned *seed)
{
	static const int64_t axes[1] = { 1 };
	float wx[16 * 32], wh[32 * 32], bias[32];
	struct onnxb *b = onnxb_new(17), body;
	Onnx__NodeProto *n;
	size_t i;

	memset(c, 0, sizeof(*c));
	c->what = p == CEP_PRECISION_FP16 ? "scan rnn fp16" : "scan rnn";
	c->precision = p;
	for (i = 0; i < 16 * 32; i++)
		wx[i] = ((float)(rnd(seed) % 2001) - 1000.0f) / 4000.0f;
	for (i = 0; i < 32 * 32; i++)
		wh[i] = ((float)(rnd(seed) % 2001) - 1000.0f) / 6000.0f;
	for (i = 0; i < 32; i++)
		bias[i] = ((float)(rnd(seed) % 2001) - 1000.0f) / 1000.0f;
	onnxb_input(b, "h0", CEP_DTYPE_FLOAT32, "2,32");
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,7,16");
	onnxb_init(b, "wx", CEP_DTYPE_FLOAT32, "16,32", wx);
	onnxb_init(b, "wh", CEP_DTYPE_FLOAT32, "32,32", wh);
	onnxb_init(b, "bias", CEP_DTYPE_FLOAT32, "32", bias);
	onnxb_output(b, "h", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "ys", CEP_DTYPE_FLOAT32, NULL);
	n = onnxb_node(b, "Scan", "h0,x", "h,ys");
	onnxb_attr_int(n, "num_scan_inputs", 1);
	onnxb_attr_ints(n, "scan_input_axes", 1, axes);
	onnxb_attr_ints(n, "scan_output_axes", 1, axes);
	body = onnxb_subgraph(b, n, "body");
	onnxb_input(&body, "h_in", CEP_DTYPE_FLOAT32, "2,32");
	onnxb_input(&body, "xt", CEP_DTYPE_FLOAT32, "2,16");
	onnxb_node(&body, "MatMul", "xt,wx", "a");
	onnxb_node(&body, "MatMul", "h_in,wh", "hb");
	onnxb_node(&body, "Add", "a,hb", "s");
	onnxb_node(&body, "Add", "s,bias", "z");
	onnxb_node(&body, "Tanh", "z", "h_out");
	onnxb_output(&body, "h_out", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(&body, "h_out", CEP_DTYPE_FLOAT32, NULL);
	c->bytes = onnxb_finish(b, &c->len);
	case_input(c, "h0", CEP_DTYPE_FLOAT32, "2,32", seed);
	case_input(c, "x", CEP_DTYPE_FLOAT32, "2,7,16", seed);
	c->out[c->n_out++] = "h";
	c->out[c->n_out++] = "ys";
}

/* Scan over idx [6] gathering rows of a [4,3] table of the model graph;
 * idx[5] is bad when bad is set. */
static void gather_scan_case(struct ctrl_case *c, bool bad, unsigned *seed)
{
	float table[12];
	struct onnxb *b = onnxb_new(16), body;
	struct op_tensor tt = { .data = table, .dtype = CEP_DTYPE_FLOAT32, .rank = 1, .dims = { 12 } };
	Onnx__NodeProto *n;
	int64_t *idx;
	int i;

	memset(c, 0, sizeof(*c));
	c->what = "gather scan";
	fill_random(&tt, seed, false);
	onnxb_input(b, "s0", CEP_DTYPE_FLOAT32, "3");
	onnxb_input(b, "idx", CEP_DTYPE_INT64, "6");
	onnxb_init(b, "table", CEP_DTYPE_FLOAT32, "4,3", table);
	onnxb_output(b, "s", CEP_DTYPE_FLOAT32, NULL);
	n = onnxb_node(b, "Scan", "s0,idx", "s");
	onnxb_attr_int(n, "num_scan_inputs", 1);
	body = onnxb_subgraph(b, n, "body");
	onnxb_input(&body, "s_in", CEP_DTYPE_FLOAT32, "3");
	onnxb_input(&body, "i", CEP_DTYPE_INT64, "");
	onnxb_node(&body, "Gather", "table,i", "row");
	onnxb_node(&body, "Add", "s_in,row", "s_out");
	onnxb_output(&body, "s_out", CEP_DTYPE_FLOAT32, NULL);
	c->bytes = onnxb_finish(b, &c->len);
	case_input(c, "s0", CEP_DTYPE_FLOAT32, "3", seed);
	case_input(c, "idx", CEP_DTYPE_INT64, "6", seed);
	idx = c->in_t[1].data;
	for (i = 0; i < 6; i++)
		idx[i] = (int64_t)(rnd(seed) % 8) - 4;
	if (bad)
		idx[5] = 4;
	c->out[c->n_out++] = "s";
}

/* ------------------------------------------------------------ everywhere */

/* Every node the subplans of these models launch has a device kernel. */
static void kernels_check(const struct graph *g)
{
	int k, i, j;

	for (k = 0; k < g->n_order; k++) {
		const struct graph_node *node = &g->nodes[g->order[k]];
		struct op_tensor in[8], out[8];
		const struct op_kernel *kern;

		for (j = 0; j < node->n_subs; j++)
			kernels_check(node->subs[j].g);
		if (node->schema->flags & (OP_SHAPE_ONLY | OP_CONTROL))
			continue;
		cr_assert_leq(node->n_in, 8);
		cr_assert_leq(node->n_out, 8);
		for (i = 0; i < node->n_in; i++) {
			memset(&in[i], 0, sizeof(in[i]));
			if (node->in[i] >= 0)
				in[i] = g->values[node->in[i]].t;
		}
		for (i = 0; i < node->n_out; i++) {
			memset(&out[i], 0, sizeof(out[i]));
			if (node->out[i] >= 0)
				out[i] = g->values[node->out[i]].t;
		}
		cr_assert_eq(op_kernel_find(node->schema, node->op.opset, BACKEND_CUDA,
					    op_kernel_dtype(node->schema, in, node->n_in, out,
							    node->n_out), &kern), 0,
			     "%s", cep_last_error());
	}
}

Test(cuda_ctrl, every_node_of_the_subgraphs_has_a_device_kernel)
{
	unsigned seed = 1;
	struct ctrl_case cs[5];
	int i;

	if_case(&cs[0], CEP_DTYPE_FLOAT16, &seed);
	loop11_case(&cs[1], &seed);
	while_case(&cs[2], &seed);
	scan_case(&cs[3], CEP_DTYPE_BFLOAT16, &seed);
	rnn_case(&cs[4], CEP_PRECISION_FP32, &seed);
	for (i = 0; i < 5; i++) {
		struct model *m;

		cr_assert_eq(model_load(cs[i].bytes, cs[i].len, -1, &m), 0, "%s: %s", cs[i].what,
			     cep_last_error());
		kernels_check(&m->g);
		model_free(m);
		case_free(&cs[i]);
	}
}

/* ---------------------------------------------------------------- device */

TestSuite(gpu_ctrl, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

/* Whether the device has op for dt at opset (Add of int8, say). */
static bool device_has(const char *op, int opset, cep_dtype dt)
{
	const struct op_schema *s;
	const struct op_kernel *k;

	if (op_schema_find("", op, opset, &s) < 0 || op_kernel_find(s, opset, BACKEND_CUDA, dt, &k) < 0) {
		cep__clear_error();
		return false;
	}
	return true;
}

Test(gpu_ctrl, if_reads_its_condition_back_for_every_type)
{
	unsigned seed = fresh_seed("if");
	size_t t;
	int r;

	GPU_REQUIRE();
	for (t = 0; t < sizeof(all_types) / sizeof(all_types[0]); t++) {
		cep_dtype dt = all_types[t];

		if (!device_has(dt == CEP_DTYPE_BOOL ? "Not" : "Add", 21, dt)) {
			printf("if %s: no device kernel for the else branch; skipped\n",
			       cep_dtype_name(dt));
			continue;
		}
		for (r = 0; r < 2; r++) {
			struct ctrl_case c;

			if_case(&c, dt, &seed);
			*(unsigned char *)c.in_t[0].data = (unsigned char)r;
			case_check(&c, 0);
			case_free(&c);
		}
	}
}

Test(gpu_ctrl, the_onnx_loop_example_with_a_body_per_iteration)
{
	unsigned seed = fresh_seed("loop11");
	int r;

	GPU_REQUIRE();
	for (r = 0; r < 3; r++) {
		struct ctrl_case c;

		loop11_case(&c, &seed);
		case_check(&c, 1e-6);
		case_free(&c);
	}
}

Test(gpu_ctrl, a_while_loop_reads_its_condition_back_every_iteration)
{
	unsigned seed = fresh_seed("while");
	struct ctrl_case c;

	GPU_REQUIRE();
	while_case(&c, &seed);
	case_check(&c, 1e-4);
	case_free(&c);
}

Test(gpu_ctrl, scan_along_other_axes_and_backward_for_every_type)
{
	unsigned seed = fresh_seed("scan");
	size_t t;

	GPU_REQUIRE();
	for (t = 0; t < sizeof(all_types) / sizeof(all_types[0]); t++) {
		cep_dtype dt = all_types[t];
		struct ctrl_case c;

		if (!device_has("Add", 16, dt) || !device_has("Mul", 16, dt)) {
			printf("scan %s: no device Add or Mul; skipped\n", cep_dtype_name(dt));
			continue;
		}
		scan_case(&c, dt, &seed);
		/* Integers wrap alike; half types round alike (both compute in
		 * float32 and round once). */
		case_check(&c, dt == CEP_DTYPE_FLOAT32 ? 1e-5 : cpu_is_float(dt) ? 1e-2 : 0);
		case_free(&c);
	}
}

Test(gpu_ctrl, a_scan_rnn_reads_the_device_copy_of_the_weights)
{
	unsigned seed = fresh_seed("rnn");
	struct ctrl_case c;

	GPU_REQUIRE();
	rnn_case(&c, CEP_PRECISION_FP32, &seed);
	case_check(&c, 1e-3);
	case_free(&c);
	rnn_case(&c, CEP_PRECISION_FP16, &seed);
	case_check(&c, 2e-2);
	case_free(&c);
}

Test(gpu_ctrl, a_bad_index_in_a_loop_body_names_its_node)
{
	unsigned seed = fresh_seed("gather scan");
	struct engine_output out[MAX_IO];
	struct ctrl_case c;

	GPU_REQUIRE();
	gather_scan_case(&c, false, &seed);
	case_check(&c, 1e-6);
	case_free(&c);
	gather_scan_case(&c, true, &seed);
	cr_assert_eq(case_run(&c, gpu_be, out, 1), CEP_EINVAL, "%s", cep_last_error());
	printf("the bad index: %s\n", cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), "op Gather"), "%s", cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), "in body of node"), "%s", cep_last_error());
	free(out[0].data);
	case_free(&c);
}
