/*
 * test_batch_flow.c — when a batch group lets its runs go (daemon/batch.h),
 * in-process on gated_daemon.h's daemon, whose gate holds runs "on the
 * device" while the test looks.
 *
 * Checked: while a batch of a group is on the device, runs of every
 * session of the group wait, even a full set that would otherwise go at
 * once; when the batch lands they go together as the next batch, and
 * every run's result is right. Runs of a group whose sessions are not all
 * waiting, after a landing, wait for the others (the window), and a lone
 * session's run goes alone.
 */
#include "gated_daemon.h"

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

/* Runs i of a and b together, through the gate, and checks them. */
static void round_both(struct cl *a, struct cl *b, int i)
{
	struct sub ua, ub;

	sub_start(&ua, a, i);
	sub_start(&ub, b, i);
	sub_join(&ua);
	sub_join(&ub);
	wait_ok(a, i);
	wait_ok(b, i);
}

Test(batch_flow, runs_wait_while_their_groups_batch_is_on_the_device_then_go_together)
{
	const char *kv[] = { "batch_window_us", "1000000", NULL };
	struct cl a, b;
	struct sub ua, ub;
	cep_client *w;

	start_with(kv);
	/* A batch's host functions are not all fence_run signals. */
	g.log_on = false;
	w = dial("watcher");
	cl_open(&a, "a", CEP_PRIORITY_NORMAL, true);
	cl_open(&b, "b", CEP_PRIORITY_NORMAL, true);
	/* Plans the batch of two, then runs it warm, on the loop. */
	round_both(&a, &b, 0);
	round_both(&a, &b, 1);
	cr_assert_eq(counter(w, "batches"), 2);
	cr_assert_eq(counter(w, "batch_size_2"), 2);
	cr_assert_eq(gauge_settled(w, "runs_in_flight", 0), 0);

	gate_set(false);
	sub_start(&ua, &a, 2);
	sub_start(&ub, &b, 2);
	sub_join(&ua);
	sub_join(&ub);
	cr_assert_eq(counter(w, "batches"), 3, "the two runs went as one batch");
	cr_assert_eq(gauge(w, "runs_in_flight"), 2, "the gate holds them on the device");
	/* Both sessions have a run waiting: a full group, which goes at once
	 * unless its batch is still on the device. */
	sub_start(&ua, &a, 3);
	sub_start(&ub, &b, 3);
	cr_assert_eq(gauge_settled(w, "batch_waiting", 2), 2);
	cr_assert(gauge_stays(w, "batch_waiting", 2), "runs left the group while its batch "
		  "was on the device");
	cr_assert_eq(counter(w, "batches"), 3);
	gate_set(true);
	sub_join(&ua);
	sub_join(&ub);
	for (int i = 2; i < 4; i++) {
		wait_ok(&a, i);
		wait_ok(&b, i);
	}
	cr_assert_eq(counter(w, "batches"), 4, "the waiting runs went as one batch once the "
		     "first landed");
	cr_assert_eq(counter(w, "batch_size_2"), 4);
	cr_assert_eq(counter(w, "batch_alone"), 0);
	cr_assert_eq(gauge_settled(w, "runs_in_flight", 0), 0);
	cl_close(&a);
	cl_close(&b);
	cep_close(w);
	stop();
}

Test(batch_flow, after_a_landing_a_run_waits_for_the_groups_other_sessions)
{
	const char *kv[] = { "batch_window_us", "1000000", NULL };
	struct cl a, b;
	struct sub ua, ub;
	cep_client *w;

	start_with(kv);
	/* A batch's host functions are not all fence_run signals. */
	g.log_on = false;
	w = dial("watcher");
	cl_open(&a, "a", CEP_PRIORITY_NORMAL, true);
	cl_open(&b, "b", CEP_PRIORITY_NORMAL, true);
	round_both(&a, &b, 0);
	round_both(&a, &b, 1);
	gate_set(false);
	sub_start(&ua, &a, 2);
	sub_start(&ub, &b, 2);
	sub_join(&ua);
	sub_join(&ub);
	/* a's next run waits behind the batch, then, the batch landed, for
	 * b's run (a second's window): not alone at once. */
	sub_start(&ua, &a, 3);
	cr_assert_eq(gauge_settled(w, "batch_waiting", 1), 1);
	gate_set(true);
	wait_ok(&a, 2);
	wait_ok(&b, 2);
	cr_assert_eq(gauge_settled(w, "runs_in_flight", 1), 1, "the batch landed");
	cr_assert(gauge_stays(w, "batch_waiting", 1), "a's run left without b's");
	sub_start(&ub, &b, 3);
	sub_join(&ua);
	sub_join(&ub);
	wait_ok(&a, 3);
	wait_ok(&b, 3);
	cr_assert_eq(counter(w, "batches"), 4);
	cr_assert_eq(counter(w, "batch_alone"), 0);
	cl_close(&a);
	cl_close(&b);
	cep_close(w);
	stop();
}

Test(batch_flow, a_lone_sessions_run_goes_alone)
{
	const char *kv[] = { "batch_window_us", "1000000", NULL };
	struct cl a;
	cep_client *w;

	start_with(kv);
	/* A batch's host functions are not all fence_run signals. */
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
