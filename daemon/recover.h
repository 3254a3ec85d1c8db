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
 *   2. It waits until no job of any connection is using the backend on
 *      the thread pool (their work fails quickly on a lost context); a
 *      run waiting in a batch window is flushed then, meeting the loss.
 *   3. On the loop it fails every run in flight of every client whose
 *      completion will never come: the fence slot gets CEP_ECONTEXT and
 *      the client its error on the socket, "the device context was lost
 *      (...); this request did not complete; cudaepd restores its sessions
 *      on a new context: run again". A run the device finished before the
 *      loss (its fence written) succeeds. Runs waiting in the fair queue
 *      for their turn (fairq.h) are NOT carried over: they fail the same
 *      way, through their fences, and their clients run them again.
 *   4. It hands its state to a new image of itself (handover.h): execve()
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
