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
 *   quota connections|sessions|permits|waiters|semaphores|watches|output
 *         PRINCIPAL N|unlimited
 *   admin PRINCIPAL
 *
 * PRINCIPAL: uid:N, user:NAME, group:NAME, cn:NAME, anonymous, or * (anyone).
 *            A cn: name is written escaped (acl_name_escape()): a space is
 *            \x20, a backslash \\, any byte outside 0x21-0x7e \xHH.
 * PATTERN:   * (every name), a prefix ending in '/' (jobs/), a prefix glob
 *            ending in '*' (db/replica-*), or an exact name. '*' elsewhere
 *            is refused: it would look like a glob and silently not be one.
 * RIGHTS:    a comma list of inspect, use, create, admin, or all; or none.
 *            admin includes create.
 *
 * Evaluation, the first step that decides wins:
 *  1. the operator's acl rules, in order: the first whose principal and
 *     pattern both match gives the rights;
 *  2. a name inside a protect pattern: no rights;
 *  3. the built-in default rules, as if written
 *        acl ADMINISTRATORS * all
 *        acl anonymous      * use
 *        acl *              * inspect,use,create
 *     where the administrators are the subjects marked admin (uid 0, the
 *     daemon's own uid and the admin lines' principals: acl_is_admin()).
 * For quotas the first quota line of that kind whose principal matches gives
 * the limit; without one, administrators have none and everyone else has
 * the default of acl_quota_default().
 */

/* The rights a request needs; a rule grants a set of them. */
enum acl_right {
	ACL_INSPECT = 1 << 0,	/* info, list, stats */
	ACL_USE = 1 << 1,	/* down, up, validate, cancel */
	ACL_CREATE = 1 << 2,	/* create; delete, set-limit, release on own names */
	ACL_ADMIN = 1 << 3,	/* manage any name, whoever created it */
};
#define ACL_RIGHTS_ALL (ACL_INSPECT | ACL_USE | ACL_CREATE | ACL_ADMIN)

enum acl_quota_kind {
	ACL_QUOTA_CONNECTIONS,
	ACL_QUOTA_SESSIONS,
	ACL_QUOTA_PERMITS,
	ACL_QUOTA_WAITERS,
	ACL_QUOTA_SEMAPHORES,
	ACL_QUOTA_WATCHES,	/* watches, on all its connections */
	ACL_QUOTA_OUTPUT,	/* bytes of replies its connections leave unread */
	ACL_QUOTA_NKINDS
};

/*
 * Per-principal limits when no quota line matches (administrators: none).
 * Sized so that a person or a service never meets them (a build running
 * hundreds of jobs at once included) while one principal cannot fill the
 * daemon's global tables (max-connections 10000, max-sessions 100000,
 * max-semaphores 1000000).
 */
#define ACL_DEFAULT_CONNECTIONS	1000
#define ACL_DEFAULT_SESSIONS	1000
#define ACL_DEFAULT_PERMITS	10000
#define ACL_DEFAULT_WAITERS	10000
#define ACL_DEFAULT_SEMAPHORES	10000
/*
 * Every watch that covers a name gets a notice of each of its changes: one
 * principal's watches cost everyone's changes that many notices (1,000
 * connections with 16 watches of every name: 16,000 a change).
 */
#define ACL_DEFAULT_WATCHES	256
/*
 * Replies a principal's connections leave unread, in bytes: past it its
 * requests are refused and a connection that does not read is cut off
 * (max-output 4 MiB per connection x 1,000 connections would be 4 GiB).
 */
#define ACL_DEFAULT_OUTPUT	(64ull << 20)

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
	bool admin;			/* an administrator: acl_is_admin() */
};

struct acl;

/* Make an empty subject: anonymous, no user, no groups. */
void acl_subject_init(struct acl_subject *s);
/* Free what a subject owns and make it anonymous again. */
void acl_subject_clear(struct acl_subject *s);
/* Make s the local user uid (user may be NULL when unknown); keeps groups. */
int acl_subject_set_uid(struct acl_subject *s, uid_t uid, const char *user);
/* Make s the certificate identity cn:NAME (NAME already escaped). */
int acl_subject_set_cn(struct acl_subject *s, const char *name, size_t len);
/*
 * Escape the raw bytes of a certificate name for a cn: principal: bytes
 * 0x21-0x7e stay (a backslash doubled), any other byte becomes \xHH (a
 * space \x20), so a principal is one word in logs and acl lines and keeps
 * every byte of the name. Returns the length written (out NUL-terminated),
 * or -ENAMETOOLONG when it would not fit in outlen or ACL_NAME_MAX.
 */
int acl_name_escape(const unsigned char *raw, size_t len, char *out,
    size_t outlen);
/* Add a group name to s (duplicates are skipped). */
int acl_subject_add_group(struct acl_subject *s, const char *group);

/* Make an empty ACL (the default rules only). */
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
/* Every right who has on name (ACL_* bits), by the evaluation above. */
unsigned acl_rights(const struct acl *acl, const struct acl_subject *who,
    const char *name, size_t name_len);
/* Are who's rights the same on every name? Then *rights holds them. */
bool acl_rights_uniform(const struct acl *acl, const struct acl_subject *who,
    unsigned *rights);
/*
 * Is who an administrator: uid 0, the daemon's own uid self_uid, or a
 * principal named by an admin line? The caller stores it in who->admin.
 */
bool acl_is_admin(const struct acl *acl, const struct acl_subject *who,
    uid_t self_uid);
/* Add "admin PRINCIPAL" (the admin config key); -EINVAL with err filled. */
int acl_add_admin(struct acl *acl, const char *principal, char *err,
    size_t errlen);
/*
 * Do the rules name users or groups (acl, quota or admin lines with user:
 * or group:)? Only then must a UNIX peer's names be looked up.
 */
bool acl_needs_names(const struct acl *acl);
/* Are all names ruled by the defaults alone (no acl or protect line)? */
bool acl_defaults_only(const struct acl *acl);
/* The default rights of who (step 3 of the evaluation). */
unsigned acl_default_rights(const struct acl_subject *who);
/* A unique number of this ACL (a reloaded one has another). */
uint64_t acl_serial(const struct acl *acl);
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
/*
 * The quota of a kind for who: the first matching quota line, else none for
 * an administrator and acl_quota_default() for anyone else; 0 means
 * unlimited.
 */
uint64_t acl_quota(const struct acl *acl, const struct acl_subject *who,
    enum acl_quota_kind kind);
/* The built-in limit of a kind (ACL_DEFAULT_*). */
uint64_t acl_quota_default(enum acl_quota_kind kind);
/* Name of a quota kind ("connections", "sessions", ...). */
const char *acl_quota_name(enum acl_quota_kind kind);
/* Number of acl, protect, quota and admin lines held (0: defaults only). */
size_t acl_count(const struct acl *acl);
/* Name of a single right, for logs ("inspect", "use", "create", "admin"). */
const char *acl_right_name(enum acl_right right);

#endif
