/*
 * test_stats.c — the counter set: names unique, Prometheus-safe and within
 * the protocol's sizes, the counts within the StatsReply limits, and the
 * gauge arithmetic of current, peak and total.
 */
#include <ctype.h>
#include <string.h>

#include <criterion/criterion.h>

#include "proto/cep_limits.h"
#include "common/stats.h"

static void check_name(const char *name)
{
	size_t i;

	cr_assert_not_null(name);
	cr_assert_lt(strlen(name), CEP_MAX_OBJ_NAME);
	cr_assert(islower((unsigned char)name[0]), "'%s'", name);
	for (i = 0; name[i] != '\0'; i++)
		cr_assert(islower((unsigned char)name[i]) ||
			  isdigit((unsigned char)name[i]) || name[i] == '_',
			  "'%s' is not a metric name", name);
}

Test(stats, names_are_unique_and_valid)
{
	int i, j;

	cr_assert_leq(STATS_COUNTER_COUNT, CEP_MAX_COUNTERS);
	cr_assert_leq(STATS_GAUGE_COUNT, CEP_MAX_GAUGES);
	for (i = 0; i < STATS_COUNTER_COUNT; i++) {
		check_name(stats_counter_name(i));
		cr_assert_gt(strlen(stats_counter_help(i)), 0);
		for (j = 0; j < i; j++)
			cr_assert_str_neq(stats_counter_name(i),
					  stats_counter_name(j));
	}
	for (i = 0; i < STATS_GAUGE_COUNT; i++) {
		check_name(stats_gauge_name(i));
		cr_assert_gt(strlen(stats_gauge_help(i)), 0);
		for (j = 0; j < i; j++)
			cr_assert_str_neq(stats_gauge_name(i),
					  stats_gauge_name(j));
	}
	cr_assert_null(stats_counter_name(STATS_COUNTER_COUNT));
	cr_assert_null(stats_gauge_name(STATS_GAUGE_COUNT));
}

Test(stats, the_required_entries_exist)
{
	static const char *const counters[] = {
		"connections_accepted", "connections_closed", "requests",
		"request_errors", "bad_packets", "oversized_packets",
		"fds_received", "fds_closed", "regions_registered",
		"regions_released", "region_limit_hits", "hello_refused",
	};
	static const char *const gauges[] = {
		"connections", "regions", "region_bytes", "sessions",
	};
	size_t i;
	int j;
	bool found;

	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		found = false;
		for (j = 0; j < STATS_COUNTER_COUNT; j++)
			found |= strcmp(stats_counter_name(j), counters[i]) == 0;
		cr_assert(found, "no counter %s", counters[i]);
	}
	for (i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++) {
		found = false;
		for (j = 0; j < STATS_GAUGE_COUNT; j++)
			found |= strcmp(stats_gauge_name(j), gauges[i]) == 0;
		cr_assert(found, "no gauge %s", gauges[i]);
	}
}

Test(stats, gauge_keeps_peak_and_total)
{
	struct stats st;
	struct stats_gauge_value *g = &st.gauges[STATS_GAUGE_REGION_BYTES];

	stats_init(&st);
	cr_assert_eq(g->current, 0);
	stats_gauge_add(&st, STATS_GAUGE_REGION_BYTES, 100);
	stats_gauge_add(&st, STATS_GAUGE_REGION_BYTES, 50);
	stats_gauge_add(&st, STATS_GAUGE_REGION_BYTES, -120);
	stats_gauge_add(&st, STATS_GAUGE_REGION_BYTES, 10);
	cr_assert_eq(g->current, 40);
	cr_assert_eq(g->peak, 150);
	cr_assert_eq(g->total, 160);
	stats_count(&st, STATS_COUNTER_REQUESTS, 3);
	stats_count(&st, STATS_COUNTER_REQUESTS, 1);
	cr_assert_eq(st.counters[STATS_COUNTER_REQUESTS], 4);
	cr_assert_eq(st.counters[STATS_COUNTER_BAD_PACKETS], 0);
}
