/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_principal.c - principals (who sessions, holds and names
 * belong to, with their counts for the per-principal caps) and identities.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* --- principals, identities ---------------------------------------------- */

/* Does a principal node carry this name? */
static bool principal_eq(const struct hnode *n, const void *key)
{
	const struct sm_principal *pr = container_of(n, struct sm_principal, node);
	const struct name_key *k = key;

	return pr->len == k->len && memcmp(pr->name, k->name, k->len) == 0;
}

/* A reference to the principal named name, made on first use; NULL: no memory. */
struct sm_principal *principal_get(struct sm *sm, const char *name)
{
	size_t len = strlen(name);
	struct sm_principal *pr = principal_find(sm, name);

	if (pr != NULL)
		return principal_ref(pr);
	pr = sm_alloc(sm, sizeof *pr + len + 1);
	if (pr == NULL)
		return NULL;
	pr->refs = 1;
	INIT_LIST_HEAD(&pr->holds);
	pr->len = len;
	memcpy(pr->name, name, len);
	hmap_insert(&sm->principals, &pr->node, name_hash(sm, name, len));
	return pr;
}

/* The principal named name, or NULL (nothing of it is left). */
struct sm_principal *principal_find(const struct sm *sm, const char *name)
{
	struct name_key k = { name, strlen(name) };
	struct hnode *n;

	n = hmap_find(&sm->principals, name_hash(sm, k.name, k.len),
	    principal_eq, &k);
	return n ? container_of(n, struct sm_principal, node) : NULL;
}

/* Another reference to pr. */
struct sm_principal *principal_ref(struct sm_principal *pr)
{
	pr->refs++;
	return pr;
}

/* Drop a reference; the last frees the principal. */
void principal_put(struct sm *sm, struct sm_principal *pr)
{
	if (pr == NULL || --pr->refs > 0)
		return;
	hmap_remove(&sm->principals, &pr->node);
	sm_dealloc(sm, pr, sizeof *pr + pr->len + 1);
}

const char *const limit_names[SM_NLIMITS] = {
	[SM_LIMIT_SESSIONS] = "sessions",
	[SM_LIMIT_PERMITS] = "permits",
	[SM_LIMIT_WAITERS] = "waiters",
	[SM_LIMIT_SEMAPHORES] = "semaphores",
	[SM_LIMIT_WATCHES] = "watches",
};

/*
 * May pr have n more of kind under the caller's cap? Otherwise answer
 * RESOURCE_EXHAUSTED naming the cap.
 */
bool principal_room(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_principal *pr, enum sm_limit_kind kind, uint64_t n)
{
	uint64_t cap = sm->who != NULL ? sm->who->limit[kind] : 0;

	if (cap == 0 || (pr->count[kind] <= cap && n <= cap - pr->count[kind]))
		return true;
	reply_err(sm, c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
	    "quota: %s has %" PRIu64 " %s, %" PRIu64 " more would pass its %s quota (%" PRIu64 ")",
	    pr->name, pr->count[kind], limit_names[kind], n, limit_names[kind], cap);
	return false;
}

/* Count delta more (or fewer) of kind for pr. */
void principal_count(struct sm_principal *pr, enum sm_limit_kind kind,
    int64_t delta)
{
	pr->count[kind] += (uint64_t)delta;
}

/* Take a reference. */
struct sm_ident *ident_get(struct sm_ident *id)
{
	id->refs++;
	return id;
}

/* Drop a reference; free on the last. */
void ident_put(struct sm *sm, struct sm_ident *id)
{
	if (id == NULL || --id->refs > 0)
		return;
	evrec_ident_free(sm, id);
	principal_put(sm, id->pr);
	sm_strfree(sm, id->client_name);
	sm_strfree(sm, id->host);
	sm_dealloc(sm, id, sizeof *id);
}

/* Make an identity from a principal and a Hello. */
struct sm_ident *ident_new(struct sm *sm, struct sm_principal *pr,
    const Semd__Hello *h)
{
	struct sm_ident *id = sm_alloc(sm, sizeof *id);

	if (id == NULL)
		return NULL;
	id->refs = 1;
	id->pid = h->pid;
	id->pr = principal_ref(pr);
	id->client_name = sm_label(sm, h->client_name);
	id->host = sm_label(sm, h->host);
	if (id->client_name == NULL || id->host == NULL) {
		ident_put(sm, id);
		return NULL;
	}
	id->client_name_len = (uint16_t)strlen(id->client_name);
	id->host_len = (uint16_t)strlen(id->host);
	if (!evrec_ident(sm, id)) {
		ident_put(sm, id);
		return NULL;
	}
	return id;
}
