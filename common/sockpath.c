/*
 * sockpath.c — where the daemon's socket is when nobody says: the client's
 * rule (cep_default_socket_path) and the daemon's (cep__daemon_socket_path),
 * which differ only in how they pick the system-wide path.
 */
#include "client/cudaep.h"
#include "common/error.h"
#include "common/sockpath.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define CEP_SYSTEM_SOCKET "/run/cudaep/cudaep.sock"

static int put_path(char *buf, size_t len, const char *fmt, ...)
	CEP_PRINTF(3, 4);

static int put_path(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? CEP_ENAMETOOLONG : 0;
}

static int user_path(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (xdg != NULL && xdg[0] != '\0')
		return put_path(buf, len, "%s/cudaep.sock", xdg);
	return put_path(buf, len, "/tmp/cudaep-%u/cudaep.sock",
			(unsigned)getuid());
}

int cep_default_socket_path(char *buf, size_t len)
{
	const char *env = getenv("CUDAEP_SOCKET");

	if (env != NULL && env[0] != '\0')
		return put_path(buf, len, "%s", env);
	if (access(CEP_SYSTEM_SOCKET, F_OK) == 0)
		return put_path(buf, len, "%s", CEP_SYSTEM_SOCKET);
	return user_path(buf, len);
}

int cep__daemon_socket_path(char *buf, size_t len, int system_wide)
{
	const char *env = getenv("CUDAEP_SOCKET");

	if (env != NULL && env[0] != '\0')
		return put_path(buf, len, "%s", env);
	if (system_wide)
		return put_path(buf, len, "%s", CEP_SYSTEM_SOCKET);
	return user_path(buf, len);
}
