/*
 * test_fairq.c — the fair queue of runs with a fence (daemon/fairq.h),
 * in-process, on gated_daemon.h's daemon: the order in which runs complete
 * is the order the daemon submitted them, and the tests assert on that
 * order, never on time.
 *
 * Checked: with max_runs_in_flight 2 a client's 20 runs are all answered
 * at once, 18 of them wait (runs_waiting, runs_queued), and all complete,
 * correct and in order; a client that floods 50 runs does not delay
 * another client's one run behind them; a high-priority session's waiting
 * runs start before a low one's; a waiting run of a shape not planned yet
 * is described, and later submitted, on the thread pool; a client that
 * disconnects, a session
 * unloaded and a session killed with runs waiting leave every gauge at its
 * baseline (the killed one's waiting runs fail with CEP_ECANCELED, the
 * unloaded one's still run); and the configuration key.
 */
#include "tests/unit/gated_daemon.h"

TestSuite(fairq, .init = setup, .fini = teardown, .timeout = 60);

/* A daemon with max_runs_in_flight bound. */
static void start(const char *bound)
{
	const char *kv[] = { "max_runs_in_flight", bound, NULL };

	start_with(kv);
}
/* ------------------------------------------------------------------- tests */

Test(fairq, twenty_runs_over_a_bound_of_two_wait_and_complete_in_order)
{
	struct cl a;
	uint64_t queued;
	size_t mark;

	start("2");
	cl_open(&a, "a", CEP_PRIORITY_NORMAL, false);
	warm(&a);
	queued = counter(a.c, "runs_queued");
	gate_set(false);
	mark = log_mark();
	for (int i = 3; i < 23; i++)
		submit(&a, i);
	/* Every run is answered; two are on the device, the rest wait. */
	cr_assert_eq(gauge(a.c, "runs_waiting"), 18);
	cr_assert_eq(gauge(a.c, "runs_in_flight"), 20);
	cr_assert_eq(counter(a.c, "runs_queued") - queued, 18);
	gate_set(true);
	for (int i = 3; i < 23; i++) {
		wait_ok(&a, i);
		cr_assert_eq(done_at(&a, i, mark), i - 3, "run %d completed out of order", i);
	}
	cr_assert_eq(gauge_settled(a.c, "runs_in_flight", 0), 0);
	cr_assert_eq(gauge(a.c, "runs_waiting"), 0);
	cr_assert_eq(counter(a.c, "runs_fenced"), 23);
	cl_close(&a);
	stop();
}

Test(fairq, a_flooding_client_does_not_delay_another_behind_its_runs)
{
	struct cl a, b;
	size_t mark;
	long at;

	start("2");
	cl_open(&a, "a", CEP_PRIORITY_NORMAL, false);
	cl_open(&b, "b", CEP_PRIORITY_NORMAL, false);
	warm(&a);
	warm(&b);
	gate_set(false);
	mark = log_mark();
	for (int i = 3; i < 53; i++)
		submit(&a, i);
	cr_assert_eq(gauge(b.c, "runs_waiting"), 48);
	submit(&b, 3);
	/* b had nothing on the device: its run went straight there. */
	cr_assert_eq(gauge(b.c, "runs_waiting"), 48);
	cr_assert_eq(gauge(b.c, "runs_in_flight"), 51);
	gate_set(true);
	for (int i = 3; i < 53; i++)
		wait_ok(&a, i);
	wait_ok(&b, 3);
	/* On the device behind a's two, ahead of a's other 48. */
	at = done_at(&b, 3, mark);
	cr_assert_eq(at, 2, "b's run completed as number %ld of 51", at);
	for (int i = 3; i < 53; i++)
		cr_assert_eq(done_at(&a, i, mark), i - 3 + (i >= 5), "a's run %d", i);
	cr_assert_eq(gauge_settled(b.c, "runs_in_flight", 0), 0);
	cl_close(&a);
	cl_close(&b);
	stop();
}

Test(fairq, a_high_priority_sessions_runs_start_before_a_low_ones)
{
	struct cl lo, hi;
	size_t mark;

	start("2");
	/* One connection, two sessions: the bound is the connection's. */
	cl_open(&lo, "l", CEP_PRIORITY_LOW, false);
	hi = lo;
	hi.seed = 17;
	cl_tensors(&hi, load(lo.c, CEP_PRIORITY_HIGH, false));
	warm(&lo);
	warm(&hi);
	gate_set(false);
	mark = log_mark();
	for (int i = 3; i < 8; i++)
		submit(&lo, i);
	for (int i = 8; i < 11; i++)
		submit(&hi, i);
	cr_assert_eq(gauge(lo.c, "runs_waiting"), 6);
	gate_set(true);
	for (int i = 3; i < 8; i++)
		wait_ok(&lo, i);
	for (int i = 8; i < 11; i++)
		wait_ok(&hi, i);
	/* low 3, 4 were on the device; then every high run, then low 5-7. */
	cr_assert_eq(done_at(&lo, 3, mark), 0);
	cr_assert_eq(done_at(&lo, 4, mark), 1);
	for (int i = 8; i < 11; i++)
		cr_assert_eq(done_at(&hi, i, mark), i - 6, "high run %d", i);
	for (int i = 5; i < 8; i++)
		cr_assert_eq(done_at(&lo, i, mark), i, "low run %d", i);
	cr_assert_eq(cep_session_free(hi.s), 0);
	cl_close(&lo);
	stop();
}

struct submitter {
	struct cl *t;
	int i, ret;
};

static void *submit_thread(void *arg)
{
	struct submitter *u = arg;

	u->ret = cep_run_submit(u->t->s, &u->t->in[u->i], 1, &u->t->out[u->i], 1,
				&u->t->fence[u->i]);
	u->t->seq[u->i] = u->t->fence[u->i].seq;
	return NULL;
}

Test(fairq, a_waiting_run_of_a_new_shape_is_planned_and_started_off_the_loop)
{
	struct cl a, w;
	struct submitter u;
	pthread_t th;
	uint64_t queued;
	size_t mark;

	start("2");
	cl_open(&w, "w", CEP_PRIORITY_NORMAL, false);
	cl_open(&a, "a", CEP_PRIORITY_NORMAL, false);
	warm(&a);
	queued = counter(w.c, "runs_queued");
	gate_set(false);
	mark = log_mark();
	submit(&a, 3);
	submit(&a, 4);
	/* Two rows: a shape a has no plan for. Planning it waits for the
	 * session's stream, which the gate holds, so it is submitted from
	 * another thread and the gate opens once the daemon works on it. */
	a.in[5].shape[0] = 2;
	a.in[5].bytes = sizeof(float) * 2 * D;
	for (int k = 0; k < 2 * D; k++)
		xs(&a, 5)[k] = (float)k / 8.0f - 1.0f;
	memset(ys(&a, 5), 0xa5, XB);
	u = (struct submitter){ .t = &a, .i = 5 };
	cr_assert_eq(pthread_create(&th, NULL, submit_thread, &u), 0);
	cr_assert_eq(gauge_settled(w.c, "jobs", 1), 1, "the new shape is planned off the loop");
	cr_assert_eq(gauge(w.c, "runs_waiting"), 0, "not waiting before it is described");
	gate_set(true);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(u.ret, 0, "submit: %s", cep_err_name(u.ret));
	wait_ok(&a, 3);
	wait_ok(&a, 4);
	wait_ok(&a, 5);
	cr_assert_eq(done_at(&a, 5, mark), 2);
	cr_assert_eq(counter(w.c, "runs_queued") - queued, 1, "it waited for its turn");
	cr_assert_eq(gauge_settled(w.c, "runs_in_flight", 0), 0);
	cr_assert_eq(gauge(w.c, "jobs"), 0);
	cl_close(&a);
	cl_close(&w);
	stop();
}

Test(fairq, a_client_gone_with_runs_waiting_leaves_nothing)
{
	struct cl a, w;
	int64_t conns, sessions, regions;

	start("2");
	cl_open(&w, "w", CEP_PRIORITY_NORMAL, false);
	conns = gauge(w.c, "connections");
	sessions = gauge(w.c, "sessions");
	regions = gauge(w.c, "regions");
	cl_open(&a, "a", CEP_PRIORITY_NORMAL, false);
	warm(&a);
	gate_set(false);
	for (int i = 3; i < 23; i++)
		submit(&a, i);
	cr_assert_eq(gauge(w.c, "runs_waiting"), 18);
	/* Gone without a word: its waiting runs never start, its two on the
	 * device hold its regions until they complete. */
	cep_close(a.c);
	cr_assert_eq(gauge_settled(w.c, "runs_waiting", 0), 0);
	cr_assert_eq(gauge(w.c, "runs_in_flight"), 2);
	gate_set(true);
	cr_assert_eq(gauge_settled(w.c, "runs_in_flight", 0), 0);
	cr_assert_eq(gauge_settled(w.c, "connections", conns), conns);
	cr_assert_eq(gauge(w.c, "sessions"), sessions);
	cr_assert_eq(gauge(w.c, "regions"), regions);
	/* The queue serves the clients that are left. */
	submit(&w, 0);
	wait_ok(&w, 0);
	cl_close(&w);
	stop();
}

Test(fairq, runs_waiting_for_an_unloaded_session_still_run)
{
	struct cl a;
	int64_t sessions;

	start("2");
	cl_open(&a, "a", CEP_PRIORITY_NORMAL, false);
	sessions = gauge(a.c, "sessions");
	warm(&a);
	gate_set(false);
	for (int i = 3; i < 13; i++)
		submit(&a, i);
	cr_assert_eq(gauge(a.c, "runs_waiting"), 8);
	cr_assert_eq(cep_session_free(a.s), 0, "%s", cep_last_error());
	gate_set(true);
	for (int i = 3; i < 13; i++)
		wait_ok(&a, i);
	cr_assert_eq(gauge_settled(a.c, "sessions", sessions - 1), sessions - 1);
	cr_assert_eq(gauge(a.c, "runs_waiting"), 0);
	cr_assert_eq(cep_region_free(a.r), 0);
	cep_close(a.c);
	stop();
}

Test(fairq, runs_waiting_for_a_killed_session_fail_and_let_go)
{
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;
	static cudaep_v1_Response resp;
	struct cl a;
	cep_client *admin;
	uint64_t errors;
	int64_t sessions;
	int ret;

	start("2");
	/* This process is the daemon's own user: an admin. */
	admin = dial("admin");
	sessions = gauge(admin, "sessions");
	cl_open(&a, "a", CEP_PRIORITY_NORMAL, false);
	warm(&a);
	errors = counter(admin, "run_errors");
	gate_set(false);
	for (int i = 3; i < 13; i++)
		submit(&a, i);
	cr_assert_eq(gauge(admin, "runs_waiting"), 8);
	req.which_body = cudaep_v1_Request_kill_session_tag;
	req.body.kill_session.session_id = cep_session_id(a.s);
	ret = cep__call(admin, &req, NULL, 0, &resp);
	cr_assert_eq(ret, 0, "KillSession: %s: %s", cep_err_name(ret), cep_last_error());
	cr_assert_eq(gauge(admin, "runs_waiting"), 0);
	gate_set(true);
	/* The two on the device complete; the waiting ones never started. */
	wait_ok(&a, 3);
	wait_ok(&a, 4);
	for (int i = 5; i < 13; i++) {
		ret = cep_fence_wait(&a.fence[i], CEP_WAIT_FOREVER);
		cr_assert_eq(ret, CEP_ECANCELED, "run %d: %s", i, cep_err_name(ret));
		cr_assert_not_null(strstr(cep_last_error(), "killed by an administrator"),
				   "run %d: %s", i, cep_last_error());
	}
	cr_assert_eq(gauge_settled(admin, "runs_in_flight", 0), 0);
	cr_assert_eq(gauge_settled(admin, "sessions", sessions), sessions);
	cr_assert_eq(counter(admin, "run_errors") - errors, 8);
	cr_assert_eq(cep_session_free(a.s), CEP_ECANCELED, "the session is gone");
	cr_assert_eq(cep_region_free(a.r), 0);
	cep_close(a.c);
	cep_close(admin);
	stop();
}

Test(fairq, max_runs_in_flight_key)
{
	struct config cfg;
	char err[256];

	config_init(&cfg);
	cr_assert_eq(cfg.max_runs_in_flight, 8, "the default");
	cr_assert_eq(config_set(&cfg, "max_runs_in_flight", "128", err, sizeof(err)), 0);
	cr_assert_eq(cfg.max_runs_in_flight, 128);
	cr_assert_eq(config_set(&cfg, "max_runs_in_flight", "0", err, sizeof(err)), 0);
	cr_assert_eq(cfg.max_runs_in_flight, 0);
	cr_assert_eq(config_set(&cfg, "max_runs_in_flight", "129", err, sizeof(err)), CEP_EINVAL);
	cr_assert_not_null(strstr(err, "'129' is more than 128"), "%s", err);
	cr_assert_eq(config_set(&cfg, "max_runs_in_flight", "-1", err, sizeof(err)), CEP_EINVAL);
	cr_assert_not_null(strstr(err, "'-1' is not a number of runs (0 for no bound)"), "%s",
			   err);
	cr_assert_eq(config_set(&cfg, "max_runs_in_flight", "4x", err, sizeof(err)), CEP_EINVAL);
	cr_assert_eq(config_set(&cfg, "max_runs_in_flight", "", err, sizeof(err)), CEP_EINVAL);
	cr_assert_eq(cfg.max_runs_in_flight, 0, "a bad value leaves the key as it was");
	/* 0 bounds nothing but the records. */
	cr_assert_eq(fairq_bound_of(cfg.max_runs_in_flight), RUN_RECORDS);
	cr_assert_eq(fairq_bound_of(3), 3);
	cr_assert_eq(fairq_bound_of(RUN_RECORDS + 1), RUN_RECORDS);
}
