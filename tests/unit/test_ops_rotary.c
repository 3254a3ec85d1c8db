/*
 * test_ops_rotary.c — RotaryEmbedding (opset 23) of kernels/cpu/rotary.c,
 * called the way the engine calls it (schema inference, then the host
 * kernel through exec_host_eval): rotations worked out by hand (a quarter
 * turn and none, in halves and interleaved, a partial rotary dimension),
 * 3-D input as the 4-D one with its heads moved, caches indexed by
 * (batch, sequence) without position_ids, negative positions counted from
 * the cache's end and one out of range refused at run time; float16 and
 * bfloat16 bit for bit against the ONNX reference implementation (numpy,
 * each product rounded to the type); and the refusals of attributes,
 * shapes and types, each naming the operator. Then onnxruntime's
 * com.microsoft RotaryEmbedding (its input order, a single position
 * offset or one per token, its head-size rules) against the ai.onnx one
 * on the same data, and its refusals; python/tests/test_ms_attention.py
 * compares it with onnxruntime itself.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "engine/exec.h"
#include "kernels/cpu/cpu.h"
#include "kernels/registry.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })

static void outs_free(struct op_tensor *out)
{
	free(out[0].data);
}

/* Rotates x (1 batch, 1 head, 1 position, 4 elements) at position 1 of
 * caches whose row 1 turns pair 0 a quarter and leaves pair 1 alone. */
static void rotate4(float *x, int interleaved, int64_t rot_dim, float *y)
{
	float cosc[4] = { 1, 1, 0, 1 }, sinc[4] = { 0, 0, 1, 0 };
	int64_t pos[1] = { 1 };
	int64_t half = rot_dim ? rot_dim / 2 : 2;
	struct op_tensor in[4] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 1, 4), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, half), cosc),
		oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, half), sinc),
		oh_tensor(CEP_DTYPE_INT64, 2, DIMS(1, 1), pos),
	};
	struct op_attr at[2] = { oh_int("interleaved", interleaved),
				 oh_int("rotary_embedding_dim", rot_dim) };
	struct op_tensor out[1];

	if (half == 1) {
		/* One pair a row: row 1 is the quarter turn. */
		cosc[1] = 0;
		sinc[1] = 1;
	}
	cr_assert_eq(oh_run("RotaryEmbedding", 23, at, 2, in, 4, out, 1), 0, "%s",
		     cep_last_error());
	memcpy(y, out[0].data, 4 * sizeof(float));
	outs_free(out);
}

Test(ops_rotary, rotations_worked_out_by_hand)
{
	float x[4] = { 1, 2, 3, 4 }, y[4];

	/* Halves: pairs (x0, x2) and (x1, x3); the quarter turn maps (a, b)
	 * to (-b, a). */
	rotate4(x, 0, 0, y);
	cr_assert(y[0] == -3 && y[1] == 2 && y[2] == 1 && y[3] == 4, "%g %g %g %g", y[0], y[1],
		  y[2], y[3]);
	/* Interleaved: pairs (x0, x1) and (x2, x3). */
	rotate4(x, 1, 0, y);
	cr_assert(y[0] == -2 && y[1] == 1 && y[2] == 3 && y[3] == 4, "%g %g %g %g", y[0], y[1],
		  y[2], y[3]);
	/* rotary_embedding_dim 2: the pair (x0, x1) turns, x2 and x3 pass. */
	rotate4(x, 0, 2, y);
	cr_assert(y[0] == -2 && y[1] == 1 && y[2] == 3 && y[3] == 4, "%g %g %g %g", y[0], y[1],
		  y[2], y[3]);
}

/* (B, S, H * D) with num_heads is (B, H, S, D) with the heads moved; and
 * without position_ids the caches are indexed by (batch, sequence). */
Test(ops_rotary, three_d_input_and_caches_by_position)
{
	enum { B = 2, S = 3, H = 2, D = 6 };
	float x4[B * H * S * D], x3[B * S * H * D], cosc[B * S * 3], sinc[B * S * 3];
	int64_t pos[B * S];
	unsigned seed = 3;
	struct op_tensor in4[4], in3[3], out4[1], out3[1];
	struct op_attr nh = oh_int("num_heads", H);
	int b, s, h, d;

	for (b = 0; b < B * S * 3; b++) {
		float a = oh_rand(&seed) * 3.0f;

		cosc[b] = cosf(a);
		sinc[b] = sinf(a);
	}
	for (b = 0; b < B; b++)
		for (h = 0; h < H; h++)
			for (s = 0; s < S; s++)
				for (d = 0; d < D; d++) {
					float v = oh_rand(&seed);

					x4[((b * H + h) * S + s) * D + d] = v;
					x3[((b * S + s) * H + h) * D + d] = v;
				}
	/* Position b * S + s picks row b * S + s: the same as no ids. */
	for (b = 0; b < B * S; b++)
		pos[b] = b;
	in4[0] = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(B, H, S, D), x4);
	in4[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(B * S, 3), cosc);
	in4[2] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(B * S, 3), sinc);
	in4[3] = oh_tensor(CEP_DTYPE_INT64, 2, DIMS(B, S), pos);
	in3[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(B, S, H * D), x3);
	in3[1] = oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(B, S, 3), cosc);
	in3[2] = oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(B, S, 3), sinc);
	cr_assert_eq(oh_run("RotaryEmbedding", 23, NULL, 0, in4, 4, out4, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(oh_run("RotaryEmbedding", 23, &nh, 1, in3, 3, out3, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out3[0].rank, 3);
	for (b = 0; b < B; b++)
		for (h = 0; h < H; h++)
			for (s = 0; s < S; s++)
				for (d = 0; d < D; d++) {
					float a = ((float *)out4[0].data)[((b * H + h) * S + s) * D + d];
					float c = ((float *)out3[0].data)[((b * S + s) * H + h) * D + d];

					cr_assert_eq(a, c, "(%d,%d,%d,%d) %g vs %g", b, h, s, d, a, c);
				}
	/* Pair 0 of (b 1, h 0, s 2), by hand. */
	{
		int r = 1 * S + 2, base = ((1 * H + 0) * S + 2) * D;
		float x1 = x4[base], x2 = x4[base + 3];

		cr_assert_float_eq(((float *)out4[0].data)[base], cosc[r * 3] * x1 - sinc[r * 3] * x2,
				   1e-6f);
		cr_assert_float_eq(((float *)out4[0].data)[base + 3],
				   sinc[r * 3] * x1 + cosc[r * 3] * x2, 1e-6f);
	}
	outs_free(out4);
	outs_free(out3);
}

/* A negative position counts from the end of the caches, as numpy's
 * indexing does; one outside [-rows, rows) fails the run by name. */
Test(ops_rotary, negative_positions_and_one_out_of_range)
{
	float x[4] = { 1, 2, 3, 4 }, cosc[4] = { 1, 1, 0, 1 }, sinc[4] = { 0, 0, 1, 0 };
	int64_t pos[1] = { -1 };
	struct op_tensor in[4] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 1, 4), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 2), cosc),
		oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 2), sinc),
		oh_tensor(CEP_DTYPE_INT64, 2, DIMS(1, 1), pos),
	};
	struct op_tensor out[1];
	float *y;

	cr_assert_eq(oh_run("RotaryEmbedding", 23, NULL, 0, in, 4, out, 1), 0, "%s",
		     cep_last_error());
	y = out[0].data;
	cr_assert(y[0] == -3 && y[2] == 1, "row -1 is row 1: %g %g", y[0], y[2]);
	outs_free(out);
	pos[0] = -2;
	cr_assert_eq(oh_run("RotaryEmbedding", 23, NULL, 0, in, 4, out, 1), 0, "%s",
		     cep_last_error());
	y = out[0].data;
	cr_assert(y[0] == 1 && y[2] == 3, "row -2 is row 0, no turn");
	outs_free(out);
	pos[0] = 2;
	cr_assert_eq(oh_run("RotaryEmbedding", 23, NULL, 0, in, 4, out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: index 2 is out of range for dimension "
			 "0 of size 2");
	pos[0] = -3;
	cr_assert_eq(oh_run("RotaryEmbedding", 23, NULL, 0, in, 4, out, 1), CEP_EINVAL);
}

/* From onnx.reference's rotary_embedding: X (2, 3, 8) with num_heads 2,
 * interleaved, caches of 5 rows, position_ids ((0, 4, 2), (-1, 1, 3));
 * a float32 evaluation rounded once differs in 13 (bfloat16) and 16
 * (float16) of the 48 elements. */
static const uint16_t rbf16_x[48] = {
	0x401c, 0x401e, 0x3dfb, 0xbfdb, 0xc064, 0xbf6f, 0xbf3b, 0xc069,
	0xc067, 0x4080, 0x3f9c, 0xc008, 0xbf05, 0x4073, 0x404c, 0x4030,
	0xbf5c, 0xbd65, 0x3fb5, 0xc061, 0x3ee4, 0xbfea, 0x4042, 0xc05f,
	0x3fb7, 0x403d, 0xc00c, 0x404a, 0x403f, 0xc077, 0x3fd4, 0xc07f,
	0x3cdc, 0xbf02, 0xc018, 0xbfb3, 0x401d, 0xbfbc, 0xc034, 0x3fcb,
	0xbed3, 0x4019, 0xc007, 0xbfb9, 0x401a, 0x3d68, 0x3d51, 0xc007,
};
static const uint16_t rbf16_cos[10] = {
	0x3f7f, 0x3f6b, 0x3f5b, 0x3f13, 0xbf2e, 0x3f75, 0xbf50, 0x3f6d,
	0xbf6f, 0x3d6d,
};
static const uint16_t rbf16_sin[10] = {
	0x3dbb, 0xbec9, 0x3f04, 0xbf52, 0x3f3c, 0xbe93, 0x3f16, 0xbec0,
	0xbeb5, 0x3f80,
};
static const uint16_t rbf16_y[48] = {
	0x400d, 0x402b, 0xbf0f, 0xbfcf, 0xc05e, 0xbfa1, 0xc006, 0xc044,
	0x4099, 0xc01e, 0x400c, 0x3f8c, 0x3fea, 0xc057, 0xc024, 0x4056,
	0x3f20, 0xbf18, 0x3eb0, 0xc071, 0x3f85, 0x3fc9, 0x3ff4, 0xc086,
	0xbe94, 0xc050, 0xc052, 0xc000, 0xc085, 0x4024, 0x4083, 0x3fb6,
	0x3e92, 0xbed7, 0xc021, 0x3f92, 0x4036, 0x3c00, 0xbea0, 0x404e,
	0xbf88, 0xc00c, 0xc020, 0xbf0c, 0xbffe, 0x3fae, 0xbf3e, 0xbffc,
};

static const uint16_t rf16_x[48] = {
	0x3fba, 0x3d95, 0x3de5, 0xb4a1, 0xc073, 0x3c83, 0xc249, 0x3e27,
	0x3c55, 0xbbe7, 0x40c7, 0xc0e5, 0xbb03, 0x40c4, 0xbba6, 0x3ed3,
	0x3b33, 0x430e, 0x43de, 0x3f28, 0x40f1, 0xc18e, 0x3ed0, 0x4190,
	0xba52, 0x36d1, 0xb140, 0x4356, 0xbdd9, 0xba44, 0xc3fc, 0xb91c,
	0x3c35, 0x42f6, 0x42c7, 0xbd86, 0x43d2, 0xc0ff, 0x412c, 0xc17c,
	0xba13, 0xc2d3, 0x41bb, 0x4143, 0xc1c3, 0x32f0, 0xbfbd, 0xac36,
};
static const uint16_t rf16_cos[10] = {
	0xbb88, 0x3a46, 0x395b, 0xb1e3, 0xbb95, 0x3b7c, 0x3c00, 0x355b,
	0xb865, 0x3b40,
};
static const uint16_t rf16_sin[10] = {
	0xb564, 0x38f7, 0xb9f2, 0x3bdd, 0x351b, 0x35a6, 0x246d, 0x3b8a,
	0x3aaf, 0xb6c2,
};
static const uint16_t rf16_y[48] = {
	0xbd64, 0xbfdc, 0x3d57, 0x3980, 0x40f3, 0xb4fe, 0xc2d7, 0xb9f4,
	0x3360, 0x3dca, 0x3c86, 0xc274, 0xbe09, 0xc015, 0xb0a8, 0x3fcc,
	0xbfea, 0xc21d, 0x4219, 0x4220, 0xbdd2, 0x42d8, 0x38e5, 0x4268,
	0x2d00, 0xbb27, 0x3d9a, 0x42c9, 0x3dd4, 0xba55, 0xc3c6, 0x3c6e,
	0x4294, 0x3e32, 0x39df, 0x432b, 0x3a16, 0xc494, 0x4070, 0x4217,
	0xb99a, 0xc2da, 0xbe14, 0x4329, 0xc1c5, 0x3158, 0xb8af, 0xbf62,
};


static void half_case(cep_dtype dt, const uint16_t *x, const uint16_t *c, const uint16_t *s,
		      const uint16_t *y)
{
	int64_t pos[6] = { 0, 4, 2, -1, 1, 3 };
	struct op_tensor in[4] = {
		oh_tensor(dt, 3, DIMS(2, 3, 8), (void *)x),
		oh_tensor(dt, 2, DIMS(5, 2), (void *)c),
		oh_tensor(dt, 2, DIMS(5, 2), (void *)s),
		oh_tensor(CEP_DTYPE_INT64, 2, DIMS(2, 3), pos),
	};
	struct op_attr at[2] = { oh_int("interleaved", 1), oh_int("num_heads", 2) };
	struct op_tensor out[1];
	int i;

	cr_assert_eq(oh_run("RotaryEmbedding", 23, at, 2, in, 4, out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < 48; i++)
		cr_expect_eq(((uint16_t *)out[0].data)[i], y[i], "%s [%d] is 0x%04x, want 0x%04x",
			     cep_dtype_name(dt), i, ((uint16_t *)out[0].data)[i], y[i]);
	outs_free(out);
}

Test(ops_rotary, half_types_round_each_product_as_the_reference)
{
	half_case(CEP_DTYPE_BFLOAT16, rbf16_x, rbf16_cos, rbf16_sin, rbf16_y);
	half_case(CEP_DTYPE_FLOAT16, rf16_x, rf16_cos, rf16_sin, rf16_y);
}

/* Runs RotaryEmbedding on x (rank and dims), caches of cdims and the
 * position ids (NULL: none); returns its status. */
static int refuse(const struct op_attr *at, int n_at, int rank, const int64_t *dims,
		  cep_dtype cdt, int crank, const int64_t *cdims, const int64_t *sdims,
		  const struct op_tensor *pos)
{
	static float buf[1024];
	struct op_tensor in[4] = {
		oh_tensor(CEP_DTYPE_FLOAT32, rank, dims, buf),
		oh_tensor(cdt, crank, cdims, buf),
		oh_tensor(cdt, crank, sdims, buf),
	};
	struct op_tensor out[1];
	int ret;

	if (pos)
		in[3] = *pos;
	ret = oh_run("RotaryEmbedding", 23, at, n_at, in, pos ? 4 : 3, out, 1);
	if (ret == 0)
		outs_free(out);
	return ret;
}

Test(ops_rotary, bad_attributes_shapes_and_types_are_refused_with_a_message)
{
	static int64_t ids[8];
	struct op_tensor pos = oh_tensor(CEP_DTYPE_INT64, 2, DIMS(1, 3), ids);
	struct op_tensor pos32 = oh_tensor(CEP_DTYPE_INT32, 2, DIMS(1, 3), ids);
	struct op_attr at;

	at = oh_int("interleaved", 2);
	cr_assert_eq(refuse(&at, 1, 4, DIMS(1, 2, 3, 8), CEP_DTYPE_FLOAT32, 2, DIMS(9, 4),
			    DIMS(9, 4), &pos), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: interleaved is 2, not 0 or 1");
	at = oh_int("rotary_embedding_dim", 3);
	cr_assert_eq(refuse(&at, 1, 4, DIMS(1, 2, 3, 8), CEP_DTYPE_FLOAT32, 2, DIMS(9, 4),
			    DIMS(9, 4), &pos), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: 3 elements are rotated per head; they "
			 "must pair up (an even count)");
	at = oh_int("rotary_embedding_dim", 10);
	cr_assert_eq(refuse(&at, 1, 4, DIMS(1, 2, 3, 8), CEP_DTYPE_FLOAT32, 2, DIMS(9, 5),
			    DIMS(9, 5), &pos), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: rotary_embedding_dim 10 exceeds the "
			 "head size 8");
	cr_assert_eq(refuse(NULL, 0, 3, DIMS(1, 3, 16), CEP_DTYPE_FLOAT32, 2, DIMS(9, 4),
			    DIMS(9, 4), &pos), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: a 3-D input needs the attribute "
			 "num_heads");
	at = oh_int("num_heads", 3);
	cr_assert_eq(refuse(&at, 1, 3, DIMS(1, 3, 16), CEP_DTYPE_FLOAT32, 2, DIMS(9, 4),
			    DIMS(9, 4), &pos), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: the hidden size 16 does not split "
			 "into num_heads=3 heads");
	cr_assert_eq(refuse(NULL, 0, 4, DIMS(1, 2, 3, 8), CEP_DTYPE_FLOAT32, 2, DIMS(9, 3),
			    DIMS(9, 3), &pos), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: cos_cache is [9,3]; its last "
			 "dimension must be rotary_dim / 2 = 4");
	cr_assert_eq(refuse(NULL, 0, 4, DIMS(1, 2, 3, 8), CEP_DTYPE_FLOAT32, 2, DIMS(9, 4),
			    DIMS(8, 4), &pos), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: cos_cache is [9,4] but sin_cache is "
			 "[8,4]");
	cr_assert_eq(refuse(NULL, 0, 4, DIMS(1, 2, 3, 8), CEP_DTYPE_FLOAT32, 3, DIMS(1, 3, 4),
			    DIMS(1, 3, 4), &pos), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "RotaryEmbedding: cos_cache is [1,3,4]; it must be "
			 "(max_position_id_plus_1, rotary_dim / 2) with position_ids") != NULL,
		  "%s", cep_last_error());
	cr_assert_eq(refuse(NULL, 0, 4, DIMS(1, 2, 3, 8), CEP_DTYPE_FLOAT32, 3, DIMS(1, 2, 4),
			    DIMS(1, 2, 4), NULL), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "without position_ids it must be (batch, sequence, "
			 "rotary_dim / 2) = (1, 3, ...)") != NULL, "%s", cep_last_error());
	cr_assert_eq(refuse(NULL, 0, 4, DIMS(1, 2, 3, 8), CEP_DTYPE_FLOAT32, 2, DIMS(9, 4),
			    DIMS(9, 4), &pos32), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: position_ids is int32, not int64");
	pos = oh_tensor(CEP_DTYPE_INT64, 2, DIMS(2, 3), ids);
	cr_assert_eq(refuse(NULL, 0, 4, DIMS(1, 2, 3, 8), CEP_DTYPE_FLOAT32, 2, DIMS(9, 4),
			    DIMS(9, 4), &pos), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: position_ids is [2,3]; it must be "
			 "(batch, sequence) = (1, 3)");
	pos = oh_tensor(CEP_DTYPE_INT64, 2, DIMS(1, 3), ids);
	cr_assert_eq(refuse(NULL, 0, 4, DIMS(1, 2, 3, 8), CEP_DTYPE_FLOAT16, 2, DIMS(9, 4),
			    DIMS(9, 4), &pos), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: cos_cache is float16 but X is "
			 "float32");
	cr_assert_eq(refuse(NULL, 0, 2, DIMS(3, 8), CEP_DTYPE_FLOAT32, 2, DIMS(9, 4), DIMS(9, 4),
			    &pos), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: X has rank 2, not 3 or 4");
}

/* -------------------------------------------------------- com.microsoft */

/* Runs com.microsoft RotaryEmbedding (opset 1) as the engine does. */
static int ms_run(const struct op_attr *at, int n_at, const struct op_tensor *in,
		  struct op_tensor *out)
{
	const struct op_node node = { "t", "RotaryEmbedding", "com.microsoft", 1, n_at, at };
	struct op_infer x = { &node, 4, 1, in, out };
	const struct op_schema *s;
	const struct op_kernel *k;
	int ret;

	memset(out, 0, sizeof(*out));
	out->rank = -1;
	if ((ret = op_schema_find("com.microsoft", "RotaryEmbedding", 1, &s)) < 0 ||
	    (ret = s->infer(&x)) < 0 ||
	    (ret = op_kernel_find(s, 1, BACKEND_HOST, in[0].dtype, &k)) < 0)
		return ret;
	return exec_host_eval(&node, k, in, 4, out, 1);
}

/* The same rotations as ai.onnx's: a 3-D input of 2 heads, positions
 * from an offset (p0 + s) and from a (batch, sequence) table, halves and
 * interleaved, the whole head and a rotary_embedding_dim of half of it. */
Test(ops_rotary, microsoft_form_matches_the_onnx_one)
{
	enum { B = 2, S = 3, H = 2, D = 8, ROWS = 9 };
	float x[B * S * H * D], cosc[ROWS * 4], sinc[ROWS * 4];
	int64_t off[1] = { 4 }, ids[B * S] = { 0, 8, 2, 5, 1, 7 }, full[B * S];
	unsigned seed = 11;
	int i, il, r, form;

	for (i = 0; i < B * S * H * D; i++)
		x[i] = oh_rand(&seed) * 2.0f;
	for (i = 0; i < ROWS * 4; i++) {
		float a = oh_rand(&seed) * 3.0f;

		cosc[i] = cosf(a);
		sinc[i] = sinf(a);
	}
	for (i = 0; i < B * S; i++)
		full[i] = off[0] + i % S;
	for (form = 0; form < 2; form++) {
		for (il = 0; il < 2; il++) {
			for (r = 0; r < 2; r++) {
				int64_t half = r ? 2 : 4;
				struct op_attr ms_at[3] = { oh_int("interleaved", il),
							    oh_int("num_heads", H),
							    oh_int("rotary_embedding_dim", r ? 4 : 0) };
				struct op_attr onnx_at[3] = { oh_int("interleaved", il),
							      oh_int("num_heads", H),
							      oh_int("rotary_embedding_dim", r ? 4 : 0) };
				struct op_tensor ms_in[4] = {
					oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(B, S, H * D), x),
					form ? oh_tensor(CEP_DTYPE_INT64, 2, DIMS(B, S), ids)
					     : oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), off),
					oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(ROWS, half), cosc),
					oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(ROWS, half), sinc),
				};
				struct op_tensor onnx_in[4] = {
					ms_in[0], ms_in[2], ms_in[3],
					oh_tensor(CEP_DTYPE_INT64, 2, DIMS(B, S), form ? ids : full),
				};
				struct op_tensor a[1], b[1];

				/* The whole head: onnxruntime reads its size off the caches
				 * and needs no num_heads. */
				cr_assert_eq(ms_run(ms_at, r ? 3 : 1, ms_in, a), 0, "%s", cep_last_error());
				cr_assert_eq(oh_run("RotaryEmbedding", 23, onnx_at, 3, onnx_in, 4, b, 1), 0,
					     "%s", cep_last_error());
				cr_assert_eq(a[0].rank, 3);
				cr_assert_eq(memcmp(a[0].data, b[0].data, sizeof(x)), 0,
					     "form %d interleaved %d rot %d", form, il, r);
				outs_free(a);
				outs_free(b);
			}
		}
	}
}

/* A 4-D input (B, N, S, H) takes its heads from the shape; a position
 * past the caches or negative fails the run by name. */
Test(ops_rotary, microsoft_four_d_and_positions_out_of_range)
{
	float x[4] = { 1, 2, 3, 4 }, cosc[4] = { 1, 1, 0, 1 }, sinc[4] = { 0, 0, 1, 0 };
	int64_t off[1] = { 1 };
	struct op_tensor in[4] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 1, 4), x),
		oh_tensor(CEP_DTYPE_INT64, 0, NULL, off),
		oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 2), cosc),
		oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 2), sinc),
	};
	struct op_tensor out[1];
	float *y;

	cr_assert_eq(ms_run(NULL, 0, in, out), 0, "%s", cep_last_error());
	y = out[0].data;
	cr_assert(y[0] == -3 && y[1] == 2 && y[2] == 1 && y[3] == 4, "%g %g %g %g", y[0], y[1],
		  y[2], y[3]);
	outs_free(out);
	off[0] = 2;
	cr_assert_eq(ms_run(NULL, 0, in, out), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: index 2 is out of range for dimension "
			 "0 of size 2");
	off[0] = -1;
	cr_assert_eq(ms_run(NULL, 0, in, out), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: index -1 is out of range for dimension "
			 "0 of size 2");
}

Test(ops_rotary, microsoft_refusals_name_the_operator)
{
	static float buf[256];
	static int64_t ids[8];
	struct op_tensor in[4] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(1, 3, 16), buf),
		oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), ids),
		oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(9, 4), buf),
		oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(9, 4), buf),
	};
	struct op_attr at[2];
	struct op_tensor out[1];

	at[0] = oh_int("rotary_embedding_dim", 4);
	cr_assert_eq(ms_run(at, 1, in, out), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: rotary_embedding_dim needs num_heads "
			 "(com.microsoft)");
	at[0] = oh_int("is_packed_batching", 1);
	cr_assert_eq(ms_run(at, 1, in, out), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: is_packed_batching (ragged batches, "
			 "com.microsoft) is not supported");
	at[0] = oh_int("num_heads", 3);
	cr_assert_eq(ms_run(at, 1, in, out), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: the hidden size 16 is not num_heads "
			 "heads of 8 elements (twice the caches' last dimension)");
	at[0] = oh_int("num_heads", 2);
	at[1] = oh_int("rotary_embedding_dim", 6);
	cr_assert_eq(ms_run(at, 2, in, out), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: cos_cache is [9,4]; its last dimension "
			 "must be rotary_dim / 2 = 3");
	in[1] = oh_tensor(CEP_DTYPE_INT64, 2, DIMS(2, 3), ids);
	cr_assert_eq(ms_run(NULL, 0, in, out), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: position_ids is [2,3]; it must be one "
			 "value or (batch, sequence)");
	in[1] = oh_tensor(CEP_DTYPE_INT32, 1, DIMS(1), ids);
	cr_assert_eq(ms_run(NULL, 0, in, out), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: position_ids is int32, not int64");
	in[1] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), ids);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(1, 9, 4), buf);
	cr_assert_eq(ms_run(NULL, 0, in, out), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "RotaryEmbedding: cos_cache is [1,9,4] and sin_cache "
			 "[9,4]; both must be (max_position_id_plus_1, rotary_dim / 2)");
}
