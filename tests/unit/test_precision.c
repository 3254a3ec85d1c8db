/*
 * test_precision.c — fp16, bf16 and tf32 sessions on the host backend
 * (engine/precision.c, engine/engine_model.c). An MLP, a CNN with
 * BatchNormalization and a transformer block (prec_models.h), converted
 * to float16 and to bfloat16, match the float32 session within 1e-2
 * (relative to the norm of each output) on fresh random weights and
 * inputs, and differ from it, so they did compute in half; nodes without
 * a half kernel (bfloat16 convolutions before opset 22) stay float32 and
 * the model still matches. The converted graph keeps float32 at its
 * interface with exactly one Cast after each float input and before each
 * float output, leaves the integer Shape -> Gather -> Concat -> Reshape
 * path as it was, and holds its constants in half (rounded to nearest
 * even, checked against the neighbouring half values) at half the bytes.
 * Graph outputs that are constants keep float32, a Cast to a float32
 * output keeps its target (integers above 2048 stay exact), and
 * ConstantOfShape makes half values; float64 tensors, and the Casts
 * between them and float32, stay as they are, so the float64 part gives
 * the fp32 session's bits. Models are cached by bytes and
 * precision: fp32 and tf32 sessions share one, two fp16 sessions share
 * another, whose weights the account shows at half the bytes. A session
 * opens only a model loaded for its precision and backend kind. Long
 * reductions (ReduceSum and ReduceMean, Softmax, LayerNormalization over
 * 4096 elements) come out right in half: their kernels accumulate in
 * float32 or wider. A quantized model's integers (QuantizeLinear,
 * QLinearMatMul) and what DequantizeLinear makes of them are the float32
 * model's exactly: those operators stay float32.
 */
#include <time.h>
#include <unistd.h>

#include "tests/unit/engine_util.h"
#include "tests/unit/prec_models.h"

#include "alloc/account.h"
#include "kernels/cpu/cpu.h"
#include "engine/model.h"
#include "engine/precision.h"

#define TOL 1e-2

/* A seed that changes every run, printed so a failure can be replayed. */
static unsigned fresh_seed(const char *what)
{
	unsigned seed = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL);

	printf("%s: seed %u\n", what, seed);
	return seed;
}

static struct backend *host_new(unsigned flags)
{
	struct backend *be;

	cr_assert_eq(backend_host_new(flags, &be), 0, "%s", cep_last_error());
	return be;
}

/* What converting pm for precision p on the host did. */
static struct engine_precision_stats stats_of(const struct pm_model *pm, cep_precision p)
{
	struct engine_model_options mo = { .precision = p, .backend = BACKEND_HOST };
	struct engine_precision_stats st;
	engine_model *m;

	cr_assert_eq(engine_model_load_as(pm->bytes, pm->len, -1, &mo, &m), 0, "%s",
		     cep_last_error());
	engine_model_precision_stats(m, &st);
	engine_model_unref(m);
	printf("  %s %s: %d half nodes, %d float32 nodes, %d casts, %d constants\n", pm->what,
	       precision_name(p), st.half_nodes, st.float_nodes, st.casts, st.constants);
	return st;
}

/* ------------------------------------------------------------- accuracy */

Test(precision, an_mlp_in_fp16_and_bf16_matches_fp32)
{
	unsigned seed = fresh_seed("mlp");
	struct pm_model pm = pm_mlp(&seed);
	struct backend *be = host_new(0);
	struct engine_precision_stats st;

	cr_assert_gt(pm_compare(&pm, be, CEP_PRECISION_FP16, be, &seed, 3, TOL), 0.0,
		     "an fp16 session computed exactly what fp32 does");
	cr_assert_gt(pm_compare(&pm, be, CEP_PRECISION_BF16, be, &seed, 3, TOL), 0.0);
	/* The host has no TF32: a tf32 session is an fp32 one there. */
	cr_assert_eq(pm_compare(&pm, be, CEP_PRECISION_TF32, be, &seed, 1, 0.0), 0.0);
	st = stats_of(&pm, CEP_PRECISION_FP16);
	cr_assert_eq(st.float_nodes, 0);
	cr_assert_eq(st.half_nodes, 3, "MatMulBias, MatMulBias, Softmax");
	cr_assert_eq(st.casts, 3, "one Cast after x, one before each of the two outputs");
	backend_free(be);
	pm_model_free(&pm);
}

Test(precision, a_cnn_with_batchnorm_in_fp16_and_bf16_matches_fp32)
{
	unsigned seed = fresh_seed("cnn");
	struct pm_model pm13 = pm_cnn(13, &seed), pm22 = pm_cnn(22, &seed);
	struct backend *be = host_new(0);
	struct engine_precision_stats st;

	cr_assert_gt(pm_compare(&pm13, be, CEP_PRECISION_FP16, be, &seed, 2, TOL), 0.0);
	cr_assert_eq(stats_of(&pm13, CEP_PRECISION_FP16).float_nodes, 0);
	/* bfloat16 Conv, BatchNormalization and the pools arrived at opset
	 * 22: before, they have no bfloat16 kernel and stay float32, with
	 * Casts around them, and the model still matches. The first Conv,
	 * its BatchNormalization and Relu were fused at load into the
	 * internal FusedConv, which takes bfloat16 at any opset, so the
	 * first node left in float32 is the MaxPool. */
	cr_assert_gt(pm_compare(&pm13, be, CEP_PRECISION_BF16, be, &seed, 2, TOL), 0.0);
	st = stats_of(&pm13, CEP_PRECISION_BF16);
	cr_assert_gt(st.float_nodes, 0);
	cr_assert_str_eq(st.first_float, "node 3 'p1' (op MaxPool, domain ai.onnx, opset 13)");
	cr_assert_gt(st.half_nodes, 0, "FusedConv, Flatten and Gemm still run in bfloat16");
	cr_assert_gt(pm_compare(&pm22, be, CEP_PRECISION_BF16, be, &seed, 2, TOL), 0.0);
	cr_assert_eq(stats_of(&pm22, CEP_PRECISION_BF16).float_nodes, 0);
	backend_free(be);
	pm_model_free(&pm13);
	pm_model_free(&pm22);
}

Test(precision, a_transformer_block_in_fp16_and_bf16_matches_fp32)
{
	unsigned seed = fresh_seed("transformer");
	struct pm_model pm = pm_transformer(&seed);
	struct backend *be = host_new(0);
	struct engine_precision_stats st;
	cep_precision p;

	for (p = CEP_PRECISION_FP16; p <= CEP_PRECISION_BF16; p++) {
		cr_assert_gt(pm_compare(&pm, be, p, be, &seed, 3, TOL), 0.0);
		st = stats_of(&pm, p);
		cr_assert_eq(st.float_nodes, 0);
		cr_assert_eq(st.casts, 2, "one Cast after x and one before y");
	}
	backend_free(be);
	pm_model_free(&pm);
}

/* The quantized operators keep the float32 model's scales and inputs:
 * rounded to half, a scale of 0.0173 or an x near a rounding boundary
 * moves quantized values. q, qm and xd come out exactly as in float32;
 * only the MatMul computes in half. */
Test(precision, a_qdq_model_in_fp16_and_bf16_gives_the_float32_integers)
{
	unsigned seed = fresh_seed("qdq");
	struct pm_model pm = pm_qdq(&seed);
	struct backend *be = host_new(0);
	struct engine_precision_stats st;

	cr_assert_gt(pm_qdq_compare(&pm, be, CEP_PRECISION_FP16, be, &seed, 3), 0.0,
		     "the MatMul computed in half");
	cr_assert_gt(pm_qdq_compare(&pm, be, CEP_PRECISION_BF16, be, &seed, 3), 0.0);
	st = stats_of(&pm, CEP_PRECISION_BF16);
	cr_assert_eq(st.float_nodes, 3, "QuantizeLinear, DequantizeLinear, QLinearMatMul");
	cr_assert_eq(st.half_nodes, 1, "the MatMul (the weights' DequantizeLinear is folded)");
	backend_free(be);
	pm_model_free(&pm);
}

Test(precision, long_reductions_accumulate_in_float32)
{
	struct pm_model pm = pm_accumulate();
	struct backend *be = host_new(0);
	unsigned seed = 1;
	cep_precision p;

	for (p = CEP_PRECISION_FP16; p <= CEP_PRECISION_BF16; p++)
		pm_compare(&pm, be, p, be, &seed, 1, TOL);
	backend_free(be);
	pm_model_free(&pm);
}

/* ------------------------------------------------------------ structure */

/* Loads pm's bytes as the engine does for fp32: parsed, inferred,
 * optimized. */
static struct model *graph_load(const struct pm_model *pm)
{
	struct model *m;

	cr_assert_eq(model_load(pm->bytes, pm->len, -1, &m), 0, "%s", cep_last_error());
	return m;
}

static bool is_int_type(cep_dtype t)
{
	return op_dtype_in(t, OP_DTS_INT | OP_DT(CEP_DTYPE_BOOL));
}

Test(precision, the_interface_stays_float32_and_integer_paths_are_untouched)
{
	unsigned seed = fresh_seed("structure");
	struct pm_model pm = pm_transformer(&seed);
	struct model *a = graph_load(&pm), *h = graph_load(&pm);
	const struct graph *ga = &a->g, *gh = &h->g;
	int v, n, i, casts = 0, shape_nodes = 0, half_values = 0;

	cr_assert_eq(precision_model_convert(h, CEP_DTYPE_FLOAT16, BACKEND_HOST, NULL), 0, "%s",
		     cep_last_error());
	for (i = 0; i < gh->n_inputs; i++)
		cr_assert_eq(gh->values[gh->inputs[i]].t.dtype, ga->values[ga->inputs[i]].t.dtype);
	for (i = 0; i < gh->n_outputs; i++) {
		int y = gh->outputs[i], p = gh->values[y].producer;

		cr_assert_eq(gh->values[y].t.dtype, CEP_DTYPE_FLOAT32);
		cr_assert_eq(gh->values[y].t.rank, ga->values[ga->outputs[i]].t.rank);
		cr_assert_str_eq(gh->nodes[p].op.op_type, "Cast", "y is made by a Cast back");
		cr_assert_eq(gh->values[gh->nodes[p].in[0]].t.dtype, CEP_DTYPE_FLOAT16);
	}
	/* Integer and bool values keep their types, producers and readers'
	 * slots; the nodes that only compute them are as they were. */
	for (v = 0; v < ga->n_values; v++) {
		if (!is_int_type(ga->values[v].t.dtype))
			continue;
		cr_assert_eq(gh->values[v].t.dtype, ga->values[v].t.dtype, "'%s'",
			     ga->values[v].name);
		cr_assert_eq(gh->values[v].producer, ga->values[v].producer);
		if (ga->values[v].flags & GRAPH_VALUE_CONST)
			cr_assert_eq(memcmp(gh->values[v].t.data, ga->values[v].t.data,
					    ga->values[v].bytes), 0);
	}
	for (n = 0; n < ga->n_nodes; n++) {
		const struct graph_node *na = &ga->nodes[n], *nh = &gh->nodes[n];

		if (na->dead)
			continue;
		cr_assert(!nh->dead);
		for (i = 0; i < na->n_in; i++) {
			if (na->in[i] >= 0 && is_int_type(ga->values[na->in[i]].t.dtype))
				cr_assert_eq(nh->in[i], na->in[i], "node %d input %d", n, i);
		}
		if (strcmp(na->op.op_type, "Shape") == 0 || strcmp(na->op.op_type, "Gather") == 0 ||
		    strcmp(na->op.op_type, "Concat") == 0) {
			shape_nodes++;
			cr_assert_eq(memcmp(nh->in, na->in, sizeof(int) * (size_t)na->n_in), 0);
			cr_assert_eq(memcmp(nh->out, na->out, sizeof(int) * (size_t)na->n_out), 0);
		}
		/* Every float value a node makes (but y) is half now. */
		for (i = 0; i < na->n_out; i++) {
			v = na->out[i];
			if (v < 0 || ga->values[v].t.dtype != CEP_DTYPE_FLOAT32 ||
			    (ga->values[v].flags & GRAPH_VALUE_OUTPUT))
				continue;
			cr_assert_eq(gh->values[v].t.dtype, CEP_DTYPE_FLOAT16, "'%s'",
				     gh->values[v].name);
			half_values++;
		}
	}
	cr_assert_eq(shape_nodes, 5, "the Shape chain is there until a plan folds it");
	cr_assert_geq(half_values, 20, "%d half values", half_values);
	for (n = ga->n_nodes; n < gh->n_nodes; n++) {
		cr_assert_str_eq(gh->nodes[n].op.op_type, "Cast");
		casts++;
	}
	cr_assert_eq(casts, 2);
	model_free(a);
	model_free(h);
	pm_model_free(&pm);
}

/* Whether h (float16 or bfloat16 bits) is x rounded to nearest, ties to
 * even: no neighbouring value of the type is nearer. Decoding a half is
 * exact, so this does not trust any encoder. */
static bool rounded_to_nearest_even(float x, uint16_t h, cep_dtype t)
{
	float (*dec)(uint16_t) = t == CEP_DTYPE_FLOAT16 ? cpu_f16_to_f32 : cpu_bf16_to_f32;
	double f = dec(h), d = fabs(f - (double)x);
	double up = fabs((double)dec((uint16_t)(h + 1)) - (double)x);
	double dn = (h & 0x7fff) ? fabs((double)dec((uint16_t)(h - 1)) - (double)x) : INFINITY;

	if (d > up || d > dn)
		return false;
	return (d != up && d != dn) || (h & 1) == 0;
}

/* Bytes of the constants the graph reads. */
static size_t const_bytes(const struct graph *g)
{
	size_t total = 0;
	int v;

	for (v = 0; v < g->n_values; v++) {
		if ((g->values[v].flags & GRAPH_VALUE_CONST) && g->values[v].n_uses > 0)
			total += g->values[v].bytes;
	}
	return total;
}

Test(precision, constants_take_half_the_bytes_rounded_to_nearest_even)
{
	static const cep_dtype halves[2] = { CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16 };
	unsigned seed = fresh_seed("constants");
	struct pm_model pm = pm_mlp(&seed);
	int t, v;

	for (t = 0; t < 2; t++) {
		struct model *a = graph_load(&pm), *h = graph_load(&pm);
		struct engine_precision_stats st;
		int checked = 0;

		cr_assert_eq(precision_model_convert(h, halves[t], BACKEND_HOST, &st), 0, "%s",
			     cep_last_error());
		cr_assert_eq(const_bytes(&h->g) * 2, const_bytes(&a->g));
		cr_assert_eq(st.constants, 4);
		cr_assert_eq(st.constant_bytes, const_bytes(&a->g));
		for (v = 0; v < a->g.n_values; v++) {
			const struct graph_value *va = &a->g.values[v], *vh = &h->g.values[v];
			int64_t k, n = (int64_t)(va->bytes / sizeof(float));

			if (!(va->flags & GRAPH_VALUE_CONST) || va->n_uses == 0)
				continue;
			cr_assert_eq(vh->t.dtype, halves[t]);
			cr_assert_eq(vh->bytes * 2, va->bytes);
			for (k = 0; k < n; k++, checked++)
				cr_assert(rounded_to_nearest_even(((const float *)va->t.data)[k],
								  ((const uint16_t *)vh->t.data)[k],
								  halves[t]),
					  "'%s'[%lld]: %.9g became 0x%04x", va->name, (long long)k,
					  ((const float *)va->t.data)[k],
					  ((const uint16_t *)vh->t.data)[k]);
		}
		cr_assert_eq(checked, 16 * 32 + 32 + 32 * 10 + 10);
		model_free(a);
		model_free(h);
	}
	pm_model_free(&pm);
}

/* x [batch, 3] and n [batch, 3] (int64) ->
 *   y1 = x + c (c [3] an initializer, also returned as the output "c"),
 *   ci = Cast(n, to float) (an output), y2 = x * ci,
 *   y3 = x + ConstantOfShape(Shape(x), value 1.5),
 *   y4 = x - ConstantOfShape(Shape(x)) (its default zero),
 *   and x itself as an output. */
static uint8_t *edges_model(const float *c, size_t *len)
{
	static const float v15 = 1.5f;
	struct onnxb *b = onnxb_new(17);
	static const char *const outs[] = { "y1", "c", "ci", "y2", "y3", "y4", "x" };
	size_t i;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,3");
	onnxb_input(b, "n", CEP_DTYPE_INT64, "batch,3");
	for (i = 0; i < 7; i++)
		onnxb_output(b, outs[i], CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "c", CEP_DTYPE_FLOAT32, "3", c);
	onnxb_node(b, "Add", "x,c", "y1");
	onnxb_attr_int(onnxb_node(b, "Cast", "n", "ci"), "to", CEP_DTYPE_FLOAT32);
	onnxb_node(b, "Mul", "x,ci", "y2");
	onnxb_node(b, "Shape", "x", "sx");
	onnxb_attr_tensor(onnxb_node(b, "ConstantOfShape", "sx", "k15"), "value",
			  onnxb_tensor("v", CEP_DTYPE_FLOAT32, "1", &v15));
	onnxb_node(b, "Add", "x,k15", "y3");
	onnxb_node(b, "ConstantOfShape", "sx", "k0");
	onnxb_node(b, "Sub", "x,k0", "y4");
	return onnxb_finish(b, len);
}

Test(precision, outputs_that_are_constants_or_casts_keep_float32)
{
	const float c[3] = { 0.1f, 1e-4f, 3.14159265f };
	float x[6], out[7][6];
	int64_t n[6], dims[2] = { 2, 3 };
	struct engine_model_options mo = { .precision = CEP_PRECISION_FP16 };
	struct engine_session_options so = { .precision = CEP_PRECISION_FP16 };
	struct engine_input in[2] = {
		{ "x", CEP_DTYPE_FLOAT32, 2, dims, x, sizeof(x) },
		{ "n", CEP_DTYPE_INT64, 2, dims, n, sizeof(n) },
	};
	static const char *const names[] = { "y1", "c", "ci", "y2", "y3", "y4", "x" };
	struct engine_output o[7];
	struct engine_precision_stats st;
	struct backend *be = host_new(0);
	unsigned seed = fresh_seed("edges");
	engine_model *m;
	engine_session *s;
	uint8_t *buf;
	size_t len;
	int i;

	buf = edges_model(c, &len);
	cr_assert_eq(engine_model_load_as(buf, len, -1, &mo, &m), 0, "%s", cep_last_error());
	free(buf);
	engine_model_precision_stats(m, &st);
	cr_assert_eq(st.float_nodes, 0);
	cr_assert_eq(st.constants, 1, "c, read in half and returned in float32, is twinned");
	cr_assert_eq(engine_session_new(m, be, &so, &s), 0, "%s", cep_last_error());
	for (i = 0; i < 6; i++) {
		x[i] = 3.0f * pm_uniform(&seed);
		n[i] = 2049 + 2 * (int64_t)(pm_rnd(&seed) % 1000); /* no half holds them */
	}
	for (i = 0; i < 7; i++)
		o[i] = (struct engine_output){ .name = names[i], .data = out[i],
					       .capacity = sizeof(out[i]) };
	cr_assert_eq(eu_run(s, in, 2, o, 7), 0, "%s", cep_last_error());
	for (i = 0; i < 7; i++)
		cr_assert_eq(o[i].dtype, CEP_DTYPE_FLOAT32, "'%s'", names[i]);
	cr_assert_eq(memcmp(out[1], c, sizeof(c)), 0, "the constant output is not rounded");
	for (i = 0; i < 6; i++) {
		float xi = x[i], ci = (float)n[i];

		cr_assert_eq(out[2][i], ci, "Cast to an output: %.9g, want %.9g", out[2][i], ci);
		cr_assert_float_eq(out[0][i], xi + c[i % 3], 2e-3f * (fabsf(xi) + fabsf(c[i % 3])));
		cr_assert_float_eq(out[3][i], xi * ci, 2e-3f * fabsf(xi * ci));
		cr_assert_float_eq(out[4][i], xi + 1.5f, 2e-3f * (fabsf(xi) + 1.5f));
		cr_assert_float_eq(out[5][i], xi, 1e-3f * fabsf(xi));
		cr_assert_eq(out[6][i], xi, "the input returned as it came");
	}
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

/* x [4] (float32) and z [4] (float64) ->
 *   xd = Cast(x, to double), m = xd * cd (cd a float64 initializer; an
 *   output too),
 *   y = Cast(m, to float) + x (float32),
 *   zz = Sqrt(z) (float64). */
static uint8_t *f64_model(const double *cd, size_t *len)
{
	struct onnxb *b = onnxb_new(17);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "4");
	onnxb_input(b, "z", CEP_DTYPE_FLOAT64, "4");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "4");
	onnxb_output(b, "zz", CEP_DTYPE_FLOAT64, "4");
	onnxb_output(b, "m", CEP_DTYPE_FLOAT64, "4");
	onnxb_init(b, "cd", CEP_DTYPE_FLOAT64, "4", cd);
	onnxb_attr_int(onnxb_node(b, "Cast", "x", "xd"), "to", CEP_DTYPE_FLOAT64);
	onnxb_node(b, "Mul", "xd,cd", "m");
	onnxb_attr_int(onnxb_node(b, "Cast", "m", "mf"), "to", CEP_DTYPE_FLOAT32);
	onnxb_node(b, "Add", "mf,x", "y");
	onnxb_node(b, "Sqrt", "z", "zz");
	return onnxb_finish(b, len);
}

/* float64 stays float64 in a half session: its constants, values and
 * nodes as they were, the Casts between it and float32 reading and making
 * float32 (so xd is x exactly, not x rounded to half), and only the
 * float32 Add in half. */
Test(precision, float64_tensors_and_the_casts_that_reach_them_stay_as_they_are)
{
	const double cd[4] = { 0.1, 1.0 / 3.0, -2.5e-8, 1e3 };
	float x[4] = { 1.0009765625f, -3.14159f, 0.3f, 2.0f }, y[4];
	double z[4] = { 2.0, 0.01, 1e-300, 9.0 }, zz[4], mv[4];
	int64_t dims[1] = { 4 };
	struct engine_model_options mo = { .precision = CEP_PRECISION_FP16 };
	struct engine_session_options so = { .precision = CEP_PRECISION_FP16 };
	struct engine_input in[2] = {
		{ "x", CEP_DTYPE_FLOAT32, 1, dims, x, sizeof(x) },
		{ "z", CEP_DTYPE_FLOAT64, 1, dims, z, sizeof(z) },
	};
	struct engine_output o[3] = { { .name = "y", .data = y, .capacity = sizeof(y) },
				      { .name = "zz", .data = zz, .capacity = sizeof(zz) },
				      { .name = "m", .data = mv, .capacity = sizeof(mv) } };
	struct engine_precision_stats st;
	struct backend *be = host_new(0);
	struct model *h;
	engine_model *m;
	engine_session *s;
	uint8_t *buf;
	size_t len;
	int v, i;

	buf = f64_model(cd, &len);
	/* The converted graph: every float64 value as it was. */
	cr_assert_eq(model_load(buf, len, -1, &h), 0, "%s", cep_last_error());
	cr_assert_eq(precision_model_convert(h, CEP_DTYPE_FLOAT16, BACKEND_HOST, &st), 0, "%s",
		     cep_last_error());
	cr_assert_eq(st.float_nodes, 2, "the two Casts stay float32");
	for (v = 0; v < h->g.n_values; v++) {
		const char *name = h->g.values[v].name;

		if (strcmp(name, "xd") == 0 || strcmp(name, "m") == 0 || strcmp(name, "zz") == 0 ||
		    strcmp(name, "cd") == 0)
			cr_assert_eq(h->g.values[v].t.dtype, CEP_DTYPE_FLOAT64, "'%s'", name);
		if (strcmp(name, "mf") == 0)
			cr_assert_eq(h->g.values[v].t.dtype, CEP_DTYPE_FLOAT32);
		if (strcmp(name, "cd") == 0)
			cr_assert_eq(memcmp(h->g.values[v].t.data, cd, sizeof(cd)), 0);
	}
	model_free(h);
	/* And a run: the float64 path gives the fp32 session's bits. */
	cr_assert_eq(engine_model_load_as(buf, len, -1, &mo, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(engine_session_new(m, be, &so, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, in, 2, o, 3), 0, "%s", cep_last_error());
	cr_assert_eq(o[0].dtype, CEP_DTYPE_FLOAT32);
	cr_assert_eq(o[1].dtype, CEP_DTYPE_FLOAT64);
	for (i = 0; i < 4; i++) {
		float mf = (float)((double)x[i] * cd[i]);

		cr_assert_eq(zz[i], sqrt(z[i]), "zz[%d]", i);
		cr_assert_eq(mv[i], (double)x[i] * cd[i], "m[%d]: x was not rounded to half", i);
		cr_assert_float_eq(y[i], mf + x[i], 2e-3f * (fabsf(mf) + fabsf(x[i])), "y[%d]", i);
	}
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

/* x [n] -> Range(0, limit, 0.25) (limit a float32 input) -> r; y = r * r
 * and z = x * 2. */
static uint8_t *range_model(size_t *len)
{
	static const float zero = 0.0f, quarter = 0.25f, two = 2.0f;
	struct onnxb *b = onnxb_new(13);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n");
	onnxb_input(b, "limit", CEP_DTYPE_FLOAT32, "");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "z", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "zero", CEP_DTYPE_FLOAT32, "", &zero);
	onnxb_init(b, "quarter", CEP_DTYPE_FLOAT32, "", &quarter);
	onnxb_init(b, "two", CEP_DTYPE_FLOAT32, "", &two);
	onnxb_node(b, "Range", "zero,limit,quarter", "r");
	onnxb_node(b, "Mul", "r,r", "y");
	onnxb_node(b, "Mul", "x,two", "z");
	return onnxb_finish(b, len);
}

Test(precision, range_stays_float32_so_its_length_does_not_change)
{
	struct engine_model_options mo = { .precision = CEP_PRECISION_BF16 };
	struct engine_session_options so = { .precision = CEP_PRECISION_BF16 };
	float x[4] = { 1, 2, 3, 4 }, limit = 300.3f, y[2048], z[4];
	int64_t xd[1] = { 4 };
	struct engine_input in[2] = {
		{ "x", CEP_DTYPE_FLOAT32, 1, xd, x, sizeof(x) },
		{ "limit", CEP_DTYPE_FLOAT32, 0, NULL, &limit, sizeof(limit) },
	};
	struct engine_output o[2] = {
		{ .name = "y", .data = y, .capacity = sizeof(y) },
		{ .name = "z", .data = z, .capacity = sizeof(z) },
	};
	struct engine_precision_stats st;
	struct backend *be = host_new(0);
	engine_model *m;
	engine_session *s;
	uint8_t *buf;
	size_t len;
	int i;

	buf = range_model(&len);
	cr_assert_eq(engine_model_load_as(buf, len, -1, &mo, &m), 0, "%s", cep_last_error());
	free(buf);
	engine_model_precision_stats(m, &st);
	cr_assert_eq(st.float_nodes, 1);
	cr_assert_eq(st.first_float_node, 0, "Range (node 0) stays float32");
	cr_assert_eq(engine_session_new(m, be, &so, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, in, 2, o, 2), 0, "%s", cep_last_error());
	/* ceil(300.3 / 0.25) in float32; in bfloat16 the limit is 300. */
	cr_assert_eq(o[0].dims[0], 1202);
	for (i = 0; i < 1202; i++)
		cr_assert_float_eq(y[i], (i * 0.25f) * (i * 0.25f), 2e-2f * (i * 0.25f) * (i * 0.25f));
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

/* y = x + c over four positions, c holding the lowest float32 (a mask's
 * "minus infinity" as exporters write it), a value past float16's range,
 * an infinity and 1. */
Test(precision, constants_past_the_half_range_saturate_and_infinities_stay)
{
	static const float c[4] = { -3.4028235e38f, 1e5f, INFINITY, 1.0f };
	static const cep_dtype half[2] = { CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16 };
	static const cep_precision prec[2] = { CEP_PRECISION_FP16, CEP_PRECISION_BF16 };
	float x[4] = { 0, 0, 0, 2 }, y[4];
	int64_t dims[1] = { 4 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 1, dims, x, sizeof(x) };
	struct engine_output o = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct backend *be = host_new(0);

	for (int h = 0; h < 2; h++) {
		struct engine_model_options mo = { .precision = prec[h] };
		struct engine_session_options so = { .precision = prec[h] };
		struct onnxb *b = onnxb_new(13);
		float max = half[h] == CEP_DTYPE_FLOAT16 ? 65504.0f : 3.38953139e38f;
		engine_model *m;
		engine_session *s;
		uint8_t *buf;
		size_t len;

		onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "4");
		onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "4");
		onnxb_init(b, "c", CEP_DTYPE_FLOAT32, "4", c);
		onnxb_node(b, "Add", "x,c", "y");
		buf = onnxb_finish(b, &len);
		cr_assert_eq(engine_model_load_as(buf, len, -1, &mo, &m), 0, "%s", cep_last_error());
		free(buf);
		cr_assert_eq(engine_session_new(m, be, &so, &s), 0, "%s", cep_last_error());
		cr_assert_eq(eu_run(s, &in, 1, &o, 1), 0, "%s", cep_last_error());
		cr_assert_eq(y[0], -max, "%s: lowest float32 became %g", cep_dtype_name(half[h]),
			     (double)y[0]);
		if (half[h] == CEP_DTYPE_FLOAT16)
			cr_assert_eq(y[1], max, "1e5 became %g", (double)y[1]);
		else
			cr_assert_float_eq(y[1], 1e5f, 1e3f);
		cr_assert(isinf(y[2]) && y[2] > 0, "infinity became %g", (double)y[2]);
		cr_assert_eq(y[3], 3.0f);
		engine_session_free(s);
		engine_model_unref(m);
	}
	backend_free(be);
}

/* ------------------------------------------------- sessions and sharing */

Test(precision, a_session_opens_only_a_model_loaded_for_its_precision)
{
	unsigned seed = fresh_seed("mismatch");
	struct pm_model pm = pm_mlp(&seed);
	struct engine_model_options for16 = { .precision = CEP_PRECISION_FP16 };
	struct engine_model_options cuda16 = { .precision = CEP_PRECISION_FP16,
					       .backend = BACKEND_CUDA };
	struct engine_model_options bad = { .precision = (cep_precision)9 };
	struct engine_session_options fp16 = { .precision = CEP_PRECISION_FP16 };
	struct engine_session_options tf32 = { .precision = CEP_PRECISION_TF32 };
	struct backend *be = host_new(0);
	engine_model *m32, *m16, *mc, *none;
	engine_session *s;

	cr_assert_eq(engine_model_load(pm.bytes, pm.len, -1, &m32), 0);
	cr_assert_eq(engine_model_load_as(pm.bytes, pm.len, -1, &for16, &m16), 0);
	/* Converted for the device's kernels: no device is needed for that. */
	cr_assert_eq(engine_model_load_as(pm.bytes, pm.len, -1, &cuda16, &mc), 0, "%s",
		     cep_last_error());
	cr_assert_eq(engine_model_load_as(pm.bytes, pm.len, -1, &bad, &none), CEP_EINVAL);
	cr_assert_null(none);
	cr_assert_eq(engine_model_precision(m32), CEP_PRECISION_FP32);
	cr_assert_eq(engine_model_precision(m16), CEP_PRECISION_FP16);

	cr_assert_eq(engine_session_new(m32, be, &fp16, &s), CEP_EINVAL);
	cr_assert_null(s);
	cr_assert_not_null(strstr(cep_last_error(), "needs its model loaded for fp16 on the host "
				  "backend; this one was loaded for fp32"), "%s", cep_last_error());
	cr_assert_eq(engine_session_new(m16, be, NULL, &s), CEP_EINVAL);
	cr_assert_not_null(strstr(cep_last_error(), "loaded for fp16 on the host backend"), "%s",
			   cep_last_error());
	cr_assert_eq(engine_session_new(mc, be, &fp16, &s), CEP_EINVAL);
	cr_assert_not_null(strstr(cep_last_error(), "this one was loaded for fp16 on the cuda "
				  "backend"), "%s", cep_last_error());
	cr_assert_eq(engine_session_new(m32, be, &tf32, &s), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_precision(s), CEP_PRECISION_TF32);
	engine_session_free(s);
	cr_assert_eq(engine_session_new(m16, be, &fp16, &s), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_precision(s), CEP_PRECISION_FP16);
	engine_session_free(s);
	engine_model_unref(m32);
	engine_model_unref(m16);
	engine_model_unref(mc);
	backend_free(be);
	pm_model_free(&pm);
}

#define ROWS 64
#define COLS 1024

/* y = relu(x @ w + b), x [batch, 64], w [64, 1024] (256 KiB). */
static uint8_t *table_model(unsigned *seed, size_t *len)
{
	struct onnxb *b = onnxb_new(13);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,64");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,1024");
	pm_init(b, "w", "64,1024", ROWS * COLS, -0.2f, 0.2f, seed);
	pm_init(b, "b", "1024", COLS, -0.2f, 0.2f, seed);
	onnxb_node(b, "MatMul", "x,w", "h");
	onnxb_node(b, "Add", "h,b", "z");
	onnxb_node(b, "Relu", "z", "y");
	return onnxb_finish(b, len);
}

static engine_model *load_shared(engine_model_cache *c, const uint8_t *buf, size_t len,
				 cep_precision p, bool *shared)
{
	struct engine_model_options mo = { .precision = p, .backend = BACKEND_HOST };
	engine_model *m;

	cr_assert_eq(engine_model_load_shared(c, buf, len, -1, &mo, &m, shared), 0, "%s",
		     cep_last_error());
	return m;
}

static engine_session *open_as(engine_model *m, struct backend *be, struct account *acc,
			       uint64_t client, cep_precision p)
{
	struct engine_session_options o = { .precision = p, .account = acc,
					    .owner = { client, client } };
	engine_session *s;

	cr_assert_eq(engine_session_new(m, be, &o, &s), 0, "%s", cep_last_error());
	return s;
}

static uint64_t weights_now(struct account *acc)
{
	struct account_usage u;

	account_totals(acc, &u);
	return u.current[ALLOC_ROLE_WEIGHTS];
}

/* Runs s on a batch of 2 of fresh inputs into y (2 x COLS). */
static void table_run(engine_session *s, const float *x, float *y)
{
	int64_t dims[2] = { 2, ROWS };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 2, dims, x, sizeof(float) * 2 * ROWS };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(float) * 2 * COLS };

	cr_assert_eq(eu_run(s, &in, 1, &out, 1), 0, "%s", cep_last_error());
}

Test(precision, models_are_shared_by_bytes_and_precision_and_fp16_weights_are_half)
{
	unsigned seed = fresh_seed("sharing");
	struct backend *be = host_new(BACKEND_HOST_UPLOAD_WEIGHTS);
	struct engine_model_cache_stats cs;
	struct engine_stats es;
	struct account *acc;
	engine_model_cache *c;
	engine_model *m32, *mtf, *m16a, *m16b, *mbf;
	engine_session *s32, *stf, *s16a, *s16b;
	float x[2 * ROWS], y32[2 * COLS], y16[2 * COLS];
	uint64_t w32, w16;
	uint8_t *buf;
	size_t len;
	bool shared;
	int i;

	cr_assert_eq(account_new(&acc), 0);
	cr_assert_eq(engine_model_cache_new(&c), 0);
	buf = table_model(&seed, &len);
	m32 = load_shared(c, buf, len, CEP_PRECISION_FP32, &shared);
	cr_assert(!shared);
	mtf = load_shared(c, buf, len, CEP_PRECISION_TF32, &shared);
	cr_assert(shared, "tf32 runs the fp32 graph");
	cr_assert_eq(mtf, m32);
	m16a = load_shared(c, buf, len, CEP_PRECISION_FP16, &shared);
	cr_assert(!shared, "the fp16 graph is a model of its own");
	cr_assert_neq(m16a, m32);
	m16b = load_shared(c, buf, len, CEP_PRECISION_FP16, &shared);
	cr_assert(shared);
	cr_assert_eq(m16b, m16a);
	mbf = load_shared(c, buf, len, CEP_PRECISION_BF16, &shared);
	cr_assert(!shared);
	engine_model_cache_stats(c, &cs);
	cr_assert_eq(cs.models, 3);
	cr_assert_eq(cs.hits, 2);

	s32 = open_as(m32, be, acc, 1, CEP_PRECISION_FP32);
	w32 = weights_now(acc);
	cr_assert_geq(w32, sizeof(float) * (ROWS * COLS + COLS));
	stf = open_as(mtf, be, acc, 2, CEP_PRECISION_TF32);
	cr_assert_eq(weights_now(acc), w32, "tf32 shares the fp32 weights");
	s16a = open_as(m16a, be, acc, 3, CEP_PRECISION_FP16);
	engine_session_stats(s16a, &es);
	w16 = es.weight_bytes;
	cr_assert_eq(w16 * 2, w32, "fp16 weights take half the bytes");
	cr_assert_eq(weights_now(acc), w32 + w16);
	s16b = open_as(m16b, be, acc, 4, CEP_PRECISION_FP16);
	cr_assert_eq(weights_now(acc), w32 + w16, "a second fp16 session shares them");

	for (i = 0; i < 2 * ROWS; i++)
		x[i] = pm_uniform(&seed);
	table_run(s32, x, y32);
	table_run(s16a, x, y16);
	cr_assert_leq(pm_rel_err(y32, y16, 2 * COLS), TOL);
	cr_assert_gt(pm_rel_err(y32, y16, 2 * COLS), 0.0);
	table_run(s16b, x, y32);
	cr_assert_eq(memcmp(y32, y16, sizeof(y16)), 0, "the two fp16 sessions agree");

	engine_session_free(s16a);
	cr_assert_eq(weights_now(acc), w32 + w16, "still used by the other fp16 session");
	engine_session_free(s16b);
	cr_assert_eq(weights_now(acc), w32, "the last fp16 session gives them back");
	engine_session_free(stf);
	engine_session_free(s32);
	cr_assert_eq(weights_now(acc), 0);
	engine_model_unref(m32);
	engine_model_unref(mtf);
	engine_model_unref(m16a);
	engine_model_unref(m16b);
	engine_model_unref(mbf);
	engine_model_cache_stats(c, &cs);
	cr_assert_eq(cs.models, 0);
	free(buf);
	engine_model_cache_free(c);
	account_free(acc);
	backend_free(be);
}
