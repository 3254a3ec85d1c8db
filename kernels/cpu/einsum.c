/*
 * einsum.c — Einsum (opset 12; bfloat16 from 28): any equation in the
 * explicit ("ij,jk->ik") or implicit ("ij,jk") form over any number of
 * operands (up to EINSUM_MAX_OPS), with an ellipsis standing for the
 * same number of dimensions in every term that has one (broadcast where
 * a size is 1), repeated indices in one term (diagonals, traces), and
 * sums over every index the output lacks. The implicit output is the
 * ellipsis' dimensions, then the indices that appear exactly once,
 * sorted by their ASCII value (upper case first). Spaces are ignored.
 * float32, float16, double and the integer types; bfloat16 from opset 28.
 * Floats are multiplied and summed in float32 (half types rounded once at
 * the end), float64 in double, integers in int64, wrapping to their width
 * as products and sums in that type do.
 *
 * The equation is resolved against the shapes by kernels/cpu/einsum.h,
 * shared with the CUDA kernel; the reference is the definition itself:
 * for each output element, the sum over the summed indices, innermost
 * the last summed index, of the operands' product taken in operand order.
 */
#include "kernels/cpu/einsum.h"

#include <inttypes.h>
#include <stdio.h>

#include "kernels/cpu/cpu.h"

#define EINSUM_ELLIPSIS (-1)
#define EINSUM_LABELS 52
#define EINSUM_TERM_MAX 32      /* tokens a term may have */

/* A term: its tokens, label ids or EINSUM_ELLIPSIS. */
struct einsum_term {
	int n;
	int tok[EINSUM_TERM_MAX];
	int labels;                 /* tokens other than the ellipsis */
	bool ellipsis;
};

/* The id of a label in ASCII order (upper case first), or -1. */
static int einsum_label(char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return 26 + (ch - 'a');
	return -1;
}

static char einsum_char(int id)
{
	return (char)(id < 26 ? 'A' + id : 'a' + (id - 26));
}

/* Parses the term s[0, len) (which: the input's number, -1 for the
 * output, for messages). */
static int einsum_term_parse(const char *s, size_t len, int which, struct einsum_term *t)
{
	char name[32];
	size_t i = 0;

	if (which >= 0)
		snprintf(name, sizeof(name), "term %d", which);
	else
		snprintf(name, sizeof(name), "the output");
	memset(t, 0, sizeof(*t));
	while (i < len) {
		int tok;

		if (s[i] == '.') {
			if (i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
				return cep__set_error(CEP_EMODEL, "Einsum: %s has a '.' that is not "
						      "part of '...'", name);
			if (t->ellipsis)
				return cep__set_error(CEP_EMODEL, "Einsum: %s has more than one "
						      "ellipsis", name);
			t->ellipsis = true;
			tok = EINSUM_ELLIPSIS;
			i += 3;
		} else {
			tok = einsum_label(s[i]);
			if (tok < 0)
				return cep__set_error(CEP_EMODEL, "Einsum: %s has the character '%c', "
						      "which is not a letter, ',', '->' or '...'",
						      name, s[i]);
			t->labels++;
			i++;
		}
		if (t->n == EINSUM_TERM_MAX)
			return cep__set_error(CEP_EMODEL, "Einsum: %s has more than %d indices", name,
					      EINSUM_TERM_MAX);
		t->tok[t->n++] = tok;
	}
	return 0;
}

/* Broadcasts the sizes a and b of one index: 0, or -1 when both are
 * fixed, differ and neither is 1. */
static int einsum_combine(int64_t a, int64_t b, int64_t *out)
{
	if (a == b || b == 1) {
		*out = a;
		return 0;
	}
	if (a == 1) {
		*out = b;
		return 0;
	}
	if (op_dim_fixed(a) && op_dim_fixed(b))
		return -1;
	*out = op_dim_fixed(a) ? a : op_dim_fixed(b) ? b : OP_DIM_UNKNOWN;
	return 0;
}

/* Names loop l's index for messages: a letter, or a dim of the
 * ellipsis. */
static void einsum_index_name(const int *label_of_loop, int ell0, int l, char *buf, size_t len)
{
	if (label_of_loop[l] >= 0)
		snprintf(buf, len, "index '%c'", einsum_char(label_of_loop[l]));
	else
		snprintf(buf, len, "dimension %d of the ellipsis", l - ell0);
}

/* Reads the equation without its spaces into buf (EINSUM_MAX_EQUATION
 * + 1 bytes). */
static int einsum_equation(const struct op_node *node, char *buf)
{
	const char *eq;
	size_t n = 0;
	int ret;

	ret = op_attr_check(node, "equation", OP_ATTR_STRING);
	if (ret < 0)
		return ret;
	eq = op_attr_string(node, "equation", NULL);
	if (eq == NULL)
		return cep__set_error(CEP_EMODEL, "Einsum: attribute 'equation' is required");
	for (; *eq != '\0'; eq++) {
		if (*eq == ' ')
			continue;
		if (n == EINSUM_MAX_EQUATION)
			return cep__set_error(CEP_EMODEL, "Einsum: the equation is longer than %d "
					      "characters", EINSUM_MAX_EQUATION);
		buf[n++] = *eq;
	}
	buf[n] = '\0';
	return 0;
}

/* The terms of the inputs (n_in of them) and of the output (*has_out:
 * whether the equation is explicit). */
static int einsum_terms(const char *eq, int n_in, struct einsum_term *terms,
			struct einsum_term *out, bool *has_out)
{
	const char *arrow = strstr(eq, "->"), *end, *p = eq;
	int k = 0, ret;

	*has_out = arrow != NULL;
	end = arrow ? arrow : eq + strlen(eq);
	if (arrow && strstr(arrow + 2, "->"))
		return cep__set_error(CEP_EMODEL, "Einsum: the equation has more than one '->'");
	for (;;) {
		const char *q = memchr(p, ',', (size_t)(end - p));
		const char *stop = q ? q : end;

		if (k == n_in)
			return cep__set_error(CEP_EMODEL, "Einsum: the equation has more terms than "
					      "the %d inputs", n_in);
		ret = einsum_term_parse(p, (size_t)(stop - p), k, &terms[k]);
		if (ret < 0)
			return ret;
		k++;
		if (!q)
			break;
		p = q + 1;
	}
	if (k != n_in)
		return cep__set_error(CEP_EMODEL, "Einsum: the equation has %d terms but there are %d "
				      "inputs", k, n_in);
	memset(out, 0, sizeof(*out));
	if (!arrow)
		return 0;
	if (strchr(arrow + 2, ','))
		return cep__set_error(CEP_EMODEL, "Einsum: the output has a ','");
	return einsum_term_parse(arrow + 2, strlen(arrow + 2), -1, out);
}

int cpu_einsum_parse(const struct op_node *node, const struct op_tensor *in, int n_in,
		     struct cpu_einsum *e)
{
	struct einsum_term terms[EINSUM_MAX_OPS], out;
	int count[EINSUM_LABELS] = { 0 }, loop_of[EINSUM_LABELS], label_of_loop[EINSUM_MAX_LOOPS];
	char eq[EINSUM_MAX_EQUATION + 1], what[48];
	bool has_out = false, set[EINSUM_MAX_LOOPS] = { false };
	int ell = -1, ell0 = -1, n = 0, o, i, j, ret;

	memset(e, 0, sizeof(*e));
	if (n_in > EINSUM_MAX_OPS)
		return cep__set_error(CEP_EUNSUPPORTED, "Einsum: %d inputs, at most %d are supported",
				      n_in, EINSUM_MAX_OPS);
	ret = einsum_equation(node, eq);
	if (ret == 0)
		ret = einsum_terms(eq, n_in, terms, &out, &has_out);
	if (ret < 0)
		return ret;
	/* The ellipsis' length, the same wherever it appears. */
	for (o = 0; o < n_in; o++) {
		const struct einsum_term *t = &terms[o];
		int er = in[o].rank - t->labels;

		if ((!t->ellipsis && er != 0) || er < 0)
			return cep__set_error(CEP_EMODEL, "Einsum: term %d has %d indices but input %d "
					      "has rank %d", o, t->labels, o, in[o].rank);
		if (!t->ellipsis)
			continue;
		if (ell >= 0 && er != ell)
			return cep__set_error(CEP_EMODEL, "Einsum: the ellipsis stands for %d "
					      "dimensions in one term but %d in term %d", ell, er, o);
		ell = er;
	}
	for (o = 0; o < n_in; o++) {
		for (i = 0; i < terms[o].n; i++) {
			if (terms[o].tok[i] != EINSUM_ELLIPSIS)
				count[terms[o].tok[i]]++;
		}
	}
	/* The output's tokens: given, or the implicit ones. */
	if (has_out) {
		bool seen[EINSUM_LABELS] = { false };

		for (i = 0; i < out.n; i++) {
			int id = out.tok[i];

			if (id == EINSUM_ELLIPSIS)
				continue;
			if (count[id] == 0)
				return cep__set_error(CEP_EMODEL, "Einsum: output index '%c' is in no "
						      "input term", einsum_char(id));
			if (seen[id])
				return cep__set_error(CEP_EMODEL, "Einsum: output index '%c' is "
						      "repeated", einsum_char(id));
			seen[id] = true;
		}
		if (ell > 0 && !out.ellipsis)
			return cep__set_error(CEP_EMODEL, "Einsum: the inputs have an ellipsis but "
					      "the output does not");
	} else {
		if (ell >= 0)
			out.tok[out.n++] = EINSUM_ELLIPSIS;
		for (i = 0; i < EINSUM_LABELS; i++) {
			if (count[i] != 1)
				continue;
			if (out.n == EINSUM_TERM_MAX)
				return cep__set_error(CEP_EUNSUPPORTED, "Einsum: the output would have "
						      "more than %d dimensions", CEP_MAX_RANK);
			out.tok[out.n++] = i;
		}
	}
	if (ell < 0)
		ell = 0;
	/* The loops: the output's, then the summed indices. */
	for (i = 0; i < out.n; i++)
		n += out.tok[i] == EINSUM_ELLIPSIS ? ell : 1;
	if (n > CEP_MAX_RANK)
		return cep__set_error(CEP_EUNSUPPORTED, "Einsum: the output would have %d dimensions, "
				      "more than %d", n, CEP_MAX_RANK);
	n = 0;
	for (i = 0; i < EINSUM_LABELS; i++)
		loop_of[i] = -1;
	for (i = 0; i < out.n; i++) {
		if (out.tok[i] == EINSUM_ELLIPSIS) {
			ell0 = n;
			for (j = 0; j < ell; j++)
				label_of_loop[n++] = -1;
			continue;
		}
		loop_of[out.tok[i]] = n;
		label_of_loop[n++] = out.tok[i];
	}
	e->n_out = (int8_t)n;
	for (o = 0; o < n_in; o++) {
		for (i = 0; i < terms[o].n; i++) {
			int id = terms[o].tok[i];

			if (id == EINSUM_ELLIPSIS || loop_of[id] >= 0)
				continue;
			if (n == e->n_out + EINSUM_MAX_SUMMED)
				return cep__set_error(CEP_EUNSUPPORTED, "Einsum: more than %d indices are "
						      "summed over", EINSUM_MAX_SUMMED);
			loop_of[id] = n;
			label_of_loop[n++] = id;
		}
	}
	e->n_loops = (int8_t)n;
	e->n_ops = (int8_t)n_in;
	/* Each axis' loop, and the sizes. */
	for (o = 0; o < n_in; o++) {
		const struct einsum_term *t = &terms[o];
		int64_t mine[EINSUM_MAX_LOOPS] = { 0 };
		bool here[EINSUM_MAX_LOOPS] = { false };
		int a = 0;

		e->rank[o] = (int8_t)in[o].rank;
		for (i = 0; i < t->n; i++) {
			int first = t->tok[i] == EINSUM_ELLIPSIS ? ell0 : loop_of[t->tok[i]];
			int span = t->tok[i] == EINSUM_ELLIPSIS ? ell : 1;

			for (j = 0; j < span; j++, a++) {
				int l = first + j;
				int64_t d = in[o].dims[a];

				e->loop[o][a] = (int8_t)l;
				einsum_index_name(label_of_loop, ell0, l, what, sizeof(what));
				if (!here[l]) {
					here[l] = true;
					mine[l] = d;
				} else if (op_dim_fixed(mine[l]) && op_dim_fixed(d) && mine[l] != d) {
					return cep__set_error(CEP_ESHAPE, "Einsum: input %d has sizes %"
							      PRId64 " and %" PRId64 " for %s",
							      o, mine[l], d, what);
				} else {
					einsum_combine(mine[l], d, &mine[l]);
				}
			}
		}
		for (i = 0; i < n; i++) {
			if (!here[i])
				continue;
			if (!set[i]) {
				set[i] = true;
				e->size[i] = mine[i];
			} else if (einsum_combine(e->size[i], mine[i], &e->size[i]) < 0) {
				einsum_index_name(label_of_loop, ell0, i, what, sizeof(what));
				return cep__set_error(CEP_ESHAPE, "Einsum: %s has size %" PRId64 " in "
						      "input %d but %" PRId64 " before", what,
						      mine[i], o, e->size[i]);
			}
		}
	}
	return 0;
}

void cpu_einsum_strides(const struct cpu_einsum *e, const struct op_tensor *in,
			int64_t stride[EINSUM_MAX_OPS][EINSUM_MAX_LOOPS])
{
	int o, a;

	memset(stride, 0, sizeof(int64_t) * EINSUM_MAX_OPS * EINSUM_MAX_LOOPS);
	for (o = 0; o < e->n_ops; o++) {
		int64_t st = 1;

		for (a = e->rank[o] - 1; a >= 0; a--) {
			int l = e->loop[o][a];

			if (!(in[o].dims[a] == 1 && e->size[l] != 1))
				stride[o][l] += st;
			st *= in[o].dims[a];
		}
	}
}

/* ---------------------------------------------------------------- inference */

static int einsum_infer(struct op_infer *x)
{
	struct op_tensor *y = &x->out[0];
	struct cpu_einsum e;
	int i, ret;

	ret = op_infer_same_dtype(x, 0, x->n_in - 1);
	if (ret < 0)
		return ret;
	y->dtype = x->in[0].dtype;
	y->rank = -1;
	for (i = 0; i < x->n_in; i++) {
		if (!op_tensor_present(&x->in[i]))
			return cep__set_error(CEP_EMODEL, "Einsum: input %d is omitted", i);
		if (x->in[i].rank < 0)
			return 0;
	}
	ret = cpu_einsum_parse(x->node, x->in, x->n_in, &e);
	if (ret < 0)
		return ret;
	y->rank = e.n_out;
	for (i = 0; i < e.n_out; i++)
		y->dims[i] = e.size[i];
	return 0;
}

/* ------------------------------------------------------------------- kernel */

static int einsum_run(struct op_call *c)
{
	const struct op_tensor *y = &c->out[0];
	int64_t stride[EINSUM_MAX_OPS][EINSUM_MAX_LOOPS], base[EINSUM_MAX_OPS];
	int64_t off[EINSUM_MAX_OPS], idx[EINSUM_MAX_LOOPS], numel, sums = 1, e0, r;
	bool fl = cpu_is_float(y->dtype), wide = y->dtype == CEP_DTYPE_FLOAT64;
	struct cpu_einsum e;
	int o, l, ret;

	ret = cpu_einsum_parse(c->node, c->in, c->n_in, &e);
	if (ret < 0)
		return ret;
	cpu_einsum_strides(&e, c->in, stride);
	numel = cpu_numel(y);
	for (l = e.n_out; l < e.n_loops; l++)
		sums *= e.size[l];
	for (e0 = 0; e0 < numel; e0++) {
		int64_t rem = e0;
		uint64_t iacc = 0;
		float facc = 0.0f;
		double dacc = 0.0;

		for (o = 0; o < e.n_ops; o++)
			base[o] = 0;
		for (l = e.n_out - 1; l >= 0; l--) {
			int64_t i = rem % e.size[l];

			rem /= e.size[l];
			for (o = 0; o < e.n_ops; o++)
				base[o] += i * stride[o][l];
		}
		for (o = 0; o < e.n_ops; o++)
			off[o] = base[o];
		for (l = e.n_out; l < e.n_loops; l++)
			idx[l] = 0;
		for (r = 0; r < sums; r++) {
			if (wide) {
				double p = cpu_load_d(c->in[0].data, c->in[0].dtype, off[0]);

				for (o = 1; o < e.n_ops; o++)
					p *= cpu_load_d(c->in[o].data, c->in[o].dtype, off[o]);
				dacc += p;
			} else if (fl) {
				float p = cpu_load_f(c->in[0].data, c->in[0].dtype, off[0]);

				for (o = 1; o < e.n_ops; o++)
					p *= cpu_load_f(c->in[o].data, c->in[o].dtype, off[o]);
				facc += p;
			} else {
				uint64_t p = (uint64_t)cpu_load_i(c->in[0].data, c->in[0].dtype, off[0]);

				for (o = 1; o < e.n_ops; o++)
					p *= (uint64_t)cpu_load_i(c->in[o].data, c->in[o].dtype, off[o]);
				iacc += p;
			}
			/* The next summed position, the last index fastest. */
			for (l = e.n_loops - 1; l >= e.n_out; l--) {
				for (o = 0; o < e.n_ops; o++)
					off[o] += stride[o][l];
				if (++idx[l] < e.size[l])
					break;
				for (o = 0; o < e.n_ops; o++)
					off[o] -= stride[o][l] * e.size[l];
				idx[l] = 0;
			}
		}
		if (wide)
			cpu_store_d(y->data, y->dtype, e0, dacc);
		else if (fl)
			cpu_store_f(y->data, y->dtype, e0, facc);
		else
			cpu_store_i(y->data, y->dtype, e0, (int64_t)iacc);
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

/* T of opset 12 among the stored types: no bfloat16, no bool. */
#define EINSUM_DTS_12 ((OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16)) | OP_DTS_INT)

static const struct op_schema schemas[] = {
	{ "", "Einsum", 12, OP_OPSET_MAX, 1, -1, 1, 1, 0, 0, einsum_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Einsum", 12, 27, BACKEND_HOST, EINSUM_DTS_12, NULL, einsum_run },
	{ "", "Einsum", 28, OP_OPSET_MAX, BACKEND_HOST, EINSUM_DTS_12 | OP_DT(CEP_DTYPE_BFLOAT16),
	  NULL, einsum_run },
};

const struct op_family op_family_cpu_einsum = {
	"cpu_einsum", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
