/*
 * sockpath.h — the daemon's side of the default socket path rule
 * (common/sockpath.c). Not installed.
 */
#ifndef CEP_SOCKPATH_H
#define CEP_SOCKPATH_H

#include <stddef.h>

/* Writes the path cudaepd listens on when --socket is not given into buf:
 * $CUDAEP_SOCKET if set, else /run/cudaep/cudaep.sock when system_wide (the
 * daemon runs under systemd or as root), else the per-user path of
 * cep_default_socket_path(). Returns 0 or CEP_ENAMETOOLONG. */
int cep__daemon_socket_path(char *buf, size_t len, int system_wide);

#endif
