/*
 * fence.h — a client's fence page: the completion channel of its runs
 * (proto/cep_fence.h is the layout it shares with the client library).
 *
 * The page is a sealed memfd of CEP_FENCE_SLOTS slots, mapped here and by
 * the client, and registered with the backend so that the device can
 * write a slot's sequence number itself. A run is armed in its slot before
 * anything of it is queued and signalled once its verdict is known: the
 * status, then the sequence number (unless the device wrote it), then a
 * bump of the futex word and a wake of every waiter.
 *
 * This module knows slots and sequence numbers, not runs: the life of a
 * run, and who owns what while it lasts, is daemon/run.h's. Arming and the
 * page's lifecycle run on the event loop; fence_slot_signal() may run on
 * any thread (a backend's host function), and touches only the slot.
 */
#ifndef CEPD_FENCE_H
#define CEPD_FENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/handover.h"
#include "proto/cep_fence.h"

struct backend;

/* A client's page; in struct client. */
struct fence_page {
	int fd;                        /* a dup of page_fd until the Hello reply
	                                * takes it; -1 */
	int page_fd;                   /* the page's memfd, kept for a handover;
	                                * -1: none */
	struct cep_fence_slot *slots;  /* (CEP_FENCE_SLOTS) shared with the
	                                * client; NULL: no page */
	struct backend *pinned;        /* the backend it is registered with, or
	                                * NULL */
	uint64_t last_seq;             /* the largest sequence number armed */
};

/* Initializes p without a page (caller memory). */
void fence_page_init(struct fence_page *p);

/*
 * Creates p's page: a memfd sealed against shrinking and growing, mapped
 * here and, when be is not NULL, registered with be. With share, the
 * memfd stays in p->page_fd and a dup of it waits in p->fd for the Hello
 * reply (fence_page_fd_take()); without (a client with no socket to pass
 * it on), the fd is closed once mapped. Returns 0 or an error (the client
 * then has no page: its runs wait for their replies).
 */
int fence_page_open(struct fence_page *p, struct backend *be, bool share);

/*
 * Takes fd, the page a previous image of the daemon handed over, as p's:
 * checks that it is a regular file of the page's size, maps it and
 * registers it with be. Its slots keep what the client saw; the next run
 * must have a sequence number above last_seq. Takes fd in every case.
 * Returns 0, CEP_EINVAL (not a page: the message says why), a mapping
 * error or the backend's.
 */
int fence_page_adopt(struct fence_page *p, struct backend *be, int fd, uint64_t last_seq);

/* The page's fd for the reply that carries it (-1 when there is none to
 * send); the caller owns it. */
int fence_page_fd_take(struct fence_page *p);

/* Unmaps, unregisters and closes p's page. Nothing may be armed and not
 * yet signalled. Accepts a page that was never opened. */
void fence_page_close(struct fence_page *p);

/*
 * Checks that a run with sequence number seq may be armed: p has a page
 * and seq is above every earlier one. Returns 0 or CEP_EINVAL saying
 * which.
 */
int fence_seq_check(const struct fence_page *p, uint64_t seq);

/*
 * Arms slot seq (checked) for request req_id: status 0 and the request id
 * are stored and made visible before anything of the run is queued, since
 * the device may write the sequence number without the daemon. Returns
 * the slot's sequence word, which the run's stream may write itself.
 */
uint64_t *fence_slot_arm(struct fence_page *p, uint64_t seq, uint64_t req_id);

/*
 * Signals run seq's verdict status (0 or a CEP_E* code): status, then the
 * sequence number unless the device wrote it already (seq_written), then
 * the futex word, whose waiters (other processes) are woken. Any thread.
 */
void fence_slot_signal(struct fence_page *p, uint64_t seq, int status, bool seq_written);

/* Wakes every waiter on the shared futex word (waiters in other
 * processes: not FUTEX_PRIVATE_FLAG). Any thread. The generation's ring
 * (dispatch_gen.c) wakes its reader with it too. */
void fence_futex_wake(_Atomic uint32_t *word);

/* Whether the slot of seq shows seq or later: the device wrote it. */
bool fence_slot_reached(const struct fence_page *p, uint64_t seq);

/* ---------------------------------------------------------------- handover */

/* Puts p's memfd and last sequence number into hc (none without a page). */
void fence_save(const struct fence_page *p, struct handover_build *b,
		HvClient *hc);

/*
 * Takes hc's page from h as p's (fence_page_adopt() on be), when it had
 * one. Returns 0, or an error saying why it could not (the client then
 * has no page: its fenced runs are refused).
 */
int fence_restore(struct fence_page *p, struct backend *be, struct handover *h,
		  const HvClient *hc);

#endif
