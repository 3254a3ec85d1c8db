/*
 * test_regions.c — shared-memory regions against a real cudaepd: sealed
 * memfds are accepted and mapped, unsealed ones refused, sizes and limits
 * enforced with messages that say which limit, and releases leave the
 * daemon's gauges and fds where they started.
 */
#include "tests/integration/harness.h"

#include <criterion/criterion.h>

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct hdaemon d;
static cudaep_v1_Response resp;

static void start_limited(void)
{
	static const char *const args[] = {
		"--max-regions-per-client", "4",
		"--region-bytes-per-client", "1M",
		"--region-bytes-total", "2M",
		NULL,
	};

	cr_assert_eq(h_daemon_start(&d, args), 0, "cudaepd did not start");
}

static void stop(void)
{
	h_daemon_stop_clean(&d, "cudaepd");
}

TestSuite(regions, .init = start_limited, .fini = stop, .timeout = 60);

Test(regions, create_write_release)
{
	cep_client *c = h_connect(&d, "regions");
	cep_region *r = NULL;
	int64_t base_regions = h_gauge(c, "regions");
	int64_t base_bytes = h_gauge(c, "region_bytes");
	int base_fds = h_settled_fds(&d, c, 1);
	uint8_t *p;

	cr_assert_eq(cep_region_new(c, 8192, &r), 0, "%s", cep_last_error());
	cr_assert_not_null(r);
	cr_expect_eq(cep_region_size(r), 8192);
	p = cep_region_data(r);
	for (size_t i = 0; i < 8192; i++)
		cr_assert_eq(p[i], 0, "region not zero-filled at %zu", i);
	memset(p, 0xab, 8192);
	cr_expect_eq(h_gauge(c, "regions"), base_regions + 1);
	cr_expect_eq(h_gauge(c, "region_bytes"), base_bytes + 8192);
	cr_expect_eq(cep_region_free(r), 0, "%s", cep_last_error());
	cr_expect_eq(h_gauge(c, "regions"), base_regions);
	cr_expect_eq(h_gauge(c, "region_bytes"), base_bytes);
	cr_expect_eq(h_wait_fd_count(&d, base_fds), base_fds);
	cep_close(c);
}

static int hello_fd(void)
{
	int fd = h_raw_connect(&d);

	cr_assert_geq(fd, 0);
	cr_assert_eq(h_raw_hello(fd, CEP_PROTOCOL_VERSION, &resp), 0);
	cr_assert_eq(resp.status.code, 0, "%s", resp.status.message);
	return fd;
}

static int raw_register(int fd, uint64_t size, int mfd)
{
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;

	req.id = 21;
	req.which_body = cudaep_v1_Request_register_region_tag;
	req.body.register_region.size = size;
	cr_assert_eq(h_raw_send_req(fd, &req, &mfd, 1), 0);
	cr_assert_eq(h_raw_recv(fd, &resp), 0);
	cr_expect_eq(resp.id, 21);
	return resp.status.code;
}

Test(regions, unsealed_memfd_is_refused)
{
	int fd = hello_fd();
	int base_fds = h_settled_fds_raw(&d, fd, 1);
	int mfd = h_memfd(4096, false);

	cr_expect_eq(raw_register(fd, 4096, mfd), CEP_EUNSEALED, "%s",
		     resp.status.message);
	cr_expect_eq(h_daemon_fd_count(&d), base_fds);
	close(mfd);
	mfd = h_memfd(4096, true);
	cr_expect_eq(raw_register(fd, 4096, mfd), 0, "%s",
		     resp.status.message);
	cr_expect_gt(resp.body.register_region.region_id, 0);
	close(mfd);
	close(fd);
}

Test(regions, declared_size_must_match)
{
	int fd = hello_fd();
	int mfd = h_memfd(4096, true);

	cr_expect_eq(raw_register(fd, 8192, mfd), CEP_EINVAL, "%s",
		     resp.status.message);
	cr_expect_not_null(strstr(resp.status.message, "4096"), "%s",
			   resp.status.message);
	cr_expect_eq(raw_register(fd, 0, mfd), CEP_EINVAL, "%s",
		     resp.status.message);
	close(mfd);
	close(fd);
}

Test(regions, not_a_memfd)
{
	int fd = hello_fd();
	int pipefd[2];

	cr_assert_eq(pipe(pipefd), 0);
	cr_expect_lt(raw_register(fd, 4096, pipefd[0]), 0);
	close(pipefd[0]);
	close(pipefd[1]);
	close(fd);
}

Test(regions, count_limit_per_client)
{
	cep_client *c = h_connect(&d, "many");
	cep_region *r[5] = {NULL};

	for (int i = 0; i < 4; i++)
		cr_assert_eq(cep_region_new(c, 4096, &r[i]), 0, "region %d: %s",
			     i, cep_last_error());
	cr_expect_eq(cep_region_new(c, 4096, &r[4]), CEP_ELIMIT);
	cr_expect_null(r[4]);
	cr_expect_gt(strlen(cep_last_error()), 0);
	cr_expect_eq(cep_region_free(r[0]), 0);
	cr_expect_eq(cep_region_new(c, 4096, &r[0]), 0, "%s",
		     cep_last_error());
	for (int i = 0; i < 4; i++)
		cep_region_free(r[i]);
	cep_close(c);
}

Test(regions, byte_limits_name_the_limit)
{
	cep_client *a = h_connect(&d, "a");
	cep_client *b = h_connect(&d, "b");
	cep_client *e = h_connect(&d, "e");
	cep_region *ra = NULL, *rb = NULL, *re = NULL, *big = NULL;
	const char *msg;

	/* Per client: 1 MiB. */
	cr_expect_eq(cep_region_new(a, (1 << 20) + 4096, &big), CEP_ELIMIT);
	msg = cep_last_error();
	cr_expect_not_null(strstr(msg, "client"), "%s", msg);
	/* Total: 2 MiB, two clients each at their own limit fill it. */
	cr_assert_eq(cep_region_new(a, 1 << 20, &ra), 0, "%s", cep_last_error());
	cr_assert_eq(cep_region_new(b, 1 << 20, &rb), 0, "%s", cep_last_error());
	cr_expect_eq(cep_region_new(e, 4096, &re), CEP_ELIMIT);
	msg = cep_last_error();
	cr_expect_not_null(strstr(msg, "total"), "%s", msg);
	cep_region_free(ra);
	cr_expect_eq(cep_region_new(e, 4096, &re), 0, "%s", cep_last_error());
	cep_region_free(re);
	cep_region_free(rb);
	cep_close(a);
	cep_close(b);
	cep_close(e);
}

Test(regions, release_unknown_or_foreign)
{
	cep_client *owner = h_connect(&d, "owner");
	cep_region *r = NULL;
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;
	int fd = hello_fd();

	cr_assert_eq(cep_region_new(owner, 4096, &r), 0, "%s",
		     cep_last_error());
	/* Another connection cannot release it, whatever id it guesses. */
	for (uint64_t id = 1; id < 8; id++) {
		req.id = 100 + id;
		req.which_body = cudaep_v1_Request_release_region_tag;
		req.body.release_region.region_id = id;
		cr_assert_eq(h_raw_send_req(fd, &req, NULL, 0), 0);
		cr_assert_eq(h_raw_recv(fd, &resp), 0);
		cr_expect_eq(resp.status.code, CEP_ENOENT, "id %lu: %s",
			     (unsigned long)id, resp.status.message);
	}
	memset(cep_region_data(r), 1, 4096);
	cr_expect_eq(cep_region_free(r), 0, "%s", cep_last_error());
	close(fd);
	cep_close(owner);
}
