/*
 * stats.c — names, descriptions and gauge arithmetic for the counter set
 * declared in stats.h. The tables are generated from the same X-macro lists
 * as the enums, so a name can never drift from its index.
 */
#include "common/stats.h"

#include <string.h>

#include "proto/cep_limits.h"

/* Names travel in Counter.name / Gauge.name, which the client decodes into
 * fixed buffers, and the lists into fixed arrays. */
#define STATS__FITS(id, name, help)                                            \
	_Static_assert(sizeof(name) <= CEP_MAX_OBJ_NAME, name " is too long");
STATS_COUNTERS(STATS__FITS)
STATS_GAUGES(STATS__FITS)
#undef STATS__FITS
_Static_assert(STATS_COUNTER_COUNT <= CEP_MAX_COUNTERS, "too many counters");
_Static_assert(STATS_GAUGE_COUNT <= CEP_MAX_GAUGES, "too many gauges");

static const char *const counter_names[] = {
#define STATS__NAME(id, name, help) name,
	STATS_COUNTERS(STATS__NAME)
#undef STATS__NAME
};

static const char *const counter_helps[] = {
#define STATS__HELP(id, name, help) help,
	STATS_COUNTERS(STATS__HELP)
#undef STATS__HELP
};

static const char *const gauge_names[] = {
#define STATS__NAME(id, name, help) name,
	STATS_GAUGES(STATS__NAME)
#undef STATS__NAME
};

static const char *const gauge_helps[] = {
#define STATS__HELP(id, name, help) help,
	STATS_GAUGES(STATS__HELP)
#undef STATS__HELP
};

void stats_init(struct stats *st)
{
	memset(st, 0, sizeof(*st));
}

void stats_gauge_add(struct stats *st, enum stats_gauge g, int64_t delta)
{
	struct stats_gauge_value *v = &st->gauges[g];

	v->current += delta;
	if (delta > 0)
		v->total += (uint64_t)delta;
	if (v->current > v->peak)
		v->peak = v->current;
}

const char *stats_counter_name(enum stats_counter c)
{
	return (unsigned)c < STATS_COUNTER_COUNT ? counter_names[c] : NULL;
}

const char *stats_counter_help(enum stats_counter c)
{
	return (unsigned)c < STATS_COUNTER_COUNT ? counter_helps[c] : NULL;
}

const char *stats_gauge_name(enum stats_gauge g)
{
	return (unsigned)g < STATS_GAUGE_COUNT ? gauge_names[g] : NULL;
}

const char *stats_gauge_help(enum stats_gauge g)
{
	return (unsigned)g < STATS_GAUGE_COUNT ? gauge_helps[g] : NULL;
}
