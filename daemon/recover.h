/*
 * recover.h — fault containment: what cudaepd does when its device
 * context is lost.
 *
 * Some device errors (a kernel that touches an illegal address, say; see
 * gpu/backend.h) leave the context unusable: every later call fails, and
 * the host functions that complete runs never run. One client's faulting
 * kernel would take every client down with it. Instead the daemon
 * replaces the context and carries on:
 *
 *   1. It notices: a run, load or sync fails with CEP_ECONTEXT, or, while
 *      runs are in flight, a health query every RECOVER_HEALTH_MS finds
 *      the context lost. From then on Run, LoadModel and RegisterRegion
 *      are refused with CEP_EAGAIN ("cudaepd is restoring its sessions
 *      ...; run again in a moment"), or with CEP_ECONTEXT if they arrive
 *      before the recovery begins.
 *   2. It waits until no job of any connection is using the backend on
 *      the thread pool (their work fails quickly on a lost context).
 *   3. On the loop it fails every run in flight of every client whose
 *      completion will never come: the fence slot gets CEP_ECONTEXT and
 *      the client its error on the socket, "the device context was lost
 *      (...); this request did not complete; cudaepd restores its sessions
 *      on a new context: run again". A run the device finished before the
 *      loss (its fence written) succeeds.
 *   4. It frees every session's engine session (plans, streams, graphs,
 *      the model's device weights), forgets every registration, frees the
 *      backend (the CUDA backend resets the primary context), opens a new
 *      backend with the same configuration (or, should that fail, the host
 *      backend, logged as an error), pins every region and fence page
 *      again, and re-creates every session's engine session with its model
 *      and options: the weights are uploaded again, plans are rebuilt on
 *      their next run. Session and region ids stay, so clients need not
 *      know; a session that cannot be restored (its memory no longer fits,
 *      say) answers its runs with the reason.
 *   5. It counts the recovery ("recoveries", "recovery_runs_failed",
 *      "recovery_ns" and the gauge "last_recovery_time"), logs at warning
 *      level, and serves again.
 *
 * The faulting client's session is restored like every other: it gets
 * its run's error and may run again.
 *
 * Steps 3 to 5 run on the event loop in one go, weight uploads included:
 * the loop answers nothing meanwhile, which is what a client asking
 * during a recovery should see anyway.
 *
 * Test builds (CEP_FAULT_INJECT, build/tests/cudaepd-fault) have a
 * trigger: the third Run request of a session whose LoadModel name is
 * RECOVER_INJECT_NAME loses the context on purpose (backend_fault_inject())
 * and fails with CEP_ECONTEXT (tests/integration/test_recover.c).
 */
#ifndef CEPD_RECOVER_H
#define CEPD_RECOVER_H

struct server;

/* How often a health query runs while runs are in flight. */
#define RECOVER_HEALTH_MS 50

/* The session name that makes the third Run request inject a fault in
 * CEP_FAULT_INJECT builds. */
#define RECOVER_INJECT_NAME "cudaep-inject-fault"

/* Opens the recovery's timers on s->loop (server_listen()). Returns 0 or a
 * libuv error. */
int recover_start(struct server *s);

/* Closes them; with the loop's last handles (once no run is in flight).
 * Safe to call more than once. */
void recover_stop(struct server *s);

/*
 * Says that something may have found the backend lost: begins a recovery
 * when backend_lost(s->backend) (logging why at warning level), or, with
 * one under way, lets it go on now that a job may have ended. The work
 * itself runs from a timer of the loop, never inside the caller. Does
 * nothing for a server without a loop.
 */
void recover_note(struct server *s);

/*
 * For requests that need the backend (Run, LoadModel, RegisterRegion;
 * what names the request in the message): 0 while the backend works;
 * CEP_EAGAIN during a recovery ("cudaepd is restoring its sessions on a
 * new device context after the old one was lost; try again in a moment");
 * CEP_ECONTEXT with the loss's message when the backend is lost and the
 * recovery has not begun (it is begun now).
 */
int recover_refuse(struct server *s, const char *what);

#endif
