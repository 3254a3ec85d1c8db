/*
 * client.c — the daemon's record of a client (client.h): making one,
 * its work and life states, and releasing everything it owned.
 */
#include "daemon/client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc/account.h"
#include "client/cudaep.h"
#include "common/container_of.h"
#include "common/error.h"
#include "common/log.h"
#include "common/stats.h"

void client_list_init(struct client_list *l)
{
	memset(l, 0, sizeof(*l));
	l->next_id = 1;
}

static void list_link(struct client_list *l, struct client *c)
{
	/* Appended, so that admin listings run oldest first. */
	c->list = l;
	c->next = NULL;
	c->prev = l->tail;
	if (l->tail != NULL)
		l->tail->next = c;
	else
		l->head = c;
	l->tail = c;
	l->n++;
	if (c->conn.fd >= 0)
		l->n_sock++;
	stats_count(l->stats, STATS_COUNTER_CONNECTIONS_ACCEPTED, 1);
	stats_gauge_add(l->stats, STATS_GAUGE_CONNECTIONS, 1);
}

static void list_unlink(struct client_list *l, struct client *c, bool sock)
{
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		l->head = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	else
		l->tail = c->prev;
	c->prev = NULL;
	c->next = NULL;
	l->n--;
	if (sock)
		l->n_sock--;
	/* Its sessions are gone, so nothing is charged to it any more; the
	 * entry and its limit go with it. */
	if (l->account != NULL)
		(void)account_forget(l->account, (struct alloc_owner){ c->id, 0 });
	stats_count(l->stats, STATS_COUNTER_CONNECTIONS_CLOSED, 1);
}

/* Everything of c but its transport, made with its id. */
static struct client *client_alloc(struct client_list *l, uint64_t id, pid_t pid, uid_t uid,
				   gid_t gid, bool admin)
{
	struct client *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->id = id;
	c->pid = pid;
	c->uid = uid;
	c->gid = gid;
	c->admin = admin;
	c->connected_ns = uv_hrtime();
	region_table_init(&c->regions, l->regions);
	c->regions.client_id = c->id;
	session_table_init(&c->sessions, l->sessions, c->id);
	fence_page_init(&c->page);
	run_table_init(&c->runs, l->runs, c, &c->page, &c->regions, &c->sessions);
	fairq_lanes_init(&c->lanes, c);
	return c;
}

/* conn_close()'s callback for a client that never made it into its
 * list. */
static void client_on_unborn_closed(struct conn *cn)
{
	free(container_of(cn, struct client, conn));
}

/* Frees c after a failed conn_open() or conn_restore(). */
static void client_unborn_free(struct client *c)
{
	if (c->conn.state == CONN_BROKEN)
		conn_close(&c->conn, client_on_unborn_closed);
	else
		free(c);
}

static void client_free_parts(struct client *c)
{
	session_table_close(&c->sessions);
	region_table_close(&c->regions);
	fence_page_close(&c->page);
	run_table_close(&c->runs);
	free(c->job);
	c->job = NULL;
}

int client_new(struct client_list *l, int fd, pid_t pid, uid_t uid, gid_t gid, bool admin,
	       struct client **out)
{
	struct client *c;
	int ret;

	*out = NULL;
	c = client_alloc(l, l->next_id, pid, uid, gid, admin);
	if (c == NULL) {
		if (fd >= 0)
			close(fd);
		return CEP_ENOMEM;
	}
	ret = conn_open(&c->conn, &l->conn_env, fd, c->id);
	if (ret != 0) {
		client_free_parts(c);
		client_unborn_free(c);
		return ret;
	}
	l->next_id++;
	list_link(l, c);
	*out = c;
	return 0;
}

/* ---------------------------------------------------------------- teardown */

static void client_on_closed(struct conn *cn)
{
	struct client *c = container_of(cn, struct client, conn);

	/* A socket's client leaves the gauge when its fd is closed, so that a
	 * reader who sees the gauge drop sees the fd gone too. */
	stats_gauge_add(c->list->stats, STATS_GAUGE_CONNECTIONS, -1);
	free(c);
}

/* Releases what c owned and closes its transport: once its work has
 * ended and nothing of it is in flight. */
static void client_release(struct client *c)
{
	struct client_list *l = c->list;
	bool sock = c->conn.fd >= 0;

	c->life = CLIENT_RELEASED;
	log_printf(c->hello_done ? LOG_INFO : LOG_DEBUG,
		   "client %llu disconnected after %llu requests: released %u regions "
		   "(%llu bytes) and %u sessions", (unsigned long long)c->id,
		   (unsigned long long)c->requests, c->regions.ids.count,
		   (unsigned long long)c->regions.bytes, c->sessions.ids.count);
	client_free_parts(c);
	list_unlink(l, c, sock);
	conn_close(&c->conn, client_on_closed);
	if (sock && l->released != NULL)
		l->released(l);
}

static bool client_settled(const struct client *c)
{
	return c->work == CLIENT_IDLE && c->runs.inflight == 0;
}

void client_close(struct client *c)
{
	struct client_list *l;

	if (c == NULL || c->life != CLIENT_LIVE)
		return;
	l = c->list;
	c->life = CLIENT_GOING;
	conn_hold(&c->conn, CONN_HELD);
	if (c->work == CLIENT_BATCH && batch_member_cancel(&c->batched->bm)) {
		stats_count(l->stats, STATS_COUNTER_BATCH_DROPPED, 1);
		log_info("client %llu session %llu: its run waiting in a batch window is "
			 "dropped", (unsigned long long)c->id,
			 (unsigned long long)c->batched->sess->id);
		run_drop(c->batched);
		c->batched = NULL;
		c->work = CLIENT_IDLE;
	}
	/* Runs waiting for their turn never start now; the ones on the
	 * device are waited for. */
	fairq_cancel(l->fairq, &c->lanes);
	/* Its job may be reading its regions or running one of its sessions
	 * right now, and runs in flight still copy into its regions: wait
	 * for them (client_work_end(), client_runs_idle()). */
	if (client_settled(c))
		client_release(c);
}

void client_work_begin(struct client *c, enum client_work work)
{
	c->work = work;
	conn_hold(&c->conn, work == CLIENT_BATCH ? CONN_HELD_WATCHED : CONN_HELD);
}

void client_work_end(struct client *c)
{
	c->work = CLIENT_IDLE;
	c->batched = NULL;
	if (c->life == CLIENT_GOING) {
		if (client_settled(c))
			client_release(c);
		return;
	}
	/* Packets may have arrived meanwhile; level-triggered polling reports
	 * them on the next turn. */
	if (c->life == CLIENT_LIVE)
		conn_hold(&c->conn, CONN_READ);
}

void client_runs_idle(struct client *c)
{
	if (c->life == CLIENT_GOING && client_settled(c))
		client_release(c);
}

bool client_can_start(const struct client *c, const struct fairq *q)
{
	return c->life == CLIENT_LIVE && c->work == CLIENT_IDLE && fairq_below_bound(q, &c->runs);
}

/* ---------------------------------------------------------------- handover */

HvClient *client_save(const struct client *c, struct handover_build *b)
{
	HvClient *hc = handover_alloc(b, sizeof(*hc));

	if (hc == NULL)
		return NULL;
	cudaepd__handover__client__init(hc);
	hc->id = c->id;
	hc->pid = (int32_t)c->pid;
	hc->uid = (uint32_t)c->uid;
	hc->gid = (uint32_t)c->gid;
	hc->admin = c->admin;
	hc->hello_done = c->hello_done;
	hc->name = (char *)c->name;
	hc->requests = c->requests;
	hc->connected_ns = c->connected_ns;
	conn_save(&c->conn, b, hc);
	fence_save(&c->page, b, hc);
	access_save(c, hc);
	if (region_save(&c->regions, b, hc) != 0 || session_save(&c->sessions, b, hc) != 0)
		return NULL;
	return hc;
}

int client_restore(struct client_list *l, struct backend *be, struct access *a,
		   struct handover *h, const HvClient *hc, struct client_tally *t,
		   struct client **out)
{
	uint64_t now = uv_hrtime();
	const struct client *o;
	struct client *c;
	size_t i;
	int ret;

	*out = NULL;
	for (o = l->head; o != NULL; o = o->next)
		if (o->id == hc->id)
			break;
	if (hc->id == 0 || hc->id >= l->next_id || o != NULL)
		return cep__set_error(CEP_EINVAL, "client id %llu cannot be handed over (the "
				      "next id is %llu)", (unsigned long long)hc->id,
				      (unsigned long long)l->next_id);
	c = client_alloc(l, hc->id, (pid_t)hc->pid, (uid_t)hc->uid, (gid_t)hc->gid, hc->admin);
	if (c == NULL)
		return cep__set_error(CEP_ENOMEM, "no memory for a client");
	ret = conn_restore(&c->conn, &l->conn_env, h, hc);
	if (ret != 0) {
		client_free_parts(c);
		client_unborn_free(c);
		return ret;
	}
	list_link(l, c);
	c->hello_done = hc->hello_done;
	snprintf(c->name, sizeof(c->name), "%s", hc->name != NULL ? hc->name : "");
	c->requests = hc->requests;
	if (hc->connected_ns <= now)
		c->connected_ns = hc->connected_ns;
	access_restore(c, hc);
	cep__clear_error();
	ret = fence_restore(&c->page, be, h, hc);
	if (ret != 0) {
		t->pages_lost++;
		log_warning("client %llu: its fence page could not be taken over (%s); its runs "
			    "with a fence are refused", (unsigned long long)c->id,
			    cep_last_error());
	}
	for (i = 0; i < hc->n_regions; i++) {
		cep__clear_error();
		ret = access_region_admit(a, c);
		if (ret == 0) {
			ret = region_restore(&c->regions, h, hc->regions[i]);
		} else {
			int fd = handover_fd_take(h, hc->regions[i]->fd, "a region");

			if (fd >= 0)
				close(fd);
		}
		if (ret == 0) {
			t->regions++;
			continue;
		}
		t->regions_lost++;
		log_warning("client %llu: region %llu could not be taken over: %s",
			    (unsigned long long)c->id, (unsigned long long)hc->regions[i]->id,
			    cep_last_error());
	}
	*out = c;
	return 0;
}
