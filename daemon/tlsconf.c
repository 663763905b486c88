/* SPDX-License-Identifier: BSD-2-Clause */
/* daemon/tlsconf.c - the TLS server context from the configuration. */
#include <stddef.h>

#include "daemon/logging.h"
#include "daemon/tlsconf.h"
#include "security/tls.h"

/* One context for every tls: listener of the daemon. */
static struct tls_server *tlsconf_ts;

/* The files and mode of cfg as the security module wants them. */
static void tlsconf_fill(const struct semd_config *cfg,
    struct tls_server_config *tc)
{
	tc->cert_file = cfg->tls_cert;
	tc->key_file = cfg->tls_key;
	tc->ca_file = cfg->tls_ca;
	tc->client_auth = (enum tls_client_auth)cfg->tls_client_auth;
	tc->ticket_lifetime_s = cfg->tls_ticket_lifetime_s;
	tc->ticket_rotate_s = cfg->tls_ticket_rotation_s;
}

/* Say how sessions resume. */
static void tlsconf_log_tickets(const struct semd_config *cfg)
{
	if (cfg->tls_ticket_lifetime_s == 0)
		log_info("TLS: no session resumption (tls-ticket-lifetime 0)");
	else
		log_info("TLS: session tickets resume for %u s after a full "
		    "handshake, a new ticket key every %u s",
		    cfg->tls_ticket_lifetime_s, cfg->tls_ticket_rotation_s);
}

/* The context, made on first use. */
struct tls_server *tlsconf_server(const struct semd_config *cfg)
{
	struct tls_server_config tc;
	char err[512];

	if (tlsconf_ts != NULL)
		return tlsconf_ts;
	tlsconf_fill(cfg, &tc);
	if (tls_server_new(&tlsconf_ts, &tc, err, sizeof err) != 0) {
		log_err("TLS: %s", err);
		tlsconf_ts = NULL;
		return NULL;
	}
	log_info("TLS: certificate %s, client certificates %s", cfg->tls_cert,
	    cfg->tls_client_auth == TLS_CLIENT_AUTH_REQUIRED ? "required" :
	    cfg->tls_client_auth == TLS_CLIENT_AUTH_OPTIONAL ? "optional" : "not asked for");
	tlsconf_log_tickets(cfg);
	return tlsconf_ts;
}

/* Reload the certificate, key and CA; the old ones stay on error. */
void tlsconf_reload(const struct semd_config *cfg)
{
	struct tls_server_config tc;
	unsigned long epoch;
	char err[512];

	if (tlsconf_ts == NULL)
		return;
	if (cfg->tls_cert == NULL || cfg->tls_key == NULL) {
		log_err("reload: tls-cert and tls-key are needed by the tls: listeners; keeping the loaded ones");
		return;
	}
	tlsconf_fill(cfg, &tc);
	epoch = tls_server_ticket_epoch(tlsconf_ts);
	if (tls_server_reload(tlsconf_ts, &tc, err, sizeof err) != 0) {
		log_err("reload: TLS certificate not changed: %s", err);
		return;
	}
	log_notice("reload: TLS certificate and key loaded from %s, %s",
	    cfg->tls_cert, cfg->tls_key);
	if (tls_server_ticket_epoch(tlsconf_ts) != epoch) {
		log_notice("reload: TLS trust or ticket settings changed: new "
		    "ticket keys, tickets issued before no longer resume");
		tlsconf_log_tickets(cfg);
	}
}

/* Free the context. */
void tlsconf_free(void)
{
	tls_server_free(tlsconf_ts);
	tlsconf_ts = NULL;
}
