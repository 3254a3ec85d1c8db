/*
 * test_ops_elem_model.c — the elementwise operators of kernels/cpu inside
 * whole models: symbolic dimensions carried through their inference at
 * load (broadcasting of two, three and many inputs, PRelu's one-way
 * broadcast, bool outputs), their errors wrapped with the node, and runs
 * through the engine on the host backend, where prepare() and workspaces
 * go through the planner and constant inputs are folded at load.
 * test_ops_elem.c checks each kernel's values and refusals.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "kernels/cpu/cpu.h"
#include "client/cudaep.h"
#include "engine/engine.h"
#include "engine/model.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

static struct model *load_ok(struct onnxb *b)
{
	struct model *m = NULL;
	uint8_t *buf;
	size_t len;

	buf = onnxb_finish(b, &len);
	cr_assert_eq(model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}

/* Loads b, which must fail with err and a message containing what. */
static void load_fails(struct onnxb *b, int err, const char *what)
{
	struct model *m = NULL;
	uint8_t *buf;
	size_t len;
	int ret;

	buf = onnxb_finish(b, &len);
	ret = model_load(buf, len, -1, &m);
	free(buf);
	cr_assert_eq(ret, err, "got %s: %s", cep_err_name(ret), cep_last_error());
	cr_assert(strstr(cep_last_error(), what), "'%s' lacks '%s'", cep_last_error(), what);
	cr_assert_null(m);
}

/* The dims of value name as text, symbols by name. */
static const char *dims_of(const struct model *m, const char *name)
{
	static char buf[160];
	int v = graph_value_find(&m->g, name);

	cr_assert_geq(v, 0, "no value %s", name);
	op_dims_format(&m->g.values[v].t, m->g.syms, m->g.n_syms, buf, sizeof(buf));
	return buf;
}

static cep_dtype dtype_of(const struct model *m, const char *name)
{
	return m->g.values[graph_value_find(&m->g, name)].t.dtype;
}

/* -------------------------------------------------------------- inference */

Test(ops_elem_model, symbols_carry_through_elementwise_ops)
{
	struct onnxb *b = onnxb_new(16);
	static const char *const outs[] = { "w", "s", "l", "p", "q", "c", "e", "n", "h" };
	float slope[4] = { 0.1f, 0.2f, 0.3f, 0.4f };
	int64_t two = 2;
	struct model *m;
	size_t i;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,1,4");
	onnxb_input(b, "y", CEP_DTYPE_FLOAT32, "seq,4");
	onnxb_input(b, "cond", CEP_DTYPE_BOOL, "batch,seq,1");
	for (i = 0; i < sizeof(outs) / sizeof(outs[0]); i++)
		onnxb_output(b, outs[i], 0, NULL);
	onnxb_init(b, "slope", CEP_DTYPE_FLOAT32, "4", slope);
	onnxb_init(b, "two", CEP_DTYPE_INT64, "", &two);
	onnxb_node(b, "Where", "cond,x,y", "w");
	onnxb_node(b, "Sum", "x,y,x", "s");
	onnxb_node(b, "LessOrEqual", "x,y", "l");
	onnxb_node(b, "PRelu", "x,slope", "p");
	onnxb_node(b, "Sqrt", "x", "q");
	onnxb_node(b, "Clip", "x", "c");
	onnxb_node(b, "Pow", "x,two", "e");
	onnxb_node(b, "Not", "cond", "n");
	onnxb_node(b, "HardSwish", "y", "h");
	m = load_ok(b);
	cr_assert_str_eq(dims_of(m, "w"), "[batch,seq,4]");
	cr_assert_eq(dtype_of(m, "w"), CEP_DTYPE_FLOAT32);
	cr_assert_str_eq(dims_of(m, "s"), "[batch,seq,4]");
	cr_assert_str_eq(dims_of(m, "l"), "[batch,seq,4]");
	cr_assert_eq(dtype_of(m, "l"), CEP_DTYPE_BOOL);
	cr_assert_str_eq(dims_of(m, "p"), "[batch,1,4]", "PRelu keeps X's shape");
	cr_assert_str_eq(dims_of(m, "q"), "[batch,1,4]");
	cr_assert_str_eq(dims_of(m, "c"), "[batch,1,4]");
	cr_assert_str_eq(dims_of(m, "e"), "[batch,1,4]");
	cr_assert_eq(dtype_of(m, "e"), CEP_DTYPE_FLOAT32, "Pow takes the base's type");
	cr_assert_str_eq(dims_of(m, "n"), "[batch,seq,1]");
	cr_assert_str_eq(dims_of(m, "h"), "[seq,4]");
	model_free(m);
}

Test(ops_elem_model, a_fixed_size_wins_over_a_symbol_in_many_inputs)
{
	struct onnxb *b = onnxb_new(13);
	struct model *m;

	onnxb_input(b, "a", CEP_DTYPE_FLOAT16, "n,1");
	onnxb_input(b, "b", CEP_DTYPE_FLOAT16, "k");
	onnxb_input(b, "c", CEP_DTYPE_FLOAT16, "1,5");
	onnxb_input(b, "d", CEP_DTYPE_FLOAT16, "");
	onnxb_output(b, "y", 0, NULL);
	onnxb_node(b, "Max", "a,b,c,d", "y");
	m = load_ok(b);
	/* k faces 5 and can only be 1 or 5: the output's last dim is 5. */
	cr_assert_str_eq(dims_of(m, "y"), "[n,5]");
	cr_assert_eq(dtype_of(m, "y"), CEP_DTYPE_FLOAT16);
	model_free(m);
}

Test(ops_elem_model, broadcast_conflicts_name_the_node_and_shapes)
{
	struct onnxb *b = onnxb_new(16);

	onnxb_input(b, "cond", CEP_DTYPE_BOOL, "2,3");
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,3");
	onnxb_input(b, "y", CEP_DTYPE_FLOAT32, "4");
	onnxb_output(b, "w", 0, NULL);
	onnxb_node(b, "Where", "cond,x,y", "w");
	load_fails(b, CEP_ESHAPE, "Where: shapes [2,3] and [4] do not broadcast (dimension 1: 3 vs 4)");
}

Test(ops_elem_model, clip_refuses_a_bound_with_many_elements)
{
	struct onnxb *b = onnxb_new(13);
	float lo[2] = { 0, 0 };

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,2");
	onnxb_output(b, "y", 0, NULL);
	onnxb_init(b, "lo", CEP_DTYPE_FLOAT32, "2", lo);
	onnxb_node(b, "Clip", "x,lo", "y");
	load_fails(b, CEP_ESHAPE, "Clip: min must be a scalar, it has shape [2]");
}

Test(ops_elem_model, pow_exponent_of_a_type_not_allowed_yet)
{
	struct onnxb *b = onnxb_new(11);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "3");
	onnxb_input(b, "e", CEP_DTYPE_INT32, "3");
	onnxb_output(b, "y", 0, NULL);
	onnxb_node(b, "Pow", "x,e", "y");
	load_fails(b, CEP_EDTYPE, "Pow: input 1 is int32 but input 0 is float32");
}

/* -------------------------------------------------------------------- runs */

struct fixture {
	struct backend *be;
	engine_model *m;
	engine_session *s;
};

static void fixture_open(struct fixture *f, struct onnxb *b)
{
	uint8_t *buf;
	size_t len;

	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &f->m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &f->be), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_new(f->m, f->be, NULL, &f->s), 0, "%s", cep_last_error());
}

static void fixture_close(struct fixture *f)
{
	engine_session_free(f->s);
	engine_model_unref(f->m);
	backend_free(f->be);
}

/*
 * y = Max(Clip(LeakyRelu(x, 0.1), -0.5, k), Neg(x))
 * z = Where(Greater(x, 0), Sqrt(Abs(x)), Pow(x, 2))
 * where k = Pow(2, 0.5) is folded from constants at load.
 */
static float ref_y(float x)
{
	float l = x < 0 ? 0.1f * x : x;
	float k = (float)pow(2.0, 0.5);
	float c = l < -0.5f ? -0.5f : l > k ? k : l;

	return c > -x ? c : -x;
}

static float ref_z(float x)
{
	return x > 0 ? sqrtf(fabsf(x)) : x * x;
}

Test(ops_elem_model, a_model_of_elementwise_ops_runs_at_two_batch_sizes)
{
	struct onnxb *b = onnxb_new(16);
	float lo = -0.5f, two = 2.0f, half = 0.5f, zero = 0.0f;
	struct fixture f;
	Onnx__NodeProto *n;
	int batch, i;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,3");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,3");
	onnxb_output(b, "z", CEP_DTYPE_FLOAT32, "batch,3");
	onnxb_init(b, "lo", CEP_DTYPE_FLOAT32, "", &lo);
	onnxb_init(b, "two", CEP_DTYPE_FLOAT32, "", &two);
	onnxb_init(b, "half", CEP_DTYPE_FLOAT32, "", &half);
	onnxb_init(b, "zero", CEP_DTYPE_FLOAT32, "", &zero);
	onnxb_node(b, "Pow", "two,half", "k");
	n = onnxb_node(b, "LeakyRelu", "x", "l");
	onnxb_attr_float(n, "alpha", 0.1f);
	onnxb_node(b, "Clip", "l,lo,k", "c");
	onnxb_node(b, "Neg", "x", "nx");
	onnxb_node(b, "Max", "c,nx", "y");
	onnxb_node(b, "Greater", "x,zero", "pos");
	onnxb_node(b, "Abs", "x", "ax");
	onnxb_node(b, "Sqrt", "ax", "sq");
	onnxb_node(b, "Pow", "x,two", "x2");
	onnxb_node(b, "Where", "pos,sq,x2", "z");
	fixture_open(&f, b);
	for (batch = 2; batch <= 3; batch++) {
		float x[9], y[9], z[9];
		int64_t dims[2] = { batch, 3 };
		struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 2, dims, x,
					   sizeof(float) * (size_t)(batch * 3) };
		struct engine_output out[2] = { { .name = "y", .data = y, .capacity = sizeof(y) },
						{ .name = "z", .data = z, .capacity = sizeof(z) } };

		for (i = 0; i < batch * 3; i++)
			x[i] = (float)(i * 7 % 11) * 0.5f - 2.5f;
		cr_assert_eq(eu_run(f.s, &in, 1, out, 2), 0, "%s", cep_last_error());
		cr_assert_eq(out[0].dims[0], batch);
		for (i = 0; i < batch * 3; i++) {
			cr_assert_float_eq(y[i], ref_y(x[i]), 1e-6, "y[%d] for x %g", i, x[i]);
			cr_assert_float_eq(z[i], ref_z(x[i]), 1e-6, "z[%d] for x %g", i, x[i]);
		}
	}
	fixture_close(&f);
}

Test(ops_elem_model, float16_mean_gets_its_workspace_from_the_plan)
{
	struct onnxb *b = onnxb_new(13);
	uint16_t a[4], c[4], y[4];
	int64_t dims[2] = { 2, 2 }, cd[1] = { 2 };
	struct engine_input in[2] = {
		{ "a", CEP_DTYPE_FLOAT16, 2, dims, a, sizeof(a) },
		{ "c", CEP_DTYPE_FLOAT16, 1, cd, c, sizeof(uint16_t) * 2 },
	};
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct fixture f;
	int i;

	onnxb_input(b, "a", CEP_DTYPE_FLOAT16, "n,2");
	onnxb_input(b, "c", CEP_DTYPE_FLOAT16, "2");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT16, "n,2");
	onnxb_node(b, "Mean", "a,c,a", "y");
	fixture_open(&f, b);
	for (i = 0; i < 4; i++)
		a[i] = cpu_f32_to_f16((float)i + 0.25f);
	c[0] = cpu_f32_to_f16(1.0f);
	c[1] = cpu_f32_to_f16(-2.0f);
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT16);
	for (i = 0; i < 4; i++) {
		float av = cpu_f16_to_f32(a[i]), cv = cpu_f16_to_f32(c[i % 2]);

		cr_assert_eq(y[i], cpu_f32_to_f16((av + cv + av) / 3.0f), "y[%d]", i);
	}
	fixture_close(&f);
}

Test(ops_elem_model, a_prelu_slope_symbol_that_disagrees_fails_at_plan_time)
{
	struct onnxb *b = onnxb_new(16);
	float x[6] = { -1, -2, -3, 4, 5, 6 }, s[3] = { 1, 1, 1 }, y[6];
	int64_t dx[2] = { 2, 3 }, ds[1] = { 3 };
	struct engine_input in[2] = {
		{ "x", CEP_DTYPE_FLOAT32, 2, dx, x, sizeof(x) },
		{ "s", CEP_DTYPE_FLOAT32, 1, ds, s, sizeof(s) },
	};
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct fixture f;
	int ret;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,2");
	onnxb_input(b, "s", CEP_DTYPE_FLOAT32, "k");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "n,2");
	onnxb_node(b, "PRelu", "x,s", "y");
	fixture_open(&f, b);
	/* x must be [n,2]: a [2,3] input is refused before any kernel. */
	ret = engine_run_check(f.s, in, 2, &out, 1);
	cr_assert_eq(ret, CEP_ESHAPE, "%s", cep_last_error());
	dx[1] = 2;
	in[0].bytes = sizeof(float) * 4;
	ret = eu_run(f.s, in, 2, &out, 1);
	cr_assert_eq(ret, CEP_ESHAPE, "%s", cep_last_error());
	cr_assert(strstr(cep_last_error(), "PRelu: slope [3] does not broadcast to the input's shape [2,2]"),
		  "%s", cep_last_error());
	fixture_close(&f);
}
