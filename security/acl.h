/* SPDX-License-Identifier: BSD-2-Clause */
/* security/acl.h - access control lists and per-principal quotas. */
#ifndef SEMD_SECURITY_ACL_H
#define SEMD_SECURITY_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Configuration lines understood by acl_parse_line() (one rule a line):
 *
 *   acl PRINCIPAL PATTERN RIGHTS
 *   protect PATTERN
 *   quota connections|permits|waiters|semaphores PRINCIPAL N|unlimited
 *
 * PRINCIPAL: uid:N, user:NAME, group:NAME, cn:NAME, anonymous, or * (anyone).
 * PATTERN:   * (every name), a prefix ending in '/' (jobs/), a prefix glob
 *            ending in '*' (db/replica-*), or an exact name. '*' elsewhere
 *            is refused: it would look like a glob and silently not be one.
 * RIGHTS:    a comma list of inspect, use, admin, or all; or none.
 *
 * Evaluation: the first acl rule whose principal and pattern both match
 * decides (its rights either contain the right asked for or not). When no
 * rule matches, a name inside a protected pattern is denied and any other
 * name is allowed: an empty ACL is the open behaviour, `protect *` makes the
 * whole namespace default-deny. For quotas the first quota line of that kind
 * whose principal matches gives the limit.
 */

/* The rights a request needs; a rule grants a set of them. */
enum acl_right {
	ACL_INSPECT = 1 << 0,	/* info, list, stats */
	ACL_USE = 1 << 1,	/* down, up, validate, cancel */
	ACL_ADMIN = 1 << 2,	/* create, delete, set-limit, release another's hold */
};
#define ACL_RIGHTS_ALL (ACL_INSPECT | ACL_USE | ACL_ADMIN)

enum acl_quota_kind {
	ACL_QUOTA_CONNECTIONS,
	ACL_QUOTA_PERMITS,
	ACL_QUOTA_WAITERS,
	ACL_QUOTA_SEMAPHORES,
	ACL_QUOTA_NKINDS
};

/* Longest cn:/user:/group: name accepted in a rule or a subject. */
#define ACL_NAME_MAX 255
/* "cn:" + name + NUL */
#define ACL_PRINCIPAL_MAX (3 + ACL_NAME_MAX + 1)
/* Longest pattern, the same as the longest semaphore name. */
#define ACL_PATTERN_MAX 255

enum acl_subject_kind {
	ACL_SUBJECT_ANONYMOUS,
	ACL_SUBJECT_UID,	/* a local peer (SO_PEERCRED) */
	ACL_SUBJECT_CN,		/* a verified client certificate */
};

/*
 * Who is asking: filled once per connection (peer_subject(),
 * tls_peer_subject()), read by acl_allows() and acl_quota() on every request.
 * principal is the text for logs ("uid:1000", "cn:host", "anonymous").
 * Initialise with acl_subject_init(), release with acl_subject_clear().
 */
struct acl_subject {
	enum acl_subject_kind kind;
	uid_t uid;			/* valid for ACL_SUBJECT_UID */
	size_t principal_len;
	char principal[ACL_PRINCIPAL_MAX];
	size_t user_len;		/* 0: no user name known */
	char user[ACL_NAME_MAX + 1];
	char *groups;			/* ngroups NUL-terminated names, packed */
	size_t groups_len;		/* bytes used in groups */
	size_t ngroups;
};

struct acl;

/* Make an empty subject: anonymous, no user, no groups. */
void acl_subject_init(struct acl_subject *s);
/* Free what a subject owns and make it anonymous again. */
void acl_subject_clear(struct acl_subject *s);
/* Make s the local user uid (user may be NULL when unknown); keeps groups. */
int acl_subject_set_uid(struct acl_subject *s, uid_t uid, const char *user);
/* Make s the certificate identity cn:NAME. */
int acl_subject_set_cn(struct acl_subject *s, const char *name, size_t len);
/* Add a group name to s (duplicates are skipped). */
int acl_subject_add_group(struct acl_subject *s, const char *group);

/* Make an empty ACL (allows everything). */
struct acl *acl_new(void);
/* Free an ACL; NULL is a no-op. */
void acl_free(struct acl *acl);
/*
 * Parse one configuration line into acl. Returns 0 when the line was an acl,
 * protect or quota line (or blank, or a # comment), -ENOENT when its first
 * word is none of those (the caller's own keyword), -EINVAL with a message in
 * err when it is malformed, -ENOMEM. The message names what is wrong; the
 * caller prefixes file:line.
 */
int acl_parse_line(struct acl *acl, const char *line, char *err, size_t errlen);
/* Decide whether who may exercise right on the semaphore name (no allocation). */
bool acl_allows(const struct acl *acl, const struct acl_subject *who,
    const char *name, size_t name_len, enum acl_right right);
/*
 * Prove a whole subtree hidden: the length L (1..name_len) of a beginning of
 * name such that who may not exercise right on any name starting with
 * name[0..L), shortest found; 0 when that cannot be shown (then only name
 * itself is known, from acl_allows()). Conservative: 0 whenever a rule that
 * grants right to who might match a name under every beginning of name.
 * Used by List to step over a protected run of names in one seek.
 */
size_t acl_hidden_prefix(const struct acl *acl, const struct acl_subject *who,
    const char *name, size_t name_len, enum acl_right right);
/* The quota of a kind for who: 0 means unlimited. */
uint64_t acl_quota(const struct acl *acl, const struct acl_subject *who,
    enum acl_quota_kind kind);
/* Number of acl, protect and quota rules held (0: an open ACL). */
size_t acl_count(const struct acl *acl);
/* Name of a single right, for logs ("inspect", "use", "admin"). */
const char *acl_right_name(enum acl_right right);

#endif
