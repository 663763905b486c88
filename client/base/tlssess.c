/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/base/tlssess.c - TLS sessions kept for resumption.
 *
 * The daemon sends a session ticket after every handshake; the handle
 * keeps the newest one per server address in memory and offers it when it
 * connects to that address again (reconnects included), so the handshake
 * is a resumption: no certificate is sent or checked, and it costs about
 * half a full one. With $SEMD_TLS_SESSION_DIR the tickets are also kept
 * in files there, one per address and identity, for the next process
 * (semctl sets it to $XDG_RUNTIME_DIR/semctl): the directory must be ours
 * and closed to others (no group or other bits), each file ours with mode
 * 0600, or it is neither read nor written. A file holds the session's
 * secrets: it is written to a new file that is then renamed over the old.
 *
 * A ticket belongs to what this handle trusts and is: the file name is a
 * hash of the CA file's name, the client certificate and the address, so
 * another certificate (or none) never resumes a session that was made
 * with this one, and a handle that trusts other CAs never skips the check
 * of a server that another setting verified.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "client/handle.h"
#include "client/base/fdio.h"

#define SESS_FILE_MAX	65536	/* a kept session bigger than this is not ours */

/* Is path a directory of ours that nobody else may enter? */
static bool sess_dir_ok(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == geteuid() && (st.st_mode & 077) == 0;
}

/* Is fd a regular file of ours with mode 0600, of a sane size? */
static bool sess_file_ok(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid == geteuid() && (st.st_mode & 07777) == 0600 &&
	    st.st_size > 0 && st.st_size <= SESS_FILE_MAX;
}

/* Hash what this handle trusts and presents: the CA file's name, the certificate. */
static void sess_identity(struct semc *c, SSL_CTX *ctx, const char *ca)
{
	static const char tag[] = "semclient session 1";
	unsigned char *der = NULL;
	unsigned int len = 0;
	X509 *cert = SSL_CTX_get0_certificate(ctx);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	int n = cert != NULL ? i2d_X509(cert, &der) : 0;
	const char *cafile = ca != NULL ? ca : "(system)";

	memset(c->tls_id, 0, sizeof c->tls_id);
	if (md != NULL && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
	    EVP_DigestUpdate(md, tag, sizeof tag) == 1 &&
	    EVP_DigestUpdate(md, cafile, strlen(cafile) + 1) == 1 &&
	    (n <= 0 || EVP_DigestUpdate(md, der, (size_t)n) == 1))
		EVP_DigestFinal_ex(md, c->tls_id, &len);
	OPENSSL_free(der);
	EVP_MD_CTX_free(md);
	ERR_clear_error();
}

/* Once the context is built: the identity, and the directory if usable. */
void semc_tls_sess_setup(struct semc *c, SSL_CTX *ctx, const char *ca)
{
	const char *dir = getenv("SEMD_TLS_SESSION_DIR");

	sess_identity(c, ctx, ca);
	free(c->tls_dir);
	c->tls_dir = NULL;
	if (dir != NULL && dir[0] == '/' && strlen(dir) < 3500 && sess_dir_ok(dir))
		c->tls_dir = strdup(dir);
}

/* The file of the session for addr: DIR/HASH.tls. */
static int sess_path(const struct semc *c, const char *addr, char *buf, size_t len)
{
	unsigned char h[32];
	unsigned int hl = 0;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	char hex[33];
	int i, ok;

	ok = md != NULL && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
	    EVP_DigestUpdate(md, c->tls_id, sizeof c->tls_id) == 1 &&
	    EVP_DigestUpdate(md, addr, strlen(addr)) == 1 &&
	    EVP_DigestFinal_ex(md, h, &hl) == 1;
	EVP_MD_CTX_free(md);
	if (!ok)
		return -1;
	for (i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", h[i]);
	return snprintf(buf, len, "%s/%s.tls", c->tls_dir, hex) < (int)len ? 0 : -1;
}

/* When sess was made (OpenSSL 3.3 added the Y2038-safe call, 3.4 deprecated the other). */
static time_t sess_time(const SSL_SESSION *sess)
{
#if OPENSSL_VERSION_NUMBER >= 0x30300000L
	return SSL_SESSION_get_time_ex(sess);
#else
	return SSL_SESSION_get_time(sess);
#endif
}

/* May sess still be offered? */
static bool sess_usable(SSL_SESSION *sess)
{
	time_t now = time(NULL);

	return sess != NULL && SSL_SESSION_is_resumable(sess) &&
	    sess_time(sess) + SSL_SESSION_get_timeout(sess) > now;
}

/* Read the session kept for addr in the directory (a reference, or NULL). */
static SSL_SESSION *sess_load(const struct semc *c, const char *addr)
{
	unsigned char buf[SESS_FILE_MAX];
	const unsigned char *p = buf;
	SSL_SESSION *sess = NULL;
	char path[4096];
	ssize_t n;
	int fd;

	if (c->tls_dir == NULL || !sess_dir_ok(c->tls_dir) ||
	    sess_path(c, addr, path, sizeof path) != 0)
		return NULL;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	if (sess_file_ok(fd) && (n = read(fd, buf, sizeof buf)) > 0)
		sess = d2i_SSL_SESSION(NULL, &p, (long)n);
	close(fd);
	ERR_clear_error();
	if (sess != NULL && !sess_usable(sess)) {
		SSL_SESSION_free(sess);
		sess = NULL;
	}
	return sess;
}

/*
 * Keep sess for addr in the directory: a new file, renamed over the old
 * one unless the old one is not ours to replace (then both are left).
 */
static void sess_store(const struct semc *c, const char *addr, SSL_SESSION *sess)
{
	unsigned char *der = NULL;
	char path[4096], tmp[4200];
	struct stat st;
	int fd, n, ok;

	if (c->tls_dir == NULL || !sess_dir_ok(c->tls_dir) ||
	    sess_path(c, addr, path, sizeof path) != 0)
		return;
	if (lstat(path, &st) == 0 && (!S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 07777) != 0600))
		return;
	n = i2d_SSL_SESSION(sess, &der);
	if (n <= 0 || n > SESS_FILE_MAX ||
	    snprintf(tmp, sizeof tmp, "%s.%ld.new", path, (long)getpid()) >= (int)sizeof tmp) {
		OPENSSL_free(der);
		ERR_clear_error();
		return;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	ok = fd >= 0 && fchmod(fd, 0600) == 0 && fd_write_all(fd, der, (size_t)n) == 0;
	if (fd >= 0 && close(fd) != 0)
		ok = 0;
	if (fd >= 0 && (!ok || rename(tmp, path) != 0))
		unlink(tmp);
	OPENSSL_clear_free(der, (size_t)n);
}

/* The slot for addr (or a free one, or the oldest), under tls_lock. */
static struct semc_tls_sess *sess_slot_locked(struct semc *c, const char *addr)
{
	struct semc_tls_sess *s, *pick = NULL;
	unsigned i;

	for (i = 0; i < SEMC_MAX_ADDRS; i++) {
		s = &c->tls_sess[i];
		if (s->sess != NULL && strcmp(s->addr, addr) == 0)
			return s;
		if (pick == NULL && s->sess == NULL)
			pick = s;
	}
	if (pick == NULL)
		pick = &c->tls_sess[0];
	return pick;
}

/* The session to offer to addr: kept in memory, else in the directory. */
SSL_SESSION *semc_tls_sess_get(struct semc *c, const char *addr)
{
	struct semc_tls_sess *s;
	SSL_SESSION *sess = NULL;

	pthread_mutex_lock(&c->tls_lock);
	s = sess_slot_locked(c, addr);
	if (s->sess != NULL && strcmp(s->addr, addr) == 0) {
		if (sess_usable(s->sess) && SSL_SESSION_up_ref(s->sess) == 1) {
			sess = s->sess;
		} else {
			SSL_SESSION_free(s->sess);
			s->sess = NULL;
		}
	}
	pthread_mutex_unlock(&c->tls_lock);
	if (sess == NULL)
		sess = sess_load(c, addr);
	return sess;
}

/*
 * A ticket came from addr: keep a copy of its session (a copy: OpenSSL
 * marks the connection's own session unusable when the connection ends
 * without a close_notify, as ours do).
 */
void semc_tls_sess_put(struct semc *c, const char *addr, SSL_SESSION *sess)
{
	struct semc_tls_sess *s;
	SSL_SESSION *copy = SSL_SESSION_dup(sess);

	if (copy == NULL) {
		ERR_clear_error();
		return;
	}
	pthread_mutex_lock(&c->tls_lock);
	s = sess_slot_locked(c, addr);
	SSL_SESSION_free(s->sess);
	s->sess = copy;
	snprintf(s->addr, sizeof s->addr, "%s", addr);
	/* Ours for the write, whoever replaces it meanwhile. */
	if (SSL_SESSION_up_ref(copy) != 1)
		copy = NULL;
	pthread_mutex_unlock(&c->tls_lock);
	if (copy != NULL) {
		sess_store(c, addr, copy);
		SSL_SESSION_free(copy);
	}
}

/* Forget every kept session (in memory; the files stay). */
void semc_tls_sess_free(struct semc *c)
{
	unsigned i;

	pthread_mutex_lock(&c->tls_lock);
	for (i = 0; i < SEMC_MAX_ADDRS; i++) {
		SSL_SESSION_free(c->tls_sess[i].sess);
		c->tls_sess[i].sess = NULL;
	}
	pthread_mutex_unlock(&c->tls_lock);
}
