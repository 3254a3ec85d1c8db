/*
 * engine_check.c — a run's tensors checked against the model
 * (engine_run_check(), engine/engine.h): where caller data meets the
 * engine. Every input must be a model input, given once, of the model's
 * dtype, with a shape that binds to the model's dimensions (fixed ones
 * equal, symbolic ones agreeing across inputs), bytes that the shape
 * needs and data behind them; every output asked for must be a model
 * output, asked for once.
 *
 * What runs the tensors afterwards (engine_run.c, engine_batch.c) trusts
 * them and checks only what depends on the plan (an output's room). The
 * check allocates nothing: the symbol bindings and the output slots it
 * fills are the session's scratch, which the run path fills again.
 *
 * Above sessions (it reads the session's model and scratch); nothing in
 * the engine calls it.
 */
#include "engine/engine_priv.h"

#include <stdbool.h>
#include <string.h>

#include "common/error.h"
#include "engine/model.h"
#include "engine/shape.h"

/* What an output slot holds while the check marks the outputs asked for. */
static char slot_taken;

/* Checks x, given for graph input i, against it: dtype, shape (bound in
 * bind), bytes and data. */
static int input_check(const struct graph *g, int i, const struct engine_input *x,
		       struct shape_binding *bind)
{
	const struct graph_value *val = &g->values[g->inputs[i]];
	struct op_tensor t;
	int64_t numel;
	size_t want;
	int ret;

	if (x->dtype != val->t.dtype)
		return cep__set_error(CEP_EDTYPE, "input '%s' is %s, the model wants %s",
				      val->name, cep_dtype_name(x->dtype),
				      cep_dtype_name(val->t.dtype));
	if (x->rank > 0 && !x->dims)
		return cep__set_error(CEP_EINVAL, "input '%s' has no dims", val->name);
	/* The rank is in 0..CEP_MAX_RANK and every dimension >= 0 from here. */
	ret = shape_bind_input(g, g->inputs[i], x->rank, x->dims, bind);
	if (ret < 0)
		return ret;
	memset(&t, 0, sizeof(t));
	t.dtype = x->dtype;
	t.rank = x->rank;
	if (x->rank > 0)
		memcpy(t.dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
	ret = op_tensor_numel(&t, &numel);
	if (ret < 0)
		return cep__set_error(ret, "input '%s' has more than 2^40 elements", val->name);
	want = (size_t)numel * cep_dtype_size(t.dtype);
	if (x->bytes != want)
		return cep__set_error(CEP_ESHAPE, "input '%s' has %zu bytes, its shape needs %zu",
				      val->name, x->bytes, want);
	if (want && !x->data)
		return cep__set_error(CEP_EINVAL, "input '%s' has no data", val->name);
	return 0;
}

/* Checks the inputs' names (each a model input, none repeated, none
 * missing), then each input against its graph input, in graph order. */
static int inputs_check(engine_session *s, const struct engine_input *in, size_t n_in)
{
	const struct graph *g = &s->m->model->g;
	size_t j;
	int i, ret;

	for (j = 0; j < n_in; j++) {
		int v = in[j].name ? graph_value_find(g, in[j].name) : -1;

		if (v < 0 || !(g->values[v].flags & GRAPH_VALUE_INPUT))
			return cep__set_error(CEP_EINVAL, "'%s' is not an input of the model",
					      in[j].name ? in[j].name : "(null)");
	}
	shape_binding_reset(&s->bind);
	for (i = 0; i < g->n_inputs; i++) {
		const char *name = g->values[g->inputs[i]].name;
		const struct engine_input *x = NULL;

		for (j = 0; j < n_in; j++) {
			if (strcmp(in[j].name, name) != 0)
				continue;
			if (x)
				return cep__set_error(CEP_EINVAL, "input '%s' is given twice", name);
			x = &in[j];
		}
		if (!x)
			return cep__set_error(CEP_EINVAL, "input '%s' is missing", name);
		ret = input_check(g, i, x, &s->bind);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Checks the outputs' names: each a model output, none asked for twice. */
static int outputs_check(engine_session *s, const struct engine_output *out, size_t n_out)
{
	const struct graph *g = &s->m->model->g;
	size_t j;
	int i;

	for (i = 0; i < g->n_outputs; i++)
		s->out_ptr[i] = NULL;
	for (j = 0; j < n_out; j++) {
		for (i = 0; i < g->n_outputs; i++) {
			if (out[j].name && strcmp(out[j].name, g->values[g->outputs[i]].name) == 0)
				break;
		}
		if (i == g->n_outputs)
			return cep__set_error(CEP_EINVAL, "'%s' is not an output of the model",
					      out[j].name ? out[j].name : "(null)");
		if (s->out_ptr[i])
			return cep__set_error(CEP_EINVAL, "output '%s' is asked for twice", out[j].name);
		s->out_ptr[i] = &slot_taken;
	}
	return 0;
}

int engine_run_check(engine_session *s, const struct engine_input *inputs, size_t n_inputs,
		     const struct engine_output *outputs, size_t n_outputs)
{
	int ret;

	cep__clear_error();
	if ((n_inputs && !inputs) || (n_outputs && !outputs))
		return cep__set_error(CEP_EINVAL, "a run of %zu inputs and %zu outputs without "
				      "their arrays", n_inputs, n_outputs);
	ret = inputs_check(s, inputs, n_inputs);
	if (ret < 0)
		return ret;
	return outputs_check(s, outputs, n_outputs);
}
