/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * security/tls_tickets.h - session tickets of a TLS server: a ring of
 * ticket keys that rotates, and the rules a ticket must pass to resume.
 *
 * A ring belongs to one trust setting: the CA file's bytes and the
 * client-auth mode, hashed into a binding (32 bytes). Every ticket carries
 * the binding it was sealed under and the time of the full handshake that
 * proved the client's certificate; a ticket resumes only under the same
 * binding, within the lifetime counted from that full handshake (renewed
 * tickets do not extend it), and while the certificate it names is still
 * within its validity. Anything else is a full handshake, where the
 * certificate meets the CA loaded now.
 *
 * Keys: a new one seals tickets every `rotate` seconds; an old one only
 * opens them until the last ticket it sealed has expired (rotate +
 * lifetime after it began), then it is erased. Keys are random, never
 * written anywhere: a restart is a full handshake for everyone.
 */
#ifndef SEMD_SECURITY_TLS_TICKETS_H
#define SEMD_SECURITY_TLS_TICKETS_H

#include <stdbool.h>
#include <stdint.h>

#include <openssl/ssl.h>

#define TLS_BIND_LEN	32	/* SHA-256; also the session id context */

struct tls_tickets;

/*
 * The binding of a trust setting: SHA-256 over the client-auth mode and
 * the bytes of ca_file (NULL: none). 0, or -errno when the file cannot be
 * read.
 */
int tls_tickets_bind(const char *ca_file, int client_auth,
    unsigned char out[TLS_BIND_LEN]);
/* A new ring for a binding; NULL when out of memory. */
struct tls_tickets *tls_tickets_new(const unsigned char bind[TLS_BIND_LEN],
    uint32_t lifetime_s, uint32_t rotate_s);
/* Is ring r for this binding and these times (so a reload may keep it)? */
bool tls_tickets_same(const struct tls_tickets *r,
    const unsigned char bind[TLS_BIND_LEN], uint32_t lifetime_s,
    uint32_t rotate_s);
/* Take and drop a reference; the last one erases the keys. */
void tls_tickets_ref(struct tls_tickets *r);
void tls_tickets_unref(struct tls_tickets *r);
/*
 * Make ctx (a server context) issue and accept tickets from ring r: one
 * ticket per handshake, stateless, sealed by the ring's keys, with the
 * rules above. ctx takes a reference. 0, or -ENOMEM.
 */
int tls_tickets_install(SSL_CTX *ctx, struct tls_tickets *r);

#endif
