/* SPDX-License-Identifier: BSD-2-Clause */
/* security/acl.c - access control lists and per-principal quotas. */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hexdigit.h"
#include "security/acl.h"

enum acl_who {
	WHO_ANY,
	WHO_ANONYMOUS,
	WHO_UID,
	WHO_USER,
	WHO_GROUP,
	WHO_CN,
};

struct acl_principal {
	enum acl_who who;
	uid_t uid;
	size_t len;		/* of name */
	char *name;		/* user, group or cn name; NULL otherwise */
};

enum acl_pattern_kind {
	PATTERN_ALL,		/* "*" */
	PATTERN_PREFIX,		/* "jobs/" or "db/replica-*" (stored without '*') */
	PATTERN_EXACT,
};

struct acl_pattern {
	enum acl_pattern_kind kind;
	size_t len;
	char *text;
};

struct acl_rule {
	struct acl_principal who;
	struct acl_pattern pattern;
	unsigned rights;
};

struct acl_quota_rule {
	enum acl_quota_kind kind;
	struct acl_principal who;
	uint64_t limit;		/* 0: unlimited */
};

struct acl {
	struct acl_rule *rules;
	size_t nrules;
	struct acl_pattern *protect;
	size_t nprotect;
	struct acl_quota_rule *quotas;
	size_t nquotas;
	struct acl_principal *admins;	/* admin lines */
	size_t nadmins;
	bool names;			/* some principal is user: or group: */
	uint64_t serial;
};

/* Serial numbers of ACLs: a reloaded ACL is told from the one it replaces. */
static _Atomic uint64_t acl_serials;

#define ACL_MAX_FIELDS 6

static const uint64_t quota_defaults[ACL_QUOTA_NKINDS] = {
	[ACL_QUOTA_CONNECTIONS] = ACL_DEFAULT_CONNECTIONS,
	[ACL_QUOTA_SESSIONS] = ACL_DEFAULT_SESSIONS,
	[ACL_QUOTA_PERMITS] = ACL_DEFAULT_PERMITS,
	[ACL_QUOTA_WAITERS] = ACL_DEFAULT_WAITERS,
	[ACL_QUOTA_SEMAPHORES] = ACL_DEFAULT_SEMAPHORES,
	[ACL_QUOTA_WATCHES] = ACL_DEFAULT_WATCHES,
	[ACL_QUOTA_OUTPUT] = ACL_DEFAULT_OUTPUT,
};

static const char *quota_names[ACL_QUOTA_NKINDS] = {
	[ACL_QUOTA_CONNECTIONS] = "connections",
	[ACL_QUOTA_SESSIONS] = "sessions",
	[ACL_QUOTA_PERMITS] = "permits",
	[ACL_QUOTA_WAITERS] = "waiters",
	[ACL_QUOTA_SEMAPHORES] = "semaphores",
	[ACL_QUOTA_WATCHES] = "watches",
	[ACL_QUOTA_OUTPUT] = "output",
};

/* Format an error message into err (if any) and return -EINVAL. */
__attribute__((format(printf, 3, 4)))
static int acl_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Make an empty subject: anonymous, no user, no groups. */
void acl_subject_init(struct acl_subject *s)
{
	memset(s, 0, sizeof *s);
	s->kind = ACL_SUBJECT_ANONYMOUS;
	memcpy(s->principal, "anonymous", sizeof "anonymous");
	s->principal_len = sizeof "anonymous" - 1;
}

/* Free what a subject owns and make it anonymous again. */
void acl_subject_clear(struct acl_subject *s)
{
	if (s == NULL)
		return;
	free(s->groups);
	acl_subject_init(s);
}

/* Make s the local user uid (user may be NULL when unknown); keeps groups. */
int acl_subject_set_uid(struct acl_subject *s, uid_t uid, const char *user)
{
	size_t len = user != NULL ? strlen(user) : 0;
	int n;

	if (len > ACL_NAME_MAX)
		return -ENAMETOOLONG;
	n = snprintf(s->principal, sizeof s->principal, "uid:%ju", (uintmax_t)uid);
	if (n < 0 || (size_t)n >= sizeof s->principal)
		return -EOVERFLOW;
	s->principal_len = (size_t)n;
	s->kind = ACL_SUBJECT_UID;
	s->uid = uid;
	memcpy(s->user, user != NULL ? user : "", len + 1);
	s->user_len = len;
	return 0;
}

/* Make s the certificate identity cn:NAME. */
int acl_subject_set_cn(struct acl_subject *s, const char *name, size_t len)
{
	if (len == 0)
		return -EINVAL;
	if (len > ACL_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '\0', len) != NULL)
		return -EINVAL;
	memcpy(s->principal, "cn:", 3);
	memcpy(s->principal + 3, name, len);
	s->principal[3 + len] = '\0';
	s->principal_len = 3 + len;
	s->kind = ACL_SUBJECT_CN;
	s->uid = 0;
	s->user[0] = '\0';
	s->user_len = 0;
	return 0;
}

/* Find a group name in the subject's packed list. */
static bool acl_subject_in_group(const struct acl_subject *s, const char *g, size_t len)
{
	const char *p = s->groups, *end = s->groups + s->groups_len;
	const char *nul;

	while (p != NULL && p < end) {
		nul = memchr(p, '\0', (size_t)(end - p));
		if (nul == NULL)
			return false;
		if ((size_t)(nul - p) == len && memcmp(p, g, len) == 0)
			return true;
		p = nul + 1;
	}
	return false;
}

/* Add a group name to s (duplicates are skipped). */
int acl_subject_add_group(struct acl_subject *s, const char *group)
{
	size_t len = strlen(group);
	char *g;

	if (len == 0)
		return -EINVAL;
	if (len > ACL_NAME_MAX)
		return -ENAMETOOLONG;
	if (acl_subject_in_group(s, group, len))
		return 0;
	g = realloc(s->groups, s->groups_len + len + 1);
	if (g == NULL)
		return -ENOMEM;
	memcpy(g + s->groups_len, group, len + 1);
	s->groups = g;
	s->groups_len += len + 1;
	s->ngroups++;
	return 0;
}

/* Escape a certificate name for a cn: principal (see acl.h). */
int acl_name_escape(const unsigned char *raw, size_t len, char *out,
    size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, n = 0, need;

	for (i = 0; i < len; i++) {
		need = raw[i] == '\\' ? 2 : raw[i] > 0x20 && raw[i] < 0x7f ? 1 : 4;
		if (n + need >= outlen || n + need > ACL_NAME_MAX)
			return -ENAMETOOLONG;
		if (need == 1) {
			out[n++] = (char)raw[i];
		} else if (need == 2) {
			out[n++] = '\\';
			out[n++] = '\\';
		} else {
			out[n++] = '\\';
			out[n++] = 'x';
			out[n++] = hex[raw[i] >> 4];
			out[n++] = hex[raw[i] & 15];
		}
	}
	if (n >= outlen)
		return -ENAMETOOLONG;
	out[n] = '\0';
	return (int)n;
}

/*
 * The canonical escaped form of a cn: name written in a rule: its escapes
 * (\\ and \xHH) decoded, then escaped again as acl_name_escape() does, so
 * cn:a\X20b and cn:a\x20b name the same certificate. -EINVAL on a bad escape.
 */
static int acl_cn_canonical(const char *text, char *out, size_t outlen)
{
	unsigned char raw[ACL_NAME_MAX + 1];
	size_t n = 0;
	int hi, lo;

	while (*text != '\0') {
		if (n == sizeof raw)
			return -ENAMETOOLONG;
		if (*text != '\\') {
			raw[n++] = (unsigned char)*text++;
			continue;
		}
		if (text[1] == '\\') {
			raw[n++] = '\\';
			text += 2;
		} else if ((text[1] == 'x' || text[1] == 'X') &&
		    (hi = hexdigit_value((unsigned char)text[2])) >= 0 &&
		    (lo = hexdigit_value((unsigned char)text[3])) >= 0) {
			raw[n++] = (unsigned char)(hi << 4 | lo);
			text += 4;
		} else {
			return -EINVAL;
		}
	}
	return acl_name_escape(raw, n, out, outlen);
}

/* Make an empty ACL (the default rules only). */
struct acl *acl_new(void)
{
	struct acl *acl = calloc(1, sizeof(struct acl));

	if (acl != NULL)
		acl->serial = atomic_fetch_add(&acl_serials, 1) + 1;
	return acl;
}

/* Free an ACL; NULL is a no-op. */
void acl_free(struct acl *acl)
{
	size_t i;

	if (acl == NULL)
		return;
	for (i = 0; i < acl->nrules; i++) {
		free(acl->rules[i].who.name);
		free(acl->rules[i].pattern.text);
	}
	for (i = 0; i < acl->nprotect; i++)
		free(acl->protect[i].text);
	for (i = 0; i < acl->nquotas; i++)
		free(acl->quotas[i].who.name);
	for (i = 0; i < acl->nadmins; i++)
		free(acl->admins[i].name);
	free(acl->admins);
	free(acl->rules);
	free(acl->protect);
	free(acl->quotas);
	free(acl);
}

/* Split line into whitespace-separated fields, in place in buf. */
static size_t acl_split(char *buf, char *fields[ACL_MAX_FIELDS])
{
	size_t n = 0;
	char *p = buf;

	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
			*p++ = '\0';
		if (*p == '\0')
			break;
		if (n == ACL_MAX_FIELDS)
			return n + 1;
		fields[n++] = p;
		while (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
			p++;
	}
	return n;
}

/* Tell whether s holds a control character (or DEL). */
static bool acl_has_control(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			return true;
	}
	return false;
}

/* Parse a principal (uid:N, user:NAME, group:NAME, cn:NAME, anonymous, *). */
static int acl_parse_principal(const char *text, struct acl_principal *p,
    char *err, size_t errlen)
{
	static const struct { const char *prefix; enum acl_who who; } named[] = {
		{ "user:", WHO_USER }, { "group:", WHO_GROUP }, { "cn:", WHO_CN },
	};
	const char *name;
	char *end;
	unsigned long long v;
	size_t i, len;

	memset(p, 0, sizeof *p);
	if (strcmp(text, "*") == 0) {
		p->who = WHO_ANY;
		return 0;
	}
	if (strcmp(text, "anonymous") == 0) {
		p->who = WHO_ANONYMOUS;
		return 0;
	}
	if (strncmp(text, "uid:", 4) == 0) {
		errno = 0;
		if (text[4] < '0' || text[4] > '9')
			return acl_error(err, errlen, "invalid uid in '%s': want a decimal number", text);
		v = strtoull(text + 4, &end, 10);
		if (*end != '\0')
			return acl_error(err, errlen, "invalid uid in '%s': want a decimal number", text);
		if (errno == ERANGE || v >= (uid_t)-1)
			return acl_error(err, errlen, "uid out of range in '%s'", text);
		p->who = WHO_UID;
		p->uid = (uid_t)v;
		return 0;
	}
	for (i = 0; i < sizeof named / sizeof named[0]; i++) {
		len = strlen(named[i].prefix);
		if (strncmp(text, named[i].prefix, len) != 0)
			continue;
		name = text + len;
		if (*name == '\0')
			return acl_error(err, errlen, "empty name in principal '%s'", text);
		if (strlen(name) > ACL_NAME_MAX)
			return acl_error(err, errlen, "name longer than %d bytes in principal '%.40s...'",
			    ACL_NAME_MAX, text);
		if (acl_has_control(name))
			return acl_error(err, errlen, "control character in principal '%s'", text);
		p->who = named[i].who;
		if (p->who == WHO_CN) {
			char canon[ACL_NAME_MAX + 1];
			int n = acl_cn_canonical(name, canon, sizeof canon);

			if (n < 0)
				return acl_error(err, errlen, "bad escape in principal '%s' "
				    "(write a space as \\x20, a backslash as \\\\)", text);
			p->len = (size_t)n;
			p->name = strdup(canon);
		} else {
			p->len = strlen(name);
			p->name = strdup(name);
		}
		return p->name != NULL ? 0 : -ENOMEM;
	}
	return acl_error(err, errlen, "unknown principal '%s' (want uid:N, user:NAME, "
	    "group:NAME, cn:NAME, anonymous or *)", text);
}

/* Parse a name pattern (*, PREFIX/, PREFIX*, or an exact name). */
static int acl_parse_pattern(const char *text, struct acl_pattern *p,
    char *err, size_t errlen)
{
	size_t len = strlen(text);
	const char *star;

	memset(p, 0, sizeof *p);
	if (len > ACL_PATTERN_MAX)
		return acl_error(err, errlen, "pattern longer than %d bytes: '%.40s...'",
		    ACL_PATTERN_MAX, text);
	if (acl_has_control(text))
		return acl_error(err, errlen, "control character in pattern '%s'", text);
	if (strcmp(text, "*") == 0) {
		p->kind = PATTERN_ALL;
		return 0;
	}
	star = strchr(text, '*');
	if (star != NULL && (size_t)(star - text) != len - 1)
		return acl_error(err, errlen, "'*' is allowed only at the end of a pattern: '%s'", text);
	if (star != NULL) {
		p->kind = PATTERN_PREFIX;
		len--;
	} else if (text[len - 1] == '/') {
		p->kind = PATTERN_PREFIX;
	} else {
		p->kind = PATTERN_EXACT;
	}
	p->len = len;
	p->text = strndup(text, len);
	return p->text != NULL ? 0 : -ENOMEM;
}

/* Parse a comma list of rights (inspect, use, create, admin, all) or "none". */
static int acl_parse_rights(const char *text, unsigned *rights, char *err, size_t errlen)
{
	const char *p = text, *comma;
	size_t len;
	bool none = false;

	*rights = 0;
	for (;;) {
		comma = strchr(p, ',');
		len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (len == 0)
			return acl_error(err, errlen, "empty right in '%s'", text);
		if (len == 7 && memcmp(p, "inspect", 7) == 0)
			*rights |= ACL_INSPECT;
		else if (len == 3 && memcmp(p, "use", 3) == 0)
			*rights |= ACL_USE;
		else if (len == 6 && memcmp(p, "create", 6) == 0)
			*rights |= ACL_CREATE;
		else if (len == 5 && memcmp(p, "admin", 5) == 0)
			*rights |= ACL_ADMIN | ACL_CREATE;
		else if (len == 3 && memcmp(p, "all", 3) == 0)
			*rights |= ACL_RIGHTS_ALL;
		else if (len == 4 && memcmp(p, "none", 4) == 0)
			none = true;
		else
			return acl_error(err, errlen, "unknown right '%.*s' (want inspect, use, "
			    "create, admin, all or none)", (int)len, p);
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	if (none && *rights != 0)
		return acl_error(err, errlen, "'none' cannot be combined with other rights: '%s'", text);
	return 0;
}

/* Grow an array by one element; returns the new slot or NULL. */
static void *acl_grow(void **array, size_t *n, size_t size)
{
	void *a = realloc(*array, (*n + 1) * size);

	if (a == NULL)
		return NULL;
	*array = a;
	return (char *)a + (*n)++ * size;
}

/* Parse "acl PRINCIPAL PATTERN RIGHTS". */
static int acl_parse_acl(struct acl *acl, char **f, size_t n, char *err, size_t errlen)
{
	struct acl_rule r, *slot;
	int e;

	if (n != 4)
		return acl_error(err, errlen, "'acl' wants 3 fields (acl PRINCIPAL PATTERN RIGHTS), got %zu", n - 1);
	memset(&r, 0, sizeof r);
	if ((e = acl_parse_principal(f[1], &r.who, err, errlen)) != 0)
		goto fail;
	if ((e = acl_parse_pattern(f[2], &r.pattern, err, errlen)) != 0)
		goto fail;
	if ((e = acl_parse_rights(f[3], &r.rights, err, errlen)) != 0)
		goto fail;
	slot = acl_grow((void **)&acl->rules, &acl->nrules, sizeof r);
	if (slot == NULL) {
		e = -ENOMEM;
		goto fail;
	}
	*slot = r;
	acl->names |= r.who.who == WHO_USER || r.who.who == WHO_GROUP;
	return 0;
fail:
	free(r.who.name);
	free(r.pattern.text);
	return e;
}

/* Parse "protect PATTERN". */
static int acl_parse_protect(struct acl *acl, char **f, size_t n, char *err, size_t errlen)
{
	struct acl_pattern p, *slot;
	int e;

	if (n != 2)
		return acl_error(err, errlen, "'protect' wants 1 field (protect PATTERN), got %zu", n - 1);
	if ((e = acl_parse_pattern(f[1], &p, err, errlen)) != 0)
		return e;
	slot = acl_grow((void **)&acl->protect, &acl->nprotect, sizeof p);
	if (slot == NULL) {
		free(p.text);
		return -ENOMEM;
	}
	*slot = p;
	return 0;
}

/* Parse "quota KIND PRINCIPAL N|unlimited" (output: 64K, 64M, 1G too). */
static int acl_parse_quota(struct acl *acl, char **f, size_t n, char *err, size_t errlen)
{
	struct acl_quota_rule q, *slot;
	unsigned long long v;
	unsigned int shift;
	char *end;
	size_t i;
	int e;

	if (n != 4)
		return acl_error(err, errlen, "'quota' wants 3 fields (quota KIND PRINCIPAL N), got %zu", n - 1);
	memset(&q, 0, sizeof q);
	for (i = 0; i < ACL_QUOTA_NKINDS; i++) {
		if (strcmp(f[1], quota_names[i]) == 0)
			break;
	}
	if (i == ACL_QUOTA_NKINDS)
		return acl_error(err, errlen, "unknown quota '%s' (want connections, sessions, "
		    "permits, waiters, semaphores, watches or output)", f[1]);
	q.kind = (enum acl_quota_kind)i;
	if (strcmp(f[3], "unlimited") == 0) {
		q.limit = 0;
	} else {
		errno = 0;
		if (f[3][0] < '0' || f[3][0] > '9')
			return acl_error(err, errlen, "invalid quota limit '%s' (want a number or 'unlimited')", f[3]);
		v = strtoull(f[3], &end, 10);
		/* Bytes (output) may be written 64K, 64M, 1G (binary). */
		shift = q.kind != ACL_QUOTA_OUTPUT ? 0 : *end == 'K' ? 10 :
		    *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
		if (shift > 0 && end[1] == '\0') {
			if (v > UINT64_MAX >> shift)
				errno = ERANGE;
			v <<= shift;
			end++;
		}
		if (*end != '\0')
			return acl_error(err, errlen, "invalid quota limit '%s' (want a number%s or 'unlimited')",
			    f[3], q.kind == ACL_QUOTA_OUTPUT ? " of bytes, 64K, 64M or 1G," : "");
		if (errno == ERANGE)
			return acl_error(err, errlen, "quota limit out of range: '%s'", f[3]);
		if (v == 0)
			return acl_error(err, errlen, "quota limit must be at least 1 (or 'unlimited'): '%s'", f[3]);
		q.limit = v;
	}
	if ((e = acl_parse_principal(f[2], &q.who, err, errlen)) != 0)
		return e;
	slot = acl_grow((void **)&acl->quotas, &acl->nquotas, sizeof q);
	if (slot == NULL) {
		free(q.who.name);
		return -ENOMEM;
	}
	*slot = q;
	acl->names |= q.who.who == WHO_USER || q.who.who == WHO_GROUP;
	return 0;
}

/* Add "admin PRINCIPAL". */
int acl_add_admin(struct acl *acl, const char *principal, char *err,
    size_t errlen)
{
	struct acl_principal p, *slot;
	int e;

	if (strpbrk(principal, " \t") != NULL)
		return acl_error(err, errlen, "admin wants one principal, got '%s'",
		    principal);
	if ((e = acl_parse_principal(principal, &p, err, errlen)) != 0)
		return e;
	slot = acl_grow((void **)&acl->admins, &acl->nadmins, sizeof p);
	if (slot == NULL) {
		free(p.name);
		return -ENOMEM;
	}
	*slot = p;
	acl->names |= p.who == WHO_USER || p.who == WHO_GROUP;
	return 0;
}

/* Parse one configuration line (acl, protect, quota, blank or comment). */
int acl_parse_line(struct acl *acl, const char *line, char *err, size_t errlen)
{
	char buf[1024];
	char *f[ACL_MAX_FIELDS];
	size_t n, len;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	len = strlen(line);
	if (len >= sizeof buf)
		return acl_error(err, errlen, "line longer than %zu bytes", sizeof buf - 1);
	memcpy(buf, line, len + 1);
	n = acl_split(buf, f);
	if (n == 0 || f[0][0] == '#')
		return 0;
	if (strcmp(f[0], "acl") == 0)
		return acl_parse_acl(acl, f, n, err, errlen);
	if (strcmp(f[0], "protect") == 0)
		return acl_parse_protect(acl, f, n, err, errlen);
	if (strcmp(f[0], "quota") == 0)
		return acl_parse_quota(acl, f, n, err, errlen);
	if (strcmp(f[0], "admin") == 0) {
		if (n != 2)
			return acl_error(err, errlen, "'admin' wants 1 field (admin PRINCIPAL), got %zu", n - 1);
		return acl_add_admin(acl, f[1], err, errlen);
	}
	return -ENOENT;
}

/* Decide whether a rule's principal covers the subject. */
static inline bool acl_principal_matches(const struct acl_principal *p,
    const struct acl_subject *s)
{
	switch (p->who) {
	case WHO_ANY:
		return true;
	case WHO_ANONYMOUS:
		return s->kind == ACL_SUBJECT_ANONYMOUS;
	case WHO_UID:
		return s->kind == ACL_SUBJECT_UID && s->uid == p->uid;
	case WHO_USER:
		return s->kind == ACL_SUBJECT_UID && s->user_len == p->len &&
		    memcmp(s->user, p->name, p->len) == 0;
	case WHO_CN:
		return s->kind == ACL_SUBJECT_CN && s->principal_len == p->len + 3 &&
		    memcmp(s->principal + 3, p->name, p->len) == 0;
	case WHO_GROUP:
		return s->ngroups > 0 && acl_subject_in_group(s, p->name, p->len);
	}
	return false;
}

/* Decide whether a pattern covers a name. */
static inline bool acl_pattern_matches(const struct acl_pattern *p,
    const char *name, size_t len)
{
	switch (p->kind) {
	case PATTERN_ALL:
		return true;
	case PATTERN_PREFIX:
		return len >= p->len && memcmp(name, p->text, p->len) == 0;
	case PATTERN_EXACT:
		return len == p->len && memcmp(name, p->text, p->len) == 0;
	}
	return false;
}

/* The built-in default rules (step 3 of the evaluation in acl.h). */
unsigned acl_default_rights(const struct acl_subject *who)
{
	if (who->admin)
		return ACL_RIGHTS_ALL;
	if (who->kind == ACL_SUBJECT_ANONYMOUS)
		return ACL_USE;
	return ACL_INSPECT | ACL_USE | ACL_CREATE;
}

/*
 * Every right who has on name. This runs on every request: it is a linear
 * walk over the rules with lengths compared before bytes, no allocation and
 * no strlen. A few dozen rules cost well under a microsecond; an ACL with
 * thousands of rules would want an index by principal first.
 */
unsigned acl_rights(const struct acl *acl, const struct acl_subject *who,
    const char *name, size_t name_len)
{
	const struct acl_rule *r, *end;
	size_t i;

	if (acl == NULL)
		return acl_default_rights(who);
	end = acl->rules + acl->nrules;
	for (r = acl->rules; r < end; r++) {
		/* principal first: an int compare for uid/kind rules; groups last */
		if (r->who.who != WHO_GROUP && !acl_principal_matches(&r->who, who))
			continue;
		if (acl_pattern_matches(&r->pattern, name, name_len) &&
		    (r->who.who != WHO_GROUP || acl_principal_matches(&r->who, who)))
			return r->rights;
	}
	for (i = 0; i < acl->nprotect; i++) {
		if (acl_pattern_matches(&acl->protect[i], name, name_len))
			return 0;
	}
	return acl_default_rights(who);
}

/*
 * Are who's rights the same on every name? The first rule for who covers
 * every name ("*"), or no rule is for who and no name is protected: then
 * they are in *rights, and acl_rights() would say them for any name.
 */
bool acl_rights_uniform(const struct acl *acl, const struct acl_subject *who,
    unsigned *rights)
{
	const struct acl_rule *r, *end;

	if (acl != NULL) {
		end = acl->rules + acl->nrules;
		for (r = acl->rules; r < end; r++) {
			if (!acl_principal_matches(&r->who, who))
				continue;
			if (r->pattern.kind != PATTERN_ALL)
				return false;
			*rights = r->rights;
			return true;
		}
		if (acl->nprotect > 0)
			return false;
	}
	*rights = acl_default_rights(who);
	return true;
}

/* Decide whether who may exercise right on name. */
bool acl_allows(const struct acl *acl, const struct acl_subject *who,
    const char *name, size_t name_len, enum acl_right right)
{
	return (acl_rights(acl, who, name, name_len) & (unsigned)right) ==
	    (unsigned)right;
}

/* Is who an administrator? */
bool acl_is_admin(const struct acl *acl, const struct acl_subject *who,
    uid_t self_uid)
{
	size_t i;

	if (who->kind == ACL_SUBJECT_UID && (who->uid == 0 || who->uid == self_uid))
		return true;
	for (i = 0; acl != NULL && i < acl->nadmins; i++) {
		if (acl_principal_matches(&acl->admins[i], who))
			return true;
	}
	return false;
}

/* Do the rules name users or groups? */
bool acl_needs_names(const struct acl *acl)
{
	return acl != NULL && acl->names;
}

/* No acl or protect line: the defaults decide every name. */
bool acl_defaults_only(const struct acl *acl)
{
	return acl == NULL || (acl->nrules == 0 && acl->nprotect == 0);
}

/* A unique number of this ACL. */
uint64_t acl_serial(const struct acl *acl)
{
	return acl != NULL ? acl->serial : 0;
}

/* Length of the common beginning of a and b (at most n bytes). */
static size_t acl_common_len(const char *a, const char *b, size_t n)
{
	size_t i = 0;

	while (i < n && a[i] == b[i])
		i++;
	return i;
}

/*
 * The shortest L such that no name starting with name[0..L) matches pattern
 * p (SIZE_MAX: none, p matches some name under every prefix of name).
 */
static size_t acl_pattern_avoid_len(const struct acl_pattern *p,
    const char *name, size_t len)
{
	size_t m;

	if (p->kind == PATTERN_ALL)
		return SIZE_MAX;
	m = acl_common_len(name, p->text, len < p->len ? len : p->len);
	/* name begins with a prefix pattern, or is the beginning of p->text */
	if ((p->kind == PATTERN_PREFIX && m == p->len) || m == len)
		return SIZE_MAX;
	/* name and p->text differ at m (or p->text ends there): L = m + 1 */
	return m + 1;
}

/*
 * The shortest L such that pattern p matches every name starting with
 * name[0..L) (SIZE_MAX: no such L; an exact name never covers a subtree).
 */
static size_t acl_pattern_cover_len(const struct acl_pattern *p,
    const char *name, size_t len)
{
	if (p->kind == PATTERN_ALL)
		return 0;
	if (p->kind == PATTERN_PREFIX && acl_pattern_matches(p, name, len))
		return p->len;
	return SIZE_MAX;
}

/*
 * Find a beginning of name under which who may exercise right on no name.
 * Rules are taken in order, keeping lo, the shortest length past which no
 * rule seen so far that would grant the right can match: then a rule that
 * denies the right and matches the whole subtree (or, after all the rules,
 * a protect pattern that does) proves every name under max(lo, its length)
 * hidden. The shortest proof wins. Conservative: a granting rule matching
 * some name under every beginning of name (*, a prefix of name, a name that
 * begins with name) gives up.
 */
size_t acl_hidden_prefix(const struct acl *acl, const struct acl_subject *who,
    const char *name, size_t len, enum acl_right right)
{
	const struct acl_rule *r, *end;
	size_t lo = 1, best = SIZE_MAX, l, i;

	if (len == 0)
		return 0;
	if (acl == NULL)
		return (acl_default_rights(who) & (unsigned)right) == (unsigned)right ? 0 : 1;
	end = acl->rules + acl->nrules;
	for (r = acl->rules; r < end && lo <= len; r++) {
		if (!acl_principal_matches(&r->who, who))
			continue;
		if ((r->rights & (unsigned)right) == (unsigned)right) {
			l = acl_pattern_avoid_len(&r->pattern, name, len);
			if (l > lo)
				lo = l;
			continue;
		}
		l = acl_pattern_cover_len(&r->pattern, name, len);
		if (l != SIZE_MAX && (l > lo ? l : lo) < best)
			best = l > lo ? l : lo;
	}
	for (i = 0; i < acl->nprotect && lo <= len; i++) {
		l = acl_pattern_cover_len(&acl->protect[i], name, len);
		if (l != SIZE_MAX && (l > lo ? l : lo) < best)
			best = l > lo ? l : lo;
	}
	/* The defaults deny it on every name: like a last rule on "*". */
	if (lo <= len && (acl_default_rights(who) & (unsigned)right) !=
	    (unsigned)right && lo < best)
		best = lo;
	return best <= len ? best : 0;
}

/* The quota of a kind for who: 0 means unlimited. */
uint64_t acl_quota(const struct acl *acl, const struct acl_subject *who,
    enum acl_quota_kind kind)
{
	size_t i;

	for (i = 0; acl != NULL && i < acl->nquotas; i++) {
		if (acl->quotas[i].kind == kind && acl_principal_matches(&acl->quotas[i].who, who))
			return acl->quotas[i].limit;
	}
	return who->admin ? 0 : acl_quota_default(kind);
}

/* The built-in limit of a kind. */
uint64_t acl_quota_default(enum acl_quota_kind kind)
{
	return (unsigned)kind < ACL_QUOTA_NKINDS ? quota_defaults[kind] : 0;
}

/* Name of a quota kind. */
const char *acl_quota_name(enum acl_quota_kind kind)
{
	return (unsigned)kind < ACL_QUOTA_NKINDS ? quota_names[kind] : "?";
}

/* Number of acl, protect, quota and admin lines held (0: defaults only). */
size_t acl_count(const struct acl *acl)
{
	return acl == NULL ? 0 : acl->nrules + acl->nprotect + acl->nquotas +
	    acl->nadmins;
}

/* Name of a single right, for logs. */
const char *acl_right_name(enum acl_right right)
{
	switch (right) {
	case ACL_INSPECT:
		return "inspect";
	case ACL_USE:
		return "use";
	case ACL_CREATE:
		return "create";
	case ACL_ADMIN:
		return "admin";
	}
	return "?";
}
