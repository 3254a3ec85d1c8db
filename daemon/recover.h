/*
 * recover.h — fault containment: what cudaepd does when its device
 * context is lost.
 *
 * Some device errors (a kernel that touches an illegal address, say; see
 * gpu/backend.h) leave the context unusable: every later call fails, and
 * the host functions that complete runs never run. One client's faulting
 * kernel would take every client down with it. And no new context can be
 * had in the same process afterwards (measured on the H200, driver 580:
 * cuDevicePrimaryCtxRetain and cuCtxCreate answer 700 for the rest of the
 * process; CUDA says to terminate it). So the daemon replaces itself,
 * keeping its PID and its clients:
 *
 *   1. It notices: a run, load or sync fails with CEP_ECONTEXT, or, while
 *      runs are in flight, a health query every RECOVER_HEALTH_MS finds
 *      the context lost. From then on Run, LoadModel and RegisterRegion
 *      are refused with CEP_EAGAIN ("cudaepd is restoring its sessions
 *      ...; run again in a moment"), or with CEP_ECONTEXT if they arrive
 *      before the recovery begins.
 *   2. It waits until no client's work is using the backend on the
 *      thread pool (their work fails quickly on a lost context); a run
 *      waiting in a batch window is flushed then, meeting the loss.
 *   3. On the loop it fails every run in flight of every client whose
 *      completion will never come: the fence slot gets CEP_ECONTEXT and
 *      the client its error on the socket, "the device context was lost
 *      (...); this request did not complete; cudaepd restores its sessions
 *      on a new context: run again". A run the device finished before the
 *      loss (its fence written) succeeds. Runs waiting in the fair queue
 *      for their turn (fairq.h) are NOT carried over: they fail the same
 *      way, through their fences, and their clients run them again.
 *   4. The server hands its state to a new image of itself (the handover
 *      callback; handover.h): execve()
 *      of /proc/self/exe with the same command line and the state in a
 *      memfd; every fd but stdio and the ones handed over closes with the
 *      old image (the dead context's memory goes with them). No backend
 *      call is made on the way. Should the exec fail, the daemon logs it
 *      at critical level and stops with status 1 for its service manager
 *      to restart it.
 *   5. The new image starts as usual (configuration, a fresh backend of
 *      the configured kind), takes over the listening socket, every
 *      connection, fence page, region and session with their ids
 *      (weights uploaded again, plans rebuilt on their next run), counts
 *      the recovery ("recoveries", "handovers", "recovery_runs_failed",
 *      "recovery_ns": noticed to serving again, and the gauge
 *      "last_recovery_time"), logs "recovered from the lost context in
 *      ... ms" at warning level, tells systemd READY=1 again, and serves.
 *      A session that cannot be restored (its memory no longer fits, say)
 *      answers its runs with the reason.
 *
 * The faulting client's session is restored like every other: it gets
 * its run's error and may run again. The host backends go through the
 * same re-exec, so CI tests the path the GPU takes.
 *
 * Test builds (CEP_FAULT_INJECT, build/tests/cudaepd-fault) have a
 * trigger: the third Run request of a session whose LoadModel name is
 * RECOVER_INJECT_NAME loses the context on purpose (backend_fault_inject())
 * and fails with CEP_ECONTEXT (tests/integration/test_recover.c). The
 * session's Run count is handed over, so it does not fire again.
 */
#ifndef CEPD_RECOVER_H
#define CEPD_RECOVER_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

struct backend;
struct fairq;
struct run_queue;

/* How often a health query runs while runs are in flight. */
#define RECOVER_HEALTH_MS 50

/* The session name that makes the third Run request inject a fault in
 * CEP_FAULT_INJECT builds. */
#define RECOVER_INJECT_NAME "cudaep-inject-fault"

/* What the recovery asks of the layer above (the server). */
struct recover_ops {
	/* Whether no client's work uses the backend on the thread pool. */
	bool (*idle)(void *ctx);
	/* Every run is settled: hand over to a new image (fault_ns is
	 * uv_hrtime() when the loss was noticed, runs_failed the runs it
	 * failed, why the loss). Returns only when that failed. */
	void (*handover)(void *ctx, uint64_t fault_ns, uint32_t runs_failed, const char *why);
	/* The handover failed: stop, so that the service manager restarts
	 * the daemon with status 1. */
	void (*stop)(void *ctx);
};

/* The recovery's state; in struct server. */
struct recover {
	uv_loop_t *loop;                /* NULL until recover_start() */
	struct backend *backend;        /* whose context may be lost */
	struct run_queue *runs;         /* settled by the recovery */
	struct fairq *fairq;            /* its waiting runs fail */
	const struct recover_ops *ops;
	void *ctx;
	bool recovering;                /* the context is lost; the daemon is
	                                 * handing over to a new image */
	uint64_t t0;                    /* uv_hrtime() when that began */
	bool live;                      /* the two timers are open */
	uv_timer_t timer;               /* runs the recovery from the loop */
	uv_timer_t health;              /* asks the backend whether its
	                                 * context still works while runs are
	                                 * in flight */
};

/* Initializes rc (caller memory) for backend be, its runs and fair queue,
 * reporting through ops with ctx. */
void recover_init(struct recover *rc, struct backend *be, struct run_queue *runs,
		  struct fairq *fairq, const struct recover_ops *ops, void *ctx);

/* Opens the recovery's timers on loop (server_listen()). Returns 0 or a
 * libuv error. */
int recover_start(struct recover *rc, uv_loop_t *loop);

/* Closes them; with the loop's last handles (once no run is in flight).
 * Safe to call more than once. */
void recover_stop(struct recover *rc);

/*
 * Says that something may have found the backend lost: begins a recovery
 * when backend_lost() (logging why at warning level), or, with one under
 * way, lets it go on now that some work may have ended. The work itself
 * runs from a timer of the loop, never inside the caller. Does nothing
 * before recover_start().
 */
void recover_note(struct recover *rc);

/*
 * For requests that need the backend (Run, LoadModel, RegisterRegion;
 * what names the request in the message): 0 while the backend works;
 * CEP_EAGAIN during a recovery ("cudaepd is restoring its sessions on a
 * new device context after the old one was lost; try again in a moment");
 * CEP_ECONTEXT with the loss's message when the backend is lost and the
 * recovery has not begun (it is begun now).
 */
int recover_refuse(struct recover *rc, const char *what);

#endif
