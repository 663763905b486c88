/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/security/test_acl_hidden.c - the ACL's hidden prefixes: the
 * beginning of a name under which every name is hidden from a subject, so
 * that List steps over the whole run at once; by cases, and against a
 * model on random rules and names.
 */
#include <stdio.h>
#include <string.h>

#include "security/acl.h"
#include "tests/security/acl_check.h"

/* Shorthand: acl_hidden_prefix for inspect on a NUL-terminated name. */
static size_t hidden(const struct acl *acl, const struct acl_subject *s, const char *name)
{
	return acl_hidden_prefix(acl, s, name, strlen(name), ACL_INSPECT);
}

static void test_hidden_prefix(void)
{
	static const char *const team[] = { "protect team/", "protect db/replica-*", NULL };
	static const char *const pub[] = {
		"acl uid:1000 team/public/ inspect", "protect team/", NULL,
	};
	static const char *const star[] = {
		"acl * team/a1/x inspect", "protect team/", NULL,
	};
	static const char *const exact[] = {
		"acl uid:1000 team/a inspect", "protect team/", NULL,
	};
	static const char *const glob[] = {
		"acl uid:1000 db/replica-3* inspect", "protect db/replica-*", NULL,
	};
	static const char *const shadow[] = {
		"acl uid:1000 team/secret/ none", "acl uid:1000 team/ inspect",
		"acl * * inspect", "protect team/", NULL,
	};
	static const char *const all[] = {
		"acl uid:1000 jobs/ inspect", "protect *", NULL,
	};
	static const char *const grp[] = {
		"acl group:ops team/ inspect", "acl uid:1000 team/x/ use", "protect team/", NULL,
	};
	static const char *const ops[] = { "ops", NULL };
	struct acl_subject s, other;
	/* Under a rule set, the prefix of a name hidden from alice (s) or bob (other). */
	const struct hidden_want {
		const char *const *rules;
		const struct acl_subject *who;
		const char *name;
		size_t len;
	} want[] = {
		/* A protected prefix with no rule: the whole prefix, glob or '/'. */
		{ team, &s, "team/a1", 5 },
		{ team, &s, "team/public/p1", 5 },
		{ team, &s, "team/", 5 },
		{ team, &s, "db/replica-1", 11 },
		{ team, &s, "alpha", 0 },
		{ team, &s, "db/main", 0 },
		/* An acl rule allowing team/public/: never all of team/. */
		{ pub, &s, "team/a1", 6 },		/* team/a... */
		{ pub, &s, "team/pz", 7 },		/* team/pz... */
		{ pub, &s, "team/pub", 0 },		/* team/public/ under it */
		{ pub, &s, "team/", 0 },
		/* the rule is uid:1000's: anyone else loses all of team/ */
		{ pub, &other, "team/pub", 5 },
		/* A '*' principal rule counts for everyone; exact names under it. */
		{ star, &s, "team/a1", 0 },
		{ star, &s, "team/a1/", 0 },
		{ star, &s, "team/a1/y", 9 },
		{ star, &s, "team/a1/xz", 10 },
		{ star, &s, "team/b", 6 },
		{ star, &other, "team/a", 0 },
		/* An exact-name rule: no prefix of that name is a hidden subtree. */
		{ exact, &s, "team/", 0 },
		{ exact, &s, "team/ab", 7 },		/* longer than team/a */
		{ exact, &s, "team/b", 6 },
		{ exact, &other, "team/a", 5 },
		/* Globs, granting and protecting. */
		{ glob, &s, "db/replica-1", 12 },
		{ glob, &s, "db/replica-", 0 },
		{ glob, &s, "db/replica-4", 12 },
		{ glob, &other, "db/replica-3", 11 },
		/* A denying rule first shadows the later grants, even for '*'. */
		{ shadow, &s, "team/secret/x", 12 },
		/* protect *: the first byte where the name leaves what is granted. */
		{ all, &s, "zeta", 1 },
		{ all, &s, "jobx", 4 },
		{ all, &s, "job", 0 },
		{ all, &other, "jobs/a", 1 },
	}, *w;
	/* And names alice may, or may not, inspect there. */
	const struct {
		const char *const *rules;
		const char *name;
		bool may;
	} mays[] = {
		{ pub, "team/a1", false },
		{ exact, "team/a", true },
		{ glob, "db/replica-3x", true },
		{ shadow, "team/other", true },
	}, *m;
	struct acl *acl;
	size_t got;

	TEST_START("acl_hidden_prefix");
	acl_subject_init(&s);
	acl_subject_init(&other);
	subject_uid(&s, 1000, "alice", NULL);
	subject_uid(&other, 2000, "bob", NULL);
	CHECK_INT(acl_hidden_prefix(NULL, &s, "team/a", 6, ACL_INSPECT), 0);

	for (w = want; w < want + sizeof want / sizeof want[0]; w++) {
		if ((acl = acl_of(w->rules)) == NULL)
			continue;
		got = hidden(acl, w->who, w->name);
		t_check(got == w->len, __FILE__, __LINE__, "hidden(%s, \"%s\") == %zu, want %zu",
		    w->who->principal, w->name, got, w->len);
		CHECK_INT(acl_hidden_prefix(acl, w->who, w->name, 0, ACL_INSPECT), 0);
		acl_free(acl);
	}
	for (m = mays; m < mays + sizeof mays / sizeof mays[0]; m++) {
		if ((acl = acl_of(m->rules)) == NULL)
			continue;
		t_check(may(acl, &s, m->name, ACL_INSPECT) == m->may, __FILE__, __LINE__,
		    "may(%s, \"%s\") is not %d", s.principal, m->name, m->may);
		acl_free(acl);
	}
	/* Group rules count only for members; a grant of another right is no grant. */
	if ((acl = acl_of(grp)) != NULL) {
		CHECK_INT(hidden(acl, &s, "team/x/1"), 5);
		CHECK_INT(acl_hidden_prefix(acl, &s, "team/x", 6, ACL_USE), 0);
		subject_uid(&s, 1000, "alice", ops);
		CHECK(may(acl, &s, "team/x/1", ACL_INSPECT));
		CHECK_INT(hidden(acl, &other, "team/x/1"), 5);
		acl_free(acl);
	}
	acl_subject_clear(&s);
	acl_subject_clear(&other);
}

/* xorshift64 for the random rule sets. */
static unsigned long long hp_rand(unsigned long long *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A random pattern over the bytes "ab/": *, prefix, glob or exact. */
static void hp_pattern(unsigned long long *x, char *out)
{
	size_t n = 1 + hp_rand(x) % 3, i;

	if (hp_rand(x) % 8 == 0) {
		strcpy(out, "*");
		return;
	}
	for (i = 0; i < n; i++)
		out[i] = "ab/"[hp_rand(x) % 3];
	out[n] = '\0';
	if (hp_rand(x) % 3 == 0)
		strcat(out, "*");
}

/*
 * Soundness against brute force: over random rule sets on the bytes "ab/",
 * every subtree acl_hidden_prefix() names holds no name (of up to 5 bytes)
 * the subject may inspect.
 */
static void test_hidden_prefix_random(void)
{
	static const char *const who[] = { "uid:1000", "uid:2000", "*", "group:ops", "user:alice" };
	static const char *const rights[] = { "inspect", "use", "none", "all" };
	static const char *const ops[] = { "ops", NULL };
	char names[400][6], pat[8], line[64];
	size_t nnames = 0, i, j, k, len, l, proved = 0, bad = 0;
	unsigned long long x = 0x9e3779b97f4a7c15ULL;
	struct acl_subject s;
	struct acl *acl;
	int round, nr;

	TEST_START("acl_hidden_prefix against brute force");
	for (len = 1; len <= 5; len++) {
		size_t total = 1;

		for (k = 0; k < len; k++)
			total *= 3;
		for (i = 0; i < total && nnames < 400; i++, nnames++) {
			size_t v = i;

			for (k = 0; k < len; k++, v /= 3)
				names[nnames][len - 1 - k] = "ab/"[v % 3];
			names[nnames][len] = '\0';
		}
	}
	acl_subject_init(&s);
	for (round = 0; round < 300; round++) {
		acl = acl_new();
		nr = 1 + (int)(hp_rand(&x) % 4);
		for (k = 0; k < (size_t)nr; k++) {
			hp_pattern(&x, pat);
			snprintf(line, sizeof line, "acl %s %s %s", who[hp_rand(&x) % 5],
			    pat, rights[hp_rand(&x) % 4]);
			CHECK_INT(acl_parse_line(acl, line, err, sizeof err), 0);
		}
		nr = 1 + (int)(hp_rand(&x) % 2);
		for (k = 0; k < (size_t)nr; k++) {
			hp_pattern(&x, pat);
			snprintf(line, sizeof line, "protect %s", pat);
			CHECK_INT(acl_parse_line(acl, line, err, sizeof err), 0);
		}
		/* every third round anonymous: the defaults deny it inspect */
		if (round % 3 == 2)
			acl_subject_clear(&s);
		else
			subject_uid(&s, 1000, "alice", round % 2 ? ops : NULL);
		for (i = 0; i < nnames; i++) {
			len = strlen(names[i]);
			if (may(acl, &s, names[i], ACL_INSPECT))
				continue;
			l = hidden(acl, &s, names[i]);
			if (l == 0)
				continue;
			proved++;
			if (l > len)
				bad++;
			for (j = 0; j < nnames && l <= len; j++) {
				if (strncmp(names[j], names[i], l) == 0 &&
				    may(acl, &s, names[j], ACL_INSPECT)) {
					fprintf(stderr, "FAIL [%s] round %d: %s hidden under "
					    "%.*s but %s is visible\n", t_name, round,
					    names[i], (int)l, names[i], names[j]);
					bad++;
				}
			}
		}
		acl_free(acl);
	}
	acl_subject_clear(&s);
	CHECK_INT(bad, 0);
	/* not vacuous: many subtrees were proved hidden */
	CHECK(proved > 1000);
	printf("acl_hidden_prefix: %zu hidden subtrees checked by brute force\n", proved);
}

int main(void)
{
	test_hidden_prefix();
	test_hidden_prefix_random();
	return t_done("test_acl_hidden");
}
