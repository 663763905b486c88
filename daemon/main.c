/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/main.c - semd: command line, configuration, wiring.
 */
#include <config.h>	/* autoconf's, not daemon/config.h */

#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <malloc.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <sys/resource.h>
#include <unistd.h>

#include "daemon/access.h"
#include "daemon/config.h"
#include "daemon/conn.h"
#include "daemon/http/http.h"
#include "daemon/http/http_config.h"
#include "daemon/listen.h"
#include "daemon/logging.h"
#include "daemon/metrics.h"
#include "daemon/server.h"
#include "daemon/tlsconf.h"

struct semd_args {
	const char		*config_path;
	struct config_override	*ov;
	size_t			nov;
};

/* Usage text. */
static void usage(FILE *f)
{
	fprintf(f,
"usage: semd [--listen ADDR]... [--config FILE] [--ready-file FILE] [--user NAME]\n"
"            [--default-limit N] [--max-frame BYTES] [--max-connections N]\n"
"            [--log-level debug|info|notice|warning|error] [-t|--check-config]\n"
"            [--version] [--help]\n"
"\n"
"Named counting semaphores over UNIX and TCP sockets.\n"
"\n"
"  -l, --listen ADDR         unix:PATH, tcp:HOST:PORT, tcp:[ADDR6]:PORT,\n"
"                            tls:HOST:PORT, or HTTP/JSON: http:HOST:PORT,\n"
"                            https:HOST:PORT, http+unix:PATH\n"
"                            (repeatable; port 0 binds a free port; default\n"
"                            " SEMD_DEFAULT_UNIX " only)\n"
"  -c, --config FILE         read settings from FILE (key value per line)\n"
"      --ready-file FILE     write the bound addresses to FILE once ready\n"
"      --default-limit N     limit of names created by a down (1)\n"
"      --max-frame BYTES     largest request frame (65536)\n"
"      --max-connections N   clients served at once (10000)\n"
"      --log-level LEVEL     least severe messages logged (info)\n"
"      --log-format text|json  a log line as text or a JSON object (text)\n"
"      --max-semaphores N, --max-sessions N, --max-waiters-per-session N,\n"
"      --max-holds-per-session N, --max-output BYTES (per client),\n"
"      --max-lease DURATION, --handshake-timeout DURATION (10s),\n"
"      --watch-history BYTES (1048576: events kept for watches to resume),\n"
"      --idle-timeout DURATION (0: off), --keepalive DURATION (60s),\n"
"      --frame-timeout DURATION (10s: to complete a frame once begun),\n"
"      --unix-mode OCTAL (0666), --unix-group GROUP\n"
"      --admin PRINCIPAL     an administrator besides uid 0 and semd's own\n"
"                            uid: uid:N, user:NAME, group:NAME, cn:NAME\n"
"                            (repeatable)\n"
"      --threads N           event loops serving clients (1; at most 64)\n"
"      --data-dir DIR        keep the state across restarts in a log in DIR\n"
"                            (default: in memory, lost at a stop)\n"
"      --restore FILE        start a new --data-dir (which must be empty)\n"
"                            from a backup (semctl backup), then serve\n"
"      --restart-grace DURATION  added to every lease after a restart (10s)\n"
"      --snapshot-every N    log entries between snapshots (65536)\n"
"      --node-id N, --peer-listen tcp:HOST:PORT, --peer-bind tcp:HOST:PORT,\n"
"      --bootstrap ID=HOST:PORT,..., --advertise ADDR, --election-timeout\n"
"      DURATION (500ms), --allow-insecure-peers[=yes|no]  a raft cluster\n"
"                            of 3 or 5 nodes (semd(8), CLUSTERS)\n"
"      --peer-tls-cert FILE, --peer-tls-key FILE, --peer-tls-ca FILE\n"
"                            peer traffic in TLS 1.3, both ends proved by\n"
"                            certificates of the peer CA (all three or none)\n"
"      --peer-key FILE       plain peers prove they hold this secret (one\n"
"                            of the two, or --allow-insecure-peers, is needed)\n"
"      --allow-insecure-tcp[=yes|no]  plain tcp: on non-loopback addresses\n"
"                            (refused by default)\n"
"      --acl 'PRINCIPAL PATTERN RIGHTS'  an access rule, after the config\n"
"                            file's acl lines (repeatable)\n"
"      --user NAME           drop to this user (and its groups) after binding\n"
"      --tls-cert FILE, --tls-key FILE  certificate chain and key of tls:\n"
"                            listeners (tls:HOST:PORT, TLS 1.2 or later)\n"
"      --tls-ca FILE         CAs for client certificates\n"
"      --tls-client-auth none|optional|required  (none)\n"
"      --tls-max-startups START:RATE:FULL  TLS handshakes under way: from\n"
"                            START refuse RATE%% of new ones, all at FULL\n"
"                            (64:30:256)\n"
"      --tls-per-source-max-startups N  handshakes from one address (8)\n"
"      --metrics-listen ADDR  serve Prometheus metrics at tcp:HOST:PORT or\n"
"                            unix:PATH, paths /metrics, /healthz, /readyz\n"
"      --metrics-max-connections N  scrapers served at once (16)\n"
"      --metrics-per-source-max-connections N  of them from one address (4)\n"
"      --metrics-timeout DURATION  for a request and its answer, whole (10s)\n"
"      --metrics-names PREFIX  per-semaphore gauges for names with PREFIX\n"
"                            (repeatable)\n"
"      --ready-max-lag N     /readyz: entries a follower may be behind the\n"
"                            leader and be ready (1000)\n"
"      --http-token 'PRINCIPAL sha256:HEX'  a bearer token of the HTTP\n"
"                            listeners (repeatable; --make-token makes one)\n"
"      --http-max-connections N (10000), --http-max-header BYTES (8192),\n"
"      --http-max-body BYTES (65536), --http-request-timeout DURATION (10s),\n"
"      --http-idle-timeout DURATION (60s), --http-rate N (requests a second\n"
"      per principal; 0: none), --http-max-wait DURATION (60s),\n"
"      --http-lease DURATION (30s), --http-idempotency-keys N (10000),\n"
"      --http-nodes ID=URL,..., --http-cors-origin ORIGIN  (doc/http.md)\n"
"      --make-token PRINCIPAL  print a new bearer token and its http-token\n"
"                            line, and exit\n"
"  -t, --check-config        check the configuration and exit\n"
"  -V, --version             print the version\n"
"  -h, --help                print this help\n"
"Every long option is also a config file key. Durations: 500ms, 10s, 5m, 1h.\n"
"Access control: acl, protect, quota and admin lines (semd.conf(5)).\n");
}

/*
 * Make room for max-connections descriptors (plus listeners, logs and some
 * slack): raise the soft RLIMIT_NOFILE up to the hard limit. A service
 * started with the usual soft limit of 1024 would otherwise hit EMFILE long
 * before max-connections and pause accepting.
 */
static void semd_raise_nofile(const struct semd_config *cfg)
{
	rlim_t want = (rlim_t)cfg->max_connections + 64;
	unsigned int http_max = 0;
	struct rlimit rl;
	size_t i;

	/* HTTP connections too, when there is an HTTP listener. */
	for (i = 0; i < cfg->nlisten; i++) {
		if (http_listener_kind(cfg->listen[i])) {
			http_max = cfg->http != NULL ?
			    cfg->http->max_connections : 10000;
			want += http_max;
			break;
		}
	}

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want ?
	    rl.rlim_max : want;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		log_warn_errno(errno, "setrlimit RLIMIT_NOFILE %llu",
		    (unsigned long long)rl.rlim_cur);
	if (rl.rlim_cur < want && http_max == 0)
		log_warn("open-file limit %llu is below max-connections %u + 64: "
		    "raise LimitNOFILE (or ulimit -n) or lower max-connections",
		    (unsigned long long)rl.rlim_cur, cfg->max_connections);
	else if (rl.rlim_cur < want)
		log_warn("open-file limit %llu is below max-connections %u + "
		    "http-max-connections %u + 64: raise LimitNOFILE (or ulimit "
		    "-n) or lower them", (unsigned long long)rl.rlim_cur,
		    cfg->max_connections, http_max);
}

/*
 * Give a flood's memory back when it is freed. glibc raises its threshold
 * for allocating with mmap to the size of the largest block freed, so after
 * one slow reader's 4 MiB of replies every later buffer of up to 32 MiB
 * comes from the heap, where a free leaves a hole the process keeps (a
 * flood of unread replies pinned gigabytes long after it left). A fixed
 * threshold keeps each big buffer a mapping of its own, unmapped when freed.
 */
static void semd_malloc_tune(void)
{
#ifdef M_MMAP_THRESHOLD
	if (mallopt(M_MMAP_THRESHOLD, 128 * 1024) != 1)
		log_warn("mallopt M_MMAP_THRESHOLD failed");
#endif
}

/*
 * Give up root for good: the user's groups, its gid, its uid; then make sure
 * root cannot be taken back. Called after the sockets are bound.
 */
static int semd_drop_privileges(const char *user)
{
	struct passwd *pw;

	errno = 0;
	pw = getpwnam(user);
	if (pw == NULL) {
		log_err("--user %s: no such user", user);
		return EX_NOUSER;
	}
	if (initgroups(pw->pw_name, pw->pw_gid) != 0 ||
	    setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) {
		log_err_errno(errno, "cannot become user %s (uid %u); semd must start as root to use --user",
		    user, (unsigned)pw->pw_uid);
		return EX_NOPERM;
	}
	if (pw->pw_uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) {
		log_err("--user %s: root could be regained after dropping privileges; refusing to run",
		    user);
		return EX_SOFTWARE;
	}
	if (getuid() != pw->pw_uid || geteuid() != pw->pw_uid ||
	    getgid() != pw->pw_gid || getegid() != pw->pw_gid) {
		log_err("--user %s: ids did not change as asked; refusing to run", user);
		return EX_SOFTWARE;
	}
	log_notice("running as user %s (uid %u, gid %u)", pw->pw_name,
	    (unsigned)pw->pw_uid, (unsigned)pw->pw_gid);
	return 0;
}

/* SIGHUP: the file again, then the same flags. */
static int semd_reload(void *arg, struct semd_config *out, char *err,
    size_t errlen)
{
	struct semd_args *a = arg;
	int r;

	r = config_build(out, a->config_path, a->ov, a->nov, err, errlen);
	if (r == 0)
		tlsconf_reload(out);
	return r;
}

/* The HTTP front door, as config.c and listen.c reach it (config.h). */
static const struct config_door semd_http_door = {
	.known = http_config_known,
	.set = http_config_set,
	.put = http_config_put,
	.listener_kind = http_listener_kind,
	.listener_check = http_listener_check,
	.listen = http_listen,
	.listeners_each = http_listeners_each,
	.unlisten = http_unlisten,
};

/* Read the settings, open the listeners, take the state up, serve. */
int main(int argc, char **argv)
{
	enum { OPT_BASE = 256 };
	static const char *const keys[] = {
		"listen", "ready-file", "default-limit", "max-frame",
		"max-connections", "log-level", "log-format", "max-semaphores",
		"max-sessions",
		"max-waiters-per-session", "max-holds-per-session", "max-lease",
		"handshake-timeout", "idle-timeout", "max-output", "keepalive",
		"watch-history",
		"threads", "frame-timeout",
		"unix-mode", "unix-group", "user", "allow-insecure-tcp",
		"tls-cert", "tls-key", "tls-ca", "tls-client-auth",
		"tls-ticket-lifetime", "tls-ticket-rotation",
		"tls-max-startups", "tls-per-source-max-startups",
		"metrics-listen", "metrics-names", "metrics-max-connections",
		"metrics-per-source-max-connections", "metrics-timeout",
		"ready-max-lag", "admin", "acl",
		"data-dir", "restart-grace", "snapshot-every",
		"node-id", "peer-listen", "peer-bind", "bootstrap", "advertise",
		"allow-insecure-peers", "election-timeout",
		"peer-tls-cert", "peer-tls-key", "peer-tls-ca", "peer-key",
		"http-token", "http-nodes", "http-cors-origin",
		"http-max-connections", "http-max-header", "http-max-body",
		"http-request-timeout", "http-idle-timeout", "http-rate",
		"http-max-wait", "http-lease", "http-idempotency-keys",
	};
	enum { NKEYS = sizeof keys / sizeof keys[0] };
	struct option opts[NKEYS + 7];
	const char *restore = NULL;
	struct semd_args args = { NULL, NULL, 0 };
	struct semd_config cfg;
	struct metrics *metrics = NULL;
	struct server *srv;
	bool check = false;
	char err[1024], status[512];
	int c, i, code;

	log_open();
	config_door_set(&semd_http_door);
	for (i = 0; i < NKEYS; i++) {
		opts[i].name = keys[i];
		opts[i].has_arg = config_is_bool(keys[i]) ? optional_argument :
		    required_argument;
		opts[i].flag = NULL;
		opts[i].val = OPT_BASE + i;
	}
	opts[NKEYS] = (struct option){ "config", required_argument, NULL, 'c' };
	opts[NKEYS + 1] = (struct option){ "check-config", no_argument, NULL, 't' };
	opts[NKEYS + 2] = (struct option){ "version", no_argument, NULL, 'V' };
	opts[NKEYS + 3] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[NKEYS + 4] = (struct option){ "restore", required_argument, NULL, 'R' };
	opts[NKEYS + 5] = (struct option){ "make-token", required_argument, NULL, 'M' };
	opts[NKEYS + 6] = (struct option){ NULL, 0, NULL, 0 };
	args.ov = calloc((size_t)argc, sizeof *args.ov);
	if (args.ov == NULL) {
		fprintf(stderr, "semd: out of memory\n");
		return EX_OSERR;
	}
	while ((c = getopt_long(argc, argv, "l:c:tVh", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			args.ov[args.nov].key = "listen";
			args.ov[args.nov++].value = optarg;
			break;
		case 'c':
			args.config_path = optarg;
			break;
		case 't':
			check = true;
			break;
		case 'R':
			restore = optarg;
			break;
		case 'M':
			free(args.ov);
			return http_make_token(optarg, stdout);
		case 'V':
			printf("semd %s\n", PACKAGE_VERSION);
			free(args.ov);
			return 0;
		case 'h':
			usage(stdout);
			free(args.ov);
			return 0;
		default:
			if (c >= OPT_BASE && c < OPT_BASE + NKEYS) {
				args.ov[args.nov].key = keys[c - OPT_BASE];
				args.ov[args.nov++].value = optarg != NULL ? optarg : "yes";
				break;
			}
			fprintf(stderr, "semd: try --help\n");
			free(args.ov);
			return EX_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "semd: unexpected argument '%s'; try --help\n",
		    argv[optind]);
		free(args.ov);
		return EX_USAGE;
	}
	if (config_build(&cfg, args.config_path, args.ov, args.nov, err,
	    sizeof err) != 0) {
		fprintf(stderr, "semd: %s\n", err);
		free(args.ov);
		return EX_CONFIG;
	}
	cfg.restore = restore;
	if (restore != NULL && cfg.data_dir == NULL) {
		fprintf(stderr, "semd: --restore seeds a data directory: give "
		    "--data-dir DIR too (an empty one)\n");
		config_free(&cfg);
		free(args.ov);
		return EX_USAGE;
	}
	if (check) {
		printf("semd: configuration OK\n");
		config_free(&cfg);
		free(args.ov);
		return 0;
	}
	log_set_level(cfg.log_level);
	log_set_format(cfg.log_format);
	semd_raise_nofile(&cfg);
	semd_malloc_tune();
	srv = server_new(&cfg, &conn_loop_ops, semd_reload, &args, &code);
	if (srv == NULL) {
		log_err("start-up failed");
		config_free(&cfg);
		free(args.ov);
		return code;
	}
	access_init(srv);
	code = listeners_open(srv);
	if (code != 0)
		log_err("cannot listen: check the addresses, permissions, and that no other semd runs there");
	else if (srv->cfg.metrics_listen != NULL &&
	    metrics_new(srv, srv->cfg.metrics_listen, &metrics) != 0)
		code = EX_OSERR;
	if (code == 0 && srv->cfg.user != NULL)
		code = semd_drop_privileges(srv->cfg.user);
	if (code == 0)
		code = server_start(srv);
	if (code == 0)
		code = listeners_ready(srv, metrics != NULL ? metrics_addr(metrics) :
		    NULL, status, sizeof status);
	if (code == 0)
		code = server_run(srv, status);
	metrics_free(metrics);
	http_free();
	server_free(srv);
	tlsconf_free();
	free(args.ov);
	return code;
}
