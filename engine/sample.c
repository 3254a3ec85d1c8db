/*
 * sample.c — the next token of a generation from its logits (sample.h).
 *
 * Sampling keeps the candidates in a total order (logit descending, then
 * index ascending), so top-k and top-p cut at the same place on every
 * machine; the draw is one 53-bit uniform of splitmix64.
 */
#include "engine/sample.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "client/cudaep.h"
#include "common/error.h"

int sample_params_check(const struct sample_params *p)
{
	if (!(p->temperature >= 0.0f) || isinf(p->temperature))
		return cep__set_error(CEP_EINVAL, "temperature %g is out of range: 0 (greedy) "
				      "or a finite value above 0", (double)p->temperature);
	if (!(p->top_p > 0.0f && p->top_p <= 1.0f))
		return cep__set_error(CEP_EINVAL, "top_p %g is out of range (0, 1]",
				      (double)p->top_p);
	if (!(p->repetition_penalty > 0.0f) || isinf(p->repetition_penalty))
		return cep__set_error(CEP_EINVAL, "repetition_penalty %g is out of range: a "
				      "finite value above 0", (double)p->repetition_penalty);
	return 0;
}

uint64_t sample_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void sample_penalize(float *logits, int64_t vocab, const unsigned char *seen, float penalty)
{
	int64_t i;

	if (penalty == 1.0f)
		return;
	for (i = 0; i < vocab; i++) {
		if (!(seen[i >> 3] & (1u << (i & 7))))
			continue;
		logits[i] = logits[i] > 0.0f ? logits[i] / penalty : logits[i] * penalty;
	}
}

/* a before b in the candidates' order: the larger logit, then the lower
 * index; NaN after everything. */
static bool before(const float *l, int32_t a, int32_t b)
{
	float x = l[a], y = l[b];

	if (isnan(x) || isnan(y))
		return isnan(y) && (!isnan(x) || a < b);
	return x > y || (x == y && a < b);
}

static int64_t argmax(const float *l, int64_t vocab)
{
	int64_t i, best = 0;

	for (i = 1; i < vocab; i++) {
		if (before(l, (int32_t)i, (int32_t)best))
			best = i;
	}
	return best;
}

/* Sifts order[at] down the heap of n whose root is the last candidate
 * (the smallest in the order). */
static void heap_down(const float *l, int32_t *h, size_t n, size_t at)
{
	for (;;) {
		size_t c = 2 * at + 1, m = at;

		if (c < n && before(l, h[m], h[c]))
			m = c;
		if (c + 1 < n && before(l, h[m], h[c + 1]))
			m = c + 1;
		if (m == at)
			return;
		int32_t t = h[at];
		h[at] = h[m];
		h[m] = t;
		at = m;
	}
}

/* Puts the k first candidates in order[0..k), in order. O(vocab log k). */
static void top_sorted(const float *l, int64_t vocab, size_t k, int32_t *order)
{
	size_t n, i;
	int64_t t;

	for (n = 0; n < k; n++)
		order[n] = (int32_t)n;
	for (i = k / 2; i-- > 0;)
		heap_down(l, order, k, i);
	for (t = (int64_t)k; t < vocab; t++) {
		if (before(l, (int32_t)t, order[0])) {
			order[0] = (int32_t)t;
			heap_down(l, order, k, 0);
		}
	}
	/* Heap sort: the root (the last of the kept) goes to the end. */
	for (n = k; n > 1; n--) {
		int32_t x = order[0];

		order[0] = order[n - 1];
		order[n - 1] = x;
		heap_down(l, order, n - 1, 0);
	}
}

int64_t sample_next(float *logits, int64_t vocab, const struct sample_params *p,
		    uint64_t *rng, int32_t *order)
{
	size_t k, i, keep;
	double sum = 0.0, cut, u, acc;
	float top;

	if (p->temperature == 0.0f || vocab == 1)
		return argmax(logits, vocab);
	k = p->top_k && (int64_t)p->top_k < vocab ? p->top_k : (size_t)vocab;
	for (i = 0; i < (size_t)vocab; i++)
		logits[i] /= p->temperature;
	top_sorted(logits, vocab, k, order);
	top = logits[order[0]];
	if (isnan(top) || isinf(top))
		return order[0];
	/* Unnormalised probabilities of the kept, in their place. */
	for (i = 0; i < k; i++) {
		float x = logits[order[i]];

		logits[order[i]] = isnan(x) ? 0.0f : expf(x - top);
		sum += logits[order[i]];
	}
	cut = (double)p->top_p * sum;
	acc = 0.0;
	for (keep = 0; keep < k; keep++) {
		acc += logits[order[keep]];
		if (acc >= cut) {
			keep++;
			break;
		}
	}
	if (keep > k)
		keep = k;
	if (keep == 0)
		keep = 1;
	sum = 0.0;
	for (i = 0; i < keep; i++)
		sum += logits[order[i]];
	u = (double)(sample_rand(rng) >> 11) * 0x1.0p-53 * sum;
	acc = 0.0;
	for (i = 0; i < keep; i++) {
		acc += logits[order[i]];
		if (u < acc)
			return order[i];
	}
	return order[keep - 1];
}
