/*
 * test_engine_gen.c — generation in the engine (engine_gen_*) on the host
 * backend, against the tiny decoder of decoder_model.h: greedy tokens equal
 * the oracle's (a run per step with the cache on the host) with the fixed
 * cache (one plan for every decode step) and the exact one, and for a
 * model without attention_mask and position_ids; stop tokens, the length
 * and the capacity end it; the cache is charged as kv_cache and given back,
 * and a limit refuses it; bad parameters, prompts and models get clear
 * errors; sampling is reproducible from its seed. Also the sampler alone
 * (sample.h) and the backend's 2-D copy.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "alloc/account.h"
#include "client/cudaep.h"
#include "engine/engine.h"
#include "engine/sample.h"
#include "gpu/backend.h"
#include "tests/unit/decoder_model.h"
#include "tests/unit/onnxb.h"

static const int64_t prompt[] = { 3, 1, 4, 1, 5, 9, 2 };
#define NP ((int)(sizeof(prompt) / sizeof(prompt[0])))

struct fix {
	struct backend *be;
	struct account *acc;
	engine_model *m;
	engine_session *s;
};

static void fix_open(struct fix *f, int with_mask_pos, uint64_t limit)
{
	struct engine_session_options o = { 0 };

	memset(f, 0, sizeof(*f));
	cr_assert_eq(backend_host_new(0, &f->be), 0);
	cr_assert_eq(account_new(&f->acc), 0);
	f->m = dm_load(11, with_mask_pos);
	o.account = f->acc;
	o.owner = (struct alloc_owner){ 1, 1 };
	o.memory_limit = limit;
	cr_assert_eq(engine_session_new(f->m, f->be, &o, &f->s), 0, "%s", cep_last_error());
}

static void fix_close(struct fix *f)
{
	engine_session_free(f->s);
	engine_model_unref(f->m);
	account_free(f->acc);
	backend_free(f->be);
}

static uint64_t kv_now(struct fix *f)
{
	struct account_usage u;

	cr_assert_eq(account_usage_get(f->acc, (struct alloc_owner){ 1, 1 }, &u), 0);
	return u.current[ALLOC_ROLE_KV_CACHE];
}

/* Generates with p until it ends; returns the count, tokens in out. */
static int gen_all(engine_session *s, const int64_t *pr, int np,
		   const struct engine_gen_params *p, int64_t *out, int max,
		   struct engine_gen_info *info)
{
	engine_gen *g = NULL;
	int n = 0, ret;

	cr_assert_eq(engine_gen_new(s, pr, (size_t)np, p, &g), 0, "%s", cep_last_error());
	do {
		cr_assert(n < max, "more tokens than asked for");
		ret = engine_gen_step(g, &out[n]);
		cr_assert_geq(ret, 0, "step %d: %s", n, cep_last_error());
		n++;
	} while (ret == 0);
	engine_gen_info(g, info);
	engine_gen_free(g);
	return n;
}

static void greedy_check(int with_mask_pos, enum engine_kv_mode mode,
			 enum engine_kv_mode want_mode)
{
	struct engine_gen_params p = { .max_new_tokens = 24, .kv_mode = mode };
	int64_t ref[24], got[24];
	struct engine_gen_info info;
	struct engine_stats st0, st1;
	struct fix f;
	int n, i, distinct = 0;

	fix_open(&f, with_mask_pos, 0);
	dm_reference(f.s, with_mask_pos, prompt, NP, 24, ref);
	for (i = 1; i < 24; i++)
		distinct += ref[i] != ref[0];
	cr_assert_gt(distinct, 0, "the oracle's tokens are all one: a poor test model");
	engine_session_stats(f.s, &st0);
	n = gen_all(f.s, prompt, NP, &p, got, 24, &info);
	engine_session_stats(f.s, &st1);
	cr_assert_eq(n, 24);
	for (i = 0; i < 24; i++)
		cr_assert_eq(got[i], ref[i], "token %d: %lld, the oracle's %lld", i,
			     (long long)got[i], (long long)ref[i]);
	cr_assert_eq(info.kv_mode, want_mode);
	cr_assert_eq(info.reason, CEP_GEN_LENGTH);
	cr_assert_eq(info.tokens, 24);
	cr_assert_eq(info.prompt_tokens, NP);
	cr_assert_eq(info.vocab, DM_VOCAB);
	if (want_mode == ENGINE_KV_FIXED)
		/* The prefill's plan and one for every decode step. */
		cr_assert_eq(st1.plans_built - st0.plans_built, 2, "%llu plans",
			     (unsigned long long)(st1.plans_built - st0.plans_built));
	else
		cr_assert_geq(st1.plans_built - st0.plans_built, 12);
	cr_assert_eq(kv_now(&f), 0, "the cache was not given back");
	fix_close(&f);
}

Test(engine_gen, greedy_fixed_cache_equals_the_oracle)
{
	greedy_check(1, ENGINE_KV_AUTO, ENGINE_KV_FIXED);
}

Test(engine_gen, greedy_exact_cache_equals_the_oracle)
{
	greedy_check(1, ENGINE_KV_EXACT, ENGINE_KV_EXACT);
}

Test(engine_gen, a_model_without_mask_and_positions_runs_exact)
{
	greedy_check(0, ENGINE_KV_AUTO, ENGINE_KV_EXACT);
}

Test(engine_gen, stop_token_and_capacity_end_it)
{
	int64_t ref[16], got[16];
	struct engine_gen_info info;
	struct fix f;
	int n, i, first;

	fix_open(&f, 1, 0);
	dm_reference(f.s, 1, prompt, NP, 16, ref);
	/* Stop at the token the oracle makes 6th, wherever it first comes. */
	for (first = 0; ref[first] != ref[5]; first++)
		;
	{
		int64_t stop[2] = { 1000, ref[5] };
		struct engine_gen_params p = { .max_new_tokens = 16, .stop = stop, .n_stop = 2 };

		n = gen_all(f.s, prompt, NP, &p, got, 16, &info);
	}
	cr_assert_eq(n, first + 1);
	cr_assert_eq(got[first], ref[5]);
	cr_assert_eq(info.reason, CEP_GEN_STOP);
	/* A capacity of the prompt and 3: three decode steps fit, so four
	 * tokens come, the last never fed back. */
	{
		struct engine_gen_params p = { .max_new_tokens = 16, .capacity = NP + 3 };

		n = gen_all(f.s, prompt, NP, &p, got, 16, &info);
	}
	cr_assert_eq(n, 4);
	for (i = 0; i < 4; i++)
		cr_assert_eq(got[i], ref[i]);
	cr_assert_eq(info.reason, CEP_GEN_LENGTH);
	cr_assert_eq(info.positions, NP + 3);
	fix_close(&f);
}

Test(engine_gen, the_cache_is_charged_and_limited)
{
	struct engine_gen_params p = { .max_new_tokens = 8, .capacity = 40 };
	struct engine_gen_info info;
	engine_gen *g = NULL;
	struct fix f;
	int64_t tok;
	uint64_t want = 2ull * DM_LAYERS * DM_HEADS * 40 * DM_HD * sizeof(float);

	fix_open(&f, 1, 0);
	cr_assert_eq(engine_gen_new(f.s, prompt, NP, &p, &g), 0, "%s", cep_last_error());
	cr_assert_eq(kv_now(&f), want);
	cr_assert_eq(engine_gen_step(g, &tok), 0, "%s", cep_last_error());
	engine_gen_info(g, &info);
	cr_assert_eq(info.kv_bytes, want);
	cr_assert_eq(info.positions, NP);
	engine_gen_cancel(g);
	engine_gen_info(g, &info);
	cr_assert_eq(info.reason, CEP_GEN_CANCELLED);
	cr_assert_eq(engine_gen_step(g, &tok), CEP_EINVAL);
	engine_gen_free(g);
	cr_assert_eq(kv_now(&f), 0);
	fix_close(&f);
	/* A session limit the cache does not fit in. */
	fix_open(&f, 1, want / 2);
	cr_assert_eq(engine_gen_new(f.s, prompt, NP, &p, &g), CEP_ELIMIT);
	cr_assert_null(g);
	cr_assert(strstr(cep_last_error(), "limit"), "%s", cep_last_error());
	cr_assert_eq(kv_now(&f), 0);
	fix_close(&f);
}

static void refused(engine_session *s, const int64_t *pr, int np,
		    const struct engine_gen_params *p, int want, const char *says)
{
	engine_gen *g = NULL;

	cr_assert_eq(engine_gen_new(s, pr, (size_t)np, p, &g), want, "%s", cep_last_error());
	cr_assert_null(g);
	cr_assert(strstr(cep_last_error(), says), "'%s' does not say '%s'", cep_last_error(),
		  says);
}

Test(engine_gen, bad_parameters_prompts_and_models)
{
	struct engine_gen_params p = { .max_new_tokens = 4 };
	int64_t bad[] = { 2, 24, 1 }, tok;
	engine_gen *g = NULL;
	struct fix f;

	fix_open(&f, 1, 0);
	p.capacity = NP - 1;
	refused(f.s, prompt, NP, &p, CEP_ENOSPC, "smaller than the prompt");
	p.capacity = 0;
	p.max_new_tokens = 0;
	refused(f.s, prompt, NP, &p, CEP_EINVAL, "max_new_tokens");
	p.max_new_tokens = 4;
	p.temperature = -1.0f;
	refused(f.s, prompt, NP, &p, CEP_EINVAL, "temperature");
	p.temperature = NAN;
	refused(f.s, prompt, NP, &p, CEP_EINVAL, "temperature");
	p.temperature = 0.5f;
	p.top_p = 1.5f;
	refused(f.s, prompt, NP, &p, CEP_EINVAL, "top_p");
	p.top_p = 0.0f;
	p.repetition_penalty = -2.0f;
	refused(f.s, prompt, NP, &p, CEP_EINVAL, "repetition_penalty");
	p.repetition_penalty = 0.0f;
	p.n_stop = CEP_GEN_STOP_MAX + 1;
	p.stop = bad;
	refused(f.s, prompt, NP, &p, CEP_EINVAL, "stop tokens");
	p.n_stop = 0;
	refused(f.s, prompt, 0, &p, CEP_EINVAL, "empty");
	/* A token outside the vocabulary fails the prefill, naming it. */
	cr_assert_eq(engine_gen_new(f.s, bad, 3, &p, &g), 0, "%s", cep_last_error());
	cr_assert_eq(engine_gen_step(g, &tok), CEP_EINVAL);
	cr_assert(strstr(cep_last_error(), "token 24"), "%s", cep_last_error());
	cr_assert(strstr(cep_last_error(), "vocabulary of 24"), "%s", cep_last_error());
	engine_gen_free(g);
	cr_assert_eq(kv_now(&f), 0);
	fix_close(&f);
	/* A fixed cache needs the mask and the positions. */
	fix_open(&f, 0, 0);
	p.kv_mode = ENGINE_KV_FIXED;
	refused(f.s, prompt, NP, &p, CEP_EINVAL, "attention_mask and position_ids");
	fix_close(&f);
	/* A model that is no decoder. */
	{
		struct onnxb *b = onnxb_new(17);
		struct engine_gen_params q = { .max_new_tokens = 4 };
		engine_model *m = NULL;
		engine_session *s = NULL;
		struct backend *be = NULL;
		uint8_t *buf;
		size_t len;

		onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n");
		onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "n");
		onnxb_node(b, "Relu", "x", "y");
		buf = onnxb_finish(b, &len);
		cr_assert_eq(engine_model_load(buf, len, -1, &m), 0);
		free(buf);
		cr_assert_eq(backend_host_new(0, &be), 0);
		cr_assert_eq(engine_session_new(m, be, NULL, &s), 0);
		refused(s, prompt, NP, &q, CEP_EINVAL, "input 'x'");
		engine_session_free(s);
		engine_model_unref(m);
		backend_free(be);
	}
}

Test(engine_gen, sampling_is_reproducible_from_its_seed)
{
	struct engine_gen_params p = { .max_new_tokens = 32, .temperature = 1.5f, .top_k = 12,
				       .top_p = 0.95f, .repetition_penalty = 1.1f, .seed = 42 };
	int64_t a[32], b[32], c[32];
	struct engine_gen_info info;
	struct fix f;
	int i, differ = 0;

	fix_open(&f, 1, 0);
	cr_assert_eq(gen_all(f.s, prompt, NP, &p, a, 32, &info), 32);
	cr_assert_eq(gen_all(f.s, prompt, NP, &p, b, 32, &info), 32);
	p.seed = 43;
	cr_assert_eq(gen_all(f.s, prompt, NP, &p, c, 32, &info), 32);
	for (i = 0; i < 32; i++) {
		cr_assert_eq(a[i], b[i], "token %d differs with the same seed", i);
		cr_assert(a[i] >= 0 && a[i] < DM_VOCAB);
		differ += a[i] != c[i];
	}
	cr_assert_gt(differ, 0, "two seeds gave the same 32 sampled tokens");
	fix_close(&f);
}

/* ------------------------------------------------------------ the sampler */

Test(sample, greedy_top_k_1_and_a_small_top_p_take_the_argmax)
{
	float l[6] = { 0.1f, 2.0f, -1.0f, 2.0f, NAN, 1.9f }, w[6];
	struct sample_params g = { 0.0f, 0, 1.0f, 1.0f }, k1 = { 1.0f, 1, 1.0f, 1.0f },
			     p0 = { 1.0f, 0, 1e-6f, 1.0f };
	int32_t order[6];
	uint64_t rng = 1;
	int i;

	memcpy(w, l, sizeof(l));
	cr_assert_eq(sample_next(w, 6, &g, &rng, order), 1, "the first of equals");
	for (i = 0; i < 50; i++) {
		memcpy(w, l, sizeof(l));
		cr_assert_eq(sample_next(w, 6, &k1, &rng, order), 1);
		memcpy(w, l, sizeof(l));
		cr_assert_eq(sample_next(w, 6, &p0, &rng, order), 1);
	}
}

Test(sample, draws_follow_the_softmax_within_top_k_and_top_p)
{
	/* Weights 0.4, 0.3, 0.2, 0.1 and 0.05, which top_k 4 cuts. */
	const float base[5] = { logf(0.4f), logf(0.3f), logf(0.2f), logf(0.1f), logf(0.05f) };
	struct sample_params all = { 1.0f, 4, 1.0f, 1.0f }, nucleus = { 1.0f, 0, 0.65f, 1.0f };
	int count[5] = { 0 }, i, n = 40000;
	int32_t order[5];
	uint64_t rng = 12345;
	float w[5];

	for (i = 0; i < n; i++) {
		memcpy(w, base, sizeof(w));
		count[sample_next(w, 5, &all, &rng, order)]++;
	}
	cr_assert_eq(count[4], 0, "top_k 4 drew the fifth token");
	/* The four kept weigh 1: within 1.5 points, about 6 sigma at n = 40000. */
	cr_assert_float_eq(count[0] / (double)n, 0.4, 0.015);
	cr_assert_float_eq(count[1] / (double)n, 0.3, 0.015);
	cr_assert_float_eq(count[3] / (double)n, 0.1, 0.015);
	/* top_p 0.65 keeps the first two of the softmax over all five
	 * (0.38 + 0.29). */
	memset(count, 0, sizeof(count));
	for (i = 0; i < n; i++) {
		memcpy(w, base, sizeof(w));
		count[sample_next(w, 5, &nucleus, &rng, order)]++;
	}
	cr_assert_eq(count[2] + count[3] + count[4], 0);
	cr_assert_float_eq(count[0] / (double)n, 0.4 / 0.7, 0.015);
}

Test(sample, the_penalty_and_the_checks)
{
	float l[4] = { 2.0f, -2.0f, 1.0f, 4.0f };
	unsigned char seen = 0x3; /* tokens 0 and 1 */
	struct sample_params p = { 0.0f, 0, 1.0f, 1.0f };

	sample_penalize(l, 4, &seen, 2.0f);
	cr_assert_float_eq(l[0], 1.0f, 1e-6);
	cr_assert_float_eq(l[1], -4.0f, 1e-6);
	cr_assert_float_eq(l[2], 1.0f, 1e-6);
	cr_assert_eq(sample_params_check(&p), 0);
	p.top_p = 0.0f;
	cr_assert_eq(sample_params_check(&p), CEP_EINVAL);
	p.top_p = 1.0f;
	p.temperature = INFINITY;
	cr_assert_eq(sample_params_check(&p), CEP_EINVAL);
}

/* ------------------------------------------------------------ 2-D copies */

Test(backend, copy_d2d_2d_moves_rows_between_pitches)
{
	struct backend *be = NULL;
	struct backend_stream *s = NULL;
	unsigned char src[40], dst[30];
	int i, r;

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(backend_stream_new(be, 0, &s), 0);
	for (i = 0; i < 40; i++)
		src[i] = (unsigned char)i;
	memset(dst, 0xee, sizeof(dst));
	/* Three rows of 7 bytes: from pitch 13 at 2, to pitch 10. */
	cr_assert_eq(backend_copy_d2d_2d(be, s, dst, 10, src + 2, 13, 7, 3), 0);
	cr_assert_eq(backend_stream_sync(be, s), 0);
	for (r = 0; r < 3; r++) {
		for (i = 0; i < 10; i++)
			cr_assert_eq(dst[r * 10 + i], i < 7 ? 2 + r * 13 + i : 0xee);
	}
	cr_assert_eq(backend_copy_d2d_2d(be, s, dst, 4, src, 13, 7, 3), CEP_EINVAL);
	backend_stream_free(be, s);
	backend_free(be);
}
