/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/session/dispatch.c - a reply read off the connection, taken by the
 * bookkeeping (lock held): an answer completes its request (or, refused
 * unrun by a node that does not lead, waits to be sent to the leader), a
 * HoldLost notice takes the hold out and reports it, a watch's event goes
 * to its watch, any other notice is reported.
 */
#include <stdlib.h>

#include "client/session/session.h"

/* A hold of the session is gone (a HoldLost notice): take it out of the
 * bookkeeping and report it, saying why. Holds the library does not track
 * (given back meanwhile, or never the caller's) are not reported. */
static void hold_lost_locked(struct semc *c, const Semd__Reply *rp, struct semc_deliver *d)
{
	const Semd__HoldLost *hl = rp->hold_lost;
	struct semc_hold *h, ev;
	const char *why;
	int err;

	if ((h = semc_hold_take_locked(c, hl->permit_id)) == NULL)
		return;
	switch (rp->code) {
	case SEMD__CODE__CANCELLED:
		err = SEMC_E_CANCELLED;
		why = "the hold was force-released or its semaphore deleted";
		break;
	case SEMD__CODE__SESSION_EXPIRED:
		err = SEMC_E_SESSION_EXPIRED;
		why = "the session's lease ran out on the server";
		break;
	case SEMD__CODE__UNAVAILABLE:
		err = SEMC_E_UNAVAILABLE;
		why = "the server is shutting down";
		break;
	default:
		err = rp->code == SEMD__CODE__OK ? SEMC_E_HOLD_LOST : semc_code_error(rp->code);
		why = "the server took the hold back";
		break;
	}
	ev = *h;
	ev.name = hl->name != NULL && *hl->name != '\0' ? hl->name : h->name;
	if (hl->token != 0)
		ev.token = hl->token;
	if (hl->n != 0)
		ev.n = hl->n;
	if (rp->message != NULL && *rp->message != '\0')
		why = rp->message;
	semc_event_push_locked(c, d, SEMC_EV_HOLD_LOST, err, why, &ev);
	semc_hold_free(h);
}

/* Hand a decoded reply to its request (or report a notice). */
void semc_dispatch_locked(struct semc *c, Semd__Reply *rp, struct semc_deliver *d)
{
	struct semc_req *r;

	if (rp->id == 0 && rp->body_case == SEMD__REPLY__BODY_HOLD_LOST) {
		hold_lost_locked(c, rp, d);
		semd__reply__free_unpacked(rp, NULL);
		return;
	}
	if (rp->id == 0 && rp->body_case == SEMD__REPLY__BODY_WATCH_EVENT) {
		struct semc_watch_event *ev = semc_watch_event_new(rp->watch_event);

		semd__reply__free_unpacked(rp, NULL);
		if (ev != NULL)
			semc_event_watch_locked(c, d, ev);
		return;
	}
	if (rp->id == 0) {
		/* A node that stopped leading says which one leads now. */
		if (rp->body_case == SEMD__REPLY__BODY_REDIRECT)
			semc_addr_redirect_locked(c, rp->redirect);
		semc_event_push_locked(c, d, SEMC_EV_NOTICE, semc_code_error(rp->code),
				       rp->message, NULL);
		semd__reply__free_unpacked(rp, NULL);
		return;
	}
	for (r = c->pending; r != NULL; r = r->next)
		if (r->id == rp->id)
			break;
	if (r == NULL) {
		/* a late answer to a request given up on: nothing holds it */
		semd__reply__free_unpacked(rp, NULL);
		return;
	}
	if (rp->code == SEMD__CODE__UNAVAILABLE &&
	    rp->body_case == SEMD__REPLY__BODY_REDIRECT &&
	    r->op != SEMD__REQUEST__OP_CLUSTER && c->reconnect && !c->closing) {
		/*
		 * A node that does not lead (any more) refused it without
		 * running it, and closes the connection: the request waits to
		 * be sent again to the leader after the reconnection, as one
		 * never sent (so an up, even by count, is not lost). Told to
		 * the caller, an up's error would leave its permit held.
		 */
		semc_addr_redirect_locked(c, rp->redirect);
		r->not_run = true;
		semd__reply__free_unpacked(rp, NULL);
		return;
	}
	semc_req_complete_locked(c, r, rp, 0, d);
}
