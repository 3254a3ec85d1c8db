/*
 * cuda_check.c — the failure half of the CUDA libraries' one status check
 * (gpu/cuda/cuda_check.h): the message, its log line, the error code.
 */
#include "gpu/cuda/cuda_check.h"

#include "common/error.h"
#include "common/log.h"

int cuda_check__fail(const struct cuda_check_lib *check, const void *lib, int status,
		     const char *expr, const char *func, const char *file, int line)
{
	char what[400];

	check->describe(lib, status, what, sizeof(what));
	/* Debug only: the request that made the call gets the message, and a
	 * lost context makes every later call fail alike, which would bury
	 * the daemon's own line about it (daemon/recover.c). */
	log_debug("%s failed in %s() at %s:%d: %s", expr, func, file, line, what);
	return cep__set_error(check->code(status), "%s failed in %s() at %s:%d: %s", expr,
			      func, file, line, what);
}
