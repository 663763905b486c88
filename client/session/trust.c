/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/session/trust.c - how long the session is trusted: the clock of
 * its client-side lease, or, without a lease in a cluster, of the guard
 * (HelloReply.guard_ms, the election timeout: handle.h), and whether a
 * grant arriving now is void. Reads the handle only: the session's end is
 * session.c's.
 */
#include "client/session/session.h"

/* Whether the session holds a permit of its own (an owned one: a grant of
 * permit id 0 was consumed, signal mode or a rate, and is nobody's). */
static bool owns_permits(const struct semc *c)
{
	const struct semc_hold *h;

	for (h = c->holds; h != NULL; h = h->next)
		if (h->permit_id != 0)
			return true;
	return false;
}

/* How long after lease_base the session is trusted (ms; 0: not counted):
 * its lease; without one, in a cluster, the guard while it owns permits,
 * or for a grant that arrives (grant). */
static int64_t trust_span(const struct semc *c, bool grant)
{
	if (c->granted_lease > 0)
		return c->granted_lease;
	return c->guard_ms > 0 && (grant || owns_permits(c)) ? c->guard_ms : 0;
}

/* lease_base + span, less the drift D and the margin M. */
static int64_t trust_end(const struct semc *c, int64_t span)
{
	int64_t margin = span / 20 > SEMC_LEASE_MARGIN_MIN ? span / 20 : SEMC_LEASE_MARGIN_MIN;

	return c->lease_base + span - span * SEMC_LEASE_DRIFT_PPM / 1000000 - margin;
}

/* When the client-side lease of the session ends (monotonic ms; -1: no
 * lease). The daemon counts lease_ms from the last frame it received, which
 * left here no earlier than lease_base; under a clock-rate difference below
 * D, lease * (1 - D) here is at most lease there, and M covers the wake-up
 * of whoever acts on the end (a thread, an event loop, semctl's SIGKILL)
 * and the daemon's clock read before the read that brought the frame. */
int64_t semc_lease_end_locked(const struct semc *c)
{
	if (c->session == 0 || c->granted_lease == 0 || c->lease_base == 0)
		return -1;
	return trust_end(c, c->granted_lease);
}

/* When the session is trusted no more (monotonic ms; -1: not counted): the
 * end of its client-side lease or, without a lease, in a cluster, of the
 * guard while it owns permits (the voters that heard from the leader after
 * lease_base elect no other leader sooner); at once after a void grant. */
int64_t semc_trust_end_locked(const struct semc *c)
{
	int64_t span = trust_span(c, false);

	if (c->session != 0 && c->untrusted)
		return 0;
	if (c->session == 0 || span == 0 || c->lease_base == 0)
		return -1;
	return trust_end(c, span);
}

/* Whether a session without a lease, in a cluster, owns permits: the
 * guard's pings go on while it does (or while a down of it waits). */
bool semc_guard_holds_locked(const struct semc *c)
{
	return c->granted_lease == 0 && c->guard_ms > 0 && owns_permits(c);
}

/* Whether a session-bound grant of r arriving now (reply rp) is void: it
 * came after the end of the client-side lease (or guard), counted from the
 * latest request answered, r itself included - from a leader paused, or cut
 * off, since. A grant of permit id 0 (signal mode, a rate) is consumed,
 * nobody's: never void (voiding it would lose it). */
bool semc_grant_void_locked(const struct semc *c, const struct semc_req *r,
			    const Semd__Reply *rp, int64_t now)
{
	int64_t span = trust_span(c, true);

	if (r->lease_ms != 0)
		return false;	/* a detached hold has a lease of its own */
	if (!(rp->body_case == SEMD__REPLY__BODY_MULTI_GRANT ||
	      (rp->body_case == SEMD__REPLY__BODY_GRANT && rp->grant->permit_id != 0 &&
	       r->op == SEMD__REQUEST__OP_DOWN)))
		return false;
	return c->session != 0 && span > 0 && c->lease_base != 0 && now >= trust_end(c, span);
}
