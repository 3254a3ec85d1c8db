/*
 * handover.h — cudaepd hands its client-visible state to a new image of
 * itself. After a sticky device error no new context can be had in the
 * process (the driver answers every retain or create with the error), so
 * the recovery (recover.h) ends with execve() of /proc/self/exe with the
 * same command line: the PID stays (systemd and the clients keep it), the
 * dead driver's fds close with the old image and its device memory goes,
 * and the new image opens a fresh context and takes everything over.
 *
 * This module is the frame, not the content: it builds the message's
 * parts, writes it with the model files into a memfd named by
 * $CUDAEPD_HANDOVER_FD, carries the fds it names across the exec, and in
 * the new image reads it back and hands out those fds. What goes over is
 * each stateful module's own business, saved and restored by it with
 * x_save()/x_restore() (server.c, client.c, conn.c, fence.c, region.c,
 * session.c, access.c), as proto/handover.proto lays it out: the
 * listening socket; every connection with its socket, credentials, name,
 * Hello state, request count, fence page, regions, sessions (the model
 * loaded again from its file's bytes, kept by engine_model, and its
 * external data's directory fd), killed sessions, and the responses its
 * socket had not taken; the id counters, the stats counters, the start
 * time, and each session's Run count.
 *
 * Not handed over: runs in flight and runs waiting for their turn (the
 * recovery failed them through their fences before the exec).
 *
 * fds travel as their numbers: the old image clears FD_CLOEXEC on the
 * ones kept and sets it on every other (the driver's among them), so
 * exactly those cross the exec. The new image notes every fd it inherited
 * and hands each out once, to the object the message names it for, which
 * checks its type before taking it; what nothing took is closed. A
 * handover that cannot be read at all is logged, every inherited fd is
 * closed (clients see the disconnect instead of hanging) and the daemon
 * starts fresh.
 */
#ifndef CEPD_HANDOVER_H
#define CEPD_HANDOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "handover.pb-c.h"

#include "engine/engine.h"

typedef Cudaepd__Handover__Handover HvHandover;
typedef Cudaepd__Handover__Listener HvListener;
typedef Cudaepd__Handover__Client HvClient;
typedef Cudaepd__Handover__Region HvRegion;
typedef Cudaepd__Handover__Session HvSession;
typedef Cudaepd__Handover__Model HvModel;
typedef Cudaepd__Handover__Out HvOut;
typedef Cudaepd__Handover__Counter HvCounter;
typedef Cudaepd__Handover__Gauge HvGauge;

/* The environment variable naming the handover memfd (internal: set only
 * by cudaepd for its own next image). */
#define HANDOVER_ENV "CUDAEPD_HANDOVER_FD"

/* Bumped when the message changes meaning; a new image refuses another. */
#define HANDOVER_VERSION 1

/* ================================================================ old image */

/* A message being built: its parts, the fds it keeps and the models it
 * names. */
struct handover_build;

/* Starts a message. Returns 0 with *out (handover_build_free()), or
 * CEP_ENOMEM. */
int handover_build_new(struct handover_build **out);

/* Frees b and every part allocated from it. Accepts NULL. */
void handover_build_free(struct handover_build *b);

/* A zeroed part of bytes bytes, freed with b; NULL when out of memory,
 * which b remembers (handover_exec() then refuses). */
void *handover_alloc(struct handover_build *b, size_t bytes);

/* Carries fd over: returns the number the message holds for it (never 0,
 * 1 or 2, which mean none: such an fd is moved up first), or 0 for fd < 0
 * or when it cannot be kept (out of memory, remembered). */
int32_t handover_keep_fd(struct handover_build *b, int fd);

/* Names model m's file in the message: 1 + its index, added when new, or
 * 0 for a model without its file's bytes (it cannot be loaded again). */
uint32_t handover_model(struct handover_build *b, const engine_model *m);

/*
 * Writes m (its models filled in from b) into a memfd, marks every fd but
 * 0, 1, 2 and the ones b keeps close-on-exec and re-executes
 * /proc/self/exe with argv. summary is logged just before. Makes no
 * backend call. Returns only on failure, with a CEP_E* code and a message
 * (the process is as it was, but for the fds' close-on-exec flags).
 */
int handover_exec(struct handover_build *b, HvHandover *m, char **argv, const char *summary);

/* ================================================================ new image */

struct handover;

/*
 * First thing in main(), before anything opens an fd: when
 * $CUDAEPD_HANDOVER_FD is set, unsets it, notes every inherited fd
 * (marking it close-on-exec) and reads the handover. Returns it, owned by
 * the caller (handover_free(), or given to the server), or NULL: no
 * handover, or one that could not be read (logged; every inherited fd is
 * closed then, and the daemon starts fresh).
 */
struct handover *handover_take(void);

/*
 * Reads the handover in memfd (taken in every case), as handover_take()
 * does after noting the inherited fds; for tests and the fuzzer, with
 * every fd that the message names to be handed out taken from fds (n of
 * them; nothing else is noted). Returns 0 with *out, or a CEP_E* code
 * with a message saying what is wrong (fds are not closed then).
 */
int handover_read_fd(int memfd, const int *fds, size_t n, struct handover **out);

/* The message read. */
const HvHandover *handover_msg(const struct handover *h);

/* Takes fd, which the message names as what: it must be one the new image
 * inherited and not taken yet. Returns it, or -1 (logged) when it cannot
 * be; an fd below 3 means none and returns -1 silently. */
int handover_fd_take(struct handover *h, int32_t fd, const char *what);

/*
 * The bytes (*bytes, *len, owned by h) and external-data directory
 * (*dir_fd, owned by h; -1: none) of model file i (1-based, as sessions
 * name it), read from the memfd once. Returns 0, or a CEP_E* code with a
 * message saying why it cannot be had.
 */
int handover_model_get(struct handover *h, uint32_t i, const void **bytes, size_t *len,
		       int *dir_fd);

/* Frees h and closes every inherited fd nothing took. Accepts NULL. */
void handover_free(struct handover *h);

#endif
