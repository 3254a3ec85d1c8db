/*
 * error.h — internal helpers of the error space (common/error.c), shared by
 * the client library and the daemon. Not installed.
 */
#ifndef CEP_ERROR_H
#define CEP_ERROR_H

#if defined(__GNUC__)
#define CEP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CEP_PRINTF(a, b)
#endif

/* Records a detailed message for cep_last_error() on this thread (NULL fmt:
 * cep_strerror(err)) and returns err, so that `return cep__set_error(...)`
 * reads naturally. */
int cep__set_error(int err, const char *fmt, ...) CEP_PRINTF(2, 3);

/* Empties this thread's last error message. */
void cep__clear_error(void);

/* -errno for a positive errno value; CEP_EINTERNAL for 0 or garbage. */
int cep__from_errno(int sys_errno);

#endif
