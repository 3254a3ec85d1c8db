/*
 * test_memory_dispatch.c — memory through the daemon's requests on
 * detached connections: two clients loading one model file share its
 * weights (one "shared" charge, the arena's used bytes unchanged by the
 * second load), the MemoryReply's sections, the global and per-client
 * limits as LoadModel errors, entries and charges gone with the sessions
 * and the clients, Trim (admins only) unmapping what is idle, the idle
 * trim timer of a listening server, and the new configuration keys.
 *
 * The server's host backend is swapped for one that uploads weights as a
 * GPU backend does, so that weights take arena memory here.
 */
#include "tests/unit/daemon_util.h"
#include "tests/unit/onnxb.h"

#include "alloc/account.h"
#include "alloc/arena.h"

static struct server *srv;

#define ROWS 64
#define COLS 1024
static float table[ROWS * COLS];

static uint8_t *model_bytes(size_t *len)
{
	struct onnxb *b = onnxb_new(13);
	size_t i;

	for (i = 0; i < ROWS * COLS; i++)
		table[i] = (float)(i % 11) * 0.01f;
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,64");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,1024");
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "64,1024", table);
	onnxb_node(b, "MatMul", "x,w", "h");
	onnxb_node(b, "Relu", "h", "y");
	return onnxb_finish(b, len);
}

/* A server whose backend uploads weights into its arena. */
static struct server *server_uploading(const struct config *cfg)
{
	struct server *s = tu_server(cfg);

	struct backend *be;

	cr_assert_eq(backend_host_new(BACKEND_HOST_UPLOAD_WEIGHTS, &be), 0);
	server_backend_replace(s, be);
	return s;
}

static Cudaep__V1__Response *load(struct client *c)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__LoadModel m = CUDAEP__V1__LOAD_MODEL__INIT;
	size_t len;
	uint8_t *bytes = model_bytes(&len);
	/* With the model's directory too, as cep_session_load() sends it:
	 * a model without external data is shared all the same. */
	int fds[2] = {memfd_create("model", MFD_CLOEXEC),
		      open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC)};

	cr_assert_eq(write(fds[0], bytes, len), (ssize_t)len);
	cr_assert_geq(fds[1], 0);
	free(bytes);
	m.source = CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_FD;
	m.has_dir_fd = 1;
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_LOAD_MODEL;
	q.load_model = &m;
	return tu_call(srv, c, &q, fds, 2, NULL);
}

static uint64_t load_ok(struct client *c)
{
	Cudaep__V1__Response *r = load(c);
	uint64_t id;

	tu_expect_ok(r);
	id = r->load_model->info->session_id;
	cudaep__v1__response__free_unpacked(r, NULL);
	return id;
}

static void unload(struct client *c, uint64_t id)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__Unload u = CUDAEP__V1__UNLOAD__INIT;
	Cudaep__V1__Response *r;

	u.session_id = id;
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_UNLOAD;
	q.unload = &u;
	r = tu_call(srv, c, &q, NULL, 0, NULL);
	tu_expect_ok(r);
	cudaep__v1__response__free_unpacked(r, NULL);
}

static Cudaep__V1__Response *simple(struct client *c, Cudaep__V1__Request__BodyCase body)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__MemoryRequest mem = CUDAEP__V1__MEMORY_REQUEST__INIT;
	Cudaep__V1__TrimRequest trim = CUDAEP__V1__TRIM_REQUEST__INIT;

	q.id = tu_next_id++;
	q.body_case = body;
	if (body == CUDAEP__V1__REQUEST__BODY_MEMORY)
		q.memory = &mem;
	else
		q.trim = &trim;
	return tu_call(srv, c, &q, NULL, 0, NULL);
}

/* The entry (owner, role) of a MemoryReply, or NULL. */
static const Cudaep__V1__MemoryEntry *entry(const Cudaep__V1__Response *r,
					    const char *owner, const char *role)
{
	size_t i;

	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_MEMORY);
	for (i = 0; i < r->memory->n_entries; i++) {
		const Cudaep__V1__MemoryEntry *e = r->memory->entries[i];

		if (strcmp(e->owner, owner) == 0 && strcmp(e->role, role) == 0)
			return e;
	}
	return NULL;
}

/* current of (owner, role), 0 when absent. */
static uint64_t current(struct client *asker, const char *owner, const char *role)
{
	Cudaep__V1__Response *r = simple(asker, CUDAEP__V1__REQUEST__BODY_MEMORY);
	const Cudaep__V1__MemoryEntry *e;
	uint64_t v;

	tu_expect_ok(r);
	e = entry(r, owner, role);
	v = e != NULL ? e->current : 0;
	cudaep__v1__response__free_unpacked(r, NULL);
	return v;
}

Test(memory_dispatch, two_clients_share_one_copy)
{
	struct client *a, *b, *root;
	uint64_t sa, sb, weights, used;
	Cudaep__V1__Response *r;
	char owner[32];

	srv = server_uploading(NULL);
	a = tu_conn(srv, 41001);
	b = tu_conn(srv, 41002);
	root = tu_conn(srv, 0);
	tu_hello(srv, a);
	tu_hello(srv, b);
	tu_hello(srv, root);
	sa = load_ok(a);
	weights = current(a, "shared", "weights");
	cr_assert_geq(weights, sizeof(table));
	used = current(a, "arena", "used");
	cr_assert_geq(used, weights);
	sb = load_ok(b);
	cr_assert_eq(current(b, "shared", "weights"), weights, "the second load adds no weights");
	cr_assert_eq(current(b, "arena", "used"), used, "nor arena memory");
	cr_assert_eq(current(b, "total", "weights"), weights);

	/* Sections: what a client sees of itself, what an admin sees. */
	r = simple(a, CUDAEP__V1__REQUEST__BODY_MEMORY);
	tu_expect_ok(r);
	snprintf(owner, sizeof(owner), "session:%llu", (unsigned long long)sa);
	cr_assert_not_null(entry(r, owner, "device"));
	snprintf(owner, sizeof(owner), "session:%llu", (unsigned long long)sb);
	cr_assert_null(entry(r, owner, "device"), "another client's session is hidden");
	cr_assert_not_null(entry(r, "arena", "reserved"));
	cr_assert_not_null(entry(r, "arena", "mapped"));
	cr_assert_not_null(entry(r, "arena", "pool"));
	cr_assert_not_null(entry(r, "arena", "deferred"));
	cr_assert_not_null(entry(r, "total", "device"));
	cr_assert_eq(r->memory->total, r->memory->n_entries);
	cudaep__v1__response__free_unpacked(r, NULL);
	r = simple(root, CUDAEP__V1__REQUEST__BODY_MEMORY);
	tu_expect_ok(r);
	cr_assert_not_null(entry(r, owner, "device"), "an admin sees every session");
	cudaep__v1__response__free_unpacked(r, NULL);

	unload(a, sa);
	cr_assert_eq(current(b, "shared", "weights"), weights, "b still uses them");
	unload(b, sb);
	cr_assert_eq(current(b, "shared", "weights"), 0, "the last unload frees them");
	cr_assert_eq(current(b, "total", "device"), 0);
	cr_assert_eq(current(b, "arena", "used"), 0);
	server_free(srv);
}

Test(memory_dispatch, limits_fail_the_load)
{
	struct config cfg;
	struct client *a;

	config_init(&cfg);
	cfg.memory_limit = 64 * 1024; /* the table alone is 256 KiB */
	srv = server_uploading(&cfg);
	a = tu_conn(srv, 41001);
	tu_hello(srv, a);
	tu_expect_error(load(a), CEP_ELIMIT, "global memory limit 65536 bytes: asked");
	cr_assert_eq(srv->sessions.count, 0, "the failed load leaves no session");
	cr_assert_eq(current(a, "total", "device"), 0);
	/* The connection goes on. */
	account_limit_set_global(srv->account, 0);
	(void)load_ok(a);
	server_free(srv);
}

Test(memory_dispatch, client_limit_counts_its_sessions)
{
	struct config cfg;
	struct client *a;
	struct account_usage u;
	uint64_t id;

	config_init(&cfg);
	cfg.client_memory_limit = 1 << 20;
	srv = server_uploading(&cfg);
	a = tu_conn(srv, 41001);
	tu_hello(srv, a);
	(void)load_ok(a);
	cr_assert_eq(account_usage_get(srv->account, (struct alloc_owner){ a->id, 0 }, &u), 0);
	cr_assert_eq(u.limit, 1 << 20, "the client's limit is in place");
	id = a->id;
	client_close(a);
	cr_assert_eq(account_usage_get(srv->account, (struct alloc_owner){ id, 0 }, &u),
		     CEP_ENOENT, "a client that went is forgotten");
	account_totals(srv->account, &u);
	cr_assert_eq(u.device, 0);
	server_free(srv);
}

Test(memory_dispatch, trim_is_for_admins_and_unmaps_idle)
{
	struct client *a, *root;
	Cudaep__V1__Response *r;
	uint64_t sa;

	srv = server_uploading(NULL);
	a = tu_conn(srv, 41001);
	root = tu_conn(srv, 0);
	tu_hello(srv, a);
	tu_hello(srv, root);
	sa = load_ok(a);
	unload(a, sa);
	cr_assert_gt(current(a, "arena", "mapped"), 0, "freed granules stay mapped");
	tu_expect_error(simple(a, CUDAEP__V1__REQUEST__BODY_TRIM), CEP_EPERM, "admins");
	r = simple(root, CUDAEP__V1__REQUEST__BODY_TRIM);
	tu_expect_ok(r);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_TRIM);
	cr_assert_gt(r->trim->unmapped, 0);
	cr_assert_eq(r->trim->mapped, 0, "nothing is live");
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert_eq(current(a, "arena", "mapped"), 0);
	server_free(srv);
}

Test(memory_dispatch, config_keys_take_zero)
{
	struct config cfg;
	char err[256];

	config_init(&cfg);
	cr_assert_eq(cfg.memory_limit, 0);
	cr_assert_eq(cfg.client_memory_limit, 0);
	cr_assert_eq(cfg.trim_idle_ms, 10000);
	cr_assert_eq(config_set(&cfg, "memory_limit", "40G", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(cfg.memory_limit, UINT64_C(40) << 30);
	cr_assert_eq(config_set(&cfg, "memory_limit", "0", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(cfg.memory_limit, 0);
	cr_assert_eq(config_set(&cfg, "client_memory_limit", "1M", err, sizeof(err)), 0);
	cr_assert_eq(cfg.client_memory_limit, 1 << 20);
	cr_assert_eq(config_set(&cfg, "trim_idle_ms", "0", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(cfg.trim_idle_ms, 0);
	cr_assert_eq(config_set(&cfg, "trim_idle_ms", "-5", err, sizeof(err)), CEP_EINVAL);
	cr_assert(strstr(err, "milliseconds"), "%s", err);
}

/* ------------------------------------------------------------ idle trim */

static uv_timer_t watch;

/* Stops the server once the idle trim has unmapped everything. */
static void watch_cb(uv_timer_t *t)
{
	struct arena_stats st;

	arena_stats_get(srv->backend->arena, &st);
	if (st.mapped != 0)
		return;
	uv_close((uv_handle_t *)t, NULL);
	server_stop(srv);
}

Test(memory_dispatch, idle_trim_unmaps_freed_granules, .timeout = 30)
{
	char dir[] = "/tmp/cep-memtrim-XXXXXX", cmd[64];
	struct config cfg;
	struct arena_stats st;
	struct client *a;
	uv_loop_t loop;

	cr_assert_not_null(mkdtemp(dir));
	config_init(&cfg);
	snprintf(cfg.socket, sizeof(cfg.socket), "%s/s", dir);
	cfg.trim_idle_ms = 5;
	srv = server_uploading(&cfg);
	a = tu_conn(srv, 41001);
	tu_hello(srv, a);
	unload(a, load_ok(a));
	arena_stats_get(srv->backend->arena, &st);
	cr_assert_gt(st.mapped, 0);
	cr_assert_eq(uv_loop_init(&loop), 0);
	cr_assert_eq(server_listen(srv, &loop), 0);
	uv_timer_init(&loop, &watch);
	uv_timer_start(&watch, watch_cb, 1, 1);
	uv_run(&loop, UV_RUN_DEFAULT);
	arena_stats_get(srv->backend->arena, &st);
	cr_assert_eq(st.mapped, 0, "the timer unmapped the idle granules");
	cr_assert_eq(st.pool_bytes, st.unmaps * arena_granule(srv->backend->arena),
		     "their handles wait in the pool");
	cr_assert_eq(uv_loop_close(&loop), 0);
	server_free(srv);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}
