/*
 * test_region.c — the region table on its own: the slice bounds check's
 * arithmetic (overflow included), registration checks on the fd (seals,
 * file type, size), fd ownership on every path, lookups in a table of many
 * regions, and the pool's totals and limits.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "daemon/region.h"
#include "common/stats.h"

static struct stats st;
static struct region_pool pool;
static struct region_table tab;

static void setup(void)
{
	struct region_limits lim = {
		.max_per_client = 1000,
		.bytes_per_client = 1ull << 30,
		.bytes_total = 1ull << 31,
	};

	stats_init(&st);
	region_pool_init(&pool, &lim, &st);
	region_table_init(&tab, &pool);
}

static void teardown(void)
{
	region_table_close(&tab);
}

TestSuite(region, .init = setup, .fini = teardown);

static int memfd(size_t size, int seals)
{
	int fd = memfd_create("region-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	cr_assert(fd >= 0);
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	if (seals != 0)
		cr_assert_eq(fcntl(fd, F_ADD_SEALS, seals), 0);
	return fd;
}

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) != -1;
}

#define SEALED (F_SEAL_SHRINK | F_SEAL_GROW)

Test(region, span_check_arithmetic)
{
	cr_assert_eq(region_span_check(100, 0, 100), 0);
	cr_assert_eq(region_span_check(100, 0, 0), 0);
	cr_assert_eq(region_span_check(100, 100, 0), 0);
	cr_assert_eq(region_span_check(100, 99, 1), 0);
	cr_assert_eq(region_span_check(100, 50, 50), 0);
	cr_assert_eq(region_span_check(100, 50, 51), CEP_EBOUNDS);
	cr_assert_eq(region_span_check(100, 0, 101), CEP_EBOUNDS);
	cr_assert_eq(region_span_check(100, 101, 0), CEP_EBOUNDS);
	cr_assert_eq(region_span_check(0, 0, 0), 0);
	cr_assert_eq(region_span_check(0, 0, 1), CEP_EBOUNDS);
	/* offset + bytes wraps around to a small number: still outside. */
	cr_assert_eq(region_span_check(100, UINT64_MAX, 2), CEP_EBOUNDS);
	cr_assert_eq(region_span_check(100, 2, UINT64_MAX), CEP_EBOUNDS);
	cr_assert_eq(region_span_check(100, UINT64_MAX - 10, 20), CEP_EBOUNDS);
	cr_assert_eq(region_span_check(UINT64_MAX, UINT64_MAX, 0), 0);
	cr_assert_eq(region_span_check(UINT64_MAX, 1, UINT64_MAX - 1), 0);
	cr_assert_eq(region_span_check(UINT64_MAX, 1, UINT64_MAX), CEP_EBOUNDS);
}

Test(region, span_check_message_names_the_numbers)
{
	cr_assert_eq(region_span_check(4096, 4000, 200), CEP_EBOUNDS);
	cr_assert_str_eq(cep_last_error(), "slice at offset 4000 of 200 bytes "
			 "lies outside the region of 4096 bytes");
}

Test(region, register_find_slice_release)
{
	struct region *r, *found;
	void *p;
	int fd = memfd(8192, SEALED);

	cr_assert_eq(region_table_register(&tab, fd, 8192, "weights", &r), 0);
	cr_assert_eq(r->fd, fd);
	cr_assert_str_eq(r->name, "weights");
	cr_assert_eq(region_table_get(&tab, r->id, &found), 0);
	cr_assert_eq(found, r);
	cr_assert_eq(region_slice_check(r, 4096, 4096, &p), 0);
	cr_assert_eq(p, (char *)r->addr + 4096);
	cr_assert_eq(region_slice_check(r, 4097, 4096, &p), CEP_EBOUNDS);
	cr_assert_not_null(strstr(cep_last_error(), "region"));
	cr_assert_eq(pool.count, 1);
	cr_assert_eq(pool.bytes, 8192);
	cr_assert_eq(st.gauges[STATS_GAUGE_REGION_BYTES].current, 8192);

	cr_assert_eq(region_table_release(&tab, r->id), 0);
	cr_assert(!fd_open(fd));
	cr_assert_eq(pool.count, 0);
	cr_assert_eq(pool.bytes, 0);
	cr_assert_eq(pool.bytes_peak, 8192);
	cr_assert_eq(tab.bytes_peak, 8192);
	cr_assert_eq(st.counters[STATS_COUNTER_REGIONS_RELEASED], 1);
	cr_assert_eq(st.gauges[STATS_GAUGE_REGION_BYTES].total, 8192);
}

Test(region, lookups_in_a_large_table)
{
	uint64_t ids[200];
	struct region *r;
	int i;

	for (i = 0; i < 200; i++) {
		cr_assert_eq(region_table_register(&tab, memfd(4096, SEALED),
						   4096, NULL, &r), 0);
		ids[i] = r->id;
	}
	/* Release every third, then every id must be found or not. */
	for (i = 0; i < 200; i += 3)
		cr_assert_eq(region_table_release(&tab, ids[i]), 0);
	for (i = 0; i < 200; i++) {
		r = region_table_find(&tab, ids[i]);
		if (i % 3 == 0)
			cr_assert_null(r, "region %d still found", i);
		else
			cr_assert(r != NULL && r->id == ids[i]);
	}
	cr_assert_null(region_table_find(&tab, 0));
	cr_assert_null(region_table_find(&tab, ids[199] + 1));
	cr_assert_eq(tab.ids.count, 200 - 67);
}

Test(region, fd_checks_and_ownership)
{
	struct region *r;
	char path[] = "/tmp/cep-region-XXXXXX";
	int fd;

	fd = memfd(4096, F_SEAL_SHRINK);
	cr_assert_eq(region_table_register(&tab, fd, 4096, NULL, &r),
		     CEP_EUNSEALED);
	cr_assert_str_eq(cep_last_error(), "region fd is not sealed with "
			 "F_SEAL_GROW");
	cr_assert(!fd_open(fd));
	cr_assert_null(r);

	fd = memfd(4096, 0);
	cr_assert_eq(region_table_register(&tab, fd, 4096, NULL, &r),
		     CEP_EUNSEALED);
	cr_assert_not_null(strstr(cep_last_error(), "F_SEAL_SHRINK F_SEAL_GROW"));
	cr_assert(!fd_open(fd));

	/* A regular file cannot carry seals at all. */
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	unlink(path);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	cr_assert_eq(region_table_register(&tab, fd, 4096, NULL, &r),
		     CEP_EUNSEALED);
	cr_assert(!fd_open(fd));

	/* A memfd sealed against writes cannot be mapped writable. */
	fd = memfd(4096, SEALED | F_SEAL_WRITE);
	cr_assert_lt(region_table_register(&tab, fd, 4096, NULL, &r), 0);
	cr_assert(!fd_open(fd));

	fd = memfd(4096, SEALED);
	cr_assert_eq(region_table_register(&tab, fd, 4095, NULL, &r),
		     CEP_EINVAL);
	cr_assert(!fd_open(fd));
	fd = memfd(4096, SEALED);
	cr_assert_eq(region_table_register(&tab, fd, 0, NULL, &r), CEP_EINVAL);
	cr_assert(!fd_open(fd));

	cr_assert_eq(pool.count, 0);
	cr_assert_eq(st.counters[STATS_COUNTER_FDS_CLOSED], 6);
}

Test(region, limits)
{
	struct region_limits lim = {
		.max_per_client = 2,
		.bytes_per_client = 10000,
		.bytes_total = 15000,
	};
	struct region_table other;
	struct region *r;

	region_pool_init(&pool, &lim, &st);
	region_table_init(&tab, &pool);
	region_table_init(&other, &pool);
	cr_assert_eq(region_table_register(&tab, memfd(4096, SEALED), 4096,
					   NULL, &r), 0);
	cr_assert_eq(region_table_register(&tab, memfd(8192, SEALED), 8192,
					   NULL, &r), CEP_ELIMIT);
	cr_assert_str_eq(cep_last_error(), "region of 8192 bytes would exceed "
			 "the per-client region limit of 10000 bytes (4096 in "
			 "use)");
	cr_assert_eq(region_table_register(&other, memfd(8192, SEALED), 8192,
					   NULL, &r), 0);
	cr_assert_eq(region_table_register(&tab, memfd(4096, SEALED), 4096,
					   NULL, &r), CEP_ELIMIT);
	cr_assert_str_eq(cep_last_error(), "region of 4096 bytes would exceed "
			 "the total region limit of 15000 bytes (12288 in "
			 "use)");
	cr_assert_eq(region_table_register(&tab, memfd(1024, SEALED), 1024,
					   NULL, &r), 0);
	cr_assert_eq(region_table_register(&tab, memfd(1024, SEALED), 1024,
					   NULL, &r), CEP_ELIMIT);
	cr_assert_not_null(strstr(cep_last_error(), "limit of 2 regions"));
	/* A size near 2^64 must not wrap the sum past the limit. */
	cr_assert_eq(region_table_register(&other, memfd(4096, SEALED),
					   UINT64_MAX - 100, NULL, &r),
		     CEP_EINVAL);
	cr_assert_eq(st.counters[STATS_COUNTER_REGION_LIMIT_HITS], 3);
	region_table_close(&other);
}
