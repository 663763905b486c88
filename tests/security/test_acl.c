/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/security/test_acl.c - ACL parsing and evaluation, quotas, subjects
 * (hidden prefixes: test_acl_hidden.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "security/acl.h"
#include "tests/security/acl_check.h"

static void test_parse_good(void)
{
	static const char *const lines[] = {
		"acl uid:1000 jobs/ use,inspect",
		"acl group:ops * admin,use,inspect",
		"acl cn:backup-host db/replica-* use",
		"acl anonymous * inspect",
		"acl * secret/ none",
		"  acl\tuser:alice   exact-name\tall  \n",
		"acl uid:0 x inspect,inspect",
		"protect secret/",
		"protect *",
		"quota connections uid:1000 10",
		"quota permits group:ops unlimited",
		"quota waiters * 100",
		"quota semaphores cn:backup-host 18446744073709551615",
		NULL,
	};
	struct acl *acl;

	TEST_START("parse good lines");
	acl = acl_of(lines);
	CHECK(acl != NULL);
	CHECK_INT(acl_count(acl), 13);
	CHECK_INT(acl_parse_line(acl, "", err, sizeof err), 0);
	CHECK_INT(acl_parse_line(acl, "   \t\n", err, sizeof err), 0);
	CHECK_INT(acl_parse_line(acl, "# acl this is a comment", err, sizeof err), 0);
	CHECK_INT(acl_parse_line(acl, "  #protect *", err, sizeof err), 0);
	CHECK_INT(acl_parse_line(acl, "listen unix:/run/semd.sock", err, sizeof err), -ENOENT);
	CHECK_INT(acl_parse_line(acl, "acls * * use", err, sizeof err), -ENOENT);
	CHECK_INT(acl_count(acl), 13);
	acl_free(acl);
	acl_free(NULL);
}

static void test_parse_bad(void)
{
	char line[400];

	TEST_START("parse bad lines: exact errors");
	bad_line("acl uid:1000 jobs/", "'acl' wants 3 fields (acl PRINCIPAL PATTERN RIGHTS), got 2");
	bad_line("acl", "'acl' wants 3 fields (acl PRINCIPAL PATTERN RIGHTS), got 0");
	bad_line("acl * x use extra", "'acl' wants 3 fields (acl PRINCIPAL PATTERN RIGHTS), got 4");
	bad_line("acl * x use a b c d", "'acl' wants 3 fields (acl PRINCIPAL PATTERN RIGHTS), got 6");
	bad_line("acl uid:abc jobs/ use", "invalid uid in 'uid:abc': want a decimal number");
	bad_line("acl uid:-1 jobs/ use", "invalid uid in 'uid:-1': want a decimal number");
	bad_line("acl uid:12x jobs/ use", "invalid uid in 'uid:12x': want a decimal number");
	bad_line("acl uid: jobs/ use", "invalid uid in 'uid:': want a decimal number");
	bad_line("acl uid:4294967295 jobs/ use", "uid out of range in 'uid:4294967295'");
	bad_line("acl uid:99999999999999999999999 jobs/ use",
	    "uid out of range in 'uid:99999999999999999999999'");
	bad_line("acl user: jobs/ use", "empty name in principal 'user:'");
	bad_line("acl group: jobs/ use", "empty name in principal 'group:'");
	bad_line("acl cn: jobs/ use", "empty name in principal 'cn:'");
	bad_line("acl bob jobs/ use", "unknown principal 'bob' (want uid:N, user:NAME, group:NAME, "
	    "cn:NAME, anonymous or *)");
	bad_line("acl UID:1 jobs/ use", "unknown principal 'UID:1' (want uid:N, user:NAME, group:NAME, "
	    "cn:NAME, anonymous or *)");
	bad_line("acl * a*b use", "'*' is allowed only at the end of a pattern: 'a*b'");
	bad_line("acl * ** use", "'*' is allowed only at the end of a pattern: '**'");
	bad_line("acl * *jobs use", "'*' is allowed only at the end of a pattern: '*jobs'");
	bad_line("acl * jobs/\x01 use", "control character in pattern 'jobs/\x01'");
	bad_line("acl * x read", "unknown right 'read' (want inspect, use, create, admin, all or none)");
	bad_line("acl * x use,Admin", "unknown right 'Admin' (want inspect, use, create, admin, all or none)");
	bad_line("acl * x use,,admin", "empty right in 'use,,admin'");
	bad_line("acl * x use,", "empty right in 'use,'");
	bad_line("acl * x ,use", "empty right in ',use'");
	bad_line("acl * x none,use", "'none' cannot be combined with other rights: 'none,use'");
	bad_line("protect", "'protect' wants 1 field (protect PATTERN), got 0");
	bad_line("protect a b", "'protect' wants 1 field (protect PATTERN), got 2");
	bad_line("protect a*b", "'*' is allowed only at the end of a pattern: 'a*b'");
	bad_line("quota permits uid:1", "'quota' wants 3 fields (quota KIND PRINCIPAL N), got 2");
	bad_line("quota sockets uid:1 5", "unknown quota 'sockets' (want connections, sessions, "
	    "permits, waiters, semaphores, watches or output)");
	bad_line("quota watches uid:1 5K", "invalid quota limit '5K' (want a number or 'unlimited')");
	bad_line("quota output uid:1 5T", "invalid quota limit '5T' (want a number of bytes, "
	    "64K, 64M or 1G, or 'unlimited')");
	bad_line("quota output uid:1 5MB", "invalid quota limit '5MB' (want a number of bytes, "
	    "64K, 64M or 1G, or 'unlimited')");
	bad_line("quota output uid:1 99999999999999G", "quota limit out of range: '99999999999999G'");
	bad_line("admin", "'admin' wants 1 field (admin PRINCIPAL), got 0");
	bad_line("admin uid:1 uid:2", "'admin' wants 1 field (admin PRINCIPAL), got 2");
	bad_line("admin users:x", "unknown principal 'users:x' (want uid:N, user:NAME, "
	    "group:NAME, cn:NAME, anonymous or *)");
	bad_line("acl cn:a\\x2 * use", "bad escape in principal 'cn:a\\x2' (write a space "
	    "as \\x20, a backslash as \\\\)");
	bad_line("acl cn:a\\qb * use", "bad escape in principal 'cn:a\\qb' (write a space "
	    "as \\x20, a backslash as \\\\)");
	bad_line("quota permits uid:1 0", "quota limit must be at least 1 (or 'unlimited'): '0'");
	bad_line("quota permits uid:1 x", "invalid quota limit 'x' (want a number or 'unlimited')");
	bad_line("quota permits uid:1 -5", "invalid quota limit '-5' (want a number or 'unlimited')");
	bad_line("quota permits uid:1 5k", "invalid quota limit '5k' (want a number or 'unlimited')");
	bad_line("quota permits uid:1 18446744073709551616",
	    "quota limit out of range: '18446744073709551616'");
	bad_line("quota permits nobody 5", "unknown principal 'nobody' (want uid:N, user:NAME, "
	    "group:NAME, cn:NAME, anonymous or *)");

	/* a 256-byte pattern is one too long; 255 is fine */
	memset(line, 0, sizeof line);
	memcpy(line, "acl * ", 6);
	memset(line + 6, 'p', 256);
	memcpy(line + 6 + 256, " use", 4);
	bad_line(line, "pattern longer than 255 bytes: 'pppppppppppppppppppppppppppppppppppppppp...'");
	memmove(line + 6 + 255, line + 6 + 256, 5);
	{
		struct acl *acl = acl_new();

		CHECK_INT(acl_parse_line(acl, line, err, sizeof err), 0);
		acl_free(acl);
	}
	/* over-long lines are refused, not truncated into something else */
	{
		char big[1100];

		memset(big, ' ', sizeof big - 1);
		big[sizeof big - 1] = '\0';
		memcpy(big, "acl * x use", 11);
		bad_line(big, "line longer than 1023 bytes");
	}
	/* a small err buffer is truncated, never overrun */
	{
		struct acl *acl = acl_new();
		char small[8];

		memset(small, 'Z', sizeof small);
		CHECK_INT(acl_parse_line(acl, "acl bob x use", small, 6), -EINVAL);
		CHECK_STR(small, "unkno");
		CHECK(small[6] == 'Z');
		CHECK_INT(acl_parse_line(acl, "acl bob x use", NULL, 0), -EINVAL);
		acl_free(acl);
	}
}

static void test_open_and_first_match(void)
{
	static const char *const lines[] = {
		"acl uid:1000 jobs/ inspect",
		"acl uid:1000 jobs/ use,inspect",	/* never reached for uid 1000 */
		"acl * jobs/ use",
		NULL,
	};
	struct acl_subject s;
	struct acl *acl, *open = acl_new();

	TEST_START("empty ACL: the default rules; first match wins");
	acl_subject_init(&s);
	/* anonymous: use only */
	CHECK(may(open, &s, "anything", ACL_USE));
	CHECK(!may(open, &s, "anything", ACL_INSPECT));
	CHECK(!may(open, &s, "anything", ACL_CREATE));
	CHECK(!may(NULL, &s, "anything", ACL_ADMIN));
	CHECK_INT(acl_rights(NULL, &s, "x", 1), ACL_USE);
	/* a local user: inspect, use, create; admin only for administrators */
	subject_uid(&s, 1000, "alice", NULL);
	CHECK_INT(acl_rights(open, &s, "x", 1), ACL_INSPECT | ACL_USE | ACL_CREATE);
	CHECK(!may(open, &s, "x", ACL_ADMIN));
	s.admin = true;
	CHECK_INT(acl_rights(open, &s, "x", 1), ACL_RIGHTS_ALL);
	s.admin = false;
	subject_cn(&s, "web1");
	CHECK_INT(acl_rights(NULL, &s, "x", 1), ACL_INSPECT | ACL_USE | ACL_CREATE);
	CHECK_INT(acl_count(open), 0);
	CHECK(acl_defaults_only(open));
	CHECK(acl_defaults_only(NULL));

	acl = acl_of(lines);
	subject_uid(&s, 1000, "alice", NULL);
	CHECK(may(acl, &s, "jobs/a", ACL_INSPECT));
	CHECK(!may(acl, &s, "jobs/a", ACL_USE));	/* the first rule decided */
	CHECK(!may(acl, &s, "jobs/a", ACL_ADMIN));
	CHECK(may(acl, &s, "other", ACL_CREATE));	/* no rule: the defaults */
	CHECK(!may(acl, &s, "other", ACL_ADMIN));
	CHECK(!acl_defaults_only(acl));
	subject_uid(&s, 1001, "bob", NULL);
	CHECK(may(acl, &s, "jobs/a", ACL_USE));		/* third rule */
	CHECK(!may(acl, &s, "jobs/a", ACL_INSPECT));
	acl_subject_clear(&s);
	acl_free(acl);
	acl_free(open);
}

static void test_protected(void)
{
	static const char *const lines[] = {
		"acl group:ops secret/ use,inspect",
		"acl * secret/public-* inspect",
		"protect secret/",
		"protect db/replica-*",
		"protect exact",
		NULL,
	};
	static const char *const all_deny[] = {
		"acl anonymous pub/ inspect",
		"protect *",
		NULL,
	};
	static const char *const ops[] = { "staff", "ops", NULL };
	struct acl_subject s;
	struct acl *acl;

	TEST_START("protected prefixes are default-deny");
	acl_subject_init(&s);
	acl = acl_of(lines);
	CHECK(!may(acl, &s, "secret/x", ACL_INSPECT));
	CHECK(!may(acl, &s, "secret/", ACL_INSPECT));
	CHECK(may(acl, &s, "secret", ACL_USE));	/* "secret" is not under "secret/" */
	CHECK(!may(acl, &s, "secret", ACL_INSPECT));	/* anonymous: use only */
	CHECK(may(acl, &s, "secretive", ACL_USE));
	CHECK(may(acl, &s, "jobs/1", ACL_USE));
	CHECK(!may(acl, &s, "db/replica-1", ACL_USE));
	CHECK(!may(acl, &s, "db/replica-", ACL_USE));
	CHECK(may(acl, &s, "db/replica", ACL_USE));
	CHECK(may(acl, &s, "db/primary", ACL_USE));
	CHECK(!may(acl, &s, "exact", ACL_INSPECT));
	CHECK(may(acl, &s, "exact2", ACL_USE));
	CHECK(may(acl, &s, "exac", ACL_USE));
	CHECK(may(acl, &s, "secret/public-x", ACL_INSPECT));
	CHECK(!may(acl, &s, "secret/public-x", ACL_USE));
	subject_uid(&s, 2000, "carol", ops);
	CHECK(may(acl, &s, "secret/x", ACL_USE));
	CHECK(may(acl, &s, "secret/x", ACL_INSPECT));
	CHECK(!may(acl, &s, "secret/x", ACL_ADMIN));
	acl_free(acl);

	TEST_START("protect * makes everything default-deny");
	acl = acl_of(all_deny);
	acl_subject_clear(&s);
	CHECK(may(acl, &s, "pub/x", ACL_INSPECT));
	CHECK(!may(acl, &s, "pub/x", ACL_USE));
	CHECK(!may(acl, &s, "jobs/x", ACL_INSPECT));
	subject_uid(&s, 0, "root", NULL);
	CHECK(!may(acl, &s, "jobs/x", ACL_INSPECT));	/* root is not special */
	CHECK(!may(acl, &s, "pub/x", ACL_INSPECT));	/* uid 0 is not anonymous */
	acl_subject_clear(&s);
	acl_free(acl);
}

static void test_principals(void)
{
	static const char *const lines[] = {
		"acl cn:backup-host db/replica-* use",
		"acl user:alice a/ admin",
		"acl uid:1000 u/ admin",
		"acl group:wheel g/ admin",
		"acl anonymous anon/ admin",
		"acl * any/ admin",
		"protect *",
		NULL,
	};
	static const char *const wheel[] = { "users", "wheel", NULL };
	static const char *const wheelish[] = { "whee", "wheels", "wheel2", NULL };
	struct acl_subject s;
	struct acl *acl;

	TEST_START("principal kinds and the prefix glob");
	acl_subject_init(&s);
	acl = acl_of(lines);

	subject_cn(&s, "backup-host");
	CHECK_STR(s.principal, "cn:backup-host");
	CHECK(may(acl, &s, "db/replica-1", ACL_USE));
	CHECK(may(acl, &s, "db/replica-", ACL_USE));
	CHECK(!may(acl, &s, "db/replica", ACL_USE));
	CHECK(!may(acl, &s, "db/primary", ACL_USE));
	CHECK(!may(acl, &s, "db/replica-1", ACL_ADMIN));
	CHECK(may(acl, &s, "any/x", ACL_ADMIN));
	CHECK(!may(acl, &s, "anon/x", ACL_ADMIN));
	subject_cn(&s, "backup-host2");
	CHECK(!may(acl, &s, "db/replica-1", ACL_USE));
	subject_cn(&s, "backup-hos");
	CHECK(!may(acl, &s, "db/replica-1", ACL_USE));
	subject_cn(&s, "alice");		/* a cn is not a user name */
	CHECK(!may(acl, &s, "a/x", ACL_ADMIN));

	subject_uid(&s, 1000, "alice", NULL);
	CHECK_STR(s.principal, "uid:1000");
	CHECK(may(acl, &s, "a/x", ACL_ADMIN));
	CHECK(may(acl, &s, "u/x", ACL_ADMIN));
	CHECK(!may(acl, &s, "g/x", ACL_ADMIN));
	CHECK(!may(acl, &s, "db/replica-1", ACL_USE));	/* a user is not a cn */
	subject_uid(&s, 1001, "alicia", NULL);
	CHECK(!may(acl, &s, "a/x", ACL_ADMIN));
	CHECK(!may(acl, &s, "u/x", ACL_ADMIN));
	subject_uid(&s, 1002, NULL, NULL);	/* no passwd entry */
	CHECK_STR(s.principal, "uid:1002");
	CHECK(!may(acl, &s, "a/x", ACL_ADMIN));

	TEST_START("group match uses the subject's group list");
	subject_uid(&s, 1003, "dave", wheel);
	CHECK_INT(s.ngroups, 2);
	CHECK(may(acl, &s, "g/x", ACL_ADMIN));
	subject_uid(&s, 1003, "dave", wheelish);
	CHECK(!may(acl, &s, "g/x", ACL_ADMIN));
	CHECK_INT(acl_subject_add_group(&s, "wheel"), 0);
	CHECK(may(acl, &s, "g/x", ACL_ADMIN));
	CHECK_INT(acl_subject_add_group(&s, "wheel"), 0);	/* duplicate skipped */
	CHECK_INT(s.ngroups, 4);
	CHECK_INT(acl_subject_add_group(&s, ""), -EINVAL);

	TEST_START("anonymous and *");
	acl_subject_clear(&s);
	CHECK_STR(s.principal, "anonymous");
	CHECK(may(acl, &s, "anon/x", ACL_ADMIN));
	CHECK(may(acl, &s, "any/x", ACL_ADMIN));
	CHECK(!may(acl, &s, "g/x", ACL_INSPECT));
	acl_subject_clear(&s);
	acl_free(acl);
}

static void test_rights(void)
{
	static const char *const lines[] = {
		"acl uid:1 * all",
		"acl uid:2 * none",
		"acl uid:3 * admin",
		"acl uid:4 * inspect,use",
		"acl uid:5 * use,admin,inspect",
		"acl uid:6 * create",
		NULL,
	};
	static const unsigned want[7] = {
		0, ACL_RIGHTS_ALL, 0, ACL_ADMIN | ACL_CREATE, ACL_INSPECT | ACL_USE,
		ACL_RIGHTS_ALL, ACL_CREATE,
	};
	static const enum acl_right rights[4] = {
		ACL_INSPECT, ACL_USE, ACL_CREATE, ACL_ADMIN,
	};
	struct acl_subject s;
	struct acl *acl;
	uid_t u;
	int i;

	TEST_START("rights sets");
	acl_subject_init(&s);
	acl = acl_of(lines);
	for (u = 1; u <= 6; u++) {
		subject_uid(&s, u, NULL, NULL);
		for (i = 0; i < 4; i++) {
			bool w = (want[u] & rights[i]) != 0;

			if (may(acl, &s, "x", rights[i]) != w) {
				t_fail++;
				fprintf(stderr, "FAIL [%s] uid %u right %s: want %d\n", t_name,
				    (unsigned)u, acl_right_name(rights[i]), w);
			} else {
				t_pass++;
			}
		}
	}
	CHECK_STR(acl_right_name(ACL_INSPECT), "inspect");
	CHECK_STR(acl_right_name(ACL_USE), "use");
	CHECK_STR(acl_right_name(ACL_CREATE), "create");
	CHECK_STR(acl_right_name(ACL_ADMIN), "admin");
	acl_subject_clear(&s);
	acl_free(acl);
}

static void test_admins(void)
{
	static const char *const lines[] = {
		"admin group:ops",
		"admin cn:ci\\x20runner",
		"acl * locked/ use",
		NULL,
	};
	static const char *const ops[] = { "ops", NULL };
	struct acl_subject s;
	struct acl *acl, *other;

	TEST_START("administrators: uid 0, the daemon's uid, admin lines");
	acl_subject_init(&s);
	acl = acl_of(lines);
	CHECK(!acl_is_admin(acl, &s, 999));		/* anonymous */
	subject_uid(&s, 0, "root", NULL);
	CHECK(acl_is_admin(acl, &s, 999));
	CHECK(acl_is_admin(NULL, &s, 999));
	subject_uid(&s, 999, "semd", NULL);
	CHECK(acl_is_admin(acl, &s, 999));
	CHECK(!acl_is_admin(acl, &s, 998));
	subject_uid(&s, 1000, "alice", ops);
	CHECK(acl_is_admin(acl, &s, 999));
	subject_uid(&s, 1001, "bob", NULL);
	CHECK(!acl_is_admin(acl, &s, 999));
	subject_cn(&s, "ci\\x20runner");
	CHECK(acl_is_admin(acl, &s, 999));
	subject_cn(&s, "ci-runner");
	CHECK(!acl_is_admin(acl, &s, 999));
	CHECK(acl_needs_names(acl));
	CHECK_INT(acl_count(acl), 3);
	/* operator rules come first, for administrators too */
	subject_uid(&s, 0, "root", NULL);
	s.admin = true;
	CHECK_INT(acl_rights(acl, &s, "locked/x", 8), ACL_USE);
	CHECK_INT(acl_rights(acl, &s, "free", 4), ACL_RIGHTS_ALL);
	acl_free(acl);
	acl = acl_new();
	CHECK_INT(acl_add_admin(acl, "uid:5", err, sizeof err), 0);
	CHECK(!acl_needs_names(acl));
	CHECK_INT(acl_add_admin(acl, "uid:5 uid:6", err, sizeof err), -EINVAL);
	CHECK_INT(acl_parse_line(acl, "quota permits user:x 3", err, sizeof err), 0);
	CHECK(acl_needs_names(acl));
	CHECK(acl_serial(acl) != 0);
	other = acl_new();
	CHECK(acl_serial(other) != acl_serial(acl));
	acl_free(other);
	acl_subject_clear(&s);
	acl_free(acl);
}

static void test_cn_escape(void)
{
	static const unsigned char raw[] = { 'B', 'u', 'i', 'l', 'd', ' ', 'F', 'a',
	    'r', 'm', '\\', 0xc3, 0xbc, 0x01 };
	char out[ACL_NAME_MAX + 1], big[300];
	struct acl_subject s;
	struct acl *acl;

	TEST_START("certificate names become principals without losing a byte");
	CHECK_INT(acl_name_escape(raw, sizeof raw, out, sizeof out), 27);
	CHECK_STR(out, "Build\\x20Farm\\\\\\xc3\\xbc\\x01");
	CHECK_INT(acl_name_escape((const unsigned char *)"web-1.example", 13, out,
	    sizeof out), 13);
	CHECK_STR(out, "web-1.example");
	CHECK_INT(acl_name_escape((const unsigned char *)"ab", 2, out, 2), -ENAMETOOLONG);
	memset(big, ' ', sizeof big);
	/* 64 spaces escape to 256 bytes: over ACL_NAME_MAX */
	CHECK_INT(acl_name_escape((unsigned char *)big, 64, out, sizeof out), -ENAMETOOLONG);
	CHECK_INT(acl_name_escape((unsigned char *)big, 63, out, sizeof out), 252);
	/* a rule names it escaped; \X20 and \x20 are the same */
	acl = acl_new();
	CHECK_INT(acl_parse_line(acl, "acl cn:Build\\X20Farm x/ none", err, sizeof err), 0);
	acl_subject_init(&s);
	subject_cn(&s, "Build\\x20Farm");
	CHECK(!may(acl, &s, "x/1", ACL_USE));
	CHECK(may(acl, &s, "y", ACL_USE));
	subject_cn(&s, "Build");
	CHECK(may(acl, &s, "x/1", ACL_USE));
	acl_subject_clear(&s);
	acl_free(acl);
}

static void test_names(void)
{
	/* '*' inside a name: an ordinary byte, never a wildcard */
	static const char *const star_used[] = { "jobs/*", "jobs/x*", "*", "sta*", NULL };
	static const char *const star_denied[] = { "jobs/x", "star*", "stars", NULL };
	char long_name[256], rule[300];
	struct acl_subject s;
	struct acl *acl;

	TEST_START("name edge cases");
	acl_subject_init(&s);
	subject_uid(&s, 1000, "alice", NULL);

	/* empty name: only '*' covers it */
	acl = acl_new();
	CHECK_INT(acl_parse_line(acl, "acl * jobs/ none", err, sizeof err), 0);
	CHECK(acl_allows(acl, &s, "", 0, ACL_USE));
	CHECK_INT(acl_parse_line(acl, "protect *", err, sizeof err), 0);
	CHECK(!acl_allows(acl, &s, "", 0, ACL_USE));
	CHECK(!acl_allows(acl, &s, NULL, 0, ACL_USE));
	acl_free(acl);

	/* 255 bytes: exact and prefix rules match on the full length */
	memset(long_name, 'n', 255);
	long_name[255] = '\0';
	snprintf(rule, sizeof rule, "acl * %s none", long_name);
	acl = acl_new();
	CHECK_INT(acl_parse_line(acl, rule, err, sizeof err), 0);
	CHECK(!acl_allows(acl, &s, long_name, 255, ACL_INSPECT));
	CHECK(acl_allows(acl, &s, long_name, 254, ACL_INSPECT));
	long_name[254] = 'm';
	CHECK(acl_allows(acl, &s, long_name, 255, ACL_INSPECT));
	long_name[254] = 'n';
	acl_free(acl);
	acl = acl_new();
	snprintf(rule, sizeof rule, "acl * %.254s* none", long_name);
	CHECK_INT(acl_parse_line(acl, rule, err, sizeof err), 0);
	CHECK(!acl_allows(acl, &s, long_name, 255, ACL_INSPECT));
	CHECK(!acl_allows(acl, &s, long_name, 254, ACL_INSPECT));
	CHECK(acl_allows(acl, &s, long_name, 253, ACL_INSPECT));
	acl_free(acl);

	/* a '*' inside a name is an ordinary byte, never a wildcard */
	acl = acl_new();
	CHECK_INT(acl_parse_line(acl, "acl * jobs/x none", err, sizeof err), 0);
	CHECK_INT(acl_parse_line(acl, "acl * star* none", err, sizeof err), 0);
	may_only(acl, &s, ACL_USE, star_used, star_denied);
	acl_free(acl);

	/* the length is the truth: the name need not be NUL-terminated */
	acl = acl_new();
	CHECK_INT(acl_parse_line(acl, "acl * jobs/abc none", err, sizeof err), 0);
	CHECK_INT(acl_parse_line(acl, "acl * q/ none", err, sizeof err), 0);
	CHECK(acl_allows(acl, &s, "jobs/abcdef", 7, ACL_USE));
	CHECK(!acl_allows(acl, &s, "jobs/abcdef", 8, ACL_USE));
	CHECK(acl_allows(acl, &s, "q/", 1, ACL_USE));
	CHECK(!acl_allows(acl, &s, "q/zzz", 2, ACL_USE));
	/* bytes after a NUL inside the name are compared too */
	CHECK(acl_allows(acl, &s, "jobs/ab\0", 8, ACL_USE));
	acl_free(acl);
	acl_subject_clear(&s);
}

static void test_quotas(void)
{
	static const char *const lines[] = {
		"quota connections uid:1000 5",
		"quota connections group:ops unlimited",
		"quota connections * 100",
		"quota permits cn:backup-host 7",
		"quota semaphores anonymous 2",
		"quota watches anonymous 3",
		"quota output anonymous 2M",
		"quota output cn:backup-host 1000",
		NULL,
	};
	static const char *const ops[] = { "ops", NULL };
	struct acl_subject s;
	struct acl *acl;

	TEST_START("quotas: first match per kind, 0 = unlimited");
	acl_subject_init(&s);
	acl = acl_of(lines);
	subject_uid(&s, 1000, "alice", ops);
	CHECK_INT(acl_quota(acl, &s, ACL_QUOTA_CONNECTIONS), 5);
	/* no line: the default, none for an administrator */
	CHECK_INT(acl_quota(acl, &s, ACL_QUOTA_PERMITS), ACL_DEFAULT_PERMITS);
	CHECK_INT(acl_quota(acl, &s, ACL_QUOTA_WAITERS), ACL_DEFAULT_WAITERS);
	CHECK_INT(acl_quota(acl, &s, ACL_QUOTA_SESSIONS), ACL_DEFAULT_SESSIONS);
	s.admin = true;
	CHECK_INT(acl_quota(acl, &s, ACL_QUOTA_PERMITS), 0);
	CHECK_INT(acl_quota(acl, &s, ACL_QUOTA_CONNECTIONS), 5);	/* a line */
	s.admin = false;
	subject_uid(&s, 1001, "bob", ops);
	CHECK_INT(acl_quota(acl, &s, ACL_QUOTA_CONNECTIONS), 0);
	subject_uid(&s, 1002, "eve", NULL);
	CHECK_INT(acl_quota(acl, &s, ACL_QUOTA_CONNECTIONS), 100);
	subject_cn(&s, "backup-host");
	CHECK_INT(acl_quota(acl, &s, ACL_QUOTA_PERMITS), 7);
	CHECK_INT(acl_quota(acl, &s, ACL_QUOTA_SEMAPHORES), ACL_DEFAULT_SEMAPHORES);
	CHECK_INT(acl_quota(acl, &s, ACL_QUOTA_OUTPUT), 1000);
	acl_subject_clear(&s);
	CHECK_INT(acl_quota(acl, &s, ACL_QUOTA_SEMAPHORES), 2);
	CHECK_INT(acl_quota(acl, &s, ACL_QUOTA_CONNECTIONS), 100);
	CHECK_INT(acl_quota(acl, &s, ACL_QUOTA_WATCHES), 3);
	CHECK_INT(acl_quota(acl, &s, ACL_QUOTA_OUTPUT), 2 << 20);
	CHECK_INT(acl_quota(NULL, &s, ACL_QUOTA_CONNECTIONS), ACL_DEFAULT_CONNECTIONS);
	CHECK_INT(acl_quota(NULL, &s, ACL_QUOTA_WATCHES), ACL_DEFAULT_WATCHES);
	CHECK_INT(acl_quota(NULL, &s, ACL_QUOTA_OUTPUT), ACL_DEFAULT_OUTPUT);
	CHECK_STR(acl_quota_name(ACL_QUOTA_SESSIONS), "sessions");
	CHECK_STR(acl_quota_name(ACL_QUOTA_WATCHES), "watches");
	CHECK_STR(acl_quota_name(ACL_QUOTA_OUTPUT), "output");
	acl_free(acl);
}

static void test_subject(void)
{
	char name[300];
	struct acl_subject s;

	TEST_START("subject setters");
	acl_subject_init(&s);
	CHECK_INT(s.kind, ACL_SUBJECT_ANONYMOUS);
	CHECK_INT(s.principal_len, 9);
	memset(name, 'c', sizeof name);
	CHECK_INT(acl_subject_set_cn(&s, name, 256), -ENAMETOOLONG);
	CHECK_INT(acl_subject_set_cn(&s, name, 255), 0);
	CHECK_INT(s.principal_len, 258);
	CHECK_INT(acl_subject_set_cn(&s, "a\0b", 3), -EINVAL);
	CHECK_INT(acl_subject_set_cn(&s, "", 0), -EINVAL);
	CHECK_INT(acl_subject_set_uid(&s, 4294967294u, "x"), 0);
	CHECK_STR(s.principal, "uid:4294967294");
	CHECK_INT(s.kind, ACL_SUBJECT_UID);
	CHECK_INT(acl_subject_add_group(&s, "g1"), 0);
	acl_subject_clear(&s);
	CHECK_INT(s.ngroups, 0);
	CHECK(s.groups == NULL);
	acl_subject_clear(&s);
	acl_subject_clear(NULL);
}

/* Time acl_allows on a realistic rule set (prints; bounds only the absurd). */
static void test_speed(void)
{
	static const char *const groups[] = { "users", "dev", "ops", NULL };
	struct acl_subject s;
	struct acl *acl = acl_new();
	struct timespec t0, t1;
	char line[128];
	double ns;
	long i, allowed = 0, n = 2000000;
	int r;

	TEST_START("acl_allows cost with 50 rules");
	for (r = 0; r < 48; r++) {
		snprintf(line, sizeof line, "acl %s:%d team%d/ use,inspect",
		    r % 3 == 0 ? "uid" : r % 3 == 1 ? "group:g" : "cn:host", 2000 + r, r);
		CHECK_INT(acl_parse_line(acl, line, err, sizeof err), 0);
	}
	CHECK_INT(acl_parse_line(acl, "acl group:ops jobs/ use,inspect", err, sizeof err), 0);
	CHECK_INT(acl_parse_line(acl, "protect *", err, sizeof err), 0);
	acl_subject_init(&s);
	subject_uid(&s, 1000, "alice", groups);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++)
		allowed += acl_allows(acl, &s, "jobs/build-42", 13, ACL_USE);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)n;
	printf("acl_allows: %.1f ns per check (50 rules, last rule matches)\n", ns);
	CHECK_INT(allowed, n);
	CHECK(ns < 5000.0);
	acl_subject_clear(&s);
	acl_free(acl);
}

/* Every name's rights are the uniform ones when acl_rights_uniform() says so. */
static void check_uniform(const struct acl *acl, const struct acl_subject *s,
    bool want, unsigned want_rights)
{
	static const char *const names[] = { "a", "jobs/a", "jobs/", "secret/x",
	    "secret/public-1", "db/replica-3", "x", NULL };
	const char *const *n;
	unsigned rights = 0xdead;

	CHECK_INT(acl_rights_uniform(acl, s, &rights), want);
	if (!want)
		return;
	CHECK_INT(rights, want_rights);
	for (n = names; *n != NULL; n++)
		CHECK_INT(acl_rights(acl, s, *n, strlen(*n)), rights);
}

static void test_uniform(void)
{
	static const char *const everyone[] = { "acl anonymous * all", NULL };
	static const char *const split[] = {
		"acl uid:1000 * use",
		"acl uid:1001 jobs/ inspect",
		"acl uid:1001 * use,create",
		"acl group:ops * all",
		NULL,
	};
	static const char *const guarded[] = { "protect secret/", NULL };
	static const char *const ops[] = { "ops", NULL };
	struct acl_subject s;
	struct acl *a;

	TEST_START("rights the same on every name: no name is looked at");
	acl_subject_init(&s);
	check_uniform(NULL, &s, true, ACL_USE);
	a = acl_of(everyone);
	check_uniform(a, &s, true, ACL_RIGHTS_ALL);
	subject_uid(&s, 1000, "alice", NULL);
	check_uniform(a, &s, true, ACL_INSPECT | ACL_USE | ACL_CREATE);
	acl_free(a);

	a = acl_of(split);
	check_uniform(a, &s, true, ACL_USE);		/* its first rule: "*" */
	subject_uid(&s, 1001, "bob", NULL);
	check_uniform(a, &s, false, 0);			/* jobs/ first */
	subject_uid(&s, 1002, "carol", ops);
	check_uniform(a, &s, true, ACL_RIGHTS_ALL);	/* by its group */
	subject_uid(&s, 1003, "dave", NULL);
	check_uniform(a, &s, true, ACL_INSPECT | ACL_USE | ACL_CREATE);
	acl_free(a);

	a = acl_of(guarded);
	check_uniform(a, &s, false, 0);			/* secret/ has none */
	acl_free(a);
	acl_subject_clear(&s);
}

int main(void)
{
	test_parse_good();
	test_parse_bad();
	test_open_and_first_match();
	test_protected();
	test_principals();
	test_rights();
	test_admins();
	test_uniform();
	test_cn_escape();
	test_names();
	test_quotas();
	test_subject();
	test_speed();
	return t_done("test_acl");
}
