# SPDX-License-Identifier: BSD-2-Clause
# tests/security.mk: build fragment, included by the top Makefile.am
SECURITY_TEST_LIBS = security/libsemsec.a $(LIBEVENT_LIBS) $(OPENSSL_LIBS) $(PTHREAD_LIBS)
SECURITY_TEST_CFLAGS = $(AM_CFLAGS) $(OPENSSL_CFLAGS) $(LIBEVENT_CFLAGS)

check_PROGRAMS += tests/security/test_acl tests/security/test_acl_hidden \
	tests/security/test_peer tests/security/test_tls tests/security/test_tls_bev
TESTS += tests/security/test_acl tests/security/test_acl_hidden \
	tests/security/test_peer tests/security/tls.sh
EXTRA_DIST += tests/security/tls.sh tests/security/gen-certs.sh
noinst_HEADERS += tests/security/check.h tests/security/acl_check.h

tests_security_test_acl_CFLAGS = $(SECURITY_TEST_CFLAGS)
tests_security_test_acl_LDADD = $(SECURITY_TEST_LIBS)
tests_security_test_acl_hidden_CFLAGS = $(SECURITY_TEST_CFLAGS)
tests_security_test_acl_hidden_LDADD = $(SECURITY_TEST_LIBS)

tests_security_test_peer_CFLAGS = $(SECURITY_TEST_CFLAGS)
tests_security_test_peer_LDADD = $(SECURITY_TEST_LIBS)

tests_security_test_tls_CFLAGS = $(SECURITY_TEST_CFLAGS)
tests_security_test_tls_LDADD = $(SECURITY_TEST_LIBS)

tests_security_test_tls_bev_CFLAGS = $(SECURITY_TEST_CFLAGS)
tests_security_test_tls_bev_LDADD = $(SECURITY_TEST_LIBS)

# Issue 12's attacks by an unprivileged local user (made with useradd)
# against the default configuration; skipped (77) when not root.
TESTS += tests/security/attacks.sh
EXTRA_DIST += tests/security/attacks.sh

# Issue 35's crafted raft messages and floods at a cluster's peer ports.
TESTS += tests/security/peers.sh
EXTRA_DIST += tests/security/peers.sh tests/security/peer_attack.py
