/*
 * idtable.c — the sorted id tables of a connection (see idtable.h).
 */
#include "daemon/idtable.h"

#include <stdlib.h>
#include <string.h>

#include "client/cudaep.h"
#include "common/error.h"

static uint64_t item_id(const void *item)
{
	return *(const uint64_t *)item;
}

/* Binary search: the index of id, or of where it would go. */
static uint32_t idtable_index(const struct idtable *t, uint64_t id)
{
	uint32_t lo = 0, hi = t->count, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (item_id(t->items[mid]) < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int idtable_reserve(struct idtable *t, const char *what)
{
	void **items;
	uint32_t cap;

	if (t->count < t->cap)
		return 0;
	cap = t->cap ? t->cap * 2 : 8;
	items = realloc(t->items, (size_t)cap * sizeof(*items));
	if (items == NULL)
		return cep__set_error(CEP_ENOMEM, "out of memory for %s", what);
	t->items = items;
	t->cap = cap;
	return 0;
}

void idtable_append(struct idtable *t, void *item)
{
	t->items[t->count++] = item;
}

void *idtable_find(const struct idtable *t, uint64_t id)
{
	uint32_t i = idtable_index(t, id);

	return i < t->count && item_id(t->items[i]) == id ? t->items[i] : NULL;
}

void *idtable_take(struct idtable *t, uint64_t id)
{
	uint32_t i = idtable_index(t, id);
	void *item;

	if (i >= t->count || item_id(t->items[i]) != id)
		return NULL;
	item = t->items[i];
	memmove(&t->items[i], &t->items[i + 1],
		(size_t)(t->count - i - 1) * sizeof(t->items[0]));
	t->count--;
	return item;
}

void idtable_close(struct idtable *t)
{
	if (t == NULL)
		return;
	free(t->items);
	t->items = NULL;
	t->count = 0;
	t->cap = 0;
}
