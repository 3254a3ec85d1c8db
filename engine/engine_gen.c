/*
 * engine_gen.c — generation on a session (engine/engine.h): a decoder's
 * interface read from its model's inputs and outputs, one sequence's
 * key/value cache in the session's backend memory, and its steps, each a
 * run of the session's plans whose past inputs are copied from the cache
 * on the device and whose present outputs are copied back into it, so
 * that the cache never crosses to the host.
 *
 * The cache holds, per past input, rows x capacity slots, where a row is
 * every dimension before the sequence axis (batch 1: the heads) and a slot
 * one position of what follows it. Two ways of feeding it:
 *
 *   fixed  the past inputs always span the whole capacity. The slots
 *          written are the last len of each row; attention_mask is 0 for
 *          the others (which hold zeros and get no weight) and 1 for the
 *          written ones and the new tokens, and position_ids carries the
 *          positions. present is then capacity + n long, and its last
 *          capacity slots are the next cache: a 2-D copy drops the first
 *          n. Every decode step has the same shapes: one plan, captured
 *          and replayed.
 *   exact  the past inputs span the len slots written, present (len + n)
 *          is copied back whole: a plan per length, for models without
 *          attention_mask or position_ids.
 *
 * The last row of logits comes to the host, where sample.c chooses the
 * token. Above sessions and plans (engine_plans.c) and the executor; the
 * layer of single runs is beside it: it shares only engine_priv.h.
 */
#include "engine/engine_priv.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engine/exec.h"
#include "engine/model.h"
#include "engine/sample.h"
#include "kernels/cpu/cpu.h"

/* One past input, its present output and its slots in the cache. */
struct gen_past {
	int input;          /* among the graph inputs */
	int output;         /* among the graph outputs */
	int axis;           /* the sequence axis */
	int64_t dims[CEP_MAX_RANK]; /* the input's, batch 1 (axis: 0) */
	int rank;
	size_t rows;        /* elements before axis (batch 1) */
	size_t slot;        /* bytes of one position of one row */
	void *cache;        /* rows * capacity * slot bytes */
};

/* The inputs generation feeds from the host, by what they are. */
enum gen_role { GEN_IDS, GEN_MASK, GEN_POS, GEN_BRANCH, GEN_PAST };

struct engine_gen {
	engine_session *s;
	enum gen_role *role;        /* per graph input */
	int *past_of;               /* per graph input: its gen_past, or -1 */
	struct gen_past *past;
	int n_past;
	int logits;                 /* among the graph outputs */
	cep_dtype logits_dt;        /* as the plan makes them */
	cep_dtype ids_dt, mask_dt, pos_dt;
	bool fixed;
	uint32_t cap;
	uint32_t max_new;
	int64_t stop[CEP_GEN_STOP_MAX];
	uint32_t n_stop;
	struct sample_params sp;
	uint64_t rng;
	int64_t vocab;              /* 0 until the first plan says */
	int64_t len;                /* positions in the cache */
	int64_t *tokens;            /* the prompt, then what was generated
	                             * (cap + 1 entries) */
	size_t n_prompt, n_tokens;  /* prompt, and prompt + generated */
	bool started;
	cep_gen_reason reason;
	uint64_t kv_bytes;
	/* Host scratch for a step. */
	unsigned char *ids, *mask, *pos, branch[8];
	void *row_raw;              /* the last logits row as it comes */
	float *row;                 /* as float */
	unsigned char *seen;        /* a bit per token, for the penalty */
	int32_t *order;             /* the sampler's */
	size_t row_room;            /* bytes of row_raw; vocab of row/order/seen */
	struct engine_input *in;    /* per graph input */
	int64_t (*in_dims)[CEP_MAX_RANK];
};

/* ------------------------------------------------------------ the model */

/* Output i named name, or -1. */
static int output_named(const engine_model *m, const char *name)
{
	int i, n = engine_model_output_count(m);

	for (i = 0; i < n; i++) {
		if (strcmp(engine_model_output(m, i)->name, name) == 0)
			return i;
	}
	return -1;
}

/* The present output of past input name: "past_key_values.N.key" or
 * "past.N.key" (any "past" prefix) becomes "present.N.key". -1: none. */
static int present_of(const engine_model *m, const char *name)
{
	static const char *const prefixes[] = { "past_key_values", "past_key_value", "past" };
	char want[256];
	size_t k;

	for (k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++) {
		size_t n = strlen(prefixes[k]);
		int o;

		if (strncmp(name, prefixes[k], n) != 0)
			continue;
		snprintf(want, sizeof(want), "present%s", name + n);
		o = output_named(m, want);
		if (o >= 0)
			return o;
	}
	return -1;
}

static bool id_dtype(cep_dtype t)
{
	return t == CEP_DTYPE_INT64 || t == CEP_DTYPE_INT32;
}

/* Reads past input i's layout into *p: rank 3 or more, dimension 0 the
 * batch (symbolic or 1), one other symbolic dimension (the sequence), the
 * rest fixed. */
static int past_read(const engine_model *m, int i, struct gen_past *p)
{
	const struct engine_tensor_info *t = engine_model_input(m, i);
	size_t esize = cep_dtype_size(t->dtype);
	int d;

	p->input = i;
	p->axis = -1;
	p->rank = t->rank;
	p->rows = 1;
	p->slot = esize;
	if (t->rank < 3 || t->rank > CEP_MAX_RANK)
		return cep__set_error(CEP_EINVAL, "past input '%s' has rank %d; a key/value "
				      "cache has 3 or more dimensions", t->name, t->rank);
	if (t->dims[0] > 1)
		return cep__set_error(CEP_EINVAL, "past input '%s' has a batch of %lld; "
				      "generation runs one sequence", t->name,
				      (long long)t->dims[0]);
	p->dims[0] = 1;
	for (d = 1; d < t->rank; d++) {
		if (t->dims[d] >= 0) {
			p->dims[d] = t->dims[d];
			continue;
		}
		if (p->axis >= 0)
			return cep__set_error(CEP_EINVAL, "past input '%s' has dimensions %d and "
					      "%d unknown; a cache has only its sequence "
					      "length so", t->name, p->axis, d);
		p->axis = d;
		p->dims[d] = 0;
	}
	if (p->axis < 0)
		return cep__set_error(CEP_EINVAL, "past input '%s' has no symbolic sequence "
				      "dimension", t->name);
	for (d = 0; d < t->rank; d++) {
		if (d < p->axis)
			p->rows *= (size_t)p->dims[d];
		else if (d > p->axis)
			p->slot *= (size_t)p->dims[d];
	}
	p->output = present_of(m, t->name);
	if (p->output < 0)
		return cep__set_error(CEP_EINVAL, "past input '%s' has no present output "
				      "(present%s)", t->name,
				      strncmp(t->name, "past_key_values", 15) == 0 ?
				      t->name + 15 : t->name + 4);
	if (engine_model_output(m, p->output)->dtype != t->dtype)
		return cep__set_error(CEP_EINVAL, "present '%s' is %s, its past '%s' %s",
				      engine_model_output(m, p->output)->name,
				      cep_dtype_name(engine_model_output(m, p->output)->dtype),
				      t->name, cep_dtype_name(t->dtype));
	return 0;
}

/* Reads the decoder's interface from s's model into g. */
static int interface_read(engine_gen *g, const engine_model *m)
{
	int n_in = engine_model_input_count(m), i, n_ids = 0, n_mask = 0, n_pos = 0;
	int ret;

	g->role = calloc((size_t)n_in, sizeof(*g->role));
	g->past_of = calloc((size_t)n_in, sizeof(*g->past_of));
	g->past = calloc((size_t)n_in, sizeof(*g->past));
	if (!g->role || !g->past_of || !g->past)
		return cep__set_error(CEP_ENOMEM, "out of memory starting a generation");
	for (i = 0; i < n_in; i++) {
		const struct engine_tensor_info *t = engine_model_input(m, i);

		g->past_of[i] = -1;
		if (strcmp(t->name, "input_ids") == 0) {
			g->role[i] = GEN_IDS;
			g->ids_dt = t->dtype;
			n_ids++;
			if (!id_dtype(t->dtype) || t->rank != 2)
				return cep__set_error(CEP_EINVAL, "input 'input_ids' is %s of rank "
						      "%d; a decoder's is int64 or int32 "
						      "[batch, sequence]",
						      cep_dtype_name(t->dtype), t->rank);
		} else if (strcmp(t->name, "attention_mask") == 0) {
			g->role[i] = GEN_MASK;
			g->mask_dt = t->dtype;
			n_mask++;
			if (t->rank != 2)
				return cep__set_error(CEP_EINVAL, "input 'attention_mask' has rank "
						      "%d; a decoder's is [batch, total]",
						      t->rank);
		} else if (strcmp(t->name, "position_ids") == 0) {
			g->role[i] = GEN_POS;
			g->pos_dt = t->dtype;
			n_pos++;
			if (!id_dtype(t->dtype) || t->rank != 2)
				return cep__set_error(CEP_EINVAL, "input 'position_ids' is %s of "
						      "rank %d; a decoder's is int64 or int32 "
						      "[batch, sequence]",
						      cep_dtype_name(t->dtype), t->rank);
		} else if (strcmp(t->name, "use_cache_branch") == 0) {
			g->role[i] = GEN_BRANCH;
			if (t->dtype != CEP_DTYPE_BOOL || t->rank > 1)
				return cep__set_error(CEP_EINVAL, "input 'use_cache_branch' is %s "
						      "of rank %d; it is a bool [1]",
						      cep_dtype_name(t->dtype), t->rank);
		} else if (strncmp(t->name, "past", 4) == 0) {
			g->role[i] = GEN_PAST;
			g->past_of[i] = g->n_past;
			ret = past_read(m, i, &g->past[g->n_past]);
			if (ret < 0)
				return ret;
			g->n_past++;
		} else {
			return cep__set_error(CEP_EINVAL, "input '%s' is none a decoder has "
					      "(input_ids, attention_mask, position_ids, "
					      "past_key_values.N.key/value, use_cache_branch)",
					      t->name);
		}
	}
	if (n_ids != 1)
		return cep__set_error(CEP_EINVAL, "the model has no input 'input_ids': "
				      "generation runs decoders");
	if (g->n_past == 0)
		return cep__set_error(CEP_EINVAL, "the model has no past key/value inputs "
				      "(past_key_values.N.key): export it with its cache");
	g->logits = output_named(m, "logits");
	for (i = 0; g->logits < 0 && i < engine_model_output_count(m); i++) {
		int k;

		for (k = 0; k < g->n_past && g->past[k].output != i; k++)
			;
		if (k == g->n_past)
			g->logits = i;
	}
	if (g->logits < 0)
		return cep__set_error(CEP_EINVAL, "the model has no logits output");
	if (engine_model_output(m, g->logits)->rank != 3)
		return cep__set_error(CEP_EINVAL, "output '%s' has rank %d; logits are "
				      "[batch, sequence, vocabulary]",
				      engine_model_output(m, g->logits)->name,
				      engine_model_output(m, g->logits)->rank);
	return n_mask && n_pos ? 1 : 0;
}

/* ------------------------------------------------------------ the cache */

static void cache_free(engine_gen *g)
{
	engine_session *s = g->s;
	int k;

	for (k = 0; k < g->n_past; k++) {
		if (g->past[k].cache)
			backend_mem_free(s->be, g->past[k].cache,
					 g->past[k].rows * g->cap * g->past[k].slot);
		g->past[k].cache = NULL;
	}
	if (g->kv_bytes)
		account_uncharge(s->acc, s->owner, ALLOC_ROLE_KV_CACHE, g->kv_bytes);
	g->kv_bytes = 0;
}

/* Zeroes bytes of device memory at dst on s's stream, from a zero page. */
static int zero_fill(engine_session *s, unsigned char *dst, size_t bytes)
{
	static const unsigned char zeros[1u << 16];
	int ret = 0;

	while (bytes && ret == 0) {
		size_t n = bytes < sizeof(zeros) ? bytes : sizeof(zeros);

		ret = backend_copy_h2d(s->be, s->stream, dst, zeros, n);
		dst += n;
		bytes -= n;
	}
	return ret;
}

static int cache_make(engine_gen *g)
{
	engine_session *s = g->s;
	uint64_t total = 0;
	int k, ret;

	for (k = 0; k < g->n_past; k++) {
		uint64_t b = (uint64_t)g->past[k].rows * g->cap * g->past[k].slot;

		if (b / g->cap / g->past[k].slot != g->past[k].rows || total + b < total)
			return cep__set_error(CEP_ELIMIT, "a cache of %u positions overflows",
					      g->cap);
		total += b;
	}
	ret = account_charge(s->acc, s->owner, ALLOC_ROLE_KV_CACHE, total);
	if (ret < 0)
		return ret;
	g->kv_bytes = total;
	for (k = 0; k < g->n_past; k++) {
		size_t b = g->past[k].rows * g->cap * g->past[k].slot;

		ret = backend_mem_alloc(s->be, b, &g->past[k].cache);
		if (ret == 0)
			ret = zero_fill(s, g->past[k].cache, b);
		if (ret < 0)
			return ret;
	}
	return backend_stream_sync(s->be, s->stream);
}

/* ------------------------------------------------------------ new, free */

static int params_take(engine_gen *g, const struct engine_gen_params *p, size_t n_prompt)
{
	uint32_t i;

	if (p->max_new_tokens == 0)
		return cep__set_error(CEP_EINVAL, "max_new_tokens is 0; generate 1 or more");
	if (p->n_stop > CEP_GEN_STOP_MAX)
		return cep__set_error(CEP_EINVAL, "%u stop tokens; at most %d", p->n_stop,
				      CEP_GEN_STOP_MAX);
	if (p->n_stop && !p->stop)
		return cep__set_error(CEP_EINVAL, "stop tokens counted but not given");
	if ((unsigned)p->kv_mode > ENGINE_KV_EXACT)
		return cep__set_error(CEP_EINVAL, "kv_mode %d is out of range", (int)p->kv_mode);
	g->sp.temperature = p->temperature;
	g->sp.top_k = p->top_k;
	g->sp.top_p = p->top_p == 0.0f ? 1.0f : p->top_p;
	g->sp.repetition_penalty = p->repetition_penalty == 0.0f ? 1.0f :
				   p->repetition_penalty;
	if (sample_params_check(&g->sp) < 0)
		return CEP_EINVAL;
	if (n_prompt == 0)
		return cep__set_error(CEP_EINVAL, "the prompt is empty");
	if (n_prompt > UINT32_MAX / 2)
		return cep__set_error(CEP_ELIMIT, "a prompt of %zu tokens", n_prompt);
	g->cap = p->capacity ? p->capacity :
		 (uint32_t)(n_prompt + p->max_new_tokens > UINT32_MAX / 2 ?
			    UINT32_MAX / 2 : n_prompt + p->max_new_tokens);
	if (g->cap > UINT32_MAX / 2)
		return cep__set_error(CEP_ELIMIT, "a capacity of %u positions", g->cap);
	if (g->cap < n_prompt)
		return cep__set_error(CEP_ENOSPC, "a capacity of %u positions is smaller than "
				      "the prompt's %zu tokens", g->cap, n_prompt);
	g->max_new = p->max_new_tokens;
	g->n_stop = p->n_stop;
	for (i = 0; i < p->n_stop; i++)
		g->stop[i] = p->stop[i];
	g->rng = p->seed;
	return 0;
}

int engine_gen_new(engine_session *s, const int64_t *prompt, size_t n_prompt,
		   const struct engine_gen_params *p, engine_gen **out)
{
	const engine_model *m = s->m;
	int n_in = engine_model_input_count(m), ret;
	engine_gen *g;

	*out = NULL;
	cep__clear_error();
	g = calloc(1, sizeof(*g));
	if (!g)
		return cep__set_error(CEP_ENOMEM, "out of memory starting a generation");
	g->s = s;
	ret = params_take(g, p, n_prompt);
	if (ret == 0)
		ret = interface_read(g, m);
	if (ret < 0)
		goto fail;
	if (p->kv_mode == ENGINE_KV_FIXED && ret == 0) {
		ret = cep__set_error(CEP_EINVAL, "a fixed cache needs the inputs "
				     "attention_mask and position_ids");
		goto fail;
	}
	g->fixed = p->kv_mode == ENGINE_KV_EXACT ? false : ret == 1;
	g->tokens = malloc(((size_t)g->cap + 1) * sizeof(*g->tokens));
	g->ids = malloc((size_t)g->cap * 8);
	g->pos = malloc((size_t)g->cap * 8);
	g->mask = malloc(2 * (size_t)g->cap * 8);
	g->in = calloc((size_t)n_in, sizeof(*g->in));
	g->in_dims = calloc((size_t)n_in, sizeof(*g->in_dims));
	if (!g->tokens || !g->ids || !g->pos || !g->mask || !g->in || !g->in_dims) {
		ret = cep__set_error(CEP_ENOMEM, "out of memory starting a generation");
		goto fail;
	}
	memcpy(g->tokens, prompt, n_prompt * sizeof(*prompt));
	g->n_prompt = g->n_tokens = n_prompt;
	ret = cache_make(g);
	if (ret < 0)
		goto fail;
	*out = g;
	return 0;
fail:
	engine_gen_free(g);
	return ret;
}

void engine_gen_free(engine_gen *g)
{
	if (!g)
		return;
	cache_free(g);
	free(g->role);
	free(g->past_of);
	free(g->past);
	free(g->tokens);
	free(g->ids);
	free(g->pos);
	free(g->mask);
	free(g->row_raw);
	free(g->row);
	free(g->seen);
	free(g->order);
	free(g->in);
	free(g->in_dims);
	free(g);
}

void engine_gen_info(const engine_gen *g, struct engine_gen_info *out)
{
	memset(out, 0, sizeof(*out));
	out->prompt_tokens = g->n_prompt;
	out->tokens = g->n_tokens - g->n_prompt;
	out->positions = (uint64_t)g->len;
	out->capacity = g->cap;
	out->kv_mode = g->fixed ? ENGINE_KV_FIXED : ENGINE_KV_EXACT;
	out->kv_bytes = g->kv_bytes;
	out->vocab = g->vocab;
	out->reason = g->reason;
}

void engine_gen_cancel(engine_gen *g)
{
	if (g->reason == CEP_GEN_RUNNING)
		g->reason = CEP_GEN_CANCELLED;
}

/* ------------------------------------------------------------ a step */

/* Fills g->in for a step of n new tokens (the last n of g->tokens). */
static void inputs_fill(engine_gen *g, int64_t n)
{
	const engine_model *m = g->s->m;
	int64_t past = g->fixed ? (int64_t)g->cap : g->len, total = past + n, j;
	int i, d;

	for (i = 0; i < engine_model_input_count(m); i++) {
		const struct engine_tensor_info *t = engine_model_input(m, i);
		struct engine_input *x = &g->in[i];
		int64_t *dims = g->in_dims[i];

		x->name = t->name;
		x->dtype = t->dtype;
		x->rank = t->rank;
		x->dims = dims;
		switch (g->role[i]) {
		case GEN_IDS:
			dims[0] = 1;
			dims[1] = n;
			for (j = 0; j < n; j++)
				cpu_store_i(g->ids, t->dtype, j, g->tokens[g->n_tokens - n + j]);
			x->data = g->ids;
			break;
		case GEN_POS:
			dims[0] = 1;
			dims[1] = n;
			for (j = 0; j < n; j++)
				cpu_store_i(g->pos, t->dtype, j, g->len + j);
			x->data = g->pos;
			break;
		case GEN_MASK:
			dims[0] = 1;
			dims[1] = total;
			/* The written slots are the last len of the past. */
			for (j = 0; j < total; j++)
				cpu_store_i(g->mask, t->dtype, j, j >= past - g->len);
			x->data = g->mask;
			break;
		case GEN_BRANCH:
			dims[0] = 1;
			g->branch[0] = 1;
			x->data = g->branch;
			break;
		case GEN_PAST: {
			const struct gen_past *p = &g->past[g->past_of[i]];

			for (d = 0; d < p->rank; d++)
				dims[d] = d == p->axis ? past : p->dims[d];
			/* Checked as any run's data, never read on the host. */
			x->data = p->cache;
			break;
		}
		}
		x->bytes = cep_dtype_size(t->dtype);
		for (d = 0; d < x->rank; d++)
			x->bytes *= (size_t)dims[d];
	}
}

/* The plan for the inputs in g->in, found or built, with the past inputs'
 * values unknown to the planner (they are on the device). */
static int plan_get(engine_gen *g, struct plan **out)
{
	engine_session *s = g->s;
	const struct graph *gr = &s->m->model->g;
	struct plan_env env = {
		.g = gr, .be = s->be, .stream = s->stream,
		.const_dev = (void *const *)s->const_dev,
		.call_flags = s->call_flags,
	};
	int i, k, n = engine_model_input_count(s->m);
	struct plan *p;

	k = engine__inputs_bind(s, g->in, (size_t)n);
	for (i = 0; i < n; i++) {
		if (g->role[i] == GEN_PAST) {
			s->in_ptr[i] = NULL;
			s->in_t[i].data = NULL;
		}
	}
	p = plan_cache_find(&s->plans, s->sig, k, plan_sig_hash(s->sig, k),
			    (const void *const *)s->in_ptr);
	if (p) {
		s->stats.plan_hits++;
		*out = p;
		return 0;
	}
	return engine__plan_make(s, &env, k, out);
}

/* Checks what the plan makes of the logits and the presents for a step
 * of n tokens, and sizes the host row. */
static int outputs_check(engine_gen *g, const struct plan *p, int64_t n)
{
	const struct plan_io *lo = &p->outputs[g->logits];
	const char *lname = engine_model_output(g->s->m, g->logits)->name;
	int64_t past = g->fixed ? (int64_t)g->cap : g->len;
	size_t esize;
	int k, d;

	if (lo->t.rank != 3 || lo->t.dims[0] != 1 || lo->t.dims[1] != n || lo->t.dims[2] < 1)
		return cep__set_error(CEP_EINVAL, "output '%s' is not [1, %lld, vocabulary] "
				      "for %lld tokens", lname, (long long)n, (long long)n);
	if (lo->t.dtype != CEP_DTYPE_FLOAT32 && lo->t.dtype != CEP_DTYPE_FLOAT16 &&
	    lo->t.dtype != CEP_DTYPE_BFLOAT16 && lo->t.dtype != CEP_DTYPE_FLOAT64)
		return cep__set_error(CEP_EINVAL, "output '%s' is %s; logits are floats", lname,
				      cep_dtype_name(lo->t.dtype));
	if (g->vocab && lo->t.dims[2] != g->vocab)
		return cep__set_error(CEP_EINVAL, "output '%s' changed its vocabulary from "
				      "%lld to %lld", lname, (long long)g->vocab,
				      (long long)lo->t.dims[2]);
	for (k = 0; k < g->n_past; k++) {
		const struct gen_past *gp = &g->past[k];
		const struct plan_io *po = &p->outputs[gp->output];
		bool ok = po->t.rank == gp->rank && po->t.dtype == p->inputs[gp->input].t.dtype;

		for (d = 0; ok && d < gp->rank; d++)
			ok = po->t.dims[d] == (d == gp->axis ? past + n : gp->dims[d]);
		if (!ok)
			return cep__set_error(CEP_EINVAL, "output '%s' is not its past with the "
					      "%lld new positions appended on axis %d",
					      engine_model_output(g->s->m, gp->output)->name,
					      (long long)n, gp->axis);
	}
	esize = cep_dtype_size(lo->t.dtype);
	g->logits_dt = lo->t.dtype;
	if (!g->vocab) {
		g->vocab = lo->t.dims[2];
		g->row_room = (size_t)g->vocab * esize;
		g->row_raw = malloc(g->row_room);
		g->row = malloc((size_t)g->vocab * sizeof(*g->row));
		g->order = malloc((size_t)g->vocab * sizeof(*g->order));
		g->seen = calloc(((size_t)g->vocab + 7) / 8, 1);
		if (!g->row_raw || !g->row || !g->order || !g->seen)
			return cep__set_error(CEP_ENOMEM, "out of memory for a vocabulary of "
					      "%lld", (long long)g->vocab);
	}
	return 0;
}

/* Queues a step of n tokens with plan p: the cache into the past inputs,
 * the other inputs from the host, the steps, the last logits row out, the
 * presents back into the cache; then waits. */
static int step_queue(engine_gen *g, struct plan *p, int64_t n)
{
	engine_session *s = g->s;
	const struct graph *gr = &s->m->model->g;
	const struct plan_io *lo = &p->outputs[g->logits];
	int64_t past = g->fixed ? (int64_t)g->cap : g->len;
	int i, k, ret = 0;

	for (i = 0; i < p->n_inputs && ret == 0; i++) {
		if (g->role[i] == GEN_PAST)
			ret = backend_copy_d2d(s->be, s->stream, p->inputs[i].dev,
					       g->past[g->past_of[i]].cache, p->inputs[i].bytes);
		else
			ret = backend_copy_h2d(s->be, s->stream, p->inputs[i].dev, g->in[i].data,
					       p->inputs[i].bytes);
	}
	if (ret == 0)
		ret = exec_queue_steps(gr, p, s->be, s->stream);
	if (ret == 0)
		ret = backend_copy_d2h(s->be, s->stream, g->row_raw,
				       (unsigned char *)lo->dev + (size_t)(n - 1) * g->row_room,
				       g->row_room);
	for (k = 0; k < g->n_past && ret == 0; k++) {
		const struct gen_past *gp = &g->past[k];
		const unsigned char *src = p->outputs[gp->output].dev;

		if (g->fixed)
			/* Each row's last cap slots: the first n go. */
			ret = backend_copy_d2d_2d(s->be, s->stream, gp->cache,
						  (size_t)g->cap * gp->slot,
						  src + (size_t)n * gp->slot,
						  (size_t)(past + n) * gp->slot,
						  (size_t)g->cap * gp->slot, gp->rows);
		else
			ret = backend_copy_d2d(s->be, s->stream, gp->cache, src,
					       gp->rows * (size_t)(past + n) * gp->slot);
	}
	if (ret == 0)
		ret = backend_stream_sync(s->be, s->stream);
	if (ret == 0) {
		p->runs++;
		engine__run_count(s, p);
	}
	return ret;
}

/* The next token from the logits row now on the host. */
static int64_t choose(engine_gen *g)
{
	size_t i;
	int64_t v;

	for (v = 0; v < g->vocab; v++)
		g->row[v] = (float)cpu_load_d(g->row_raw, g->logits_dt, v);
	if (g->sp.repetition_penalty != 1.0f) {
		memset(g->seen, 0, ((size_t)g->vocab + 7) / 8);
		for (i = 0; i < g->n_tokens; i++) {
			v = g->tokens[i];
			g->seen[v >> 3] |= (unsigned char)(1u << (v & 7));
		}
		sample_penalize(g->row, g->vocab, g->seen, g->sp.repetition_penalty);
	}
	return sample_next(g->row, g->vocab, &g->sp, &g->rng, g->order);
}

int engine_gen_step(engine_gen *g, int64_t *token)
{
	int64_t n, tok;
	struct plan *p = NULL;
	size_t i;
	uint32_t k;
	int ret;

	cep__clear_error();
	if (g->reason != CEP_GEN_RUNNING)
		return cep__set_error(CEP_EINVAL, "the generation has ended");
	n = g->started ? 1 : (int64_t)g->n_prompt;
	inputs_fill(g, n);
	ret = engine_run_check(g->s, g->in, (size_t)engine_model_input_count(g->s->m), NULL, 0);
	if (ret == 0)
		ret = plan_get(g, &p);
	if (ret == 0)
		ret = outputs_check(g, p, n);
	for (i = g->n_tokens - (size_t)n; ret == 0 && i < g->n_tokens; i++) {
		if (g->tokens[i] < 0 || g->tokens[i] >= g->vocab)
			ret = cep__set_error(CEP_EINVAL, "token %lld (at %zu) is outside the "
					     "vocabulary of %lld", (long long)g->tokens[i], i,
					     (long long)g->vocab);
	}
	if (ret == 0)
		ret = step_queue(g, p, n);
	if (ret < 0) {
		g->reason = CEP_GEN_ERROR;
		return ret;
	}
	g->started = true;
	g->len += n;
	tok = choose(g);
	g->tokens[g->n_tokens++] = tok;
	*token = tok;
	for (k = 0; k < g->n_stop; k++) {
		if (g->stop[k] == tok)
			g->reason = CEP_GEN_STOP;
	}
	if (g->reason == CEP_GEN_RUNNING &&
	    (g->n_tokens - g->n_prompt >= g->max_new || g->len >= (int64_t)g->cap))
		g->reason = CEP_GEN_LENGTH;
	return g->reason == CEP_GEN_RUNNING ? 0 : 1;
}
