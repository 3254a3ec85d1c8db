/*
 * test_ops_reverse_sequence.c — ReverseSequence of
 * kernels/cpu/reverse_sequence.c, called the way the engine calls it
 * (schema inference, then the host kernel through exec_host_eval): the
 * specification's two examples worked out by hand (time axis 0 and 1), a
 * 3-D input whose inner elements move together, lengths of 0 and of the
 * whole axis, every stored type moving as it is, and the refusals (axes,
 * the lengths' type and count, a length outside the time axis).
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })

static int revseq(int opset, int64_t time_axis, int64_t batch_axis, struct op_tensor x,
		  const int64_t *lens, int64_t n, struct op_tensor *out)
{
	struct op_attr a[2] = { oh_int("time_axis", time_axis), oh_int("batch_axis", batch_axis) };
	struct op_tensor in[2] = { x, oh_tensor(CEP_DTYPE_INT64, 1, DIMS(n), (void *)lens) };

	return oh_run("ReverseSequence", opset, a, 2, in, 2, out, 1);
}

/* The specification's examples, element for element. */
Test(ops_reverse_sequence, the_specifications_examples)
{
	float x[16];
	static const int64_t lens1[4] = { 4, 3, 2, 1 }, lens2[4] = { 1, 2, 3, 4 };
	static const float want1[16] = { 3, 6, 9, 12, 2, 5, 8, 13, 1, 4, 10, 14, 0, 7, 11, 15 };
	static const float want2[16] = { 0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 15, 14, 13, 12 };
	struct op_tensor out;
	int i;

	/* Example 1's input is 4 * column + row. */
	for (i = 0; i < 16; i++)
		x[i] = (float)(4 * (i % 4) + i / 4);
	cr_assert_eq(revseq(10, 0, 1, oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(4, 4), x), lens1, 4,
			    &out), 0, "%s", cep_last_error());
	for (i = 0; i < 16; i++)
		cr_assert_eq(((float *)out.data)[i], want1[i], "example 1 element %d", i);
	free(out.data);
	for (i = 0; i < 16; i++)
		x[i] = (float)i;
	cr_assert_eq(revseq(10, 1, 0, oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(4, 4), x), lens2, 4,
			    &out), 0, "%s", cep_last_error());
	for (i = 0; i < 16; i++)
		cr_assert_eq(((float *)out.data)[i], want2[i], "example 2 element %d", i);
	free(out.data);
}

/* Time 3 x batch 2 x inner 2: batch 0 reversed whole, batch 1 not at all
 * (length 0); the inner pairs move together. */
Test(ops_reverse_sequence, inner_elements_move_together)
{
	int32_t x[12];
	static const int64_t lens[2] = { 3, 0 };
	/* Element (t, b, r) = 100 t + 10 b + r. */
	static const int32_t want[12] = { 200, 201, 10, 11, 100, 101, 110, 111, 0, 1, 210, 211 };
	struct op_tensor out;
	int t, b, r;

	for (t = 0; t < 3; t++)
		for (b = 0; b < 2; b++)
			for (r = 0; r < 2; r++)
				x[(t * 2 + b) * 2 + r] = 100 * t + 10 * b + r;
	cr_assert_eq(revseq(10, 0, 1, oh_tensor(CEP_DTYPE_INT32, 3, DIMS(3, 2, 2), x), lens, 2,
			    &out), 0, "%s", cep_last_error());
	for (t = 0; t < 12; t++)
		cr_assert_eq(((int32_t *)out.data)[t], want[t], "element %d", t);
	free(out.data);
}

Test(ops_reverse_sequence, every_type_moves_as_it_is)
{
	static const cep_dtype types[8] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					    CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64, CEP_DTYPE_INT32,
					    CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL };
	static const int64_t lens[2] = { 2, 3 };
	/* Batch axis 0, time axis 1: row 0 swaps its first two, row 1 reverses
	 * its three. */
	static const int64_t src[6] = { 1, 0, 2, 5, 4, 3 };
	unsigned char buf[6 * 8];
	struct op_tensor out;
	int t, i;

	for (t = 0; t < 8; t++) {
		for (i = 0; i < 6; i++)
			cpu_store_i(buf, types[t], i, types[t] == CEP_DTYPE_BOOL ? i % 2 : i + 1);
		cr_assert_eq(revseq(28, 1, 0, oh_tensor(types[t], 2, DIMS(2, 3), buf), lens, 2, &out),
			     0, "%s: %s", cep_dtype_name(types[t]), cep_last_error());
		for (i = 0; i < 6; i++)
			cr_assert_eq(cpu_load_i(out.data, types[t], i),
				     types[t] == CEP_DTYPE_BOOL ? src[i] % 2 : src[i] + 1, "%s %d",
				     cep_dtype_name(types[t]), i);
		free(out.data);
	}
	cr_assert_eq(revseq(27, 1, 0, oh_tensor(CEP_DTYPE_BFLOAT16, 2, DIMS(2, 3), buf), lens, 2,
			    &out), CEP_EUNSUPPORTED);
}

Test(ops_reverse_sequence, refusals_name_what_is_wrong)
{
	float x[6] = { 0 };
	static const int64_t lens[3] = { 1, 4, 0 }, two[2] = { 1, 1 };
	int32_t lens32[3] = { 1, 1, 1 };
	struct op_tensor xt = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(3, 2), x), out, in[2];

	cr_assert_eq(revseq(10, 1, 1, xt, two, 2, &out), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "ReverseSequence: time_axis 1 and batch_axis 1 must "
			 "be 0 and 1, one each");
	cr_assert_eq(revseq(10, 0, 2, xt, two, 2, &out), CEP_EMODEL);
	/* Batch axis 0 has 3 slices; time axis 1 has 2 steps. */
	cr_assert_eq(revseq(10, 1, 0, xt, two, 2, &out), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "ReverseSequence: 2 sequence lengths for a batch of 3");
	cr_assert_eq(revseq(10, 1, 0, xt, lens, 3, &out), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "ReverseSequence: sequence_lens[1] is 4, outside "
			 "[0, 2]");
	in[0] = xt;
	in[1] = oh_tensor(CEP_DTYPE_INT32, 1, DIMS(3), lens32);
	cr_assert_eq(oh_run("ReverseSequence", 10, NULL, 0, in, 2, &out, 1), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "ReverseSequence: sequence_lens is int32, not int64");
	cr_assert_eq(revseq(10, 0, 1, oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(6), x), two, 2, &out),
		     CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "ReverseSequence: the input must have rank 2 or more, "
			 "it has 1");
}
