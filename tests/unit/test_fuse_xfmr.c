/*
 * test_fuse_xfmr.c — the transformer fusions of engine/fuse_xfmr.c on the
 * host backend: the GELU chain in every order exporters write it becomes
 * one Gelu; MatMul by a constant + bias (+ Relu or Gelu) one MatMulBias;
 * the Q K^T -> scale -> + mask -> Softmax -> x V chain one Attention with
 * its Transposes absorbed; a BERT-like two-layer encoder with exported
 * Shape/Reshape chains and a symbolic batch shrinks to its fused kernels.
 *
 * Each fused model is checked against the same graph with the fusion
 * blocked (an intermediate value made a graph output, which the passes
 * must respect), on fresh random inputs, within 1e-5 relative for float32.
 * A value read elsewhere blocks a fusion too, and a model may not use the
 * internal operators itself.
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
#include "engine/model.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

/* ------------------------------------------------------------- helpers */

static float frand(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return (float)((*state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* A host tensor of dtype and dims, random in [-scale, scale). */
struct tensor {
	cep_dtype dtype;
	int rank;
	int64_t dims[CEP_MAX_RANK];
	void *data;
	size_t bytes;
};

static struct tensor tensor_rand(cep_dtype dtype, int rank, const int64_t *dims, float scale,
				 unsigned *seed)
{
	struct tensor t = { .dtype = dtype, .rank = rank };
	int64_t n = 1, i;

	memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
	for (i = 0; i < rank; i++)
		n *= dims[i];
	t.bytes = (size_t)n * cep_dtype_size(dtype);
	t.data = calloc(1, t.bytes ? t.bytes : 1);
	cr_assert_not_null(t.data);
	for (i = 0; i < n; i++)
		cpu_store_f(t.data, dtype, i, scale * frand(seed));
	return t;
}

/* Random floats for an initializer of n elements of dtype. */
static void *init_rand(cep_dtype dtype, int64_t n, float scale, unsigned *seed)
{
	void *p = calloc((size_t)n, cep_dtype_size(dtype));
	int64_t i;

	cr_assert_not_null(p);
	for (i = 0; i < n; i++)
		cpu_store_f(p, dtype, i, scale * frand(seed));
	return p;
}

/* A scalar initializer of dtype holding v. */
static void init_scalar(struct onnxb *b, const char *name, cep_dtype dtype, float v)
{
	/* Room for any element type: cpu_store_f() writes the first bytes. */
	uint64_t e[1] = { 0 };

	cpu_store_f(e, dtype, 0, v);
	onnxb_init(b, name, dtype, "", e);
}

/* Live nodes of op_type in the optimized graph of the model in buf. */
static int op_count(const uint8_t *buf, size_t len, const char *op_type)
{
	struct model *m = NULL;
	int i, n = 0;

	cr_assert_eq(model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	for (i = 0; i < m->g.n_nodes; i++)
		n += !m->g.nodes[i].dead && strcmp(m->g.nodes[i].op.op_type, op_type) == 0;
	model_free(m);
	return n;
}

/* Runs the model in buf on the host with n inputs named names and returns
 * output "y" in a malloc'd buffer of *bytes (dtype of the model). */
static void *run_y(const uint8_t *buf, size_t len, const char *const *names,
		   const struct tensor *in, int n, size_t *bytes)
{
	struct engine_input ins[8];
	struct engine_output out = { .name = "y" };
	engine_model *m = NULL;
	engine_session *s;
	struct backend *be;
	int i, ret;

	cr_assert_leq(n, 8);
	for (i = 0; i < n; i++)
		ins[i] = (struct engine_input){ names[i], in[i].dtype, in[i].rank, in[i].dims,
						in[i].data, in[i].bytes };
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	ret = eu_run(s, ins, (size_t)n, &out, 1);
	cr_assert_eq(ret, CEP_ENOSPC, "%s", cep_last_error());
	out.capacity = out.bytes;
	out.data = malloc(out.bytes ? out.bytes : 1);
	cr_assert_eq(eu_run(s, ins, (size_t)n, &out, 1), 0, "%s", cep_last_error());
	*bytes = out.bytes;
	engine_session_free(s);
	backend_free(be);
	engine_model_unref(m);
	return out.data;
}

/* Compares n elements of got with want (dtype): NaN must meet NaN, and
 * |got - want| <= rtol |want| + atol. Prints the worst errors; returns
 * the mismatches. */
static int64_t compare(const char *what, cep_dtype dtype, const void *got, const void *want,
		       int64_t n, double rtol, double atol)
{
	double max_abs = 0.0, max_rel = 0.0;
	int64_t i, bad = 0, nan = 0;

	for (i = 0; i < n; i++) {
		double g = cpu_load_f(got, dtype, i), w = cpu_load_f(want, dtype, i);
		double d = fabs(g - w);

		if (isnan(w) || isnan(g)) {
			nan += isnan(w);
			bad += isnan(w) != isnan(g);
			continue;
		}
		if (d > max_abs)
			max_abs = d;
		if (w != 0.0 && d / fabs(w) > max_rel)
			max_rel = d / fabs(w);
		bad += !(d <= rtol * fabs(w) + atol);
	}
	printf("  %-48s %7lld elements (%lld NaN)  max abs %.3g  max rel %.3g%s\n", what,
	       (long long)n, (long long)nan, max_abs, max_rel, bad ? "  MISMATCH" : "");
	fflush(stdout);
	return bad;
}

/* Runs the fused and the blocked model on the same inputs and compares
 * their y. */
static void check_same(const char *what, const uint8_t *fused, size_t flen,
		       const uint8_t *plain, size_t plen, const char *const *names,
		       const struct tensor *in, int n, double rtol, double atol)
{
	size_t fb, pb;
	void *fy = run_y(fused, flen, names, in, n, &fb);
	void *py = run_y(plain, plen, names, in, n, &pb);

	cr_assert_eq(fb, pb);
	cr_assert_gt(fb, 0);
	cr_assert_eq(compare(what, in[0].dtype, fy, py, (int64_t)(fb / cep_dtype_size(in[0].dtype)),
			     rtol, atol),
		     0, "%s: the fused model differs", what);
	free(fy);
	free(py);
}

static void tensors_free(struct tensor *t, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(t[i].data);
}

/* How a test graph keeps a fusion from happening, to make the reference. */
enum block {
	BLOCK_NONE,
	BLOCK_OUTPUT,   /* an intermediate is also a graph output */
	BLOCK_READER,   /* an intermediate is also read by another node */
};

/* Makes value v of dtype visible (as output "o_<v>") or read elsewhere
 * (Neg -> output "n_<v>"), per how. */
static void block_value(struct onnxb *b, const char *v, cep_dtype dtype, enum block how)
{
	char name[64];

	if (how == BLOCK_OUTPUT) {
		onnxb_output(b, v, dtype, NULL);
	} else if (how == BLOCK_READER) {
		snprintf(name, sizeof(name), "n_%s", v);
		onnxb_node(b, "Neg", v, name);
		onnxb_output(b, name, dtype, NULL);
	}
}

/* ---------------------------------------------------------------- GELU */

/* The orders exporters write x * 0.5 * (1 + erf(x / sqrt 2)) in. */
enum gelu_form {
	GELU_TORCH,       /* Div sqrt2, Erf, Add 1, Mul x, Mul 0.5 */
	GELU_HALF_FIRST,  /* Mul(x, 0.5) * (1 + Erf(x * rsqrt2)), constants on the left */
	GELU_HALF_SUM,    /* x * ((Erf(x / sqrt2) + 1) * 0.5) */
	GELU_DIV2,        /* (x * (1 + Erf(x * rsqrt2))) / 2 */
	GELU_FORMS,
};

static const char *const gelu_names[GELU_FORMS] = {
	"torch order", "half first", "half of the sum", "divided by 2",
};

/* y = gelu(x) for x [n, 24] in form, with value "e" (Erf's output) blocked
 * per how. */
static uint8_t *gelu_model(enum gelu_form form, cep_dtype t, enum block how, size_t *len)
{
	struct onnxb *b = onnxb_new(17);

	onnxb_input(b, "x", t, "n,24");
	onnxb_output(b, "y", t, NULL);
	init_scalar(b, "sqrt2", t, (float)M_SQRT2);
	init_scalar(b, "rsqrt2", t, (float)M_SQRT1_2);
	init_scalar(b, "one", t, 1.0f);
	init_scalar(b, "half", t, 0.5f);
	init_scalar(b, "two", t, 2.0f);
	switch (form) {
	case GELU_TORCH:
		onnxb_node(b, "Div", "x,sqrt2", "u");
		onnxb_node(b, "Erf", "u", "e");
		onnxb_node(b, "Add", "e,one", "a");
		onnxb_node(b, "Mul", "x,a", "t");
		onnxb_node(b, "Mul", "t,half", "y");
		break;
	case GELU_HALF_FIRST:
		onnxb_node(b, "Mul", "half,x", "h");
		onnxb_node(b, "Mul", "rsqrt2,x", "u");
		onnxb_node(b, "Erf", "u", "e");
		onnxb_node(b, "Add", "one,e", "a");
		onnxb_node(b, "Mul", "h,a", "y");
		break;
	case GELU_HALF_SUM:
		onnxb_node(b, "Div", "x,sqrt2", "u");
		onnxb_node(b, "Erf", "u", "e");
		onnxb_node(b, "Add", "e,one", "a");
		onnxb_node(b, "Mul", "a,half", "t");
		onnxb_node(b, "Mul", "x,t", "y");
		break;
	default:
		onnxb_node(b, "Mul", "x,rsqrt2", "u");
		onnxb_node(b, "Erf", "u", "e");
		onnxb_node(b, "Add", "one,e", "a");
		onnxb_node(b, "Mul", "a,x", "t");
		onnxb_node(b, "Div", "t,two", "y");
		break;
	}
	block_value(b, "e", t, how);
	return onnxb_finish(b, len);
}

Test(fuse_gelu, every_order_becomes_one_gelu_with_the_same_result)
{
	static const char *const names[1] = { "x" };
	static const cep_dtype types[2] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16 };
	unsigned seed = 11u ^ (unsigned)getpid();
	int64_t dims[2] = { 7, 24 };
	char what[96];
	int f, t;

	for (t = 0; t < 2; t++) {
		for (f = 0; f < GELU_FORMS; f++) {
			size_t flen, plen;
			uint8_t *fused = gelu_model(f, types[t], BLOCK_NONE, &flen);
			uint8_t *plain = gelu_model(f, types[t], BLOCK_OUTPUT, &plen);
			struct tensor x = tensor_rand(types[t], 2, dims, 5.0f, &seed);

			cr_assert_eq(op_count(fused, flen, "Gelu"), 1, "%s", gelu_names[f]);
			cr_assert_eq(op_count(fused, flen, "Erf"), 0);
			cr_assert_eq(op_count(plain, plen, "Gelu"), 0, "Erf's output is a graph output");
			cr_assert_eq(op_count(plain, plen, "Erf"), 1);
			snprintf(what, sizeof(what), "Gelu %s %s", cep_dtype_name(types[t]),
				 gelu_names[f]);
			/* float16: the chain rounds at every step, Gelu once. */
			check_same(what, fused, flen, plain, plen, names, &x, 1,
				   t == 0 ? 1e-5 : 4e-3, t == 0 ? 1e-6 : 1e-3);
			tensors_free(&x, 1);
			free(fused);
			free(plain);
		}
	}
}

Test(fuse_gelu, an_erf_read_elsewhere_or_a_wrong_constant_stays)
{
	struct onnxb *b;
	size_t len;
	uint8_t *buf;

	buf = gelu_model(GELU_TORCH, CEP_DTYPE_FLOAT32, BLOCK_READER, &len);
	cr_assert_eq(op_count(buf, len, "Gelu"), 0);
	cr_assert_eq(op_count(buf, len, "Erf"), 1);
	free(buf);
	/* x / 1.5: not a GELU. */
	b = onnxb_new(17);
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,24");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	init_scalar(b, "c", CEP_DTYPE_FLOAT32, 1.5f);
	init_scalar(b, "one", CEP_DTYPE_FLOAT32, 1.0f);
	init_scalar(b, "half", CEP_DTYPE_FLOAT32, 0.5f);
	onnxb_node(b, "Div", "x,c", "u");
	onnxb_node(b, "Erf", "u", "e");
	onnxb_node(b, "Add", "e,one", "a");
	onnxb_node(b, "Mul", "x,a", "t");
	onnxb_node(b, "Mul", "t,half", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(op_count(buf, len, "Gelu"), 0);
	cr_assert_eq(op_count(buf, len, "Erf"), 1);
	free(buf);
}

/* ---------------------------------------------------------- MatMulBias */

enum mmb_act { MMB_NONE, MMB_RELU, MMB_GELU_CHAIN, MMB_GELU_TANH, MMB_ACTS };

static const char *const mmb_act_names[MMB_ACTS] = { "none", "relu", "gelu (Erf chain)",
						    "gelu tanh (opset 20 node)" };

/* y = act(x [b, 5, 16] W [16, 24] + bias) with the bias [24] on the right,
 * or [1, 24] on the left (bias_left); the MatMul's output "h" blocked per
 * how. */
static uint8_t *mmb_model(enum mmb_act act, bool bias_left, cep_dtype t, enum block how,
			  unsigned wseed, size_t *len)
{
	struct onnxb *b = onnxb_new(act == MMB_GELU_TANH ? 20 : 17);
	void *w = init_rand(t, 16 * 24, 0.5f, &wseed);
	void *bias = init_rand(t, 24, 1.0f, &wseed);
	const char *last = act == MMB_NONE ? "y" : "z";
	Onnx__NodeProto *n;

	onnxb_input(b, "x", t, "b,5,16");
	onnxb_output(b, "y", t, NULL);
	onnxb_init(b, "w", t, "16,24", w);
	onnxb_init(b, "bias", t, bias_left ? "1,24" : "24", bias);
	onnxb_node(b, "MatMul", "x,w", "h");
	onnxb_node(b, "Add", bias_left ? "bias,h" : "h,bias", last);
	switch (act) {
	case MMB_RELU:
		onnxb_node(b, "Relu", "z", "y");
		break;
	case MMB_GELU_CHAIN:
		init_scalar(b, "sqrt2", t, (float)M_SQRT2);
		init_scalar(b, "one", t, 1.0f);
		init_scalar(b, "half", t, 0.5f);
		onnxb_node(b, "Div", "z,sqrt2", "u");
		onnxb_node(b, "Erf", "u", "e");
		onnxb_node(b, "Add", "e,one", "a");
		onnxb_node(b, "Mul", "z,a", "g");
		onnxb_node(b, "Mul", "g,half", "y");
		break;
	case MMB_GELU_TANH:
		n = onnxb_node(b, "Gelu", "z", "y");
		onnxb_attr_string(n, "approximate", "tanh");
		break;
	default:
		break;
	}
	block_value(b, "h", t, how);
	free(w);
	free(bias);
	return onnxb_finish(b, len);
}

Test(fuse_matmulbias, matmul_bias_and_activation_become_one_node)
{
	static const char *const names[1] = { "x" };
	static const cep_dtype types[2] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_BFLOAT16 };
	unsigned seed = 23u ^ (unsigned)getpid();
	int64_t dims[3] = { 3, 5, 16 };
	char what[96];
	int a, t, left;

	for (t = 0; t < 2; t++) {
		for (a = 0; a < MMB_ACTS; a++) {
			for (left = 0; left < 2; left++) {
				size_t flen, plen;
				unsigned wseed = seed++;
				uint8_t *fused = mmb_model(a, left, types[t], BLOCK_NONE, wseed, &flen);
				uint8_t *plain = mmb_model(a, left, types[t], BLOCK_OUTPUT, wseed, &plen);
				struct tensor x = tensor_rand(types[t], 3, dims, 2.0f, &seed);

				cr_assert_eq(op_count(fused, flen, "MatMulBias"), 1);
				cr_assert_eq(op_count(fused, flen, "MatMul") +
					     op_count(fused, flen, "Add") +
					     op_count(fused, flen, "Relu") +
					     op_count(fused, flen, "Gelu"), 0,
					     "everything went into the MatMulBias (%s)",
					     mmb_act_names[a]);
				cr_assert_eq(op_count(plain, plen, "MatMulBias"), 0);
				cr_assert_eq(op_count(plain, plen, "MatMul"), 1);
				snprintf(what, sizeof(what), "MatMulBias %s %s, bias on the %s",
					 cep_dtype_name(types[t]), mmb_act_names[a],
					 left ? "left" : "right");
				/* bfloat16: the unfused nodes round after each step. */
				check_same(what, fused, flen, plain, plen, names, &x, 1,
					   t == 0 ? 1e-5 : 2e-2, t == 0 ? 1e-6 : 2e-2);
				tensors_free(&x, 1);
				free(fused);
				free(plain);
			}
		}
	}
}

Test(fuse_matmulbias, no_fusion_past_a_shared_value_or_a_weight_known_only_at_run_time)
{
	struct onnxb *b;
	uint8_t *buf;
	size_t len;

	buf = mmb_model(MMB_RELU, false, CEP_DTYPE_FLOAT32, BLOCK_READER, 1, &len);
	cr_assert_eq(op_count(buf, len, "MatMulBias"), 0);
	cr_assert_eq(op_count(buf, len, "MatMul"), 1);
	free(buf);
	/* The bias-added value is a graph output: MatMul and Add fuse, the
	 * Relu stays outside. */
	b = onnxb_new(17);
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "4,16");
	onnxb_input(b, "w", CEP_DTYPE_FLOAT32, "16,8");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "bias", CEP_DTYPE_FLOAT32, "8", NULL);
	onnxb_node(b, "MatMul", "x,w", "h");
	onnxb_node(b, "Add", "h,bias", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(op_count(buf, len, "MatMulBias"), 0, "W is an input");
	free(buf);
	buf = mmb_model(MMB_RELU, false, CEP_DTYPE_FLOAT32, BLOCK_NONE, 1, &len);
	cr_assert_eq(op_count(buf, len, "MatMulBias"), 1);
	free(buf);
}

/* Exporters write axes and shapes as Constant nodes, whose values the
 * first inference at load does not see: x's rank is unknown until they are
 * folded, and the fusions must still see it (they ran on the unknown rank
 * of an exported BERT's hidden states, and fused nothing). */
Test(fuse_matmulbias, fuses_where_the_rank_is_known_only_after_folding)
{
	static const int64_t axes[1] = { 0 };
	struct onnxb *b = onnxb_new(17);
	Onnx__NodeProto *n;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "4,16");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "16,8", NULL);
	onnxb_init(b, "bias", CEP_DTYPE_FLOAT32, "8", NULL);
	n = onnxb_node(b, "Constant", "", "axes");
	onnxb_attr_tensor(n, "value", onnxb_tensor("", CEP_DTYPE_INT64, "1", axes));
	onnxb_node(b, "Unsqueeze", "x,axes", "xu");
	onnxb_node(b, "MatMul", "xu,w", "h");
	onnxb_node(b, "Add", "bias,h", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(op_count(buf, len, "MatMulBias"), 1);
	cr_assert_eq(op_count(buf, len, "MatMul"), 0);
	free(buf);
}

/* ----------------------------------------------------------- Attention */

struct attn_case {
	const char *what;
	int64_t B, H, S, D;
	const char *mask;        /* "b11s", "b1ss", "" (none) */
	bool mul;                /* scale by Mul(0.125) rather than Div(8) */
	bool k_transposed;       /* K arrives as [B, H, D, S] */
	bool bshd;               /* Q, K, V as [B, S, H, D] through Transposes,
	                          * the output transposed back */
	bool casts;              /* Casts to the scores' own type around the
	                          * Softmax, as newer Hugging Face code exports */
};

/* The attention chain over inputs q, k, v (and mask), blocking value
 * "probs" (the Softmax's output) per how. */
static uint8_t *attn_model(const struct attn_case *c, cep_dtype t, enum block how, size_t *len)
{
	struct onnxb *b = onnxb_new(17);
	static const int64_t to_bhsd[4] = { 0, 2, 1, 3 }, to_bhds[4] = { 0, 2, 3, 1 };
	static const int64_t swap[4] = { 0, 1, 3, 2 };
	char shape[64];
	Onnx__NodeProto *n;

	if (c->bshd) {
		snprintf(shape, sizeof(shape), "%lld,%lld,%lld,%lld", (long long)c->B,
			 (long long)c->S, (long long)c->H, (long long)c->D);
		onnxb_input(b, "q", t, shape);
		onnxb_input(b, "k", t, shape);
		onnxb_input(b, "v", t, shape);
		n = onnxb_node(b, "Transpose", "q", "qh");
		onnxb_attr_ints(n, "perm", 4, to_bhsd);
		n = onnxb_node(b, "Transpose", "k", "kt");
		onnxb_attr_ints(n, "perm", 4, to_bhds);
		n = onnxb_node(b, "Transpose", "v", "vh");
		onnxb_attr_ints(n, "perm", 4, to_bhsd);
	} else {
		snprintf(shape, sizeof(shape), "%lld,%lld,%lld,%lld", (long long)c->B,
			 (long long)c->H, (long long)c->S, (long long)c->D);
		onnxb_input(b, "qh", t, shape);
		onnxb_input(b, "vh", t, shape);
		if (c->k_transposed) {
			snprintf(shape, sizeof(shape), "%lld,%lld,%lld,%lld", (long long)c->B,
				 (long long)c->H, (long long)c->D, (long long)c->S);
			onnxb_input(b, "kt", t, shape);
		} else {
			onnxb_input(b, "kh", t, shape);
			n = onnxb_node(b, "Transpose", "kh", "kt");
			onnxb_attr_ints(n, "perm", 4, swap);
		}
	}
	if (c->mask[0] != '\0') {
		if (strcmp(c->mask, "b11s") == 0)
			snprintf(shape, sizeof(shape), "%lld,1,1,%lld", (long long)c->B,
				 (long long)c->S);
		else
			snprintf(shape, sizeof(shape), "%lld,1,%lld,%lld", (long long)c->B,
				 (long long)c->S, (long long)c->S);
		onnxb_input(b, "mask", t, shape);
	}
	onnxb_output(b, "y", t, NULL);
	init_scalar(b, "c", t, c->mul ? 0.125f : 8.0f);
	onnxb_node(b, "MatMul", "qh,kt", "scores");
	onnxb_node(b, c->mul ? "Mul" : "Div", c->mul ? "c,scores" : "scores,c", "scaled");
	if (c->mask[0] != '\0')
		onnxb_node(b, "Add", "mask,scaled", "masked");
	if (c->casts) {
		n = onnxb_node(b, "Cast", c->mask[0] != '\0' ? "masked" : "scaled", "cast_in");
		onnxb_attr_int(n, "to", t);
	}
	n = onnxb_node(b, "Softmax", c->casts ? "cast_in" : c->mask[0] != '\0' ? "masked" : "scaled",
		       "probs");
	onnxb_attr_int(n, "axis", -1);
	if (c->casts) {
		n = onnxb_node(b, "Cast", "probs", "cast_out");
		onnxb_attr_int(n, "to", t);
	}
	onnxb_node(b, "MatMul", c->casts ? "cast_out,vh" : "probs,vh", c->bshd ? "ctx" : "y");
	if (c->bshd) {
		n = onnxb_node(b, "Transpose", "ctx", "y");
		onnxb_attr_ints(n, "perm", 4, to_bhsd);
	}
	block_value(b, "probs", t, how);
	return onnxb_finish(b, len);
}

/* Fills mask values: 0 mostly, -10000 and -3.4e38 (a float type's lowest,
 * as Hugging Face writes) in places, and for "b1ss" whole rows masked. */
static void mask_fill(struct tensor *m, unsigned *seed)
{
	int64_t n = m->bytes / cep_dtype_size(m->dtype), i, s = m->dims[3];
	float lowest = m->dtype == CEP_DTYPE_FLOAT16 ? -65504.0f : -3.4e38f;

	for (i = 0; i < n; i++) {
		float r = frand(seed);

		cpu_store_f(m->data, m->dtype, i, r < -0.6f ? -10000.0f : r < -0.4f ? lowest : 0.0f);
	}
	/* The first key stays visible in every row. */
	for (i = 0; i < n; i += s)
		cpu_store_f(m->data, m->dtype, i, 0.0f);
}

Test(fuse_attention, the_chain_becomes_one_attention_with_the_same_result)
{
	static const struct attn_case cases[] = {
		{ "B2 H3 S7 D16, mask [B,1,1,S], Div", 2, 3, 7, 16, "b11s", false, false, false,
		  false },
		{ "B1 H2 S9 D8, mask [B,1,S,S], Mul", 1, 2, 9, 8, "b1ss", true, false, false, false },
		{ "B2 H2 S5 D4, no mask, K given as K^T", 2, 2, 5, 4, "", false, true, false, false },
		{ "B2 H4 S6 D8, [B,S,H,D] via Transposes", 2, 4, 6, 8, "b11s", false, false, true,
		  false },
		{ "B2 H2 S6 D8, Mul, Casts around Softmax", 2, 2, 6, 8, "b11s", true, false, true,
		  true },
	};
	static const cep_dtype types[2] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16 };
	static const char *const names[4] = { "qh", "kh", "vh", "mask" };
	static const char *const names_t[4] = { "qh", "kt", "vh", "mask" };
	static const char *const names_bshd[4] = { "q", "k", "v", "mask" };
	unsigned seed = 31u ^ (unsigned)getpid();
	char what[128];
	size_t k;
	int t;

	for (t = 0; t < 2; t++) {
		for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
			const struct attn_case *c = &cases[k];
			int64_t bhsd[4] = { c->B, c->H, c->S, c->D }, bhds[4] = { c->B, c->H, c->D, c->S };
			int64_t bshd[4] = { c->B, c->S, c->H, c->D };
			int64_t mdims[4] = { c->B, 1, strcmp(c->mask, "b1ss") == 0 ? c->S : 1, c->S };
			const int64_t *qd = c->bshd ? bshd : bhsd;
			int n = c->mask[0] != '\0' ? 4 : 3;
			struct tensor in[4];
			size_t flen, plen;
			uint8_t *fused = attn_model(c, types[t], BLOCK_NONE, &flen);
			uint8_t *plain = attn_model(c, types[t], BLOCK_OUTPUT, &plen);

			in[0] = tensor_rand(types[t], 4, qd, 3.0f, &seed);
			in[1] = tensor_rand(types[t], 4, c->k_transposed ? bhds : qd, 3.0f, &seed);
			in[2] = tensor_rand(types[t], 4, qd, 1.0f, &seed);
			if (n == 4) {
				in[3] = tensor_rand(types[t], 4, mdims, 1.0f, &seed);
				mask_fill(&in[3], &seed);
			}
			cr_assert_eq(op_count(fused, flen, "Attention"), 1, "%s", c->what);
			cr_assert_eq(op_count(fused, flen, "MatMul") + op_count(fused, flen, "Softmax") +
				     op_count(fused, flen, "Transpose") + op_count(fused, flen, "Cast"), 0,
				     "%s: the chain and its Transposes went into the Attention",
				     c->what);
			cr_assert_eq(op_count(plain, plen, "Attention"), 0);
			cr_assert_eq(op_count(plain, plen, "Softmax"), 1);
			snprintf(what, sizeof(what), "Attention %s %s", cep_dtype_name(types[t]),
				 c->what);
			check_same(what, fused, flen, plain, plen,
				   c->bshd ? names_bshd : c->k_transposed ? names_t : names, in, n,
				   t == 0 ? 1e-5 : 1e-2, t == 0 ? 1e-6 : 2e-3);
			tensors_free(in, n);
			free(fused);
			free(plain);
		}
	}
}

Test(fuse_attention, scores_read_elsewhere_keep_the_chain)
{
	static const struct attn_case c = { "", 1, 2, 4, 8, "b11s", false, false, false, false };
	uint8_t *buf;
	size_t len;

	buf = attn_model(&c, CEP_DTYPE_FLOAT32, BLOCK_READER, &len);
	cr_assert_eq(op_count(buf, len, "Attention"), 0);
	cr_assert_eq(op_count(buf, len, "Softmax"), 1);
	free(buf);
}

/* --------------------------------------------------- a BERT-like encoder */

#define ENC_S 8       /* sequence */
#define ENC_D 64      /* hidden */
#define ENC_H 4       /* heads */
#define ENC_DH 16     /* head size: the scale 1/4 is exact */
#define ENC_F 128     /* feed-forward */
#define ENC_LAYERS 2

/* Adds a constant matrix and bias and y = x W + b (MatMul, Add) as an
 * exporter writes a Linear, blocking the MatMul's output when expose. */
static void enc_linear(struct onnxb *b, const char *x, const char *y, const char *name, int k,
		       int n, bool expose, unsigned *seed)
{
	char w[48], bias[48], h[48], shape[112];
	void *wd = init_rand(CEP_DTYPE_FLOAT32, (int64_t)k * n, 1.0f / sqrtf((float)k), seed);
	void *bd = init_rand(CEP_DTYPE_FLOAT32, n, 0.1f, seed);

	snprintf(w, sizeof(w), "%s_w", name);
	snprintf(bias, sizeof(bias), "%s_b", name);
	snprintf(h, sizeof(h), "%s_mm", name);
	snprintf(shape, sizeof(shape), "%d,%d", k, n);
	onnxb_init(b, w, CEP_DTYPE_FLOAT32, shape, wd);
	snprintf(shape, sizeof(shape), "%d", n);
	onnxb_init(b, bias, CEP_DTYPE_FLOAT32, shape, bd);
	snprintf(shape, sizeof(shape), "%s,%s", x, w);
	onnxb_node(b, "MatMul", shape, h);
	snprintf(shape, sizeof(shape), "%s,%s", bias, h);
	onnxb_node(b, "Add", shape, y);
	if (expose)
		onnxb_output(b, h, CEP_DTYPE_FLOAT32, NULL);
	free(wd);
	free(bd);
}

/* A LayerNormalization over the hidden dim with random scale and bias. */
static void enc_norm(struct onnxb *b, const char *x, const char *y, unsigned *seed)
{
	char s[48], bias[48], in[112];
	float sd[ENC_D], bd[ENC_D];
	Onnx__NodeProto *n;
	int i;

	for (i = 0; i < ENC_D; i++) {
		sd[i] = 1.0f + 0.2f * frand(seed);
		bd[i] = 0.1f * frand(seed);
	}
	snprintf(s, sizeof(s), "%s_s", y);
	snprintf(bias, sizeof(bias), "%s_b", y);
	onnxb_init(b, s, CEP_DTYPE_FLOAT32, "64", sd);
	onnxb_init(b, bias, CEP_DTYPE_FLOAT32, "64", bd);
	snprintf(in, sizeof(in), "%s,%s,%s", x, s, bias);
	n = onnxb_node(b, "LayerNormalization", in, y);
	onnxb_attr_int(n, "axis", -1);
	onnxb_attr_float(n, "epsilon", 1e-12f);
}

/*
 * Two BERT layers over hidden states x [batch, 8, 64] with a padding mask
 * [batch, 8] (int64, 1 keep, 0 pad) as torch.onnx.export writes them:
 * the extended mask (1 - mask) * -10000 through Unsqueeze and Cast, heads
 * split by Reshape to a shape built from Shape/Gather/Unsqueeze/Concat of
 * the input (unknown until the batch is), Transposes to [B, H, S, D] and
 * K straight to [B, H, D, S], scores divided by sqrt(16), Softmax, the
 * context transposed back and merged, the output projection, residual
 * and LayerNormalization, an Erf-based GELU feed-forward, residual and
 * LayerNormalization. expose makes the values every fusion passes through
 * graph outputs, which blocks all of them.
 */
static uint8_t *enc_model(bool expose, unsigned wseed, size_t *len)
{
	static const int64_t i0[1] = { 0 }, i1[1] = { 1 }, ax1[1] = { 1 }, ax2[1] = { 2 };
	static const int64_t ax0[1] = { 0 }, heads[2] = { ENC_H, ENC_DH }, hid[1] = { ENC_D };
	static const int64_t to_bhsd[4] = { 0, 2, 1, 3 }, to_bhds[4] = { 0, 2, 3, 1 };
	struct onnxb *b = onnxb_new(17);
	Onnx__NodeProto *n;
	char h[48], a[112], o[48], w[48];
	int l, i;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,8,64");
	onnxb_input(b, "mask", CEP_DTYPE_INT64, "batch,8");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,8,64");
	onnxb_init(b, "i0", CEP_DTYPE_INT64, "", i0);
	onnxb_init(b, "i1", CEP_DTYPE_INT64, "", i1);
	onnxb_init(b, "ax0", CEP_DTYPE_INT64, "1", ax0);
	onnxb_init(b, "ax1", CEP_DTYPE_INT64, "1", ax1);
	onnxb_init(b, "ax2", CEP_DTYPE_INT64, "1", ax2);
	onnxb_init(b, "heads", CEP_DTYPE_INT64, "2", heads);
	onnxb_init(b, "hid", CEP_DTYPE_INT64, "1", hid);
	init_scalar(b, "one", CEP_DTYPE_FLOAT32, 1.0f);
	init_scalar(b, "neg", CEP_DTYPE_FLOAT32, -10000.0f);
	init_scalar(b, "dh_sqrt", CEP_DTYPE_FLOAT32, 4.0f);
	init_scalar(b, "sqrt2", CEP_DTYPE_FLOAT32, 1.4142135f);
	init_scalar(b, "half", CEP_DTYPE_FLOAT32, 0.5f);
	/* The extended attention mask, [batch, 1, 1, 8]. */
	onnxb_node(b, "Unsqueeze", "mask,ax1", "m1");
	onnxb_node(b, "Unsqueeze", "m1,ax2", "m2");
	n = onnxb_node(b, "Cast", "m2", "m3");
	onnxb_attr_int(n, "to", CEP_DTYPE_FLOAT32);
	onnxb_node(b, "Sub", "one,m3", "m4");
	onnxb_node(b, "Mul", "m4,neg", "ext");
	snprintf(h, sizeof(h), "x");
	for (l = 0; l < ENC_LAYERS; l++) {
		char p[8];

		snprintf(p, sizeof(p), "l%d", l);
/* Node inputs and outputs named after the layer: "l0_shape". */
#define NM(buf, fmt, ...) (snprintf(buf, sizeof(buf), fmt, p, ##__VA_ARGS__), buf)
		/* Reshape targets from the input's own shape, as traced. */
		onnxb_node(b, "Shape", h, NM(o, "%s_shape"));
		onnxb_node(b, "Gather", NM(a, "%s_shape,i0"), NM(o, "%s_b0"));
		onnxb_node(b, "Gather", NM(a, "%s_shape,i1"), NM(o, "%s_s0"));
		onnxb_node(b, "Unsqueeze", NM(a, "%s_b0,ax0"), NM(o, "%s_b1"));
		onnxb_node(b, "Unsqueeze", NM(a, "%s_s0,ax0"), NM(o, "%s_s1"));
		n = onnxb_node(b, "Concat", NM(a, "%s_b1,%s_s1,heads", p), NM(o, "%s_split"));
		onnxb_attr_int(n, "axis", 0);
		n = onnxb_node(b, "Concat", NM(a, "%s_b1,%s_s1,hid", p), NM(o, "%s_merge"));
		onnxb_attr_int(n, "axis", 0);
		for (i = 0; i < 3; i++) {
			const char qkv = "qkv"[i];

			enc_linear(b, h, NM(o, "%s_%cl", qkv), NM(w, "%s_%c", qkv), ENC_D, ENC_D,
				   expose, &wseed);
			onnxb_node(b, "Reshape", NM(a, "%s_%cl,%s_split", qkv, p),
				   NM(o, "%s_%cr", qkv));
			n = onnxb_node(b, "Transpose", NM(a, "%s_%cr", qkv), NM(o, "%s_%ch", qkv));
			onnxb_attr_ints(n, "perm", 4, qkv == 'k' ? to_bhds : to_bhsd);
		}
		onnxb_node(b, "MatMul", NM(a, "%s_qh,%s_kh", p), NM(o, "%s_scores"));
		onnxb_node(b, "Div", NM(a, "%s_scores,dh_sqrt"), NM(o, "%s_scaled"));
		onnxb_node(b, "Add", NM(a, "%s_scaled,ext"), NM(o, "%s_masked"));
		n = onnxb_node(b, "Softmax", NM(a, "%s_masked"), NM(o, "%s_probs"));
		onnxb_attr_int(n, "axis", -1);
		if (expose)
			onnxb_output(b, o, CEP_DTYPE_FLOAT32, NULL);
		onnxb_node(b, "MatMul", NM(a, "%s_probs,%s_vh", p), NM(o, "%s_ctx"));
		n = onnxb_node(b, "Transpose", NM(a, "%s_ctx"), NM(o, "%s_ctxt"));
		onnxb_attr_ints(n, "perm", 4, to_bhsd);
		onnxb_node(b, "Reshape", NM(a, "%s_ctxt,%s_merge", p), NM(o, "%s_ctxm"));
		enc_linear(b, NM(a, "%s_ctxm"), NM(o, "%s_attn"), NM(w, "%s_o"), ENC_D, ENC_D,
			   expose, &wseed);
		snprintf(a, sizeof(a), "%s,%s_attn", h, p);
		onnxb_node(b, "Add", a, NM(o, "%s_res1"));
		enc_norm(b, NM(a, "%s_res1"), NM(o, "%s_ln1"), &wseed);
		/* Feed-forward with the exact GELU. */
		enc_linear(b, NM(a, "%s_ln1"), NM(o, "%s_f1"), NM(w, "%s_w1"), ENC_D, ENC_F,
			   expose, &wseed);
		onnxb_node(b, "Div", NM(a, "%s_f1,sqrt2"), NM(o, "%s_gu"));
		onnxb_node(b, "Erf", NM(a, "%s_gu"), NM(o, "%s_ge"));
		if (expose)
			onnxb_output(b, o, CEP_DTYPE_FLOAT32, NULL);
		onnxb_node(b, "Add", NM(a, "%s_ge,one"), NM(o, "%s_ga"));
		onnxb_node(b, "Mul", NM(a, "%s_f1,%s_ga", p), NM(o, "%s_gm"));
		onnxb_node(b, "Mul", NM(a, "%s_gm,half"), NM(o, "%s_gelu"));
		enc_linear(b, NM(a, "%s_gelu"), NM(o, "%s_f2"), NM(w, "%s_w2"), ENC_F, ENC_D,
			   expose, &wseed);
		onnxb_node(b, "Add", NM(a, "%s_ln1,%s_f2", p), NM(o, "%s_res2"));
		if (l == ENC_LAYERS - 1)
			snprintf(o, sizeof(o), "y");
		else
			NM(o, "%s_out");
		enc_norm(b, NM(a, "%s_res2"), o, &wseed);
		snprintf(h, sizeof(h), "%s", o);
#undef NM
	}
	return onnxb_finish(b, len);
}

Test(fuse_encoder, a_bert_like_encoder_fuses_and_matches_the_unfused_graph)
{
	static const char *const names[2] = { "x", "mask" };
	unsigned seed = 47u ^ (unsigned)getpid();
	size_t flen, plen;
	uint8_t *fused = enc_model(false, 5, &flen);
	uint8_t *plain = enc_model(true, 5, &plen);
	int64_t batches[2] = { 3, 1 }, r, j;
	char what[64];
	int k;

	/* Per layer: Q, K, V, the output projection and the two
	 * feed-forward Linears (the first with its GELU; the output projection
	 * and the second taking the residual Adds after them as their fourth
	 * input) and one Attention that absorbed the four Transposes. */
	cr_assert_eq(op_count(fused, flen, "MatMulBias"), 6 * ENC_LAYERS);
	cr_assert_eq(op_count(fused, flen, "Add"), 0, "a residual Add was left");
	cr_assert_eq(op_count(plain, plen, "Add"), 10 * ENC_LAYERS);
	cr_assert_eq(op_count(fused, flen, "Attention"), ENC_LAYERS);
	cr_assert_eq(op_count(fused, flen, "MatMul"), 0);
	cr_assert_eq(op_count(fused, flen, "Transpose"), 0);
	cr_assert_eq(op_count(fused, flen, "Softmax"), 0);
	cr_assert_eq(op_count(fused, flen, "Erf") + op_count(fused, flen, "Gelu"), 0);
	cr_assert_eq(op_count(plain, plen, "MatMulBias") + op_count(plain, plen, "Attention") +
		     op_count(plain, plen, "Gelu"), 0, "every fusion is blocked");
	cr_assert_eq(op_count(plain, plen, "MatMul"), 8 * ENC_LAYERS);
	for (k = 0; k < 2; k++) {
		int64_t xd[3] = { batches[k], ENC_S, ENC_D }, md[2] = { batches[k], ENC_S };
		struct tensor in[2];

		in[0] = tensor_rand(CEP_DTYPE_FLOAT32, 3, xd, 2.0f, &seed);
		in[1] = (struct tensor){ .dtype = CEP_DTYPE_INT64, .rank = 2,
					 .dims = { md[0], md[1] } };
		in[1].bytes = (size_t)(md[0] * md[1]) * sizeof(int64_t);
		in[1].data = calloc(1, in[1].bytes);
		for (r = 0; r < md[0]; r++) {
			/* Row r keeps its first ENC_S - 2r tokens. */
			for (j = 0; j < ENC_S; j++)
				((int64_t *)in[1].data)[r * ENC_S + j] = j < ENC_S - 2 * r;
		}
		snprintf(what, sizeof(what), "encoder, batch %lld", (long long)batches[k]);
		check_same(what, fused, flen, plain, plen, names, in, 2, 1e-5, 1e-5);
		tensors_free(in, 2);
	}
	free(fused);
	free(plain);
}

/* ------------------------------------------------------- the loader's rule */

Test(fuse_loader, a_model_may_not_use_the_internal_operators)
{
	struct onnxb *b = onnxb_new(17);
	engine_model *m = NULL;
	Onnx__NodeProto *n;
	uint8_t *buf;
	size_t len;

	onnxb_opset(b, "com.cudaep", 1);
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "4,16");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "16,8", NULL);
	onnxb_init(b, "bias", CEP_DTYPE_FLOAT32, "8", NULL);
	n = onnxb_node(b, "MatMulBias", "x,w,bias", "y");
	free(n->domain);
	n->domain = strdup("com.cudaep");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), CEP_EMODEL);
	cr_assert_null(m);
	cr_assert_str_eq(cep_last_error(), "node 0 'y' (op MatMulBias, domain com.cudaep, opset 1): "
					   "MatMulBias of domain com.cudaep is internal to cudaep "
					   "(made by its optimizer); a model may not use it");
	free(buf);
}
