/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proto/pbevent.h - a WatchEvent packed by hand, to the very bytes
 * protobuf-c gives (fields in number order, proto3's zeros and empty
 * strings left out): a snapshot carries the watch history's events so
 * (daemon/state/sm_evrec.c), thousands of them in a full history, and
 * protobuf-c's table walks take several times as long for each.
 * tests/daemon/test_fastpb checks the bytes against protobuf-c's on random
 * events.
 */
#ifndef SEMD_PROTO_PBEVENT_H
#define SEMD_PROTO_PBEVENT_H

#include <stddef.h>
#include <stdint.h>

#include "proto/semd.pb-c.h"

/* The lengths of an event's strings (0: an empty string or NULL, left out). */
struct pbevent_lens {
	size_t	name, principal, client_name, host, reason;
};

/* Measure ev's strings into l. */
void pbevent_lens(const Semd__WatchEvent *ev, struct pbevent_lens *l);

/*
 * Pack ev (unknown fields are not written: an event made by the daemon has
 * none) into out, at most cap bytes; returns its length, or 0 (out left
 * undefined) when it is longer than cap. An event with a revision is never
 * empty.
 */
size_t pbevent_pack(const Semd__WatchEvent *ev, uint8_t *out, size_t cap);

#endif
