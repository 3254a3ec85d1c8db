/*
 * test_session.c — the per-connection sessions table: ids, lookups,
 * removal, names cut to the protocol's size, and the pool's count and
 * gauge, including when a table is closed with sessions left in it.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "proto/cep_limits.h"
#include "client/cudaep.h"
#include "common/error.h"
#include "daemon/session.h"
#include "common/stats.h"

Test(session, add_find_remove_close)
{
	struct session_table a, b;
	struct session_pool pool;
	struct session *s1, *s2, *s3, *found;
	struct stats st;
	uint64_t id1;

	stats_init(&st);
	session_pool_init(&pool, &st);
	session_table_init(&a, &pool, 7);
	session_table_init(&b, &pool, 8);
	cr_assert_eq(session_table_add(&a, "one", 100, &s1), 0);
	cr_assert_eq(session_table_add(&b, "two", 200, &s2), 0);
	cr_assert_eq(session_table_add(&a, NULL, 300, &s3), 0);
	cr_assert(s1->id < s2->id && s2->id < s3->id);
	cr_assert_eq(s1->client_id, 7);
	cr_assert_eq(s2->client_id, 8);
	cr_assert_str_eq(s3->name, "");
	cr_assert_eq(s3->loaded_ns, 300);
	cr_assert_eq(pool.count, 3);
	cr_assert_eq(st.gauges[STATS_GAUGE_SESSIONS].current, 3);

	cr_assert_eq(session_table_find(&a, s3->id), s3);
	cr_assert_null(session_table_find(&a, s2->id));
	cr_assert_eq(session_table_get(&a, s2->id, &found), CEP_ENOENT);
	cr_assert_null(found);
	cr_assert_not_null(strstr(cep_last_error(), "on this connection"));

	id1 = s1->id;
	cr_assert_eq(session_table_remove(&a, id1), 0);
	cr_assert_eq(session_table_remove(&a, id1), CEP_ENOENT);
	cr_assert_eq(session_table_find(&a, s3->id), s3);
	cr_assert_eq(a.ids.count, 1);

	session_table_close(&a);
	session_table_close(&b);
	session_table_close(NULL);
	cr_assert_eq(pool.count, 0);
	cr_assert_eq(st.gauges[STATS_GAUGE_SESSIONS].current, 0);
	cr_assert_eq(st.gauges[STATS_GAUGE_SESSIONS].peak, 3);
	cr_assert_eq(st.counters[STATS_COUNTER_SESSIONS_LOADED], 3);
	cr_assert_eq(st.counters[STATS_COUNTER_SESSIONS_UNLOADED], 3);
}

Test(session, names_are_cut_on_a_character)
{
	char name[100];
	struct session_table t;
	struct session_pool pool;
	struct session *s;
	struct stats st;
	size_t i;

	/* "é" is two bytes: 31 of them are 62 bytes, the 32nd would end at
	 * byte 64, past the 63 that fit. */
	for (i = 0; i + 2 < sizeof(name); i += 2)
		memcpy(name + i, "\xc3\xa9", 2);
	name[i] = '\0';
	stats_init(&st);
	session_pool_init(&pool, &st);
	session_table_init(&t, &pool, 1);
	cr_assert_eq(session_table_add(&t, name, 0, &s), 0);
	cr_assert_eq(strlen(s->name), 62);
	cr_assert_lt(strlen(s->name), CEP_MAX_OBJ_NAME);
	session_table_close(&t);
}
