/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/listen.c - listening sockets: unix:PATH, tcp:HOST:PORT,
 * tcp:[ADDR6]:PORT, or sockets passed by systemd; the ready file.
 */
#include <config.h>	/* autoconf's, not daemon/config.h */

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <sysexits.h>
#include <unistd.h>

#include <event2/listener.h>

#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "daemon/conn.h"
#include "daemon/listen.h"
#include "daemon/logging.h"
#include "daemon/server.h"
#include "daemon/tlsconf.h"

#define LISTEN_BACKLOG 4096

static void listeners_close(struct server *srv);

/*
 * Over max-connections: tell the client why (one small frame, written
 * without waiting: a full socket buffer just loses it) and close. The log
 * gets one line a second with the count, not one per refused client, so a
 * connection flood cannot flood the log too.
 */
static void listener_refuse(struct server *srv, int fd, bool tell)
{
	static uint64_t refused, last_log_ms;
	uint64_t now = server_now();

	if (tell)
		conn_tell_fd(fd, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "server busy: max-connections reached, try again later");
	close(fd);
	refused++;
	if (last_log_ms == 0 || now - last_log_ms >= 1000) {
		log_warn("max-connections %u reached, refusing clients (%" PRIu64
		    " refused so far)", srv->cfg.max_connections, refused);
		last_log_ms = now;
	}
}

/* A client arrived. */
static void listener_accept_cb(struct evconnlistener *evl, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct listener *l = arg;

	if (!l->srv->stopping &&
	    server_nconns(l->srv) >= l->srv->cfg.max_connections) {
		listener_refuse(l->srv, fd, true);
		return;
	}
	conn_accept(l->srv, fd, sa, salen, l->is_unix, false);
}

/*
 * Do a and b come from the same source: the same IPv4 address, or the same
 * IPv6 /64 (one host is given a whole /64, so a finer key is no key)?
 */
bool listener_same_source(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		    ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		    &((const struct sockaddr_in6 *)b)->sin6_addr, 8) == 0;
	return true;
}

/* A number in 0..99 from a xorshift generator seeded from getrandom(). */
static unsigned int listener_percent(void)
{
	static uint64_t x;

	if (x == 0 && (getrandom(&x, sizeof x, 0) != (ssize_t)sizeof x || x == 0))
		x = (uint64_t)server_now() | 1;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return (unsigned int)(x % 100);
}

/* Handshakes under way from the source of sa, on every loop (hs_lock held). */
static size_t listener_tls_same_locked(struct server *srv,
    const struct sockaddr *sa)
{
	struct conn_pending *p;
	struct list_head *pos;
	size_t same = 0;

	list_for_each(pos, &srv->hs_list) {
		p = list_entry(pos, struct conn_pending, hs_entry);
		if (listener_same_source((struct sockaddr *)&p->ss, sa))
			same++;
	}
	return same;
}

/*
 * May one more TLS handshake start (OpenSSH's MaxStartups and
 * PerSourceMaxStartups)? Past start handshakes under way a new one is
 * refused with a probability that grows from rate % to 100 % at full;
 * one source may have at most per_source under way. Silent or slow
 * clients then cannot hold every slot: the others keep a good chance, and
 * those from other addresses a certain one. Logs once a second at most.
 * The handshakes run on every loop; the count and list are under hs_lock
 * (a walk of the list per accepted TLS client is O(full), 256 by default).
 */
static bool listener_tls_admit(struct server *srv, const struct sockaddr *sa)
{
	static uint64_t dropped, last_log_ms;
	const struct semd_config *cfg = &srv->cfg;
	size_t n, same = 0;
	unsigned int pct;
	uint64_t now;
	const char *why = NULL;

	pthread_mutex_lock(&srv->hs_lock);
	n = srv->handshakes;
	if (cfg->tls_per_source_startups > 0 && n < cfg->tls_startups_full)
		same = listener_tls_same_locked(srv, sa);
	pthread_mutex_unlock(&srv->hs_lock);
	if (n >= cfg->tls_startups_full) {
		why = "tls-max-startups full";
	} else if (n >= cfg->tls_startups_start) {
		pct = cfg->tls_startups_rate + (unsigned int)((100 -
		    cfg->tls_startups_rate) * (n - cfg->tls_startups_start) /
		    (cfg->tls_startups_full - cfg->tls_startups_start + 1));
		if (listener_percent() < pct)
			why = "tls-max-startups random early drop";
	}
	if (why == NULL && cfg->tls_per_source_startups > 0 &&
	    same >= cfg->tls_per_source_startups)
		why = "tls-per-source-max-startups";
	if (why == NULL)
		return true;
	dropped++;
	now = server_now();
	if (last_log_ms == 0 || now - last_log_ms >= 1000) {
		log_warn("%s: refusing TLS clients (%zu handshake(s) under way, "
		    "%" PRIu64 " refused so far)", why, n, dropped);
		last_log_ms = now;
	}
	return false;
}

/* Handshakes under way, all loops. */
static size_t listener_tls_handshakes(struct server *srv)
{
	size_t n;

	pthread_mutex_lock(&srv->hs_lock);
	n = srv->handshakes;
	pthread_mutex_unlock(&srv->hs_lock);
	return n;
}

/*
 * A client arrived on a tls: listener: dealt out to the next loop like a
 * plain one, where its handshake runs, bounded in time.
 */
static void listener_accept_tls_cb(struct evconnlistener *evl,
    evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg)
{
	struct listener *l = arg;
	struct server *srv = l->srv;

	if (srv->stopping || srv->tls == NULL) {
		close(fd);
		return;
	}
	if (server_nconns(srv) + listener_tls_handshakes(srv) >=
	    srv->cfg.max_connections) {
		/* No plaintext frame on a TLS port: just close. */
		listener_refuse(srv, fd, false);
		return;
	}
	if (!listener_tls_admit(srv, sa)) {
		close(fd);
		return;
	}
	conn_accept(srv, fd, sa, salen, false, true);
}

/* Stop accepting for a while (EMFILE), or accept again. */
static void listeners_enable(struct server *srv, bool on)
{
	struct list_head *pos;
	struct listener *l;

	list_for_each(pos, &srv->listeners) {
		l = list_entry(pos, struct listener, entry);
		if (on)
			evconnlistener_enable(l->evl);
		else
			evconnlistener_disable(l->evl);
	}
}

/* Resume accepting after an EMFILE pause. */
static void listeners_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	if (!srv->stopping)
		listeners_enable(srv, true);
}

/* accept() failed: on EMFILE/ENFILE pause a second instead of spinning. */
static void listener_error_cb(struct evconnlistener *evl, void *arg)
{
	struct listener *l = arg;
	struct timeval tv = { 1, 0 };
	int err = EVUTIL_SOCKET_ERROR();

	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
		log_warn("accept on %s: %s; pausing accepts for 1 s", l->addr,
		    strerror(err));
		listeners_enable(l->srv, false);
		evtimer_add(l->srv->accept_resume, &tv);
		return;
	}
	log_warn("accept on %s: %s", l->addr, strerror(err));
}

/* Format a bound address in the listen syntax. */
char *listener_name(int fd, bool *is_unix)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	char host[INET6_ADDRSTRLEN], buf[256];

	memset(&ss, 0, sizeof ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
		return NULL;
	*is_unix = ss.ss_family == AF_UNIX;
	if (ss.ss_family == AF_UNIX) {
		struct sockaddr_un *sun = (struct sockaddr_un *)&ss;

		if (sun->sun_path[0] == '\0')
			snprintf(buf, sizeof buf, "unix:@%s", sun->sun_path + 1);
		else
			snprintf(buf, sizeof buf, "unix:%s", sun->sun_path);
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
		snprintf(buf, sizeof buf, "tcp:[%s]:%u", host, ntohs(s6->sin6_port));
	} else if (ss.ss_family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
		snprintf(buf, sizeof buf, "tcp:%s:%u", host, ntohs(s4->sin_port));
	} else {
		return NULL;
	}
	return strdup(buf);
}

/* Wrap a listening fd in a listener; it owns unlink_path, even on failure. */
static int listener_add(struct server *srv, int fd, char *unlink_path,
    bool tls)
{
	struct listener *l = calloc(1, sizeof *l);
	int err;

	if (srv->accept_resume == NULL)
		srv->accept_resume = evtimer_new(srv->base, listeners_resume_cb,
		    srv);
	if (l == NULL || srv->accept_resume == NULL) {
		free(l);
		free(unlink_path);
		return -ENOMEM;
	}
	srv->unlisten = listeners_close;
	l->srv = srv;
	l->addr = listener_name(fd, &l->is_unix);
	if (l->addr == NULL) {
		err = errno > 0 ? errno : EINVAL;
		free(unlink_path);
		free(l);
		return -err;
	}
	if (tls && strncmp(l->addr, "tcp:", 4) == 0)
		memcpy(l->addr, "tls:", 4);
	l->evl = evconnlistener_new(srv->base,
	    tls ? listener_accept_tls_cb : listener_accept_cb, l,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
	if (l->evl == NULL) {
		free(unlink_path);
		free(l->addr);
		free(l);
		return -ENOMEM;
	}
	evconnlistener_set_error_cb(l->evl, listener_error_cb);
	/* Where clients reach this node, for the others of a cluster. */
	if (!l->is_unix && srv->client_addr[0] == '\0')
		snprintf(srv->client_addr, sizeof srv->client_addr, "%s", l->addr);
	l->unlink_path = unlink_path;
	list_add_tail(&l->entry, &srv->listeners);
	log_notice("listening on %s", l->addr);
	return 0;
}

/* Is something accepting on this UNIX socket path? */
static bool unix_path_live(const struct sockaddr_un *sun)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return false;
	live = connect(fd, (const struct sockaddr *)sun, sizeof *sun) == 0;
	close(fd);
	return live;
}

/*
 * Give the socket file to --user (so the daemon can remove it after dropping
 * root) and to --unix-group (whose members may then connect if unix-mode
 * lets the group in).
 */
static int listener_chown_unix(struct server *srv, const char *path)
{
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	struct passwd *pw;
	struct group *gr;

	if (srv->cfg.user != NULL) {
		if ((pw = getpwnam(srv->cfg.user)) == NULL) {
			log_err("user %s: no such user", srv->cfg.user);
			return -ENOENT;
		}
		uid = pw->pw_uid;
	}
	if (srv->cfg.unix_group != NULL) {
		if ((gr = getgrnam(srv->cfg.unix_group)) == NULL) {
			log_err("unix-group %s: no such group", srv->cfg.unix_group);
			return -ENOENT;
		}
		gid = gr->gr_gid;
	}
	if (uid == (uid_t)-1 && gid == (gid_t)-1)
		return 0;
	if (chown(path, uid, gid) != 0) {
		int err = errno;	/* logging may change errno */

		log_err_errno(err, "chown unix:%s to %s:%s", path,
		    srv->cfg.user ? srv->cfg.user : "-",
		    srv->cfg.unix_group ? srv->cfg.unix_group : "-");
		return -err;
	}
	return 0;
}

/*
 * Bind a UNIX socket under a restrictive umask, replacing a stale one, give
 * it mode and its owners; returns the listening fd or a negative errno.
 */
int listener_bind_unix(struct server *srv, const char *path, unsigned int mode)
{
	struct sockaddr_un sun;
	struct stat st;
	mode_t old;
	size_t len = strlen(path);
	int fd, r;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (len >= sizeof sun.sun_path) {
		log_err("unix:%s: path too long", path);
		return -ENAMETOOLONG;
	}
	memcpy(sun.sun_path, path, len + 1);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_err("unix:%s exists and is not a socket; remove it or pick another path",
			    path);
			return -EEXIST;
		}
		if (unix_path_live(&sun)) {
			log_err("unix:%s: another daemon is accepting there", path);
			return -EADDRINUSE;
		}
		log_info("removing stale socket %s", path);
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	old = umask(0077);
	r = bind(fd, (struct sockaddr *)&sun, sizeof sun);
	umask(old);
	if (r != 0) {
		r = -errno;
		log_err_errno(r, "bind unix:%s", path);
		close(fd);
		return r;
	}
	if (chmod(path, mode) != 0)
		log_warn_errno(errno, "chmod %o %s", mode, path);
	if ((r = listener_chown_unix(srv, path)) != 0)
		goto fail;
	if (listen(fd, LISTEN_BACKLOG) != 0) {
		r = -errno;
		log_err_errno(r, "listen unix:%s", path);
		goto fail;
	}
	return fd;
fail:
	close(fd);
	unlink(path);
	return r;
}

/* Listen on a UNIX socket. */
static int listener_open_unix(struct server *srv, const char *path)
{
	char *dup;
	int fd, r;

	if ((fd = listener_bind_unix(srv, path, srv->cfg.unix_mode)) < 0)
		return fd;
	if ((dup = strdup(path)) == NULL) {
		close(fd);
		unlink(path);
		return -ENOMEM;
	}
	if ((r = listener_add(srv, fd, dup, false)) != 0)
		close(fd);
	return r;
}

/* Bind and listen on tcp:HOST:PORT or tcp:[ADDR6]:PORT; fd or -errno. */
int listener_bind_tcp(const char *spec)
{
	struct addrinfo hints, *res = NULL, *ai;
	char host[256], *port;
	int fd = -1, one = 1, r;

	snprintf(host, sizeof host, "%s", spec + 4);
	port = strrchr(host, ':');
	if (port == NULL)
		return -EINVAL;
	*port++ = '\0';
	if (host[0] == '[') {
		size_t n = strlen(host);

		if (n < 2 || host[n - 1] != ']')
			return -EINVAL;
		host[n - 1] = '\0';
		memmove(host, host + 1, n - 1);
	}
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	r = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (r != 0) {
		log_err("%s: %s", spec, gai_strerror(r));
		return -EINVAL;
	}
	r = -EADDRNOTAVAIL;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC |
		    SOCK_NONBLOCK, ai->ai_protocol);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, LISTEN_BACKLOG) == 0)
			break;
		r = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		log_err_errno(r, "bind %s", spec);
		return r;
	}
	return fd;
}

/* Listen on TCP, plain or TLS. */
static int listener_open_tcp(struct server *srv, const char *spec, bool tls)
{
	int fd, r;

	if ((fd = listener_bind_tcp(spec)) < 0)
		return fd;
	if ((r = listener_add(srv, fd, NULL, tls)) != 0)
		close(fd);
	return r;
}

/* Open one configured listener. */
static int listener_open(struct server *srv, const char *spec)
{
	const struct config_door *door = config_door();

	if (door != NULL && door->listener_kind(spec)) {
		srv->unlisten = listeners_close;
		return door->listen(srv, spec);	/* the HTTP one's */
	}
	if (strncmp(spec, "unix:", 5) == 0)
		return listener_open_unix(srv, spec + 5);
	if (strncmp(spec, "tcp:", 4) == 0)
		return listener_open_tcp(srv, spec, false);
	if (strncmp(spec, "tls:", 4) == 0) {
		/* Load the certificate now: a bad one is a start-up error. */
		if ((srv->tls = tlsconf_server(&srv->cfg)) == NULL)
			return -EINVAL;
		return listener_open_tcp(srv, spec, true);
	}
	log_err("%s: unknown address kind", spec);
	return -EINVAL;
}

/* Take over a listening socket passed by systemd. */
static int listener_adopt(struct server *srv, int fd)
{
	int r;

	/*
	 * The passed socket may be blocking; libevent's listener accepts in a
	 * loop until EAGAIN, which would then block the whole daemon.
	 */
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (evutil_make_socket_nonblocking(fd) != 0) {
		log_err("socket-activated fd %d: cannot make it non-blocking", fd);
		return -EINVAL;
	}
	if ((r = listener_add(srv, fd, NULL, false)) != 0)
		log_err_errno(r, "socket-activated fd %d", fd);
	return r;
}

/* Stop listening on a socket; remove our socket file. */
void listener_close(struct evconnlistener *evl, char *unlink_path)
{
	if (evl != NULL)
		evconnlistener_free(evl);
	if (unlink_path != NULL)
		unlink(unlink_path);
	free(unlink_path);
}

/* Close every listener (srv->unlisten: a stop, or the end). */
static void listeners_close(struct server *srv)
{
	struct list_head *pos, *tmp;
	struct listener *l;

	list_for_each_safe(pos, tmp, &srv->listeners) {
		l = list_entry(pos, struct listener, entry);
		listener_close(l->evl, l->unlink_path);
		free(l->addr);
		free(l);
	}
	INIT_LIST_HEAD(&srv->listeners);
	if (config_door() != NULL)
		config_door()->unlisten(srv);
	if (srv->accept_resume != NULL)
		event_free(srv->accept_resume);
	srv->accept_resume = NULL;
}

/* An exit code for a listener that could not be opened. */
static int listeners_exit_code(int r)
{
	return r == -EACCES || r == -ENOENT ? EX_CANTCREAT : EX_OSERR;
}

/* Sockets from systemd, or the configured ones, or the defaults. */
int listeners_open(struct server *srv)
{
	int n = 0, i, r;

#ifdef HAVE_SYSTEMD
	n = sd_listen_fds(1);
	if (n < 0) {
		log_err_errno(n, "sd_listen_fds");
		return EX_OSERR;
	}
	for (i = 0; i < n; i++) {
		if (listener_adopt(srv, SD_LISTEN_FDS_START + i) != 0)
			return EX_OSERR;
	}
	if (n > 0 && srv->cfg.nlisten > 0)
		log_notice("socket activation: %d socket(s) from systemd; listen settings not used",
		    n);
#endif
	/* TCP is opt-in: only the UNIX socket by default. */
	if (n == 0 && srv->cfg.nlisten == 0 &&
	    (r = listener_open(srv, SEMD_DEFAULT_UNIX)) != 0)
		return listeners_exit_code(r);
	for (i = 0; n == 0 && i < (int)srv->cfg.nlisten; i++) {
		if ((r = listener_open(srv, srv->cfg.listen[i])) != 0)
			return listeners_exit_code(r);
	}
	return 0;
}

/* One HTTP listener's address, a line of the ready file. */
static void listeners_ready_http(void *arg, const char *addr)
{
	fprintf(arg, "%s\n", addr);
}

/* One HTTP listener's address, in the status line. */
static void listeners_status_http(void *arg, const char *addr)
{
	char **p = arg;	/* { buffer, end } */
	size_t room = (size_t)(p[1] - p[0]);
	int n = snprintf(p[0], room, " %s", addr);

	if (n > 0 && (size_t)n < room)
		p[0] += n;
}

/* Write the bound addresses to path, atomically (temporary file + rename). */
static int listeners_write_ready(struct server *srv, const char *path,
    const char *extra)
{
	struct list_head *pos;
	char tmp[4096];
	FILE *f;
	int r;

	if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >=
	    (int)sizeof tmp)
		return -ENAMETOOLONG;
	f = fopen(tmp, "w");
	if (f == NULL)
		return -errno;
	list_for_each(pos, &srv->listeners)
		fprintf(f, "%s\n", list_entry(pos, struct listener, entry)->addr);
	if (config_door() != NULL)
		config_door()->listeners_each(listeners_ready_http, f);
	if (extra != NULL)
		fprintf(f, "metrics:%s\n", extra);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		r = -errno;
		fclose(f);
		unlink(tmp);
		return r;
	}
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		r = -errno;
		unlink(tmp);
		return r;
	}
	return 0;
}

/* The ready file, and the status line that tells systemd where we listen. */
int listeners_ready(struct server *srv, const char *extra, char *status,
    size_t len)
{
	struct list_head *pos;
	size_t off;
	int r;

	if (srv->cfg.ready_file != NULL &&
	    (r = listeners_write_ready(srv, srv->cfg.ready_file, extra)) != 0) {
		log_err_errno(r, "cannot write the ready file %s", srv->cfg.ready_file);
		return EX_CANTCREAT;
	}
	off = (size_t)snprintf(status, len, "READY=1\nSTATUS=listening on");
	list_for_each(pos, &srv->listeners) {
		if (off < len)
			off += (size_t)snprintf(status + off, len - off, " %s",
			    list_entry(pos, struct listener, entry)->addr);
	}
	if (off < len) {
		char *p[2] = { status + off, status + len };

		if (config_door() != NULL)
			config_door()->listeners_each(listeners_status_http, p);
	}
	return 0;
}

