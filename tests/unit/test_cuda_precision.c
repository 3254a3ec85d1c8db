/*
 * test_cuda_precision.c — session precision on the CUDA backend: the MLP,
 * the CNN and the transformer block of prec_models.h run on the device in
 * fp16 and bf16 (graphs converted for the device's kernels) within 1e-2
 * of the host's float32, in tf32 within 1e-3, and in fp32 within 1e-4
 * (relative to each output's norm, printed); a large MatMul shows TF32
 * at work (tf32 off the host by more than fp32 is, and within 1e-3) and
 * that a tf32 GEMM is a cuBLASLt plan of its own; fp16 weights take half
 * the device bytes of float32 ones; long reductions (ReduceSum,
 * ReduceMean, Softmax, LayerNormalization over 4096 elements) in half
 * match, as their kernels accumulate in float32 or wider.
 *
 * A quantized model in fp16 and bf16 gives the host float32 model's
 * integers exactly.
 *
 * Everywhere: the MLP, the transformer and the reductions convert for
 * the device's kernels with every node in half, the quantized model with
 * its quantized operators in float32, and every node a plan launches has
 * a device kernel (the registry alone decides, no device needed). On a
 * GPU machine with CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips,
 * visibly.
 */
#include <time.h>

#include "tests/unit/cuda_util.h"

#include "gpu/cuda/cublaslt.h"
#include "engine/model.h"
#include "engine/precision.h"
#include "tests/unit/prec_models.h"

static unsigned fresh_seed(const char *what)
{
	unsigned seed = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL);

	printf("%s: seed %u\n", what, seed);
	return seed;
}

/* ------------------------------------------------------------ everywhere */

/* Converts pm for the device's kernels in precision p and checks that
 * every node a plan launches (all but Shape and Size, which plans fold)
 * has a device kernel for its types. */
static struct engine_precision_stats converted_for_cuda(const struct pm_model *pm, cep_precision p)
{
	struct engine_precision_stats st;
	struct op_tensor in[8], out[8];
	struct model *m;
	int k, i;

	cr_assert_eq(model_load(pm->bytes, pm->len, -1, &m), 0, "%s", cep_last_error());
	cr_assert_eq(precision_model_convert(m, precision_half_dtype(p), BACKEND_CUDA, &st), 0,
		     "%s", cep_last_error());
	for (k = 0; k < m->g.n_order; k++) {
		const struct graph_node *node = &m->g.nodes[m->g.order[k]];
		const struct op_kernel *kern;

		if (node->schema->flags & OP_SHAPE_ONLY)
			continue;
		cr_assert_leq(node->n_in, 8);
		cr_assert_leq(node->n_out, 8);
		for (i = 0; i < node->n_in; i++) {
			memset(&in[i], 0, sizeof(in[i]));
			if (node->in[i] >= 0)
				in[i] = m->g.values[node->in[i]].t;
		}
		for (i = 0; i < node->n_out; i++) {
			memset(&out[i], 0, sizeof(out[i]));
			if (node->out[i] >= 0)
				out[i] = m->g.values[node->out[i]].t;
		}
		cr_assert_eq(op_kernel_find(node->schema, node->op.opset, BACKEND_CUDA,
					    op_kernel_dtype(node->schema, in, node->n_in, out,
							    node->n_out), &kern), 0,
			     "%s %s: %s", pm->what, precision_name(p), cep_last_error());
	}
	model_free(m);
	return st;
}

Test(cuda_precision, the_models_convert_for_the_device_with_every_node_in_half)
{
	unsigned seed = fresh_seed("convert");
	struct pm_model mlp = pm_mlp(&seed), tf = pm_transformer(&seed), acc = pm_accumulate();
	cep_precision p;

	for (p = CEP_PRECISION_FP16; p <= CEP_PRECISION_BF16; p++) {
		struct engine_precision_stats a = converted_for_cuda(&mlp, p);
		struct engine_precision_stats b = converted_for_cuda(&tf, p);

		cr_assert_eq(converted_for_cuda(&acc, p).float_nodes, 0);
		cr_assert_eq(a.float_nodes, 0, "%s: node %d stays float32 on cuda",
			     precision_name(p), a.first_float_node);
		cr_assert_eq(a.half_nodes, 3);
		cr_assert_eq(b.float_nodes, 0, "%s: node %d stays float32 on cuda",
			     precision_name(p), b.first_float_node);
		cr_assert_eq(b.casts, 2);
	}
	pm_model_free(&mlp);
	pm_model_free(&tf);
	pm_model_free(&acc);
}

/* The quantized model converts with its quantized operators in float32
 * and only its MatMul in half, every node with a device kernel. */
Test(cuda_precision, a_qdq_model_keeps_its_quantized_operators_float32)
{
	unsigned seed = fresh_seed("qdq convert");
	struct pm_model pm = pm_qdq(&seed);
	cep_precision p;

	for (p = CEP_PRECISION_FP16; p <= CEP_PRECISION_BF16; p++) {
		struct engine_precision_stats st = converted_for_cuda(&pm, p);

		cr_assert_eq(st.float_nodes, 3, "%s: QuantizeLinear, DequantizeLinear, "
			     "QLinearMatMul", precision_name(p));
		cr_assert_eq(st.half_nodes, 1, "%s: the MatMul", precision_name(p));
	}
	pm_model_free(&pm);
}

/* ---------------------------------------------------------------- device */

TestSuite(gpu_precision, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

static struct backend *host_ref(void)
{
	struct backend *h;

	cr_assert_eq(backend_host_new(0, &h), 0);
	return h;
}

/* Runs pm on the device in each precision against the host's float32. */
static void every_precision(const struct pm_model *pm, unsigned *seed)
{
	struct backend *h = host_ref();

	cr_assert_gt(pm_compare(pm, gpu_be, CEP_PRECISION_FP16, h, seed, 3, 1e-2), 0.0);
	cr_assert_gt(pm_compare(pm, gpu_be, CEP_PRECISION_BF16, h, seed, 3, 1e-2), 0.0);
	pm_compare(pm, gpu_be, CEP_PRECISION_TF32, h, seed, 3, 1e-3);
	pm_compare(pm, gpu_be, CEP_PRECISION_FP32, h, seed, 3, 1e-4);
	backend_free(h);
}

Test(gpu_precision, an_mlp_in_every_precision_matches_the_host)
{
	unsigned seed = fresh_seed("mlp");
	struct pm_model pm = pm_mlp(&seed);

	GPU_REQUIRE();
	every_precision(&pm, &seed);
	pm_model_free(&pm);
}

Test(gpu_precision, a_transformer_block_in_every_precision_matches_the_host)
{
	unsigned seed = fresh_seed("transformer");
	struct pm_model pm = pm_transformer(&seed);

	GPU_REQUIRE();
	every_precision(&pm, &seed);
	pm_model_free(&pm);
}

Test(gpu_precision, a_cnn_in_every_precision_matches_the_host)
{
	unsigned seed = fresh_seed("cnn");
	struct pm_model pm13, pm22;
	const struct op_schema *s;
	const struct op_kernel *k;
	struct backend *h;

	GPU_REQUIRE();
	cr_assert_eq(op_schema_find("", "Conv", 13, &s), 0);
	if (op_kernel_find(s, 13, BACKEND_CUDA, CEP_DTYPE_FLOAT32, &k) < 0)
		GPU_SKIP("cnn: the cuda backend has no Conv kernel in this build");
	pm13 = pm_cnn(13, &seed);
	pm22 = pm_cnn(22, &seed);
	every_precision(&pm13, &seed);
	h = host_ref();
	cr_assert_gt(pm_compare(&pm22, gpu_be, CEP_PRECISION_BF16, h, &seed, 2, 1e-2), 0.0);
	backend_free(h);
	pm_model_free(&pm13);
	pm_model_free(&pm22);
}

/* fp16 and bf16 sessions of the quantized model on the device give the
 * host float32 model's integers exactly (test_precision.c says why). */
Test(gpu_precision, a_qdq_model_in_half_gives_the_float32_integers)
{
	unsigned seed = fresh_seed("qdq");
	struct pm_model pm = pm_qdq(&seed);
	struct backend *h;

	GPU_REQUIRE();
	h = host_ref();
	cr_assert_gt(pm_qdq_compare(&pm, gpu_be, CEP_PRECISION_FP16, h, &seed, 3), 0.0);
	cr_assert_gt(pm_qdq_compare(&pm, gpu_be, CEP_PRECISION_BF16, h, &seed, 3), 0.0);
	backend_free(h);
	pm_model_free(&pm);
}

Test(gpu_precision, long_reductions_accumulate_in_float32)
{
	struct pm_model pm = pm_accumulate();
	struct backend *h;
	unsigned seed = 1;

	GPU_REQUIRE();
	h = host_ref();
	pm_compare(&pm, gpu_be, CEP_PRECISION_FP16, h, &seed, 1, 1e-2);
	pm_compare(&pm, gpu_be, CEP_PRECISION_BF16, h, &seed, 1, 1e-2);
	backend_free(h);
	pm_model_free(&pm);
}

#define BIG_M 256
#define BIG_K 1024
#define BIG_N 512

/* y = x @ w, x [256, 1024], w [1024, 512] (2 MiB of float32). */
static struct pm_model big_matmul(unsigned *seed)
{
	static const int64_t xd[2] = { BIG_M, BIG_K };
	struct pm_model pm = { .what = "matmul" };
	struct onnxb *b = onnxb_new(13);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "256,1024");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "256,512");
	pm_init(b, "w", "1024,512", (size_t)BIG_K * BIG_N, -1.0f, 1.0f, seed);
	onnxb_node(b, "MatMul", "x,w", "y");
	pm.bytes = onnxb_finish(b, &pm.len);
	pm_input_add(&pm, "x", CEP_DTYPE_FLOAT32, 2, xd, 0);
	pm.out[pm.n_out++] = "y";
	return pm;
}

Test(gpu_precision, tf32_is_used_and_is_a_gemm_plan_of_its_own)
{
	unsigned seed = fresh_seed("tf32");
	struct pm_model pm = big_matmul(&seed);
	struct backend *h = host_ref();
	struct cublaslt *lt;
	size_t plans;
	double e32, etf;

	GPU_REQUIRE();
	cr_assert_eq(cuda_blas_get(gpu_be, &lt), 0, "%s", cep_last_error());
	plans = cublaslt_gemm_count(lt);
	e32 = pm_compare(&pm, gpu_be, CEP_PRECISION_FP32, h, &seed, 1, 1e-4);
	cr_assert_eq(cublaslt_gemm_count(lt), plans + 1);
	etf = pm_compare(&pm, gpu_be, CEP_PRECISION_TF32, h, &seed, 1, 1e-3);
	cr_assert_eq(cublaslt_gemm_count(lt), plans + 2, "the tf32 GEMM got a plan of its own");
	printf("  matmul 256x1024x512: fp32 off by %.3g, tf32 by %.3g\n", e32, etf);
	cr_assert_gt(etf, 1e-5, "tf32 is as exact as float32: TF32 was not used");
	cr_assert_gt(etf, 10.0 * e32);
	backend_free(h);
	pm_model_free(&pm);
}

Test(gpu_precision, fp16_weights_take_half_the_device_bytes)
{
	unsigned seed = fresh_seed("weights");
	struct pm_model pm = big_matmul(&seed);
	struct engine_model_options mo = { .precision = CEP_PRECISION_FP16,
					   .backend = BACKEND_CUDA };
	struct engine_session_options so = { .precision = CEP_PRECISION_FP16 };
	struct engine_stats a, b;
	engine_model *m32, *m16;
	engine_session *s32, *s16;

	GPU_REQUIRE();
	cr_assert_eq(engine_model_load(pm.bytes, pm.len, -1, &m32), 0, "%s", cep_last_error());
	cr_assert_eq(engine_model_load_as(pm.bytes, pm.len, -1, &mo, &m16), 0, "%s",
		     cep_last_error());
	cr_assert_eq(engine_session_new(m32, gpu_be, NULL, &s32), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_new(m16, gpu_be, &so, &s16), 0, "%s", cep_last_error());
	engine_session_stats(s32, &a);
	engine_session_stats(s16, &b);
	cr_assert_eq(a.weight_bytes, sizeof(float) * BIG_K * BIG_N);
	cr_assert_eq(b.weight_bytes * 2, a.weight_bytes);
	engine_session_free(s32);
	engine_session_free(s16);
	engine_model_unref(m32);
	engine_model_unref(m16);
	pm_model_free(&pm);
}
