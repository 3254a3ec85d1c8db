/*
 * test_client_region.c — cep_region_new/free against the fake daemon: what
 * the daemon receives is a memfd of exactly the size asked, sealed against
 * shrinking, growing and further seals, and shared with the client's
 * zero-filled mapping; failures unwind everything; cep_close releases
 * regions left over.
 */
#include "tests/unit/fakedaemon.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(client_region, .timeout = 30);

static struct fake_daemon fake;

/* What the fake saw of the last RegisterRegion, and the fd it kept. */
static struct {
	int nfds;
	uint64_t size;       /* the request's field */
	off_t file_size;     /* fstat of the fd */
	int seals;
	int kept_fd;
	uint64_t released;   /* region id of the last ReleaseRegion */
	int refuse;          /* status code to refuse with, 0 to accept */
} seen = {.kept_fd = -1};

static enum fake_action regions(struct fake_daemon *f,
				const cudaep_v1_Request *req, int *fds,
				int nfds, cudaep_v1_Response *resp)
{
	struct stat st;

	if (req->which_body == cudaep_v1_Request_release_region_tag)
		seen.released = req->body.release_region.region_id;
	if (req->which_body != cudaep_v1_Request_register_region_tag)
		return fake_default(f, req, fds, nfds, resp);
	seen.nfds = nfds;
	seen.size = req->body.register_region.size;
	if (nfds == 1) {
		seen.seals = fcntl(fds[0], F_GET_SEALS);
		seen.file_size = fstat(fds[0], &st) == 0 ? st.st_size : -1;
		if (seen.kept_fd >= 0)
			close(seen.kept_fd);
		seen.kept_fd = fds[0];
		fds[0] = -1;
	}
	if (seen.refuse != 0) {
		fake_error(resp, seen.refuse, "region limit: 2 regions of 2");
		return FAKE_REPLY;
	}
	resp->which_body = cudaep_v1_Response_register_region_tag;
	resp->body.register_region.region_id = 5;
	return FAKE_REPLY;
}

static cep_client *start_and_connect(void)
{
	cep_client *c = NULL;

	cr_assert_eq(fake_start(&fake, regions, NULL), 0, "%s",
		     strerror(errno));
	cr_assert_eq(cep_connect(fake.path, "regions", &c), 0, "%s",
		     cep_last_error());
	return c;
}

Test(client_region, registers_a_sealed_memfd)
{
	const size_t size = 3 * 4096 + 100;
	cep_client *c = start_and_connect();
	cep_region *r = NULL;
	unsigned char *p, *q;

	cr_assert_eq(cep_region_new(c, size, &r), 0, "%s", cep_last_error());
	cr_assert_not_null(r);
	cr_expect_eq(seen.nfds, 1);
	cr_expect_eq(seen.size, size);
	cr_expect_eq(seen.file_size, (off_t)size);
	cr_expect_eq(seen.seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
		     F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL,
		     "seals %#x", seen.seals);
	cr_expect_eq(seen.seals & F_SEAL_WRITE, 0, "the daemon must write");
	cr_expect_eq(cep_region_size(r), size);

	p = cep_region_data(r);
	cr_assert_not_null(p);
	for (size_t i = 0; i < size; i++)
		cr_assert_eq(p[i], 0, "byte %zu is %u", i, p[i]);

	/* The daemon's view and the client's are the same memory. */
	q = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, seen.kept_fd, 0);
	cr_assert_neq(q, MAP_FAILED);
	p[0] = 0x11;
	p[size - 1] = 0x22;
	q[4096] = 0x33;
	cr_expect_eq(q[0], 0x11);
	cr_expect_eq(q[size - 1], 0x22);
	cr_expect_eq(p[4096], 0x33);
	/* Sealed: the size cannot change under the daemon. */
	cr_expect_neq(ftruncate(seen.kept_fd, 4096), 0);
	cr_expect_neq(ftruncate(seen.kept_fd, 2 * size), 0);
	munmap(q, size);

	cr_expect_eq(cep_region_free(r), 0, "%s", cep_last_error());
	cr_expect_eq(seen.released, 5);
	cr_expect_eq(fake_count_maps("cudaep-region"), 0);
	cep_close(c);
	fake_stop(&fake);
	close(seen.kept_fd);
}

Test(client_region, zero_bytes_is_invalid)
{
	cep_client *c = start_and_connect();
	cep_region *r = (cep_region *)&fake;

	cr_expect_eq(cep_region_new(c, 0, &r), CEP_EINVAL);
	cr_expect_null(r);
	cr_expect_eq(cep_region_new(NULL, 10, &r), CEP_EINVAL);
	cr_expect_eq(cep_region_new(c, 10, NULL), CEP_EINVAL);
	cr_expect_eq(fake.requests, 1, "only the hello reached the daemon");
	cep_close(c);
	fake_stop(&fake);
}

Test(client_region, refusal_unwinds_everything)
{
	cep_client *c = start_and_connect();
	cep_region *r = (cep_region *)&fake;
	int fds_before;

	seen.refuse = CEP_ELIMIT;
	fds_before = fake_count_fds();
	cr_expect_eq(cep_region_new(c, 8192, &r), CEP_ELIMIT);
	cr_expect_str_eq(cep_last_error(), "region limit: 2 regions of 2");
	cr_expect_null(r);
	close(seen.kept_fd); /* the fake's copy */
	seen.kept_fd = -1;
	cr_expect_eq(fake_count_fds(), fds_before, "an fd leaked");
	cr_expect_eq(fake_count_maps("cudaep-region"), 0, "a mapping leaked");
	cep_close(c);
	fake_stop(&fake);
}

Test(client_region, close_releases_leftover_regions)
{
	cep_client *c = start_and_connect();
	cep_region *r[3];

	for (int i = 0; i < 3; i++)
		cr_assert_eq(cep_region_new(c, 4096, &r[i]), 0, "%s",
			     cep_last_error());
	cr_expect_eq(cep_region_free(r[1]), 0);
	cr_expect_eq(fake_count_maps("cudaep-region"), 2);
	close(seen.kept_fd);
	seen.kept_fd = -1;
	cep_close(c);
	cr_expect_eq(fake_count_maps("cudaep-region"), 0);
	fake_stop(&fake);
}

static enum fake_action close_on_release(struct fake_daemon *f,
					 const cudaep_v1_Request *req, int *fds,
					 int nfds, cudaep_v1_Response *resp)
{
	if (req->which_body == cudaep_v1_Request_release_region_tag)
		return FAKE_CLOSE;
	return regions(f, req, fds, nfds, resp);
}

Test(client_region, free_when_daemon_is_gone_still_unmaps)
{
	cep_client *c = NULL;
	cep_region *r = NULL;

	cr_assert_eq(fake_start(&fake, close_on_release, NULL), 0);
	cr_assert_eq(cep_connect(fake.path, "regions", &c), 0, "%s",
		     cep_last_error());
	cr_assert_eq(cep_region_new(c, 4096, &r), 0, "%s", cep_last_error());
	close(seen.kept_fd);
	seen.kept_fd = -1;
	cr_expect_eq(cep_region_free(r), CEP_ECONNRESET);
	cr_expect_eq(fake_count_maps("cudaep-region"), 0);
	cep_close(c);
	fake_stop(&fake);
}
