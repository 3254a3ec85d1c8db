/*
 * test_fuse.c — the load-time fusions of engine/fuse.c on the host
 * backend: a BatchNormalization folded into its Conv, Conv + Relu and
 * Conv + Add + Relu become one FusedConv, and a ResNet block shrinks from
 * seven nodes to two; each fused model's output is compared, on fresh
 * random data, with the same model whose intermediate values are declared
 * graph outputs, which the pass must then leave unfused (the node counts
 * say it did). Also: a value read twice or a BatchNormalization with a
 * parameter that is not constant stays as it is; the half types fuse and
 * agree within their precision; a bfloat16 Conv at an opset without
 * bfloat16 is not fused, so it is refused as the Conv it is; symbolic
 * batch sizes fuse; and a model that uses the internal FusedConv itself
 * is refused at load.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "kernels/cpu/cpu.h"
#include "client/cudaep.h"
#include "engine/engine.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

#define CH 6           /* channels of X and of every Conv's output */
#define HW 9           /* spatial size */

/* What a test model holds: x -> Conv [-> BatchNormalization] [-> Add z]
 * [-> Relu] -> y, or two such stages (a ResNet block). */
struct spec {
	cep_dtype dt;
	int opset;
	const char *x_shape;     /* "2,6,9,9"; a symbol for the batch may lead */
	bool bias;               /* the Conv has B */
	bool bn;                 /* a BatchNormalization after the Conv */
	bool bn_scale_input;     /* its scale is a graph input, not a constant */
	bool add;                /* then Add of z: x itself (the residual) */
	bool add_swapped;        /* Add(z, conv) rather than Add(conv, z) */
	bool relu;
	bool twice;              /* the Conv's output is also added to the Relu's */
	bool block;              /* a ResNet block: conv1 bn1 relu, conv2 bn2,
	                          * add x, relu (the other flags unused) */
	const char *expose;      /* intermediate values also declared outputs,
	                          * comma separated, or NULL */
};

static unsigned seed_next(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/* A uniform float in [lo, hi). */
static float urand(unsigned *s, float lo, float hi)
{
	return lo + (hi - lo) * (float)(seed_next(s) % 65536) / 65536.0f;
}

/* A tensor's worth of random values in [lo, hi), stored as dt. */
static void *rand_data(cep_dtype dt, int64_t n, unsigned *s, float lo, float hi)
{
	void *p = malloc((size_t)n * cep_dtype_size(dt) + 1);
	int64_t i;

	for (i = 0; i < n; i++)
		cpu_store_f(p, dt, i, urand(s, lo, hi));
	return p;
}

/* Adds initializer name of shape (text) with random values. */
static void init_rand(struct onnxb *b, const char *name, cep_dtype dt, const char *shape,
		      int64_t n, unsigned *s, float lo, float hi)
{
	void *d = rand_data(dt, n, s, lo, hi);

	onnxb_init(b, name, dt, shape, d);
	free(d);
}

/* One Conv (3x3, pads 1: the output is shaped like x), with its
 * BatchNormalization, named after tag; returns the name of the last
 * output in out (32 bytes). */
static void add_conv_bn(struct onnxb *b, const struct spec *sp, const char *tag, const char *x,
			bool bn, unsigned *s, char *out)
{
	static const int64_t k3[2] = { 3, 3 }, p1[4] = { 1, 1, 1, 1 };
	char w[32], bias[32], c[32], in[160], sc[32], bb[32], mu[32], var[32], nb[32];
	char shape[32];
	Onnx__NodeProto *n;

	snprintf(w, sizeof(w), "w%s", tag);
	snprintf(bias, sizeof(bias), "b%s", tag);
	snprintf(c, sizeof(c), "c%s", tag);
	snprintf(shape, sizeof(shape), "%d,%d,3,3", CH, CH);
	init_rand(b, w, sp->dt, shape, CH * CH * 9, s, -0.3f, 0.3f);
	if (sp->bias)
		init_rand(b, bias, sp->dt, "6", CH, s, -0.5f, 0.5f);
	snprintf(in, sizeof(in), "%s,%s%s%s", x, w, sp->bias ? "," : "", sp->bias ? bias : "");
	n = onnxb_node(b, "Conv", in, c);
	onnxb_attr_ints(n, "kernel_shape", 2, k3);
	onnxb_attr_ints(n, "pads", 4, p1);
	snprintf(out, 32, "%s", c);
	if (!bn)
		return;
	snprintf(sc, sizeof(sc), "scale%s", tag);
	snprintf(bb, sizeof(bb), "beta%s", tag);
	snprintf(mu, sizeof(mu), "mean%s", tag);
	snprintf(var, sizeof(var), "var%s", tag);
	snprintf(nb, sizeof(nb), "n%s", tag);
	if (!sp->bn_scale_input)
		init_rand(b, sc, sp->dt, "6", CH, s, 0.5f, 1.5f);
	init_rand(b, bb, sp->dt, "6", CH, s, -0.5f, 0.5f);
	init_rand(b, mu, sp->dt, "6", CH, s, -0.5f, 0.5f);
	init_rand(b, var, sp->dt, "6", CH, s, 0.5f, 2.0f);
	snprintf(in, sizeof(in), "%s,%s,%s,%s,%s", c, sc, bb, mu, var);
	n = onnxb_node(b, "BatchNormalization", in, nb);
	onnxb_attr_float(n, "epsilon", 1e-3f);
	snprintf(out, 32, "%s", nb);
}

/* Builds and loads the model of sp, its constants drawn from seed. */
static engine_model *spec_load(const struct spec *sp, unsigned seed)
{
	struct onnxb *b = onnxb_new(sp->opset);
	char cur[32], next[80], *list, *tok, *save = NULL;
	engine_model *m = NULL;
	unsigned s = seed;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", sp->dt, sp->x_shape);
	if (sp->bn_scale_input)
		onnxb_input(b, "scale1", sp->dt, "6");
	if (sp->block) {
		add_conv_bn(b, sp, "1", "x", true, &s, cur);
		onnxb_node(b, "Relu", cur, "r1");
		add_conv_bn(b, sp, "2", "r1", true, &s, cur);
		snprintf(next, sizeof(next), "%s,x", cur);
		onnxb_node(b, "Add", next, "a");
		onnxb_node(b, "Relu", "a", "y");
	} else {
		add_conv_bn(b, sp, "1", "x", sp->bn, &s, cur);
		if (sp->add) {
			snprintf(next, sizeof(next), sp->add_swapped ? "x,%s" : "%s,x", cur);
			onnxb_node(b, "Add", next, "a");
			snprintf(cur, sizeof(cur), "a");
		}
		if (sp->relu) {
			onnxb_node(b, "Relu", cur, sp->twice ? "r" : "y");
			if (sp->twice) {
				snprintf(next, sizeof(next), "r,%s", cur);
				onnxb_node(b, "Add", next, "y");
			}
		} else {
			onnxb_node(b, "Identity", cur, "y");
		}
	}
	onnxb_output(b, "y", sp->dt, NULL);
	if (sp->expose != NULL) {
		list = strdup(sp->expose);
		for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			onnxb_output(b, tok, sp->dt, NULL);
		free(list);
	}
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}

/* Runs m on the host backend over x (batch images) and the optional
 * scale input; returns y (malloc'd, float32 values). */
static float *spec_run(engine_model *m, const struct spec *sp, int64_t batch, const void *x,
		       const void *scale)
{
	int64_t dims[4] = { batch, CH, HW, HW }, sdims[1] = { CH }, n = batch * CH * HW * HW, i;
	size_t es = cep_dtype_size(sp->dt);
	struct engine_input in[2] = {
		{ "x", sp->dt, 4, dims, x, (size_t)n * es },
		{ "scale1", sp->dt, 1, sdims, scale, CH * es },
	};
	void *raw = malloc((size_t)n * es);
	float *y = malloc((size_t)n * sizeof(float));
	struct engine_output out = { .name = "y", .data = raw, .capacity = (size_t)n * es };
	struct backend *be = NULL;
	engine_session *s = NULL;

	cr_assert_eq(backend_host_new(0, &be), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, in, sp->bn_scale_input ? 2 : 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.bytes, (size_t)n * es);
	for (i = 0; i < n; i++)
		y[i] = cpu_load_f(raw, sp->dt, i);
	engine_session_free(s);
	backend_free(be);
	free(raw);
	return y;
}

/* Compares got with want (n values): within rtol of each value plus rtol
 * of their root mean square, which is what sums that cancel are judged
 * by. Prints the worst errors; returns the mismatches. */
static int64_t compare(const char *what, const float *want, const float *got, int64_t n,
		       double rtol)
{
	double ss = 0.0, max_abs = 0.0, rms;
	int64_t i, bad = 0;

	for (i = 0; i < n; i++)
		ss += (double)want[i] * want[i];
	rms = n > 0 ? sqrt(ss / (double)n) : 0.0;
	for (i = 0; i < n; i++) {
		double d = fabs((double)want[i] - got[i]);

		if (d > max_abs)
			max_abs = d;
		if (!(d <= rtol * (fabs(want[i]) + rms)))
			bad++;
	}
	printf("  %-48s %6lld values  rms %.3g  max abs %.3g%s\n", what, (long long)n, rms,
	       max_abs, bad ? "  MISMATCH" : "");
	return bad;
}

/*
 * Loads sp fused and with its intermediates exposed (the unfused
 * reference), checks the node counts, runs both on the same random input
 * (batch images) and compares y within rtol.
 */
static void check_fusion(struct spec sp, const char *expose, int fused_nodes, int plain_nodes,
			 int64_t batch, double rtol, const char *what)
{
	unsigned seed = 1000u + (unsigned)getpid(), s = seed * 7u;
	struct spec ref = sp;
	engine_model *mf, *mr;
	void *x, *scale = NULL;
	float *yf, *yr;
	int64_t n = batch * CH * HW * HW;

	ref.expose = expose;
	mf = spec_load(&sp, seed);
	mr = spec_load(&ref, seed);
	cr_assert_eq(engine_model_node_count(mf), fused_nodes, "%s: %d nodes after fusing", what,
		     engine_model_node_count(mf));
	cr_assert_eq(engine_model_node_count(mr), plain_nodes, "%s: %d nodes with %s exposed",
		     what, engine_model_node_count(mr), expose);
	x = rand_data(sp.dt, n, &s, -1.0f, 1.0f);
	if (sp.bn_scale_input)
		scale = rand_data(sp.dt, CH, &s, 0.5f, 1.5f);
	yf = spec_run(mf, &sp, batch, x, scale);
	yr = spec_run(mr, &ref, batch, x, scale);
	cr_assert_eq(compare(what, yr, yf, n, rtol), 0, "%s: the fused graph computes another y",
		     what);
	free(x);
	free(scale);
	free(yf);
	free(yr);
	engine_model_unref(mf);
	engine_model_unref(mr);
}

/* ------------------------------------------------------------------ tests */

Test(fuse, batchnorm_folds_into_the_conv)
{
	struct spec sp = { .dt = CEP_DTYPE_FLOAT32, .opset = 13, .x_shape = "2,6,9,9",
			   .bias = true, .bn = true };

	/* Conv, BN (and the Identity to y, which simplification removes). */
	check_fusion(sp, "c1", 1, 2, 2, 1e-4, "Conv + BN, float32");
	sp.bias = false;
	check_fusion(sp, "c1", 1, 2, 2, 1e-4, "Conv without B + BN");
	sp.opset = 7;
	check_fusion(sp, "c1", 1, 2, 2, 1e-4, "Conv + BN at opset 7");
	sp.opset = 15;
	check_fusion(sp, "c1", 1, 2, 2, 1e-4, "Conv + BN at opset 15");
}

Test(fuse, conv_relu_becomes_one_node)
{
	struct spec sp = { .dt = CEP_DTYPE_FLOAT32, .opset = 13, .x_shape = "2,6,9,9",
			   .bias = true, .relu = true };

	check_fusion(sp, "c1", 1, 2, 2, 1e-4, "Conv + Relu");
	sp.bias = false;
	check_fusion(sp, "c1", 1, 2, 2, 1e-4, "Conv without B + Relu");
	sp.bn = true;
	check_fusion(sp, "n1", 1, 2, 2, 1e-4, "Conv + BN + Relu, BN output exposed");
	check_fusion(sp, "c1", 1, 3, 2, 1e-4, "Conv + BN + Relu, Conv output exposed");
}

Test(fuse, conv_add_relu_becomes_one_node)
{
	struct spec sp = { .dt = CEP_DTYPE_FLOAT32, .opset = 13, .x_shape = "2,6,9,9",
			   .bias = true, .add = true, .relu = true };

	check_fusion(sp, "c1", 1, 3, 2, 1e-4, "Conv + Add + Relu");
	/* With the sum exposed the Add must stay, and with it the Relu: the
	 * Conv's only reader is the Add. */
	check_fusion(sp, "a", 1, 3, 2, 1e-4, "Conv + Add + Relu, sum exposed");
	sp.add_swapped = true;
	check_fusion(sp, "c1", 1, 3, 2, 1e-4, "Add(x, Conv) + Relu");
	sp.bn = true;
	check_fusion(sp, "c1,a", 1, 4, 2, 1e-4, "Conv + BN + Add + Relu");
}

Test(fuse, a_resnet_block_shrinks_to_two_nodes)
{
	struct spec sp = { .dt = CEP_DTYPE_FLOAT32, .opset = 13, .x_shape = "2,6,9,9",
			   .bias = true, .block = true };

	check_fusion(sp, "c1,n1,r1,c2,n2,a", 2, 7, 2, 1e-4, "ResNet block");
	sp.bias = false;
	check_fusion(sp, "c1,n1,r1,c2,n2,a", 2, 7, 2, 1e-4, "ResNet block, Convs without B");
}

Test(fuse, a_value_read_twice_stays)
{
	/* y = Relu(c) + c: the Conv's output has two readers. */
	struct spec sp = { .dt = CEP_DTYPE_FLOAT32, .opset = 13, .x_shape = "2,6,9,9",
			   .bias = true, .relu = true, .twice = true };

	check_fusion(sp, "r", 3, 3, 2, 0.0, "Relu(c) + c");
}

Test(fuse, a_batchnorm_whose_scale_is_an_input_stays)
{
	/* Not folded; and the Relu reads the BN, not the Conv: nothing fuses. */
	struct spec sp = { .dt = CEP_DTYPE_FLOAT32, .opset = 13, .x_shape = "2,6,9,9",
			   .bias = true, .bn = true, .bn_scale_input = true, .relu = true };

	check_fusion(sp, "n1", 3, 3, 2, 0.0, "Conv + BN(scale input) + Relu");
}

Test(fuse, half_types_fuse_within_their_precision)
{
	struct spec sp = { .dt = CEP_DTYPE_FLOAT16, .opset = 13, .x_shape = "2,6,9,9",
			   .bias = true, .block = true };

	/* The fused graph rounds once where the plain one rounds after each
	 * node, and folded weights are rounded to the type: a few units of
	 * the last place, judged against the output's scale. */
	check_fusion(sp, "c1,n1,r1,c2,n2,a", 2, 7, 2, 1e-2, "ResNet block, float16");
	sp.dt = CEP_DTYPE_BFLOAT16;
	sp.opset = 22;
	check_fusion(sp, "c1,n1,r1,c2,n2,a", 2, 7, 2, 4e-2, "ResNet block, bfloat16");
}

Test(fuse, symbolic_batches_fuse)
{
	struct spec sp = { .dt = CEP_DTYPE_FLOAT32, .opset = 13, .x_shape = "batch,6,9,9",
			   .bias = true, .block = true };

	check_fusion(sp, "c1,n1,r1,c2,n2,a", 2, 7, 1, 1e-4, "ResNet block, batch 1");
	check_fusion(sp, "c1,n1,r1,c2,n2,a", 2, 7, 3, 1e-4, "ResNet block, batch 3");
}

Test(fuse, a_conv_its_opset_refuses_stays_a_conv)
{
	/* bfloat16 Conv came with opset 22: at 13 it must be refused as a
	 * Conv, not run as a FusedConv (which takes bfloat16). */
	struct spec sp = { .dt = CEP_DTYPE_BFLOAT16, .opset = 13, .x_shape = "1,6,9,9",
			   .bias = true, .relu = true };
	int64_t dims[4] = { 1, CH, HW, HW };
	static uint16_t x[CH * HW * HW], y[CH * HW * HW];
	struct engine_input in = { "x", CEP_DTYPE_BFLOAT16, 4, dims, x, sizeof(x) };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	engine_model *m = spec_load(&sp, 3);
	struct backend *be = NULL;
	engine_session *s = NULL;

	cr_assert_eq(engine_model_node_count(m), 2);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_not_null(strstr(cep_last_error(), "(op Conv, domain ai.onnx, opset 13)"), "%s",
			   cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), "bfloat16"), "%s", cep_last_error());
	engine_session_free(s);
	backend_free(be);
	engine_model_unref(m);
}

/* A model of one FusedConv node of its own, importing com.cudaep or not. */
static int load_own_fused(bool import, engine_model **m)
{
	static const float w[4 * 4 * 9], bias[4];
	struct onnxb *b = onnxb_new(13);
	Onnx__NodeProto *n;
	uint8_t *buf;
	size_t len;
	int ret;

	if (import)
		onnxb_opset(b, "com.cudaep", 1);
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "1,4,5,5");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "4,4,3,3", w);
	onnxb_init(b, "b", CEP_DTYPE_FLOAT32, "4", bias);
	n = onnxb_node(b, "FusedConv", "x,w,b", "y");
	free(n->domain);
	n->domain = strdup("com.cudaep");
	onnxb_attr_string(n, "activation", "Relu");
	buf = onnxb_finish(b, &len);
	*m = NULL;
	ret = engine_model_load(buf, len, -1, m);
	free(buf);
	return ret;
}

Test(fuse, a_model_may_not_use_the_internal_op)
{
	engine_model *m;

	cr_assert_eq(load_own_fused(true, &m), CEP_EMODEL);
	cr_assert_null(m);
	cr_assert_not_null(strstr(cep_last_error(), "FusedConv of domain com.cudaep is internal "
				  "to cudaep"), "%s", cep_last_error());
	cr_assert_eq(load_own_fused(false, &m), CEP_EMODEL);
	cr_assert_not_null(strstr(cep_last_error(), "domain com.cudaep is not imported"), "%s",
			   cep_last_error());
}
