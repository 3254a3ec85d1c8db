/*
 * listener.h — the daemon's listening socket: a SOCK_SEQPACKET Unix
 * socket bound at a path, or the one systemd's socket activation passed.
 * The server accepts on it (server.c); this module only makes it.
 */
#ifndef CEPD_LISTENER_H
#define CEPD_LISTENER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Binds a listening socket at path: creates its directory when missing
 * (0755 system_wide, else 0700), replaces a stale socket nobody answers
 * on, refuses one a live daemon answers on (CEP_EBUSY) and anything that
 * is not a socket (CEP_EEXIST), sets mode and, for gid >= 0, the group
 * (named group, for the log) before listening. Returns 0, or a CEP_E*
 * code after logging why; *fd_out is set as soon as the socket is bound
 * (the caller closes it and unlinks path on a later failure).
 */
int listener_bind(const char *path, bool system_wide, mode_t mode, int64_t gid,
		  const char *group, int *fd_out);

/*
 * Takes the socket systemd passed (LISTEN_FDS): 1 with *fd_out and its
 * path in path (size bytes; "(socket from systemd)" when it has none),
 * 0 when not activated, or a CEP_E* code after logging why (more than one
 * socket, or not a listening SOCK_SEQPACKET Unix socket).
 */
int listener_activated(int *fd_out, char *path, size_t size);

#endif
