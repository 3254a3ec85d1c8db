/*
 * bitwise.c — the bitwise operators of integer tensors: BitShift (opset 11
 * on; the direction attribute says LEFT or RIGHT), BitwiseAnd, BitwiseOr,
 * BitwiseXor with numpy broadcasting, and BitwiseNot (opset 18 on). The
 * output has the inputs' type.
 *
 * Elements are loaded into int64 (sign-extended for the signed types,
 * uint64 as its bits), where and, or, xor and not give the sign extension
 * of the narrow result, and stored back at their width, which drops the
 * bits above it. Shifts
 * follow opset 28's wording, the first to define them for signed types: a
 * right shift of a signed type is arithmetic, a left shift drops the bits
 * pushed past the width (the sign bit included), and a shift by a
 * negative amount or by the width or more leaves what the sign fill alone
 * makes (-1 for a right shift of a negative value, else 0). Before opset
 * 28 only the unsigned types were allowed, where that rule gives 0 for
 * shifts of the width or more, as numpy does; an unsigned value shifts
 * right logically.
 *
 * Types: BitShift took the unsigned types until opset 28 added the signed
 * ones; the Bitwise operators take every integer type.
 */
#include "kernels/cpu/elem.h"

enum bitop {
	BIT_AND,
	BIT_OR,
	BIT_XOR,
	BIT_SHL,
	BIT_SHR,
};

/* ---------------------------------------------------------------- inference */

static int bitwise_infer(struct op_infer *x)
{
	int ret = op_infer_same_dtype(x, 0, 1);

	if (ret < 0)
		return ret;
	x->out[0].dtype = x->in[0].dtype;
	return elem_infer_broadcast(x, 0, 1);
}

/* The direction, which the spec makes required: *left on success. */
static int bitshift_direction(const struct op_node *n, bool *left)
{
	const char *d;
	int ret = op_attr_check(n, "direction", OP_ATTR_STRING);

	if (ret < 0)
		return ret;
	d = op_attr_string(n, "direction", NULL);
	if (d == NULL)
		return cep__set_error(CEP_EMODEL,
				      "BitShift: the direction attribute is required ('LEFT' or 'RIGHT')");
	if (strcmp(d, "LEFT") != 0 && strcmp(d, "RIGHT") != 0)
		return cep__set_error(CEP_EMODEL,
				      "BitShift: direction is '%s', expected 'LEFT' or 'RIGHT'", d);
	*left = strcmp(d, "LEFT") == 0;
	return 0;
}

static int bitshift_infer(struct op_infer *x)
{
	bool left;
	int ret = bitshift_direction(x->node, &left);

	return ret < 0 ? ret : bitwise_infer(x);
}

static int bitwise_not_infer(struct op_infer *x)
{
	return op_infer_like_input(x);
}

/* ------------------------------------------------------------------ kernels */

/* a op b for elements of width bits, sign-extended into int64 for the
 * signed types (uint64 as its bits, which is_unsigned says not to read as
 * a sign); unsigned arithmetic keeps the left shift defined. */
static int64_t bitop_i(enum bitop op, int64_t a, int64_t b, int width, bool is_unsigned)
{
	switch (op) {
	case BIT_AND: return a & b;
	case BIT_OR: return a | b;
	case BIT_XOR: return a ^ b;
	case BIT_SHL:
		if (b < 0 || b >= width)
			return 0;
		return (int64_t)((uint64_t)a << b);
	case BIT_SHR:
		if (is_unsigned)
			return b < 0 || b >= width ? 0 : (int64_t)((uint64_t)a >> b);
		if (b < 0 || b >= width)
			return a < 0 ? -1 : 0;
		/* Arithmetic, without C's implementation-defined >> of a
		 * negative value. */
		return a < 0 ? ~(~a >> b) : a >> b;
	}
	return 0;
}

struct bitwise_params {
	enum bitop op;
};

static int bitwise_set(struct op_call *c, size_t *workspace, enum bitop op)
{
	((struct bitwise_params *)c->params)->op = op;
	*workspace = 0;
	return 0;
}

static int bitshift_prepare(struct op_call *c, size_t *ws)
{
	bool left;
	int ret = bitshift_direction(c->node, &left);

	return ret < 0 ? ret : bitwise_set(c, ws, left ? BIT_SHL : BIT_SHR);
}

static int bitwise_and_prepare(struct op_call *c, size_t *ws)
{
	return bitwise_set(c, ws, BIT_AND);
}

static int bitwise_or_prepare(struct op_call *c, size_t *ws)
{
	return bitwise_set(c, ws, BIT_OR);
}

static int bitwise_xor_prepare(struct op_call *c, size_t *ws)
{
	return bitwise_set(c, ws, BIT_XOR);
}

static int bitwise_run(struct op_call *c)
{
	const struct op_tensor *ins[2] = { &c->in[0], &c->in[1] };
	enum bitop op = ((const struct bitwise_params *)c->params)->op;
	const void *a = c->in[0].data, *b = c->in[1].data;
	cep_dtype t = c->out[0].dtype;
	int width = 8 * (int)cep_dtype_size(t);
	bool is_unsigned = cpu_is_unsigned(t);
	void *o = c->out[0].data;
	struct cpu_bcast bc;
	int64_t r, j;

	cpu_bcast_init(&bc, &c->out[0], ins, 2);
	for (r = 0; r < bc.rows; r++) {
		int64_t base = r * bc.inner;

		for (j = 0; j < bc.inner; j++)
			cpu_store_i(o, t, base + j,
				    bitop_i(op, cpu_load_i(a, t, bc.off[0] + j * bc.step[0]),
					    cpu_load_i(b, t, bc.off[1] + j * bc.step[1]), width,
					    is_unsigned));
		cpu_bcast_next(&bc);
	}
	return 0;
}

static int bitwise_not_run(struct op_call *c)
{
	cep_dtype t = c->in[0].dtype;
	int64_t n = cpu_numel(&c->in[0]);
	int64_t i;

	for (i = 0; i < n; i++)
		cpu_store_i(c->out[0].data, t, i, ~cpu_load_i(c->in[0].data, t, i));
	return 0;
}

/* ------------------------------------------------------------------- table */

#define BIT_SCHEMA(op, since, n_in, infer) \
	{ "", op, since, OP_OPSET_MAX, n_in, n_in, 1, 1, 0, 0, infer }
#define BIT_KERNEL(op, since, until, dts, prepare, run) \
	{ "", op, since, until, BACKEND_HOST, dts, prepare, run }

static const struct op_schema schemas[] = {
	BIT_SCHEMA("BitShift", 11, 2, bitshift_infer),
	BIT_SCHEMA("BitwiseAnd", 18, 2, bitwise_infer),
	BIT_SCHEMA("BitwiseOr", 18, 2, bitwise_infer),
	BIT_SCHEMA("BitwiseXor", 18, 2, bitwise_infer),
	BIT_SCHEMA("BitwiseNot", 18, 1, bitwise_not_infer),
};

static const struct op_kernel kernels[] = {
	BIT_KERNEL("BitShift", 11, 27, OP_DTS_UNSIGNED, bitshift_prepare, bitwise_run),
	BIT_KERNEL("BitShift", 28, OP_OPSET_MAX, OP_DTS_INT, bitshift_prepare, bitwise_run),
	BIT_KERNEL("BitwiseAnd", 18, OP_OPSET_MAX, OP_DTS_INT, bitwise_and_prepare, bitwise_run),
	BIT_KERNEL("BitwiseOr", 18, OP_OPSET_MAX, OP_DTS_INT, bitwise_or_prepare, bitwise_run),
	BIT_KERNEL("BitwiseXor", 18, OP_OPSET_MAX, OP_DTS_INT, bitwise_xor_prepare, bitwise_run),
	BIT_KERNEL("BitwiseNot", 18, OP_OPSET_MAX, OP_DTS_INT, NULL, bitwise_not_run),
};

const struct op_family op_family_cpu_bitwise = {
	"cpu_bitwise", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
