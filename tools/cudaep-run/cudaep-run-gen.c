/*
 * cudaep-run-gen.c — cudaep-run --generate N: with a decoder model, asks
 * the daemon to generate N tokens after a prompt (cep_generate_start())
 * and reads them as they come, stamping each read's arrival on
 * CLOCK_MONOTONIC. It prints the tokens, the time to the first token (from
 * before the start to the read that brought it), the decode rate (the
 * tokens after the first over the time since the first) and the
 * inter-token latency p50/p99 (nearest rank, over the gaps between
 * consecutive tokens), as the client saw them, as text or JSON, next to
 * the daemon's own stats. The daemon wakes the reader at every token
 * (signal_every 1), so the gaps are the steps'; tokens that one read
 * brings together (a daemon ahead of its reader) count their gaps as 0,
 * and JSON's decode_tokens_per_s is 0 when there is no span to divide by.
 */
#include "tools/cudaep-run/cudaep-run.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GEN_READ_MAX 256        /* tokens one cep_generate_read() takes */
#define RUN_MAX_GEN  UINT32_MAX /* --generate */

/* What one generation gave, freed by gen_result_close(). */
struct gen_result {
	int64_t *tokens;    /* (n) in order */
	double *at_us;      /* (n) each token's arrival, from the start */
	size_t n;
	cep_generate_stats st;
};

static void gen_result_close(struct gen_result *g)
{
	free(g->tokens);
	free(g->at_us);
}

static double mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The nearest-rank p-th percentile of the n sorted values; 0 for none. */
static double rank_pct(const double *v, size_t n, double p)
{
	size_t k;

	if (n == 0)
		return 0;
	k = (size_t)(p / 100.0 * (double)n + 0.999999);
	if (k < 1)
		k = 1;
	return v[(k > n ? n : k) - 1];
}

static const char *reason_name(cep_gen_reason r)
{
	switch (r) {
	case CEP_GEN_RUNNING:
		return "running";
	case CEP_GEN_STOP:
		return "stop";
	case CEP_GEN_LENGTH:
		return "length";
	case CEP_GEN_CANCELLED:
		return "cancelled";
	case CEP_GEN_ERROR:
		return "error";
	}
	return "unknown";
}

/* ------------------------------------------------------------- prompt */

int run_gen_parse_tokens(const char *list, int64_t **tokens, size_t *n)
{
	size_t cap = 1;
	int64_t *t;
	const char *p;

	for (p = list; *p != '\0'; p++)
		cap += *p == ',';
	if (cap > RUN_MAX_PROMPT)
		return CEP_EINVAL;
	t = malloc(cap * sizeof(*t));
	if (t == NULL)
		return CEP_ENOMEM;
	*n = 0;
	for (p = list;;) {
		char *end;
		long long v;

		if (*p < '0' || *p > '9') {
			free(t);
			return CEP_EINVAL;
		}
		errno = 0;
		v = strtoll(p, &end, 10);
		if (errno != 0 || (*end != ',' && *end != '\0')) {
			free(t);
			return CEP_EINVAL;
		}
		t[(*n)++] = (int64_t)v;
		if (*end == '\0')
			break;
		p = end + 1;
	}
	*tokens = t;
	return 0;
}

/* The prompt of --prompt (a copy), or tokens 1..--prompt-len. */
static int gen_prompt(const struct run_gen_opts *o, int64_t **tokens,
		      size_t *n)
{
	*n = o->prompt != NULL ? o->n_prompt : o->prompt_len;
	*tokens = malloc(*n * sizeof(**tokens));
	if (*tokens == NULL)
		return CEP_ENOMEM;
	for (size_t i = 0; i < *n; i++)
		(*tokens)[i] = o->prompt != NULL ? o->prompt[i] : (int64_t)i + 1;
	return 0;
}

/* ------------------------------------------------------------ options */

/* A float from lo to hi (lo_open: lo itself excluded) into *out. */
static bool parse_float(const char *s, float lo, bool lo_open, float hi,
			float *out)
{
	char *end;
	float v;

	errno = 0;
	v = strtof(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= lo) ||
	    !(v <= hi) || (lo_open && v == lo))
		return false;
	*out = v;
	return true;
}

int run_gen_opt(struct run_opts *o, int opt, const char *arg)
{
	struct run_gen_opts *g = &o->gen;
	unsigned long long v;
	size_t n;

	switch (opt) {
	case 'g':
		if (!run_parse_ulong(arg, 1, RUN_MAX_GEN, &v))
			return run_usage_fail("--generate wants a count from 1 to "
					      "%lu, not '%s'",
					      (unsigned long)RUN_MAX_GEN, arg);
		g->gen_tokens = (unsigned long)v;
		return 0;
	case RUN_LONGOPT_PROMPT:
		free(g->prompt);
		g->prompt = NULL;
		if (run_gen_parse_tokens(arg, &g->prompt, &n) != 0)
			return run_usage_fail("--prompt wants token ids like 1,2,3 "
					      "(at most %d), not '%s'",
					      RUN_MAX_PROMPT, arg);
		g->n_prompt = n;
		return 0;
	case RUN_LONGOPT_PROMPT_LEN:
		if (!run_parse_ulong(arg, 1, RUN_MAX_PROMPT, &v))
			return run_usage_fail("--prompt-len wants a count from 1 "
					      "to %d, not '%s'", RUN_MAX_PROMPT,
					      arg);
		g->prompt_len = (unsigned long)v;
		return 0;
	case RUN_LONGOPT_TEMPERATURE:
		if (!parse_float(arg, 0, false, 1e30f, &g->temperature))
			return run_usage_fail("--temperature wants a number >= 0, "
					      "not '%s'", arg);
		return 0;
	case RUN_LONGOPT_TOP_K:
		if (!run_parse_ulong(arg, 0, UINT32_MAX, &v))
			return run_usage_fail("--top-k wants a count (0: all), not "
					      "'%s'", arg);
		g->top_k = (unsigned long)v;
		return 0;
	case RUN_LONGOPT_TOP_P:
		if (!parse_float(arg, 0, true, 1, &g->top_p))
			return run_usage_fail("--top-p wants a number in (0, 1], "
					      "not '%s'", arg);
		return 0;
	case RUN_LONGOPT_EOS:
		if (g->n_eos == CEP_GEN_STOP_MAX)
			return run_usage_fail("at most %d --eos options",
					      CEP_GEN_STOP_MAX);
		if (!run_parse_ulong(arg, 0, INT64_MAX, &v))
			return run_usage_fail("--eos wants a token id, not '%s'",
					      arg);
		g->eos[g->n_eos++] = (int64_t)v;
		return 0;
	}
	return run_usage_fail("internal: option %d", opt);
}

int run_gen_opts_check(const struct run_opts *o, bool gen_seen)
{
	if (o->gen.gen_tokens == 0 && gen_seen)
		return run_usage_fail("--prompt, --prompt-len, --temperature, "
				      "--top-k, --top-p and --eos need --generate");
	if (o->gen.gen_tokens != 0 && (o->n_inputs || o->n_outputs))
		return run_usage_fail("--generate makes its own inputs: no --input "
				      "or --output with it");
	if ((o->gen.top_k != 0 || o->gen.top_p != 1) &&
	    o->gen.temperature == 0)
		return run_usage_fail("--top-k and --top-p sample: give a "
				      "--temperature above 0 as well");
	return 0;
}

/* ---------------------------------------------------------------- run */

/* Starts the generation and reads it to its end into *res. */
static int gen_read_all(struct run *r, const int64_t *prompt, size_t n_prompt,
			struct gen_result *res)
{
	const struct run_gen_opts *o = &r->opt.gen;
	cep_generate_options go = {
		.max_new_tokens = (uint32_t)o->gen_tokens,
		.temperature = o->temperature,
		.top_k = (uint32_t)o->top_k,
		.top_p = o->top_p,
		.seed = r->opt.seed,
		.stop_tokens = o->eos,
		.n_stop_tokens = o->n_eos,
		.signal_every = 1,
	};
	cep_generation *g = NULL;
	int64_t buf[GEN_READ_MAX];
	double t0;
	int ret, fret;

	res->tokens = malloc(o->gen_tokens * sizeof(res->tokens[0]));
	res->at_us = malloc(o->gen_tokens * sizeof(res->at_us[0]));
	if (res->tokens == NULL || res->at_us == NULL) {
		fprintf(stderr, "cudaep-run: out of memory for %lu tokens\n",
			o->gen_tokens);
		return CEP_ENOMEM;
	}
	t0 = mono_us();
	ret = cep_generate_start(r->s, prompt, n_prompt, &go, &g);
	if (ret != 0) {
		fprintf(stderr, "cudaep-run: cannot generate with %s: %s\n",
			r->opt.model, cep_last_error());
		return ret;
	}
	for (;;) {
		size_t got = 0;
		double now;

		ret = cep_generate_read(g, buf, GEN_READ_MAX, &got,
					CEP_WAIT_FOREVER);
		now = mono_us() - t0;
		if (ret != 0)
			break;
		for (size_t i = 0; i < got && res->n < o->gen_tokens; i++) {
			res->tokens[res->n] = buf[i];
			res->at_us[res->n++] = now;
		}
	}
	if (ret != CEP_GEN_END)
		fprintf(stderr, "cudaep-run: generation with %s failed after "
			"%zu tokens: %s\n", r->opt.model, res->n,
			cep_last_error());
	fret = cep_generate_free(g, &res->st);
	if (ret == CEP_GEN_END)
		return fret;
	return ret;
}

/* Prints the tokens and the timings. */
static void gen_print(const struct run *r, const int64_t *prompt,
		      size_t n_prompt, const struct gen_result *res)
{
	const struct run_gen_opts *o = &r->opt.gen;
	size_t n_gaps = res->n > 1 ? res->n - 1 : 0;
	double *gaps = calloc(n_gaps ? n_gaps : 1, sizeof(*gaps));
	double ttft = res->n ? res->at_us[0] : 0, span = 0, rate = 0;
	double p50, p99;

	for (size_t i = 0; gaps != NULL && i < n_gaps; i++)
		gaps[i] = res->at_us[i + 1] - res->at_us[i];
	if (gaps != NULL)
		qsort(gaps, n_gaps, sizeof(*gaps), cmp_double);
	p50 = gaps != NULL ? rank_pct(gaps, n_gaps, 50) : 0;
	p99 = gaps != NULL ? rank_pct(gaps, n_gaps, 99) : 0;
	free(gaps);
	if (n_gaps > 0) {
		span = res->at_us[res->n - 1] - res->at_us[0];
		rate = span > 0 ? (double)n_gaps / (span / 1e6) : 0;
	}
	if (r->opt.json) {
		printf("{\"model\": ");
		run_json_str(r->opt.model);
		printf(", \"socket\": ");
		run_json_str(r->sock);
		printf(", \"prompt\": [");
		for (size_t i = 0; i < n_prompt; i++)
			printf("%s%" PRId64, i ? ", " : "", prompt[i]);
		printf("], \"tokens\": [");
		for (size_t i = 0; i < res->n; i++)
			printf("%s%" PRId64, i ? ", " : "", res->tokens[i]);
		printf("], \"reason\": \"%s\", \"temperature\": %g, "
		       "\"top_k\": %lu, \"top_p\": %g, \"seed\": %" PRIu64
		       ", \"time_to_first_token_us\": %.1f, "
		       "\"decode_tokens_per_s\": %.1f, "
		       "\"inter_token_us\": {\"p50\": %.1f, \"p99\": %.1f}, "
		       "\"daemon\": {\"prompt_tokens\": %" PRIu64
		       ", \"tokens\": %" PRIu64 ", \"first_token_us\": %.1f, "
		       "\"total_us\": %.1f}}\n",
		       reason_name(res->st.reason), (double)o->temperature,
		       o->top_k, (double)o->top_p, r->opt.seed, ttft, rate,
		       p50, p99, res->st.prompt_tokens, res->st.tokens,
		       (double)res->st.first_token_ns / 1e3,
		       (double)res->st.total_ns / 1e3);
		return;
	}
	if (!r->opt.quiet) {
		printf("model: %s\nsocket: %s\nprompt: %zu tokens\n",
		       r->opt.model, r->sock, n_prompt);
		if (o->temperature > 0)
			printf("sampling: temperature %g, top_k %lu, top_p %g, "
			       "seed %" PRIu64 "\n", (double)o->temperature,
			       o->top_k, (double)o->top_p, r->opt.seed);
		else
			printf("sampling: greedy\n");
	}
	printf("tokens:");
	for (size_t i = 0; i < res->n; i++)
		printf(" %" PRId64, res->tokens[i]);
	printf("\nend: %s after %zu tokens\n", reason_name(res->st.reason),
	       res->n);
	printf("time to first token: %.3f ms (the daemon's: %.3f ms)\n",
	       ttft / 1e3, (double)res->st.first_token_ns / 1e6);
	if (n_gaps > 0 && span > 0)
		printf("decode: %.1f tokens/s (%zu tokens in %.3f ms)\n", rate,
		       n_gaps, span / 1e3);
	else if (n_gaps > 0)
		printf("decode: - (every token came with the first read: the "
		       "daemon was ahead of the reader)\n");
	else
		printf("decode: - (one token)\n");
	printf("inter-token latency: p50 %.3f ms, p99 %.3f ms\n", p50 / 1e3,
	       p99 / 1e3);
}

int run_generate(struct run *r)
{
	int64_t *prompt = NULL;
	size_t n_prompt = 0;
	struct gen_result res = {0};
	int ret;

	ret = gen_prompt(&r->opt.gen, &prompt, &n_prompt);
	if (ret != 0) {
		fprintf(stderr, "cudaep-run: %s\n", cep_strerror(ret));
		goto out;
	}
	ret = gen_read_all(r, prompt, n_prompt, &res);
	if (ret != 0)
		goto out;
	gen_print(r, prompt, n_prompt, &res);
out:
	gen_result_close(&res);
	free(prompt);
	return ret;
}
