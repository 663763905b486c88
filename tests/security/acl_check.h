/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/security/acl_check.h - what the ACL's test programs (test_acl.c,
 * test_acl_hidden.c) share: an ACL made of lines, subjects, and checks of
 * what a subject may do.
 */
#ifndef SEMD_TESTS_SECURITY_ACL_CHECK_H
#define SEMD_TESTS_SECURITY_ACL_CHECK_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "security/acl.h"
#include "tests/security/check.h"

static char err[512];

/* Parse lines into a new ACL; NULL (and a failure) if any does not parse. */
static inline struct acl *acl_of(const char *const *lines)
{
	struct acl *acl = acl_new();
	int rc;

	for (; *lines != NULL; lines++) {
		rc = acl_parse_line(acl, *lines, err, sizeof err);
		if (rc != 0) {
			fprintf(stderr, "FAIL [%s] cannot parse '%s': %d %s\n", t_name, *lines, rc, err);
			t_fail++;
			acl_free(acl);
			return NULL;
		}
	}
	return acl;
}

/* A subject for uid with an optional user name and groups (NULL-terminated). */
static inline void subject_uid(struct acl_subject *s, uid_t uid, const char *user, const char *const *groups)
{
	acl_subject_clear(s);
	CHECK_INT(acl_subject_set_uid(s, uid, user), 0);
	for (; groups != NULL && *groups != NULL; groups++)
		CHECK_INT(acl_subject_add_group(s, *groups), 0);
}

/* A subject cn:NAME. */
static inline void subject_cn(struct acl_subject *s, const char *cn)
{
	acl_subject_clear(s);
	CHECK_INT(acl_subject_set_cn(s, cn, strlen(cn)), 0);
}

/* Shorthand: may s do right on the NUL-terminated name? */
static inline bool may(const struct acl *acl, const struct acl_subject *s, const char *name, enum acl_right r)
{
	return acl_allows(acl, s, name, strlen(name), r);
}

/* Expect s to have right r on every name of yes and on none of no (NULL-terminated). */
static inline void may_only(const struct acl *acl, const struct acl_subject *s, enum acl_right r,
    const char *const *yes, const char *const *no)
{
	for (; *yes != NULL; yes++)
		t_check(may(acl, s, *yes, r), __FILE__, __LINE__, "may(%s, \"%s\", %d) is false",
		    s->principal, *yes, (int)r);
	for (; *no != NULL; no++)
		t_check(!may(acl, s, *no, r), __FILE__, __LINE__, "may(%s, \"%s\", %d) is true",
		    s->principal, *no, (int)r);
}

/* Expect line to be refused with exactly the message want. */
static inline void bad_line(const char *line, const char *want)
{
	struct acl *acl = acl_new();

	err[0] = '\0';
	CHECK_INT(acl_parse_line(acl, line, err, sizeof err), -EINVAL);
	CHECK_STR(err, want);
	CHECK_INT(acl_count(acl), 0);
	acl_free(acl);
}

#endif
