/*
 * test_dispatch_inspect.c — Graphs and Kernels through dispatch_packet()
 * on detached connections of a host-backend server
 * (daemon/dispatch_inspect.c): a session's plans with the runs made on
 * them, each client seeing its own sessions only and an admin everyone's,
 * a busy connection's sessions answered as busy without their plans, and
 * the host backend's Kernels reply saying it has no device kernels.
 */
#include "tests/unit/daemon_util.h"
#include "tests/unit/onnxb.h"

#include "daemon/session.h"

static struct server *srv;

/* y = Relu(x), x float32 [batch, 3]. */
static uint64_t load(struct client *c, const char *name)
{
	struct onnxb *b = onnxb_new(13);
	uint8_t *bytes;
	size_t len;
	uint64_t id;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,3");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,3");
	onnxb_node(b, "Relu", "x", "y");
	bytes = onnxb_finish(b, &len);
	id = tu_load_bytes(srv, c, bytes, len, name);
	free(bytes);
	return id;
}

/* One run of session sess of c with batch rows, through region reg. */
static void run(struct client *c, uint64_t sess, uint64_t reg, int64_t batch)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__Run m = CUDAEP__V1__RUN__INIT;
	Cudaep__V1__TensorRef in = CUDAEP__V1__TENSOR_REF__INIT;
	Cudaep__V1__TensorRef out = CUDAEP__V1__TENSOR_REF__INIT;
	Cudaep__V1__TensorRef *pi = &in, *po = &out;
	int64_t shape[2] = { batch, 3 };

	in.name = (char *)"x";
	in.region_id = reg;
	in.bytes = (uint64_t)batch * 3 * sizeof(float);
	in.dtype = CUDAEP__V1__DATA_TYPE__DT_FLOAT;
	in.n_shape = 2;
	in.shape = shape;
	out.name = (char *)"y";
	out.region_id = reg;
	out.offset = 2048;
	out.bytes = 2048;
	m.session_id = sess;
	m.n_inputs = 1;
	m.inputs = &pi;
	m.n_outputs = 1;
	m.outputs = &po;
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_RUN;
	q.run = &m;
	tu_expect_ok(tu_call(srv, c, &q, NULL, 0, NULL));
}

static Cudaep__V1__Response *ask(struct client *c, Cudaep__V1__Request__BodyCase body)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__GraphsRequest g = CUDAEP__V1__GRAPHS_REQUEST__INIT;
	Cudaep__V1__KernelsRequest k = CUDAEP__V1__KERNELS_REQUEST__INIT;
	Cudaep__V1__Response *r;

	q.id = tu_next_id++;
	q.body_case = body;
	if (body == CUDAEP__V1__REQUEST__BODY_GRAPHS)
		q.graphs = &g;
	else
		q.kernels = &k;
	r = tu_call(srv, c, &q, NULL, 0, NULL);
	tu_expect_ok(r);
	return r;
}

/* The entry of r for session sess with signature sig, or NULL. */
static const Cudaep__V1__GraphEntry *find(const Cudaep__V1__GraphsReply *r, uint64_t sess,
					  const char *sig)
{
	for (size_t i = 0; i < r->n_graphs; i++) {
		if (r->graphs[i]->session_id == sess && strcmp(r->graphs[i]->signature, sig) == 0)
			return r->graphs[i];
	}
	return NULL;
}

/* Two clients (uids 40001 and 40002) with a session each; a's run 3 times
 * with 2 rows and twice with 5, b's once with 1. */
struct world {
	struct client *a, *b, *root;
	uint64_t sa, sb;
};

static void world_open(struct world *w)
{
	uint64_t ra, rb;
	int i;

	srv = tu_server(NULL);
	w->a = tu_conn(srv, 40001);
	w->b = tu_conn(srv, 40002);
	w->root = tu_conn(srv, 0);
	tu_hello(srv, w->a);
	tu_hello(srv, w->b);
	tu_hello(srv, w->root);
	cr_assert_not(w->a->admin);
	cr_assert(w->root->admin);
	w->sa = load(w->a, "relu-a");
	w->sb = load(w->b, "relu-b");
	ra = tu_region(srv, w->a, 4096);
	rb = tu_region(srv, w->b, 4096);
	for (i = 0; i < 3; i++)
		run(w->a, w->sa, ra, 2);
	for (i = 0; i < 2; i++)
		run(w->a, w->sa, ra, 5);
	run(w->b, w->sb, rb, 1);
}

Test(dispatch_inspect, graphs_list_the_plans_with_the_runs_made)
{
	const Cudaep__V1__GraphEntry *e;
	Cudaep__V1__Response *r;
	struct world w;

	world_open(&w);
	r = ask(w.a, CUDAEP__V1__REQUEST__BODY_GRAPHS);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_GRAPHS);
	cr_assert_eq(r->graphs->n_graphs, 2);
	cr_assert_eq(r->graphs->total, 2);
	/* Most recently used first. */
	cr_assert_str_eq(r->graphs->graphs[0]->signature, "x[5,3]");
	cr_assert_str_eq(r->graphs->graphs[1]->signature, "x[2,3]");
	e = find(r->graphs, w.sa, "x[2,3]");
	cr_assert_not_null(e);
	cr_assert_eq(e->client_id, w.a->id);
	cr_assert_str_eq(e->session_name, "relu-a");
	cr_assert_eq(e->runs, 3);
	cr_assert_eq(e->eager_runs, 3);
	cr_assert_eq(e->replays, 0);
	cr_assert_eq(e->captures, 0);
	cr_assert_not(e->captured, "the host backend has no graphs");
	cr_assert_eq(e->steps, 1);
	cr_assert_gt(e->device_bytes, 0);
	cr_assert_not(e->busy);
	cr_assert_str_eq(e->capture_error, "");
	e = find(r->graphs, w.sa, "x[5,3]");
	cr_assert_not_null(e);
	cr_assert_eq(e->runs, 2);
	cr_assert_eq(e->eager_runs, 2);
	cudaep__v1__response__free_unpacked(r, NULL);
	server_free(srv);
}

Test(dispatch_inspect, a_client_sees_its_own_sessions_and_an_admin_everyones)
{
	Cudaep__V1__Response *r;
	struct world w;
	struct client *c;

	world_open(&w);
	r = ask(w.b, CUDAEP__V1__REQUEST__BODY_GRAPHS);
	cr_assert_eq(r->graphs->n_graphs, 1);
	cr_assert_eq(r->graphs->total, 1, "a's plans are not even counted for b");
	cr_assert_eq(r->graphs->graphs[0]->session_id, w.sb);
	cr_assert_str_eq(r->graphs->graphs[0]->signature, "x[1,3]");
	cr_assert_eq(r->graphs->graphs[0]->runs, 1);
	cudaep__v1__response__free_unpacked(r, NULL);

	r = ask(w.root, CUDAEP__V1__REQUEST__BODY_GRAPHS);
	cr_assert_eq(r->graphs->n_graphs, 3);
	cr_assert_eq(r->graphs->total, 3);
	cr_assert_not_null(find(r->graphs, w.sa, "x[2,3]"));
	cr_assert_not_null(find(r->graphs, w.sa, "x[5,3]"));
	cr_assert_not_null(find(r->graphs, w.sb, "x[1,3]"));
	cudaep__v1__response__free_unpacked(r, NULL);

	/* Another connection of a's uid is another client: it has no
	 * sessions, so it sees none. */
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	r = ask(c, CUDAEP__V1__REQUEST__BODY_GRAPHS);
	cr_assert_eq(r->graphs->n_graphs, 0);
	cr_assert_eq(r->graphs->total, 0);
	cudaep__v1__response__free_unpacked(r, NULL);
	server_free(srv);
}

Test(dispatch_inspect, a_busy_connections_sessions_are_answered_busy)
{
	const Cudaep__V1__GraphEntry *e = NULL;
	Cudaep__V1__Response *r;
	struct world w;

	world_open(&w);
	/* As while a job of a's runs on the thread pool (dispatch_job.c):
	 * its plan cache may be changing, so it is not read. */
	w.a->work = CLIENT_JOB;
	r = ask(w.root, CUDAEP__V1__REQUEST__BODY_GRAPHS);
	w.a->work = CLIENT_IDLE;
	cr_assert_eq(r->graphs->n_graphs, 2, "one busy entry for a, b's plan");
	for (size_t i = 0; i < r->graphs->n_graphs; i++)
		if (r->graphs->graphs[i]->session_id == w.sa)
			e = r->graphs->graphs[i];
	cr_assert_not_null(e);
	cr_assert(e->busy);
	cr_assert_str_eq(e->session_name, "relu-a");
	cr_assert_str_eq(e->signature, "");
	cr_assert_eq(e->runs, 0);
	cr_assert_not_null(find(r->graphs, w.sb, "x[1,3]"));
	cudaep__v1__response__free_unpacked(r, NULL);
	server_free(srv);
}

Test(dispatch_inspect, the_host_backend_has_no_device_kernels)
{
	Cudaep__V1__Response *r;
	struct world w;

	world_open(&w);
	/* Anyone may ask, and runs made no difference. */
	r = ask(w.a, CUDAEP__V1__REQUEST__BODY_KERNELS);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_KERNELS);
	cr_assert_str_eq(r->kernels->backend, "host");
	cr_assert_not(r->kernels->device_kernels);
	cr_assert_eq(r->kernels->n_kernels, 0);
	cr_assert_eq(r->kernels->total, 0);
	cr_assert_eq(r->kernels->compiles, 0);
	cr_assert_str_eq(r->status->message, "");
	cudaep__v1__response__free_unpacked(r, NULL);
	server_free(srv);
}
