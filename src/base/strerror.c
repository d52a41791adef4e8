/* SPDX-License-Identifier: MIT */
/* strerror.c - descriptions of canal's error codes. */
#include "base/compiler.h"

#include <canal/base.h>

#include <errno.h>

CANAL_EXPORT const char *canal_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -EPIPE:
		return "channel closed";
	case -EAGAIN:
		return "operation would block (channel full, empty, or no peer ready)";
	case -ETIMEDOUT:
		return "timed out";
	case -EINVAL:
		return "invalid argument";
	case -ENOMEM:
		return "out of memory";
	case -ENOENT:
		return "no such channel (or, from canal_select, no case to wait on)";
	case -EOPNOTSUPP:
		return "operation not supported";
	case -EBADMSG:
		return "not a canal channel, or a truncated or corrupted one";
	case -EPROTONOSUPPORT:
		return "channel made by an incompatible canal layout version";
	case -ERANGE:
		return "element size or capacity differs from the channel's";
	case -EOWNERDEAD:
		return "a peer repaired this operation's slot, believing this process dead";
	case -EEXIST:
		return "a channel of that name exists";
	case -EACCES:
		return "permission denied";
	case -ECONNRESET:
		return "the peer closed the connection";
	case -ECONNABORTED:
		return "the peer ended the stream early: elements were lost";
	case -ELOOP:
		return "too many symbolic links";
	case -EBADF:
		return "bad file descriptor";
	case -EMFILE:
		return "too many open files in this process";
	case -ENFILE:
		return "too many open files in the system";
	case -EPERM:
		return "operation not permitted";
	case -ECANCELED:
		return "operation canceled";
	case -ENOSYS:
		return "function not implemented by this kernel";
	case -EINTR:
		return "interrupted";
	case -ENAMETOOLONG:
		return "name too long";
	case -ENOSPC:
		return "no space left";
	case -EBUSY:
		return "busy: already running, in use, or no room at the moment";
	case -EPROTO:
		return "protocol error: a peer sent a malformed message, or disagrees";
	case -EMSGSIZE:
		return "message too long (for the receive buffer, or 4 GiB or more)";
	case -EADDRNOTAVAIL:
		return "address not available on this host";
	case -EIO:
		return "input/output error";
	case -EALREADY:
		return "an operation is already under way";
	case -ENOTSOCK:
		return "not a socket";
	default:
		return "unknown error";
	}
}
