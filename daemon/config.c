/* SPDX-License-Identifier: BSD-2-Clause */
/* daemon/config.c - defaults, config file and flag values. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/config.h"
#include "daemon/log/peer_addr.h"
#include "daemon/state/state.h"
#include "daemon/logging.h"
#include "proto/frame.h"
#include "security/acl.h"
#include "security/tls.h"

enum cfg_type {
	CFG_LISTEN, CFG_PATH, CFG_UINT, CFG_DURATION, CFG_LEVEL, CFG_MODE,
	CFG_BOOL, CFG_GROUP, CFG_USER, CFG_AUTH, CFG_METRICS, CFG_NAMES,
	CFG_ADMIN, CFG_STARTUPS, CFG_ACL, CFG_LOGFMT
};

struct cfg_key {
	const char	*name;
	enum cfg_type	type;
	size_t		offset;
	uint32_t	min;
	uint32_t	max;
};

#define OFF(f) offsetof(struct semd_config, f)
static const struct cfg_key cfg_keys[] = {
	{ "listen", CFG_LISTEN, 0, 0, 0 },
	{ "ready-file", CFG_PATH, OFF(ready_file), 0, 0 },
	{ "default-limit", CFG_UINT, OFF(default_limit), 1, 1u << 30 },
	{ "max-frame", CFG_UINT, OFF(max_frame), 64, FRAME_MAX_LIMIT },
	{ "max-connections", CFG_UINT, OFF(max_connections), 1, 10000000 },
	{ "log-level", CFG_LEVEL, OFF(log_level), 0, 0 },
	{ "log-format", CFG_LOGFMT, OFF(log_format), 0, 0 },
	{ "max-semaphores", CFG_UINT, OFF(max_semaphores), 1, UINT32_MAX },
	{ "max-sessions", CFG_UINT, OFF(max_sessions), 1, UINT32_MAX },
	{ "max-waiters-per-session", CFG_UINT, OFF(max_waiters_per_session), 1, UINT32_MAX },
	{ "max-holds-per-session", CFG_UINT, OFF(max_holds_per_session), 1, UINT32_MAX },
	{ "max-lease", CFG_DURATION, OFF(max_lease_ms), 0, UINT32_MAX },
	{ "handshake-timeout", CFG_DURATION, OFF(handshake_timeout_ms), 1, UINT32_MAX },
	{ "idle-timeout", CFG_DURATION, OFF(idle_timeout_ms), 0, UINT32_MAX },
	{ "frame-timeout", CFG_DURATION, OFF(frame_timeout_ms), 0, UINT32_MAX },
	{ "tls-max-startups", CFG_STARTUPS, 0, 1, 10000000 },
	{ "tls-per-source-max-startups", CFG_UINT, OFF(tls_per_source_startups), 0, 10000000 },
	{ "max-output", CFG_UINT, OFF(max_output), 4096, UINT32_MAX },
	{ "watch-history", CFG_UINT, OFF(watch_history), 0, SM_WATCH_HISTORY_MAX },
	{ "keepalive", CFG_DURATION, OFF(keepalive_s), 0, UINT32_MAX },
	{ "threads", CFG_UINT, OFF(threads), 1, SEMD_THREADS_MAX },
	{ "unix-mode", CFG_MODE, OFF(unix_mode), 0, 07777 },
	{ "unix-group", CFG_GROUP, OFF(unix_group), 0, 0 },
	{ "user", CFG_USER, OFF(user), 0, 0 },
	{ "allow-insecure-tcp", CFG_BOOL, OFF(allow_insecure_tcp), 0, 0 },
	{ "tls-cert", CFG_PATH, OFF(tls_cert), 0, 0 },
	{ "tls-key", CFG_PATH, OFF(tls_key), 0, 0 },
	{ "tls-ca", CFG_PATH, OFF(tls_ca), 0, 0 },
	{ "tls-client-auth", CFG_AUTH, OFF(tls_client_auth), 0, 0 },
	{ "tls-ticket-lifetime", CFG_DURATION, OFF(tls_ticket_lifetime_s), 0, 604800 },
	{ "tls-ticket-rotation", CFG_DURATION, OFF(tls_ticket_rotation_s), 1, 604800 },
	{ "metrics-listen", CFG_METRICS, OFF(metrics_listen), 0, 0 },
	{ "metrics-names", CFG_NAMES, 0, 0, 0 },
	{ "metrics-max-connections", CFG_UINT, OFF(metrics_max_connections), 1, 10000 },
	{ "metrics-per-source-max-connections", CFG_UINT, OFF(metrics_per_source), 0, 10000 },
	{ "metrics-timeout", CFG_DURATION, OFF(metrics_timeout_ms), 1, UINT32_MAX },
	{ "ready-max-lag", CFG_UINT, OFF(ready_max_lag), 0, UINT32_MAX },
	{ "admin", CFG_ADMIN, 0, 0, 0 },
	{ "acl", CFG_ACL, 0, 0, 0 },
	{ "data-dir", CFG_PATH, OFF(data_dir), 0, 0 },
	{ "node-id", CFG_UINT, OFF(node_id), 1, 65535 },
	{ "peer-listen", CFG_PATH, OFF(peer_listen), 0, 0 },
	{ "peer-bind", CFG_PATH, OFF(peer_bind), 0, 0 },
	{ "bootstrap", CFG_PATH, OFF(bootstrap), 0, 0 },
	{ "advertise", CFG_PATH, OFF(advertise), 0, 0 },
	{ "allow-insecure-peers", CFG_BOOL, OFF(allow_insecure_peers), 0, 0 },
	{ "peer-tls-cert", CFG_PATH, OFF(peer_tls_cert), 0, 0 },
	{ "peer-tls-key", CFG_PATH, OFF(peer_tls_key), 0, 0 },
	{ "peer-tls-ca", CFG_PATH, OFF(peer_tls_ca), 0, 0 },
	{ "peer-key", CFG_PATH, OFF(peer_key), 0, 0 },
	{ "election-timeout", CFG_DURATION, OFF(election_timeout_ms), 100, 60000 },
	{ "restart-grace", CFG_DURATION, OFF(restart_grace_ms), 0, 3600000 },
	{ "snapshot-every", CFG_UINT, OFF(snapshot_every), 64, 1u << 24 },
};
#undef OFF

/* Defaults. */
void config_init(struct semd_config *c)
{
	memset(c, 0, sizeof *c);
	c->default_limit = 1;
	c->max_frame = FRAME_MAX_DEFAULT;
	c->max_connections = 10000;
	c->log_level = LOG_INFO;
	c->max_semaphores = 1000000;
	c->max_sessions = 100000;
	c->max_waiters_per_session = 1024;
	c->max_holds_per_session = 4096;
	c->max_lease_ms = 24u * 3600u * 1000u;
	c->handshake_timeout_ms = 10000;
	c->idle_timeout_ms = 0;
	c->frame_timeout_ms = 10000;
	c->tls_startups_start = 64;
	c->tls_startups_rate = 30;
	c->tls_startups_full = 256;
	c->tls_per_source_startups = 8;
	c->metrics_max_connections = 16;
	c->metrics_per_source = 4;
	c->metrics_timeout_ms = 10000;
	c->ready_max_lag = 1000;
	c->max_output = 4u << 20;
	c->watch_history = SM_WATCH_HISTORY;
	c->keepalive_s = 60;
	c->tls_ticket_lifetime_s = 3600;
	c->tls_ticket_rotation_s = 3600;
	c->threads = 1;
	c->unix_mode = SEMD_DEFAULT_UNIX_MODE;
	c->restart_grace_ms = 10000;
	c->election_timeout_ms = 500;
	c->snapshot_every = 65536;
}

/* Drop the listen list. */
static void config_clear_listen(struct semd_config *c)
{
	size_t i;

	for (i = 0; i < c->nlisten; i++)
		free(c->listen[i]);
	free(c->listen);
	c->listen = NULL;
	c->nlisten = 0;
}

/* The other front door (config.h), handed over by main.c; NULL: none. */
static const struct config_door *config_door_p;

/* Hand over the other front door (once, before any setting is read). */
void config_door_set(const struct config_door *door)
{
	config_door_p = door;
}

/* The other front door, or NULL. */
const struct config_door *config_door(void)
{
	return config_door_p;
}

/* Is key a setting of the other front door? */
static bool config_door_known(const char *key)
{
	return config_door_p != NULL && config_door_p->known(key);
}

/* Free the strings (the struct itself is the caller's). */
void config_free(struct semd_config *c)
{
	if (c == NULL)
		return;
	config_clear_listen(c);
	free(c->ready_file);
	c->ready_file = NULL;
	free(c->data_dir);
	c->data_dir = NULL;
	free(c->peer_listen);
	c->peer_listen = NULL;
	free(c->peer_bind);
	c->peer_bind = NULL;
	free(c->bootstrap);
	c->bootstrap = NULL;
	free(c->advertise);
	c->advertise = NULL;
	free(c->peer_tls_cert);
	c->peer_tls_cert = NULL;
	free(c->peer_tls_key);
	c->peer_tls_key = NULL;
	free(c->peer_tls_ca);
	c->peer_tls_ca = NULL;
	free(c->peer_key);
	c->peer_key = NULL;
	free(c->unix_group);
	c->unix_group = NULL;
	free(c->user);
	c->user = NULL;
	free(c->tls_cert);
	c->tls_cert = NULL;
	free(c->tls_key);
	c->tls_key = NULL;
	free(c->tls_ca);
	c->tls_ca = NULL;
	acl_free(c->acl);
	c->acl = NULL;
	if (c->http != NULL && config_door_p != NULL)
		config_door_p->put(c->http);
	c->http = NULL;
	free(c->metrics_listen);
	c->metrics_listen = NULL;
	while (c->nmetrics_names > 0)
		free(c->metrics_names[--c->nmetrics_names]);
	free(c->metrics_names);
	c->metrics_names = NULL;
}

/* Find a key's description. */
static const struct cfg_key *config_key(const char *key)
{
	size_t i;

	for (i = 0; i < sizeof cfg_keys / sizeof cfg_keys[0]; i++)
		if (strcmp(cfg_keys[i].name, key) == 0)
			return &cfg_keys[i];
	return NULL;
}

/* Is this a setting? */
bool config_known(const char *key)
{
	return config_key(key) != NULL || config_door_known(key);
}

/* Is this a yes/no setting? */
bool config_is_bool(const char *key)
{
	const struct cfg_key *k = config_key(key);

	return k != NULL && k->type == CFG_BOOL;
}

/* Parse an unsigned decimal number with nothing after it. */
static int parse_u64(const char *s, unsigned long long *out, char **end)
{
	errno = 0;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	*out = strtoull(s, end, 10);
	return errno == ERANGE ? -ERANGE : 0;
}

/*
 * A duration: a number with an optional unit (ms, s, m, h). A bare number
 * is in seconds. keepalive and tls-ticket-* are stored in seconds, the
 * others in ms.
 */
int config_parse_duration(const char *s, unsigned long long *ms)
{
	unsigned long long v, mul;
	char *end;

	if (parse_u64(s, &v, &end) != 0)
		return -EINVAL;
	if (strcmp(end, "ms") == 0)
		mul = 1;
	else if (*end == '\0' || strcmp(end, "s") == 0)
		mul = 1000;
	else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
		mul = 60000;
	else if (strcmp(end, "h") == 0)
		mul = 3600000;
	else
		return -EINVAL;
	if (v > ULLONG_MAX / mul)
		return -ERANGE;
	*ms = v * mul;
	return 0;
}

/* Check the syntax of a listen address. */
static int check_listen(const char *v, char *err, size_t errlen)
{
	const char *port;

	if (config_door_p != NULL && config_door_p->listener_kind(v))
		return config_door_p->listener_check(v, err, errlen);
	if (strncmp(v, "unix:", 5) == 0) {
		if (v[5] == '\0') {
			snprintf(err, errlen, "listen %s: empty socket path", v);
			return -EINVAL;
		}
		if (strlen(v + 5) >= 108) {
			snprintf(err, errlen, "listen %s: socket path too long", v);
			return -EINVAL;
		}
		return 0;
	}
	if (strncmp(v, "tcp:", 4) == 0 || strncmp(v, "tls:", 4) == 0) {
		port = strrchr(v + 4, ':');
		if (port == NULL || port == v + 4 || port[1] == '\0' ||
		    strspn(port + 1, "0123456789") != strlen(port + 1) ||
		    atol(port + 1) > 65535) {
			snprintf(err, errlen,
			    "listen %s: expected %.3s:HOST:PORT or %.3s:[ADDR6]:PORT",
			    v, v, v);
			return -EINVAL;
		}
		return 0;
	}
	snprintf(err, errlen,
	    "listen %s: unknown address kind (use unix:PATH, tcp:HOST:PORT, tls:HOST:PORT, "
	    "http:HOST:PORT, https:HOST:PORT or http+unix:PATH)",
	    v);
	return -EINVAL;
}

/* Append a copy of value to a list of strings (listen, metrics-names). */
static int config_append(char ***list, size_t *n, const char *value,
    char *err, size_t errlen)
{
	char **l = realloc(*list, (*n + 1) * sizeof *l);
	char *dup;

	if (l != NULL)
		*list = l;
	if (l == NULL || (dup = strdup(value)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	l[(*n)++] = dup;
	return 0;
}

/* Set one key. */
int config_set(struct semd_config *c, const char *key, const char *value,
    char *err, size_t errlen)
{
	const struct cfg_key *k = config_key(key);
	unsigned long long v = 0;
	char *end, *dup;
	int level;

	if (k == NULL && config_door_known(key))
		return *value == '\0' ? (snprintf(err, errlen, "%s needs a value",
		    key), -EINVAL) : config_door_p->set(&c->http, key, value, err,
		    errlen);
	if (k == NULL) {
		snprintf(err, errlen, "unknown setting '%s'", key);
		return -EINVAL;
	}
	if (*value == '\0') {
		snprintf(err, errlen, "%s needs a value", key);
		return -EINVAL;
	}
	switch (k->type) {
	case CFG_LISTEN:
		if (check_listen(value, err, errlen) != 0)
			return -EINVAL;
		return config_append(&c->listen, &c->nlisten, value, err, errlen);
	case CFG_PATH:
	string:
		dup = strdup(value);
		if (dup == NULL) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		free(*(char **)((char *)c + k->offset));
		*(char **)((char *)c + k->offset) = dup;
		return 0;
	case CFG_BOOL:
		if (strcmp(value, "yes") == 0 || strcmp(value, "true") == 0 ||
		    strcmp(value, "on") == 0 || strcmp(value, "1") == 0)
			*(bool *)((char *)c + k->offset) = true;
		else if (strcmp(value, "no") == 0 || strcmp(value, "false") == 0 ||
		    strcmp(value, "off") == 0 || strcmp(value, "0") == 0)
			*(bool *)((char *)c + k->offset) = false;
		else {
			snprintf(err, errlen, "%s '%s': use yes or no", key, value);
			return -EINVAL;
		}
		return 0;
	case CFG_GROUP:
		if (getgrnam(value) == NULL) {
			snprintf(err, errlen, "%s '%s': no such group", key, value);
			return -EINVAL;
		}
		goto string;
	case CFG_METRICS:
		if ((strncmp(value, "tcp:", 4) != 0 &&
		    strncmp(value, "unix:", 5) != 0) ||
		    check_listen(value, err, errlen) != 0) {
			snprintf(err, errlen, "metrics-listen %s: expected "
			    "tcp:HOST:PORT, tcp:[ADDR6]:PORT or unix:PATH", value);
			return -EINVAL;
		}
		goto string;
	case CFG_ADMIN:
		if (c->acl == NULL && (c->acl = acl_new()) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		if (acl_add_admin(c->acl, value, err, errlen) != 0)
			return -EINVAL;
		return 0;
	case CFG_ACL: {
		/* --acl 'PRINCIPAL PATTERN RIGHTS': after the file's acl lines */
		char line[1024];

		if (c->acl == NULL && (c->acl = acl_new()) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		if ((size_t)snprintf(line, sizeof line, "acl %s", value) >= sizeof line) {
			snprintf(err, errlen, "acl: too long");
			return -EINVAL;
		}
		return acl_parse_line(c->acl, line, err, errlen) == 0 ? 0 : -EINVAL;
	}
	case CFG_STARTUPS: {
		unsigned long long st, rate, full;

		if (parse_u64(value, &st, &end) != 0 || *end != ':' ||
		    parse_u64(end + 1, &rate, &end) != 0 || *end != ':' ||
		    parse_u64(end + 1, &full, &end) != 0 || *end != '\0' ||
		    st < 1 || rate > 100 || full < st || full > k->max) {
			snprintf(err, errlen, "%s '%s': want START:RATE:FULL, "
			    "1 <= START <= FULL <= %u and RATE a percentage",
			    key, value, k->max);
			return -EINVAL;
		}
		c->tls_startups_start = (uint32_t)st;
		c->tls_startups_rate = (uint32_t)rate;
		c->tls_startups_full = (uint32_t)full;
		return 0;
	}
	case CFG_NAMES:
		return config_append(&c->metrics_names, &c->nmetrics_names, value,
		    err, errlen);
	case CFG_USER:
		if (getpwnam(value) == NULL) {
			snprintf(err, errlen, "%s '%s': no such user", key, value);
			return -EINVAL;
		}
		goto string;
	case CFG_AUTH: {
		enum tls_client_auth auth;

		if (tls_client_auth_parse(value, &auth) != 0) {
			snprintf(err, errlen,
			    "%s '%s': use none, optional or required", key, value);
			return -EINVAL;
		}
		c->tls_client_auth = (uint32_t)auth;
		return 0;
	}
	case CFG_LEVEL:
		level = log_parse_level(value);
		if (level < 0) {
			snprintf(err, errlen,
			    "log-level '%s': use debug, info, notice, warning or error",
			    value);
			return -EINVAL;
		}
		c->log_level = level;
		return 0;
	case CFG_LOGFMT:
		level = log_parse_format(value);
		if (level < 0) {
			snprintf(err, errlen, "log-format '%s': use text or json",
			    value);
			return -EINVAL;
		}
		c->log_format = level;
		return 0;
	case CFG_UINT:
		if (parse_u64(value, &v, &end) != 0 || *end != '\0') {
			snprintf(err, errlen, "%s '%s': not a number", key, value);
			return -EINVAL;
		}
		break;
	case CFG_DURATION:
		if (config_parse_duration(value, &v) != 0) {
			snprintf(err, errlen,
			    "%s '%s': not a duration (e.g. 500ms, 10s, 5m, 1h)",
			    key, value);
			return -EINVAL;
		}
		if (strcmp(key, "keepalive") == 0 ||
		    strncmp(key, "tls-ticket-", 11) == 0)
			v /= 1000;
		break;
	case CFG_MODE:
		errno = 0;
		v = strtoull(value, &end, 8);
		if (errno != 0 || *end != '\0' || *value == '\0') {
			snprintf(err, errlen, "%s '%s': not an octal mode", key, value);
			return -EINVAL;
		}
		break;
	}
	if (v < k->min || v > k->max) {
		snprintf(err, errlen, "%s %s: out of range (%u..%u)", key, value,
		    k->min, k->max);
		return -EINVAL;
	}
	*(uint32_t *)((char *)c + k->offset) = (uint32_t)v;
	return 0;
}

/* Read a config file. */
int config_load(struct semd_config *c, const char *path, char *err,
    size_t errlen)
{
	char line[4096], why[512], *p, *key, *value, *e;
	unsigned int lineno = 0;
	FILE *f;
	int r = 0;

	f = fopen(path, "r");
	if (f == NULL) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return r;
	}
	while (fgets(line, sizeof line, f) != NULL) {
		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			snprintf(err, errlen, "%s:%u: line too long", path, lineno);
			r = -EINVAL;
			break;
		}
		p = line + strspn(line, " \t");
		if (*p == '#' || *p == '\n' || *p == '\0')
			continue;
		e = p + strlen(p);
		while (e > p && isspace((unsigned char)e[-1]))
			*--e = '\0';
		if (c->acl == NULL && (c->acl = acl_new()) == NULL) {
			snprintf(err, errlen, "out of memory");
			r = -ENOMEM;
			break;
		}
		r = acl_parse_line(c->acl, p, why, sizeof why);
		if (r == 0)
			continue;
		if (r != -ENOENT) {
			snprintf(err, errlen, "%s:%u: %s", path, lineno, why);
			break;
		}
		r = 0;
		key = p;
		p += strcspn(p, " \t");
		if (*p != '\0')
			*p++ = '\0';
		value = p + strspn(p, " \t");
		if (config_set(c, key, value, why, sizeof why) != 0) {
			snprintf(err, errlen, "%s:%u: %s", path, lineno, why);
			r = -EINVAL;
			break;
		}
	}
	if (r == 0 && ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		r = -EIO;
	}
	fclose(f);
	return r;
}

/* Is this address a loopback one (127/8, ::1, ::ffff:127/104)? */
static bool config_addr_loopback(const struct sockaddr *sa)
{
	const struct sockaddr_in6 *s6;

	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family != AF_INET6)
		return false;
	s6 = (const struct sockaddr_in6 *)sa;
	return IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr) ||
	    (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr) && s6->sin6_addr.s6_addr[12] == 127);
}

/*
 * Is the host part of a tcp: address loopback only? A name (localhost
 * included) is resolved as the listener will resolve it, and every address
 * it gives must be loopback: a hosts file or resolver that maps localhost
 * elsewhere does not open the daemon to the network. An empty host (every
 * address) is not loopback.
 */
static bool config_host_loopback(const char *spec)
{
	struct addrinfo hints, *res = NULL, *ai;
	char host[256], *port;
	struct in6_addr a6;
	struct in_addr a4;
	bool loop;
	size_t n;

	snprintf(host, sizeof host, "%s", spec + 4);
	port = strrchr(host, ':');
	if (port != NULL)
		*port = '\0';
	n = strlen(host);
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		host[n - 1] = '\0';
		memmove(host, host + 1, n - 1);
	}
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	if (host[0] == '\0')
		return false;
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return false;
	loop = res != NULL;
	for (ai = res; ai != NULL && loop; ai = ai->ai_next)
		loop = config_addr_loopback(ai->ai_addr);
	freeaddrinfo(res);
	return loop;
}

/* A peer address setting, tcp:HOST:PORT (peer_addr.h): 0, or -1 with err. */
static int config_peer_addr(const char *what, const char *v, bool tls,
    char *err, size_t errlen)
{
	const char *why = strncmp(v, "tcp:", 4) != 0 ? "does not start "
	    "with tcp:" : peer_addr_check(v + 4, tls);

	if (why == NULL)
		return 0;
	snprintf(err, errlen, "%s %s: %s", what, v, why);
	return -1;
}

/*
 * Settings that only make sense together: plain TCP beyond loopback needs
 * allow-insecure-tcp (anyone on the network could take and release
 * permits), a tls: listener needs a certificate and key, client
 * certificates need a CA.
 */
static int config_check(const struct semd_config *c, char *err, size_t errlen)
{
	bool tls = false;
	size_t i;

	for (i = 0; i < c->nlisten; i++) {
		if (strncmp(c->listen[i], "tls:", 4) == 0 ||
		    strncmp(c->listen[i], "https:", 6) == 0)
			tls = true;
		if (strncmp(c->listen[i], "http:", 5) == 0) {
			char tcp[300];

			/* as plain tcp: anyone who reaches it acts as anonymous */
			snprintf(tcp, sizeof tcp, "tcp:%s", c->listen[i] + 5);
			if (!c->allow_insecure_tcp && !config_host_loopback(tcp)) {
				snprintf(err, errlen, "listen %s: plain HTTP on a "
				    "non-loopback address lets anyone who can reach "
				    "it act as anonymous and read bearer tokens; use "
				    "https:, a loopback address, or set "
				    "allow-insecure-tcp yes", c->listen[i]);
				return -EINVAL;
			}
		}
		if (strncmp(c->listen[i], "tcp:", 4) == 0 &&
		    !c->allow_insecure_tcp && !config_host_loopback(c->listen[i])) {
			snprintf(err, errlen,
			    "listen %s: plain TCP on a non-loopback address lets anyone "
			    "who can reach it take and release permits; use tls:, a "
			    "loopback address, or set allow-insecure-tcp yes",
			    c->listen[i]);
			return -EINVAL;
		}
	}
	if (c->metrics_listen != NULL && !c->allow_insecure_tcp &&
	    strncmp(c->metrics_listen, "tcp:", 4) == 0 &&
	    !config_host_loopback(c->metrics_listen)) {
		snprintf(err, errlen,
		    "metrics-listen %s: the metrics endpoint has no authentication "
		    "and shows semaphore names; use a loopback address, or set "
		    "allow-insecure-tcp yes", c->metrics_listen);
		return -EINVAL;
	}
	if (c->node_id != 0 || c->peer_listen != NULL || c->bootstrap != NULL) {
		if (c->node_id == 0 || c->peer_listen == NULL || c->data_dir == NULL) {
			snprintf(err, errlen, "a cluster node needs node-id, peer-listen "
			    "and data-dir");
			return -EINVAL;
		}
		if (config_peer_addr("peer-listen", c->peer_listen,
		    c->peer_tls_cert != NULL, err, errlen) != 0 ||
		    (c->peer_bind != NULL && config_peer_addr("peer-bind",
		    c->peer_bind, c->peer_tls_cert != NULL, err, errlen) != 0))
			return -EINVAL;
		/*
		 * Peers prove who they are: in TLS by their certificates,
		 * or, plain, by the peer key all nodes share (a handshake
		 * only its holders can answer). Whoever else reaches a peer
		 * port could otherwise take part in the log - any local user
		 * on loopback. Plain traffic beyond loopback (keyed or not)
		 * and peers that prove nothing are explicit choices.
		 */
		if (c->peer_tls_cert != NULL && c->peer_key != NULL) {
			snprintf(err, errlen, "peer-key and peer-tls-*: give one "
			    "(peer TLS proves the peers by their certificates)");
			return -EINVAL;
		}
		if (c->peer_tls_cert == NULL && c->peer_key == NULL &&
		    !c->allow_insecure_peers) {
			snprintf(err, errlen, "a cluster node's peers must prove "
			    "who they are, or any local user can join the log: "
			    "give peer-key FILE (a secret every node has, readable "
			    "only by semd's user), or peer-tls-cert, peer-tls-key "
			    "and peer-tls-ca (or, for peers that prove nothing, "
			    "allow-insecure-peers yes)");
			return -EINVAL;
		}
		if (c->peer_tls_cert == NULL && !c->allow_insecure_peers &&
		    !config_host_loopback(c->peer_listen)) {
			snprintf(err, errlen, "peer-listen %s: raft's peer traffic is "
			    "plain TCP (a peer key proves the peers, but protects "
			    "nothing after the handshake); set peer-tls-cert, "
			    "peer-tls-key and peer-tls-ca, or use a loopback address "
			    "(or a private network you trust, with "
			    "allow-insecure-peers yes)", c->peer_listen);
			return -EINVAL;
		}
	}
	if ((c->peer_tls_cert == NULL) != (c->peer_tls_key == NULL) ||
	    (c->peer_tls_cert == NULL) != (c->peer_tls_ca == NULL)) {
		snprintf(err, errlen, "peer TLS needs all three of peer-tls-cert, "
		    "peer-tls-key and peer-tls-ca (or none of them)");
		return -EINVAL;
	}
	if (tls && (c->tls_cert == NULL || c->tls_key == NULL)) {
		snprintf(err, errlen, "a tls: or https: listener needs tls-cert and tls-key");
		return -EINVAL;
	}
	if (c->tls_client_auth != TLS_CLIENT_AUTH_NONE && c->tls_ca == NULL) {
		snprintf(err, errlen,
		    "tls-client-auth optional or required needs tls-ca (the CA that signs client certificates)");
		return -EINVAL;
	}
	return 0;
}

/* Defaults, then the file, then the command line. */
int config_build(struct semd_config *c, const char *path,
    const struct config_override *ov, size_t nov, char *err, size_t errlen)
{
	char why[512];
	bool listen_reset = false;
	size_t i;
	int r;

	config_init(c);
	if (path != NULL && (r = config_load(c, path, err, errlen)) != 0)
		goto fail;
	for (i = 0; i < nov; i++) {
		if (strcmp(ov[i].key, "listen") == 0 && !listen_reset) {
			config_clear_listen(c);
			listen_reset = true;
		}
		if ((r = config_set(c, ov[i].key, ov[i].value, why, sizeof why)) != 0) {
			snprintf(err, errlen, "--%s: %s", ov[i].key, why);
			goto fail;
		}
	}
	if ((r = config_check(c, err, errlen)) != 0)
		goto fail;
	return 0;
fail:
	config_free(c);
	return r;
}
