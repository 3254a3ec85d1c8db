/*
 * dropout.c — Dropout as inference runs it: the output is the input, and
 * the optional mask is all true (of the input's type before opset 10, bool
 * from 10 on).
 *
 * From opset 12 the ratio and training_mode are optional inputs. Training
 * mode with a nonzero ratio drops random elements, which cudaep does not
 * do: it is refused when loading if training_mode is a constant, else by
 * the run that sees it true. With ratio 0 training drops nothing, so it is
 * the same identity and runs. Before opset 7 the node said its mode
 * itself, is_test=0 (the default) meaning training: refused the same way
 * unless its ratio is 0. Opset 1's consumed_inputs is ignored.
 */
#include "kernels/cpu/cpu.h"

static int dropout_infer(struct op_infer *x)
{
	const struct op_node *node = x->node;
	const struct op_tensor *in = &x->in[0];
	int ret;

	if ((ret = op_attr_check(node, "ratio", OP_ATTR_FLOAT)) < 0 ||
	    (ret = op_attr_check(node, "seed", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "is_test", OP_ATTR_INT)) < 0)
		return ret;
	if (node->opset < 7 && op_attr_int(node, "is_test", 0) == 0 &&
	    op_attr_float(node, "ratio", 0.5f) != 0.0f)
		return cep__set_error(CEP_EUNSUPPORTED, "Dropout (opset %d): is_test=0 asks for training mode with ratio %g; only inference (is_test=1) is supported",
				      node->opset, (double)op_attr_float(node, "ratio", 0.5f));
	if (x->n_in > 1 && op_tensor_present(&x->in[1])) {
		const struct op_tensor *r = &x->in[1];

		if (!cpu_is_float(r->dtype))
			return cep__set_error(CEP_EDTYPE, "Dropout: ratio must be a float tensor, not %s",
					      cep_dtype_name(r->dtype));
		if (r->rank > 0)
			return cep__set_error(CEP_ESHAPE, "Dropout: ratio must be a scalar, not of rank %d",
					      r->rank);
	}
	if (x->n_in > 2 && op_tensor_present(&x->in[2])) {
		const struct op_tensor *t = &x->in[2];

		if (t->dtype != CEP_DTYPE_BOOL)
			return cep__set_error(CEP_EDTYPE, "Dropout: training_mode must be bool, not %s",
					      cep_dtype_name(t->dtype));
		if (t->rank > 0)
			return cep__set_error(CEP_ESHAPE, "Dropout: training_mode must be a scalar, not of rank %d",
					      t->rank);
		/* Refused now when the constants already say so. */
		if (t->data && *(const uint8_t *)t->data &&
		    (x->n_in < 2 || !op_tensor_present(&x->in[1]) ||
		     (x->in[1].data && cpu_load_f(x->in[1].data, x->in[1].dtype, 0) != 0.0f)))
			return cep__set_error(CEP_EUNSUPPORTED, "Dropout: training_mode is true with a nonzero ratio; only inference (training_mode false) is supported");
	}
	ret = op_infer_like_input(x);
	if (x->n_out > 1) {
		struct op_tensor *mask = &x->out[1];

		*mask = x->out[0];
		mask->dtype = x->node->opset < 10 ? in->dtype : CEP_DTYPE_BOOL;
	}
	return ret;
}

static int dropout_run(struct op_call *c)
{
	const struct op_tensor *in = &c->in[0];
	const struct op_tensor *mask = c->n_out > 1 && c->out[1].data ? &c->out[1] : NULL;
	size_t bytes = op_tensor_bytes(in);
	int64_t n = cpu_numel(in), i;

	if (c->n_in > 2 && op_tensor_present(&c->in[2]) && *(const uint8_t *)c->in[2].data) {
		float ratio = 0.5f;

		if (c->n_in > 1 && op_tensor_present(&c->in[1]))
			ratio = cpu_load_f(c->in[1].data, c->in[1].dtype, 0);
		if (ratio != 0.0f)
			return cep__set_error(CEP_EUNSUPPORTED, "Dropout: training_mode is true with ratio %g; only inference (training_mode false) is supported",
					      (double)ratio);
	}
	if (c->out[0].data != in->data && bytes)
		memcpy(c->out[0].data, in->data, bytes);
	if (!mask)
		return 0;
	if (mask->dtype == CEP_DTYPE_BOOL) {
		memset(mask->data, 1, (size_t)n);
		return 0;
	}
	for (i = 0; i < n; i++)
		cpu_store_f(mask->data, mask->dtype, i, 1.0f);
	return 0;
}

/* 7: no is_test; 10: the mask became bool; 12: ratio and training_mode
 * became inputs. */
static const struct op_schema schemas[] = {
	{ "", "Dropout", 1, 6, 1, 1, 1, 2, 0, 0, dropout_infer },
	{ "", "Dropout", 7, 9, 1, 1, 1, 2, 0, 0, dropout_infer },
	{ "", "Dropout", 10, 11, 1, 1, 1, 2, 0, 0, dropout_infer },
	{ "", "Dropout", 12, OP_OPSET_MAX, 1, 3, 1, 2, 0, 0, dropout_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Dropout", 1, 12, BACKEND_HOST, OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16), NULL,
	  dropout_run },
	{ "", "Dropout", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, NULL, dropout_run },
};

const struct op_family op_family_cpu_dropout = {
	"cpu_dropout", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
