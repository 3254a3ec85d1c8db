/*
 * test_dispatch.c — the daemon's request handling through detached
 * connections: Hello first and its version check, Ping, regions and their
 * fds, seals and limits, malformed packets, LoadModel's fds, sessions,
 * admin visibility, and the gauges going back to their baseline when a
 * connection goes. No socket and no loop: dispatch_packet() directly.
 */
#include <stdio.h>
#include <sys/mman.h>

#include "tests/unit/daemon_util.h"

static struct server *srv;

static void quiet(void)
{
	log_level_set(LOG_CRIT);
}

TestSuite(dispatch, .init = quiet);

static Cudaep__V1__Response *simple(struct server *s, struct client *c,
				    Cudaep__V1__Request__BodyCase body)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	/* Every admin request body is an empty message, so one will do as
	 * any of them on the wire. */
	Cudaep__V1__StatusRequest empty = CUDAEP__V1__STATUS_REQUEST__INIT;

	q.id = tu_next_id++;
	q.body_case = body;
	q.status = &empty;
	return tu_call(s, c, &q, NULL, 0, NULL);
}

static Cudaep__V1__Response *session_req(struct server *s, struct client *c,
					 Cudaep__V1__Request__BodyCase body,
					 uint64_t id)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__SessionInfo info = CUDAEP__V1__SESSION_INFO__INIT;
	Cudaep__V1__Run run = CUDAEP__V1__RUN__INIT;
	Cudaep__V1__Unload unload = CUDAEP__V1__UNLOAD__INIT;

	q.id = tu_next_id++;
	q.body_case = body;
	info.session_id = run.session_id = unload.session_id = id;
	if (body == CUDAEP__V1__REQUEST__BODY_SESSION_INFO)
		q.session_info = &info;
	else if (body == CUDAEP__V1__REQUEST__BODY_RUN)
		q.run = &run;
	else
		q.unload = &unload;
	return tu_call(s, c, &q, NULL, 0, NULL);
}

/* ------------------------------------------------------------------ hello */

Test(dispatch, hello_is_required_first)
{
	Cudaep__V1__Response *r;
	struct client *c;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_expect_error(tu_ping(srv, c, 7, NULL, 0), CEP_EPROTO,
			"say Hello first");
	tu_expect_error(simple(srv, c, CUDAEP__V1__REQUEST__BODY_STATUS),
			CEP_EPROTO, "say Hello first");

	r = tu_hello_v(srv, c, CEP_PROTOCOL_VERSION, "bench", NULL);
	tu_expect_ok(r);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_HELLO);
	cr_assert_eq(r->hello->protocol_version, CEP_PROTOCOL_VERSION);
	cr_assert_str_eq(r->hello->daemon_version, CEP_VERSION);
	cr_assert_eq(r->hello->client_id, c->id);
	cr_assert_str_eq(r->hello->backend, "host");
	cr_assert_str_eq(r->hello->device_name, srv->backend->iface.device);
	cr_assert_eq(r->hello->device_memory, 0);
	cr_assert_eq(r->hello->max_packet, CEP_MAX_PACKET);
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert_str_eq(c->name, "bench");

	r = tu_ping(srv, c, 7, NULL, 0);
	tu_expect_ok(r);
	cudaep__v1__response__free_unpacked(r, NULL);
	tu_expect_error(tu_hello_v(srv, c, CEP_PROTOCOL_VERSION, "x", NULL),
			CEP_EPROTO, "already");
	server_free(srv);
}

Test(dispatch, hello_version_mismatch_closes)
{
	struct client *c;
	int dret = 0;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_expect_error(tu_hello_v(srv, c, 7, "old", &dret), CEP_EVERSION,
			"client speaks protocol 7, cudaepd speaks 1");
	cr_assert_eq(dret, DISPATCH_CLOSE);
	cr_assert_eq(srv->stats.counters[STATS_COUNTER_HELLO_REFUSED], 1);
	cr_assert(!c->hello_done);
	server_free(srv);
}

Test(dispatch, client_ids_are_never_reused)
{
	struct client *a, *b;
	uint64_t first;

	srv = tu_server(NULL);
	a = tu_conn(srv, 40001);
	first = a->id;
	client_close(a);
	b = tu_conn(srv, 40001);
	cr_assert_gt(b->id, first);
	server_free(srv);
}

Test(dispatch, long_client_name_is_cut_and_made_printable)
{
	char name[200];
	struct client *c;

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	name[3] = '\n';
	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	cudaep__v1__response__free_unpacked(
		tu_hello_v(srv, c, CEP_PROTOCOL_VERSION, name, NULL), NULL);
	cr_assert_eq(strlen(c->name), CEP_MAX_CLIENT_NAME - 1);
	cr_assert_eq(c->name[3], '?');
	server_free(srv);
}

/* ------------------------------------------------------------------- ping */

Test(dispatch, ping_echoes_payload_and_id)
{
	Cudaep__V1__Response *r;
	struct client *c;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	r = tu_ping(srv, c, 0xdeadbeefcafeULL, NULL, 0);
	tu_expect_ok(r);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_PING);
	cr_assert_eq(r->ping->payload, 0xdeadbeefcafeULL);
	cudaep__v1__response__free_unpacked(r, NULL);
	server_free(srv);
}

Test(dispatch, fd_on_ping_is_refused_and_closed)
{
	struct client *c;
	int fd;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	fd = tu_memfd(4096, true);
	tu_expect_error(tu_ping(srv, c, 1, &fd, 1), CEP_EBADF,
			"Ping expects 0 fds, got 1");
	cr_assert(!tu_fd_open(fd));
	server_free(srv);
}

Test(dispatch, fds_before_hello_are_closed)
{
	struct client *c;
	int fd;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	fd = tu_memfd(4096, true);
	tu_expect_error(tu_register(srv, c, 4096, &fd, 1), CEP_EPROTO,
			"say Hello first");
	cr_assert(!tu_fd_open(fd));
	server_free(srv);
}

/* ---------------------------------------------------------------- regions */

Test(dispatch, register_sealed_memfd_maps_it)
{
	struct region *reg;
	struct client *c;
	uint64_t id;
	char *mine;
	int fd;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	fd = tu_memfd(8192, true);
	mine = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(mine, MAP_FAILED);
	{
		Cudaep__V1__Response *r = tu_register(srv, c, 8192, &fd, 1);

		tu_expect_ok(r);
		id = r->register_region->region_id;
		cudaep__v1__response__free_unpacked(r, NULL);
	}
	cr_assert_gt(id, 0);
	reg = region_table_find(&c->regions, id);
	cr_assert_not_null(reg);
	cr_assert_eq(reg->size, 8192);
	/* The daemon keeps the fd (pinned later) and shares the memory. */
	cr_assert(tu_fd_open(reg->fd));
	strcpy(mine + 100, "from the client");
	cr_assert_str_eq((char *)reg->addr + 100, "from the client");
	cr_assert_eq(srv->stats.gauges[STATS_GAUGE_REGIONS].current, 1);
	cr_assert_eq(srv->stats.gauges[STATS_GAUGE_REGION_BYTES].current,
		     8192);
	cr_assert_eq(c->regions.bytes, 8192);
	munmap(mine, 8192);
	server_free(srv);
}

Test(dispatch, register_unsealed_memfd_is_refused)
{
	struct client *c;
	int fd, before;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	before = tu_fd_count();
	fd = tu_memfd(4096, false);
	tu_expect_error(tu_register(srv, c, 4096, &fd, 1), CEP_EUNSEALED,
			"F_SEAL_SHRINK");
	cr_assert(!tu_fd_open(fd));
	cr_assert_eq(tu_fd_count(), before);
	cr_assert_eq(c->regions.ids.count, 0);
	server_free(srv);
}

Test(dispatch, register_size_mismatch_names_both_sizes)
{
	struct client *c;
	int fd;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	fd = tu_memfd(4096, true);
	tu_expect_error(tu_register(srv, c, 8192, &fd, 1), CEP_EINVAL,
			"region size 8192 differs from the size of its fd, "
			"4096 bytes");
	cr_assert(!tu_fd_open(fd));
	fd = tu_memfd(4096, true);
	tu_expect_error(tu_register(srv, c, 0, &fd, 1), CEP_EINVAL,
			"0 bytes");
	cr_assert(!tu_fd_open(fd));
	server_free(srv);
}

Test(dispatch, register_needs_exactly_one_fd)
{
	struct client *c;
	int fds[2];

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	tu_expect_error(tu_register(srv, c, 4096, NULL, 0), CEP_EBADF,
			"RegisterRegion expects 1 fd, got 0");
	fds[0] = tu_memfd(4096, true);
	fds[1] = tu_memfd(4096, true);
	tu_expect_error(tu_register(srv, c, 4096, fds, 2), CEP_EBADF,
			"RegisterRegion expects 1 fd, got 2");
	cr_assert(!tu_fd_open(fds[0]));
	cr_assert(!tu_fd_open(fds[1]));
	cr_assert_eq(c->regions.ids.count, 0);
	server_free(srv);
}

Test(dispatch, region_count_limit)
{
	struct config cfg;
	struct client *c;
	int fd;

	config_init(&cfg);
	cfg.max_regions_per_client = 2;
	srv = tu_server(&cfg);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	tu_region(srv, c, 4096);
	tu_region(srv, c, 4096);
	fd = tu_memfd(4096, true);
	tu_expect_error(tu_register(srv, c, 4096, &fd, 1), CEP_ELIMIT,
			"per-client limit of 2 regions (2 registered)");
	cr_assert(!tu_fd_open(fd));
	cr_assert_eq(srv->stats.counters[STATS_COUNTER_REGION_LIMIT_HITS], 1);
	server_free(srv);
}

Test(dispatch, region_bytes_per_client_limit)
{
	struct config cfg;
	struct client *a, *b;
	int fd;

	config_init(&cfg);
	cfg.region_bytes_per_client = 16384;
	srv = tu_server(&cfg);
	a = tu_conn(srv, 40001);
	b = tu_conn(srv, 40002);
	tu_hello(srv, a);
	tu_hello(srv, b);
	tu_region(srv, a, 8192);
	fd = tu_memfd(12288, true);
	tu_expect_error(tu_register(srv, a, 12288, &fd, 1), CEP_ELIMIT,
			"region of 12288 bytes would exceed the per-client "
			"region limit of 16384 bytes (8192 in use)");
	/* The limit is per connection: another one still has room. */
	tu_region(srv, b, 12288);
	server_free(srv);
}

Test(dispatch, region_bytes_total_limit)
{
	Cudaep__V1__Response *r;
	struct config cfg;
	struct client *a, *b;
	uint64_t id;
	int fd;

	config_init(&cfg);
	cfg.region_bytes_total = 16384;
	srv = tu_server(&cfg);
	a = tu_conn(srv, 40001);
	b = tu_conn(srv, 40002);
	tu_hello(srv, a);
	tu_hello(srv, b);
	id = tu_region(srv, a, 12288);
	fd = tu_memfd(8192, true);
	tu_expect_error(tu_register(srv, b, 8192, &fd, 1), CEP_ELIMIT,
			"region of 8192 bytes would exceed the total region "
			"limit of 16384 bytes (12288 in use)");
	/* Released bytes are available again. */
	r = tu_release(srv, a, id);
	tu_expect_ok(r);
	cudaep__v1__response__free_unpacked(r, NULL);
	tu_region(srv, b, 8192);
	server_free(srv);
}

Test(dispatch, release_own_unknown_and_others)
{
	Cudaep__V1__Response *r;
	struct client *a, *b;
	uint64_t ida, idb;
	char want[64];

	srv = tu_server(NULL);
	a = tu_conn(srv, 40001);
	b = tu_conn(srv, 40002);
	tu_hello(srv, a);
	tu_hello(srv, b);
	ida = tu_region(srv, a, 4096);
	idb = tu_region(srv, b, 4096);

	snprintf(want, sizeof(want), "no region %llu on this connection",
		 (unsigned long long)idb);
	tu_expect_error(tu_release(srv, a, idb), CEP_ENOENT, want);
	cr_assert_not_null(region_table_find(&b->regions, idb));

	tu_expect_error(tu_release(srv, a, 424242), CEP_ENOENT,
			"no region 424242 on this connection");

	r = tu_release(srv, a, ida);
	tu_expect_ok(r);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_RELEASE_REGION);
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert_null(region_table_find(&a->regions, ida));
	cr_assert_eq(srv->stats.gauges[STATS_GAUGE_REGIONS].current, 1);
	tu_expect_error(tu_release(srv, a, ida), CEP_ENOENT, "no region");
	server_free(srv);
}

/* ------------------------------------------------------------ bad packets */

Test(dispatch, garbage_is_ebadmsg_and_the_next_request_is_served)
{
	static const uint8_t junk[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0x0a };
	Cudaep__V1__Response *r;
	struct client *c;
	int dret = -1;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	r = tu_raw(srv, c, junk, sizeof(junk), NULL, 0, 0, &dret);
	cr_assert_eq(dret, 0);
	cr_assert_eq(r->id, 0);
	tu_expect_error(r, CEP_EBADMSG, "malformed request");
	cr_assert_eq(srv->stats.counters[STATS_COUNTER_BAD_PACKETS], 1);

	r = tu_ping(srv, c, 99, NULL, 0);
	tu_expect_ok(r);
	cr_assert_eq(r->ping->payload, 99);
	cudaep__v1__response__free_unpacked(r, NULL);
	server_free(srv);
}

Test(dispatch, garbage_with_fds_closes_them)
{
	static const uint8_t junk[] = { 0x0b, 0x0c };
	struct client *c;
	int fds[2];

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	fds[0] = tu_memfd(4096, true);
	fds[1] = tu_memfd(4096, false);
	tu_expect_error(tu_raw(srv, c, junk, sizeof(junk), fds, 2, 0, NULL),
			CEP_EBADMSG, "malformed request");
	cr_assert(!tu_fd_open(fds[0]));
	cr_assert(!tu_fd_open(fds[1]));
	server_free(srv);
}

Test(dispatch, request_without_body)
{
	/* id = 9, then field 99 (varint 1): a body this daemon does not
	 * know. */
	static const uint8_t unknown[] = { 0x08, 0x09, 0x98, 0x06, 0x01 };
	static const uint8_t empty[] = { 0x08, 0x0a };
	Cudaep__V1__Response *r;
	struct client *c;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	r = tu_raw(srv, c, unknown, sizeof(unknown), NULL, 0, 0, NULL);
	cr_assert_eq(r->id, 9);
	tu_expect_error(r, CEP_EBADMSG, "unknown body (field 99)");
	r = tu_raw(srv, c, empty, sizeof(empty), NULL, 0, 0, NULL);
	cr_assert_eq(r->id, 10);
	tu_expect_error(r, CEP_EBADMSG, "request 10 has no body");
	/* A zero-length packet is an empty Request: no body either. */
	tu_expect_error(tu_raw(srv, c, "", 0, NULL, 0, 0, NULL), CEP_EBADMSG,
			"has no body");
	server_free(srv);
}

Test(dispatch, oversized_packet)
{
	Cudaep__V1__Response *r;
	struct client *c;
	int fd;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	fd = tu_memfd(4096, true);
	r = tu_raw(srv, c, "\x08\x05", 2, &fd, 1, DISPATCH_OVERSIZED, NULL);
	cr_assert_eq(r->id, 0);
	tu_expect_error(r, CEP_EMSGSIZE, "65536 bytes");
	cr_assert(!tu_fd_open(fd));
	cr_assert_eq(srv->stats.counters[STATS_COUNTER_OVERSIZED_PACKETS], 1);
	server_free(srv);
}

Test(dispatch, truncated_fds)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__Ping p = CUDAEP__V1__PING__INIT;
	uint8_t buf[64];
	Cudaep__V1__Response *r;
	struct client *c;
	size_t len;
	int fds[2];

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	q.id = 77;
	q.body_case = CUDAEP__V1__REQUEST__BODY_PING;
	q.ping = &p;
	len = cudaep__v1__request__pack(&q, buf);
	fds[0] = tu_memfd(4096, true);
	fds[1] = tu_memfd(4096, true);
	r = tu_raw(srv, c, buf, len, fds, 2, DISPATCH_FDS_TRUNCATED, NULL);
	cr_assert_eq(r->id, 77);
	tu_expect_error(r, CEP_EBADMSG, "more than 2 fds");
	cr_assert(!tu_fd_open(fds[0]));
	cr_assert(!tu_fd_open(fds[1]));
	server_free(srv);
}

Test(dispatch, pathological_packet_is_refused_without_malloc_storm)
{
	/* 32768 empty RegionSlice-sized messages in Run.inputs: tiny on the
	 * wire, large once decoded. It either decodes in the arena or is
	 * refused as malformed; either way the daemon answers and goes on. */
	static uint8_t pkt[CEP_MAX_PACKET];
	Cudaep__V1__Response *r;
	struct client *c;
	size_t n = 0, body;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	body = CEP_MAX_PACKET - 16;
	body -= body % 2;
	pkt[n++] = 0x08;
	pkt[n++] = 0x01;
	pkt[n++] = 0x82; /* field 16 (Run), length-delimited */
	pkt[n++] = 0x01;
	pkt[n++] = 0x80 | (body & 0x7f);
	pkt[n++] = 0x80 | ((body >> 7) & 0x7f);
	pkt[n++] = (uint8_t)(body >> 14);
	while (n + 2 <= 7 + body) {
		pkt[n++] = 0x12; /* inputs, empty TensorRef */
		pkt[n++] = 0x00;
	}
	r = tu_raw(srv, c, pkt, n, NULL, 0, 0, NULL);
	cr_assert_lt(tu_code(r), 0);
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert_null(srv->arena.overflow, "overflow kept past the request");
	r = tu_ping(srv, c, 5, NULL, 0);
	tu_expect_ok(r);
	cudaep__v1__response__free_unpacked(r, NULL);
	server_free(srv);
}

/* ---------------------------------------------------------------- models */

static Cudaep__V1__Response *load_model(struct server *s, struct client *c,
					int source, bool dir, uint64_t region,
					uint64_t off, uint64_t bytes,
					int *fds, int nfds)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__LoadModel m = CUDAEP__V1__LOAD_MODEL__INIT;
	Cudaep__V1__RegionSlice sl = CUDAEP__V1__REGION_SLICE__INIT;

	m.source = source;
	m.has_dir_fd = dir;
	if (source == CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_REGION) {
		sl.region_id = region;
		sl.offset = off;
		sl.bytes = bytes;
		m.region = &sl;
	}
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_LOAD_MODEL;
	q.load_model = &m;
	return tu_call(s, c, &q, fds, nfds, NULL);
}

Test(dispatch, load_model_errors_close_fds)
{
	struct client *c;
	int fds[2], before;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	before = tu_fd_count();
	fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fds[1] = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_eq(tu_fd_count(), before + 2);
	tu_expect_error(load_model(srv, c, CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_FD,
				   true, 0, 0, 0, fds, 2),
			CEP_EINVAL, "not a regular file");
	cr_assert_eq(tu_fd_count(), before);

	fds[0] = memfd_create("empty", MFD_CLOEXEC);
	tu_expect_error(load_model(srv, c, CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_FD,
				   false, 0, 0, 0, fds, 1),
			CEP_EMODEL, "empty");
	cr_assert_eq(tu_fd_count(), before);

	/* The fd rule: FD source with a dir fd wants 2. */
	fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	tu_expect_error(load_model(srv, c, CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_FD,
				   true, 0, 0, 0, fds, 1),
			CEP_EBADF, "LoadModel expects 2 fds, got 1");
	cr_assert_eq(tu_fd_count(), before);
	server_free(srv);
}

Test(dispatch, load_model_from_region_checks_the_slice)
{
	struct client *c;
	uint64_t id;
	int fd;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	id = tu_region(srv, c, 4096);
	tu_expect_error(load_model(srv, c,
				   CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_REGION,
				   false, 999, 0, 10, NULL, 0),
			CEP_ENOENT, "no region 999 on this connection");
	tu_expect_error(load_model(srv, c,
				   CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_REGION,
				   false, id, 4000, 100, NULL, 0),
			CEP_EBOUNDS, "offset 4000 of 100 bytes");
	tu_expect_error(load_model(srv, c,
				   CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_REGION,
				   false, id, 0, 4096, NULL, 0),
			CEP_EMODEL, "not a valid ONNX model");
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	tu_expect_error(load_model(srv, c,
				   CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_REGION,
				   false, id, 0, 4096, &fd, 1),
			CEP_EBADF, "LoadModel expects 0 fds, got 1");
	cr_assert(!tu_fd_open(fd));
	tu_expect_error(load_model(srv, c, 5, false, 0, 0, 0, NULL, 0),
			CEP_EINVAL, "source 5");
	server_free(srv);
}

Test(dispatch, sessions_unknown_are_enoent)
{
	struct client *c;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	tu_expect_error(session_req(srv, c, CUDAEP__V1__REQUEST__BODY_RUN, 5),
			CEP_ENOENT, "no session 5 on this connection");
	tu_expect_error(session_req(srv, c,
				    CUDAEP__V1__REQUEST__BODY_SESSION_INFO, 5),
			CEP_ENOENT, "no session 5 on this connection");
	tu_expect_error(session_req(srv, c, CUDAEP__V1__REQUEST__BODY_UNLOAD, 5),
			CEP_ENOENT, "no session 5 on this connection");
	server_free(srv);
}

/* ------------------------------------------------------------------ admin */

static size_t clients_seen(struct server *s, struct client *c, uint32_t *total)
{
	Cudaep__V1__Response *r = simple(s, c, CUDAEP__V1__REQUEST__BODY_CLIENTS);
	size_t n;

	tu_expect_ok(r);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_CLIENTS);
	n = r->clients->n_clients;
	*total = r->clients->total;
	cudaep__v1__response__free_unpacked(r, NULL);
	return n;
}

/* The region entries of a MemoryReply (the rest is device memory). */
static size_t regions_entries(const Cudaep__V1__MemoryReply *m)
{
	size_t i, n = 0;

	for (i = 0; i < m->n_entries; i++)
		n += strcmp(m->entries[i]->role, "regions") == 0;
	return n;
}

Test(dispatch, admin_sees_everyone_others_themselves)
{
	struct client *a, *b, *root, *grp;
	Cudaep__V1__Response *r;
	struct session *sess;
	struct config cfg;
	uint32_t total;
	char owner[32];

	cr_assert_neq(geteuid(), 40001);
	cr_assert_neq(geteuid(), 40002);
	config_init(&cfg);
	cr_assert_eq(config_set(&cfg, "admin_group", "40500", NULL, 0), 0);
	srv = tu_server(&cfg);
	a = tu_conn(srv, 40001);
	b = tu_conn(srv, 40002);
	root = tu_conn(srv, 0);
	cr_assert_eq(server_client_detached(srv, 40003, 40500, 1, &grp), 0);
	cr_assert(!a->admin && !b->admin && root->admin && grp->admin);
	tu_hello(srv, a);
	tu_hello(srv, b);
	tu_hello(srv, root);
	tu_hello(srv, grp);
	tu_region(srv, a, 4096);
	tu_region(srv, b, 8192);
	cr_assert_eq(session_table_add(&a->sessions, "sa", 0, &sess), 0);
	cr_assert_eq(session_table_add(&b->sessions, "sb", 0, &sess), 0);

	cr_assert_eq(clients_seen(srv, a, &total), 1);
	cr_assert_eq(total, 1);
	r = simple(srv, a, CUDAEP__V1__REQUEST__BODY_CLIENTS);
	cr_assert_eq(r->clients->clients[0]->client_id, a->id);
	cr_assert_eq(r->clients->clients[0]->uid, 40001);
	cr_assert_eq(r->clients->clients[0]->regions, 1);
	cr_assert_eq(r->clients->clients[0]->region_bytes, 4096);
	cr_assert_eq(r->clients->clients[0]->sessions, 1);
	cr_assert_str_eq(r->clients->clients[0]->name, "unit");
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert_eq(clients_seen(srv, root, &total), 4);
	cr_assert_eq(clients_seen(srv, grp, &total), 4);

	r = simple(srv, a, CUDAEP__V1__REQUEST__BODY_SESSIONS);
	tu_expect_ok(r);
	cr_assert_eq(r->sessions->n_sessions, 1);
	cr_assert_str_eq(r->sessions->sessions[0]->name, "sa");
	cr_assert_eq(r->sessions->sessions[0]->client_id, a->id);
	cudaep__v1__response__free_unpacked(r, NULL);
	r = simple(srv, root, CUDAEP__V1__REQUEST__BODY_SESSIONS);
	cr_assert_eq(r->sessions->n_sessions, 2);
	cr_assert_eq(r->sessions->total, 2);
	cudaep__v1__response__free_unpacked(r, NULL);

	r = simple(srv, b, CUDAEP__V1__REQUEST__BODY_MEMORY);
	tu_expect_ok(r);
	cr_assert_eq(regions_entries(r->memory), 2);
	cr_assert_str_eq(r->memory->entries[0]->owner, "total");
	cr_assert_str_eq(r->memory->entries[0]->role, "regions");
	cr_assert_eq(r->memory->entries[0]->current, 4096 + 8192);
	cr_assert_eq(r->memory->entries[0]->limit, cfg.region_bytes_total);
	snprintf(owner, sizeof(owner), "client:%llu",
		 (unsigned long long)b->id);
	cr_assert_str_eq(r->memory->entries[1]->owner, owner);
	cr_assert_eq(r->memory->entries[1]->current, 8192);
	cr_assert_eq(r->memory->entries[1]->peak, 8192);
	cr_assert_eq(r->memory->entries[1]->limit,
		     cfg.region_bytes_per_client);
	cudaep__v1__response__free_unpacked(r, NULL);
	r = simple(srv, root, CUDAEP__V1__REQUEST__BODY_MEMORY);
	cr_assert_eq(regions_entries(r->memory), 5);
	cr_assert_eq(r->memory->total, r->memory->n_entries);
	cudaep__v1__response__free_unpacked(r, NULL);
	server_free(srv);
}

Test(dispatch, status_reports_the_daemon)
{
	Cudaep__V1__Response *r;
	struct client *a, *b;

	srv = tu_server(NULL);
	snprintf(srv->socket_path, sizeof(srv->socket_path), "/tmp/x.sock");
	a = tu_conn(srv, 40001);
	b = tu_conn(srv, 40002);
	tu_hello(srv, a);
	tu_hello(srv, b);
	tu_region(srv, b, 8192);
	r = simple(srv, a, CUDAEP__V1__REQUEST__BODY_STATUS);
	tu_expect_ok(r);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_STATUS_REPLY);
	cr_assert_str_eq(r->status_reply->daemon_version, CEP_VERSION);
	cr_assert_eq(r->status_reply->protocol_version, CEP_PROTOCOL_VERSION);
	cr_assert_eq(r->status_reply->pid, getpid());
	cr_assert_str_eq(r->status_reply->backend, "host");
	cr_assert_str_eq(r->status_reply->socket_path, "/tmp/x.sock");
	cr_assert_eq(r->status_reply->clients, 2);
	cr_assert_eq(r->status_reply->regions, 1);
	cr_assert_eq(r->status_reply->region_bytes, 8192);
	cr_assert_eq(r->status_reply->sessions, 0);
	/* 2 Hellos, 1 RegisterRegion, this Status. */
	cr_assert_eq(r->status_reply->requests, 4);
	cudaep__v1__response__free_unpacked(r, NULL);
	server_free(srv);
}

Test(dispatch, stats_reply_lists_every_counter_and_gauge)
{
	Cudaep__V1__Response *r;
	struct client *c;
	size_t i;
	bool seen = false;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	tu_region(srv, c, 4096);
	r = simple(srv, c, CUDAEP__V1__REQUEST__BODY_STATS);
	tu_expect_ok(r);
	cr_assert_eq(r->stats->version, STATS_VERSION);
	cr_assert_eq(r->stats->n_counters, STATS_COUNTER_COUNT);
	cr_assert_eq(r->stats->n_gauges, STATS_GAUGE_COUNT);
	for (i = 0; i < r->stats->n_counters; i++) {
		if (strcmp(r->stats->counters[i]->name,
			   "regions_registered") == 0) {
			cr_assert_eq(r->stats->counters[i]->value, 1);
			seen = true;
		}
	}
	cr_assert(seen);
	cr_assert_str_eq(r->stats->gauges[STATS_GAUGE_REGION_BYTES]->name,
			 "region_bytes");
	cr_assert_eq(r->stats->gauges[STATS_GAUGE_REGION_BYTES]->current,
		     4096);
	cudaep__v1__response__free_unpacked(r, NULL);
	server_free(srv);
}

Test(dispatch, lists_are_cut_at_the_client_limit)
{
	struct client *root;
	uint32_t total;
	int i;

	srv = tu_server(NULL);
	root = tu_conn(srv, 0);
	tu_hello(srv, root);
	for (i = 0; i < CEP_MAX_LIST + 5; i++)
		tu_conn(srv, 40001);
	cr_assert_eq(clients_seen(srv, root, &total), CEP_MAX_LIST);
	cr_assert_eq(total, CEP_MAX_LIST + 6);
	server_free(srv);
}

/* -------------------------------------------------------------- teardown */

Test(dispatch, conn_teardown_returns_gauges_and_fds_to_baseline)
{
	struct stats before;
	struct session *sess;
	struct client *keep, *c;
	int fds_before, g;

	srv = tu_server(NULL);
	keep = tu_conn(srv, 40002);
	tu_hello(srv, keep);
	tu_region(srv, keep, 4096);
	before = srv->stats;
	fds_before = tu_fd_count();

	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	tu_region(srv, c, 4096);
	tu_region(srv, c, 1 << 20);
	cr_assert_eq(session_table_add(&c->sessions, "s", 0, &sess), 0);
	cr_assert_eq(tu_fd_count(), fds_before + 2);
	cr_assert_eq(srv->stats.gauges[STATS_GAUGE_REGIONS].current, 3);
	client_close(c);

	for (g = 0; g < STATS_GAUGE_COUNT; g++)
		cr_assert_eq(srv->stats.gauges[g].current,
			     before.gauges[g].current, "gauge %s: %lld, was %lld",
			     stats_gauge_name(g),
			     (long long)srv->stats.gauges[g].current,
			     (long long)before.gauges[g].current);
	cr_assert_eq(tu_fd_count(), fds_before);
	cr_assert_eq(srv->stats.counters[STATS_COUNTER_FDS_RECEIVED] -
		     srv->stats.counters[STATS_COUNTER_FDS_CLOSED], 1,
		     "only the kept connection's region fd is still open");
	cr_assert_eq(srv->regions.bytes, 4096);
	cr_assert_eq(srv->clients.n, 1);
	server_free(srv);
}
