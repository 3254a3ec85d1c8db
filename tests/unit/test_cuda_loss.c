/*
 * test_cuda_loss.c — the CUDA kernels of kernels/cuda/loss.c against the
 * reference kernels of kernels/cpu/loss.c on fresh random data, printing
 * the worst absolute and relative error of each case:
 * SoftmaxCrossEntropyLoss (a block per position for contiguous classes, a
 * thread per position otherwise) and NegativeLogLikelihoodLoss, for every
 * reduction, with and without weights, ignore_index and log_prob, int32
 * and int64 labels, in float32, float16 and bfloat16 where each opset
 * takes them; a bad label failing the run with the operator named.
 *
 * Everywhere: the registry gives both losses a CUDA kernel for each type
 * and opset the host has one for. On a GPU machine with CUDAEP_TEST_GPU=1
 * the rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

static const char *const loss_ops[] = { "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss" };

static const cep_dtype loss_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_LOSS_TYPES (sizeof(loss_types) / sizeof(loss_types[0]))
#define N_FLOAT_TYPES 3 /* the first three of loss_types */

/* ------------------------------------------------------------ everywhere */

Test(cuda_loss, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	size_t i, t;
	int opset, checked = 0;

	for (i = 0; i < 2; i++) {
		for (opset = 7; opset <= OP_OPSET_MAX; opset++) {
			if (op_schema_find("", loss_ops[i], opset, &s) != 0)
				continue;
			for (t = 0; t < N_LOSS_TYPES; t++) {
				bool has_host = op_kernel_find(s, opset, BACKEND_HOST, loss_types[t],
							       &host) == 0;
				bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, loss_types[t],
							      &dev) == 0;

				cr_assert_eq(has_dev, has_host, "%s/%d %s: host %d, cuda %d",
					     loss_ops[i], opset, cep_dtype_name(loss_types[t]),
					     has_host, has_dev);
				checked += has_dev;
			}
		}
	}
	cr_assert_gt(checked, 80);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_loss, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

#define LOSS_IGNORE (-100) /* PyTorch's default ignore_index */

/* Labels of ltype for scores of shape x (the shape without dimension 1),
 * each in [0, C), about one in eight LOSS_IGNORE when ignore is set. */
static struct op_tensor labels_for(cep_dtype ltype, const struct op_tensor *x, bool ignore,
				   unsigned *seed)
{
	struct op_tensor t = { .dtype = ltype, .rank = x->rank - 1 };
	int64_t n, i;
	int d;

	t.dims[0] = x->dims[0];
	for (d = 2; d < x->rank; d++)
		t.dims[d - 1] = x->dims[d];
	n = op_dims_product(&t, 0, t.rank);
	t.data = calloc(1, n ? op_tensor_bytes(&t) : 1);
	cr_assert_not_null(t.data);
	for (i = 0; i < n; i++) {
		unsigned r = rnd(seed);

		cpu_store_i(t.data, ltype, i,
			    ignore && r % 8 == 0 ? LOSS_IGNORE : (int64_t)(r % (unsigned)x->dims[1]));
	}
	return t;
}

/* Makes the weights of t positive, in [0.25, 4.25]: a mean's divisor far
 * from 0, where the order of the sums would decide its sign. */
static void positive(struct op_tensor *t)
{
	int64_t n = op_dims_product(t, 0, t->rank), i;

	for (i = 0; i < n; i++)
		cpu_store_f(t->data, t->dtype, i, 0.25f + fabsf(cpu_load_f(t->data, t->dtype, i)));
}

Test(gpu_loss, both_losses_every_reduction_option_and_type)
{
	static const char *const shapes[] = {
		"64,10", "8,1000", "3,5,4", "2,3,4,5", "4,7,1", "2,32000", "16,3,17",
	};
	static const char *const reds[3] = { "none", "sum", "mean" };
	static const cep_dtype ltypes[2] = { CEP_DTYPE_INT64, CEP_DTYPE_INT32 };
	unsigned seed = 61u ^ (unsigned)getpid();
	struct op_attr attrs[2] = {
		{ .name = "reduction", .type = OP_ATTR_STRING },
		{ .name = "ignore_index", .type = OP_ATTR_INT, .i = LOSS_IGNORE },
	};
	struct op_tensor in[3];
	char label[200];
	int64_t bad = 0;
	size_t o, s, t, r;
	int w, ii, lp, lt;

	GPU_REQUIRE();
	for (o = 0; o < 2; o++) {
		bool sce = o == 0;

		for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
			for (t = 0; t < N_FLOAT_TYPES; t++) {
				/* bfloat16 from 13 (SCE) and 22 (NLL); the first opset else. */
				int opset = loss_types[t] == CEP_DTYPE_BFLOAT16 ? (sce ? 13 : 22) : 12;

				for (r = 0; r < 3; r++) {
					for (w = 0; w < 2; w++) {
						for (ii = 0; ii < 2; ii++) {
							lt = (int)((s + r + (size_t)w) % 2);
							attrs[0].s = reds[r];
							in[0] = host_tensor(loss_types[t], shapes[s], &seed,
									    s == 0 && r == 0);
							in[1] = labels_for(ltypes[lt], &in[0], ii, &seed);
							if (w) {
								char cs[24];

								snprintf(cs, sizeof(cs), "%lld",
									 (long long)in[0].dims[1]);
								in[2] = host_tensor(loss_types[t], cs, &seed, false);
								positive(&in[2]);
							}
							for (lp = 0; lp < (sce ? 2 : 1); lp++) {
								snprintf(label, sizeof(label),
									 "%s [%s] %s%s%s%s %s",
									 cep_dtype_name(loss_types[t]),
									 shapes[s], reds[r],
									 w ? " weights" : "",
									 ii ? " ignore" : "",
									 lp ? " log_prob" : "",
									 cep_dtype_name(ltypes[lt]));
								bad += gpu_check_absent(loss_ops[o], opset,
											attrs, 1 + ii, in,
											2 + w, sce ? 2 : 1,
											sce && !lp ? 1 : -1,
											label);
							}
							free_all(in, 2 + w);
						}
					}
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_loss, a_bad_label_fails_the_run_with_the_op_named)
{
	static const int64_t worse[1] = { 9 };
	unsigned seed = 67u ^ (unsigned)getpid();
	struct op_tensor in[2];
	struct gpu_call d;
	size_t o;

	GPU_REQUIRE();
	for (o = 0; o < 2; o++) {
		char want[120];

		in[0] = host_tensor(CEP_DTYPE_FLOAT32, "4,5", &seed, false);
		in[1] = labels_for(CEP_DTYPE_INT64, &in[0], false, &seed);
		gpu_call_make(&d, loss_ops[o], 13, NULL, 0, in, 2, 1, -1);
		cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, worse, sizeof(worse)), 0);
		cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
			     cep_last_error());
		cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
		snprintf(want, sizeof(want), "%s: index 9 is out of range for dimension 1 of size 5",
			 loss_ops[o]);
		cr_assert_str_eq(cep_last_error(), want);
		printf("  a bad label: %s\n", cep_last_error());
		cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), &d.call);
		/* The record was cleared: the stream carries on. */
		cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, in[1].data, sizeof(int64_t)), 0);
		cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
		cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
		gpu_call_free(&d);
		free_all(in, 2);
	}
}
