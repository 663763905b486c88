/* SPDX-License-Identifier: BSD-2-Clause */
/* tests/security/test_peer.c - principals of UNIX socket peers (SO_PEERCRED). */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "security/acl.h"
#include "security/peer.h"
#include "tests/security/check.h"

/* Tell whether the subject lists group name. */
static bool has_group(const struct acl_subject *s, const char *name)
{
	const char *p = s->groups;
	size_t i;

	for (i = 0; i < s->ngroups; i++) {
		if (strcmp(p, name) == 0)
			return true;
		p += strlen(p) + 1;
	}
	return false;
}

int main(void)
{
	struct acl_subject s;
	struct passwd *pw;
	struct group *gr;
	struct acl *acl;
	char want[64], rule[128], err[256];
	int sv[2], pp[2];
	uid_t uid;
	gid_t gid;
	pid_t pid;

	TEST_START("socketpair peer is uid:<getuid()>");
	acl_subject_init(&s);
	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_INT(peer_cred(sv[0], &uid, &gid, &pid), 0);
	CHECK_INT(uid, getuid());
	CHECK_INT(gid, getgid());
	CHECK_INT(pid, getpid());
	CHECK_INT(peer_subject(sv[0], &s), 0);
	snprintf(want, sizeof want, "uid:%u", (unsigned)getuid());
	CHECK_STR(s.principal, want);
	CHECK_INT(s.principal_len, strlen(want));
	CHECK_INT(s.kind, ACL_SUBJECT_UID);
	CHECK_INT(s.uid, getuid());

	TEST_START("user and group names come from NSS");
	pw = getpwuid(getuid());
	if (pw != NULL) {
		CHECK_STR(s.user, pw->pw_name);
		CHECK_INT(s.user_len, strlen(pw->pw_name));
	} else {
		CHECK_STR(s.user, "");
	}
	gr = getgrgid(getgid());
	if (gr != NULL)
		CHECK(has_group(&s, gr->gr_name));
	printf("peer: %s user '%s', %zu groups\n", s.principal, s.user, s.ngroups);

	TEST_START("an ACL rule on the peer's uid applies");
	acl = acl_new();
	snprintf(rule, sizeof rule, "acl uid:%u jobs/ use", (unsigned)getuid());
	CHECK_INT(acl_parse_line(acl, rule, err, sizeof err), 0);
	CHECK_INT(acl_parse_line(acl, "protect *", err, sizeof err), 0);
	CHECK(acl_allows(acl, &s, "jobs/1", 6, ACL_USE));
	CHECK(!acl_allows(acl, &s, "jobs/1", 6, ACL_ADMIN));
	CHECK(!acl_allows(acl, &s, "other", 5, ACL_USE));
	if (gr != NULL) {
		snprintf(rule, sizeof rule, "acl group:%s other use", gr->gr_name);
		CHECK_INT(acl_parse_line(acl, rule, err, sizeof err), 0);
		CHECK(acl_allows(acl, &s, "other", 5, ACL_USE));
	}
	acl_free(acl);

	TEST_START("the other end of the pair is the same user; repeated calls reset");
	CHECK_INT(peer_subject(sv[1], &s), 0);
	CHECK_STR(s.principal, want);
	close(sv[0]);
	close(sv[1]);

	TEST_START("not a socket: an error, and the subject is anonymous");
	CHECK_INT(pipe(pp), 0);
	CHECK_INT(peer_subject(pp[0], &s), -ENOTSOCK);
	CHECK_STR(s.principal, "anonymous");
	CHECK_INT(s.ngroups, 0);
	CHECK_INT(peer_cred(-1, NULL, NULL, NULL), -EBADF);
	close(pp[0]);
	close(pp[1]);
	acl_subject_clear(&s);
	return t_done("test_peer");
}
