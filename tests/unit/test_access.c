/*
 * test_access.c — who may do what, through dispatch_packet() on detached
 * connections of different uids: another connection's session and region
 * ids answered exactly as unknown ones (same code, same message but for
 * the number), KillSession for admins only and what the owner hears
 * afterwards, and the per-uid limits (connections, sessions, regions,
 * bytes) counted over every connection of a uid, with their messages and
 * counters. Runs are checked against a reference computed here on fresh
 * random weights.
 */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "tests/unit/daemon_util.h"
#include "tests/unit/onnxb.h"

#include "daemon/access.h"
#include "alloc/account.h"

static struct server *srv;

TestSuite(access);

/* y = relu(x @ w + b) with x: [batch, 4], w: [4, 8], b: [8]. */
#define IN  4
#define OUT 8
static float W[IN * OUT], B[OUT];

static void weights_fresh(void)
{
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();

	srand(seed);
	for (int i = 0; i < IN * OUT; i++)
		W[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
	for (int i = 0; i < OUT; i++)
		B[i] = (float)rand() / (float)RAND_MAX - 0.5f;
}

static void reference(const float *x, int batch, float *y)
{
	for (int i = 0; i < batch; i++)
		for (int j = 0; j < OUT; j++) {
			float acc = B[j];

			for (int k = 0; k < IN; k++)
				acc += x[i * IN + k] * W[k * OUT + j];
			y[i * OUT + j] = acc > 0.0f ? acc : 0.0f;
		}
}

static int model_fd(void)
{
	struct onnxb *b = onnxb_new(13);
	size_t len;
	uint8_t *bytes;
	int fd = memfd_create("model", MFD_CLOEXEC);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,4");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,8");
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "4,8", W);
	onnxb_init(b, "b", CEP_DTYPE_FLOAT32, "8", B);
	onnxb_node(b, "MatMul", "x,w", "h");
	onnxb_node(b, "Add", "h,b", "z");
	onnxb_node(b, "Relu", "z", "y");
	bytes = onnxb_finish(b, &len);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, bytes, len), (ssize_t)len);
	free(bytes);
	return fd;
}

static Cudaep__V1__Response *load_resp(struct client *c)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__LoadModel m = CUDAEP__V1__LOAD_MODEL__INIT;
	int fd = model_fd();

	m.source = CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_FD;
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_LOAD_MODEL;
	q.load_model = &m;
	return tu_call(srv, c, &q, &fd, 1, NULL);
}

static uint64_t load(struct client *c)
{
	Cudaep__V1__Response *r = load_resp(c);
	uint64_t id;

	tu_expect_ok(r);
	id = r->load_model->info->session_id;
	cudaep__v1__response__free_unpacked(r, NULL);
	return id;
}

/* LoadModel from bytes [0, 64) of region reg. */
static Cudaep__V1__Response *load_from_region(struct client *c, uint64_t reg)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__LoadModel m = CUDAEP__V1__LOAD_MODEL__INIT;
	Cudaep__V1__RegionSlice sl = CUDAEP__V1__REGION_SLICE__INIT;

	sl.region_id = reg;
	sl.bytes = 64;
	m.source = CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_REGION;
	m.region = &sl;
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_LOAD_MODEL;
	q.load_model = &m;
	return tu_call(srv, c, &q, NULL, 0, NULL);
}

/* A Run of batch rows: x at offset 0 of region in_reg, y at offset 1024
 * of region out_reg. */
static Cudaep__V1__Response *run(struct client *c, uint64_t sess,
				 uint64_t in_reg, uint64_t out_reg, int batch)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__Run m = CUDAEP__V1__RUN__INIT;
	Cudaep__V1__TensorRef x = CUDAEP__V1__TENSOR_REF__INIT;
	Cudaep__V1__TensorRef y = CUDAEP__V1__TENSOR_REF__INIT;
	Cudaep__V1__TensorRef *pi[1] = {&x}, *po[1] = {&y};
	int64_t shape[2] = {batch, IN};

	x.name = (char *)"x";
	x.region_id = in_reg;
	x.bytes = (uint64_t)batch * IN * sizeof(float);
	x.dtype = (Cudaep__V1__DataType)CEP_DTYPE_FLOAT32;
	x.n_shape = 2;
	x.shape = shape;
	y.name = (char *)"y";
	y.region_id = out_reg;
	y.offset = 1024;
	y.bytes = (uint64_t)batch * OUT * sizeof(float);
	m.session_id = sess;
	m.n_inputs = 1;
	m.inputs = pi;
	m.n_outputs = 1;
	m.outputs = po;
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_RUN;
	q.run = &m;
	return tu_call(srv, c, &q, NULL, 0, NULL);
}

/* Runs sess on fresh random inputs in region reg of c and checks y. */
static void run_checked(struct client *c, uint64_t sess, uint64_t reg, int batch)
{
	struct region *rg = region_table_find(&c->regions, reg);
	float *x, *y, want[16 * OUT];
	Cudaep__V1__Response *r;

	cr_assert_not_null(rg);
	cr_assert_leq(batch, 16);
	x = rg->addr;
	y = (float *)((char *)rg->addr + 1024);
	for (int i = 0; i < batch * IN; i++)
		x[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f;
	reference(x, batch, want);
	r = run(c, sess, reg, reg, batch);
	tu_expect_ok(r);
	cudaep__v1__response__free_unpacked(r, NULL);
	for (int i = 0; i < batch * OUT; i++)
		cr_assert(fabsf(y[i] - want[i]) <= 1e-5f * (1.0f + fabsf(want[i])),
			  "y[%d] = %g, want %g", i, y[i], want[i]);
}

/* Asserts that resp succeeded, then frees it. */
static void expect_ok(Cudaep__V1__Response *resp)
{
	tu_expect_ok(resp);
	cudaep__v1__response__free_unpacked(resp, NULL);
}

/* SessionInfo, Unload or KillSession naming id. */
static Cudaep__V1__Response *by_id(struct client *c,
				   Cudaep__V1__Request__BodyCase body,
				   uint64_t id)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__SessionInfo info = CUDAEP__V1__SESSION_INFO__INIT;
	Cudaep__V1__Unload unload = CUDAEP__V1__UNLOAD__INIT;
	Cudaep__V1__KillSession kill = CUDAEP__V1__KILL_SESSION__INIT;

	q.id = tu_next_id++;
	q.body_case = body;
	info.session_id = unload.session_id = kill.session_id = id;
	if (body == CUDAEP__V1__REQUEST__BODY_SESSION_INFO)
		q.session_info = &info;
	else if (body == CUDAEP__V1__REQUEST__BODY_UNLOAD)
		q.unload = &unload;
	else
		q.kill_session = &kill;
	return tu_call(srv, c, &q, NULL, 0, NULL);
}

static Cudaep__V1__Response *simple(struct client *c,
				    Cudaep__V1__Request__BodyCase body)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	/* The admin request bodies are all empty messages. */
	Cudaep__V1__StatusRequest empty = CUDAEP__V1__STATUS_REQUEST__INIT;

	q.id = tu_next_id++;
	q.body_case = body;
	q.status = &empty;
	return tu_call(srv, c, &q, NULL, 0, NULL);
}

/* A counter's value through a Stats request, as a client reads it. */
static uint64_t counter(struct client *c, const char *name)
{
	Cudaep__V1__Response *r = simple(c, CUDAEP__V1__REQUEST__BODY_STATS);
	uint64_t v = UINT64_MAX;

	tu_expect_ok(r);
	for (size_t i = 0; i < r->stats->n_counters; i++)
		if (strcmp(r->stats->counters[i]->name, name) == 0)
			v = r->stats->counters[i]->value;
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert_neq(v, UINT64_MAX, "no counter %s", name);
	return v;
}

/* msg with every occurrence of the decimal id replaced by '#'. */
static void id_blank(char *dst, size_t size, const char *msg, uint64_t id)
{
	char num[24];
	size_t n, o = 0;

	n = (size_t)snprintf(num, sizeof(num), "%llu", (unsigned long long)id);
	while (*msg != '\0' && o + 1 < size) {
		if (strncmp(msg, num, n) == 0) {
			dst[o++] = '#';
			msg += n;
		} else {
			dst[o++] = *msg++;
		}
	}
	dst[o] = '\0';
}

/*
 * Asserts that two answers, one to a request naming another connection's
 * id and one to the same request naming an id nobody has, cannot be told
 * apart: both errors, the same code, the same message but for the id.
 * Frees both.
 */
static void expect_same(const char *what, Cudaep__V1__Response *theirs,
			uint64_t their_id, Cudaep__V1__Response *unknown,
			uint64_t unknown_id)
{
	char a[CEP_MAX_STATUS_MSG], b[CEP_MAX_STATUS_MSG];

	cr_assert_neq(theirs->status->code, 0, "%s: another's id was served", what);
	cr_assert_eq(theirs->status->code, unknown->status->code,
		     "%s: %s for another's id, %s for an unknown one", what,
		     cep_err_name(theirs->status->code),
		     cep_err_name(unknown->status->code));
	cr_assert_eq(theirs->body_case, CUDAEP__V1__RESPONSE__BODY__NOT_SET);
	id_blank(a, sizeof(a), theirs->status->message, their_id);
	id_blank(b, sizeof(b), unknown->status->message, unknown_id);
	cr_assert_str_eq(a, b, "%s: the messages differ", what);
	cudaep__v1__response__free_unpacked(theirs, NULL);
	cudaep__v1__response__free_unpacked(unknown, NULL);
}

/* Whether a MemoryReply has an entry of owner. */
static bool memory_has(struct client *c, const char *owner)
{
	Cudaep__V1__Response *r = simple(c, CUDAEP__V1__REQUEST__BODY_MEMORY);
	bool seen = false;

	tu_expect_ok(r);
	for (size_t i = 0; i < r->memory->n_entries; i++)
		seen |= strcmp(r->memory->entries[i]->owner, owner) == 0;
	cudaep__v1__response__free_unpacked(r, NULL);
	return seen;
}

/* ------------------------------------------------------------ ownership */

Test(access, another_connections_ids_answer_as_unknown_ones)
{
	struct client *a, *askers[2];
	uint64_t sa, ra, ghost_s, ghost_r;
	char owner[32];
	int k;

	weights_fresh();
	srv = tu_server(NULL);
	a = tu_conn(srv, 40001);
	askers[0] = tu_conn(srv, 40001); /* the same user, another connection */
	askers[1] = tu_conn(srv, 40002);
	tu_hello(srv, a);
	ra = tu_region(srv, a, 4096);
	sa = load(a);
	run_checked(a, sa, ra, 3);
	for (k = 0; k < 2; k++) {
		struct client *b = askers[k];
		uint64_t sb, rb;
		Cudaep__V1__Response *r;

		tu_hello(srv, b);
		rb = tu_region(srv, b, 4096);
		sb = load(b);
		/* Ids nobody holds, above every id given so far. */
		ghost_s = sb + 1000;
		ghost_r = rb + 1000;
		expect_same("SessionInfo",
			    by_id(b, CUDAEP__V1__REQUEST__BODY_SESSION_INFO, sa), sa,
			    by_id(b, CUDAEP__V1__REQUEST__BODY_SESSION_INFO, ghost_s),
			    ghost_s);
		expect_same("Run", run(b, sa, rb, rb, 1), sa,
			    run(b, ghost_s, rb, rb, 1), ghost_s);
		expect_same("Unload", by_id(b, CUDAEP__V1__REQUEST__BODY_UNLOAD, sa),
			    sa, by_id(b, CUDAEP__V1__REQUEST__BODY_UNLOAD, ghost_s),
			    ghost_s);
		expect_same("ReleaseRegion", tu_release(srv, b, ra), ra,
			    tu_release(srv, b, ghost_r), ghost_r);
		expect_same("LoadModel from a region", load_from_region(b, ra), ra,
			    load_from_region(b, ghost_r), ghost_r);
		expect_same("Run with an input in the region",
			    run(b, sb, ra, rb, 1), ra, run(b, sb, ghost_r, rb, 1),
			    ghost_r);
		expect_same("Run with an output in the region",
			    run(b, sb, rb, ra, 1), ra, run(b, sb, rb, ghost_r, 1),
			    ghost_r);
		expect_same("KillSession",
			    by_id(b, CUDAEP__V1__REQUEST__BODY_KILL_SESSION, sa), sa,
			    by_id(b, CUDAEP__V1__REQUEST__BODY_KILL_SESSION, ghost_s),
			    ghost_s);
		tu_expect_error(simple(b, CUDAEP__V1__REQUEST__BODY_TRIM), CEP_EPERM,
				"admins");
		/* The lists show b its own only. */
		r = simple(b, CUDAEP__V1__REQUEST__BODY_SESSIONS);
		tu_expect_ok(r);
		cr_assert_eq(r->sessions->total, 1);
		cr_assert_eq(r->sessions->sessions[0]->session_id, sb);
		cudaep__v1__response__free_unpacked(r, NULL);
		r = simple(b, CUDAEP__V1__REQUEST__BODY_CLIENTS);
		tu_expect_ok(r);
		cr_assert_eq(r->clients->total, 1);
		cr_assert_eq(r->clients->clients[0]->client_id, b->id);
		cudaep__v1__response__free_unpacked(r, NULL);
		snprintf(owner, sizeof(owner), "client:%llu", (unsigned long long)a->id);
		cr_assert(!memory_has(b, owner));
		snprintf(owner, sizeof(owner), "session:%llu", (unsigned long long)sa);
		cr_assert(!memory_has(b, owner));
		/* Its own work goes on. */
		run_checked(b, sb, rb, 2);
	}
	/* None of it touched a's session or region. */
	cr_assert(memory_has(a, "uid:40001"));
	cr_assert(!memory_has(a, "uid:40002"), "another uid's memory is shown");
	cr_assert(memory_has(askers[1], "uid:40002"));
	run_checked(a, sa, ra, 4);
	server_free(srv);
}

/* ----------------------------------------------------------- KillSession */

Test(access, kill_session_is_for_admins_and_tells_the_owner)
{
	struct client *a, *b, *root, *grp;
	Cudaep__V1__Response *r;
	struct account_usage u;
	struct config cfg;
	uint64_t sa, sa2, ra;
	char want[80];

	weights_fresh();
	config_init(&cfg);
	cr_assert_eq(config_set(&cfg, "admin_group", "40500", NULL, 0), 0);
	srv = tu_server(&cfg);
	a = tu_conn(srv, 40001);
	b = tu_conn(srv, 40002);
	root = tu_conn(srv, 0);
	cr_assert_eq(server_client_detached(srv, 40003, 40500, 1, &grp), 0);
	tu_hello(srv, a);
	tu_hello(srv, b);
	tu_hello(srv, root);
	tu_hello(srv, grp);
	ra = tu_region(srv, a, 4096);
	sa = load(a);
	sa2 = load(a);
	run_checked(a, sa, ra, 2);

	tu_expect_error(by_id(b, CUDAEP__V1__REQUEST__BODY_KILL_SESSION, sa),
			CEP_EPERM, "kill-session is for admins");
	tu_expect_error(by_id(a, CUDAEP__V1__REQUEST__BODY_KILL_SESSION, sa),
			CEP_EPERM, "kill-session is for admins");
	cr_assert_eq(srv->sessions.count, 2, "a refused kill unloaded something");

	r = by_id(root, CUDAEP__V1__REQUEST__BODY_KILL_SESSION, sa);
	tu_expect_ok(r);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_KILL_SESSION);
	cr_assert_eq(r->kill_session->client_id, a->id);
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert_eq(srv->sessions.count, 1);
	cr_assert_null(session_table_find(&a->sessions, sa));
	cr_assert_eq(account_usage_get(srv->account, (struct alloc_owner){ a->id, sa }, &u),
		     CEP_ENOENT, "the killed session's memory entry stayed");
	cr_assert_eq(counter(b, "sessions_killed"), 1);

	/* The owner is told; everyone else hears "no such session". */
	snprintf(want, sizeof(want), "session %llu was killed by an administrator",
		 (unsigned long long)sa);
	tu_expect_error(by_id(a, CUDAEP__V1__REQUEST__BODY_SESSION_INFO, sa),
			CEP_ECANCELED, want);
	tu_expect_error(run(a, sa, ra, ra, 1), CEP_ECANCELED, want);
	tu_expect_error(by_id(a, CUDAEP__V1__REQUEST__BODY_UNLOAD, sa),
			CEP_ECANCELED, want);
	expect_same("SessionInfo of a killed session",
		    by_id(b, CUDAEP__V1__REQUEST__BODY_SESSION_INFO, sa), sa,
		    by_id(b, CUDAEP__V1__REQUEST__BODY_SESSION_INFO, sa2 + 1000),
		    sa2 + 1000);
	snprintf(want, sizeof(want), "no session %llu", (unsigned long long)sa);
	tu_expect_error(by_id(root, CUDAEP__V1__REQUEST__BODY_KILL_SESSION, sa),
			CEP_ENOENT, want);

	/* The owner's other session and its connection go on. */
	run_checked(a, sa2, ra, 3);
	sa = load(a);
	run_checked(a, sa, ra, 1);

	/* admin_group members are admins too. */
	r = by_id(grp, CUDAEP__V1__REQUEST__BODY_KILL_SESSION, sa2);
	tu_expect_ok(r);
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert_eq(counter(root, "sessions_killed"), 2);
	cr_assert_eq(srv->sessions.count, 1);
	server_free(srv);
}

Test(access, a_connection_remembers_its_last_killed_sessions)
{
	uint64_t ids[ACCESS_KILLED_MAX + 1];
	struct client *a, *root;
	Cudaep__V1__Response *r;
	char want[64];
	int i;

	weights_fresh();
	srv = tu_server(NULL);
	a = tu_conn(srv, 40001);
	root = tu_conn(srv, 0);
	tu_hello(srv, a);
	tu_hello(srv, root);
	for (i = 0; i <= ACCESS_KILLED_MAX; i++) {
		ids[i] = load(a);
		r = by_id(root, CUDAEP__V1__REQUEST__BODY_KILL_SESSION, ids[i]);
		tu_expect_ok(r);
		cudaep__v1__response__free_unpacked(r, NULL);
	}
	/* The oldest fell out and reads as unknown; the others are told. */
	snprintf(want, sizeof(want), "no session %llu on this connection",
		 (unsigned long long)ids[0]);
	tu_expect_error(by_id(a, CUDAEP__V1__REQUEST__BODY_SESSION_INFO, ids[0]),
			CEP_ENOENT, want);
	for (i = 1; i <= ACCESS_KILLED_MAX; i++)
		tu_expect_error(by_id(a, CUDAEP__V1__REQUEST__BODY_SESSION_INFO, ids[i]),
				CEP_ECANCELED, "killed by an administrator");
	server_free(srv);
}

/* -------------------------------------------------------- per-uid limits */

Test(access, config_keys)
{
	struct config cfg;
	char err[128];

	config_init(&cfg);
	cr_assert_eq(cfg.uid_max_connections, 0);
	cr_assert_eq(cfg.uid_max_sessions, 0);
	cr_assert_eq(cfg.uid_max_regions, 0);
	cr_assert_eq(cfg.uid_max_bytes, 0);
	cr_assert_eq(config_set(&cfg, "uid_max_connections", "12", err, sizeof(err)), 0);
	cr_assert_eq(config_set(&cfg, "uid_max_sessions", "3", err, sizeof(err)), 0);
	cr_assert_eq(config_set(&cfg, "uid_max_regions", "0", err, sizeof(err)), 0);
	cr_assert_eq(config_set(&cfg, "uid_max_bytes", "2G", err, sizeof(err)), 0);
	cr_assert_eq(cfg.uid_max_connections, 12);
	cr_assert_eq(cfg.uid_max_sessions, 3);
	cr_assert_eq(cfg.uid_max_regions, 0);
	cr_assert_eq(cfg.uid_max_bytes, 2ull << 30);
	cr_assert_eq(config_set(&cfg, "uid_max_sessions", "-1", err, sizeof(err)), CEP_EINVAL);
	cr_assert_str_eq(err, "'-1' is not a number (0 for no limit)");
	cr_assert_eq(config_set(&cfg, "uid_max_regions", "4x", err, sizeof(err)), CEP_EINVAL);
	cr_assert_eq(config_set(&cfg, "uid_max_bytes", "lots", err, sizeof(err)), CEP_EINVAL);
	cr_assert_eq(cfg.uid_max_sessions, 3, "a bad value changed the key");
}

Test(access, uid_limits_count_every_connection_of_the_uid)
{
	struct client *a1, *a2, *b;
	struct config cfg;
	uint64_t s1, s2, r1, r2;
	int fd, fds;

	weights_fresh();
	config_init(&cfg);
	cfg.uid_max_connections = 2;
	cfg.uid_max_sessions = 2;
	cfg.uid_max_regions = 3;
	srv = tu_server(&cfg);
	a1 = tu_conn(srv, 40001);
	a2 = tu_conn(srv, 40001);
	b = tu_conn(srv, 40002);
	tu_hello(srv, a1);
	tu_hello(srv, a2);
	tu_hello(srv, b);

	/* Connections: the accept path asks this before serving one. */
	cr_assert_eq(access_connection_check(&srv->access, 40001, 77), CEP_ELIMIT);
	cr_assert_str_eq(cep_last_error(), "too many connections for uid 40001: its "
			 "processes hold 2, the limit (uid_max_connections) is 2; "
			 "close one and try again");
	cr_assert_eq(access_connection_check(&srv->access, 40002, 78), 0);
	cr_assert_eq(counter(b, "uid_connections_refused"), 1);

	/* Regions: 2 + 1 over two connections, then one more is refused and
	 * its fd closed. */
	r1 = tu_region(srv, a1, 4096);
	(void)tu_region(srv, a1, 4096);
	r2 = tu_region(srv, a2, 4096);
	fds = tu_fd_count();
	fd = tu_memfd(4096, true);
	tu_expect_error(tu_register(srv, a2, 4096, &fd, 1), CEP_ELIMIT,
			"uid 40001 holds 3 regions on its 2 connections, the limit "
			"(uid_max_regions) is 3");
	cr_assert_eq(tu_fd_count(), fds, "the refused region's fd stayed open");
	(void)tu_region(srv, b, 4096);
	expect_ok(tu_release(srv, a1, r1));
	(void)tu_region(srv, a2, 4096);
	cr_assert_eq(counter(b, "uid_regions_refused"), 1);

	/* Sessions likewise. */
	s1 = load(a1);
	s2 = load(a2);
	fds = tu_fd_count();
	tu_expect_error(load_resp(a2), CEP_ELIMIT, "uid 40001 holds 2 sessions on "
			"its 2 connections, the limit (uid_max_sessions) is 2");
	cr_assert_eq(tu_fd_count(), fds, "the refused model's fd stayed open");
	cr_assert_eq(srv->sessions.count, 2);
	(void)load(b);
	expect_ok(by_id(a1, CUDAEP__V1__REQUEST__BODY_UNLOAD, s1));
	(void)load(a2);
	cr_assert_eq(counter(b, "uid_sessions_refused"), 1);
	run_checked(a2, s2, r2, 2);

	/* A reload lifts the session limit at once; what is held stays. */
	cfg.uid_max_sessions = 0;
	access_limits_set(&srv->access, &cfg);
	(void)load(a1);
	(void)load(a1);
	cfg.uid_max_sessions = 1;
	access_limits_set(&srv->access, &cfg);
	cr_assert_eq(srv->sessions.count, 5);
	tu_expect_error(load_resp(a1), CEP_ELIMIT, "(uid_max_sessions) is 1");
	server_free(srv);
}

Test(access, uid_max_bytes_counts_regions_registered_before_any_session)
{
	struct client *a1, *a2;
	struct config cfg;
	int fd;

	config_init(&cfg);
	cfg.uid_max_bytes = 6000;
	srv = tu_server(&cfg);
	access_limits_set(&srv->access, &cfg);
	a1 = tu_conn(srv, 40005);
	a2 = tu_conn(srv, 40005);
	tu_hello(srv, a1);
	tu_hello(srv, a2);
	(void)tu_region(srv, a1, 4096);
	/* The uid's pinned bytes: 4096 held, 4096 more asked, past 6000. */
	fd = tu_memfd(4096, true);
	tu_expect_error(tu_register(srv, a2, 4096, &fd, 1), CEP_ELIMIT,
			"uid 40005 memory limit 6000 bytes");
	server_free(srv);
}

Test(access, uid_max_bytes_counts_the_sessions_of_all_its_connections)
{
	struct client *a1, *a2, *b, *root;
	struct account_usage u;
	struct config cfg;
	uint64_t s1, s2, sb, r1, r2, rb, used;

	weights_fresh();
	config_init(&cfg);
	srv = tu_server(&cfg);
	a1 = tu_conn(srv, 40001);
	a2 = tu_conn(srv, 40001);
	b = tu_conn(srv, 40002);
	root = tu_conn(srv, 0);
	tu_hello(srv, a1);
	tu_hello(srv, a2);
	tu_hello(srv, b);
	tu_hello(srv, root);
	r1 = tu_region(srv, a1, 4096);
	r2 = tu_region(srv, a2, 4096);
	rb = tu_region(srv, b, 4096);
	s1 = load(a1);
	run_checked(a1, s1, r1, 16);
	cr_assert_eq(account_uid_usage_get(srv->account, 40001, &u), 0);
	used = u.device;
	cr_assert_gt(used, 0, "a run of the model charged nothing");

	/* Room for half of that again, beside the uid's pinned regions
	 * (which the uid limit counts too): a second session of the same
	 * uid, on another connection, cannot plan the same batch. */
	cr_assert_eq(u.current[ALLOC_ROLE_PINNED], 2 * 4096, "both regions of the uid count");
	cfg.uid_max_bytes = used + used / 2 + u.current[ALLOC_ROLE_PINNED];
	access_limits_set(&srv->access, &cfg);
	s2 = load(a2);
	{
		char want[96];

		snprintf(want, sizeof(want), "uid 40001 memory limit %llu bytes",
			 (unsigned long long)cfg.uid_max_bytes);
		tu_expect_error(run(a2, s2, r2, r2, 16), CEP_ELIMIT, want);
	}
	cr_assert_eq(counter(root, "uid_bytes_refused"), 1);
	cr_assert_eq(account_uid_usage_get(srv->account, 40001, &u), 0);
	cr_assert_eq(u.device, used, "the refused run left a charge behind");
	cr_assert_eq(u.limit, cfg.uid_max_bytes);
	/* Another uid has its own room. */
	sb = load(b);
	run_checked(b, sb, rb, 16);
	/* The first connection's session still runs; once it goes, the
	 * second has the room. */
	run_checked(a1, s1, r1, 16);
	expect_ok(by_id(a1, CUDAEP__V1__REQUEST__BODY_UNLOAD, s1));
	run_checked(a2, s2, r2, 16);

	/* Each sees its own uid's memory; an admin sees every uid. */
	cr_assert(memory_has(a1, "uid:40001"));
	cr_assert(!memory_has(b, "uid:40001"));
	cr_assert(memory_has(root, "uid:40001") && memory_has(root, "uid:40002"));
	client_close(a1);
	client_close(a2);
	cr_assert_eq(account_uid_usage_get(srv->account, 40001, &u), CEP_ENOENT,
		     "the uid outlived its connections");
	cr_assert(!memory_has(root, "uid:40001"));
	server_free(srv);
}
