/*
 * engine_model.c — loaded models (engine/engine.h), the bottom layer of
 * the engine's sessions: loading one (parse, check and optimize through
 * engine/model.h, then convert to half for an fp16 or bf16 load through
 * engine/precision.h), its reference count, the description of its inputs
 * and outputs, whether its runs may be batched (decided once, here, at
 * load), and what it was loaded from.
 *
 * A model calls nothing above it: the model cache (engine_cache.c), which
 * must hear of a cached model's last reference, wires m->release when it
 * adds the model, and engine_model_unref() calls that before freeing.
 * Sessions (engine_session.c) take and drop references.
 */
#include "engine/engine_priv.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "engine/model.h"
#include "engine/precision.h"

/* ------------------------------------------------------------------ models */

static void info_fill(const struct graph *g, int v, struct engine_tensor_info *info)
{
	const struct graph_value *val = &g->values[v];
	int i;

	info->name = val->name;
	info->dtype = val->t.dtype;
	info->rank = val->t.rank;
	for (i = 0; i < val->t.rank; i++) {
		int64_t d = val->t.dims[i];

		info->dims[i] = op_dim_fixed(d) ? d : -1;
		info->dim_params[i] = op_dim_symbolic(d) && op_dim_symbol(d) < g->n_syms
					      ? g->syms[op_dim_symbol(d)] : NULL;
	}
}

/* Whether info has a symbolic dimension 0 named batch (NULL: any name,
 * stored there), else why not in m's batch_why. */
static bool batch_dim_check(engine_model *m, const struct engine_tensor_info *info,
			    const char *what, const char **batch)
{
	if (info->rank < 1 || info->dims[0] != -1 || !info->dim_params[0]) {
		snprintf(m->batch_why, sizeof(m->batch_why), "%s '%s' has no symbolic "
			 "dimension 0 to batch along", what, info->name);
		return false;
	}
	if (!*batch) {
		*batch = info->dim_params[0];
		return true;
	}
	if (strcmp(*batch, info->dim_params[0]) == 0)
		return true;
	snprintf(m->batch_why, sizeof(m->batch_why), "%s '%s' has dimension 0 '%s', "
		 "not the batch '%s' of the others", what, info->name,
		 info->dim_params[0], *batch);
	return false;
}

/* Decides once, at load, whether m's runs may be merged along dimension
 * 0 (engine_model_batchable()). */
static void batch_check(engine_model *m)
{
	const struct graph *g = &m->model->g;
	const char *batch = NULL;
	int i;

	m->batch_err = CEP_EINVAL;
	if (g->n_inputs == 0) {
		snprintf(m->batch_why, sizeof(m->batch_why), "the model has no inputs");
		return;
	}
	for (i = 0; i < g->n_inputs; i++)
		if (!batch_dim_check(m, &m->inputs[i], "input", &batch))
			return;
	for (i = 0; i < g->n_outputs; i++)
		if (!batch_dim_check(m, &m->outputs[i], "output", &batch))
			return;
	m->batch_err = 0;
}

/* What a model loaded with o is, as the cache compares it: tf32 is fp32
 * (the same graph), and only a half graph depends on the backend kind.
 * Fails with CEP_EINVAL for a precision out of range. */
int engine__model_key(const struct engine_model_options *o, struct engine_model_options *key)
{
	memset(key, 0, sizeof(*key));
	if (!o)
		return 0;
	if ((unsigned)o->precision > CEP_PRECISION_BF16)
		return cep__set_error(CEP_EINVAL, "unknown precision %d", (int)o->precision);
	if (precision_half_dtype(o->precision) == CEP_DTYPE_UNDEFINED)
		return 0;
	key->precision = o->precision;
	key->backend = o->backend;
	return 0;
}

int engine_model_load(const void *bytes, size_t len, int dir_fd,
		      engine_model **out)
{
	return engine_model_load_as(bytes, len, dir_fd, NULL, out);
}

int engine_model_load_as(const void *bytes, size_t len, int dir_fd,
			 const struct engine_model_options *o, engine_model **out)
{
	engine_model *m = NULL;
	const struct graph *g;
	cep_dtype half;
	int i, ret;

	*out = NULL;
	cep__clear_error();
	m = calloc(1, sizeof(*m));
	if (!m)
		return cep__set_error(CEP_ENOMEM, NULL);
	atomic_init(&m->refs, 1);
	m->dir_fd = -1;
	pthread_mutex_init(&m->homes_lock, NULL);
	m->pstats.first_float_node = -1;
	ret = engine__model_key(o, &m->key);
	if (ret < 0)
		goto out;
	ret = model_load(bytes, len, dir_fd, &m->model);
	if (ret < 0)
		goto out;
	half = precision_half_dtype(m->key.precision);
	if (half != CEP_DTYPE_UNDEFINED) {
		ret = precision_model_convert(m->model, half, m->key.backend, &m->pstats);
		if (ret < 0)
			goto out;
	}
	g = &m->model->g;
	m->inputs = calloc((size_t)g->n_inputs + 1, sizeof(*m->inputs));
	m->outputs = calloc((size_t)g->n_outputs + 1, sizeof(*m->outputs));
	if (!m->inputs || !m->outputs) {
		ret = cep__set_error(CEP_ENOMEM, NULL);
		goto out;
	}
	for (i = 0; i < g->n_inputs; i++)
		info_fill(g, g->inputs[i], &m->inputs[i]);
	for (i = 0; i < g->n_outputs; i++)
		info_fill(g, g->outputs[i], &m->outputs[i]);
	batch_check(m);
	*out = m;
	m = NULL;
	ret = 0;
out:
	engine_model_unref(m);
	return ret;
}

void engine_model_ref(engine_model *m)
{
	atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
}

void engine_model_unref(engine_model *m)
{
	if (!m || atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (m->release)
		m->release(m);
	free(m->bytes);
	if (m->dir_fd >= 0)
		close(m->dir_fd);
	pthread_mutex_destroy(&m->homes_lock);
	model_free(m->model);
	free(m->inputs);
	free(m->outputs);
	free(m);
}

int engine_model_input_count(const engine_model *m)
{
	return m->model->g.n_inputs;
}

int engine_model_output_count(const engine_model *m)
{
	return m->model->g.n_outputs;
}

const struct engine_tensor_info *engine_model_input(const engine_model *m, int i)
{
	return i >= 0 && i < m->model->g.n_inputs ? &m->inputs[i] : NULL;
}

const struct engine_tensor_info *engine_model_output(const engine_model *m, int i)
{
	return i >= 0 && i < m->model->g.n_outputs ? &m->outputs[i] : NULL;
}

int engine_model_node_count(const engine_model *m)
{
	return graph_live_nodes(&m->model->g);
}

cep_precision engine_model_precision(const engine_model *m)
{
	return m->key.precision;
}

void engine_model_precision_stats(const engine_model *m, struct engine_precision_stats *out)
{
	*out = m->pstats;
}

const char *engine_precision_name(cep_precision p)
{
	return precision_name(p);
}

void engine_model_source(const engine_model *m, const void **bytes, size_t *len,
			 int *dir_fd)
{
	*bytes = m->bytes;
	*len = m->bytes != NULL ? m->len : 0;
	*dir_fd = m->dir_fd;
}

int engine_model_batchable(const engine_model *m)
{
	if (m->batch_err == 0)
		return 0;
	return cep__set_error(m->batch_err, "%s", m->batch_why);
}
