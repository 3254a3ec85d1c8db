/*
 * quant.c — linear quantization: QuantizeLinear and DequantizeLinear
 * (opsets 10, 13, 19, 21 and 23 on) and DynamicQuantizeLinear (11), for
 * the quantized types of the specification that cudaep stores: int8 and
 * uint8; float8e4m3fn, float8e4m3fnuz, float8e5m2 and float8e5m2fnuz from
 * opset 19; int16, uint16, int4 and uint4 from 21; float4e2m1 from 23
 * (and int32 as DequantizeLinear's input). The arithmetic is quant.h's.
 *
 * QuantizeLinear: y = saturate(round(x / y_scale) + y_zero_point), the
 * division in the type the specification gives it (cpu_quant_div_round()),
 * rounding half to even, saturating to the output type's range (int4
 * [-8, 7], uint4 [0, 15]). To a float type (float8, float4e2m1) the
 * quotient is rounded to nearest even in it, saturating as `saturate`
 * (19 on, default 1) says (qtypes.h); the zero point must be 0 and is not
 * added (a -0 quotient stays -0), except for float4e2m1, where adding it
 * makes -0 +0 as the reference implementation does. The output type is
 * the zero point's, else output_dtype's (21 on), else uint8.
 *
 * DequantizeLinear: y = (x - x_zero_point) * x_scale, the difference exact,
 * the product rounded to float32 and then to the output type (the scale's,
 * or output_dtype's from 23 on); a float8 or float4e2m1 x is its value, its
 * zero point 0.
 *
 * The scale and zero point are a scalar (per tensor), a vector along
 * `axis` (per axis, 13 on) or blocks of block_size along `axis` (21 on):
 * struct cpu_quant. Types cudaep does not store (int2, float6, ...)
 * never reach a kernel: the loader refuses such tensors, and an
 * output_dtype naming one is refused here with the same sentence.
 *
 * DynamicQuantizeLinear: uint8 from the range of x widened to include 0:
 * y_scale = (max - min) / 255 (1 / 255 for an all-zero x, as the ONNX
 * reference implementation has it), y_zero_point = round(saturate(-min /
 * y_scale)), then QuantizeLinear's formula; NaNs are passed over when the
 * range is found.
 */
#include "kernels/cpu/quant.h"

#include <inttypes.h>
#include <stdio.h>

/* ----------------------------------------------------------------- shared */

int quant_check_dtype(const struct op_node *node, const char *name, cep_dtype t,
		      uint32_t set)
{
	char want[256];

	if (op_dtype_in(t, set))
		return 0;
	op_dtypes_format(set, want, sizeof(want));
	return cep__set_error(CEP_EDTYPE, "%s: %s is %s; opset %d takes %s", node->op_type, name,
			      cep_dtype_name(t), node->opset, want);
}

const char *quant_type_name(int64_t t)
{
	static const char *const names[] = {
		[8] = "string", [11] = "float64", [14] = "complex64", [15] = "complex128",
		[17] = "float8e4m3fn", [18] = "float8e4m3fnuz", [19] = "float8e5m2",
		[20] = "float8e5m2fnuz", [21] = "uint4", [22] = "int4", [23] = "float4e2m1",
		[24] = "float8e8m0", [25] = "uint2", [26] = "int2", [27] = "float6e2m3",
		[28] = "float6e3m2",
	};

	if (t > 0 && t < 32 && cep_dtype_size((cep_dtype)t) != 0)
		return cep_dtype_name((cep_dtype)t);
	if (t > 0 && t < (int64_t)(sizeof(names) / sizeof(names[0])) && names[t] != NULL)
		return names[t];
	return "unknown";
}

int quant_zp_check_zero(const struct op_node *node, const char *name,
			const struct op_tensor *zp)
{
	int64_t n = cpu_numel(zp), i;

	for (i = 0; i < n; i++) {
		double v = cpu_load_d(zp->data, zp->dtype, i);

		if (v != 0.0)
			return cep__set_error(CEP_EINVAL, "%s: %s is %s, whose zero point must be 0; "
					      "element %" PRId64 " is %g", node->op_type, name,
					      cep_dtype_name(zp->dtype), i, v);
	}
	return 0;
}

/* Refuses attribute name where node's opset does not have it (it came at
 * opset since): ignoring it would compute something else. */
static int quant_attr_since(const struct op_node *node, const char *name, int since)
{
	if (node->opset < since && op_attr_find(node, name) != NULL)
		return cep__set_error(CEP_EMODEL, "%s: attribute '%s' does not exist at opset %d "
				      "(it came at %d)", node->op_type, name, node->opset, since);
	return op_attr_check(node, name, OP_ATTR_INT);
}

/* Whether t is a scalar or a vector of one value. */
static bool quant_one_value(const struct op_tensor *t)
{
	return t->rank == 0 || (t->rank == 1 && op_dim_fixed(t->dims[0]) && t->dims[0] == 1);
}

/* Names x's shape for messages. */
static void quant_shape(const struct op_tensor *t, char *buf, size_t len)
{
	op_dims_format(t, NULL, 0, buf, len);
}

int cpu_quant_read(const struct op_node *node, const struct op_tensor *x,
		   const struct op_tensor *s, const struct op_tensor *zp, struct cpu_quant *q)
{
	bool quantize = strcmp(node->op_type, "QuantizeLinear") == 0;
	const char *sname = quantize ? "y_scale" : "x_scale";
	const char *zname = quantize ? "y_zero_point" : "x_zero_point";
	int64_t block = node->opset >= 21 ? op_attr_int(node, "block_size", 0) : 0;
	int64_t axis_attr = node->opset >= 13 ? op_attr_int(node, "axis", 1) : 1;
	char ss[160], sx[160];
	bool vector;
	int axis = 0, i, ret;

	if (block < 0)
		return cep__set_error(CEP_EMODEL, "%s: block_size is %" PRId64
				      "; it must be positive (or 0: no blocks)", node->op_type, block);
	/* The same shape, or one value each: a scalar scale and a [1] zero
	 * point are both per tensor (ONNX's own float8 and 4-bit cases have
	 * them, and its reference takes them). */
	if (zp != NULL && op_tensor_present(zp) && zp->rank >= 0 && s->rank >= 0 &&
	    !(quant_one_value(s) && quant_one_value(zp))) {
		bool same = zp->rank == s->rank;

		for (i = 0; same && i < s->rank; i++)
			same = !op_dim_fixed(s->dims[i]) || !op_dim_fixed(zp->dims[i]) ||
			       s->dims[i] == zp->dims[i];
		if (!same) {
			quant_shape(s, ss, sizeof(ss));
			quant_shape(zp, sx, sizeof(sx));
			return cep__set_error(CEP_ESHAPE, "%s: %s has shape %s but %s has %s; "
					      "they must have the same shape", node->op_type, sname,
					      ss, zname, sx);
		}
	}
	if (s->rank < 0 || x->rank < 0)
		return 0;
	quant_shape(s, ss, sizeof(ss));
	quant_shape(x, sx, sizeof(sx));
	/* Per axis: a vector of more than one element (or of a size not
	 * known yet); a one-element vector is per tensor. */
	vector = block == 0 && s->rank == 1 && !(op_dim_fixed(s->dims[0]) && s->dims[0] == 1);
	if (block == 0 && s->rank > 1)
		return cep__set_error(CEP_ESHAPE, "%s: %s has shape %s; it must be a scalar or 1-D%s",
				      node->op_type, sname, ss,
				      node->opset >= 21 ? " unless block_size is set" : "");
	if (vector && node->opset < 13)
		return cep__set_error(CEP_ESHAPE, "%s: %s has shape %s; it must be a scalar "
				      "before opset 13", node->op_type, sname, ss);
	if (vector || block > 0) {
		ret = op_axis_normalize(node, axis_attr, x->rank, &axis);
		if (ret < 0)
			return ret;
	}
	if (vector && op_dim_fixed(s->dims[0]) && op_dim_fixed(x->dims[axis]) &&
	    s->dims[0] != x->dims[axis])
		return cep__set_error(CEP_ESHAPE, "%s: %s has %" PRId64 " values but dimension %d "
				      "(axis) of x %s has %" PRId64, node->op_type, sname,
				      s->dims[0], axis, sx, x->dims[axis]);
	if (block > 0) {
		if (s->rank != x->rank)
			return cep__set_error(CEP_ESHAPE, "%s: blocked quantization needs %s of x's "
					      "rank %d, it has shape %s", node->op_type, sname,
					      x->rank, ss);
		for (i = 0; i < x->rank; i++) {
			int64_t want = x->dims[i];

			if (!op_dim_fixed(want) || !op_dim_fixed(s->dims[i]))
				continue;
			if (i == axis)
				want = (want + block - 1) / block;
			if (s->dims[i] != want)
				return cep__set_error(CEP_ESHAPE, "%s: %s has shape %s but x %s in "
						      "blocks of %" PRId64 " along axis %d needs %"
						      PRId64 " in dimension %d", node->op_type,
						      sname, ss, sx, block, axis, want, i);
		}
	}
	if (q == NULL)
		return 0;
	memset(q, 0, sizeof(*q));
	q->n = op_dims_product(x, 0, x->rank);
	q->block = 1;
	if (vector || block > 0) {
		q->d = x->dims[axis];
		q->inner = op_dims_product(x, axis + 1, x->rank);
		if (vector) {
			q->sa = 1;
		} else {
			q->block = block;
			q->sa = q->inner;
			q->sr = 1;
			q->so = s->dims[axis] * q->inner;
		}
	} else {
		q->d = q->n;
		q->inner = 1;
	}
	/* Empty tensors index nothing, but the divisions must stay defined. */
	if (q->d < 1)
		q->d = 1;
	if (q->inner < 1)
		q->inner = 1;
	return 0;
}

int cpu_quant_div_round(const struct op_node *node, cep_dtype x, cep_dtype s, int *round)
{
	int64_t p = node->opset >= 23 ? op_attr_int(node, "precision", 0) : 0;

	if (p != 0) {
		switch (p) {
		case CEP_DTYPE_FLOAT32: *round = QUANT_ROUND_F32; return 0;
		case CEP_DTYPE_FLOAT16: *round = QUANT_ROUND_F16; return 0;
		case CEP_DTYPE_BFLOAT16: *round = QUANT_ROUND_BF16; return 0;
		case CEP_DTYPE_FLOAT64: *round = QUANT_ROUND_F64; return 0;
		default:
			return cep__set_error(CEP_EUNSUPPORTED, "%s: precision %" PRId64 " (%s) is not "
					      "supported; float32, float16, bfloat16 and float64 are",
					      node->op_type, p, quant_type_name(p));
		}
	}
	/* An int32 operand is divided in double (numpy's true division of
	 * integers) where the scale is no float that names the precision:
	 * before opset 23 x and the scale share a type or the scale is
	 * float32, from 23 the scale's type rules. */
	if (s == CEP_DTYPE_INT32 || (x == CEP_DTYPE_INT32 && node->opset < 23))
		*round = QUANT_ROUND_F64;
	else
		*round = quant_round_of(s);
	return 0;
}

/* ----------------------------------------------------------- QuantizeLinear */

/* The output type of QuantizeLinear: y_zero_point's, else output_dtype's,
 * else uint8. */
static int ql_out_dtype(const struct op_node *node, const struct op_tensor *zp, cep_dtype *out)
{
	int64_t od = node->opset >= 21 ? op_attr_int(node, "output_dtype", 0) : 0;
	uint32_t set = QUANT_DTS_Q_AT(node->opset);
	int ret;

	if (zp != NULL) {
		ret = quant_check_dtype(node, "y_zero_point", zp->dtype, set);
		if (ret < 0)
			return ret;
	}
	if (od != 0 && !op_dtype_in((cep_dtype)(od > 0 && od < 32 ? od : 0), set)) {
		/* The quantized types of the schema that cudaep does not store:
		 * int2, uint2 and the float6 types. */
		if (od >= 25 && od <= 28)
			return cep__set_error(CEP_EUNSUPPORTED, "%s: output_dtype %" PRId64 " is %s, "
					      "which cudaep does not support", node->op_type, od,
					      quant_type_name(od));
		return cep__set_error(CEP_EMODEL, "%s: output_dtype %" PRId64 " (%s) is not a "
				      "quantized type", node->op_type, od, quant_type_name(od));
	}
	if (od != 0 && zp != NULL && od != zp->dtype)
		return cep__set_error(CEP_EMODEL, "%s: output_dtype is %s but y_zero_point is %s; "
				      "they must agree", node->op_type, quant_type_name(od),
				      cep_dtype_name(zp->dtype));
	*out = zp != NULL ? zp->dtype : od != 0 ? (cep_dtype)od : CEP_DTYPE_UINT8;
	return 0;
}

static int ql_infer(struct op_infer *x)
{
	const struct op_node *node = x->node;
	const struct op_tensor *xt = &x->in[0], *s = &x->in[1];
	const struct op_tensor *zp = x->n_in > 2 && op_tensor_present(&x->in[2]) ? &x->in[2] : NULL;
	cep_dtype out = CEP_DTYPE_UINT8;
	int opset = node->opset, round, ret;

	if ((ret = quant_attr_since(node, "axis", 13)) < 0 ||
	    (ret = quant_attr_since(node, "saturate", 19)) < 0 ||
	    (ret = quant_attr_since(node, "block_size", 21)) < 0 ||
	    (ret = quant_attr_since(node, "output_dtype", 21)) < 0 ||
	    (ret = quant_attr_since(node, "precision", 23)) < 0)
		return ret;
	ret = quant_check_dtype(node, "x", xt->dtype, opset >= 19 ? QUANT_DTS_QL_19 : QUANT_DTS_QL_10);
	if (ret < 0)
		return ret;
	if (opset < 19)
		ret = quant_check_dtype(node, "y_scale", s->dtype, OP_DT(CEP_DTYPE_FLOAT32));
	else if (opset < 23 && s->dtype != xt->dtype)
		ret = cep__set_error(CEP_EDTYPE, "%s: y_scale is %s but x is %s; opset %d takes "
				     "them of one type", node->op_type, cep_dtype_name(s->dtype),
				     cep_dtype_name(xt->dtype), opset);
	else
		ret = quant_check_dtype(node, "y_scale", s->dtype, QUANT_DTS_QL_19);
	if (ret < 0)
		return ret;
	if ((ret = ql_out_dtype(node, zp, &out)) < 0 ||
	    (ret = cpu_quant_div_round(node, xt->dtype, s->dtype, &round)) < 0 ||
	    (ret = cpu_quant_read(node, xt, s, zp, NULL)) < 0)
		return ret;
	ret = op_infer_like_input(x);
	x->out[0].dtype = out;
	return ret;
}

struct ql_params {
	struct cpu_quant q;
	int32_t round;          /* enum quant_round of the division */
	int32_t saturate;       /* float8 outputs: saturate or not */
	int64_t lo, hi;         /* an integer output's range */
};

static int ql_prepare(struct op_call *c, size_t *workspace)
{
	struct ql_params *p = (struct ql_params *)c->params;
	const struct op_tensor *zp = c->n_in > 2 ? &c->in[2] : NULL;
	int ret;

	_Static_assert(sizeof(*p) <= OP_PARAMS_BYTES, "params too large");
	*workspace = 0;
	memset(p, 0, sizeof(*p));
	ret = cpu_quant_read(c->node, &c->in[0], &c->in[1], zp, &p->q);
	if (ret < 0)
		return ret;
	ret = cpu_quant_div_round(c->node, c->in[0].dtype, c->in[1].dtype, &p->round);
	quant_range(c->out[0].dtype, &p->lo, &p->hi);
	p->saturate = c->node->opset < 19 || op_attr_int(c->node, "saturate", 1) != 0;
	return ret;
}

static int ql_run(struct op_call *c)
{
	const struct ql_params *p = (const struct ql_params *)c->params;
	const struct op_tensor *x = &c->in[0], *s = &c->in[1];
	const struct op_tensor *zp = c->n_in > 2 && op_tensor_present(&c->in[2]) ? &c->in[2] : NULL;
	cep_dtype yt = c->out[0].dtype;
	bool qfloat = op_dtype_in(yt, QUANT_DTS_QFLOAT);
	int64_t i;
	int ret;

	if (qfloat && zp != NULL && (ret = quant_zp_check_zero(c->node, "y_zero_point", zp)) < 0)
		return ret;
	for (i = 0; i < p->q.n; i++) {
		int64_t k = cpu_quant_at(&p->q, i);
		double xv = quant_round_to(quant_load_d(x->data, x->dtype, i), p->round);
		double sv = quant_round_to(quant_load_d(s->data, s->dtype, k), p->round);
		double v = quant_round_to(xv / sv, p->round);

		if (!qfloat) {
			cpu_store_i(c->out[0].data, yt, i,
				    quant_saturate(v, quant_zp(zp, k), p->lo, p->hi));
			continue;
		}
		/* float4e2m1's zero point is added: -0 + 0 is +0. */
		if (yt == CEP_DTYPE_FLOAT4E2M1 && zp != NULL && v == 0.0)
			v = 0.0;
		quant_store_qfloat(c->out[0].data, yt, i, v, p->saturate != 0);
	}
	return 0;
}

/* --------------------------------------------------------- DequantizeLinear */

static int dql_infer(struct op_infer *x)
{
	const struct op_node *node = x->node;
	const struct op_tensor *xt = &x->in[0], *s = &x->in[1];
	const struct op_tensor *zp = x->n_in > 2 && op_tensor_present(&x->in[2]) ? &x->in[2] : NULL;
	int64_t od;
	int ret;

	if ((ret = quant_attr_since(node, "axis", 13)) < 0 ||
	    (ret = quant_attr_since(node, "block_size", 21)) < 0 ||
	    (ret = quant_attr_since(node, "output_dtype", 23)) < 0 ||
	    (ret = quant_check_dtype(node, "x", xt->dtype, QUANT_DTS_DQL_AT(node->opset))) < 0 ||
	    (ret = quant_check_dtype(node, "x_scale", s->dtype,
				     node->opset >= 19 ? QUANT_DTS_FLOAT : OP_DT(CEP_DTYPE_FLOAT32))) < 0)
		return ret;
	if (zp != NULL && zp->dtype != xt->dtype)
		return cep__set_error(CEP_EDTYPE, "%s: x_zero_point is %s but x is %s; they must be "
				      "of one type", node->op_type, cep_dtype_name(zp->dtype),
				      cep_dtype_name(xt->dtype));
	od = node->opset >= 23 ? op_attr_int(node, "output_dtype", 0) : 0;
	if (od != 0 && !op_dtype_in((cep_dtype)(od > 0 && od < 32 ? od : 0), QUANT_DTS_FLOAT)) {
		return cep__set_error(CEP_EMODEL, "%s: output_dtype %" PRId64 " (%s) is not float32, "
				      "float16 or bfloat16", node->op_type, od, quant_type_name(od));
	}
	ret = cpu_quant_read(node, xt, s, zp, NULL);
	if (ret < 0)
		return ret;
	ret = op_infer_like_input(x);
	x->out[0].dtype = od != 0 ? (cep_dtype)od : s->dtype;
	return ret;
}

static int dql_prepare(struct op_call *c, size_t *workspace)
{
	struct cpu_quant *q = (struct cpu_quant *)c->params;

	_Static_assert(sizeof(*q) <= OP_PARAMS_BYTES, "params too large");
	*workspace = 0;
	return cpu_quant_read(c->node, &c->in[0], &c->in[1], c->n_in > 2 ? &c->in[2] : NULL, q);
}

static int dql_run(struct op_call *c)
{
	const struct cpu_quant *q = (const struct cpu_quant *)c->params;
	const struct op_tensor *x = &c->in[0], *s = &c->in[1], *y = &c->out[0];
	const struct op_tensor *zp = c->n_in > 2 && op_tensor_present(&c->in[2]) ? &c->in[2] : NULL;
	bool qfloat = op_dtype_in(x->dtype, QUANT_DTS_QFLOAT);
	int64_t i;
	int ret;

	if (qfloat && zp != NULL && (ret = quant_zp_check_zero(c->node, "x_zero_point", zp)) < 0)
		return ret;
	for (i = 0; i < q->n; i++) {
		int64_t k = cpu_quant_at(q, i);
		double d = qfloat ? cpu_load_d(x->data, x->dtype, i)
				  : (double)(cpu_load_i(x->data, x->dtype, i) - quant_zp(zp, k));

		cpu_store_f(y->data, y->dtype, i, (float)(d * quant_load_d(s->data, s->dtype, k)));
	}
	return 0;
}

/* ---------------------------------------------------- DynamicQuantizeLinear */

static int dyn_infer(struct op_infer *x)
{
	int ret = quant_check_dtype(x->node, "x", x->in[0].dtype, OP_DT(CEP_DTYPE_FLOAT32));
	int i;

	if (ret < 0)
		return ret;
	op_infer_like_input(x);
	x->out[0].dtype = CEP_DTYPE_UINT8;
	for (i = 1; i < x->n_out; i++) {
		x->out[i].dtype = i == 1 ? CEP_DTYPE_FLOAT32 : CEP_DTYPE_UINT8;
		x->out[i].rank = 0;
	}
	return 0;
}

/* The scale and zero point of the range [lo, hi] (lo <= 0 <= hi), in
 * float32 as the device kernel computes them too. */
static void dyn_params(float lo, float hi, float *scale, uint8_t *zp)
{
	float s = (hi == lo ? 1.0f : hi - lo) / 255.0f;
	float z = 0.0f - lo / s;

	*scale = s;
	*zp = (uint8_t)nearbyintf(fmaxf(0.0f, fminf(255.0f, z)));
}

static int dyn_run(struct op_call *c)
{
	const float *x = c->in[0].data;
	int64_t n = cpu_numel(&c->in[0]), i;
	float lo = 0.0f, hi = 0.0f, scale;
	uint8_t zp;

	for (i = 0; i < n; i++) {
		/* A NaN is neither below nor above: passed over. */
		if (x[i] < lo)
			lo = x[i];
		if (x[i] > hi)
			hi = x[i];
	}
	dyn_params(lo, hi, &scale, &zp);
	for (i = 0; i < n; i++)
		((uint8_t *)c->out[0].data)[i] = (uint8_t)quant_saturate(x[i] / scale, zp, 0, 255);
	if (c->n_out > 1 && c->out[1].data != NULL)
		*(float *)c->out[1].data = scale;
	if (c->n_out > 2 && c->out[2].data != NULL)
		*(uint8_t *)c->out[2].data = zp;
	return 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_schema schemas[] = {
	{ "", "QuantizeLinear", 10, OP_OPSET_MAX, 2, 3, 1, 1, 0, 0, ql_infer },
	{ "", "DequantizeLinear", 10, OP_OPSET_MAX, 2, 3, 1, 1, 0, 0, dql_infer },
	{ "", "DynamicQuantizeLinear", 11, OP_OPSET_MAX, 1, 1, 3, 3, 0, 0, dyn_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "QuantizeLinear", 10, 18, BACKEND_HOST, QUANT_DTS_QL_10, ql_prepare, ql_run },
	{ "", "QuantizeLinear", 19, OP_OPSET_MAX, BACKEND_HOST, QUANT_DTS_QL_19, ql_prepare, ql_run },
	{ "", "DequantizeLinear", 10, 18, BACKEND_HOST, QUANT_DTS_DQL, dql_prepare, dql_run },
	{ "", "DequantizeLinear", 19, 20, BACKEND_HOST, QUANT_DTS_DQL_19, dql_prepare, dql_run },
	{ "", "DequantizeLinear", 21, OP_OPSET_MAX, BACKEND_HOST, QUANT_DTS_DQL_21, dql_prepare,
	  dql_run },
	{ "", "DynamicQuantizeLinear", 11, OP_OPSET_MAX, BACKEND_HOST, OP_DT(CEP_DTYPE_FLOAT32),
	  NULL, dyn_run },
};

const struct op_family op_family_cpu_quant = {
	"cpu_quant", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
