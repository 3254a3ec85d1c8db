/*
 * test_batch_flow.c — when a batch group lets its runs go (daemon/batch.h),
 * in-process on gated_daemon.h's daemon, whose gate holds runs "on the
 * device" while the test looks.
 *
 * Checked: while both lanes of a group have a batch on the device, runs of
 * every session of the group wait, even a full set that would otherwise go
 * at once; with one lane busy a full set goes on the other; when a batch
 * lands the waiting runs go together as the next batch, and every run's
 * result is right. Runs of a group whose sessions are not all waiting,
 * after a landing, wait for the others (the window), and a lone session's
 * run goes alone.
 */
#include "tests/unit/gated_daemon.h"

TestSuite(batch_flow, .init = setup, .fini = teardown, .timeout = 60);

/* A run submitted on a thread of its own: a batching session's submit is
 * answered only when its run leaves the group. */
struct sub {
	struct cl *t;
	int i, ret;
	pthread_t th;
};

static void *sub_main(void *arg)
{
	struct sub *u = arg;

	u->ret = cep_run_submit(u->t->s, &u->t->in[u->i], 1, &u->t->out[u->i], 1,
				&u->t->fence[u->i]);
	return NULL;
}

static void sub_start(struct sub *u, struct cl *t, int i)
{
	fill(t, i);
	*u = (struct sub){ .t = t, .i = i };
	cr_assert_eq(pthread_create(&u->th, NULL, sub_main, u), 0);
}

static void sub_join(struct sub *u)
{
	cr_assert_eq(pthread_join(u->th, NULL), 0);
	cr_assert_eq(u->ret, 0, "submit %d: %s", u->i, cep_err_name(u->ret));
	u->t->seq[u->i] = u->t->fence[u->i].seq;
}

/* Whether the gauge keeps value v for a fifth of a second of asking: what
 * the daemon would do instead happens within a turn of its loop. */
static bool gauge_stays(cep_client *c, const char *name, int64_t v)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };

	for (int i = 0; i < 40; i++) {
		if (gauge(c, name) != v)
			return false;
		nanosleep(&ts, NULL);
	}
	return true;
}

/* Submits runs i of a and b together; returns once both are answered. */
static void submit_both(struct cl *a, struct cl *b, int i)
{
	struct sub ua, ub;

	sub_start(&ua, a, i);
	sub_start(&ub, b, i);
	sub_join(&ua);
	sub_join(&ub);
}

/* Runs i of a and b together, through the gate, and checks them. */
static void round_both(struct cl *a, struct cl *b, int i)
{
	submit_both(a, b, i);
	wait_ok(a, i);
	wait_ok(b, i);
}

/* Plans the batch of two on both lanes (a group takes turns, and the
 * first use of each lane is cold) and runs it warm on each. */
static void warm_lanes(struct cl *a, struct cl *b)
{
	for (int i = 0; i < 4; i++)
		round_both(a, b, i);
	cr_assert_eq(gauge_settled(a->c, "runs_in_flight", 0), 0);
}

/* A daemon with a second's window, two batching sessions a and b of one
 * model, both lanes warm; returns a watcher's client. */
static cep_client *pair_start(struct cl *a, struct cl *b)
{
	const char *kv[] = { "batch_window_us", "1000000", NULL };
	cep_client *w;

	start_with(kv);
	/* A batch's host functions are not all runs' signals. */
	g.log_on = false;
	w = dial("watcher");
	cl_open(a, "a", CEP_PRIORITY_NORMAL, true);
	cl_open(b, "b", CEP_PRIORITY_NORMAL, true);
	warm_lanes(a, b);
	return w;
}

static void pair_stop(struct cl *a, struct cl *b, cep_client *w)
{
	cl_close(a);
	cl_close(b);
	cep_close(w);
	stop();
}

Test(batch_flow, a_full_set_goes_on_a_free_lane_and_waits_while_both_lanes_are_busy)
{
	struct cl a, b;
	struct sub ua, ub;
	cep_client *w = pair_start(&a, &b);

	cr_assert_eq(counter(w, "batches"), 4);
	cr_assert_eq(counter(w, "batch_size_2"), 4);

	gate_set(false);
	submit_both(&a, &b, 4);
	cr_assert_eq(counter(w, "batches"), 5, "the two runs went as one batch");
	cr_assert_eq(gauge(w, "runs_in_flight"), 2, "the gate holds them on the device");
	/* A full set goes at once on the other lane. */
	submit_both(&a, &b, 5);
	cr_assert_eq(counter(w, "batches"), 6);
	cr_assert_eq(gauge(w, "runs_in_flight"), 4);
	/* Both lanes busy: a full set waits. */
	sub_start(&ua, &a, 6);
	sub_start(&ub, &b, 6);
	cr_assert_eq(gauge_settled(w, "batch_waiting", 2), 2);
	cr_assert(gauge_stays(w, "batch_waiting", 2), "runs left the group while both its "
		  "lanes had a batch on the device");
	cr_assert_eq(counter(w, "batches"), 6);
	gate_set(true);
	sub_join(&ua);
	sub_join(&ub);
	for (int i = 4; i < 7; i++) {
		wait_ok(&a, i);
		wait_ok(&b, i);
	}
	cr_assert_eq(counter(w, "batches"), 7, "the waiting runs went as one batch once a "
		     "lane was free");
	cr_assert_eq(counter(w, "batch_size_2"), 7);
	cr_assert_eq(counter(w, "batch_alone"), 0);
	cr_assert_eq(gauge_settled(w, "runs_in_flight", 0), 0);
	pair_stop(&a, &b, w);
}

Test(batch_flow, after_a_landing_a_run_waits_for_the_groups_other_sessions)
{
	struct cl a, b;
	struct sub ua, ub;
	cep_client *w = pair_start(&a, &b);

	gate_set(false);
	submit_both(&a, &b, 4);
	submit_both(&a, &b, 5);
	/* a's next run waits for a lane, then, the batches landed, for b's
	 * run (a second's window): not alone at once. */
	sub_start(&ua, &a, 6);
	cr_assert_eq(gauge_settled(w, "batch_waiting", 1), 1);
	gate_set(true);
	for (int i = 4; i < 6; i++) {
		wait_ok(&a, i);
		wait_ok(&b, i);
	}
	cr_assert_eq(gauge_settled(w, "runs_in_flight", 1), 1, "the batches landed");
	cr_assert(gauge_stays(w, "batch_waiting", 1), "a's run left without b's");
	sub_start(&ub, &b, 6);
	sub_join(&ua);
	sub_join(&ub);
	wait_ok(&a, 6);
	wait_ok(&b, 6);
	cr_assert_eq(counter(w, "batches"), 7);
	cr_assert_eq(counter(w, "batch_alone"), 0);
	pair_stop(&a, &b, w);
}

Test(batch_flow, a_lone_sessions_run_goes_alone)
{
	const char *kv[] = { "batch_window_us", "1000000", NULL };
	struct cl a;
	cep_client *w;

	start_with(kv);
	/* A batch's host functions are not all runs' signals. */
	g.log_on = false;
	w = dial("watcher");
	cl_open(&a, "a", CEP_PRIORITY_NORMAL, true);
	/* Every session of the group has its run waiting: it goes, alone. */
	for (int i = 0; i < 3; i++) {
		submit(&a, i);
		wait_ok(&a, i);
	}
	cr_assert_eq(counter(w, "batch_alone"), 3);
	cr_assert_eq(counter(w, "batches"), 0);
	cl_close(&a);
	cep_close(w);
	stop();
}
