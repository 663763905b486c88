/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_idem.c - idempotency keys (proto/semd.proto, Idempotency
 * keys): a down's key, kept by its principal with what the down made - its
 * hold (a DownMulti's first still held) or its waiter - so that a retry of
 * the down from any session, on any node, is answered what the first one
 * made and makes nothing new.
 *
 * A key lives exactly as long as what it made: a waiter granted passes it
 * to its hold (wait_wake, wait_grant), a hold released passes it to the
 * next hold of its DownMulti or forgets it, a waiter that ends without a
 * grant forgets it. So a principal has at most one key per hold and waiter
 * it has, bounded by its caps, and a key costs nothing once its permits
 * are back. The key a down brings is sm->idem_next while the down runs:
 * the hold or waiter made for it takes it (idem_hold, idem_wait); when it
 * made neither (a try that would block, a refusal, a grant that holds
 * nothing), the down forgets it (idem_unbound).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* The table's hash of a principal's key. */
static uint64_t idem_hash(const struct sm *sm, const struct sm_principal *pr,
    const char *key, size_t len)
{
	return name_hash(sm, key, len) ^ id_hash(sm, (uintptr_t)pr, 17);
}

struct idem_ref {
	const struct sm_principal	*pr;
	const char			*key;
	size_t				len;
};

/* Is n the key of ref? */
static bool idem_eq(const struct hnode *n, const void *ref)
{
	const struct sm_idem *k = container_of(n, struct sm_idem, node);
	const struct idem_ref *q = ref;

	return k->pr == q->pr && k->len == q->len &&
	    memcmp(k->key, q->key, q->len) == 0;
}

/* Is key (with hash) one a down may carry? Answered INVALID_ARGUMENT if not. */
bool idem_args_ok(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *key, const ProtobufCBinaryData *hash)
{
	size_t i, len = strlen(key);

	for (i = 0; i < len; i++)
		if (key[i] < 0x20 || key[i] > 0x7e)
			break;
	if (len > SM_IDEM_KEY_MAX || i < len || hash->len > SM_IDEM_HASH_MAX) {
		reply_err(sm, c, id, SEMD__CODE__INVALID_ARGUMENT,
		    "an idempotency key is 1 to %d printable characters, its "
		    "request hash at most %d bytes", SM_IDEM_KEY_MAX,
		    SM_IDEM_HASH_MAX);
		return false;
	}
	return true;
}

/* pr's key, or NULL. */
struct sm_idem *idem_find(const struct sm *sm, const struct sm_principal *pr,
    const char *key)
{
	struct idem_ref q = { pr, key, strlen(key) };
	struct hnode *n = hmap_find(&sm->idems, idem_hash(sm, pr, key, q.len),
	    idem_eq, &q);

	return n != NULL ? container_of(n, struct sm_idem, node) : NULL;
}

/* Does k name the request of hash (the same bytes)? */
bool idem_same(const struct sm_idem *k, const ProtobufCBinaryData *hash)
{
	return k->hlen == hash->len &&
	    (hash->len == 0 || memcmp(k->hash, hash->data, hash->len) == 0);
}

/* A new key of pr (in the table, bound to nothing yet); NULL: no memory. */
struct sm_idem *idem_new(struct sm *sm, struct sm_principal *pr,
    const char *key, const ProtobufCBinaryData *hash)
{
	size_t len = strlen(key);
	struct sm_idem *k = sm_alloc(sm, sizeof *k + len + 1);

	if (k == NULL)
		return NULL;
	k->pr = principal_ref(pr);
	k->len = (uint16_t)len;
	memcpy(k->key, key, len + 1);
	k->hlen = (uint8_t)hash->len;
	if (hash->len > 0)
		memcpy(k->hash, hash->data, hash->len);
	hmap_insert(&sm->idems, &k->node, idem_hash(sm, pr, key, len));
	return k;
}

/* Forget a key (what it made keeps going, keyless). */
void idem_free(struct sm *sm, struct sm_idem *k)
{
	if (k == NULL)
		return;
	if (k->hold != NULL)
		k->hold->idem = NULL;
	if (k->wait != NULL)
		k->wait->idem = NULL;
	hmap_remove(&sm->idems, &k->node);
	principal_put(sm, k->pr);
	sm_dealloc(sm, k, sizeof *k + k->len + 1);
}

/* Every key (the state goes). */
void idem_free_all(struct sm *sm)
{
	struct hmap_iter it;
	struct hnode *n;

	sm->idem_next = NULL;
	/* Freeing one frees no other: the iterator goes on. */
	hmap_iter_init(&it, &sm->idems);
	while ((n = hmap_iter_next(&it)) != NULL)
		idem_free(sm, container_of(n, struct sm_idem, node));
}

/* A hold was made for the down that brought sm->idem_next: it keeps it. */
void idem_hold(struct sm *sm, struct sm_hold *h)
{
	struct sm_idem *k = sm->idem_next;

	if (k == NULL)
		return;
	sm->idem_next = NULL;
	k->hold = h;
	h->idem = k;
}

/* The down of sm->idem_next waits as w: w keeps it. */
void idem_wait(struct sm *sm, struct sm_wait *w)
{
	struct sm_idem *k = sm->idem_next;

	if (k == NULL)
		return;
	sm->idem_next = NULL;
	k->wait = w;
	w->idem = k;
}

/* The down made nothing its key could stay with: forgotten. */
void idem_unbound(struct sm *sm)
{
	struct sm_idem *k = sm->idem_next;

	sm->idem_next = NULL;
	idem_free(sm, k);
}

/*
 * w is granted: its key goes to the hold its grant makes (idem_hold). A
 * grant may come in the middle of another down (a refill, a waiter
 * replaced): that down's key is returned, to be put back by
 * idem_grant_end() once the grant is delivered.
 */
struct sm_idem *idem_grant_begin(struct sm *sm, struct sm_wait *w)
{
	struct sm_idem *outer = sm->idem_next, *k = w->idem;

	sm->idem_next = k;
	if (k != NULL) {
		w->idem = NULL;
		k->wait = NULL;
	}
	return outer;
}

/* The grant is delivered: its key, if nothing took it, goes; outer back. */
void idem_grant_end(struct sm *sm, struct sm_idem *outer)
{
	idem_unbound(sm);
	sm->idem_next = outer;
}

/* h is released: its key goes to next (its DownMulti's), or is forgotten. */
void idem_hold_gone(struct sm *sm, struct sm_hold *h, struct sm_hold *next)
{
	struct sm_idem *k = h->idem;

	if (k == NULL)
		return;
	h->idem = NULL;
	k->hold = NULL;
	if (next != NULL && next->idem == NULL) {
		k->hold = next;
		next->idem = k;
		return;
	}
	idem_free(sm, k);
}

/* INVALID_ARGUMENT: k names another request (Reply.key_reused). */
void idem_reply_reused(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_idem *k)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	char msg[400];

	snprintf(msg, sizeof msg, "idempotency key %.255s was used by %s for "
	    "another request", k->key, k->pr->name);
	r.id = id;
	r.code = SEMD__CODE__INVALID_ARGUMENT;
	r.message = msg;
	r.key_reused = true;
	reply_send(sm, c, &r);
}

/* WOULD_BLOCK: the down of this key waits as w (Pending). */
void idem_reply_pending(struct sm *sm, struct sm_client *c, uint64_t id,
    const struct sm_wait *w)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__Pending p = SEMD__PENDING__INIT;
	struct sm_session *s = w->session;

	p.session = s->id;
	p.secret.data = s->secret;
	p.secret.len = sizeof s->secret;
	p.request_id = w->req.request_id;
	p.lease_ms = s->lease_ms;
	r.id = id;
	r.code = SEMD__CODE__WOULD_BLOCK;
	r.message = (char *)"the down of this idempotency key waits";
	r.body_case = SEMD__REPLY__BODY_PENDING;
	r.pending = &p;
	reply_send(sm, c, &r);
}

/* --- the snapshot's section (tag 41) ------------------------------------ */

/* Write one key: principal, key, hash, then what it names. */
static void idem_write(struct sm_batch *b, const struct sm_idem *k)
{
	bytes_int(b, k->pr->len, 2);
	bytes_put(b, k->pr->name, k->pr->len);
	bytes_int(b, k->len, 2);
	bytes_put(b, k->key, k->len);
	bytes_int(b, k->hlen, 1);
	bytes_put(b, k->hash, k->hlen);
	if (k->hold != NULL) {
		bytes_int(b, 1, 1);
		bytes_int(b, k->hold->permit_id, 8);
	} else {
		bytes_int(b, 2, 1);
		bytes_int(b, k->wait->session->id, 8);
		bytes_int(b, k->wait->req.request_id, 8);
	}
}

/*
 * The keys, u32 count then each, in an order every replica has: by name,
 * each name's holds in grant order, then its waiters in line (a
 * DownMulti's at its first name).
 */
bool idem_snap_write(struct sm_batch *b, const struct sm *sm)
{
	const struct list_head *pos;
	const struct sm_member *m;
	const struct sm_hold *h;
	const struct sm_sem *sem;
	struct ordidx_iter it;

	bytes_int(b, hmap_count(&sm->idems), 4);
	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL) {
		list_for_each(pos, &sem->holders) {
			h = list_entry(pos, struct sm_hold, sem_entry);
			if (h->idem != NULL)
				idem_write(b, h->idem);
		}
		list_for_each(pos, &sem->waiters) {
			m = list_entry(pos, struct sm_member, sem_entry);
			if (m->wait->idem != NULL && m->sem == m->wait->m[0].sem)
				idem_write(b, m->wait->idem);
		}
	}
	return !b->failed;
}

/* Read them back, each bound to the hold or waiter it names. */
bool idem_snap_read(struct sm *sm, struct sm_rbuf *r, char *err, size_t errlen)
{
	char pname[SM_PRINCIPAL_MAX + 1], key[SM_IDEM_KEY_MAX + 1];
	uint8_t hash[SM_IDEM_HASH_MAX];
	ProtobufCBinaryData hd = { 0, hash };
	struct sm_principal *pr;
	struct sm_reqkey *rk;
	struct sm_idem *k;
	struct sm_hold *h = NULL;
	struct sm_wait *w = NULL;
	uint64_t n, i, kind, a, q;
	const uint8_t *p;

	n = rbuf_int(r, 4);
	for (i = 0; i < n && !r->bad; i++) {
		(void)rbuf_str(r, 2, pname, sizeof pname - 1);
		(void)rbuf_str(r, 2, key, sizeof key - 1);
		hd.len = (size_t)rbuf_int(r, 1);
		if (hd.len > sizeof hash || (p = rbuf_take(r, hd.len)) == NULL)
			break;
		memcpy(hash, p, hd.len);
		kind = rbuf_int(r, 1);
		a = rbuf_int(r, 8);
		q = kind == 2 ? rbuf_int(r, 8) : 0;
		h = NULL;
		w = NULL;
		if (kind == 1)
			h = permit_find(sm, a);
		else if (kind == 2 && (rk = req_find(sm, a, q)) != NULL &&
		    rk->kind == REQ_WAIT)
			w = container_of(rk, struct sm_wait, req);
		pr = principal_find(sm, pname);
		if (r->bad || key[0] == '\0' || pr == NULL ||
		    (h == NULL && w == NULL) || idem_find(sm, pr, key) != NULL ||
		    (h != NULL && (h->idem != NULL || h->ident->pr != pr)) ||
		    (w != NULL && (w->idem != NULL ||
		    w->session->ident->pr != pr)))
			break;
		if ((k = idem_new(sm, pr, key, &hd)) == NULL) {
			snprintf(err, errlen, "idempotency keys: out of memory");
			return false;
		}
		sm->idem_next = k;
		if (h != NULL)
			idem_hold(sm, h);
		else
			idem_wait(sm, w);
	}
	if (i < n || r->bad) {
		snprintf(err, errlen, "idempotency key %" PRIu64 " of %" PRIu64,
		    i, n);
		return false;
	}
	return true;
}

/*
 * What sm_check() says of the keys: each bound both ways, every hold and
 * waiter with a key in the table. NULL: fine.
 */
const char *idem_check(const struct sm *sm)
{
	const struct list_head *pos;
	const struct sm_member *m;
	const struct sm_sem *sem;
	const struct sm_idem *k;
	struct ordidx_iter oi;
	struct hmap_iter it;
	struct hnode *n;
	size_t bound = 0;

	if (sm->idem_next != NULL)
		return "a key left between calls";
	ordidx_first(&sm->byname, &oi);
	while ((sem = ordidx_next(&oi)) != NULL) {
		list_for_each(pos, &sem->holders)
			bound += list_entry(pos, struct sm_hold, sem_entry)->idem != NULL;
		list_for_each(pos, &sem->waiters) {
			m = list_entry(pos, struct sm_member, sem_entry);
			bound += m->wait->idem != NULL && m == &m->wait->m[0];
		}
	}
	if (bound != hmap_count(&sm->idems))
		return "keys bound and keys kept differ";
	hmap_iter_init(&it, &sm->idems);
	while ((n = hmap_iter_next(&it)) != NULL) {
		k = container_of(n, struct sm_idem, node);
		if ((k->hold == NULL) == (k->wait == NULL))
			return "a key bound to no hold and no waiter, or both";
		if (k->hold != NULL && (k->hold->idem != k ||
		    k->hold->ident->pr != k->pr))
			return "a key's hold is not its";
		if (k->wait != NULL && (k->wait->idem != k ||
		    k->wait->session->ident->pr != k->pr))
			return "a key's waiter is not its";
	}
	return NULL;
}
