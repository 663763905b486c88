/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/config.h - semd's settings: defaults, the config file, the flags.
 *
 * Every setting has one name, used both as the long option (--max-frame) and
 * as the config file key (max-frame 65536). The file is "key value" a line,
 * '#' starts a comment; errors name the file, the line and what is wrong.
 * Flags override the file; listen lines on the command line replace the
 * file's. Access control lines (acl, protect, quota: security/acl.h) are
 * collected in cfg->acl (acl and admin lines may also be given as --acl
 * and --admin, which come after the file's). Yes/no settings also take a bare --flag for yes.
 */
#ifndef SEMD_CONFIG_H
#define SEMD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SEMD_DEFAULT_UNIX	"unix:/run/semd/semd.sock"
/*
 * Every local user reaches the default socket as itself: SO_PEERCRED gives
 * the principal, the default ACL rules and quotas decide (security/acl.h).
 */
#define SEMD_DEFAULT_UNIX_MODE	0666
#define SEMD_THREADS_MAX	64	/* event loops: one bit each in a mask */

struct acl;
struct http_config;
struct server;

struct semd_config {
	char		**listen;
	size_t		nlisten;
	char		*ready_file;
	uint32_t	default_limit;
	uint32_t	max_frame;
	uint32_t	max_connections;
	int		log_level;
	int		log_format;	/* LOG_FORMAT_TEXT or _JSON */
	uint32_t	max_semaphores;
	uint32_t	max_sessions;
	uint32_t	max_waiters_per_session;
	uint32_t	max_holds_per_session;
	uint32_t	max_lease_ms;
	uint32_t	handshake_timeout_ms;
	uint32_t	idle_timeout_ms;	/* 0: never */
	uint32_t	frame_timeout_ms;	/* to complete a frame; 0: never */
	/* TLS handshakes under way (OpenSSH MaxStartups start:rate:full): */
	uint32_t	tls_startups_start;	/* random early drop from here */
	uint32_t	tls_startups_rate;	/* ... at this percentage, */
	uint32_t	tls_startups_full;	/* ... growing to all at full */
	uint32_t	tls_per_source_startups; /* per address (PerSourceMaxStartups) */
	uint32_t	max_output;		/* bytes queued to one client */
	uint32_t	watch_history;		/* bytes of events kept for resumes */
	uint32_t	keepalive_s;		/* TCP keepalive idle; 0: off */
	uint32_t	threads;		/* event loops (workers) */
	uint32_t	unix_mode;
	char		*unix_group;		/* group of the UNIX sockets */
	char		*user;			/* drop to this user after binding */
	bool		allow_insecure_tcp;	/* plain tcp: beyond loopback */
	char		*tls_cert;
	char		*tls_key;
	char		*tls_ca;
	uint32_t	tls_client_auth;	/* enum tls_client_auth */
	uint32_t	tls_ticket_lifetime_s;	/* 0: no session resumption */
	uint32_t	tls_ticket_rotation_s;	/* a new ticket key this often */
	struct acl	*acl;			/* acl/protect/quota lines */
	char		*data_dir;		/* the raft log; NULL: in memory */
	const char	*restore;		/* --restore FILE (command line
						 * only): seeds a new data_dir */
	uint32_t	restart_grace_ms;	/* leases get this after a restart */
	uint32_t	snapshot_every;		/* log entries between snapshots */
	uint32_t	node_id;		/* cluster node (0: one voter) */
	char		*peer_listen;		/* tcp:HOST:PORT for raft's peers */
	char		*peer_bind;		/* ... bound there if not there (NAT) */
	char		*bootstrap;		/* "ID=HOST:PORT,..." for a new cluster */
	char		*advertise;		/* the address clients are sent to */
	bool		allow_insecure_peers;	/* plain peer TCP beyond loopback */
	char		*peer_tls_cert;		/* peer TLS: this node's chain, */
	char		*peer_tls_key;		/* ... its key, */
	char		*peer_tls_ca;		/* ... the CA of every peer */
	char		*peer_key;		/* plain peers: their shared secret */
	uint32_t	election_timeout_ms;
	char		*metrics_listen;	/* tcp:HOST:PORT, unix:PATH or NULL */
	uint32_t	metrics_max_connections;
	uint32_t	metrics_per_source;	/* of them from one address; 0: any */
	uint32_t	metrics_timeout_ms;	/* to send a request, to read the page */
	char		**metrics_names;	/* prefixes with per-name gauges */
	size_t		nmetrics_names;
	uint32_t	ready_max_lag;		/* /readyz: entries a follower may lag */
	struct http_config *http;		/* the http-* settings (daemon/http/) */
};

/* A key=value pair from the command line, kept to re-apply on reload. */
struct config_override {
	const char	*key;
	const char	*value;
};

void config_init(struct semd_config *c);
void config_free(struct semd_config *c);
/*
 * A duration: a number with a unit (ms, s, m or min, h), a bare number in
 * seconds; *ms in milliseconds. 0, -EINVAL or -ERANGE.
 */
int config_parse_duration(const char *s, unsigned long long *ms);
/* Is key a setting (so also a --key flag)? */
bool config_known(const char *key);
/* Is key a yes/no setting (--key alone means yes)? */
bool config_is_bool(const char *key);
/* Set one key; on error returns -EINVAL with the reason in err. */
int config_set(struct semd_config *c, const char *key, const char *value,
    char *err, size_t errlen);
/* Read a file; on error returns -errno/-EINVAL with "file:line: why". */
int config_load(struct semd_config *c, const char *path, char *err,
    size_t errlen);
/*
 * Build the effective configuration: defaults, then the file (if any), then
 * the overrides in order. Returns 0 or an error with err filled.
 */
int config_build(struct semd_config *c, const char *path,
    const struct config_override *ov, size_t nov, char *err, size_t errlen);

/*
 * Another front door beside semd's own protocol: the HTTP one (daemon/http/,
 * doc/http.md). It stands above the shell (its requests are made by clients
 * inside the daemon, conn_start_inner), so the shell reaches it only
 * through this table, which main.c hands over (config_door_set) before any
 * setting is read: config.c asks it about its settings and its listener
 * addresses, listen.c opens and closes its listeners. Without one, no
 * setting and no address is the door's.
 */
struct config_door {
	/* Its settings (the http-* keys): is key one; set it in *hc; drop hc. */
	bool	(*known)(const char *key);
	int	(*set)(struct http_config **hc, const char *key,
		    const char *value, char *err, size_t errlen);
	void	(*put)(struct http_config *hc);
	/* Is spec one of its listener addresses; is it a good one (-EINVAL)? */
	bool	(*listener_kind)(const char *spec);
	int	(*listener_check)(const char *spec, char *err, size_t errlen);
	/* Open a listener of srv: 0 or -errno. */
	int	(*listen)(struct server *srv, const char *spec);
	/* Call fn with the bound address of each of its listeners. */
	void	(*listeners_each)(void (*fn)(void *arg, const char *addr),
		    void *arg);
	/* A stop: close its listeners, answer what waits. */
	void	(*unlisten)(struct server *srv);
};
/* Hand over the door (once, at start), and find it (NULL: none). */
void config_door_set(const struct config_door *door);
const struct config_door *config_door(void);

#endif
