/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/access.c - the connection policy (struct conn_policy): identities
 * counted against quotas, ACL checks. It decides; conn.c replies.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "core/list.h"
#include "core/strcopy.h"
#include "daemon/access.h"
#include "daemon/conn.h"
#include "daemon/logging.h"
#include "daemon/server.h"
#include "daemon/xprt.h"
#include "security/acl.h"

/*
 * What one principal has open: connections (for its connection quota; the
 * state machine counts what outlives a request), the replies they left
 * unread (its output quota), and a copy of its identity to look the quotas
 * up with.
 */
struct access_count {
	struct list_head	entry;
	size_t			n;
	struct acl_subject	subject;
	/* Bytes of replies its connections' sockets have not taken. */
	_Atomic uint64_t	output;
};

#define ACCESS_LAST_NAME	64	/* longer names are checked every time */

struct access_id {
	struct acl_subject	subject;
	struct access_count	*count;
	bool			pending;	/* user and groups not looked up */
	/* Looked up off the lock by its own loop, taken at the next check: */
	bool			found;
	struct acl_subject	names;
	/* Decided under the ACL numbered serial (redone after a reload): */
	uint64_t		serial;
	unsigned int		rights;		/* acl_default_rights() */
	bool			uniform;	/* the same rights on every name: */
	unsigned int		uniform_rights;	/* these (acl_rights_uniform()) */
	uint64_t		limit[SM_NLIMITS];
	/*
	 * The last name checked (valid) and its rights, under the same serial:
	 * a client names the same few names again and again, so the rules are
	 * not walked nor the name validated on each request. 0: none.
	 */
	uint8_t			last_len;
	unsigned int		last_rights;
	char			last_name[ACCESS_LAST_NAME];
	uint64_t		output;		/* its output quota (0: none) */
};

static void access_close_locked(struct access_id *id);

/* The per-principal limits handed to the state machine, by quota kind. */
static const enum acl_quota_kind access_limit_kind[SM_NLIMITS] = {
	[SM_LIMIT_SESSIONS] = ACL_QUOTA_SESSIONS,
	[SM_LIMIT_PERMITS] = ACL_QUOTA_PERMITS,
	[SM_LIMIT_WAITERS] = ACL_QUOTA_WAITERS,
	[SM_LIMIT_SEMAPHORES] = ACL_QUOTA_SEMAPHORES,
	[SM_LIMIT_WATCHES] = ACL_QUOTA_WATCHES,
};

/*
 * Few distinct principals connect to one daemon (users, services), so a
 * list is enough; it holds only principals with a connection open.
 */
static struct list_head access_counts = LIST_HEAD_INIT(access_counts);

/* Find a principal's entry. */
static struct access_count *access_count_find(const char *principal)
{
	struct access_count *ac;
	struct list_head *pos;

	list_for_each(pos, &access_counts) {
		ac = list_entry(pos, struct access_count, entry);
		if (strcmp(ac->subject.principal, principal) == 0)
			return ac;
	}
	return NULL;
}

/* Copy an identity (principal, uid/user or cn, groups). */
int access_subject_copy(struct acl_subject *dst,
    const struct acl_subject *src)
{
	const char *g = src->groups, *end = src->groups + src->groups_len;
	int r = 0;

	acl_subject_init(dst);
	if (src->kind == ACL_SUBJECT_UID)
		r = acl_subject_set_uid(dst, src->uid,
		    src->user_len > 0 ? src->user : NULL);
	else if (src->kind == ACL_SUBJECT_CN)
		r = acl_subject_set_cn(dst, src->principal + 3,
		    src->principal_len - 3);
	for (; r == 0 && g != NULL && g < end; g += strlen(g) + 1)
		r = acl_subject_add_group(dst, g);
	dst->admin = src->admin;
	return r;
}

/* The entry of who, made on first use. */
static struct access_count *access_count_get(const struct acl_subject *who)
{
	struct access_count *ac = access_count_find(who->principal);

	if (ac != NULL)
		return ac;
	ac = calloc(1, sizeof *ac);
	if (ac == NULL)
		return NULL;
	if (access_subject_copy(&ac->subject, who) != 0) {
		acl_subject_clear(&ac->subject);
		free(ac);
		return NULL;
	}
	list_add_tail(&ac->entry, &access_counts);
	return ac;
}

/* Free an entry once nothing is counted on it. */
static void access_count_maybe_free(struct access_count *ac)
{
	if (ac == NULL || ac->n > 0)
		return;
	list_del_init(&ac->entry);
	acl_subject_clear(&ac->subject);
	free(ac);
}

/* Drop one connection from a count. */
static void access_count_put(struct access_count *ac)
{
	if (ac == NULL)
		return;
	ac->n--;
	access_count_maybe_free(ac);
}

/*
 * The state's List visibility hook (sm_visible_fn): a name is listed when
 * the connection's principal may inspect it. A hidden name under a
 * protected prefix reports that prefix, so List steps over the whole run.
 * Called under the state lock on any loop's thread (and the log's): reads
 * only the connection and the configuration, keeps nothing.
 */
static bool access_visible_cb(void *arg, void *conn, const char *name,
    size_t len, size_t *skip_len)
{
	const struct server *srv = arg;
	const struct acl *acl = srv->cfg.acl;
	const struct conn *c = conn;

	/* No connection here (replayed, another node's): no one reads it. */
	if (c == NULL)
		return true;
	if (c->id == NULL)
		return false;
	/* Without acl and protect lines List was checked on its prefix. */
	if (acl_defaults_only(acl))
		return (acl_default_rights(&c->id->subject) & ACL_INSPECT) != 0;
	if (acl_allows(acl, &c->id->subject, name, len, ACL_INSPECT))
		return true;
	*skip_len = acl_hidden_prefix(acl, &c->id->subject, name, len,
	    ACL_INSPECT);
	return false;
}

/*
 * Decide what does not depend on the name under the current ACL: whether
 * the subject is an administrator, its default rights and its limits. Done
 * when the connection opens and again after a reload brought another ACL.
 */
static void access_refresh(struct access_id *id, const struct acl *acl)
{
	unsigned int i;

	id->serial = acl_serial(acl);
	id->last_len = 0;
	id->subject.admin = acl_is_admin(acl, &id->subject, geteuid());
	id->rights = acl_default_rights(&id->subject);
	id->uniform = acl_rights_uniform(acl, &id->subject, &id->uniform_rights);
	for (i = 0; i < SM_NLIMITS; i++)
		id->limit[i] = acl_quota(acl, &id->subject, access_limit_kind[i]);
	id->output = acl_quota(acl, &id->subject, ACL_QUOTA_OUTPUT);
}

/*
 * Count a new connection, whose identity its transport worked out before
 * the lock, against its principal's connection quota (under the lock).
 */
static int access_open_locked(struct server *srv, struct acl_subject *who,
    bool pending, struct access_id **out, char *why, size_t len)
{
	struct access_id *id;
	uint64_t quota;

	*out = NULL;
	id = calloc(1, sizeof *id);
	if (id == NULL)
		return -ENOMEM;
	id->subject = *who;	/* takes over its groups */
	acl_subject_init(who);
	acl_subject_init(&id->names);
	id->pending = pending;
	id->count = access_count_get(&id->subject);
	if (id->count == NULL) {
		acl_subject_clear(&id->subject);
		free(id);
		return -ENOMEM;
	}
	access_refresh(id, srv->cfg.acl);
	quota = acl_quota(srv->cfg.acl, &id->subject, ACL_QUOTA_CONNECTIONS);
	id->count->n++;
	if (quota != 0 && id->count->n > quota) {
		snprintf(why, len, "quota: %s may have %" PRIu64
		    " connection(s) open (quota connections)",
		    id->subject.principal, quota);
		log_notice("%s, refusing another", why);
		access_close_locked(id);
		return -EDQUOT;
	}
	*out = id;
	return 0;
}

/*
 * Off the lock, on c's own loop: a UNIX peer accepted while no rule named
 * users or groups, now that some do, has its names looked up (NSS) and
 * kept for the next check.
 */
static void access_prepare(struct conn *c)
{
	struct access_id *id = c->id;

	if (id == NULL || !id->pending || id->found ||
	    !SRV_LIVE(c->srv, acl_names))
		return;
	acl_subject_clear(&id->names);
	c->xprt->identify(c, NULL, true, &id->names, NULL, 0);
	id->found = true;
}

/*
 * Take the user and group names of a UNIX peer accepted while there were
 * no rules, now that there are: rules naming user: or group: must see them
 * (a deny for user:bob before an allow for * would otherwise be passed
 * over). Its principal's count gets them too, for group quotas. They were
 * looked up by its loop before the lock (access_prepare()); only a reload
 * that came between that look and the lock makes us look here.
 */
static void access_resolve(struct access_id *id, const struct conn *c)
{
	if (!id->found) {
		acl_subject_clear(&id->names);
		c->xprt->identify(c, NULL, true, &id->names, NULL, 0);
	}
	id->pending = false;
	id->found = false;
	if (strcmp(id->names.principal, id->subject.principal) != 0) {
		acl_subject_clear(&id->names);
		return;
	}
	acl_subject_clear(&id->subject);
	id->subject = id->names;	/* takes over its groups */
	acl_subject_init(&id->names);
	id->serial = 0;		/* admin lines may name its user or groups */
	if (id->count != NULL && id->count->subject.user_len == 0 &&
	    id->count->subject.ngroups == 0) {
		acl_subject_clear(&id->count->subject);
		if (access_subject_copy(&id->count->subject, &id->subject) != 0)
			log_warn("%s: out of memory copying an identity",
			    id->subject.principal);
	}
}

/* Forget a connection's identity (under the lock: the counts). */
static void access_close_locked(struct access_id *id)
{
	if (id == NULL)
		return;
	access_count_put(id->count);
	acl_subject_clear(&id->subject);
	acl_subject_clear(&id->names);
	free(id);
}

/* The principal of an identity. */
static const char *access_principal(const struct access_id *id)
{
	return id != NULL ? id->subject.principal : "anonymous";
}

/*
 * The ACL right each right of the op table (state.h) asks for. Managing a
 * name (delete, set-limit, set-rate, release of a hold) needs create: the
 * state machine then lets only the principal that created the name do it,
 * unless the caller has admin on it too.
 */
/* What follows the name when a down with a limit is refused. */
#define ACCESS_DOWN_LIMIT	" by a down with a limit (that needs the create right " \
				"besides use; a down without one only uses names)"

static const enum acl_right access_right[] = {
	[SM_RIGHT_NONE] = 0,
	[SM_RIGHT_INSPECT] = ACL_INSPECT,
	[SM_RIGHT_USE] = ACL_USE,
	[SM_RIGHT_CREATE] = ACL_CREATE,
	[SM_RIGHT_MANAGE] = ACL_CREATE,
};

/*
 * What a request needs, read from the op table (state.h): the name it acts
 * on, the right it needs there, and the verb (and what follows the name)
 * for a refusal. False: no name to check - hello, ping, cancel, detach and
 * where; a multi-name down, whose names access_check_each() checks one by
 * one; an unknown op. A cluster request is the node's, not the state's:
 * its view needs inspect (its row), a change of the cluster admin.
 */
static bool access_need(const struct sm_op *op, const Semd__Request *req,
    const char **name, enum acl_right *right, const char **verb,
    const char **after)
{
	if (op == NULL || (*name = sm_op_target(op, req)) == NULL)
		return false;
	*right = access_right[op->right];
	*verb = op->verb;
	*after = op->after;
	if (req->op_case == SEMD__REQUEST__OP_DOWN && req->down->limit > 0) {
		/* a down with a limit makes a missing name: create too */
		*right = (enum acl_right)(ACL_USE | ACL_CREATE);
		*verb = "create";
		*after = ACCESS_DOWN_LIMIT;
	}
	if (req->op_case == SEMD__REQUEST__OP_CLUSTER &&
	    req->cluster->action != SEMD__CLUSTER__ACTION__STATUS) {
		/* a change of the cluster, not a look at it: admin */
		*right = ACL_ADMIN;
		*verb = "change the cluster";
	}
	return true;
}

/*
 * A multi-name down (op's target: each name) needs op's right on every
 * name; administrators of all of them are administrators for it. False
 * with the refusal in msg.
 */
static bool access_check_each(struct access_id *id, const struct acl *acl,
    const struct sm_op *op, const Semd__DownMulti *dm, struct sm_caller *who,
    char *msg, size_t len)
{
	unsigned int right = access_right[op->right], rights, all = ACL_RIGHTS_ALL;
	const char *name;
	size_t i, n;

	for (i = 0; i < dm->n_wants; i++) {
		unsigned int need = right;

		name = dm->wants[i]->name;
		n = strlen(name);
		/* An invalid name gets the state machine's INVALID_ARGUMENT. */
		if (n == 0 || !sm_name_valid(name, n))
			continue;
		rights = acl_defaults_only(acl) ? id->rights :
		    acl_rights(acl, &id->subject, name, n);
		all &= rights;
		if (dm->wants[i]->limit > 0)
			need |= ACL_CREATE;	/* it makes a missing name */
		if ((rights & need) != need) {
			snprintf(msg, len, "%s may not %s %s%s", id->subject.principal,
			    need != right ? "create" : op->verb, name,
			    need != right ? ACCESS_DOWN_LIMIT : "");
			return false;
		}
	}
	who->privs = (all & ACL_ADMIN) ? SM_PRIV_ADMIN : 0;
	return true;
}

/*
 * Log a denial, at most ACCESS_LOG_PER_S a second: a client hammering at a
 * name it may not use must not flood the log. The lines held back are
 * counted in the next one.
 */
#define ACCESS_LOG_PER_S 20
static void access_log_denial(const struct conn *c, uint64_t id,
    const char *msg)
{
	static uint64_t second, logged, held_back;
	uint64_t now = server_now() / 1000;

	if (now != second) {
		if (held_back > 0)
			log_notice("%" PRIu64 " more denied request(s) not logged",
			    held_back);
		second = now;
		logged = 0;
		held_back = 0;
	}
	if (logged++ >= ACCESS_LOG_PER_S) {
		held_back++;
		return;
	}
	log_notice("%s: request %" PRIu64 " denied: %s", c->peer, id, msg);
}

/* Any thread: a backlog of id's principal grew or shrank by delta bytes. */
static void access_output(struct access_id *id, int64_t delta)
{
	atomic_fetch_add_explicit(&id->count->output, (uint64_t)delta,
	    memory_order_relaxed);
}

/* Under the lock: are the backlogs of id's principal over its quota? */
static bool access_output_over_locked(const struct access_id *id)
{
	return id != NULL && id->output != 0 &&
	    atomic_load_explicit(&id->count->output, memory_order_relaxed) >
	    id->output;
}

/*
 * Can the answer to req be big? Those are refused while the principal's
 * unread replies are over its output quota; what gives back or keeps a
 * session (up, release, cancel, a ping without a payload, ...) never is.
 */
static bool access_big_answer(const Semd__Request *req)
{
	switch (req->op_case) {
	case SEMD__REQUEST__OP_INFO:
	case SEMD__REQUEST__OP_LIST:
	case SEMD__REQUEST__OP_STATS:
	case SEMD__REQUEST__OP_HOLDS:
	case SEMD__REQUEST__OP_WHERE:
	case SEMD__REQUEST__OP_WATCH:
	case SEMD__REQUEST__OP_BACKUP:
	case SEMD__REQUEST__OP_CLUSTER:
		return true;
	case SEMD__REQUEST__OP_PING:
		return req->ping->payload.len > 0;
	default:
		return false;
	}
}

/*
 * Check one request against the ACL (under the lock): 0, or
 * PERMISSION_DENIED with the refusal in msg, for conn.c to answer; or
 * RESOURCE_EXHAUSTED for a request with a big answer from a principal over
 * its output quota.
 * Runs on every request: with no acl or protect lines it is a compare of
 * the ACL's serial and a copy of the limits decided when the connection
 * opened (or after the last reload).
 */
static int access_check_locked(const struct conn *c, const Semd__Request *req,
    struct sm_caller *who, char *msg, size_t msglen)
{
	const struct acl *acl = c->srv->cfg.acl;
	struct access_id *id = c->id;
	const struct sm_op *op = sm_op(req->op_case);
	enum acl_right right;
	const char *name, *verb, *after;
	unsigned int rights;
	size_t len;

	memset(who, 0, sizeof *who);
	if (id == NULL)
		return 0;	/* cannot happen: every conn has an identity */
	if (id->pending && acl_needs_names(acl))
		access_resolve(id, c);
	if (id->serial != acl_serial(acl))
		access_refresh(id, acl);
	memcpy(who->limit, id->limit, sizeof who->limit);
	if (id->subject.admin)
		who->privs = SM_PRIV_ADMIN;
	if (access_output_over_locked(id) && access_big_answer(req)) {
		snprintf(msg, msglen, "quota: %s has %" PRIu64 " bytes of replies "
		    "unread, past its output quota (%" PRIu64 "): read them first",
		    id->subject.principal, atomic_load_explicit(&id->count->output,
		    memory_order_relaxed), id->output);
		return SEMD__CODE__RESOURCE_EXHAUSTED;
	}
	/*
	 * Before Hello the state machine answers PROTOCOL_ERROR anyway; a
	 * cluster's status is answered by the node without a session, so it
	 * is checked from the first request on.
	 */
	if (c->hello && op != NULL && op->target == SM_TARGET_EACH) {
		if (access_check_each(id, acl, op, req->down_multi, who, msg,
		    msglen))
			return 0;
		goto denied;
	}
	if ((!c->hello && !sm_op_is_node(req->op_case)) ||
	    !access_need(op, req, &name, &right, &verb, &after))
		return 0;
	if (id->uniform) {
		/* the same on every name: the name is looked at on a refusal only */
		rights = id->uniform_rights;
		len = 0;
	} else if ((len = strlen(name)) > 0 && len == id->last_len &&
	    strcopy_same(name, id->last_name, len)) {
		rights = id->last_rights;
	} else {
		/* An invalid name gets the state machine's INVALID_ARGUMENT. */
		if (len > 0 && !sm_name_valid(name, len))
			return 0;
		rights = acl_defaults_only(acl) ? id->rights :
		    acl_rights(acl, &id->subject, name, len);
		if (len > 0 && len < sizeof id->last_name) {
			memcpy(id->last_name, name, len);
			id->last_len = (uint8_t)len;
			id->last_rights = rights;
		}
	}
	who->privs = (rights & ACL_ADMIN) ? SM_PRIV_ADMIN : 0;
	if ((rights & (unsigned)right) == (unsigned)right)
		return 0;
	/* An invalid name gets the state machine's INVALID_ARGUMENT. */
	if (id->uniform && (len = strlen(name)) > 0 && !sm_name_valid(name, len))
		return 0;
	if (len > 0)
		snprintf(msg, msglen, "%s may not %s %s%s", id->subject.principal,
		    verb, name, after);
	else
		snprintf(msg, msglen, "%s may not %s%s: that needs the %s right "
		    "on every name", id->subject.principal, verb,
		    req->op_case == SEMD__REQUEST__OP_CLUSTER ? "" : " every name",
		    acl_right_name(right));
denied:
	access_log_denial(c, req->id, msg);
	return SEMD__CODE__PERMISSION_DENIED;
}

static const struct conn_policy access_policy = {
	.open_locked = access_open_locked,
	.close_locked = access_close_locked,
	.principal = access_principal,
	.prepare = access_prepare,
	.check_locked = access_check_locked,
	.output = access_output,
	.output_over_locked = access_output_over_locked,
};

/* The policy of srv's connections, and the filter of List and Watch. */
void access_init(struct server *srv)
{
	srv->policy = &access_policy;
	sm_set_visible(srv->sm, access_visible_cb, srv);
}
