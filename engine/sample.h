/*
 * sample.h — choosing a generation's next token from a row of logits, on
 * the host: greedy (the most likely token) or sampled with temperature,
 * top-k, top-p and a repetition penalty, from a seeded generator, so that
 * the same seed, logits and options give the same token on every machine.
 *
 * Used by generation (engine_gen.c); pure functions of their arguments
 * and the caller's scratch, with no allocation.
 */
#ifndef CEP_ENGINE_SAMPLE_H
#define CEP_ENGINE_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

struct sample_params {
	float temperature;        /* 0: greedy; else > 0 */
	uint32_t top_k;           /* 0: every token */
	float top_p;              /* in (0, 1]; 1: no cut */
	float repetition_penalty; /* > 0; 1: none */
};

/* Checks p: 0, or CEP_EINVAL with a message naming the option out of
 * range (a NaN included). */
int sample_params_check(const struct sample_params *p);

/* The generator's next 64 random bits (splitmix64 over *state). */
uint64_t sample_rand(uint64_t *state);

/*
 * Applies the repetition penalty to logits (vocab of them) in place: each
 * token marked in seen (a bit per token, vocab bits) has its logit
 * divided by penalty when positive, multiplied when not. A penalty of 1
 * changes nothing.
 */
void sample_penalize(float *logits, int64_t vocab, const unsigned char *seen, float penalty);

/*
 * The next token: with temperature 0, the index of the largest logit (the
 * first of equals; NaN counts as smallest); else a draw from the softmax
 * of logits / temperature, kept to the top_k largest and then to the
 * fewest of those whose probability reaches top_p (ties broken by the
 * lower index, so the order is total), drawn with one sample_rand() of
 * *rng. order is scratch of vocab entries. logits are left changed
 * (scaled). Cannot fail.
 */
int64_t sample_next(float *logits, int64_t vocab, const struct sample_params *p,
		    uint64_t *rng, int32_t *order);

#endif
