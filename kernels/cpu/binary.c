/*
 * binary.c — elementwise arithmetic: Add, Sub, Mul, Div. From opset 7 with
 * numpy broadcasting; before, B alone broadcasts to A's shape when
 * broadcast=1 says so (from `axis`, or aligned to the end), which
 * kernels/legacy.h turns into a view of B that numpy broadcasting reads
 * the same way; consumed_inputs (opsets 1 to 5) only hinted at in-place
 * use, and is ignored.
 *
 * Float types are computed in float32 (float16 and bfloat16 converted on
 * load and store), float64 in double; integer types in int64 with two's
 * complement wrapping, stored back at their width (uint64 divides as
 * unsigned). Integer division truncates toward zero like C and
 * onnxruntime; a division by zero gives 0 rather than a trap.
 */
#include "kernels/cpu/cpu.h"
#include "kernels/legacy.h"

enum binop {
	BIN_ADD,
	BIN_SUB,
	BIN_MUL,
	BIN_DIV,
};

/* ---------------------------------------------------------------- inference */

static int binary_infer(struct op_infer *x)
{
	struct op_tensor bv;
	int ret = op_infer_same_dtype(x, 0, 1);

	if (ret < 0 || (ret = op_legacy_bcast(x->node, &x->in[0], &x->in[1], &bv)) < 0)
		return ret;
	x->out[0].dtype = x->in[0].dtype;
	return op_broadcast(x->node, &x->in[0], &bv, &x->out[0]);
}

/* ------------------------------------------------------------------ kernels */

static float binop_f(enum binop op, float a, float b)
{
	switch (op) {
	case BIN_ADD: return a + b;
	case BIN_SUB: return a - b;
	case BIN_MUL: return a * b;
	case BIN_DIV: return a / b;
	}
	return 0.0f;
}

static double binop_d(enum binop op, double a, double b)
{
	switch (op) {
	case BIN_ADD: return a + b;
	case BIN_SUB: return a - b;
	case BIN_MUL: return a * b;
	case BIN_DIV: return a / b;
	}
	return 0.0;
}

/* Unsigned arithmetic gives the wrapping the types are specified with;
 * a and b are of type t as cpu_load_i() gives them. */
static int64_t binop_i(enum binop op, cep_dtype t, int64_t a, int64_t b)
{
	switch (op) {
	case BIN_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
	case BIN_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
	case BIN_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
	case BIN_DIV:
		if (b == 0)
			return 0;
		if (t == CEP_DTYPE_UINT64)
			return (int64_t)((uint64_t)a / (uint64_t)b);
		if (a == INT64_MIN && b == -1)
			return INT64_MIN;
		return a / b;
	}
	return 0;
}

/* The float32 case without per-element dispatch: the common one. */
static void binary_f32(enum binop op, struct cpu_bcast *bc, const float *a,
		       const float *b, float *o)
{
	int64_t r, j;

	for (r = 0; r < bc->rows; r++) {
		const float *pa = a + bc->off[0], *pb = b + bc->off[1];
		int64_t sa = bc->step[0], sb = bc->step[1];
		float *po = o + r * bc->inner;

		switch (op) {
		case BIN_ADD:
			for (j = 0; j < bc->inner; j++)
				po[j] = pa[j * sa] + pb[j * sb];
			break;
		case BIN_SUB:
			for (j = 0; j < bc->inner; j++)
				po[j] = pa[j * sa] - pb[j * sb];
			break;
		case BIN_MUL:
			for (j = 0; j < bc->inner; j++)
				po[j] = pa[j * sa] * pb[j * sb];
			break;
		case BIN_DIV:
			for (j = 0; j < bc->inner; j++)
				po[j] = pa[j * sa] / pb[j * sb];
			break;
		}
		cpu_bcast_next(bc);
	}
}

static int binary_run(struct op_call *c, enum binop op)
{
	const struct op_tensor *ins[2] = { &c->in[0], &c->in[1] };
	const struct op_tensor *out = &c->out[0];
	cep_dtype t = out->dtype;
	struct op_tensor bv;
	struct cpu_bcast bc;
	int64_t r, j;

	/* Inference checked the shapes; this only reshapes B before 7. */
	op_legacy_bcast(c->node, &c->in[0], &c->in[1], &bv);
	ins[1] = &bv;
	cpu_bcast_init(&bc, out, ins, 2);
	if (t == CEP_DTYPE_FLOAT32) {
		binary_f32(op, &bc, c->in[0].data, c->in[1].data, out->data);
		return 0;
	}
	for (r = 0; r < bc.rows; r++) {
		int64_t base = r * bc.inner;

		for (j = 0; j < bc.inner; j++) {
			int64_t ia = bc.off[0] + j * bc.step[0];
			int64_t ib = bc.off[1] + j * bc.step[1];

			if (t == CEP_DTYPE_FLOAT64)
				cpu_store_d(out->data, t, base + j,
					    binop_d(op, cpu_load_d(c->in[0].data, t, ia),
						    cpu_load_d(c->in[1].data, t, ib)));
			else if (cpu_is_float(t))
				cpu_store_f(out->data, t, base + j,
					    binop_f(op, cpu_load_f(c->in[0].data, t, ia),
						    cpu_load_f(c->in[1].data, t, ib)));
			else
				cpu_store_i(out->data, t, base + j,
					    binop_i(op, t, cpu_load_i(c->in[0].data, t, ia),
						    cpu_load_i(c->in[1].data, t, ib)));
		}
		cpu_bcast_next(&bc);
	}
	return 0;
}

static int add_run(struct op_call *c) { return binary_run(c, BIN_ADD); }
static int sub_run(struct op_call *c) { return binary_run(c, BIN_SUB); }
static int mul_run(struct op_call *c) { return binary_run(c, BIN_MUL); }
static int div_run(struct op_call *c) { return binary_run(c, BIN_DIV); }

/* ------------------------------------------------------------------- table */

#define BINARY_DTS_1 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16) | \
		      OP_DT(CEP_DTYPE_FLOAT64))
#define BINARY_DTS_6 (BINARY_DTS_1 | OP_DT(CEP_DTYPE_INT32) | OP_DT(CEP_DTYPE_INT64) | \
		      OP_DT(CEP_DTYPE_UINT32) | OP_DT(CEP_DTYPE_UINT64))
/* int16 and uint16 joined at 14 (with int8 and uint8, which cudaep has
 * taken from 7). */
#define BINARY_DTS_7 (OP_DTS_NUMERIC & ~(OP_DT(CEP_DTYPE_INT16) | OP_DT(CEP_DTYPE_UINT16)))

/* 7 made broadcasting numpy's. */
#define BINARY_SCHEMA(op) \
	{ "", op, 1, 6, 2, 2, 1, 1, 0, 0, binary_infer }, \
	{ "", op, 7, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, binary_infer }
/* float, float16 and double at first; 6 brought the 32- and 64-bit
 * integers. */
#define BINARY_KERNEL(op, fn) \
	{ "", op, 1, 5, BACKEND_HOST, BINARY_DTS_1, NULL, fn }, \
	{ "", op, 6, 6, BACKEND_HOST, BINARY_DTS_6, NULL, fn }, \
	{ "", op, 7, 13, BACKEND_HOST, BINARY_DTS_7, NULL, fn }, \
	{ "", op, 14, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_NUMERIC, NULL, fn }

static const struct op_schema schemas[] = {
	BINARY_SCHEMA("Add"),
	BINARY_SCHEMA("Sub"),
	BINARY_SCHEMA("Mul"),
	BINARY_SCHEMA("Div"),
};

static const struct op_kernel kernels[] = {
	BINARY_KERNEL("Add", add_run),
	BINARY_KERNEL("Sub", sub_run),
	BINARY_KERNEL("Mul", mul_run),
	BINARY_KERNEL("Div", div_run),
};

const struct op_family op_family_cpu_binary = {
	"cpu_binary", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
