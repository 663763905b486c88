/* SPDX-License-Identifier: BSD-2-Clause */
/* security/peer.c - the principal of a local (UNIX socket) peer. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "security/peer.h"

/* Upper bound on supplementary groups looked up for one user. */
#define PEER_MAX_GROUPS 4096

/* The peer's credentials only (no name lookups): uid, gid, pid. */
int peer_cred(int fd, uid_t *uid, gid_t *gid, pid_t *pid)
{
	struct ucred cred;
	socklen_t len = sizeof cred;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return -errno;
	if (len != sizeof cred)
		return -EPROTO;
	if (uid != NULL)
		*uid = cred.uid;
	if (gid != NULL)
		*gid = cred.gid;
	if (pid != NULL)
		*pid = cred.pid;
	return 0;
}

/* Size for a getpw/getgr *_r buffer. */
static size_t peer_bufsize(int name)
{
	long n = sysconf(name);

	return n > 0 && n < 1048576 ? (size_t)n : 16384;
}

/* Add the name of group gid to s; an unknown gid is skipped. */
static int peer_add_gid(struct acl_subject *s, gid_t gid, char **buf, size_t *buflen)
{
	struct group gr, *res;
	char *nb;
	int e;

	for (;;) {
		e = getgrgid_r(gid, &gr, *buf, *buflen, &res);
		if (e != ERANGE)
			break;
		if (*buflen >= 1048576)
			return -ERANGE;
		nb = realloc(*buf, *buflen * 2);
		if (nb == NULL)
			return -ENOMEM;
		*buf = nb;
		*buflen *= 2;
	}
	if (e != 0)
		return -e;
	if (res == NULL)
		return 0;
	return acl_subject_add_group(s, gr.gr_name);
}

/* Fill s with the identity of the peer of a connected UNIX socket. */
int peer_subject(int fd, struct acl_subject *s)
{
	struct passwd pw, *res = NULL;
	gid_t *gids = NULL;
	char *buf = NULL, *nb;
	size_t buflen = peer_bufsize(_SC_GETPW_R_SIZE_MAX);
	uid_t uid = (uid_t)-1;	/* set by peer_cred(); the analyzer cannot */
	gid_t gid = (gid_t)-1;	/* tell that -errno is never 0 */
	int e, ngids, i;

	acl_subject_clear(s);
	if ((e = peer_cred(fd, &uid, &gid, NULL)) != 0)
		return e;
	if ((buf = malloc(buflen)) == NULL)
		return -ENOMEM;
	for (;;) {
		e = getpwuid_r(uid, &pw, buf, buflen, &res);
		if (e != ERANGE)
			break;
		if (buflen >= 1048576)
			break;
		if ((nb = realloc(buf, buflen * 2)) == NULL) {
			e = ENOMEM;
			goto fail_errno;
		}
		buf = nb;
		buflen *= 2;
	}
	if (e != 0 && e != ENOENT && e != ESRCH && e != ERANGE)
		goto fail_errno;
	if (e != 0)
		res = NULL;
	if ((e = acl_subject_set_uid(s, uid, res != NULL ? res->pw_name : NULL)) != 0)
		goto fail;
	if (res != NULL) {
		ngids = 64;
		for (;;) {
			int want = ngids;

			free(gids);
			if ((gids = calloc((size_t)want, sizeof *gids)) == NULL) {
				e = -ENOMEM;
				goto fail;
			}
			if (getgrouplist(res->pw_name, res->pw_gid, gids, &ngids) >= 0)
				break;
			if (ngids <= want)
				ngids = want * 2;
			if (ngids > PEER_MAX_GROUPS) {
				e = -E2BIG;
				goto fail;
			}
		}
		/* res points into buf: the user's groups are known, reuse buf. */
		for (i = 0; i < ngids; i++) {
			if ((e = peer_add_gid(s, gids[i], &buf, &buflen)) != 0)
				goto fail;
		}
	}
	if ((e = peer_add_gid(s, gid, &buf, &buflen)) != 0)
		goto fail;
	free(gids);
	free(buf);
	return 0;
fail_errno:
	e = -e;
fail:
	free(gids);
	free(buf);
	acl_subject_clear(s);
	return e;
}
