/*
 * account.c — memory accounting by owner and role, and the limits
 * (alloc/account.h).
 *
 * Entries live in a chained hash table keyed by (client, session): one per
 * session and one per client, the latter summing its sessions so that a
 * client's limit is checked in O(1). A client entry bound to a user points
 * at that uid's entry, which sums its clients; uids are few (the users of
 * one machine), so their entries sit in a plain list. Totals sit beside.
 */
#include "alloc/account.h"
#include "client/cudaep.h"
#include "common/error.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct account_uid_node {
	struct account_uid_node *next; /* in account.uids */
	struct account_uid_entry e;    /* usage.limit unused: see uid_limit */
};

struct account_node {
	struct account_node *next;     /* in its bucket */
	struct account_uid_node *uid;  /* client entries: its user; NULL:
	                                * not bound */
	struct account_entry e;
};

struct account {
	pthread_mutex_t lock;
	struct account_node **buckets; /* (n_buckets) chains */
	size_t n_buckets;              /* a power of two */
	size_t n_entries;
	struct account_uid_node *uids; /* every uid with a bound client */
	size_t n_uids;
	uint64_t uid_limit;            /* bytes per uid; 0: none */
	uint64_t uid_refusals;         /* charges it refused */
	struct account_usage total;    /* limit: the global one */
};

static const char *const role_names[] = {
#define ALLOC__ROLE_NAME(name, text) text,
	ALLOC_ROLE_LIST(ALLOC__ROLE_NAME)
#undef ALLOC__ROLE_NAME
};

const char *alloc_role_name(enum alloc_role role)
{
	if ((unsigned)role >= ALLOC_ROLE_COUNT)
		return "unknown";
	return role_names[role];
}

/* ------------------------------------------------------------- the table */

static size_t account_hash(struct alloc_owner o)
{
	uint64_t h = o.client * 0x9e3779b97f4a7c15ull ^ o.session * 0xc2b2ae3d27d4eb4full;

	return (size_t)(h ^ (h >> 29));
}

static struct account_node *account_find(const struct account *acc, struct alloc_owner o)
{
	struct account_node *n = acc->buckets[account_hash(o) & (acc->n_buckets - 1)];

	for (; n != NULL; n = n->next)
		if (n->e.owner.client == o.client && n->e.owner.session == o.session)
			return n;
	return NULL;
}

static int account_grow(struct account *acc)
{
	size_t nb = acc->n_buckets * 2, i;
	struct account_node **b = calloc(nb, sizeof(*b));

	if (b == NULL)
		return CEP_ENOMEM;
	for (i = 0; i < acc->n_buckets; i++) {
		struct account_node *n = acc->buckets[i], *next;

		for (; n != NULL; n = next) {
			size_t at = account_hash(n->e.owner) & (nb - 1);

			next = n->next;
			n->next = b[at];
			b[at] = n;
		}
	}
	free(acc->buckets);
	acc->buckets = b;
	acc->n_buckets = nb;
	return 0;
}

/* The entry of o, made (all zero) if it does not exist yet; NULL when out
 * of memory. */
static struct account_node *account_get(struct account *acc, struct alloc_owner o)
{
	struct account_node *n = account_find(acc, o);
	size_t at;

	if (n != NULL)
		return n;
	/* Growing is only an optimization: a failed one keeps chains longer. */
	if (acc->n_entries >= acc->n_buckets)
		(void)account_grow(acc);
	n = calloc(1, sizeof(*n));
	if (n == NULL)
		return NULL;
	n->e.owner = o;
	at = account_hash(o) & (acc->n_buckets - 1);
	n->next = acc->buckets[at];
	acc->buckets[at] = n;
	acc->n_entries++;
	return n;
}

static struct account_uid_node *account_uid_find(const struct account *acc, uint32_t uid)
{
	struct account_uid_node *u;

	for (u = acc->uids; u != NULL; u = u->next)
		if (u->e.uid == uid)
			return u;
	return NULL;
}

static void account_uid_drop(struct account *acc, struct account_uid_node *u)
{
	struct account_uid_node **pp;

	for (pp = &acc->uids; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == u) {
			*pp = u->next;
			free(u);
			acc->n_uids--;
			return;
		}
	}
}

static int account_in_use(const struct account_usage *u);

static void account_drop(struct account *acc, struct alloc_owner o)
{
	struct account_node **pp = &acc->buckets[account_hash(o) & (acc->n_buckets - 1)];

	for (; *pp != NULL; pp = &(*pp)->next) {
		struct account_node *n = *pp;

		if (n->e.owner.client == o.client && n->e.owner.session == o.session) {
			*pp = n->next;
			/* A uid's entry lasts as long as one of its clients. */
			if (n->uid != NULL && --n->uid->e.clients == 0 &&
			    !account_in_use(&n->uid->e.usage))
				account_uid_drop(acc, n->uid);
			free(n);
			acc->n_entries--;
			return;
		}
	}
}

/* ------------------------------------------------------------- lifecycle */

int account_new(struct account **out)
{
	struct account *acc = calloc(1, sizeof(*acc));

	if (acc == NULL)
		return CEP_ENOMEM;
	acc->n_buckets = 64;
	acc->buckets = calloc(acc->n_buckets, sizeof(*acc->buckets));
	if (acc->buckets == NULL) {
		free(acc);
		return CEP_ENOMEM;
	}
	pthread_mutex_init(&acc->lock, NULL);
	*out = acc;
	return 0;
}

void account_free(struct account *acc)
{
	size_t i;

	if (acc == NULL)
		return;
	for (i = 0; i < acc->n_buckets; i++) {
		struct account_node *n = acc->buckets[i], *next;

		for (; n != NULL; n = next) {
			next = n->next;
			free(n);
		}
	}
	while (acc->uids != NULL)
		account_uid_drop(acc, acc->uids);
	free(acc->buckets);
	pthread_mutex_destroy(&acc->lock);
	free(acc);
}

/* ---------------------------------------------------------------- limits */

void account_limit_set_global(struct account *acc, uint64_t bytes)
{
	pthread_mutex_lock(&acc->lock);
	acc->total.limit = bytes;
	pthread_mutex_unlock(&acc->lock);
}

void account_limit_set_uid(struct account *acc, uint64_t bytes)
{
	pthread_mutex_lock(&acc->lock);
	acc->uid_limit = bytes;
	pthread_mutex_unlock(&acc->lock);
}

int account_limit_set(struct account *acc, struct alloc_owner owner, uint64_t bytes)
{
	struct account_node *n;
	int ret;

	if (owner.client == 0)
		return cep__set_error(CEP_EINVAL, "the daemon's own memory has only the global limit");
	pthread_mutex_lock(&acc->lock);
	ret = CEP_ENOMEM;
	n = account_get(acc, owner);
	if (n == NULL)
		goto out;
	n->e.usage.limit = bytes;
	ret = 0;
out:
	pthread_mutex_unlock(&acc->lock);
	return ret;
}

static void account_add(struct account_usage *u, enum alloc_role role, uint64_t bytes);

int account_client_uid_set(struct account *acc, uint64_t client, uint32_t uid)
{
	struct account_node *n;
	struct account_uid_node *u;
	int ret, role;

	if (client == 0)
		return cep__set_error(CEP_EINVAL, "the daemon's own memory belongs to no uid");
	pthread_mutex_lock(&acc->lock);
	ret = CEP_ENOMEM;
	n = account_get(acc, (struct alloc_owner){ client, 0 });
	if (n == NULL)
		goto out;
	ret = 0;
	if (n->uid != NULL && n->uid->e.uid == uid)
		goto out;
	ret = CEP_EINVAL;
	if (n->uid != NULL) {
		cep__set_error(ret, "client %llu belongs to uid %u, not %u",
			       (unsigned long long)client, n->uid->e.uid, uid);
		goto out;
	}
	ret = CEP_ENOMEM;
	u = account_uid_find(acc, uid);
	if (u == NULL) {
		u = calloc(1, sizeof(*u));
		if (u == NULL)
			goto out;
		u->e.uid = uid;
		u->next = acc->uids;
		acc->uids = u;
		acc->n_uids++;
	}
	u->e.clients++;
	n->uid = u;
	/* What the client holds already is the uid's from now on, so that an
	 * uncharge later never takes back more than was added. */
	for (role = 0; role < ALLOC_ROLE_COUNT; role++)
		if (n->e.usage.current[role] != 0)
			account_add(&u->e.usage, (enum alloc_role)role,
				    n->e.usage.current[role]);
	ret = 0;
out:
	pthread_mutex_unlock(&acc->lock);
	return ret;
}

/* Whether adding bytes to u's device total stays within its limit. */
static int account_fits(const struct account_usage *u, uint64_t bytes)
{
	return u->limit == 0 || (bytes <= u->limit && u->device <= u->limit - bytes);
}

/* Whether adding bytes to a uid's device and pinned memory stays within
 * limit (0: none). */
static int account_uid_fits(const struct account_usage *u, uint64_t limit, uint64_t bytes)
{
	uint64_t held = u->device + u->current[ALLOC_ROLE_PINNED];

	return limit == 0 || (bytes <= limit && held <= limit - bytes);
}

static void account_add(struct account_usage *u, enum alloc_role role, uint64_t bytes)
{
	u->current[role] += bytes;
	if (u->current[role] > u->peak[role])
		u->peak[role] = u->current[role];
	if (role == ALLOC_ROLE_PINNED)
		return;
	u->device += bytes;
	if (u->device > u->device_peak)
		u->device_peak = u->device;
}

static void account_sub(struct account_usage *u, enum alloc_role role, uint64_t bytes)
{
	uint64_t b = bytes < u->current[role] ? bytes : u->current[role];

	u->current[role] -= b;
	if (role != ALLOC_ROLE_PINNED)
		u->device -= b < u->device ? b : u->device;
}

/* ---------------------------------------------------------------- charges */

int account_charge(struct account *acc, struct alloc_owner owner,
		   enum alloc_role role, uint64_t bytes)
{
	struct account_node *sess = NULL, *client;
	struct alloc_owner whole = { owner.client, 0 };
	int ret;

	if ((unsigned)role >= ALLOC_ROLE_COUNT)
		return cep__set_error(CEP_EINVAL, "memory role %d is unknown", (int)role);
	pthread_mutex_lock(&acc->lock);
	ret = CEP_ENOMEM;
	client = account_get(acc, whole);
	if (client == NULL)
		goto out;
	if (owner.session != 0) {
		sess = account_get(acc, owner);
		if (sess == NULL)
			goto out;
	}
	ret = CEP_ELIMIT;
	if (role != ALLOC_ROLE_PINNED) {
		if (sess != NULL && !account_fits(&sess->e.usage, bytes)) {
			cep__set_error(ret, "session %llu memory limit %llu bytes: asked %llu, in use %llu",
				       (unsigned long long)owner.session,
				       (unsigned long long)sess->e.usage.limit,
				       (unsigned long long)bytes,
				       (unsigned long long)sess->e.usage.device);
			goto out;
		}
		if (!account_fits(&client->e.usage, bytes)) {
			cep__set_error(ret, "client %llu memory limit %llu bytes: asked %llu, in use %llu",
				       (unsigned long long)owner.client,
				       (unsigned long long)client->e.usage.limit,
				       (unsigned long long)bytes,
				       (unsigned long long)client->e.usage.device);
			goto out;
		}
	}
	if (client->uid != NULL &&
	    !account_uid_fits(&client->uid->e.usage, acc->uid_limit, bytes)) {
		const struct account_usage *u = &client->uid->e.usage;

		acc->uid_refusals++;
		cep__set_error(ret, "uid %u memory limit %llu bytes (its clients "
			       "together, device and pinned): asked %llu, in use %llu",
			       client->uid->e.uid, (unsigned long long)acc->uid_limit,
			       (unsigned long long)bytes,
			       (unsigned long long)(u->device + u->current[ALLOC_ROLE_PINNED]));
		goto out;
	}
	if (role != ALLOC_ROLE_PINNED && !account_fits(&acc->total, bytes)) {
		cep__set_error(ret, "global memory limit %llu bytes: asked %llu, in use %llu",
			       (unsigned long long)acc->total.limit,
			       (unsigned long long)bytes,
			       (unsigned long long)acc->total.device);
		goto out;
	}
	if (sess != NULL)
		account_add(&sess->e.usage, role, bytes);
	account_add(&client->e.usage, role, bytes);
	if (client->uid != NULL)
		account_add(&client->uid->e.usage, role, bytes);
	account_add(&acc->total, role, bytes);
	ret = 0;
out:
	pthread_mutex_unlock(&acc->lock);
	return ret;
}

void account_uncharge(struct account *acc, struct alloc_owner owner,
		      enum alloc_role role, uint64_t bytes)
{
	struct alloc_owner whole = { owner.client, 0 };
	struct account_node *n;

	if ((unsigned)role >= ALLOC_ROLE_COUNT)
		return;
	pthread_mutex_lock(&acc->lock);
	if (owner.session != 0 && (n = account_find(acc, owner)) != NULL)
		account_sub(&n->e.usage, role, bytes);
	if ((n = account_find(acc, whole)) != NULL) {
		account_sub(&n->e.usage, role, bytes);
		if (n->uid != NULL)
			account_sub(&n->uid->e.usage, role, bytes);
	}
	account_sub(&acc->total, role, bytes);
	pthread_mutex_unlock(&acc->lock);
}

/* ---------------------------------------------------------------- queries */

int account_usage_get(struct account *acc, struct alloc_owner owner,
		      struct account_usage *out)
{
	struct account_node *n;
	int ret = CEP_ENOENT;

	pthread_mutex_lock(&acc->lock);
	n = account_find(acc, owner);
	if (n != NULL) {
		*out = n->e.usage;
		ret = 0;
	}
	pthread_mutex_unlock(&acc->lock);
	return ret;
}

void account_totals(struct account *acc, struct account_usage *out)
{
	pthread_mutex_lock(&acc->lock);
	*out = acc->total;
	pthread_mutex_unlock(&acc->lock);
}

int account_uid_usage_get(struct account *acc, uint32_t uid, struct account_usage *out)
{
	struct account_uid_node *u;
	int ret = CEP_ENOENT;

	pthread_mutex_lock(&acc->lock);
	u = account_uid_find(acc, uid);
	if (u != NULL) {
		*out = u->e.usage;
		out->limit = acc->uid_limit;
		ret = 0;
	}
	pthread_mutex_unlock(&acc->lock);
	return ret;
}

uint64_t account_uid_refusals(struct account *acc)
{
	uint64_t n;

	pthread_mutex_lock(&acc->lock);
	n = acc->uid_refusals;
	pthread_mutex_unlock(&acc->lock);
	return n;
}

static int account_in_use(const struct account_usage *u)
{
	int r;

	for (r = 0; r < ALLOC_ROLE_COUNT; r++)
		if (u->current[r] != 0)
			return 1;
	return 0;
}

int account_forget(struct account *acc, struct alloc_owner owner)
{
	struct account_node *n, *next;
	size_t i;
	int ret;

	pthread_mutex_lock(&acc->lock);
	ret = CEP_ENOENT;
	n = account_find(acc, owner);
	if (n == NULL)
		goto out;
	/* A client's entry sums its sessions, so checking it covers them. */
	ret = CEP_EBUSY;
	if (account_in_use(&n->e.usage))
		goto out;
	if (owner.session != 0) {
		account_drop(acc, owner);
		ret = 0;
		goto out;
	}
	for (i = 0; i < acc->n_buckets; i++) {
		for (n = acc->buckets[i]; n != NULL; n = next) {
			next = n->next;
			if (n->e.owner.client == owner.client && n->e.owner.session != 0)
				account_drop(acc, n->e.owner);
		}
	}
	account_drop(acc, owner);
	ret = 0;
out:
	pthread_mutex_unlock(&acc->lock);
	return ret;
}

static int account_entry_cmp(const void *a, const void *b)
{
	const struct account_entry *x = a, *y = b;

	if (x->owner.client != y->owner.client)
		return x->owner.client < y->owner.client ? -1 : 1;
	if (x->owner.session != y->owner.session)
		return x->owner.session < y->owner.session ? -1 : 1;
	return 0;
}

int account_visit(struct account *acc,
		  void (*fn)(void *arg, const struct account_entry *entry), void *arg)
{
	struct account_entry *all = NULL;
	struct account_node *n;
	size_t i, k = 0, count;
	int ret;

	/* Copy under the lock, call without it: fn may be slow (it formats a
	 * reply) and must not hold up allocations meanwhile. */
	pthread_mutex_lock(&acc->lock);
	count = acc->n_entries;
	ret = CEP_ENOMEM;
	all = malloc((count ? count : 1) * sizeof(*all));
	if (all == NULL) {
		pthread_mutex_unlock(&acc->lock);
		goto out;
	}
	for (i = 0; i < acc->n_buckets; i++)
		for (n = acc->buckets[i]; n != NULL; n = n->next)
			all[k++] = n->e;
	pthread_mutex_unlock(&acc->lock);
	qsort(all, count, sizeof(*all), account_entry_cmp);
	for (i = 0; i < count; i++)
		fn(arg, &all[i]);
	ret = 0;
out:
	free(all);
	return ret;
}

static int account_uid_entry_cmp(const void *a, const void *b)
{
	const struct account_uid_entry *x = a, *y = b;

	return x->uid < y->uid ? -1 : x->uid > y->uid;
}

int account_uid_visit(struct account *acc,
		      void (*fn)(void *arg, const struct account_uid_entry *entry),
		      void *arg)
{
	struct account_uid_entry *all;
	struct account_uid_node *u;
	size_t i, count = 0;

	pthread_mutex_lock(&acc->lock);
	all = malloc((acc->n_uids ? acc->n_uids : 1) * sizeof(*all));
	if (all == NULL) {
		pthread_mutex_unlock(&acc->lock);
		return CEP_ENOMEM;
	}
	for (u = acc->uids; u != NULL; u = u->next) {
		all[count] = u->e;
		all[count++].usage.limit = acc->uid_limit;
	}
	pthread_mutex_unlock(&acc->lock);
	qsort(all, count, sizeof(*all), account_uid_entry_cmp);
	for (i = 0; i < count; i++)
		fn(arg, &all[i]);
	free(all);
	return 0;
}
