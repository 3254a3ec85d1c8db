/*
 * powmod.c — Pow and Mod, elementwise with numpy broadcasting (Pow's
 * exponent, before opset 7, broadcasting alone as broadcast=1 and `axis`
 * say: kernels/legacy.h).
 *
 * Pow: before opset 12 base and exponent share one float type; from 12 the
 * base may be int32 or int64 and the exponent any numeric type (bfloat16
 * from 15), the output taking the base's type. Float bases are computed
 * in double and rounded once; an integer base with an integer exponent is
 * computed exactly by squaring, wrapping at the base's width as numpy
 * does; with a float exponent it goes through double and truncates. An
 * integer to a negative power is 0 unless the base is 1 or -1 (the
 * truncation of a value inside (-1, 1); 0 to a negative power, infinite,
 * gives 0 too).
 *
 * Mod: fmod=1 is C's fmod (the sign of the dividend), fmod=0 Python's %
 * (the sign of the divisor). fmod=0 takes integers only before opset 28,
 * where it was defined for floats too. An integer divided by 0 gives 0,
 * like Div of kernels/cpu/binary.c, rather than a trap.
 */
#include "kernels/cpu/elem.h"
#include "kernels/legacy.h"

/* ---------------------------------------------------------------------- Pow */

/* Opsets 1 to 11: one float type; numpy's broadcast from 7. */
static int pow7_infer(struct op_infer *x)
{
	struct op_tensor bv;
	int ret = op_infer_same_dtype(x, 0, 1);

	if (ret < 0 || (ret = op_legacy_bcast(x->node, &x->in[0], &x->in[1], &bv)) < 0)
		return ret;
	x->out[0].dtype = x->in[0].dtype;
	return op_broadcast(x->node, &x->in[0], &bv, &x->out[0]);
}

/* The exponent's types: every numeric type cudaep stores, bfloat16 only
 * from opset 15. The base's are the kernel table's. */
static int pow12_infer(struct op_infer *x)
{
	uint32_t dts = OP_DTS_NUMERIC;
	char types[160];

	if (x->node->opset < 15)
		dts &= ~OP_DT(CEP_DTYPE_BFLOAT16);
	if (!op_dtype_in(x->in[1].dtype, dts)) {
		op_dtypes_format(dts, types, sizeof(types));
		return cep__set_error(CEP_EDTYPE, "Pow: the exponent is %s, expected one of %s",
				      cep_dtype_name(x->in[1].dtype), types);
	}
	x->out[0].dtype = x->in[0].dtype;
	return elem_infer_broadcast(x, 0, 1);
}

/* b^e for integers, by squaring; unsigned arithmetic gives the wrapping.
 * e is of type te as cpu_load_i() gives it (uint64's bits never negative). */
static int64_t ipow(int64_t b, int64_t e, cep_dtype te)
{
	uint64_t r = 1, p = (uint64_t)b, ue = (uint64_t)e;

	if (e < 0 && te != CEP_DTYPE_UINT64) {
		if (b == 1)
			return 1;
		if (b == -1)
			return e & 1 ? -1 : 1;
		return 0;
	}
	while (ue) {
		if (ue & 1)
			r *= p;
		p *= p;
		ue >>= 1;
	}
	return (int64_t)r;
}

/* float32 ^ float32, the common case; a scalar exponent of 2 (variance in
 * hand-written LayerNorms) is a multiplication, which is just as exact. */
static void pow_f32(struct cpu_bcast *bc, const float *a, const float *b,
		    float *o, bool square)
{
	int64_t r, j;

	for (r = 0; r < bc->rows; r++) {
		const float *pa = a + bc->off[0], *pb = b + bc->off[1];
		int64_t sa = bc->step[0], sb = bc->step[1];
		float *po = o + r * bc->inner;

		if (square)
			for (j = 0; j < bc->inner; j++)
				po[j] = pa[j * sa] * pa[j * sa];
		else
			for (j = 0; j < bc->inner; j++)
				po[j] = (float)pow(pa[j * sa], pb[j * sb]);
		cpu_bcast_next(bc);
	}
}

static int pow_run(struct op_call *c)
{
	const struct op_tensor *ins[2] = { &c->in[0], &c->in[1] };
	const void *a = c->in[0].data, *b = c->in[1].data;
	cep_dtype ta = c->in[0].dtype, tb = c->in[1].dtype;
	void *o = c->out[0].data;
	struct op_tensor bv;
	struct cpu_bcast bc;
	int64_t r, j;

	/* Inference checked the shapes; this only reshapes B before 7. */
	op_legacy_bcast(c->node, &c->in[0], &c->in[1], &bv);
	ins[1] = &bv;
	cpu_bcast_init(&bc, &c->out[0], ins, 2);
	if (ta == CEP_DTYPE_FLOAT32 && tb == CEP_DTYPE_FLOAT32) {
		bool square = cpu_numel(&c->in[1]) == 1 && ((const float *)b)[0] == 2.0f;

		pow_f32(&bc, a, b, o, square);
		return 0;
	}
	for (r = 0; r < bc.rows; r++) {
		int64_t base = r * bc.inner;

		for (j = 0; j < bc.inner; j++) {
			int64_t ia = bc.off[0] + j * bc.step[0];
			int64_t ib = bc.off[1] + j * bc.step[1];
			double e = cpu_load_d(b, tb, ib);

			if (ta == CEP_DTYPE_FLOAT64)
				cpu_store_d(o, ta, base + j, pow(cpu_load_d(a, ta, ia), e));
			else if (cpu_is_float(ta))
				cpu_store_f(o, ta, base + j,
					    (float)pow(cpu_load_f(a, ta, ia), e));
			else if (cpu_is_float(tb))
				cpu_store_i(o, ta, base + j,
					    cpu_f2i(pow((double)cpu_load_i(a, ta, ia), e)));
			else
				cpu_store_i(o, ta, base + j,
					    ipow(cpu_load_i(a, ta, ia), cpu_load_i(b, tb, ib), tb));
		}
		cpu_bcast_next(&bc);
	}
	return 0;
}

/* ---------------------------------------------------------------------- Mod */

static int mod_infer_any(struct op_infer *x, bool float_floor)
{
	int64_t fmod;
	int ret;

	ret = op_attr_check(x->node, "fmod", OP_ATTR_INT);
	if (ret < 0)
		return ret;
	fmod = op_attr_int(x->node, "fmod", 0);
	if (fmod != 0 && fmod != 1)
		return cep__set_error(CEP_EMODEL, "Mod: fmod is %lld, expected 0 or 1",
				      (long long)fmod);
	ret = op_infer_same_dtype(x, 0, 1);
	if (ret < 0)
		return ret;
	if (fmod == 0 && !float_floor && cpu_is_float(x->in[0].dtype))
		return cep__set_error(CEP_EMODEL,
				      "Mod: fmod=0 takes integers before opset 28, not %s (set fmod=1)",
				      cep_dtype_name(x->in[0].dtype));
	x->out[0].dtype = x->in[0].dtype;
	return elem_infer_broadcast(x, 0, 1);
}

static int mod10_infer(struct op_infer *x)
{
	return mod_infer_any(x, false);
}

static int mod28_infer(struct op_infer *x)
{
	return mod_infer_any(x, true);
}

struct mod_params {
	bool trunc;                 /* fmod=1: C's fmod; else the floor's */
};

static int mod_prepare(struct op_call *c, size_t *workspace)
{
	struct mod_params *p = (struct mod_params *)c->params;

	p->trunc = op_attr_int(c->node, "fmod", 0) == 1;
	*workspace = 0;
	return 0;
}

/* The remainder with the divisor's sign: numpy's approach, which gives
 * opset 28's special cases (a finite a against an infinite b of the other
 * sign gives b; a zero result takes b's sign). */
static float mod_floor_f(float a, float b)
{
	float r = fmodf(a, b);

	if (r != 0.0f && (r < 0.0f) != (b < 0.0f))
		r += b;
	else if (r == 0.0f)
		r = copysignf(0.0f, b);
	return r;
}

static double mod_floor_d(double a, double b)
{
	double r = fmod(a, b);

	if (r != 0.0 && (r < 0.0) != (b < 0.0))
		r += b;
	else if (r == 0.0)
		r = copysign(0.0, b);
	return r;
}

/* a and b are of type t as cpu_load_i() gives them: uint64 divides as
 * unsigned, where both remainders agree. */
static int64_t mod_i(cep_dtype t, int64_t a, int64_t b, bool trunc)
{
	int64_t r;

	if (t == CEP_DTYPE_UINT64)
		return b == 0 ? 0 : (int64_t)((uint64_t)a % (uint64_t)b);
	if (b == 0 || b == -1)
		return 0; /* -1 also spares INT64_MIN % -1, which traps */
	r = a % b;
	if (!trunc && r != 0 && (r < 0) != (b < 0))
		r += b;
	return r;
}

static int mod_run(struct op_call *c)
{
	const struct op_tensor *ins[2] = { &c->in[0], &c->in[1] };
	const void *a = c->in[0].data, *b = c->in[1].data;
	cep_dtype t = c->in[0].dtype;
	bool trunc = ((const struct mod_params *)c->params)->trunc;
	void *o = c->out[0].data;
	struct cpu_bcast bc;
	int64_t r, j;

	cpu_bcast_init(&bc, &c->out[0], ins, 2);
	for (r = 0; r < bc.rows; r++) {
		int64_t base = r * bc.inner;

		for (j = 0; j < bc.inner; j++) {
			int64_t ia = bc.off[0] + j * bc.step[0];
			int64_t ib = bc.off[1] + j * bc.step[1];

			if (t == CEP_DTYPE_FLOAT64) {
				double x = cpu_load_d(a, t, ia), y = cpu_load_d(b, t, ib);

				cpu_store_d(o, t, base + j, trunc ? fmod(x, y) : mod_floor_d(x, y));
			} else if (cpu_is_float(t)) {
				float x = cpu_load_f(a, t, ia), y = cpu_load_f(b, t, ib);

				cpu_store_f(o, t, base + j, trunc ? fmodf(x, y) : mod_floor_f(x, y));
			} else {
				cpu_store_i(o, t, base + j,
					    mod_i(t, cpu_load_i(a, t, ia), cpu_load_i(b, t, ib), trunc));
			}
		}
		cpu_bcast_next(&bc);
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_schema schemas[] = {
	/* 7: numpy broadcasting; 12: integer bases, exponents of any type. */
	{ "", "Pow", 1, 6, 2, 2, 1, 1, 0, 0, pow7_infer },
	{ "", "Pow", 7, 11, 2, 2, 1, 1, 0, 0, pow7_infer },
	{ "", "Pow", 12, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, pow12_infer },
	{ "", "Mod", 10, 27, 2, 2, 1, 1, 0, 0, mod10_infer },
	{ "", "Mod", 28, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, mod28_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Pow", 1, 11, BACKEND_HOST, ELEM_DTS_NO_BF16, NULL, pow_run },
	{ "", "Pow", 12, 12, BACKEND_HOST, ELEM_DTS_NO_BF16 | ELEM_DTS_I32_I64, NULL, pow_run },
	{ "", "Pow", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT | ELEM_DTS_I32_I64, NULL,
	  pow_run },
	{ "", "Mod", 10, 12, BACKEND_HOST, ELEM_DTS_NO_BF16 | OP_DTS_INT, mod_prepare, mod_run },
	{ "", "Mod", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_NUMERIC, mod_prepare, mod_run },
};

const struct op_family op_family_cpu_powmod = {
	"cpu_powmod", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
