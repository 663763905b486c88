/* SPDX-License-Identifier: BSD-2-Clause */
/* security/tls_tickets.c - rotating ticket keys and the rules for resuming. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "security/tls_tickets.h"

#define TICKET_KEYS	16		/* keys alive at once, at most */
#define TICKET_NAME_LEN	16		/* the key name OpenSSL puts in a ticket */
#define TICKET_CA_MAX	(64u << 20)	/* a CA file bigger than this is refused */
#define APPDATA_VERSION	1
#define APPDATA_BIND	8		/* bytes of the binding a ticket carries */
#define APPDATA_LEN	(1 + APPDATA_BIND + 8)
#define CLOCK_SKEW_S	300		/* an auth time this far ahead is accepted */

struct ticket_key {
	unsigned char	name[TICKET_NAME_LEN];
	unsigned char	aes[32];	/* AES-256-CBC */
	unsigned char	hmac[32];	/* HMAC-SHA256 */
	int64_t		born;		/* monotonic s: first sealed with */
};

struct tls_tickets {
	pthread_mutex_t		lock;	/* guards keys and nkeys */
	atomic_int		refs;
	struct ticket_key	keys[TICKET_KEYS];	/* [0] is the newest */
	size_t			nkeys;
	uint32_t		lifetime;	/* seconds */
	uint32_t		rotate;		/* seconds */
	unsigned char		bind[TLS_BIND_LEN];
};

static int tickets_ex_idx = -1;
static pthread_once_t tickets_ex_once = PTHREAD_ONCE_INIT;

/* Monotonic seconds: key ages do not follow the wall clock. */
static int64_t tickets_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec;
}

/* Feed the bytes of path into md; 0 or -errno. */
static int tickets_hash_file(EVP_MD_CTX *md, const char *path)
{
	unsigned char buf[16384];
	size_t n, total = 0;
	FILE *f;
	int r = 0;

	if ((f = fopen(path, "rbe")) == NULL)
		return -errno;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
		total += n;
		if (total > TICKET_CA_MAX) {
			r = -EFBIG;
			break;
		}
		if (EVP_DigestUpdate(md, buf, n) != 1) {
			r = -ENOMEM;
			break;
		}
	}
	if (r == 0 && ferror(f))
		r = -EIO;
	fclose(f);
	return r;
}

/* The binding of a trust setting: the client-auth mode and the CA's bytes. */
int tls_tickets_bind(const char *ca_file, int client_auth,
    unsigned char out[TLS_BIND_LEN])
{
	static const char tag[] = "semd ticket binding 1";
	unsigned char mode = (unsigned char)client_auth;
	unsigned int len = 0;
	EVP_MD_CTX *md;
	int r = 0;

	if ((md = EVP_MD_CTX_new()) == NULL)
		return -ENOMEM;
	if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(md, tag, sizeof tag) != 1 ||
	    EVP_DigestUpdate(md, &mode, 1) != 1)
		r = -ENOMEM;
	if (r == 0 && ca_file != NULL)
		r = tickets_hash_file(md, ca_file);
	if (r == 0 && (EVP_DigestFinal_ex(md, out, &len) != 1 ||
	    len != TLS_BIND_LEN))
		r = -ENOMEM;
	EVP_MD_CTX_free(md);
	return r;
}

/* A new ring for a binding. */
struct tls_tickets *tls_tickets_new(const unsigned char bind[TLS_BIND_LEN],
    uint32_t lifetime_s, uint32_t rotate_s)
{
	struct tls_tickets *r;

	if ((r = calloc(1, sizeof *r)) == NULL)
		return NULL;
	if (pthread_mutex_init(&r->lock, NULL) != 0) {
		free(r);
		return NULL;
	}
	atomic_init(&r->refs, 1);
	r->lifetime = lifetime_s > 0 ? lifetime_s : 1;
	/* Every key that may still open a ticket must fit in the ring. */
	r->rotate = rotate_s > 0 ? rotate_s : r->lifetime;
	if (r->rotate < r->lifetime / (TICKET_KEYS - 1) + 1)
		r->rotate = r->lifetime / (TICKET_KEYS - 1) + 1;
	memcpy(r->bind, bind, TLS_BIND_LEN);
	return r;
}

/* Is ring r for this binding and these times? */
bool tls_tickets_same(const struct tls_tickets *r,
    const unsigned char bind[TLS_BIND_LEN], uint32_t lifetime_s,
    uint32_t rotate_s)
{
	struct tls_tickets probe;

	/* Compare the times as tls_tickets_new() would have set them. */
	probe.lifetime = lifetime_s > 0 ? lifetime_s : 1;
	probe.rotate = rotate_s > 0 ? rotate_s : probe.lifetime;
	if (probe.rotate < probe.lifetime / (TICKET_KEYS - 1) + 1)
		probe.rotate = probe.lifetime / (TICKET_KEYS - 1) + 1;
	return r != NULL && memcmp(r->bind, bind, TLS_BIND_LEN) == 0 &&
	    r->lifetime == probe.lifetime && r->rotate == probe.rotate;
}

/* Take a reference. */
void tls_tickets_ref(struct tls_tickets *r)
{
	atomic_fetch_add(&r->refs, 1);
}

/* Drop a reference; the last one erases the keys. */
void tls_tickets_unref(struct tls_tickets *r)
{
	if (r == NULL || atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	OPENSSL_cleanse(r->keys, sizeof r->keys);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* Erase the keys whose last ticket has expired (under the lock). */
static void tickets_expire_locked(struct tls_tickets *r, int64_t now)
{
	while (r->nkeys > 0 && r->keys[r->nkeys - 1].born +
	    (int64_t)r->rotate + (int64_t)r->lifetime <= now) {
		r->nkeys--;
		OPENSSL_cleanse(&r->keys[r->nkeys], sizeof r->keys[r->nkeys]);
	}
}

/* Start a new sealing key when the newest is rotate seconds old (locked). */
static int tickets_rotate_locked(struct tls_tickets *r, int64_t now)
{
	struct ticket_key k;

	tickets_expire_locked(r, now);
	if (r->nkeys > 0 && now - r->keys[0].born < (int64_t)r->rotate)
		return 0;
	if (RAND_bytes(k.name, sizeof k.name) != 1 ||
	    RAND_priv_bytes(k.aes, sizeof k.aes) != 1 ||
	    RAND_priv_bytes(k.hmac, sizeof k.hmac) != 1) {
		OPENSSL_cleanse(&k, sizeof k);
		return -1;
	}
	k.born = now;
	if (r->nkeys == TICKET_KEYS)
		r->nkeys--;	/* cannot happen with rotate clamped; be safe */
	memmove(&r->keys[1], &r->keys[0], r->nkeys * sizeof r->keys[0]);
	r->keys[0] = k;
	r->nkeys++;
	OPENSSL_cleanse(&k, sizeof k);
	return 0;
}

/* Key the cipher and the MAC for one ticket. */
static int tickets_key_use(const struct ticket_key *k, unsigned char *iv,
    EVP_CIPHER_CTX *ectx, EVP_MAC_CTX *hctx, int enc)
{
	OSSL_PARAM params[3];
	char digest[] = "SHA256";

	params[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY,
	    (void *)k->hmac, sizeof k->hmac);
	params[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    digest, 0);
	params[2] = OSSL_PARAM_construct_end();
	if (EVP_MAC_CTX_set_params(hctx, params) != 1)
		return -1;
	if (enc)
		return EVP_EncryptInit_ex(ectx, EVP_aes_256_cbc(), NULL, k->aes,
		    iv) == 1 ? 0 : -1;
	return EVP_DecryptInit_ex(ectx, EVP_aes_256_cbc(), NULL, k->aes, iv) == 1 ?
	    0 : -1;
}

/* The ring of a context (set by tls_tickets_install()). */
static struct tls_tickets *tickets_of(SSL *s)
{
	return SSL_CTX_get_ex_data(SSL_get_SSL_CTX(s), tickets_ex_idx);
}

/*
 * OpenSSL's ticket key callback: seal with the newest key (a new one when
 * it is due), open with whichever key's name the ticket carries; an
 * older key's ticket is renewed (2), an unknown or erased one is a full
 * handshake (0).
 */
static int tickets_key_cb(SSL *s, unsigned char *name, unsigned char *iv,
    EVP_CIPHER_CTX *ectx, EVP_MAC_CTX *hctx, int enc)
{
	struct tls_tickets *r = tickets_of(s);
	struct ticket_key k;
	int64_t now = tickets_mono();
	size_t i;
	int rc;

	if (r == NULL)
		return enc ? -1 : 0;
	pthread_mutex_lock(&r->lock);
	if (enc) {
		if (tickets_rotate_locked(r, now) != 0) {
			pthread_mutex_unlock(&r->lock);
			return -1;
		}
		i = 0;
	} else {
		tickets_expire_locked(r, now);
		for (i = 0; i < r->nkeys; i++)
			if (CRYPTO_memcmp(r->keys[i].name, name, TICKET_NAME_LEN) == 0)
				break;
		if (i == r->nkeys) {
			pthread_mutex_unlock(&r->lock);
			return 0;
		}
	}
	k = r->keys[i];
	pthread_mutex_unlock(&r->lock);
	if (enc) {
		memcpy(name, k.name, TICKET_NAME_LEN);
		rc = RAND_bytes(iv, EVP_CIPHER_get_iv_length(EVP_aes_256_cbc()));
		rc = rc == 1 ? tickets_key_use(&k, iv, ectx, hctx, 1) : -1;
	} else {
		rc = tickets_key_use(&k, iv, ectx, hctx, 0);
	}
	OPENSSL_cleanse(&k, sizeof k);
	if (rc != 0)
		return -1;
	return !enc && i > 0 ? 2 : 1;
}

/* Write a ticket's application data: version, binding, auth time. */
static void tickets_appdata_put(unsigned char *p, const struct tls_tickets *r,
    uint64_t auth)
{
	int i;

	p[0] = APPDATA_VERSION;
	memcpy(p + 1, r->bind, APPDATA_BIND);
	for (i = 0; i < 8; i++)
		p[1 + APPDATA_BIND + i] = (unsigned char)(auth >> (56 - 8 * i));
}

/* Read the auth time of a ticket's application data for ring r; false if not ours. */
static bool tickets_appdata_get(SSL_SESSION *ss, const struct tls_tickets *r,
    uint64_t *auth)
{
	const unsigned char *p;
	void *data = NULL;
	size_t len = 0;
	int i;

	if (SSL_SESSION_get0_ticket_appdata(ss, &data, &len) != 1 ||
	    data == NULL || len != APPDATA_LEN)
		return false;
	p = data;
	if (p[0] != APPDATA_VERSION ||
	    CRYPTO_memcmp(p + 1, r->bind, APPDATA_BIND) != 0)
		return false;
	*auth = 0;
	for (i = 0; i < 8; i++)
		*auth = *auth << 8 | p[1 + APPDATA_BIND + i];
	return true;
}

/*
 * A ticket is about to be sealed: after a full handshake it records now as
 * the time the client proved itself; a resumed session keeps the time it
 * came with (OpenSSL copies the application data into the new session).
 */
static int tickets_gen_cb(SSL *s, void *arg)
{
	struct tls_tickets *r = arg;
	SSL_SESSION *ss = SSL_get_session(s);
	unsigned char buf[APPDATA_LEN];
	uint64_t auth;

	if (ss == NULL)
		return 0;
	if (SSL_session_reused(s)) {
		if (tickets_appdata_get(ss, r, &auth))
			return 1;
		auth = 0;	/* unknown: this ticket will not resume */
	} else {
		auth = (uint64_t)time(NULL);
	}
	tickets_appdata_put(buf, r, auth);
	return SSL_SESSION_set1_ticket_appdata(ss, buf, sizeof buf);
}

/* May session ss, opened from a ticket, resume under ring r? */
static bool tickets_acceptable(const struct tls_tickets *r, SSL_SESSION *ss)
{
	X509 *peer = SSL_SESSION_get0_peer(ss);
	uint64_t auth, now = (uint64_t)time(NULL);

	if (!tickets_appdata_get(ss, r, &auth))
		return false;
	if (auth > now + CLOCK_SKEW_S || (now > auth && now - auth >= r->lifetime))
		return false;
	/* A certificate that has expired since is shown again, and refused. */
	return peer == NULL || X509_cmp_current_time(X509_get0_notAfter(peer)) > 0;
}

/* A ticket was opened (or not): resume, or make it a full handshake. */
static SSL_TICKET_RETURN tickets_dec_cb(SSL *s, SSL_SESSION *ss,
    const unsigned char *keyname, size_t keyname_len, SSL_TICKET_STATUS status,
    void *arg)
{
	const struct tls_tickets *r = arg;

	switch (status) {
	case SSL_TICKET_SUCCESS:
	case SSL_TICKET_SUCCESS_RENEW:
		break;
	case SSL_TICKET_EMPTY:
	case SSL_TICKET_NO_DECRYPT:
	case SSL_TICKET_NONE:
		return SSL_TICKET_RETURN_IGNORE_RENEW;
	default:
		return SSL_TICKET_RETURN_ABORT;
	}
	if (ss == NULL || !tickets_acceptable(r, ss))
		return SSL_TICKET_RETURN_IGNORE_RENEW;
	/*
	 * Always a fresh ticket: TLS 1.3 clients use one only once (OpenSSL's
	 * among them), so a resumed connection without one would leave the
	 * next to a full handshake.
	 */
	return SSL_TICKET_RETURN_USE_RENEW;
}

/* A context is freed: drop its reference to the ring. */
static void tickets_ex_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad,
    int idx, long argl, void *argp)
{
	tls_tickets_unref(ptr);
}

/* Register the context slot for rings, once per process. */
static void tickets_ex_init(void)
{
	tickets_ex_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL,
	    tickets_ex_free);
}

/* Make ctx issue and accept tickets from ring r. */
int tls_tickets_install(SSL_CTX *ctx, struct tls_tickets *r)
{
	pthread_once(&tickets_ex_once, tickets_ex_init);
	if (tickets_ex_idx < 0)
		return -ENOMEM;
	tls_tickets_ref(r);
	if (SSL_CTX_set_ex_data(ctx, tickets_ex_idx, r) != 1) {
		tls_tickets_unref(r);
		return -ENOMEM;
	}
	SSL_CTX_clear_options(ctx, SSL_OP_NO_TICKET);
	/* One ticket a handshake: each client keeps only the newest. */
	if (SSL_CTX_set_num_tickets(ctx, 1) != 1 ||
	    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, tickets_key_cb) != 1 ||
	    SSL_CTX_set_session_ticket_cb(ctx, tickets_gen_cb, tickets_dec_cb, r) != 1)
		return -ENOMEM;
	/* Stateless: nothing kept per client on the server. */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_timeout(ctx, (long)r->lifetime);
	if (SSL_CTX_set_session_id_context(ctx, r->bind, TLS_BIND_LEN) != 1)
		return -ENOMEM;
	return 0;
}
