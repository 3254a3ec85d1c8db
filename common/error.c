/*
 * error.c — cudaep's one error space: names and sentences for CEP_E* codes,
 * and the thread's last detailed error message. Linked into the client
 * library and into cudaepd, which share client/cudaep.h's CEP_ERRNO_MAP.
 */
#include "client/cudaep.h"
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[512];
static _Thread_local char unknown_error[48];

const char *cep_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
#define CEP__ERR_MSG(name, val, msg) \
	case val:                    \
		return msg;
		CEP_ERRNO_MAP(CEP__ERR_MSG)
#undef CEP__ERR_MSG
	}
	snprintf(unknown_error, sizeof(unknown_error), "unknown error %d", err);
	return unknown_error;
}

const char *cep_err_name(int err)
{
	switch (err) {
	case 0:
		return "OK";
#define CEP__ERR_NAME(name, val, msg) \
	case val:                     \
		return #name;
		CEP_ERRNO_MAP(CEP__ERR_NAME)
#undef CEP__ERR_NAME
	}
	return "UNKNOWN";
}

const char *cep_last_error(void)
{
	return last_error;
}

int cep__set_error(int err, const char *fmt, ...)
{
	va_list ap;

	if (fmt == NULL) {
		snprintf(last_error, sizeof(last_error), "%s", cep_strerror(err));
		return err;
	}
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return err;
}

void cep__clear_error(void)
{
	last_error[0] = '\0';
}

int cep__from_errno(int sys_errno)
{
	return sys_errno > 0 ? -sys_errno : CEP_EINTERNAL;
}
