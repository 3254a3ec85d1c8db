/*
 * test_ops_loss.c — the losses of kernels/cpu/loss.c:
 * NegativeLogLikelihoodLoss with the three examples of its specification
 * and SoftmaxCrossEntropyLoss against the formula computed here, for every
 * reduction, with and without weights and ignore_index (negative too), for
 * scores of rank 2 to 5, int32 and int64 labels, with and without
 * log_prob, and in float16 and bfloat16 where each opset allows them; a
 * label out of range failing the run with the operator named; the
 * inference of the outputs' shapes, symbolic dims included, and the
 * refusals of bad types, shapes and attributes; both in fp16 and bf16
 * sessions, computed in half with their weights, matching float32.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "kernels/cpu/cpu.h"
#include "kernels/registry.h"
#include "tests/unit/ops_harness.h"
#include "tests/unit/prec_models.h"

/* ------------------------------------------------------------------ helpers */

static double at(const struct op_tensor *t, int64_t i)
{
	return cpu_load_f(t->data, t->dtype, i);
}

static void outs_free(struct op_tensor *out, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(out[i].data);
}

/*
 * The loss of scores x (n, c, inner) and labels: the log-softmax along the
 * classes when sce (into lp, of x's size), else x itself; per position
 * -logp[label] * w[label] (w NULL: 1), nothing for label == ignore when
 * has_ignore. Fills loss (n * inner) and returns the sum; *wsum gets the
 * sum of the weights.
 */
static double ref_loss(const float *x, const int64_t *label, const float *w, int n, int c,
		       int inner, bool sce, bool has_ignore, int64_t ignore, double *lp,
		       double *loss, double *wsum)
{
	double sum = 0;
	int i, d, k;

	*wsum = 0;
	for (i = 0; i < n; i++) {
		for (d = 0; d < inner; d++) {
			int base = i * c * inner + d;
			double mx = -INFINITY, s = 0, lse = 0;
			int64_t l = label[i * inner + d];

			if (sce) {
				for (k = 0; k < c; k++)
					mx = fmax(mx, x[base + k * inner]);
				for (k = 0; k < c; k++)
					s += exp(x[base + k * inner] - mx);
				lse = mx + log(s);
				for (k = 0; k < c; k++)
					lp[base + k * inner] = x[base + k * inner] - lse;
			}
			if (has_ignore && l == ignore) {
				loss[i * inner + d] = 0;
				continue;
			}
			loss[i * inner + d] = -(x[base + l * inner] - lse) * (w ? w[l] : 1.0);
			sum += loss[i * inner + d];
			*wsum += w ? w[l] : 1.0;
		}
	}
	return sum;
}

/* ---------------------------------------------------- NegativeLogLikelihoodLoss */

static float nll_x[12] = { 1, 2, 2, 2, 3, 2, 0, 1, 2, 2, 1, 2 };
static int64_t nll_t[4] = { 2, 1, 0, 2 };
static float nll_w[3] = { 0.2f, 0.3f, 0.1f };

Test(ops_loss, nll_gives_the_specifications_examples)
{
	int64_t dx[3] = { 2, 3, 2 }, dt[2] = { 2, 2 }, dw[1] = { 3 };
	struct op_attr none[1] = { oh_string("reduction", "none") };
	struct op_attr sum[1] = { oh_string("reduction", "sum") };
	struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, nll_x),
				   oh_tensor(CEP_DTYPE_INT64, 2, dt, nll_t),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, dw, nll_w) };
	static const float want1[4] = { -3, -2, -0.0f, -2 };
	struct op_tensor out;
	int i;

	/* Example 1: "none", no weights. */
	cr_assert_eq(oh_run("NegativeLogLikelihoodLoss", 13, none, 1, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], 2);
	for (i = 0; i < 4; i++)
		cr_assert_float_eq(((float *)out.data)[i], want1[i], 0);
	free(out.data);
	/* Example 2: weighted, summed. */
	cr_assert_eq(oh_run("NegativeLogLikelihoodLoss", 12, sum, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 0);
	cr_assert_float_eq(((float *)out.data)[0], -1.1f, 1e-6);
	free(out.data);
	/* Example 3: weighted, the mean (the default): -1.1 / 0.7. */
	cr_assert_eq(oh_run("NegativeLogLikelihoodLoss", 22, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], -1.1 / 0.7, 1e-6);
	free(out.data);
}

/* ignore_index leaves positions out of the loss and the mean's divisor,
 * also when it is negative and with no weights; a label outside [0, C)
 * that is not ignore_index fails the run. */
Test(ops_loss, nll_ignore_index_and_bad_labels)
{
	int64_t dx[3] = { 2, 3, 2 }, dt[2] = { 2, 2 }, dw[1] = { 3 };
	int64_t t[4] = { 2, -1, 0, 2 };
	int32_t t32[4] = { 2, 1, 0, 2 };
	struct op_attr ii[2] = { oh_int("ignore_index", -1), oh_string("reduction", "mean") };
	struct op_attr two[1] = { oh_int("ignore_index", 2) };
	struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, nll_x),
				   oh_tensor(CEP_DTYPE_INT64, 2, dt, t),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, dw, nll_w) };
	struct op_tensor out;

	/* Losses -3, (ignored), -0, -2: a mean over three. */
	cr_assert_eq(oh_run("NegativeLogLikelihoodLoss", 13, ii, 2, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], -5.0 / 3, 1e-6);
	free(out.data);
	/* Weighted: (-0.3 - 0 - 0.2) / (0.1 + 0.2 + 0.1). */
	cr_assert_eq(oh_run("NegativeLogLikelihoodLoss", 13, ii, 2, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], -0.5 / 0.4, 1e-6);
	free(out.data);
	/* int32 labels; class 2 ignored leaves -2 and -0 over 2. */
	in[1] = oh_tensor(CEP_DTYPE_INT32, 2, dt, t32);
	cr_assert_eq(oh_run("NegativeLogLikelihoodLoss", 13, two, 1, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], -1.0, 1e-6);
	free(out.data);
	/* -1 is not ignored without the attribute. */
	in[1] = oh_tensor(CEP_DTYPE_INT64, 2, dt, t);
	cr_assert_eq(oh_run("NegativeLogLikelihoodLoss", 13, NULL, 0, in, 2, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(),
			 "NegativeLogLikelihoodLoss: index -1 is out of range for dimension 1 of size 3");
	t[1] = 3;
	cr_assert_eq(oh_run("NegativeLogLikelihoodLoss", 13, ii, 2, in, 2, &out, 1), CEP_EINVAL);
	cr_assert(strstr(cep_last_error(), "index 3 is out of range"), "%s", cep_last_error());
}

/* -------------------------------------------------- SoftmaxCrossEntropyLoss */

Test(ops_loss, sce_gives_the_onnx_example_value)
{
	/* ONNX's test_sce_mean_weight_ii: N 3, C 5, ignore_index 0. */
	static const float x[15] = {
		0.5488135f, 0.71518934f, 0.60276335f, 0.5448832f, 0.4236548f,
		0.6458941f, 0.4375872f, 0.89177300f, 0.9636627f, 0.3834415f,
		0.7917250f, 0.5288949f, 0.56804454f, 0.9255966f, 0.07103606f,
	};
	static const int64_t l[3] = { 0, 4, 3 };
	static const float w[5] = { 0.9f, 0.7f, 0.8f, 0.9f, 0.9f };
	int64_t dx[2] = { 3, 5 }, dl[1] = { 3 }, dw[1] = { 5 };
	struct op_attr a[1] = { oh_int("ignore_index", 0) };
	struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_FLOAT32, 2, dx, (void *)x),
				   oh_tensor(CEP_DTYPE_INT64, 1, dl, (void *)l),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, dw, (void *)w) };
	struct op_tensor out;

	cr_assert_eq(oh_run("SoftmaxCrossEntropyLoss", 12, a, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 0);
	cr_assert_float_eq(((float *)out.data)[0], 1.6091880f, 1e-6);
	free(out.data);
}

/* One sweep: scores of dims (n, c, rest...), every reduction, weights or
 * not, ignore_index or not, log_prob or not, in dtype at opset. */
static void sce_sweep(int opset, cep_dtype dtype, cep_dtype ltype, int rank, const int64_t *dims,
		      double tol)
{
	static const char *const reds[3] = { "none", "sum", "mean" };
	int64_t numel = 1, positions, i;
	int n = (int)dims[0], c = (int)dims[1], inner = 1, r, wi, ii, nout;
	float *x, *w;
	int64_t *l;
	void *xd, *wd, *ld;
	double *lp, *loss, sum, wsum;
	int64_t dl[CEP_MAX_RANK], dw[1] = { dims[1] };
	unsigned seed = 23 + (unsigned)rank;

	for (r = 0; r < rank; r++)
		numel *= dims[r];
	for (r = 2; r < rank; r++)
		inner *= (int)dims[r];
	positions = (int64_t)n * inner;
	dl[0] = dims[0];
	for (r = 2; r < rank; r++)
		dl[r - 1] = dims[r];
	x = malloc(sizeof(float) * (size_t)numel);
	xd = malloc(sizeof(float) * (size_t)numel);
	w = malloc(sizeof(float) * (size_t)c);
	wd = malloc(sizeof(float) * (size_t)c);
	l = malloc(sizeof(int64_t) * (size_t)positions);
	ld = malloc(sizeof(int64_t) * (size_t)positions);
	lp = malloc(sizeof(double) * (size_t)numel);
	loss = malloc(sizeof(double) * (size_t)positions);
	for (i = 0; i < numel; i++) {
		/* Rounded to the type first, so the formula sees what the kernel does. */
		cpu_store_f(xd, dtype, i, 3.0f * oh_rand(&seed));
		x[i] = cpu_load_f(xd, dtype, i);
	}
	for (i = 0; i < c; i++) {
		cpu_store_f(wd, dtype, i, 0.5f + oh_rand(&seed) / 4);
		w[i] = cpu_load_f(wd, dtype, i);
	}
	for (i = 0; i < positions; i++) {
		seed = seed * 1103515245u + 12345u;
		l[i] = (seed >> 8) % (unsigned)c;
		cpu_store_i(ld, ltype, i, l[i]);
	}
	for (r = 0; r < 3; r++) {
		for (wi = 0; wi < 2; wi++) {
			for (ii = 0; ii < 2; ii++) {
				for (nout = 1; nout <= 2; nout++) {
					struct op_attr a[2] = { oh_string("reduction", reds[r]),
								oh_int("ignore_index", l[0]) };
					struct op_tensor in[3] = {
						oh_tensor(dtype, rank, dims, xd),
						oh_tensor(ltype, rank - 1, dl, ld),
						oh_tensor(dtype, 1, dw, wd),
					};
					struct op_tensor out[2];

					sum = ref_loss(x, l, wi ? w : NULL, n, c, inner, true, ii, l[0], lp,
						       loss, &wsum);
					cr_assert_eq(oh_run("SoftmaxCrossEntropyLoss", opset, a, 1 + ii, in,
							    2 + wi, out, nout), 0, "%s", cep_last_error());
					cr_assert_eq(out[0].dtype, dtype);
					if (r == 0) {
						cr_assert_eq(out[0].rank, rank - 1);
						for (i = 0; i < positions; i++)
							cr_assert_float_eq(at(&out[0], i), loss[i],
									   tol * (1 + fabs(loss[i])),
									   "%s position %lld", reds[r],
									   (long long)i);
					} else {
						double want = r == 1 ? sum : sum / wsum;

						cr_assert_eq(out[0].rank, 0);
						cr_assert_float_eq(at(&out[0], 0), want, tol * (1 + fabs(want)),
								   "%s weights %d ignore %d", reds[r], wi,
								   ii);
					}
					if (nout == 2) {
						cr_assert_eq(out[1].rank, rank);
						for (i = 0; i < numel; i++)
							cr_assert_float_eq(at(&out[1], i), lp[i],
									   tol * (1 + fabs(lp[i])));
					}
					outs_free(out, nout);
				}
			}
		}
	}
	free(x);
	free(xd);
	free(w);
	free(wd);
	free(l);
	free(ld);
	free(lp);
	free(loss);
}

Test(ops_loss, sce_every_reduction_rank_and_option)
{
	static const int64_t d2[2] = { 5, 7 }, d3[3] = { 3, 4, 5 }, d5[5] = { 2, 3, 2, 3, 2 };

	sce_sweep(12, CEP_DTYPE_FLOAT32, CEP_DTYPE_INT64, 2, d2, 1e-6);
	sce_sweep(13, CEP_DTYPE_FLOAT32, CEP_DTYPE_INT32, 3, d3, 1e-6);
	sce_sweep(13, CEP_DTYPE_FLOAT32, CEP_DTYPE_INT64, 5, d5, 1e-6);
}

Test(ops_loss, sce_in_half_types)
{
	static const int64_t d3[3] = { 3, 4, 5 };
	int64_t dx[2] = { 1, 2 }, dl[1] = { 1 };
	uint16_t x[2] = { 0, 0 };
	int64_t l[1] = { 0 };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_BFLOAT16, 2, dx, x),
				   oh_tensor(CEP_DTYPE_INT64, 1, dl, l) };
	struct op_tensor out;

	sce_sweep(12, CEP_DTYPE_FLOAT16, CEP_DTYPE_INT64, 3, d3, 2e-3);
	sce_sweep(13, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT32, 3, d3, 1.6e-2);
	cr_assert_eq(oh_run("SoftmaxCrossEntropyLoss", 12, NULL, 0, in, 2, &out, 1), CEP_EUNSUPPORTED,
		     "bfloat16 came at opset 13");
	cr_assert_eq(oh_run("NegativeLogLikelihoodLoss", 21, NULL, 0, in, 2, &out, 1),
		     CEP_EUNSUPPORTED, "bfloat16 came at opset 22");
	cr_assert_eq(oh_run("NegativeLogLikelihoodLoss", 22, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(at(&out, 0), 0.0);
	free(out.data);
	cr_assert_eq(oh_run("SoftmaxCrossEntropyLoss", 11, NULL, 0, in, 2, &out, 1), CEP_EUNSUPPORTED,
		     "the losses are in ai.onnx from 12");
}

/* Infinite and NaN scores go through as LogSoftmax's do; no positions at
 * all make a sum of 0 and a mean of 0/0. */
Test(ops_loss, sce_specials_and_empty)
{
	float x[6] = { -INFINITY, 0, 1, NAN, 2, 3 };
	int64_t l[2] = { 0, 1 };
	int64_t dx[2] = { 2, 3 }, dl[1] = { 2 }, d0[2] = { 0, 3 }, dl0[1] = { 0 };
	struct op_attr none[1] = { oh_string("reduction", "none") };
	struct op_attr sum[1] = { oh_string("reduction", "sum") };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 2, dx, x),
				   oh_tensor(CEP_DTYPE_INT64, 1, dl, l) };
	struct op_tensor out[2];

	cr_assert_eq(oh_run("SoftmaxCrossEntropyLoss", 13, none, 1, in, 2, out, 2), 0, "%s",
		     cep_last_error());
	cr_assert(isinf(((float *)out[0].data)[0]) && ((float *)out[0].data)[0] > 0);
	cr_assert(isnan(((float *)out[0].data)[1]));
	cr_assert(isinf(((float *)out[1].data)[0]));
	cr_assert_float_eq(((float *)out[1].data)[1], -log(1 + exp(1.0)), 1e-6);
	outs_free(out, 2);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, d0, x);
	in[1] = oh_tensor(CEP_DTYPE_INT64, 1, dl0, l);
	cr_assert_eq(oh_run("SoftmaxCrossEntropyLoss", 13, sum, 1, in, 2, out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(((float *)out[0].data)[0], 0.0f);
	free(out[0].data);
	cr_assert_eq(oh_run("SoftmaxCrossEntropyLoss", 13, NULL, 0, in, 2, out, 1), 0, "%s",
		     cep_last_error());
	cr_assert(isnan(((float *)out[0].data)[0]));
	free(out[0].data);
}

/* ---------------------------------------------------------------- inference */

Test(ops_loss, inference_with_symbols)
{
	int64_t dx[3] = { OP_DIM_SYM(0), 5, OP_DIM_SYM(1) }, dl[2] = { 4, OP_DIM_SYM(1) };
	struct op_attr none[1] = { oh_string("reduction", "none") };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT16, 3, dx, NULL),
				   oh_tensor(CEP_DTYPE_INT32, 2, dl, NULL) };
	struct op_tensor out[2];

	/* The fixed dim of either input wins. */
	cr_assert_eq(oh_infer("SoftmaxCrossEntropyLoss", 13, none, 1, in, 2, out, 2), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out[0].dtype, CEP_DTYPE_FLOAT16);
	cr_assert_eq(out[0].rank, 2);
	cr_assert_eq(out[0].dims[0], 4);
	cr_assert_eq(out[0].dims[1], OP_DIM_SYM(1));
	cr_assert_eq(out[1].rank, 3);
	cr_assert_eq(out[1].dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out[1].dims[1], 5);
	cr_assert_eq(out[1].dtype, CEP_DTYPE_FLOAT16);
	/* Labels of unknown shape: the scores' without dimension 1. */
	in[1].rank = -1;
	cr_assert_eq(oh_infer("NegativeLogLikelihoodLoss", 13, none, 1, in, 2, out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out[0].rank, 2);
	cr_assert_eq(out[0].dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out[0].dims[1], OP_DIM_SYM(1));
	/* Reduced: a scalar. */
	cr_assert_eq(oh_infer("NegativeLogLikelihoodLoss", 13, NULL, 0, in, 2, out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out[0].rank, 0);
}

Test(ops_loss, refusals)
{
	int64_t dx[3] = { 2, 3, 4 }, dl[2] = { 2, 4 }, dbad[2] = { 2, 3 }, dw[1] = { 3 };
	int64_t dw4[1] = { 4 }, d1[1] = { 2 };
	struct op_attr avg[1] = { oh_string("reduction", "avg") };
	struct op_attr ii[1] = { oh_float("ignore_index", 1.0f) };
	struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, NULL),
				   oh_tensor(CEP_DTYPE_INT64, 2, dl, NULL),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, dw, NULL) };
	struct op_tensor out[2];

	cr_assert_eq(oh_infer("SoftmaxCrossEntropyLoss", 13, NULL, 0, in, 3, out, 2), 0, "%s",
		     cep_last_error());
	cr_assert_eq(oh_infer("SoftmaxCrossEntropyLoss", 13, avg, 1, in, 3, out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "reduction \"avg\" is not none, sum or mean"), "%s",
		  cep_last_error());
	cr_assert_eq(oh_infer("SoftmaxCrossEntropyLoss", 13, ii, 1, in, 3, out, 1), CEP_EMODEL);
	in[1].dtype = CEP_DTYPE_FLOAT32;
	cr_assert_eq(oh_infer("NegativeLogLikelihoodLoss", 13, NULL, 0, in, 3, out, 1), CEP_EDTYPE);
	cr_assert(strstr(cep_last_error(), "target is float32, not int32 or int64"), "%s",
		  cep_last_error());
	in[1].dtype = CEP_DTYPE_INT64;
	in[0].dtype = CEP_DTYPE_INT64;
	cr_assert_eq(oh_infer("SoftmaxCrossEntropyLoss", 13, NULL, 0, in, 2, out, 1), CEP_EDTYPE);
	in[0].dtype = CEP_DTYPE_FLOAT32;
	in[2].dtype = CEP_DTYPE_FLOAT16;
	cr_assert_eq(oh_infer("SoftmaxCrossEntropyLoss", 13, NULL, 0, in, 3, out, 1), CEP_EDTYPE);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, dw4, NULL);
	cr_assert_eq(oh_infer("SoftmaxCrossEntropyLoss", 13, NULL, 0, in, 3, out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "weights must have shape [C]"), "%s", cep_last_error());
	in[1] = oh_tensor(CEP_DTYPE_INT64, 2, dbad, NULL);
	cr_assert_eq(oh_infer("NegativeLogLikelihoodLoss", 13, NULL, 0, in, 2, out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "target of shape [2,3] do not fit input of shape [2,3,4]"),
		  "%s", cep_last_error());
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d1, NULL);
	in[1] = oh_tensor(CEP_DTYPE_INT64, 1, d1, NULL);
	cr_assert_eq(oh_infer("NegativeLogLikelihoodLoss", 13, NULL, 0, in, 2, out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "input has rank 1"), "%s", cep_last_error());
}

/* ------------------------------------------------------------ half sessions */

/* scores [6, 10] and labels [6] -> SoftmaxCrossEntropyLoss (weighted
 * mean, log_prob) and NegativeLogLikelihoodLoss of the log_prob (sum):
 * every node computes in the session's half type, as LayerNormalization
 * does, its weights converted to half with it, and the float32 outputs
 * match the float32 session's. */
Test(ops_loss, a_half_session_computes_them_in_half)
{
	static const int64_t sd[2] = { 6, 10 }, ld[1] = { 6 };
	unsigned seed = 31u ^ (unsigned)getpid();
	struct pm_model pm = { .what = "losses" };
	struct onnxb *b = onnxb_new(22);
	struct engine_model_options mo = { .backend = BACKEND_HOST };
	struct engine_precision_stats st;
	struct backend *be;
	engine_model *m;
	cep_precision p;

	onnxb_input(b, "scores", CEP_DTYPE_FLOAT32, "n,10");
	onnxb_input(b, "labels", CEP_DTYPE_INT64, "n");
	onnxb_output(b, "loss", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "log_prob", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "nll", CEP_DTYPE_FLOAT32, NULL);
	pm_init(b, "w", "10", 10, 0.5f, 1.5f, &seed);
	onnxb_node(b, "SoftmaxCrossEntropyLoss", "scores,labels,w", "loss,log_prob");
	onnxb_attr_string(onnxb_node(b, "NegativeLogLikelihoodLoss", "log_prob,labels", "nll"),
			  "reduction", "sum");
	pm.bytes = onnxb_finish(b, &pm.len);
	pm_input_add(&pm, "scores", CEP_DTYPE_FLOAT32, 2, sd, 0);
	pm_input_add(&pm, "labels", CEP_DTYPE_INT64, 1, ld, 9);
	pm.out[pm.n_out++] = "loss";
	pm.out[pm.n_out++] = "log_prob";
	pm.out[pm.n_out++] = "nll";
	cr_assert_eq(backend_host_new(0, &be), 0, "%s", cep_last_error());
	for (p = CEP_PRECISION_FP16; p <= CEP_PRECISION_BF16; p++) {
		mo.precision = p;
		cr_assert_eq(engine_model_load_as(pm.bytes, pm.len, -1, &mo, &m), 0, "%s",
			     cep_last_error());
		engine_model_precision_stats(m, &st);
		engine_model_unref(m);
		cr_assert_eq(st.float_nodes, 0, "%s", st.first_float);
		cr_assert_eq(st.half_nodes, 2);
		pm_compare(&pm, be, p, be, &seed, 2, 1e-2);
	}
	backend_free(be);
	pm_model_free(&pm);
}
