/*
 * test_cuda_quant.c — the CUDA kernels of the quantized operators
 * (kernels/cuda/quant.c, qmatmul.c, qconv.c) against the reference kernels
 * of kernels/cpu on the same fresh random data, printing the worst error
 * of each output (the integer outputs must match exactly; the device
 * computes in the host's arithmetic, so the float ones do too):
 *
 *  - QuantizeLinear at each opset that changes it, x of every type it
 *    takes (NaN and infinities among the floats), int8 and uint8 out,
 *    per tensor, per axis and blocked, the division in the scale's type
 *    or the precision attribute's (23);
 *  - DequantizeLinear: int8, uint8 and int32 x, float32, float16 and
 *    bfloat16 scales and output_dtype, each granularity;
 *  - DynamicQuantizeLinear over sizes up to past one block's reach, each
 *    of its two last outputs left out in turn;
 *  - MatMulInteger and QLinearMatMul: every pair of int8 and uint8 (and
 *    output type), broadcast batches, 1-D operands, empty dims, zero
 *    points and scales per tensor, row and column, half scales at 21;
 *  - ConvInteger and QLinearConv: 1-D to 3-D windows with groups,
 *    strides, dilations, pads and auto_pad, per-channel weights, a bias.
 *
 * Everywhere: the registry gives each of them a CUDA kernel for each type
 * and opset the host has one for. On a GPU machine with CUDAEP_TEST_GPU=1
 * the rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

#define NA(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

/* ------------------------------------------------------------ everywhere */

Test(cuda_quant, the_device_covers_what_the_host_covers)
{
	static const char *const ops[] = { "QuantizeLinear", "DequantizeLinear",
					   "DynamicQuantizeLinear", "MatMulInteger",
					   "QLinearMatMul", "ConvInteger", "QLinearConv" };
	/* Kernels per op over opsets 10..OP_OPSET_MAX (types picked by x or
	 * a): QuantizeLinear 2 types at 10-18 and 4 from 19; DequantizeLinear
	 * 3; DynamicQuantizeLinear 1 from 11; the products 2 each. */
	const int want = (9 * 2 + (OP_OPSET_MAX - 18) * 4) + (OP_OPSET_MAX - 9) * 3 +
			 (OP_OPSET_MAX - 10) + 4 * (OP_OPSET_MAX - 9) * 2;
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, checked = 0, o;
	size_t t;

	for (o = 0; o < NA(ops); o++) {
		for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
			if (op_schema_find("", ops[o], opset, &s) != 0)
				continue;
			for (t = 0; t < sizeof(all_types) / sizeof(all_types[0]); t++) {
				bool has_host = op_kernel_find(s, opset, BACKEND_HOST, all_types[t],
							       &host) == 0;
				bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, all_types[t],
							      &dev) == 0;

				cr_assert_eq(has_dev, has_host, "%s/%d %s: host %d, cuda %d", ops[o],
					     opset, cep_dtype_name(all_types[t]), has_host, has_dev);
				checked += has_dev;
			}
		}
	}
	cep__clear_error();
	cr_assert_eq(checked, want, "%d kernels, want %d", checked, want);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_quant, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* A tensor of scales of dtype and shape, uniform in [lo, hi). */
static struct op_tensor scales(cep_dtype dtype, const char *shape, float lo, float hi,
			       unsigned *seed)
{
	struct op_tensor t = host_tensor(dtype, shape, seed, false);
	int64_t n = op_dims_product(&t, 0, t.rank), i;

	for (i = 0; i < n; i++)
		cpu_store_f(t.data, dtype, i, lo + (hi - lo) * (float)(rnd(seed) % 65536) / 65536.0f);
	return t;
}

/* One granularity of a Q/DQ case: the shape of x, the attributes and the
 * shape of the scale and zero point. */
struct qcase {
	const char *x, *s;
	int64_t axis, block;  /* block 0: none */
	int since;            /* the first opset that has it */
};

static const struct qcase qcases[] = {
	{ "1000", "", 1, 0, 10 },
	{ "3,70001", "", 1, 0, 10 },
	{ "0,5", "", 1, 0, 10 },
	{ "2,3,4,5", "3", 1, 0, 13 },
	{ "2,3,4,5", "5", -1, 0, 13 },
	{ "257,9", "257", 0, 0, 13 },
	{ "4,10,3", "4,4,3", 1, 3, 21 },
	{ "7,6", "4,6", 0, 2, 21 },
	{ "2,1000", "2,32", -1, 32, 21 },
};

/* The attributes of case q: axis from 13, block_size from 21. */
static int q_attrs(const struct qcase *q, int opset, struct op_attr *at)
{
	int n = 0;

	if (opset >= 13)
		at[n++] = (struct op_attr){ .name = "axis", .type = OP_ATTR_INT, .i = q->axis };
	if (q->block > 0)
		at[n++] = (struct op_attr){ .name = "block_size", .type = OP_ATTR_INT,
					    .i = q->block };
	return n;
}

Test(gpu_quant, quantize_every_type_granularity_and_opset_matches_the_host)
{
	static const int opsets[] = { 10, 13, 19, 21, 23, 25 };
	static const cep_dtype xts[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_INT32, CEP_DTYPE_FLOAT16,
					 CEP_DTYPE_BFLOAT16 };
	static const cep_dtype yts[] = { CEP_DTYPE_INT8, CEP_DTYPE_UINT8 };
	unsigned seed = 211u ^ (unsigned)getpid();
	int64_t bad = 0;
	int o, q, x, y, zp, prec;

	GPU_REQUIRE();
	for (o = 0; o < NA(opsets); o++) {
		for (q = 0; q < NA(qcases); q++) {
			if (opsets[o] < qcases[q].since)
				continue;
			for (x = 0; x < (opsets[o] >= 19 ? 4 : 2); x++) {
				for (y = 0; y < 2; y++) {
					for (zp = 0; zp < 2; zp++) {
						for (prec = 0; prec < (opsets[o] >= 23 ? 3 : 1); prec++) {
							/* Before 23 the scale is float32 (10, 13) or
							 * x's type (19, 21; int32 x: float32 scale
							 * at 10, 13 only); from 23 float16 with
							 * float32 x. */
							cep_dtype st = CEP_DTYPE_FLOAT32;
							struct op_attr at[4];
							struct op_tensor in[3];
							int na = q_attrs(&qcases[q], opsets[o], at);
							char label[160];

							if (opsets[o] >= 19 && opsets[o] < 23)
								st = xts[x];
							else if (opsets[o] >= 23 && xts[x] == CEP_DTYPE_FLOAT32)
								st = CEP_DTYPE_FLOAT16;
							if (prec == 1)
								at[na++] = (struct op_attr){ .name = "precision",
									.type = OP_ATTR_INT, .i = CEP_DTYPE_FLOAT32 };
							if (prec == 2)
								at[na++] = (struct op_attr){ .name = "precision",
									.type = OP_ATTR_INT, .i = CEP_DTYPE_BFLOAT16 };
							if (!zp && opsets[o] >= 21)
								at[na++] = (struct op_attr){ .name = "output_dtype",
									.type = OP_ATTR_INT, .i = yts[y] };
							else if (!zp && y == 0)
								continue;  /* uint8 only, without one */
							in[0] = host_tensor(xts[x], qcases[q].x, &seed, true);
							if (xts[x] == CEP_DTYPE_INT32) {
								/* Around the range, not the whole int32. */
								int64_t n = op_dims_product(&in[0], 0, in[0].rank), i;

								for (i = 0; i < n; i++)
									((int32_t *)in[0].data)[i] =
										(int32_t)(rnd(&seed) % 801) - 400;
							}
							/* An int32 scale (19, 21 with int32 x) of
							 * 1 to 5. */
							in[1] = st == CEP_DTYPE_INT32
								? scales(st, qcases[q].s, 1.0f, 6.0f, &seed)
								: scales(st, qcases[q].s, 0.02f, 0.1f, &seed);
							in[2] = host_tensor(yts[y], qcases[q].s, &seed, false);
							snprintf(label, sizeof(label), "%s [%s] -> %s, scale %s [%s]%s%s",
								 cep_dtype_name(xts[x]), qcases[q].x,
								 cep_dtype_name(yts[y]), cep_dtype_name(st),
								 qcases[q].s, zp ? "" : " no zero point",
								 prec == 1 ? " precision float32" :
								 prec == 2 ? " precision bfloat16" : "");
							bad += gpu_check("QuantizeLinear", opsets[o], at, na, in,
									 zp ? 3 : 2, 1, label);
							free_all(in, 3);
						}
					}
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_quant, dequantize_every_type_granularity_and_opset_matches_the_host)
{
	static const int opsets[] = { 10, 13, 19, 21, 23, 24 };
	static const cep_dtype xts[] = { CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_INT32 };
	static const cep_dtype fts[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16 };
	unsigned seed = 223u ^ (unsigned)getpid();
	int64_t bad = 0;
	int o, q, x, s, out, zp;

	GPU_REQUIRE();
	for (o = 0; o < NA(opsets); o++) {
		for (q = 0; q < NA(qcases); q++) {
			if (opsets[o] < qcases[q].since)
				continue;
			for (x = 0; x < 3; x++) {
				for (s = 0; s < (opsets[o] >= 19 ? 3 : 1); s++) {
					for (out = 0; out < (opsets[o] >= 23 ? 3 : 1); out++) {
						for (zp = 0; zp < 2; zp++) {
							struct op_attr at[4];
							struct op_tensor in[3];
							int na = q_attrs(&qcases[q], opsets[o], at);
							char label[160];

							if (opsets[o] >= 23)
								at[na++] = (struct op_attr){ .name = "output_dtype",
									.type = OP_ATTR_INT, .i = fts[out] };
							in[0] = host_tensor(xts[x], qcases[q].x, &seed, false);
							in[1] = scales(fts[s], qcases[q].s, -2.0f, 2.0f, &seed);
							in[2] = host_tensor(xts[x], qcases[q].s, &seed, false);
							snprintf(label, sizeof(label), "%s [%s], scale %s [%s] -> %s%s",
								 cep_dtype_name(xts[x]), qcases[q].x,
								 cep_dtype_name(fts[s]), qcases[q].s,
								 opsets[o] >= 23 ? cep_dtype_name(fts[out])
										 : cep_dtype_name(fts[s]),
								 zp ? "" : " no zero point");
							bad += gpu_check("DequantizeLinear", opsets[o], at, na, in,
									 zp ? 3 : 2, 1, label);
							free_all(in, 3);
						}
					}
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_quant, dynamic_quantize_matches_the_host)
{
	static const char *const shapes[] = { "0", "1", "7", "1024", "3,1025", "200003" };
	unsigned seed = 227u ^ (unsigned)getpid();
	int64_t bad = 0;
	int s, specials, absent;

	GPU_REQUIRE();
	for (s = 0; s < NA(shapes); s++) {
		for (specials = 0; specials < 2; specials++) {
			for (absent = -1; absent < 3; absent++) {
				struct op_tensor in = host_tensor(CEP_DTYPE_FLOAT32, shapes[s], &seed,
								  specials);
				char label[120];

				if (absent == 0)
					continue;  /* y is always named */
				snprintf(label, sizeof(label), "[%s]%s%s", shapes[s],
					 specials ? " specials" : "",
					 absent == 1 ? ", no y_scale" : absent == 2 ? ", no y_zero_point"
										  : "");
				bad += gpu_check_absent("DynamicQuantizeLinear", 11, NULL, 0, &in, 1, 3,
							absent, label);
				free(in.data);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* ------------------------------------------------- MatMulInteger, QLinearMatMul */

/* Shapes of a, b, a's zero point/scale per row and b's per column. */
struct mmcase {
	const char *a, *b, *arow, *bcol;
};

static const struct mmcase mmcases[] = {
	{ "5,7", "7,3", "5", "3" },
	{ "33,70", "70,45", "33", "45" },
	{ "2,1,17,16", "5,16,18", "2,1,17,1", "5,1,18" },
	{ "16", "16,9", NULL, "9" },
	{ "4,16", "16", "4", NULL },
	{ "3,0", "0,4", "3", "4" },
	{ "0,8", "8,2", NULL, NULL },
	{ "300,600", "600,40", "300", "40" },
};

static cep_dtype t8(int sgn)
{
	return sgn ? CEP_DTYPE_INT8 : CEP_DTYPE_UINT8;
}

Test(gpu_quant, matmulinteger_every_type_pair_and_layout_matches_the_host)
{
	unsigned seed = 229u ^ (unsigned)getpid();
	int64_t bad = 0;
	int c, ta, tb, layout;

	GPU_REQUIRE();
	for (c = 0; c < NA(mmcases); c++) {
		for (ta = 0; ta < 2; ta++) {
			for (tb = 0; tb < 2; tb++) {
				for (layout = 0; layout < 3; layout++) {
					const struct mmcase *m = &mmcases[c];
					struct op_tensor in[4];
					char label[160];

					/* layout 0: none; 1: per tensor; 2: per row and column. */
					in[0] = host_tensor(t8(ta), m->a, &seed, false);
					in[1] = host_tensor(t8(tb), m->b, &seed, false);
					in[2] = host_tensor(t8(ta), layout == 2 && m->arow ? m->arow : "",
							    &seed, false);
					in[3] = host_tensor(t8(tb), layout == 2 && m->bcol ? m->bcol : "",
							    &seed, false);
					snprintf(label, sizeof(label), "%s [%s] x %s [%s]%s",
						 cep_dtype_name(t8(ta)), m->a, cep_dtype_name(t8(tb)), m->b,
						 layout == 0 ? "" : layout == 1 ? " zp per tensor"
										: " zp per row/column");
					bad += gpu_check("MatMulInteger", 10, NULL, 0, in, layout ? 4 : 2, 1,
							 label);
					free_all(in, 4);
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_quant, qlinearmatmul_every_type_layout_and_scale_matches_the_host)
{
	static const cep_dtype sts[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16 };
	unsigned seed = 233u ^ (unsigned)getpid();
	int64_t bad = 0;
	int c, tys, layout, s;

	GPU_REQUIRE();
	for (c = 0; c < NA(mmcases); c++) {
		for (tys = 0; tys < 8; tys++) {
			for (layout = 0; layout < 2; layout++) {
				for (s = 0; s < 3; s++) {
					const struct mmcase *m = &mmcases[c];
					const char *ar = layout && m->arow ? m->arow : "";
					const char *bc = layout && m->bcol ? m->bcol : "";
					int opset = s == 0 && tys % 2 ? 10 : 21;
					struct op_tensor in[8];
					char label[160];

					in[0] = host_tensor(t8(tys & 1), m->a, &seed, false);
					in[1] = scales(sts[s], ar, 0.01f, 0.02f, &seed);
					in[2] = host_tensor(t8(tys & 1), ar, &seed, false);
					in[3] = host_tensor(t8(tys & 2), m->b, &seed, false);
					in[4] = scales(sts[s], bc, 0.01f, 0.02f, &seed);
					in[5] = host_tensor(t8(tys & 2), bc, &seed, false);
					in[6] = scales(sts[s], "", 0.5f, 2.0f, &seed);
					in[7] = host_tensor(t8(tys & 4), "", &seed, false);
					snprintf(label, sizeof(label), "%s [%s] x %s [%s] -> %s, %s scales%s",
						 cep_dtype_name(t8(tys & 1)), m->a,
						 cep_dtype_name(t8(tys & 2)), m->b,
						 cep_dtype_name(t8(tys & 4)), cep_dtype_name(sts[s]),
						 layout ? " per row/column" : "");
					bad += gpu_check("QLinearMatMul", opset, NULL, 0, in, 8, 1, label);
					free_all(in, 8);
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* ------------------------------------------------- ConvInteger, QLinearConv */

/* A convolution: x's and w's shapes and Conv's attributes. */
struct convcase {
	const char *x, *w, *m;   /* m: w's per-channel shape */
	int64_t group;
	int n_ints;
	const char *names[4];
	int64_t ints[4][6];
	int lens[4];
	const char *auto_pad;
};

static const struct convcase convcases[] = {
	{ "2,3,17", "4,3,5", "4", 1, 2, { "strides", "pads" }, { { 2 }, { 1, 3 } }, { 1, 2 }, NULL },
	{ "1,4,9,8", "6,2,3,3", "6", 2, 3, { "strides", "dilations", "pads" },
	  { { 2, 1 }, { 1, 2 }, { 1, 0, 2, 1 } }, { 2, 2, 4 }, NULL },
	{ "2,8,12,12", "8,1,3,3", "8", 8, 0, { NULL }, { { 0 } }, { 0 }, "SAME_UPPER" },
	{ "1,16,20,20", "32,16,3,3", "32", 1, 1, { "pads" }, { { 1, 1, 1, 1 } }, { 4 }, NULL },
	{ "1,2,5,6,7", "3,2,2,3,2", "3", 1, 2, { "strides", "pads" },
	  { { 1, 2, 1 }, { 0, 1, 1, 1, 0, 1 } }, { 3, 6 }, NULL },
	{ "1,3,6,6", "4,3,2,2", "4", 1, 0, { NULL }, { { 0 } }, { 0 }, "SAME_LOWER" },
};

/* The attributes of case c into at; returns their count. */
static int conv_attrs(const struct convcase *c, struct op_attr *at)
{
	int n = 0, i;

	for (i = 0; i < c->n_ints; i++)
		at[n++] = (struct op_attr){ .name = c->names[i], .type = OP_ATTR_INTS,
					    .n = c->lens[i], .ints = c->ints[i] };
	if (c->group > 1)
		at[n++] = (struct op_attr){ .name = "group", .type = OP_ATTR_INT, .i = c->group };
	if (c->auto_pad)
		at[n++] = (struct op_attr){ .name = "auto_pad", .type = OP_ATTR_STRING,
					    .s = c->auto_pad };
	return n;
}

Test(gpu_quant, convinteger_every_geometry_and_type_pair_matches_the_host)
{
	unsigned seed = 239u ^ (unsigned)getpid();
	int64_t bad = 0;
	int c, tx, tw, per;

	GPU_REQUIRE();
	for (c = 0; c < NA(convcases); c++) {
		for (tx = 0; tx < 2; tx++) {
			for (tw = 0; tw < 2; tw++) {
				for (per = 0; per < 3; per++) {
					const struct convcase *k = &convcases[c];
					struct op_attr at[6];
					struct op_tensor in[4];
					int na = conv_attrs(k, at);
					char label[160];

					/* per 0: no zero points; 1: per tensor; 2: w's per channel. */
					in[0] = host_tensor(t8(tx), k->x, &seed, false);
					in[1] = host_tensor(t8(tw), k->w, &seed, false);
					in[2] = host_tensor(t8(tx), "", &seed, false);
					in[3] = host_tensor(t8(tw), per == 2 ? k->m : "", &seed, false);
					snprintf(label, sizeof(label), "%s [%s] * %s [%s]%s",
						 cep_dtype_name(t8(tx)), k->x, cep_dtype_name(t8(tw)), k->w,
						 per == 0 ? "" : per == 1 ? " zp" : " zp per channel");
					bad += gpu_check("ConvInteger", 10, at, na, in, per ? 4 : 2, 1, label);
					free_all(in, 4);
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_quant, qlinearconv_every_geometry_type_and_bias_matches_the_host)
{
	unsigned seed = 241u ^ (unsigned)getpid();
	int64_t bad = 0;
	int c, tys, per, withb;

	GPU_REQUIRE();
	for (c = 0; c < NA(convcases); c++) {
		for (tys = 0; tys < 8; tys++) {
			for (per = 0; per < 2; per++) {
				for (withb = 0; withb < 2; withb++) {
					const struct convcase *k = &convcases[c];
					const char *wm = per ? k->m : "";
					struct op_attr at[6];
					struct op_tensor in[9];
					int na = conv_attrs(k, at);
					char label[160];

					in[0] = host_tensor(t8(tys & 1), k->x, &seed, false);
					in[1] = scales(CEP_DTYPE_FLOAT32, "", 0.01f, 0.02f, &seed);
					in[2] = host_tensor(t8(tys & 1), "", &seed, false);
					in[3] = host_tensor(t8(tys & 2), k->w, &seed, false);
					in[4] = scales(CEP_DTYPE_FLOAT32, wm, 0.01f, 0.02f, &seed);
					in[5] = host_tensor(t8(tys & 2), wm, &seed, false);
					in[6] = scales(CEP_DTYPE_FLOAT32, "", 0.5f, 4.0f, &seed);
					in[7] = host_tensor(t8(tys & 4), "", &seed, false);
					in[8] = host_tensor(CEP_DTYPE_INT32, k->m, &seed, false);
					{
						int64_t m = in[8].dims[0], i;

						for (i = 0; i < m; i++)
							((int32_t *)in[8].data)[i] =
								(int32_t)(rnd(&seed) % 200001) - 100000;
					}
					snprintf(label, sizeof(label), "%s [%s] * %s [%s] -> %s%s%s",
						 cep_dtype_name(t8(tys & 1)), k->x,
						 cep_dtype_name(t8(tys & 2)), k->w,
						 cep_dtype_name(t8(tys & 4)), per ? " per channel" : "",
						 withb ? " B" : "");
					bad += gpu_check("QLinearConv", 10, at, na, in, withb ? 9 : 8, 1,
							 label);
					free_all(in, 9);
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
