/*
 * idtable.h — a connection's objects by id (its regions, its sessions): an
 * array of pointers sorted by id, searched by bisection and appended to,
 * since the daemon's ids only grow. Every item begins with its uint64_t id
 * (the first member of struct region and struct session). The table owns
 * its array, not the items.
 */
#ifndef CEPD_IDTABLE_H
#define CEPD_IDTABLE_H

#include <stdint.h>

struct idtable {
	void **items;     /* (count), sorted by id */
	uint32_t count;   /* items held */
	uint32_t cap;     /* slots in items */
};

/* Makes room for one more item. Returns 0, or CEP_ENOMEM with a message
 * naming what (e.g. "the region table"). */
int idtable_reserve(struct idtable *t, const char *what);

/* Appends item, whose id must be above every id held, into room that
 * idtable_reserve() made. Cannot fail. */
void idtable_append(struct idtable *t, void *item);

/* The item of id, or NULL. */
void *idtable_find(const struct idtable *t, uint64_t id);

/* Takes the item of id out of t and returns it, or NULL when t has none. */
void *idtable_take(struct idtable *t, uint64_t id);

/* Frees the array (the items are the caller's) and empties t. Accepts
 * NULL. */
void idtable_close(struct idtable *t);

#endif
