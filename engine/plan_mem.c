/*
 * plan_mem.c — the memory planner of engine/plan.h: gives every value of
 * a plan an offset in its one activation block such that values alive at
 * the same step never share bytes, while values that never meet may.
 * Greedy, largest first, each at the lowest gap that fits beside the
 * values already placed that overlap it in time; engine/plan.c calls it
 * once per plan, with lifetimes measured in steps.
 */
#include "engine/plan.h"

#include <stdlib.h>

static size_t round_up(size_t n, size_t align)
{
	return (n + align - 1) / align * align;
}

/* What the items are sorted by: size, largest first, then first use. */
struct mem_key {
	size_t bytes;
	int first;
	int index;
};

static int key_cmp(const void *a, const void *b)
{
	const struct mem_key *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->index - y->index;
}

/* Placed items are filed by the segments of SEG_STEPS steps their
 * lifetimes touch, so that finding the items alive at the same time as a
 * new one looks at its neighbours in time only, not at every item. */
#define SEG_STEPS 32

struct seg {
	int *items;  /* (n) indexes of placed items */
	int n, cap;
};

/* A byte range taken by an item alive at the same time. */
struct span {
	size_t begin, end;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static int seg_add(struct seg *sg, int item)
{
	if (sg->n == sg->cap) {
		int cap = sg->cap ? sg->cap * 2 : 8;
		int *items = realloc(sg->items, (size_t)cap * sizeof(*items));

		if (!items)
			return CEP_ENOMEM;
		sg->items = items;
		sg->cap = cap;
	}
	sg->items[sg->n++] = item;
	return 0;
}

int plan_mem_assign(struct plan_mem_item *items, int n, size_t align, size_t *total)
{
	struct mem_key *order = NULL;
	struct seg *segs = NULL;
	struct span *spans = NULL;
	int *stamp = NULL;
	int n_segs, tmax = 0, i, k, s, ret;
	size_t end = 0;

	*total = 0;
	for (i = 0; i < n; i++)
		tmax = items[i].last > tmax ? items[i].last : tmax;
	n_segs = tmax / SEG_STEPS + 1;
	order = malloc(((size_t)n + 1) * sizeof(*order));
	spans = malloc(((size_t)n + 1) * sizeof(*spans));
	stamp = calloc((size_t)n + 1, sizeof(*stamp));
	segs = calloc((size_t)n_segs, sizeof(*segs));
	ret = CEP_ENOMEM;
	if (!order || !spans || !stamp || !segs)
		goto out;
	for (i = 0; i < n; i++)
		order[i] = (struct mem_key){ items[i].bytes, items[i].first, i };
	qsort(order, (size_t)n, sizeof(*order), key_cmp);
	for (k = 0; k < n; k++) {
		struct plan_mem_item *it = &items[order[k].index];
		size_t size = round_up(it->bytes, align), off = 0;
		int s0 = it->first / SEG_STEPS, s1 = it->last / SEG_STEPS;
		int n_spans = 0, j, c;

		it->offset = 0;
		if (size == 0)
			continue;
		for (s = s0; s <= s1; s++) {
			for (j = 0; j < segs[s].n; j++) {
				const struct plan_mem_item *p = &items[segs[s].items[j]];

				if (stamp[segs[s].items[j]] == k + 1)
					continue;
				stamp[segs[s].items[j]] = k + 1;
				if (p->last < it->first || p->first > it->last)
					continue;
				spans[n_spans].begin = p->offset;
				spans[n_spans].end = p->offset + round_up(p->bytes, align);
				n_spans++;
			}
		}
		/* The lowest gap between the busy spans that is big enough. */
		qsort(spans, (size_t)n_spans, sizeof(*spans), span_cmp);
		for (c = 0; c < n_spans; c++) {
			if (spans[c].begin >= off + size)
				break;
			if (spans[c].end > off)
				off = spans[c].end;
		}
		it->offset = off;
		if (off + size > end)
			end = off + size;
		for (s = s0; s <= s1; s++) {
			if (seg_add(&segs[s], order[k].index) < 0)
				goto out;
		}
	}
	*total = end;
	ret = 0;
out:
	if (segs) {
		for (s = 0; s < n_segs; s++)
			free(segs[s].items);
	}
	free(segs);
	free(order);
	free(spans);
	free(stamp);
	return ret < 0 ? cep__set_error(ret, "out of memory planning memory") : 0;
}
