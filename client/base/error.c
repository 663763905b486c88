/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/base/error.c - libsemclient's errors: the calling thread's
 * message (semc_last_message()), the codes of the daemon's replies as
 * enum semc_error, and their names.
 */
#include <stdarg.h>
#include <stdio.h>

#include "client/base/base.h"

/* The calling thread's message of its last failed call. */
static _Thread_local char semc_msg[512];

/* Record the calling thread's message for err and return err. */
int semc_fail(int err, const char *fmt, ...)
{
	va_list ap;

	if (fmt == NULL || *fmt == '\0') {
		snprintf(semc_msg, sizeof semc_msg, "%s", semc_strerror(err));
		return err;
	}
	va_start(ap, fmt);
	vsnprintf(semc_msg, sizeof semc_msg, fmt, ap);
	va_end(ap);
	return err;
}

/* Forget the calling thread's message. */
void semc_clear_message(void)
{
	semc_msg[0] = '\0';
}

/* The calling thread's last message. */
const char *semc_last_message(void)
{
	return semc_msg;
}

/* Map a protocol Code to an enum semc_error. */
int semc_code_error(int code)
{
	if (code == 0)
		return SEMC_OK;
	if (code > 0 && code <= 16)
		return -code;
	if (code == SEMD__CODE__COMPACTED)
		return SEMC_E_COMPACTED;
	return SEMC_E_PROTOCOL;
}

/* Name an error code. */
const char *semc_strerror(int error)
{
	switch (error) {
	case SEMC_OK: return "success";
	case SEMC_E_TIMEOUT: return "timed out";
	case SEMC_E_WOULD_BLOCK: return "would block";
	case SEMC_E_NOT_FOUND: return "not found";
	case SEMC_E_EXISTS: return "already exists";
	case SEMC_E_NOT_HOLDER: return "not a holder";
	case SEMC_E_PERMISSION: return "permission denied";
	case SEMC_E_INVALID: return "invalid argument";
	case SEMC_E_EXHAUSTED: return "resource exhausted";
	case SEMC_E_CANCELLED: return "cancelled";
	case SEMC_E_UNAVAILABLE: return "server unavailable";
	case SEMC_E_PROTOCOL: return "protocol error";
	case SEMC_E_INTERNAL: return "internal server error";
	case SEMC_E_SESSION_EXPIRED: return "session expired";
	case SEMC_E_DEADLOCK: return "deadlock";
	case SEMC_E_QUEUE_FULL: return "queue full";
	case SEMC_E_REPLACED: return "replaced";
	case SEMC_E_COMPACTED: return "compacted: the revision is no longer kept";
	case SEMC_E_CONNECT: return "cannot connect to the server";
	case SEMC_E_DISCONNECTED: return "connection to the server lost";
	case SEMC_E_HOLD_LOST: return "hold lost";
	case SEMC_E_NO_REPLY: return "no reply from the server";
	case SEMC_E_NOMEM: return "out of memory";
	case SEMC_E_ADDRESS: return "bad server address";
	case SEMC_E_NOT_SUPPORTED: return "not supported";
	case SEMC_E_TLS: return "TLS error";
	case SEMC_E_SYSTEM: return "system error";
	case SEMC_E_ARG: return "invalid argument to library call";
	}
	return "unknown error";
}

/* The error of a reply, recording its message for the calling thread. */
int semc_reply_error(const Semd__Reply *rp)
{
	int err = semc_code_error(rp->code);

	if (err == 0)
		return 0;
	if (rp->message != NULL && *rp->message != '\0')
		return semc_fail(err, "%s", rp->message);
	return semc_fail(err, NULL);
}
