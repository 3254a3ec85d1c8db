/*
 * compare.c — comparisons, logic and selection with numpy broadcasting:
 * Equal, Less, LessOrEqual, Greater, GreaterOrEqual (bool out), And, Or,
 * Xor, Not (bool in and out), and Where (picks from X or Y by a bool
 * condition).
 *
 * Floats compare in double (exact for every float type, and NaN is
 * unequal to everything, itself included; float32 keeps a float path of
 * its own); integers and bool in int64, uint64 as unsigned.
 * The type sets follow each operator's history: Equal took only bool,
 * int32 and int64 before opset 11; Less and Greater only floats before 9;
 * bfloat16 joined at 13 (16 for the OrEqual pair and for Where). Before
 * opset 7 the binary ones broadcast B alone, as broadcast=1 and `axis`
 * say (kernels/legacy.h).
 */
#include "kernels/cpu/elem.h"
#include "kernels/legacy.h"

enum cmpop {
	CMP_EQ,
	CMP_LT,
	CMP_LE,
	CMP_GT,
	CMP_GE,
	CMP_AND,
	CMP_OR,
	CMP_XOR,
};

/* ---------------------------------------------------------------- inference */

/* The output's shape from two operands: numpy's broadcast from opset 7,
 * B's old one before. */
static int binary_shape(struct op_infer *x)
{
	struct op_tensor bv;
	int ret = op_legacy_bcast(x->node, &x->in[0], &x->in[1], &bv);

	if (ret < 0)
		return ret;
	return op_broadcast(x->node, &x->in[0], &bv, &x->out[0]);
}

static int compare_infer(struct op_infer *x)
{
	int ret = op_infer_same_dtype(x, 0, 1);

	if (ret < 0)
		return ret;
	x->out[0].dtype = CEP_DTYPE_BOOL;
	return binary_shape(x);
}

/* And, Or, Xor and Not: the kernel lookup checks input 0's type, this the rest. */
static int logic_infer(struct op_infer *x)
{
	int i;

	for (i = 0; i < x->n_in; i++) {
		if (x->in[i].dtype != CEP_DTYPE_BOOL)
			return cep__set_error(CEP_EDTYPE, "%s: input %d is %s, not bool",
					      x->node->op_type, i,
					      cep_dtype_name(x->in[i].dtype));
	}
	x->out[0].dtype = CEP_DTYPE_BOOL;
	if (x->n_in == 1)
		return op_infer_like_input(x);
	return binary_shape(x);
}

static int where_infer(struct op_infer *x)
{
	int ret;

	if (x->in[0].dtype != CEP_DTYPE_BOOL)
		return cep__set_error(CEP_EDTYPE, "Where: the condition is %s, not bool",
				      cep_dtype_name(x->in[0].dtype));
	ret = op_infer_same_dtype(x, 1, 2);
	if (ret < 0)
		return ret;
	x->out[0].dtype = x->in[1].dtype;
	return elem_infer_broadcast(x, 0, 2);
}

/* ------------------------------------------------------------ comparisons */

static bool cmpop_f(enum cmpop op, double a, double b)
{
	switch (op) {
	case CMP_EQ: return a == b;
	case CMP_LT: return a < b;
	case CMP_LE: return a <= b;
	case CMP_GT: return a > b;
	case CMP_GE: return a >= b;
	case CMP_AND: return a != 0.0 && b != 0.0;
	case CMP_OR: return a != 0.0 || b != 0.0;
	case CMP_XOR: return (a != 0.0) != (b != 0.0);
	}
	return false;
}

/* a and b are of type t as cpu_load_i() gives them. */
static bool cmpop_i(enum cmpop op, cep_dtype t, int64_t a, int64_t b)
{
	switch (op) {
	case CMP_EQ: return a == b;
	case CMP_LT: return cpu_lt_i(t, a, b);
	case CMP_LE: return !cpu_lt_i(t, b, a);
	case CMP_GT: return cpu_lt_i(t, b, a);
	case CMP_GE: return !cpu_lt_i(t, a, b);
	case CMP_AND: return a && b;
	case CMP_OR: return a || b;
	case CMP_XOR: return (a != 0) != (b != 0);
	}
	return false;
}

/* float32 operands, the common case, without per-element dispatch. */
static void compare_f32(enum cmpop op, struct cpu_bcast *bc, const float *a,
			const float *b, uint8_t *o)
{
	int64_t r, j;

	for (r = 0; r < bc->rows; r++) {
		const float *pa = a + bc->off[0], *pb = b + bc->off[1];
		int64_t sa = bc->step[0], sb = bc->step[1];
		uint8_t *po = o + r * bc->inner;

		switch (op) {
		case CMP_LT:
			for (j = 0; j < bc->inner; j++)
				po[j] = pa[j * sa] < pb[j * sb];
			break;
		case CMP_GT:
			for (j = 0; j < bc->inner; j++)
				po[j] = pa[j * sa] > pb[j * sb];
			break;
		default:
			for (j = 0; j < bc->inner; j++)
				po[j] = cmpop_f(op, pa[j * sa], pb[j * sb]);
			break;
		}
		cpu_bcast_next(bc);
	}
}

static int compare_run(struct op_call *c, enum cmpop op)
{
	const struct op_tensor *ins[2] = { &c->in[0], &c->in[1] };
	const void *a = c->in[0].data, *b = c->in[1].data;
	uint8_t *o = c->out[0].data;
	cep_dtype t = c->in[0].dtype;
	struct op_tensor bv;
	struct cpu_bcast bc;
	int64_t r, j;

	/* Inference checked the shapes; this only reshapes B before 7. */
	op_legacy_bcast(c->node, &c->in[0], &c->in[1], &bv);
	ins[1] = &bv;
	cpu_bcast_init(&bc, &c->out[0], ins, 2);
	if (t == CEP_DTYPE_FLOAT32) {
		compare_f32(op, &bc, a, b, o);
		return 0;
	}
	for (r = 0; r < bc.rows; r++) {
		uint8_t *po = o + r * bc.inner;

		for (j = 0; j < bc.inner; j++) {
			int64_t ia = bc.off[0] + j * bc.step[0];
			int64_t ib = bc.off[1] + j * bc.step[1];

			if (cpu_is_float(t))
				po[j] = cmpop_f(op, cpu_load_d(a, t, ia), cpu_load_d(b, t, ib));
			else
				po[j] = cmpop_i(op, t, cpu_load_i(a, t, ia), cpu_load_i(b, t, ib));
		}
		cpu_bcast_next(&bc);
	}
	return 0;
}

static int equal_run(struct op_call *c) { return compare_run(c, CMP_EQ); }
static int less_run(struct op_call *c) { return compare_run(c, CMP_LT); }
static int less_equal_run(struct op_call *c) { return compare_run(c, CMP_LE); }
static int greater_run(struct op_call *c) { return compare_run(c, CMP_GT); }
static int greater_equal_run(struct op_call *c) { return compare_run(c, CMP_GE); }
static int and_run(struct op_call *c) { return compare_run(c, CMP_AND); }
static int or_run(struct op_call *c) { return compare_run(c, CMP_OR); }
static int xor_run(struct op_call *c) { return compare_run(c, CMP_XOR); }

static int not_run(struct op_call *c)
{
	const uint8_t *a = c->in[0].data;
	uint8_t *o = c->out[0].data;
	int64_t n = cpu_numel(&c->in[0]);
	int64_t i;

	for (i = 0; i < n; i++)
		o[i] = !a[i];
	return 0;
}

/* -------------------------------------------------------------------- Where */

/* One loop per element width: Where moves bits and never converts. */
#define WHERE_ROWS(type)                                                      \
	for (r = 0; r < bc.rows; r++) {                                       \
		const uint8_t *pc = cond + bc.off[0];                         \
		const type *px = (const type *)x + bc.off[1];                 \
		const type *py = (const type *)y + bc.off[2];                 \
		type *po = (type *)o + r * bc.inner;                          \
									      \
		for (j = 0; j < bc.inner; j++)                                \
			po[j] = pc[j * bc.step[0]] ? px[j * bc.step[1]]       \
						   : py[j * bc.step[2]];      \
		cpu_bcast_next(&bc);                                          \
	}

static int where_run(struct op_call *c)
{
	const struct op_tensor *ins[3] = { &c->in[0], &c->in[1], &c->in[2] };
	const uint8_t *cond = c->in[0].data;
	const void *x = c->in[1].data, *y = c->in[2].data;
	void *o = c->out[0].data;
	struct cpu_bcast bc;
	int64_t r, j;

	cpu_bcast_init(&bc, &c->out[0], ins, 3);
	switch (cep_dtype_size(c->out[0].dtype)) {
	case 1: WHERE_ROWS(uint8_t); break;
	case 2: WHERE_ROWS(uint16_t); break;
	case 4: WHERE_ROWS(uint32_t); break;
	case 8: WHERE_ROWS(uint64_t); break;
	default:
		return cep__set_error(CEP_EINTERNAL, "Where: elements of %s are not handled",
				      cep_dtype_name(c->out[0].dtype));
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

#define CMP_SCHEMA(op, since, n_in, type_input, infer) \
	{ "", op, since, OP_OPSET_MAX, n_in, n_in, 1, 1, type_input, 0, infer }
/* Opset 7 made broadcasting numpy's. */
#define CMP_SCHEMAS_1(op, infer) \
	{ "", op, 1, 6, 2, 2, 1, 1, 0, 0, infer }, CMP_SCHEMA(op, 7, 2, 0, infer)
#define CMP_KERNEL(op, since, until, dts, fn) \
	{ "", op, since, until, BACKEND_HOST, dts, NULL, fn }

#define CMP_DTS_EQUAL7 (OP_DT(CEP_DTYPE_BOOL) | ELEM_DTS_I32_I64)

static const struct op_schema schemas[] = {
	CMP_SCHEMAS_1("Equal", compare_infer),
	CMP_SCHEMAS_1("Less", compare_infer),
	CMP_SCHEMA("LessOrEqual", 12, 2, 0, compare_infer),
	CMP_SCHEMAS_1("Greater", compare_infer),
	CMP_SCHEMA("GreaterOrEqual", 12, 2, 0, compare_infer),
	CMP_SCHEMAS_1("And", logic_infer),
	CMP_SCHEMAS_1("Or", logic_infer),
	CMP_SCHEMAS_1("Xor", logic_infer),
	/* Not has not changed since opset 1, so every opset runs it. */
	CMP_SCHEMA("Not", 1, 1, 0, logic_infer),
	CMP_SCHEMA("Where", 9, 3, 1, where_infer),
};

static const struct op_kernel kernels[] = {
	CMP_KERNEL("Equal", 1, 10, CMP_DTS_EQUAL7, equal_run),
	CMP_KERNEL("Equal", 11, 12, CMP_DTS_EQUAL7 | ELEM_DTS_NO_BF16 | OP_DTS_INT, equal_run),
	CMP_KERNEL("Equal", 13, OP_OPSET_MAX, OP_DTS_ALL, equal_run),
	CMP_KERNEL("Less", 1, 8, ELEM_DTS_NO_BF16, less_run),
	CMP_KERNEL("Less", 9, 12, ELEM_DTS_NO_BF16 | OP_DTS_INT, less_run),
	CMP_KERNEL("Less", 13, OP_OPSET_MAX, OP_DTS_NUMERIC, less_run),
	CMP_KERNEL("LessOrEqual", 12, 15, ELEM_DTS_NO_BF16 | OP_DTS_INT, less_equal_run),
	CMP_KERNEL("LessOrEqual", 16, OP_OPSET_MAX, OP_DTS_NUMERIC, less_equal_run),
	CMP_KERNEL("Greater", 1, 8, ELEM_DTS_NO_BF16, greater_run),
	CMP_KERNEL("Greater", 9, 12, ELEM_DTS_NO_BF16 | OP_DTS_INT, greater_run),
	CMP_KERNEL("Greater", 13, OP_OPSET_MAX, OP_DTS_NUMERIC, greater_run),
	CMP_KERNEL("GreaterOrEqual", 12, 15, ELEM_DTS_NO_BF16 | OP_DTS_INT, greater_equal_run),
	CMP_KERNEL("GreaterOrEqual", 16, OP_OPSET_MAX, OP_DTS_NUMERIC, greater_equal_run),
	CMP_KERNEL("And", 1, OP_OPSET_MAX, OP_DT(CEP_DTYPE_BOOL), and_run),
	CMP_KERNEL("Or", 1, OP_OPSET_MAX, OP_DT(CEP_DTYPE_BOOL), or_run),
	CMP_KERNEL("Xor", 1, OP_OPSET_MAX, OP_DT(CEP_DTYPE_BOOL), xor_run),
	CMP_KERNEL("Not", 1, OP_OPSET_MAX, OP_DT(CEP_DTYPE_BOOL), not_run),
	CMP_KERNEL("Where", 9, 15, OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16), where_run),
	CMP_KERNEL("Where", 16, OP_OPSET_MAX, OP_DTS_ALL, where_run),
};

const struct op_family op_family_cpu_compare = {
	"cpu_compare", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
