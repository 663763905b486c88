# SPDX-License-Identifier: BSD-2-Clause
# security/: ACLs, TLS contexts, identities (built as a library the daemon links)
# Link users with: security/libsemsec.a $(OPENSSL_LIBS) $(LIBEVENT_LIBS)
# (tls_bev.o needs libevent_openssl; a user of acl/peer/tls alone needs only OpenSSL).
noinst_LIBRARIES += security/libsemsec.a
security_libsemsec_a_SOURCES = \
	security/acl.c security/acl.h \
	security/peer.c security/peer.h \
	security/tls.c security/tls.h \
	security/tls_bev.c security/tls_bev.h \
	security/tls_hs.c security/tls_hs.h \
	security/tls_tickets.c security/tls_tickets.h
security_libsemsec_a_CFLAGS = $(AM_CFLAGS) $(LTO_CFLAGS) $(OPENSSL_CFLAGS) $(LIBEVENT_CFLAGS)
# What libsemclient takes of it (TLS contexts, the ACL's names, session
# tickets: OpenSSL only), a libtool convenience library: its objects go into
# the shared library position-independent, as libtool wants them.
noinst_LTLIBRARIES += security/libsemtls.la
security_libsemtls_la_SOURCES = security/acl.c security/tls.c security/tls_tickets.c
security_libsemtls_la_CFLAGS = $(AM_CFLAGS) $(LTO_CFLAGS) $(OPENSSL_CFLAGS)
EXTRA_DIST += security/README.md
